/* chat_template_mistral.c: Mistral's v3 chat template with its tool parts
 * (as Mistral 7B Instruct v0.3 ships it), statement by statement. See
 * chat_template.h. Mixtral 8x22B Instruct's own tool_use template is an
 * older layout (tools as Python's str() of the list, "tool_calls" and
 * "tool_results" roles) and is not this one.
 *
 * The template writes BOS, then [INST] turns with the system message
 * folded into one of them (the last message when it is a user one, or, in
 * the release that fixed that, the last user message), the tools as an
 * [AVAILABLE_TOOLS] list before every user message equal to the last one
 * (it compares whole messages, so an earlier one with the same text gets
 * them too), calls as a [TOOL_CALLS] JSON list with the client's ids and
 * results as [TOOL_RESULTS] with the call's id. It has no generation
 * prompt: the answer follows [/INST] or [/TOOL_RESULTS]. Its tool call ids
 * must be 9 characters long, which the server's own ids are for this
 * template (server_new_call_id). */
#include "runtime/chat/chat_template.h"
#include "runtime/chat/chat_render.h"

#include <jansson.h>
#include <stdio.h>

#include "runtime/chat/pyjson.h"
#include "runtime/util/strbuf.h"

/* Python's len() of a UTF-8 string: its code points. */
static size_t code_points(const char *s)
{
    size_t n = 0;
    for (; *s; s++) n += ((unsigned char)*s & 0xc0) != 0x80;
    return n;
}

static bool id_ok(const char *id, size_t msg, char *err, size_t errlen)
{
    if (id && code_points(id) == 9) return true;
    snprintf(err, errlen, "messages[%zu]: Mistral's template needs tool call ids of 9 characters (it raises "
             "\"Tool call IDs should be alphanumeric strings with length 9!\")", msg);
    return false;
}

/* [AVAILABLE_TOOLS] [...]: each tool's function, its string values written in quotes as they are
 * (the template does not escape them), the others as tojson, "return" left out. */
static void available_tools(strbuf *b, const char *const *tools, size_t n_tools)
{
    strbuf_puts(b, "[AVAILABLE_TOOLS] [");
    for (size_t t = 0; t < n_tools; t++) {
        json_t *tool = json_loads(tools[t], 0, NULL), *f = json_object_get(tool, "function");
        strbuf_puts(b, "{\"type\": \"function\", \"function\": {");
        const char *k;
        json_t *v;
        bool first = true;
        json_object_foreach(f, k, v) {
            if (!strcmp(k, "return")) continue;
            strbuf_printf(b, "%s\"%s\": ", first ? "" : ", ", k);
            if (json_is_string(v)) {
                strbuf_puts(b, "\"");
                strbuf_add(b, json_string_value(v), json_string_length(v));
                strbuf_puts(b, "\"");
            } else {
                pyjson_add(b, v);
            }
            first = false;
        }
        strbuf_puts(b, t + 1 < n_tools ? "}}, " : "}}]");
        json_decref(tool);
    }
    strbuf_puts(b, "[/AVAILABLE_TOOLS]");
}

chat_render_fn chat_template_render_mistral_v3;
char *chat_template_render_mistral_v3(const chat_msg *m, size_t n, const char *const *tools, size_t n_tools,
                                      const chat_tools_opts *o, int system_in_last_user, bool gen, char *err, size_t errlen)
{
    (void)gen;
    size_t first = n && chat_is(&m[0], "system") ? 1 : 0, last_user = n;
    const char *system = first ? m[0].content : NULL;
    for (size_t i = first; i < n; i++)
        if (chat_is(&m[i], "user")) last_user = i;
    /* the template's first loop: user and assistant alternate, calls and results aside */
    size_t turn = 0;
    for (size_t i = first; i < n; i++) {
        if (chat_is(&m[i], "tool") || m[i].n_calls) continue;
        if (chat_is(&m[i], "user") != (turn % 2 == 0)) {
            snprintf(err, errlen, "messages[%zu]: after the optional system message, conversation roles must "
                     "alternate user/assistant/user/assistant/... (Mistral's template)", i);
            return NULL;
        }
        turn++;
    }
    strbuf b = { 0 };
    strbuf_puts(&b, o && o->bos ? o->bos : "");
    const char *eos = o && o->eos ? o->eos : "";
    for (size_t i = first; i < n; i++) {
        const chat_msg *x = &m[i];
        if (chat_is(x, "user")) {
            /* the template compares messages whole: {role, content} */
            bool as_last = !strcmp(x->content, m[last_user].content);
            if (n_tools && as_last) available_tools(&b, tools, n_tools);
            bool with_system = system && (system_in_last_user ? as_last : i == n - 1);
            strbuf_printf(&b, "[INST] %s%s%s[/INST]", with_system ? system : "", with_system ? "\n\n" : "",
                          x->content);
        } else if (x->n_calls) {
            strbuf_puts(&b, "[TOOL_CALLS] [");
            for (size_t j = 0; j < x->n_calls; j++) {
                const chat_call *c = &x->calls[j];
                json_t *name = json_string(c->name);
                strbuf_puts(&b, "{\"name\": ");
                if (name) pyjson_add(&b, name);
                json_decref(name);
                strbuf_puts(&b, ", \"arguments\": ");
                chat_add_tojson_text(&b, c->arguments);
                if (!id_ok(c->id, i, err, errlen)) { strbuf_free(&b); return NULL; }
                strbuf_printf(&b, ", \"id\": \"%s\"}%s", c->id, j + 1 < x->n_calls ? ", " : "]");
            }
            strbuf_puts(&b, eos);
        } else if (chat_is(x, "assistant")) {
            strbuf_puts(&b, " ");
            chat_add_strip(&b, x->content, strlen(x->content));
            strbuf_puts(&b, eos);
        } else if (chat_is(x, "tool")) {
            strbuf_printf(&b, "[TOOL_RESULTS] {\"content\": %s, ", x->content);
            if (!id_ok(x->tool_call_id, i, err, errlen)) { strbuf_free(&b); return NULL; }
            strbuf_printf(&b, "\"call_id\": \"%s\"}[/TOOL_RESULTS]", x->tool_call_id);
        } else {
            strbuf_free(&b);
            snprintf(err, errlen, "messages[%zu]: Mistral's template takes user and assistant roles only, and a "
                     "system message first", i);
            return NULL;
        }
    }
    char *out = strbuf_take(&b);
    if (!out) snprintf(err, errlen, "out of memory rendering the chat template");
    return out;
}
