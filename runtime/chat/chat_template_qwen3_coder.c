/* chat_template_qwen3_coder.c: Qwen3-Coder's chat template, statement by
 * statement: chatml turns; tools as <function> blocks listing each
 * parameter's name, type, description and other schema keys (enum left
 * out, as the template leaves it out; mappings as JSON, other values as
 * Python's str()); calls as <function=NAME> with one <parameter=KEY>
 * block per argument; tool results in <tool_response> blocks inside one
 * user turn. See chat_template.h. */
#include "runtime/chat/chat_template.h"
#include "runtime/chat/chat_render.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/chat/pyjson.h"
#include "runtime/util/strbuf.h"

/* `value | trim`: str() of the value, stripped; nothing for absent. */
static void add_trimmed_value(strbuf *b, const json_t *v)
{
    if (!v) return;
    strbuf t = { 0 };
    pyjson_add_str(&t, v);
    chat_add_strip(b, t.data ? t.data : "", t.len);
    if (t.oom) b->oom = true;
    strbuf_free(&t);
}

/* The template's render_item_list(list, 'required'): "\n<required>[`a`, `b`]</required>"
 * for a non-empty list (a string is a list of its characters to Jinja). */
static void item_list(strbuf *b, const json_t *v)
{
    if (json_is_array(v) && json_array_size(v) > 0) {
        size_t i;
        json_t *x;
        strbuf_puts(b, "\n<required>[");
        json_array_foreach((json_t *)v, i, x) {
            if (i) strbuf_puts(b, ", ");
            if (json_is_string(x)) { strbuf_puts(b, "`"); pyjson_add_str(b, x); strbuf_puts(b, "`"); }
            else pyjson_add_str(b, x);
        }
        strbuf_puts(b, "]</required>");
    } else if (json_is_string(v) && json_string_length(v) > 0) {
        const char *s = json_string_value(v), *end = s + json_string_length(v);
        strbuf_puts(b, "\n<required>[");
        for (const char *p = s; p < end;) {
            const char *q = p + 1;
            while (q < end && ((unsigned char)*q & 0xC0) == 0x80) q++;
            if (p > s) strbuf_puts(b, ", ");
            strbuf_puts(b, "`");
            strbuf_add(b, p, (size_t)(q - p));
            strbuf_puts(b, "`");
            p = q;
        }
        strbuf_puts(b, "]</required>");
    }
}

static void tool_block(strbuf *b, const char *text)
{
    json_t *t = json_loads(text, 0, NULL);
    const json_t *f = json_object_get(t, "function") ? json_object_get(t, "function") : t;
    const json_t *params = json_object_get(f, "parameters"), *props = json_object_get(params, "properties");
    strbuf_puts(b, "\n<function>\n<name>");
    pyjson_add_str(b, json_object_get(f, "name"));
    strbuf_puts(b, "</name>\n<description>");
    add_trimmed_value(b, json_object_get(f, "description"));
    strbuf_puts(b, "</description>\n<parameters>");
    const char *k;
    json_t *p;
    json_object_foreach((json_t *)props, k, p) {
        strbuf_printf(b, "\n<parameter>\n<name>%s</name>", k);
        if (json_object_get(p, "type")) {
            strbuf_puts(b, "\n<type>");
            pyjson_add_str(b, json_object_get(p, "type"));
            strbuf_puts(b, "</type>");
        }
        if (json_object_get(p, "description")) {
            strbuf_puts(b, "\n<description>");
            add_trimmed_value(b, json_object_get(p, "description"));
            strbuf_puts(b, "</description>");
        }
        const char *jk;
        json_t *jv;
        json_object_foreach(p, jk, jv) {
            if (!*jk || !strcmp(jk, "type") || !strcmp(jk, "description") || !strcmp(jk, "enum") ||
                !strcmp(jk, "required") || json_is_null(jv))
                continue;
            strbuf norm = { 0 }; /* '-' and ' ' become '_', '$' goes */
            for (const char *c = jk; *c; c++)
                if (*c != '$') strbuf_add(&norm, *c == '-' || *c == ' ' ? "_" : c, 1);
            const char *nk = norm.data ? norm.data : "";
            strbuf_printf(b, "\n<%s>", nk);
            if (json_is_object(jv)) pyjson_add(b, jv);
            else pyjson_add_str(b, jv);
            strbuf_printf(b, "</%s>", nk);
            strbuf_free(&norm);
        }
        item_list(b, json_object_get(p, "required"));
        strbuf_puts(b, "\n</parameter>");
    }
    item_list(b, json_object_get(params, "required"));
    strbuf_puts(b, "\n</parameters>");
    const json_t *ret = json_object_get(f, "return");
    if (ret) {
        strbuf_puts(b, "\n<return>");
        if (json_is_object(ret)) pyjson_add(b, ret);
        else pyjson_add_str(b, ret);
        strbuf_puts(b, "</return>");
    }
    strbuf_puts(b, "\n</function>");
    json_decref(t);
}


static bool blank(const char *s)
{
    for (; *s; s++)
        if (!strchr(" \t\n\r\v\f", *s)) return false;
    return true;
}

chat_render_fn chat_template_render_qwen3_coder;
char *chat_template_render_qwen3_coder(const chat_msg *m, size_t n, const char *const *tools, size_t n_tools,
                                       const chat_tools_opts *o, int variant, bool gen, char *err, size_t errlen)
{
    (void)o;
    (void)variant;
    strbuf b = { 0 };
    size_t first = 0;
    const char *sys = NULL;
    if (n && chat_is(&m[0], "system")) { sys = m[0].content; first = 1; }
    if (sys) strbuf_printf(&b, "<|im_start|>system\n%s", sys);
    else if (n_tools)
        strbuf_puts(&b, "<|im_start|>system\nYou are Qwen, a helpful AI assistant that can interact with a computer to "
                        "solve tasks.");
    if (n_tools) {
        strbuf_puts(&b, "\n\nYou have access to the following functions:\n\n<tools>");
        for (size_t i = 0; i < n_tools; i++) tool_block(&b, tools[i]);
        strbuf_puts(&b, "\n</tools>\n\nIf you choose to call a function ONLY reply in the following format with NO "
                        "suffix:\n\n<tool_call>\n<function=example_function_name>\n<parameter=example_parameter_1>\n"
                        "value_1\n</parameter>\n<parameter=example_parameter_2>\nThis is the value for the second "
                        "parameter\nthat can span\nmultiple lines\n</parameter>\n</function>\n</tool_call>\n\n"
                        "<IMPORTANT>\nReminder:\n- Function calls MUST follow the specified format: an inner "
                        "<function=...></function> block must be nested within <tool_call></tool_call> XML tags\n"
                        "- Required parameters MUST be specified\n- You may provide optional reasoning for your "
                        "function call in natural language BEFORE the function call, but NOT after\n- If there is no "
                        "function call available, answer the question like normal with your current knowledge and do "
                        "not tell the user about function calls\n</IMPORTANT>");
    }
    if (sys || n_tools) strbuf_puts(&b, "<|im_end|>\n");
    for (size_t i = first; i < n; i++) {
        const chat_msg *x = &m[i];
        if (chat_is(x, "assistant") && x->n_calls) {
            strbuf_puts(&b, "<|im_start|>assistant");
            if (!blank(x->content)) {
                strbuf_puts(&b, "\n");
                chat_add_strip(&b, x->content, strlen(x->content));
                strbuf_puts(&b, "\n");
            }
            for (size_t j = 0; j < x->n_calls; j++) {
                strbuf_printf(&b, "\n<tool_call>\n<function=%s>\n", x->calls[j].name);
                static const chat_arg_tags tags = { "Qwen3-Coder", "<parameter=", ">\n", "\n</parameter>\n", true };
                if (chat_add_call_args(&b, &x->calls[j], i, &tags, err, errlen)) {
                    strbuf_free(&b);
                    return NULL;
                }
                strbuf_puts(&b, "</function>\n</tool_call>");
            }
            strbuf_puts(&b, "<|im_end|>\n");
        } else if (chat_is(x, "tool")) {
            /* the template opens the user turn only after a message that is not a tool result */
            if (i > first && !chat_is(&m[i - 1], "tool")) strbuf_puts(&b, "<|im_start|>user\n");
            strbuf_printf(&b, "<tool_response>\n%s\n</tool_response>\n", x->content);
            if (i == n - 1 || !chat_is(&m[i + 1], "tool")) strbuf_puts(&b, "<|im_end|>\n");
        } else {
            strbuf_printf(&b, "<|im_start|>%s\n%s<|im_end|>\n", x->role, x->content);
        }
    }
    if (gen) strbuf_puts(&b, "<|im_start|>assistant\n");
    char *out = strbuf_take(&b);
    if (!out) snprintf(err, errlen, "out of memory rendering the chat template");
    return out;
}
