/* chat_template_qwen3.c: Qwen3's chat template with its tool parts, and
 * its 2507 releases' (Thinking, Instruct), statement by statement. See
 * chat_template.h. */
#include "runtime/chat/chat_render.h"

#include <stdio.h>
#include <string.h>

#include "runtime/util/strbuf.h"

static bool starts_with(const char *s, const char *p) { return !strncmp(s, p, strlen(p)); }
static bool ends_with(const char *s, const char *p)
{
    size_t n = strlen(s), k = strlen(p);
    return n >= k && !memcmp(s + n - k, p, k);
}

/* Qwen3's template, statement by statement. */
/* An assistant's calls as Qwen3's <tool_call> blocks, a line break before each but a first one that
 * opens the message. */
static void qwen3_calls(strbuf *b, const chat_msg *x, bool after_text)
{
    for (size_t j = 0; j < x->n_calls; j++) {
        if (j > 0 || after_text) strbuf_puts(b, "\n");
        strbuf_printf(b, "<tool_call>\n{\"name\": \"%s\", \"arguments\": %s}\n</tool_call>", x->calls[j].name,
                      x->calls[j].arguments);
    }
}

/* Qwen3's template, statement by statement, and its 2507 releases': the
 * Thinking ones always open the answer with <think> (enable_thinking is not
 * read), the Instruct ones render assistants' text as it is (no reasoning,
 * no last-query scan). */
chat_render_fn chat_template_render_qwen3;
char *chat_template_render_qwen3(const chat_msg *m, size_t n, const char *const *tools, size_t n_tools,
                                 const chat_tools_opts *o, int kind, bool gen, char *err, size_t errlen)
{
    const bool no_thinking = o && o->no_thinking;
    strbuf sb = { 0 }, *b = &sb;
    bool sys0 = n && chat_is(&m[0], "system");
    if (n_tools) {
        strbuf_puts(b, "<|im_start|>system\n");
        if (sys0) strbuf_printf(b, "%s\n\n", m[0].content);
        strbuf_puts(b, "# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"
                       "You are provided with function signatures within <tools></tools> XML tags:\n<tools>");
        for (size_t i = 0; i < n_tools; i++) strbuf_printf(b, "\n%s", tools[i]);
        strbuf_puts(b, "\n</tools>\n\nFor each function call, return a json object with function name and "
                       "arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": "
                       "<function-name>, \"arguments\": <args-json-object>}\n</tool_call><|im_end|>\n");
    } else if (sys0) {
        strbuf_printf(b, "<|im_start|>system\n%s<|im_end|>\n", m[0].content);
    }
    /* the last user message that is not a tool response wrapped by hand */
    size_t last_query = n ? n - 1 : 0;
    for (size_t k = n; k-- > 0;) {
        if (chat_is(&m[k], "user") &&
            !(starts_with(m[k].content, "<tool_response>") && ends_with(m[k].content, "</tool_response>"))) {
            last_query = k;
            break;
        }
    }
    for (size_t i = 0; i < n; i++) {
        const chat_msg *x = &m[i];
        if (chat_is(x, "user") || (chat_is(x, "system") && i > 0)) {
            strbuf_printf(b, "<|im_start|>%s\n%s<|im_end|>\n", x->role, x->content);
        } else if (chat_is(x, "assistant") && kind == CHAT_VARIANT_QWEN3_INSTRUCT) {
            strbuf_printf(b, "<|im_start|>assistant\n%s", x->content);
            qwen3_calls(b, x, *x->content != 0);
            strbuf_puts(b, "<|im_end|>\n");
        } else if (chat_is(x, "assistant")) {
            const char *content = x->content;
            strbuf reasoning = { 0 };
            const char *close = x->reasoning ? NULL : strstr(content, "</think>");
            if (x->reasoning) strbuf_puts(&reasoning, x->reasoning); /* given apart: the content stays whole */
            if (close) {
                /* reasoning: before the first </think>, rstrip '\n', after the last <think>, lstrip '\n' */
                size_t rn = (size_t)(close - content);
                while (rn && content[rn - 1] == '\n') rn--;
                const char *r = content, *o;
                for (const char *p = content; (o = strstr(p, "<think>")) && o + 7 <= content + rn; p = o + 1) r = o + 7;
                while (r < content + rn && *r == '\n') r++;
                strbuf_add(&reasoning, r, (size_t)(content + rn - r));
                const char *last = close, *q;
                while ((q = strstr(last + 1, "</think>"))) last = q;
                content = last + 8;
                while (*content == '\n') content++;
            }
            if (i > last_query && (i == n - 1 || reasoning.len)) {
                strbuf_puts(b, "<|im_start|>assistant\n<think>\n");
                chat_add_strip_nl(b, reasoning.data ? reasoning.data : "", reasoning.len);
                strbuf_puts(b, "\n</think>\n\n");
                while (*content == '\n') content++;
                strbuf_puts(b, content);
            } else {
                strbuf_printf(b, "<|im_start|>assistant\n%s", content);
            }
            strbuf_free(&reasoning);
            qwen3_calls(b, x, *content != 0);
            strbuf_puts(b, "<|im_end|>\n");
        } else if (chat_is(x, "tool")) {
            if (i == 0 || !chat_is(&m[i - 1], "tool")) strbuf_puts(b, "<|im_start|>user");
            strbuf_printf(b, "\n<tool_response>\n%s\n</tool_response>", x->content);
            if (i == n - 1 || !chat_is(&m[i + 1], "tool")) strbuf_puts(b, "<|im_end|>\n");
        }
    }
    if (gen)
        strbuf_puts(b, kind == CHAT_VARIANT_QWEN3_THINKING ? "<|im_start|>assistant\n<think>\n"
                       : kind == CHAT_VARIANT_QWEN3_HYBRID && no_thinking ? "<|im_start|>assistant\n<think>\n\n</think>\n\n"
                                                             : "<|im_start|>assistant\n");
    char *out = strbuf_take(&sb);
    if (!out) snprintf(err, errlen, "out of memory rendering the chat template");
    return out;
}
