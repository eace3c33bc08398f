/* chat_template_kimi.c: Kimi K2 Thinking's chat template with its tool
 * parts, statement by statement: the tools as one JSON list in a
 * tool_declare turn, Kimi's default system turn unless the conversation
 * opens with a system message, <|im_ROLE|>ROLE<|im_middle|>...<|im_end|>
 * turns; the assistant turns up to the last one that made no calls (the
 * history) get an empty <think></think>, later ones their reasoning in it;
 * calls in <|tool_calls_section_begin|> with each call's id and its
 * arguments as the client gave them; results as "## Return of ID". See
 * chat_template.h. */
#include "runtime/chat_template.h"
#include "runtime/chat_template_impl.h"

#include <stdint.h>
#include <stdio.h>

#include "runtime/strbuf.h"

char *chat_template_render_kimi_k2(const chat_msg *m, size_t n, const char *const *tools, size_t n_tools, bool gen,
                                   char *err, size_t errlen)
{
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
            if (x->n_calls) {
                strbuf_puts(&b, "<|tool_calls_section_begin|>");
                for (size_t j = 0; j < x->n_calls; j++)
                    strbuf_printf(&b, "<|tool_call_begin|>%s<|tool_call_argument_begin|>%s<|tool_call_end|>",
                                  x->calls[j].id ? x->calls[j].id : "", x->calls[j].arguments);
                strbuf_puts(&b, "<|tool_calls_section_end|>");
            }
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
