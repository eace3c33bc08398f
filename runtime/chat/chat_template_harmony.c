/* chat_template_harmony.c: gpt-oss's own chat template (OpenAI's harmony
 * layout) for conversations with tools, statement by statement: the system
 * message (identity, knowledge cutoff, date, reasoning effort, channels),
 * the developer message (instructions, then the tools as a TypeScript
 * namespace), calls as commentary messages to functions.NAME, results as
 * messages from it. Its schema-to-TypeScript macro is followed as Jinja
 * runs it, quirks included (a nested object's members each start on a new
 * line after 16 spaces; its oneOf "object" test never fires, Jinja's loop
 * scoping eating the flag). See chat_template.h. */
#include "runtime/chat/chat_template.h"
#include "runtime/chat/chat_render.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "runtime/chat/pyjson.h"
#include "runtime/util/strbuf.h"

static bool truthy(const json_t *v)
{
    switch (v ? json_typeof(v) : JSON_NULL) {
    case JSON_OBJECT: return json_object_size(v) > 0;
    case JSON_ARRAY: return json_array_size(v) > 0;
    case JSON_STRING: return json_string_length(v) > 0;
    case JSON_INTEGER: return json_integer_value(v) != 0;
    case JSON_REAL: return json_real_value(v) != 0;
    case JSON_TRUE: return true;
    default: return false;
    }
}

static bool is_str(const json_t *v, const char *s) { return json_is_string(v) && !strcmp(json_string_value(v), s); }

/* Python's str() of a JSON scalar, as Jinja's join and + write it. */
static void add_str(strbuf *b, const json_t *v)
{
    if (json_is_string(v)) strbuf_add(b, json_string_value(v), json_string_length(v));
    else if (json_is_true(v)) strbuf_puts(b, "True");
    else if (json_is_false(v)) strbuf_puts(b, "False");
    else if (!v || json_is_null(v)) strbuf_puts(b, "None");
    else pyjson_add(b, v);
}

/* `name in (required or [])`: a list's member, or a substring of a string. */
static bool required(const json_t *req, const char *name)
{
    if (json_is_string(req)) return strstr(json_string_value(req), name) != NULL;
    size_t i;
    json_t *x;
    json_array_foreach((json_t *)req, i, x) if (is_str(x, name)) return true;
    return false;
}

static size_t utf8_chars(const char *s, size_t n)
{
    size_t c = 0;
    for (size_t i = 0; i < n; i++) c += ((unsigned char)s[i] & 0xC0) != 0x80;
    return c;
}

static void ts_type(strbuf *b, const json_t *spec, int depth);

static void ts_array(strbuf *b, const json_t *spec, int depth)
{
    const json_t *items = json_object_get(spec, "items");
    if (!truthy(items)) {
        strbuf_puts(b, "any[]");
    } else {
        const json_t *t = json_object_get(items, "type");
        if (is_str(t, "string")) strbuf_puts(b, "string[]");
        else if (is_str(t, "number") || is_str(t, "integer")) strbuf_puts(b, "number[]");
        else if (is_str(t, "boolean")) strbuf_puts(b, "boolean[]");
        else {
            strbuf inner = { 0 };
            ts_type(&inner, items, depth + 1);
            const char *s = inner.data ? inner.data : "";
            if (!strcmp(s, "object | object") || utf8_chars(s, inner.len) > 50) strbuf_puts(b, "any[]");
            else { strbuf_add(b, s, inner.len); strbuf_puts(b, "[]"); }
            if (inner.oom) b->oom = true;
            strbuf_free(&inner);
        }
    }
    if (truthy(json_object_get(spec, "nullable"))) strbuf_puts(b, " | null");
}

static void ts_type(strbuf *b, const json_t *spec, int depth)
{
    if (depth > 64) { strbuf_puts(b, "any"); return; } /* Jinja would recurse until it fails; we stop */
    const json_t *type = json_object_get(spec, "type"), *one_of = json_object_get(spec, "oneOf");
    if (is_str(type, "array")) {
        ts_array(b, spec, depth);
    } else if (json_is_array(type) && json_array_size(type) > 0) {
        size_t i;
        json_t *x;
        json_array_foreach((json_t *)type, i, x) {
            if (i) strbuf_puts(b, " | ");
            add_str(b, x);
        }
    } else if (truthy(one_of)) {
        size_t i, n = json_is_array(one_of) ? json_array_size(one_of) : 0;
        for (i = 0; i < n; i++) {
            const json_t *v = json_array_get(one_of, i);
            ts_type(b, v, depth + 1);
            const json_t *d = json_object_get(v, "description");
            if (truthy(d)) { strbuf_puts(b, "// "); add_str(b, d); }
            const json_t *def = json_object_get(v, "default");
            if (def) { strbuf_puts(b, "                    // default: "); pyjson_add(b, def); }
            if (i + 1 < n) strbuf_puts(b, " | \n");
        }
    } else if (is_str(type, "string")) {
        const json_t *e = json_object_get(spec, "enum");
        if (truthy(e) && json_is_array(e)) {
            size_t i;
            json_t *x;
            strbuf_puts(b, "\"");
            json_array_foreach((json_t *)e, i, x) {
                if (i) strbuf_puts(b, "\" | \"");
                add_str(b, x);
            }
            strbuf_puts(b, "\"");
        } else {
            strbuf_puts(b, "string");
            if (truthy(json_object_get(spec, "nullable"))) strbuf_puts(b, " | null");
        }
    } else if (is_str(type, "number") || is_str(type, "integer")) {
        strbuf_puts(b, "number");
    } else if (is_str(type, "boolean")) {
        strbuf_puts(b, "boolean");
    } else if (is_str(type, "object")) {
        const json_t *props = json_object_get(spec, "properties");
        if (truthy(props) && json_is_object(props)) {
            const json_t *req = json_object_get(spec, "required");
            const char *k;
            json_t *p;
            bool first = true;
            strbuf_puts(b, "{\n");
            json_object_foreach((json_t *)props, k, p) {
                if (!first) strbuf_puts(b, ", ");
                first = false;
                strbuf_printf(b, "%s%s: \n                ", k, required(req, k) ? "" : "?");
                ts_type(b, p, depth + 1);
            }
            strbuf_puts(b, "}");
        } else {
            strbuf_puts(b, "object");
        }
    } else {
        strbuf_puts(b, "any");
    }
}

static void tool_namespace(strbuf *b, const char *const *tools, size_t n)
{
    strbuf_puts(b, "## functions\n\nnamespace functions {\n\n");
    for (size_t i = 0; i < n; i++) {
        json_t *t = json_loads(tools[i], 0, NULL);
        const json_t *f = json_object_get(t, "function");
        const json_t *params = json_object_get(f, "parameters"), *props = json_object_get(params, "properties");
        /* Jinja fails on a tool without a description; llama.cpp's runtime writes none, as here */
        strbuf_puts(b, "// ");
        if (json_object_get(f, "description")) add_str(b, json_object_get(f, "description"));
        strbuf_puts(b, "\ntype ");
        add_str(b, json_object_get(f, "name"));
        strbuf_puts(b, " = ");
        if (truthy(params) && truthy(props) && json_is_object(props)) {
            const json_t *req = json_object_get(params, "required");
            const char *k;
            json_t *p;
            strbuf_puts(b, "(_: {\n");
            json_object_foreach((json_t *)props, k, p) {
                const json_t *d = json_object_get(p, "description"), *def = json_object_get(p, "default");
                if (truthy(d)) { strbuf_puts(b, "// "); add_str(b, d); strbuf_puts(b, "\n"); }
                strbuf_printf(b, "%s%s: ", k, required(req, k) ? "" : "?");
                ts_type(b, p, 0);
                if (def) {
                    if (truthy(json_object_get(p, "enum"))) { strbuf_puts(b, ", // default: "); add_str(b, def); }
                    else if (truthy(json_object_get(p, "oneOf"))) { strbuf_puts(b, "// default: "); add_str(b, def); }
                    else { strbuf_puts(b, ", // default: "); pyjson_add(b, def); }
                }
                strbuf_puts(b, ",\n");
            }
            strbuf_puts(b, "}) => any;\n\n");
        } else {
            strbuf_puts(b, "() => any;\n\n");
        }
        json_decref(t);
    }
    strbuf_puts(b, "} // namespace functions");
}

/* tojson of a call's arguments: the object they hold, else the text as a string */
static void add_arguments(strbuf *b, const char *args)
{
    json_t *v = json_loads(args, JSON_DECODE_ANY, NULL);
    if (!v) v = json_string(args);
    pyjson_add(b, v);
    json_decref(v);
}


chat_render_fn chat_template_render_harmony_tools;
char *chat_template_render_harmony_tools(const chat_msg *m, size_t n, const char *const *tools, size_t n_tools,
                                         const chat_tools_opts *o, int variant, bool gen, char *err, size_t errlen)
{
    (void)variant;
    const char *date = o ? o->date : NULL, *effort = o && o->reasoning_effort ? o->reasoning_effort : "medium";
    char today[16];
    if (!date) {
        time_t now = time(NULL);
        struct tm tm;
        localtime_r(&now, &tm);
        strftime(today, sizeof today, "%Y-%m-%d", &tm);
        date = today;
    }
    strbuf b = { 0 };
    strbuf_printf(&b, "<|start|>system<|message|>You are ChatGPT, a large language model trained by OpenAI.\n"
                      "Knowledge cutoff: 2024-06\nCurrent date: %s\n\nReasoning: %s\n\n"
                      "# Valid channels: analysis, commentary, final. Channel must be included for every message.%s<|end|>",
                  date, effort, n_tools ? "\nCalls to these tools must go to the commentary channel: 'functions'." : "");
    size_t first = 0;
    const char *dev = "";
    if (n && (chat_is(&m[0], "system") || chat_is(&m[0], "developer"))) { dev = m[0].content; first = 1; }
    if (*dev || n_tools) {
        strbuf_puts(&b, "<|start|>developer<|message|>");
        if (*dev) strbuf_printf(&b, "# Instructions\n\n%s\n\n", dev);
        if (n_tools) { strbuf_puts(&b, "# Tools\n\n"); tool_namespace(&b, tools, n_tools); }
        strbuf_puts(&b, "<|end|>");
    }
    const char *last_call = NULL;
    for (size_t i = first; i < n; i++) {
        const chat_msg *x = &m[i];
        if (chat_is(x, "assistant")) {
            if (strstr(x->content, "<|channel|>analysis<|message|>") || strstr(x->content, "<|channel|>final<|message|>")) {
                snprintf(err, errlen, "messages[%zu]: gpt-oss's template refuses harmony's <|channel|> tags in a message's content", i);
                strbuf_free(&b);
                return NULL;
            }
            if (x->n_calls) {
                bool later_final = false;
                for (size_t k = i + 1; k < n; k++) later_final |= chat_is(&m[k], "assistant") && !m[k].n_calls;
                if (*x->content && !later_final)
                    strbuf_printf(&b, "<|start|>assistant<|channel|>analysis<|message|>%s<|end|>", x->content);
                /* one call per message, as the template renders it: the first */
                strbuf_printf(&b, "<|start|>assistant to=functions.%s<|channel|>commentary json<|message|>", x->calls[0].name);
                add_arguments(&b, x->calls[0].arguments);
                strbuf_puts(&b, "<|call|>");
                last_call = x->calls[0].name;
            } else {
                strbuf_printf(&b, "<|start|>assistant<|channel|>final<|message|>%s<|end|>", x->content);
                last_call = NULL;
            }
        } else if (chat_is(x, "tool")) {
            if (!last_call) {
                snprintf(err, errlen, "messages[%zu]: a tool result with no assistant tool call before it "
                                      "(gpt-oss's template refuses it)", i);
                strbuf_free(&b);
                return NULL;
            }
            strbuf_printf(&b, "<|start|>functions.%s to=assistant<|channel|>commentary<|message|>", last_call);
            json_t *s = json_stringn_nocheck(x->content, strlen(x->content));
            pyjson_add(&b, s);
            json_decref(s);
            strbuf_puts(&b, "<|end|>");
        } else if (chat_is(x, "user")) {
            strbuf_printf(&b, "<|start|>user<|message|>%s<|end|>", x->content);
        } /* a later system message: the template has no place for it */
    }
    if (gen) strbuf_puts(&b, "<|start|>assistant");
    char *out = strbuf_take(&b);
    if (!out) snprintf(err, errlen, "out of memory rendering the chat template");
    return out;
}
