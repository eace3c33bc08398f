/* chat_template_llama4.c: Llama 4's chat template (Scout, Maverick), with
 * its tool parts, statement by statement. See chat_template.h.
 *
 * BOS; a leading system message (trimmed) in a system turn, after
 * "Environment: ipython" when tools are offered; the tools themselves go
 * into the first message after it (trimmed, whatever its role), as a user
 * turn opened by the template's instructions and each tool as
 * tojson(indent=4); other messages as <|header_start|>ROLE<|header_end|>
 * turns; an assistant's calls as <|python_start|>TEXT<|python_end|> then
 * {"name": "NAME", "parameters": ARGUMENTS} per call (the arguments as an
 * object, as llama.cpp passes them to templates); tool results in
 * ipython turns as JSON strings (a string is iterable to Jinja, so the
 * template's tojson quotes it). */
#include "runtime/chat_template.h"
#include "runtime/chat_template_impl.h"

#include <jansson.h>
#include <stdio.h>

#include "runtime/pyjson.h"
#include "runtime/strbuf.h"

#define HEADER(role) "<|header_start|>" role "<|header_end|>\n\n"

/* A JSON text as tojson writes the value it holds; text that is not JSON as a JSON string. */
static void add_tojson_text(strbuf *b, const char *text)
{
    json_t *v = json_loads(text, JSON_DECODE_ANY, NULL);
    if (!v) v = json_string(text);
    if (v) pyjson_add(b, v);
    else b->oom = true;
    json_decref(v);
}

char *chat_template_render_llama4(const chat_msg *m, size_t n, const char *const *tools, size_t n_tools,
                                  const chat_tools_opts *o, bool gen, char *err, size_t errlen)
{
    strbuf b = { 0 };
    strbuf_puts(&b, o && o->bos ? o->bos : "");
    size_t i = 0;
    if (n && chat_is(&m[0], "system")) {
        strbuf_puts(&b, HEADER("system"));
        if (n_tools) strbuf_puts(&b, "Environment: ipython\n");
        chat_add_strip(&b, m[0].content, strlen(m[0].content));
        strbuf_puts(&b, "<|eot|>");
        i = 1;
    }
    if (n_tools) {
        if (i == n) {
            strbuf_free(&b);
            snprintf(err, errlen, "Llama 4's template puts the tools in the first user message, and there is none");
            return NULL;
        }
        strbuf_puts(&b, HEADER("user") "Given the following functions, please respond with a JSON for a function call "
                                       "with its proper arguments that best answers the given prompt.\n\n"
                                       "Respond in the format {\"name\": function name, \"parameters\": dictionary of "
                                       "argument name and its value}.Do not use variables.\n\n");
        for (size_t t = 0; t < n_tools; t++) {
            json_t *v = json_loads(tools[t], 0, NULL);
            if (v) pyjson_add_indented(&b, v, 4);
            json_decref(v);
            strbuf_puts(&b, "\n\n");
        }
        chat_add_strip(&b, m[i].content, strlen(m[i].content));
        strbuf_puts(&b, "<|eot|>");
        i++;
    }
    for (; i < n; i++) {
        const chat_msg *x = &m[i];
        if (chat_is(x, "tool")) {
            strbuf_puts(&b, HEADER("ipython"));
            json_t *s = json_string(x->content);
            if (s) pyjson_add(&b, s);
            else b.oom = true;
            json_decref(s);
            strbuf_puts(&b, "<|eot|>");
        } else if (x->n_calls) {
            strbuf_printf(&b, HEADER("assistant") "<|python_start|>%s<|python_end|>", x->content);
            for (size_t j = 0; j < x->n_calls; j++) {
                strbuf_printf(&b, "{\"name\": \"%s\", \"parameters\": ", x->calls[j].name);
                add_tojson_text(&b, x->calls[j].arguments);
                strbuf_puts(&b, "}");
            }
            strbuf_puts(&b, "<|eot|>");
        } else {
            strbuf_printf(&b, "<|header_start|>%s<|header_end|>\n\n%s<|eot|>", x->role, x->content);
        }
    }
    if (gen) strbuf_puts(&b, HEADER("assistant"));
    char *out = strbuf_take(&b);
    if (!out) snprintf(err, errlen, "out of memory rendering the chat template");
    return out;
}
