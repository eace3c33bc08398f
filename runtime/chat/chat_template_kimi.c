/* chat_template_kimi.c: Kimi K2 Thinking's chat template with its tool
 * parts, and Kimi K2 Instruct's (below), statement by statement. Thinking's: the tools as one JSON list in a
 * tool_declare turn, Kimi's default system turn unless the conversation
 * opens with a system message, <|im_ROLE|>ROLE<|im_middle|>...<|im_end|>
 * turns; the assistant turns up to the last one that made no calls (the
 * history) get an empty <think></think>, later ones their reasoning in it;
 * calls in <|tool_calls_section_begin|> with each call's id and its
 * arguments as the client gave them; results as "## Return of ID". See
 * chat_template.h. */
#include "runtime/chat/chat_template.h"
#include "runtime/chat/chat_render.h"

#include <stdint.h>
#include <stdio.h>

#include "runtime/util/strbuf.h"

static void kimi_calls(strbuf *b, const chat_msg *x)
{
    strbuf_puts(b, "<|tool_calls_section_begin|>");
    for (size_t j = 0; j < x->n_calls; j++)
        strbuf_printf(b, "<|tool_call_begin|>%s<|tool_call_argument_begin|>%s<|tool_call_end|>",
                      x->calls[j].id ? x->calls[j].id : "", x->calls[j].arguments);
    strbuf_puts(b, "<|tool_calls_section_end|>");
}

chat_render_fn chat_template_render_kimi_k2;
char *chat_template_render_kimi_k2(const chat_msg *m, size_t n, const char *const *tools, size_t n_tools,
                                   const chat_tools_opts *o, int variant, bool gen, char *err, size_t errlen)
{
    (void)o;
    (void)variant;
    strbuf b = { 0 };
    size_t hist_end = 0; /* messages before this are the history: through the last assistant without calls */
    for (size_t i = n; i-- > 0;)
        if (chat_is(&m[i], "assistant") && !m[i].n_calls) { hist_end = i + 1; break; }
    if (n_tools) {
        strbuf_puts(&b, "<|im_system|>tool_declare<|im_middle|>[");
        for (size_t i = 0; i < n_tools; i++) strbuf_printf(&b, "%s%s", i ? ", " : "", tools[i]);
        strbuf_puts(&b, "]<|im_end|>");
    }
    if (!n || !chat_is(&m[0], "system"))
        strbuf_puts(&b, "<|im_system|>system<|im_middle|>You are Kimi, an AI assistant created by Moonshot AI.<|im_end|>");
    for (size_t i = 0; i < n; i++) {
        const chat_msg *x = &m[i];
        if (chat_is(x, "user")) strbuf_puts(&b, "<|im_user|>user<|im_middle|>");
        else if (chat_is(x, "assistant")) strbuf_puts(&b, "<|im_assistant|>assistant<|im_middle|>");
        else strbuf_printf(&b, "<|im_system|>%s<|im_middle|>", x->role);
        if (chat_is(x, "assistant")) {
            const char *r = i >= hist_end && x->reasoning ? x->reasoning : "";
            strbuf_printf(&b, "<think>%s</think>%s", r, x->content);
            if (x->n_calls) kimi_calls(&b, x);
        } else if (chat_is(x, "tool")) {
            strbuf_printf(&b, "## Return of %s\n%s", x->tool_call_id ? x->tool_call_id : "", x->content);
        } else {
            strbuf_puts(&b, x->content);
        }
        strbuf_puts(&b, "<|im_end|>");
    }
    if (gen) strbuf_puts(&b, "<|im_assistant|>assistant<|im_middle|>");
    char *out = strbuf_take(&b);
    if (!out) snprintf(err, errlen, "out of memory rendering the chat template");
    return out;
}

/* Kimi K2 Instruct's template (0905's; 0711 marks the first release's, as
 * llama.cpp's tests hold it): the tools as one JSON list under "# Tools" in
 * a tool_declare turn (the template's indentation is in its text, and so in
 * the prompt), Kimi's default system turn when the first message is not a
 * system one, no <think> at all, an assistant's calls after its text,
 * results as "## Return of ID" with the template's indentation before the
 * text. The first release's template leaves a line break after the header
 * of system and tool turns, and closes every turn; 0905's leaves the last
 * turn open without a generation prompt. */
chat_render_fn chat_template_render_kimi_k2_instruct;
char *chat_template_render_kimi_k2_instruct(const chat_msg *m, size_t n, const char *const *tools, size_t n_tools,
                                            const chat_tools_opts *o, int first_release, bool gen, char *err, size_t errlen)
{
    (void)o;
    strbuf b = { 0 };
    if (n_tools) {
        strbuf_puts(&b, "<|im_system|>tool_declare<|im_middle|>\n  # Tools\n  [");
        for (size_t i = 0; i < n_tools; i++) strbuf_printf(&b, "%s%s", i ? ", " : "", tools[i]);
        strbuf_puts(&b, "]<|im_end|>");
    }
    for (size_t i = 0; i < n; i++) {
        const chat_msg *x = &m[i];
        if (i == 0 && !chat_is(x, "system"))
            strbuf_puts(&b, "<|im_system|>system<|im_middle|>You are Kimi, an AI assistant created by Moonshot AI.<|im_end|>");
        if (chat_is(x, "user")) strbuf_puts(&b, "<|im_user|>user<|im_middle|>");
        else if (chat_is(x, "assistant")) strbuf_puts(&b, "<|im_assistant|>assistant<|im_middle|>");
        else strbuf_printf(&b, "<|im_system|>%s<|im_middle|>%s", x->role, first_release ? "\n" : "");
        if (chat_is(x, "assistant") && x->n_calls) {
            strbuf_puts(&b, x->content);
            kimi_calls(&b, x);
        } else if (chat_is(x, "tool")) {
            strbuf_printf(&b, "## Return of %s\n    %s", x->tool_call_id ? x->tool_call_id : "", x->content);
        } else {
            strbuf_puts(&b, x->content);
        }
        if (first_release || gen || i + 1 < n) strbuf_puts(&b, "<|im_end|>");
    }
    if (gen) strbuf_puts(&b, "<|im_assistant|>assistant<|im_middle|>");
    char *out = strbuf_take(&b);
    if (!out) snprintf(err, errlen, "out of memory rendering the chat template");
    return out;
}
