/* chat_template_deepseek.c: DeepSeek V3.1's chat template (V3.1,
 * V3.1-Terminus, V3.2-Exp ship it), statement by statement, with the tool
 * section of DeepSeek's model card. See chat_template.h.
 *
 * The template itself renders no tool definitions: DeepSeek's card gives
 * the prompt for them, "{system prompt}\n\n{tool_description}" after BOS,
 * one "### NAME" block per tool (its description and its parameters as
 * json.dumps writes them) and the format instructions. The rest is the
 * template's: every system message (wherever it stands) joined by blank
 * lines up front; <｜User｜> turns; an assistant turn right after a user
 * opens with <｜Assistant｜> and </think> (or <think>, the thinking
 * kwarg); calls as <｜tool▁call▁begin｜>NAME<｜tool▁sep｜>ARGUMENTS<｜tool▁call▁end｜>
 * inside <｜tool▁calls▁begin｜>...<｜tool▁calls▁end｜>, the arguments as
 * the client sent them; results as <｜tool▁output▁begin｜>...; the answer
 * after results written straight on, without a role marker; past
 * reasoning dropped (the text up to the first </think>). The generation
 * prompt follows only a user turn. */
#include "runtime/chat/chat_template.h"
#include "runtime/chat/chat_render.h"

#include <jansson.h>
#include <stdio.h>

#include "runtime/chat/pyjson.h"
#include "runtime/util/strbuf.h"

#define DS_CALLS_BEGIN "<" DS_BAR "tool" DS_SP "calls" DS_SP "begin" DS_BAR ">"
#define DS_CALLS_END "<" DS_BAR "tool" DS_SP "calls" DS_SP "end" DS_BAR ">"
#define DS_CALL_BEGIN "<" DS_BAR "tool" DS_SP "call" DS_SP "begin" DS_BAR ">"
#define DS_CALL_END "<" DS_BAR "tool" DS_SP "call" DS_SP "end" DS_BAR ">"
#define DS_SEP "<" DS_BAR "tool" DS_SP "sep" DS_BAR ">"
#define DS_OUTPUT_BEGIN "<" DS_BAR "tool" DS_SP "output" DS_SP "begin" DS_BAR ">"
#define DS_OUTPUT_END "<" DS_BAR "tool" DS_SP "output" DS_SP "end" DS_BAR ">"

/* The card's tool_description. A tool without a description gets an
 * empty one, without parameters {}. */
static void tool_description(strbuf *b, const char *const *tools, size_t n_tools)
{
    strbuf_puts(b, "## Tools\nYou have access to the following tools:\n");
    for (size_t i = 0; i < n_tools; i++) {
        json_t *t = json_loads(tools[i], 0, NULL);
        const json_t *f = json_object_get(t, "function") ? json_object_get(t, "function") : t;
        const json_t *name = json_object_get(f, "name"), *desc = json_object_get(f, "description"),
                     *params = json_object_get(f, "parameters");
        strbuf_puts(b, "\n### ");
        if (json_is_string(name)) strbuf_add(b, json_string_value(name), json_string_length(name));
        strbuf_puts(b, "\nDescription: ");
        if (json_is_string(desc)) strbuf_add(b, json_string_value(desc), json_string_length(desc));
        strbuf_puts(b, "\n\nParameters: ");
        if (params && !json_is_null(params)) pyjson_add(b, params);
        else strbuf_puts(b, "{}");
        strbuf_puts(b, "\n");
        json_decref(t);
    }
    strbuf_puts(b, "\nIMPORTANT: ALWAYS adhere to this exact format for tool use:\n" DS_CALLS_BEGIN DS_CALL_BEGIN
                   "tool_call_name" DS_SEP "tool_call_arguments" DS_CALL_END "{additional_tool_calls}" DS_CALLS_END
                   "\n\nWhere:\n- `tool_call_name` must be an exact match to one of the available tools\n"
                   "- `tool_call_arguments` must be valid JSON that strictly follows the tool's Parameters Schema\n"
                   "- For multiple tool calls, chain them directly without separators or spaces");
}

chat_render_fn chat_template_render_deepseek_v31;
char *chat_template_render_deepseek_v31(const chat_msg *m, size_t n, const char *const *tools, size_t n_tools,
                                        const chat_tools_opts *o, int variant, bool gen, char *err, size_t errlen)
{
    (void)variant;
    const bool thinking = o && o->thinking;
    strbuf b = { 0 };
    strbuf_puts(&b, o && o->bos ? o->bos : "");
    bool first_sp = true;
    for (size_t i = 0; i < n; i++) {
        if (!chat_is(&m[i], "system")) continue;
        if (!first_sp) strbuf_puts(&b, "\n\n");
        strbuf_puts(&b, m[i].content);
        first_sp = false;
    }
    if (n_tools) {
        strbuf_puts(&b, "\n\n");
        tool_description(&b, tools, n_tools);
    }
    bool last_user = false, is_tool = false;
    for (size_t i = 0; i < n; i++) {
        const chat_msg *x = &m[i];
        if (chat_is(x, "user")) {
            is_tool = false;
            last_user = true;
            strbuf_printf(&b, DS_USER "%s", x->content);
        } else if (chat_is(x, "assistant") && x->n_calls) {
            if (last_user) strbuf_puts(&b, DS_ASSISTANT "</think>");
            last_user = is_tool = false;
            strbuf_puts(&b, x->content);
            strbuf_puts(&b, DS_CALLS_BEGIN);
            for (size_t j = 0; j < x->n_calls; j++)
                strbuf_printf(&b, DS_CALL_BEGIN "%s" DS_SEP "%s" DS_CALL_END, x->calls[j].name, x->calls[j].arguments);
            strbuf_puts(&b, DS_CALLS_END DS_EOS);
        } else if (chat_is(x, "assistant")) {
            /* the template opens <think> only for DeepSeek's API "prefix" messages, which the APIs here lack */
            if (last_user) strbuf_puts(&b, DS_ASSISTANT "</think>");
            last_user = false;
            const char *c = x->content, *close = is_tool ? NULL : strstr(c, "</think>");
            strbuf_printf(&b, "%s" DS_EOS, close ? close + 8 : c);
            is_tool = false;
        } else if (chat_is(x, "tool")) {
            last_user = false;
            is_tool = true;
            strbuf_printf(&b, DS_OUTPUT_BEGIN "%s" DS_OUTPUT_END, x->content);
        }
    }
    if (gen && last_user && !is_tool) strbuf_puts(&b, thinking ? DS_ASSISTANT "<think>" : DS_ASSISTANT "</think>");
    char *out = strbuf_take(&b);
    if (!out) snprintf(err, errlen, "out of memory rendering the chat template");
    return out;
}
