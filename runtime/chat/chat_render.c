/* chat_render.c: the pieces the template renderers share (chat_render.h). */
#include "runtime/chat/chat_render.h"

#include <stdio.h>

#include "runtime/chat/pyjson.h"

int chat_add_call_args(strbuf *b, const chat_call *c, size_t msg, const chat_arg_tags *t, char *err, size_t errlen)
{
    json_t *args = json_loads(c->arguments, 0, NULL);
    if (!json_is_object(args)) {
        json_decref(args);
        snprintf(err, errlen, "messages[%zu]: %s's template needs each call's arguments to be a JSON object", msg,
                 t->tmpl);
        return -1;
    }
    const char *k;
    json_t *v;
    json_object_foreach(args, k, v) {
        strbuf_printf(b, "%s%s%s", t->key_open, k, t->key_close);
        if (t->python_str) pyjson_add_str(b, v);
        else if (json_is_string(v)) strbuf_add(b, json_string_value(v), json_string_length(v));
        else pyjson_add(b, v);
        strbuf_puts(b, t->value_close);
    }
    json_decref(args);
    return 0;
}

void chat_add_strip(strbuf *b, const char *s, size_t n)
{
    static const char ws[] = " \t\n\r\v\f";
    while (n && *s && strchr(ws, *s)) { s++; n--; }
    while (n && s[n - 1] && strchr(ws, s[n - 1])) n--;
    strbuf_add(b, s, n);
}

void chat_add_strip_nl(strbuf *b, const char *s, size_t n)
{
    while (n && *s == '\n') { s++; n--; }
    while (n && s[n - 1] == '\n') n--;
    strbuf_add(b, s, n);
}

void chat_add_tojson_text(strbuf *b, const char *text)
{
    json_t *v = json_loads(text, JSON_DECODE_ANY, NULL);
    if (!v) v = json_string(text);
    if (v) pyjson_add(b, v);
    else b->oom = true;
    json_decref(v);
}
