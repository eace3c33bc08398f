/* chat_template_glm45.c: GLM-4.5's and GLM-4.6's chat template, statement
 * by statement: [gMASK]<sop>, the tools as JSON lines in a system turn,
 * <|user|> / <|assistant|> / <|system|> / <|observation|> turns, every
 * assistant turn opened with its <think> block (empty unless it follows the
 * last user message and carries reasoning), calls as
 * <tool_call>NAME with <arg_key>/<arg_value> pairs (strings as they are,
 * other values as JSON). See chat_template.h. */
#include "runtime/chat/chat_template.h"
#include "runtime/chat/chat_render.h"

#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/util/strbuf.h"


static bool ends_with(const char *s, const char *t)
{
    size_t n = strlen(s), k = strlen(t);
    return n >= k && !memcmp(s + n - k, t, k);
}

chat_render_fn chat_template_render_glm45;
char *chat_template_render_glm45(const chat_msg *m, size_t n, const char *const *tools, size_t n_tools,
                                 const chat_tools_opts *o, int variant, bool gen, char *err, size_t errlen)
{
    (void)variant;
    const bool no_think = o && o->no_thinking;
    strbuf b = { 0 };
    strbuf_puts(&b, "[gMASK]<sop>");
    if (n_tools) {
        strbuf_puts(&b, "<|system|>\n# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"
                        "You are provided with function signatures within <tools></tools> XML tags:\n<tools>\n");
        for (size_t i = 0; i < n_tools; i++) strbuf_printf(&b, "%s\n", tools[i]);
        strbuf_puts(&b, "</tools>\n\nFor each function call, output the function name and arguments within the "
                        "following XML format:\n<tool_call>{function-name}\n<arg_key>{arg-key-1}</arg_key>\n"
                        "<arg_value>{arg-value-1}</arg_value>\n<arg_key>{arg-key-2}</arg_key>\n"
                        "<arg_value>{arg-value-2}</arg_value>\n...\n</tool_call>");
    }
    size_t last_user = SIZE_MAX;
    for (size_t i = 0; i < n; i++)
        if (chat_is(&m[i], "user")) last_user = i;
    for (size_t i = 0; i < n; i++) {
        const chat_msg *x = &m[i];
        if (chat_is(x, "user")) {
            strbuf_printf(&b, "<|user|>\n%s", x->content);
            if (no_think && !ends_with(x->content, "/nothink")) strbuf_puts(&b, "/nothink");
        } else if (chat_is(x, "assistant")) {
            strbuf_puts(&b, "<|assistant|>");
            const char *content = x->content, *close = x->reasoning ? NULL : strstr(content, "</think>");
            const char *r = "", *re = r;
            if (x->reasoning) { r = x->reasoning; re = r + strlen(r); } /* given apart: the content stays whole */
            if (close) {
                /* reasoning: before the first </think>, rstrip '\n', after the last <think>, lstrip '\n' */
                re = close;
                while (re > content && re[-1] == '\n') re--;
                r = content;
                for (const char *p = content, *q; (q = strstr(p, "<think>")) && q + 7 <= re; p = q + 1) r = q + 7;
                while (r < re && *r == '\n') r++;
                const char *last = close, *q;
                while ((q = strstr(last + 1, "</think>"))) last = q;
                content = last + 8;
                while (*content == '\n') content++;
            }
            if ((last_user == SIZE_MAX || i > last_user) && re > r) {
                strbuf_puts(&b, "\n<think>");
                chat_add_strip(&b, r, (size_t)(re - r));
                strbuf_puts(&b, "</think>");
            } else {
                strbuf_puts(&b, "\n<think></think>");
            }
            strbuf c = { 0 };
            chat_add_strip(&c, content, strlen(content));
            if (c.len) { strbuf_puts(&b, "\n"); strbuf_add(&b, c.data, c.len); }
            strbuf_free(&c);
            for (size_t j = 0; j < x->n_calls; j++) {
                strbuf_printf(&b, "\n<tool_call>%s\n", x->calls[j].name);
                static const chat_arg_tags tags = { "GLM-4.5", "<arg_key>", "</arg_key>\n<arg_value>",
                                                    "</arg_value>\n", false };
                if (chat_add_call_args(&b, &x->calls[j], i, &tags, err, errlen)) {
                    strbuf_free(&b);
                    return NULL;
                }
                strbuf_puts(&b, "</tool_call>");
            }
        } else if (chat_is(x, "tool")) {
            if (i == 0 || !chat_is(&m[i - 1], "tool")) strbuf_puts(&b, "<|observation|>");
            strbuf_printf(&b, "\n<tool_response>\n%s\n</tool_response>", x->content);
        } else if (chat_is(x, "system")) {
            strbuf_printf(&b, "<|system|>\n%s", x->content);
        }
    }
    if (gen) strbuf_puts(&b, no_think ? "<|assistant|>\n<think></think>" : "<|assistant|>");
    char *out = strbuf_take(&b);
    if (!out) snprintf(err, errlen, "out of memory rendering the chat template");
    return out;
}
