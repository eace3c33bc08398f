/* chat_template_minimax.c: MiniMax-M2's chat template with its tool parts,
 * statement by statement: the system turn (the first system message, else
 * the template's model_identity) with the tools as <tool> JSON lines and
 * the call format, ]~b]user / ]~b]ai turns, reasoning re-rendered only
 * after the last user message, calls as <minimax:tool_call> with one
 * <invoke name=...> per call and a <parameter name=...> per argument
 * (strings as they are, other values as JSON), consecutive results in one
 * ]~b]tool turn of <response> blocks. See chat_template.h. */
#include "runtime/chat/chat_template.h"
#include "runtime/chat/chat_render.h"

#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/chat/pyjson.h"
#include "runtime/util/strbuf.h"


char *chat_template_render_minimax_tools(const chat_msg *m, size_t n, const char *const *tools, size_t n_tools,
                                         const chat_tools_opts *o, int variant, bool gen, char *err, size_t errlen)
{
    (void)variant;
    const char *identity = o && o->identity ? o->identity
                                            : "You are a helpful assistant. Your name is MiniMax-M2 and is built by MiniMax.";
    strbuf b = { 0 };
    size_t first = n && chat_is(&m[0], "system") ? 1 : 0;
    strbuf_puts(&b, "]~!b[]~b]system\n");
    strbuf_puts(&b, first && *m[0].content ? m[0].content : identity);
    if (n_tools) {
        strbuf_puts(&b, "\n\n# Tools\nYou may call one or more tools to assist with the user query.\nHere are the "
                        "tools available in JSONSchema format:\n\n<tools>\n");
        for (size_t i = 0; i < n_tools; i++) {
            json_t *t = json_loads(tools[i], 0, NULL);
            strbuf_puts(&b, "<tool>");
            pyjson_add(&b, json_object_get(t, "function") ? json_object_get(t, "function") : json_null());
            strbuf_puts(&b, "</tool>\n");
            json_decref(t);
        }
        strbuf_puts(&b, "</tools>\n\nWhen making tool calls, use XML format to invoke tools and pass parameters:\n"
                        "\n<minimax:tool_call>\n<invoke name=\"tool-name-1\">\n<parameter name=\"param-key-1\">"
                        "param-value-1</parameter>\n<parameter name=\"param-key-2\">param-value-2</parameter>\n...\n"
                        "</invoke>\n</minimax:tool_call>");
    }
    strbuf_puts(&b, "[e~[\n");
    size_t last_user = SIZE_MAX;
    for (size_t i = first; i < n; i++)
        if (chat_is(&m[i], "user")) last_user = i;
    bool have_call = false; /* the template's last_tool_call: set by an assistant's calls, cleared by one without */
    for (size_t i = first; i < n; i++) {
        const chat_msg *x = &m[i];
        if (chat_is(x, "assistant")) {
            strbuf_puts(&b, "]~b]ai\n");
            const char *c = x->content, *close = x->reasoning ? NULL : strstr(c, "</think>");
            if (x->reasoning) { /* given apart: rendered as it is, the content whole */
                if (*x->reasoning && (last_user == SIZE_MAX || i > last_user))
                    strbuf_printf(&b, "<think>\n%s\n</think>\n\n", x->reasoning);
                strbuf_puts(&b, c);
            } else if (close) {
                const char *last = close, *q;
                while ((q = strstr(last + 1, "</think>"))) last = q;
                /* reasoning: before the first </think>, after its last <think>, each strip('\n') */
                const char *r = c, *e = close;
                while (e > c && e[-1] == '\n') e--;
                for (const char *p = c, *t; (t = strstr(p, "<think>")) && t + 7 <= e; p = t + 1) r = t + 7;
                strbuf rs = { 0 };
                chat_add_strip_nl(&rs, r, (size_t)(e - r));
                if (rs.len && (last_user == SIZE_MAX || i > last_user)) {
                    strbuf_puts(&b, "<think>\n");
                    strbuf_add(&b, rs.data, rs.len);
                    strbuf_puts(&b, "\n</think>\n\n");
                }
                strbuf_free(&rs);
                chat_add_strip_nl(&b, last + 8, strlen(last + 8));
            } else {
                strbuf_puts(&b, c);
            }
            if (x->n_calls) {
                strbuf_puts(&b, "<minimax:tool_call>\n");
                for (size_t j = 0; j < x->n_calls; j++) {
                    static const chat_arg_tags tags = { "MiniMax-M2", "<parameter name=\"", "\">", "</parameter>\n",
                                                        false };
                    strbuf_printf(&b, "<invoke name=\"%s\">\n", x->calls[j].name);
                    if (chat_add_call_args(&b, &x->calls[j], i, &tags, err, errlen)) {
                        strbuf_free(&b);
                        return NULL;
                    }
                    strbuf_puts(&b, "</invoke>\n");
                }
                strbuf_puts(&b, "</minimax:tool_call>");
            }
            have_call = x->n_calls > 0;
            strbuf_puts(&b, "[e~[\n");
        } else if (chat_is(x, "tool")) {
            if (!have_call) {
                snprintf(err, errlen, "messages[%zu]: a tool result with no assistant tool call before it "
                                      "(MiniMax-M2's template refuses it)", i);
                strbuf_free(&b);
                return NULL;
            }
            if (i == first || !chat_is(&m[i - 1], "tool")) strbuf_puts(&b, "]~b]tool");
            strbuf_printf(&b, "\n<response>%s</response>", x->content);
            if (i == n - 1 || !chat_is(&m[i + 1], "tool")) strbuf_puts(&b, "[e~[\n");
        } else if (chat_is(x, "user")) {
            strbuf_printf(&b, "]~b]user\n%s[e~[\n", x->content);
        } /* a later system message: the template drops it */
    }
    if (gen) strbuf_puts(&b, "]~b]ai\n<think>\n");
    char *out = strbuf_take(&b);
    if (!out) snprintf(err, errlen, "out of memory rendering the chat template");
    return out;
}
