/* chat_template_llama.c: Meta's chat templates with their tool parts,
 * statement by statement: Llama 3.1 / 3.3 and 3.2 (one template, 3.2's
 * dating its system turn today) and Llama 4 (Scout, Maverick). See
 * chat_template.h.
 *
 * Both put the tools, each as tojson(indent=4) under the same
 * instructions, into the first message after the system one (trimmed,
 * whatever its role) as a user turn; an assistant's call as
 * {"name": "NAME", "parameters": ARGUMENTS} (the arguments as an object,
 * as llama.cpp and vLLM pass them to templates); tool results in ipython
 * turns as JSON strings (a string is iterable to Jinja, so the templates'
 * tojson quotes it). Llama 3.1 always writes a system turn (knowledge
 * cutoff, date), trims every message and takes one call per message;
 * Llama 4 writes a system turn only for a system message, keeps messages
 * as they are and writes an assistant's text in <|python_start|>
 * <|python_end|> before its calls. */
#include "runtime/chat/chat_template.h"
#include "runtime/chat/chat_render.h"

#include <jansson.h>
#include <stdio.h>
#include <time.h>

#include "runtime/chat/pyjson.h"
#include "runtime/util/strbuf.h"

typedef struct llama_tags {
    const char *start, *end, *eot; /* the role header's open and close, the turn's end */
} llama_tags;

static const llama_tags L3 = { "<|start_header_id|>", "<|end_header_id|>\n\n", "<|eot_id|>" },
                        L4 = { "<|header_start|>", "<|header_end|>\n\n", "<|eot|>" };

static void header(strbuf *b, const llama_tags *k, const char *role)
{
    strbuf_printf(b, "%s%s%s", k->start, role, k->end);
}

/* The tools in the first message after the system one, or -1 when there is none. */
static int tools_turn(strbuf *b, const llama_tags *k, const char *const *tools, size_t n_tools, const chat_msg *m,
                      size_t i, size_t n, char *err, size_t errlen)
{
    if (i == n) {
        snprintf(err, errlen, "Llama's template puts the tools in the first user message, and there is none");
        return -1;
    }
    header(b, k, "user");
    strbuf_puts(b, "Given the following functions, please respond with a JSON for a function call with its proper "
                   "arguments that best answers the given prompt.\n\nRespond in the format {\"name\": function name, "
                   "\"parameters\": dictionary of argument name and its value}.Do not use variables.\n\n");
    for (size_t t = 0; t < n_tools; t++) {
        json_t *v = json_loads(tools[t], 0, NULL);
        if (v) pyjson_add_indented(b, v, 4);
        json_decref(v);
        strbuf_puts(b, "\n\n");
    }
    chat_add_strip(b, m[i].content, strlen(m[i].content));
    strbuf_puts(b, k->eot);
    return 0;
}

static void ipython_turn(strbuf *b, const llama_tags *k, const char *content)
{
    header(b, k, "ipython");
    json_t *s = json_string(content);
    if (s) pyjson_add(b, s);
    else b->oom = true;
    json_decref(s);
    strbuf_puts(b, k->eot);
}

static void call_json(strbuf *b, const chat_call *c)
{
    strbuf_printf(b, "{\"name\": \"%s\", \"parameters\": ", c->name);
    chat_add_tojson_text(b, c->arguments);
    strbuf_puts(b, "}");
}

static char *finish(strbuf *b, char *err, size_t errlen)
{
    char *out = strbuf_take(b);
    if (!out) snprintf(err, errlen, "out of memory rendering the chat template");
    return out;
}

chat_render_fn chat_template_render_llama31;
char *chat_template_render_llama31(const chat_msg *m, size_t n, const char *const *tools, size_t n_tools,
                                   const chat_tools_opts *o, int today, bool gen, char *err, size_t errlen)
{
    char date[32] = "26 Jul 2024";
    if (today) { /* Llama 3.2's strftime_now("%d %b %Y"); o->date (YYYY-MM-DD) stands for today in tests */
        struct tm tm = { 0 };
        int y, mo, d;
        if (o && o->date && sscanf(o->date, "%d-%d-%d", &y, &mo, &d) == 3) {
            tm.tm_year = y - 1900;
            tm.tm_mon = mo - 1;
            tm.tm_mday = d;
        } else {
            time_t now = time(NULL);
            localtime_r(&now, &tm);
        }
        strftime(date, sizeof date, "%d %b %Y", &tm);
    }
    strbuf b = { 0 };
    strbuf_puts(&b, o && o->bos ? o->bos : "");
    size_t i = n && chat_is(&m[0], "system") ? 1 : 0;
    header(&b, &L3, "system");
    if (n_tools) strbuf_puts(&b, "Environment: ipython\n");
    strbuf_printf(&b, "Cutting Knowledge Date: December 2023\nToday Date: %s\n\n", date);
    if (i) chat_add_strip(&b, m[0].content, strlen(m[0].content));
    strbuf_puts(&b, L3.eot);
    if (n_tools && tools_turn(&b, &L3, tools, n_tools, m, i++, n, err, errlen)) { strbuf_free(&b); return NULL; }
    for (; i < n; i++) {
        const chat_msg *x = &m[i];
        if (chat_is(x, "tool")) {
            ipython_turn(&b, &L3, x->content);
        } else if (x->n_calls) {
            if (x->n_calls != 1) {
                strbuf_free(&b);
                snprintf(err, errlen, "messages[%zu]: Llama 3.1's template takes one tool call per message", i);
                return NULL;
            }
            header(&b, &L3, "assistant");
            call_json(&b, &x->calls[0]);
            strbuf_puts(&b, L3.eot);
        } else {
            header(&b, &L3, x->role);
            chat_add_strip(&b, x->content, strlen(x->content));
            strbuf_puts(&b, L3.eot);
        }
    }
    if (gen) header(&b, &L3, "assistant");
    return finish(&b, err, errlen);
}

chat_render_fn chat_template_render_llama4;
char *chat_template_render_llama4(const chat_msg *m, size_t n, const char *const *tools, size_t n_tools,
                                  const chat_tools_opts *o, int variant, bool gen, char *err, size_t errlen)
{
    (void)variant;
    strbuf b = { 0 };
    strbuf_puts(&b, o && o->bos ? o->bos : "");
    size_t i = 0;
    if (n && chat_is(&m[0], "system")) {
        header(&b, &L4, "system");
        if (n_tools) strbuf_puts(&b, "Environment: ipython\n");
        chat_add_strip(&b, m[0].content, strlen(m[0].content));
        strbuf_puts(&b, L4.eot);
        i = 1;
    }
    if (n_tools && tools_turn(&b, &L4, tools, n_tools, m, i++, n, err, errlen)) { strbuf_free(&b); return NULL; }
    for (; i < n; i++) {
        const chat_msg *x = &m[i];
        if (chat_is(x, "tool")) {
            ipython_turn(&b, &L4, x->content);
        } else if (x->n_calls) {
            header(&b, &L4, "assistant");
            strbuf_printf(&b, "<|python_start|>%s<|python_end|>", x->content);
            for (size_t j = 0; j < x->n_calls; j++) call_json(&b, &x->calls[j]);
            strbuf_puts(&b, L4.eot);
        } else {
            header(&b, &L4, x->role);
            strbuf_puts(&b, x->content);
            strbuf_puts(&b, L4.eot);
        }
    }
    if (gen) header(&b, &L4, "assistant");
    return finish(&b, err, errlen);
}
