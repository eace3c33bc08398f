/* api_request.c: see api_request.h. Each check names the field the way the
 * client wrote it, because "400 bad request" alone sends people guessing. */
#include "runtime/chat/api_request.h"

#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/chat/pyjson.h"
#include "runtime/util/base64.h"

static int fail(api_error *e, const char *param, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int fail(api_error *e, const char *param, const char *fmt, ...)
{
    e->status = 400;
    snprintf(e->param, sizeof e->param, "%s", param);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->message, sizeof e->message, fmt, ap);
    va_end(ap);
    /* One line: jansson quotes the offending source text, which may hold a
     * newline or other control bytes (found by fuzz_api_request). */
    for (char *c = e->message; *c; c++)
        if ((unsigned char)*c < 0x20 || *c == 0x7f) *c = ' ';
    return -1;
}

/* A field that is absent or null is "not given". */
static json_t *field(json_t *o, const char *k)
{
    json_t *v = json_object_get(o, k);
    return json_is_null(v) ? NULL : v;
}

static int opt_bool(json_t *o, const char *k, bool *out, api_error *e)
{
    json_t *v = field(o, k);
    if (!v) return 0;
    if (!json_is_boolean(v)) return fail(e, k, "%s must be a boolean", k);
    *out = json_is_true(v);
    return 0;
}

static int opt_int(json_t *o, const char *k, long long lo, long long hi, long long *out,
                   api_error *e)
{
    json_t *v = field(o, k);
    if (!v) return 0;
    if (!json_is_integer(v)) return fail(e, k, "%s must be an integer", k);
    long long x = json_integer_value(v);
    if (x < lo || x > hi)
        return fail(e, k, "%s must be between %lld and %lld, got %lld", k, lo, hi, x);
    *out = x;
    return 1;
}

static int opt_num(json_t *o, const char *k, double lo, double hi, double *out, api_error *e)
{
    json_t *v = field(o, k);
    if (!v) return 0;
    if (!json_is_number(v)) return fail(e, k, "%s must be a number", k);
    double x = json_number_value(v);
    if (!isfinite(x) || x < lo || x > hi)
        return fail(e, k, "%s must be between %g and %g", k, lo, hi);
    *out = x;
    return 1;
}

/* A field we do not implement is refused unless it holds its neutral value. */
static int refuse_unless(json_t *o, const char *k, int (*neutral)(json_t *), const char *why,
                         api_error *e)
{
    json_t *v = field(o, k);
    if (v && !neutral(v)) return fail(e, k, "%s is not supported by this server (%s)", k, why);
    return 0;
}

static int is_one(json_t *v) { return json_is_integer(v) && json_integer_value(v) == 1; }
static int is_false(json_t *v) { return json_is_false(v); }
static int is_empty(json_t *v)
{
    return (json_is_array(v) && json_array_size(v) == 0) ||
           (json_is_object(v) && json_object_size(v) == 0) ||
           (json_is_string(v) && json_string_length(v) == 0);
}
static int is_none(json_t *v) { return json_is_string(v) && !strcmp(json_string_value(v), "none"); }
/* An output format: {"type": "text"}; {"type": "json_object"} (JSON mode); {"type": "json_schema"}
 * with its schema (chat: {"json_schema": {"schema": ...}}, Responses: {"schema": ...}), kept as
 * text for json_schema.h, which the server compiles; anything else refused, naming param. */
static int output_format(json_t *v, const char *param, api_request *r, api_error *e)
{
    json_t *t = json_object_get(v, "type");
    const char *ty = json_is_object(v) && json_is_string(t) ? json_string_value(t) : NULL;
    if (ty && !strcmp(ty, "text")) return 0;
    if (ty && !strcmp(ty, "json_object")) { r->json_mode = true; return 0; }
    if (ty && !strcmp(ty, "json_schema")) {
        json_t *js = json_object_get(v, "json_schema");
        json_t *schema = json_object_get(js ? js : v, "schema");
        if (schema && !json_is_object(schema) && !json_is_boolean(schema))
            return fail(e, param, "%s's schema must be a JSON Schema object", param);
        r->json_mode = true;
        r->json_schema = schema ? json_dumps(schema, JSON_COMPACT | JSON_ENCODE_ANY) : strdup("{}");
        return r->json_schema ? 0 : fail(e, param, "out of memory");
    }
    return fail(e, param, "%s must be {\"type\": \"text\"}, {\"type\": \"json_object\"} or {\"type\": \"json_schema\"}",
                param);
}

static int is_thinking_off(json_t *v)
{
    json_t *t = json_object_get(v, "type");
    return json_is_object(v) && json_is_string(t) && !strcmp(json_string_value(t), "disabled");
}

/* A client's value quoted in an error: short and printable, so the message
 * stays one line whatever was sent. */
static const char *quoted(const char *v, char *buf, size_t n)
{
    size_t i = 0;
    for (; v[i] && i + 4 < n; i++) buf[i] = (v[i] >= 0x20 && v[i] < 0x7f) ? v[i] : '?';
    if (v[i]) { buf[i++] = '.'; buf[i++] = '.'; buf[i++] = '.'; }
    buf[i] = 0;
    return buf;
}

static char *dup_n(const char *s, size_t n)
{
    char *d = malloc(n + 1);
    if (d) { memcpy(d, s, n); d[n] = 0; }
    return d;
}

/* ---- images ----------------------------------------------------------- */

/* The pictures of one message while its parts are read; attached to the
 * message once it is added. */
typedef struct img_list {
    api_image *v;
    size_t     n;
} img_list;

static void free_images(api_image *v, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(v[i].data);
        free(v[i].mime);
        free(v[i].url);
    }
    free(v);
}

/* mime[0..mlen) and base64 text b64[0..blen) as image `at` of l; p names the part. */
static int add_image(img_list *l, const char *mime, size_t mlen, const char *b64, size_t blen, size_t at,
                     const char *p, api_error *e)
{
    api_image im = { .at = at };
    snprintf(im.param, sizeof im.param, "%s", p);
    if (base64_decode(b64, blen, &im.data, &im.n) != 0) return fail(e, p, "%s: the image data is not valid base64", p);
    api_image *v = realloc(l->v, (l->n + 1) * sizeof *v);
    if (!v || !(im.mime = dup_n(mime, mlen))) {
        free(im.data);
        if (v) l->v = v;
        return fail(e, p, "out of memory");
    }
    l->v = v;
    l->v[l->n++] = im;
    return 0;
}

/* A remote picture: its URL kept for the server, which fetches it only when
 * told to (strata serve --allow-remote-images). */
static int add_remote(img_list *l, const char *url, size_t n, size_t at, const char *p, api_error *e)
{
    if (n > 8192) return fail(e, p, "%s: the image's URL is longer than 8192 bytes", p);
    api_image im = { .at = at };
    snprintf(im.param, sizeof im.param, "%s", p);
    api_image *v = realloc(l->v, (l->n + 1) * sizeof *v);
    if (v) l->v = v;
    if (!v || !(im.url = dup_n(url, n)) || !(im.mime = dup_n("", 0))) {
        free(im.url);
        return fail(e, p, "out of memory");
    }
    l->v[l->n++] = im;
    return 0;
}

/* An image given by URL: "data:MIME[;param...];base64,DATA", or http(s). */
static int image_url(img_list *l, json_t *u, size_t at, const char *p, api_error *e)
{
    if (!json_is_string(u)) return fail(e, p, "%s: the image's url must be a string", p);
    const char *s = json_string_value(u);
    const size_t n = json_string_length(u);
    if (!strncmp(s, "http://", 7) || !strncmp(s, "https://", 8)) return add_remote(l, s, n, at, p, e);
    if (strncmp(s, "data:", 5)) return fail(e, p, "%s: the image's url must be a data: URI (data:image/png;base64,...)", p);
    const char *comma = memchr(s, ',', n);
    if (!comma) return fail(e, p, "%s: the data: URI has no ',' before its data", p);
    const size_t head = (size_t)(comma - s);
    if (head < 12 || memcmp(comma - 7, ";base64", 7))
        return fail(e, p, "%s: the data: URI must be base64 (data:image/png;base64,...)", p);
    const char *mime = s + 5;
    const size_t mlen = strcspn(mime, ";,");
    return add_image(l, mime, mlen, comma + 1, n - head - 1, at, p, e);
}

/* An Anthropic image block's source: {"type": "base64", "media_type", "data"}. */
static int image_source(img_list *l, json_t *src, size_t at, const char *p, api_error *e)
{
    json_t *t = json_object_get(src, "type"), *mt = json_object_get(src, "media_type"), *d = json_object_get(src, "data");
    if (!json_is_object(src) || !json_is_string(t)) return fail(e, p, "%s.source must be an object with a type", p);
    if (!strcmp(json_string_value(t), "url")) {
        json_t *u = json_object_get(src, "url");
        if (!json_is_string(u)) return fail(e, p, "%s.source.url must be a string", p);
        const char *s = json_string_value(u);
        if (strncmp(s, "http://", 7) && strncmp(s, "https://", 8))
            return fail(e, p, "%s.source.url must be an http or https URL", p);
        return add_remote(l, s, json_string_length(u), at, p, e);
    }
    if (strcmp(json_string_value(t), "base64")) return fail(e, p, "%s.source.type must be \"base64\"", p);
    if (!json_is_string(mt)) return fail(e, p, "%s.source.media_type must be a string", p);
    if (!json_is_string(d)) return fail(e, p, "%s.source.data must be a string", p);
    return add_image(l, json_string_value(mt), json_string_length(mt), json_string_value(d), json_string_length(d), at,
                     p, e);
}

/* The message just added takes the pictures of l. */
static void attach_images(api_request *r, img_list *l)
{
    api_message *m = &r->msgs[r->n_msgs - 1];
    m->images = l->v;
    m->n_images = l->n;
    *l = (img_list){ 0 };
}

/* content: a string, or an array of {"type":"text","text":...} parts joined
 * by '\n', and where imgs is given (a user's message) image_url parts.
 * Anything else (audio, tool blocks) is refused by path. */
static int text_content(json_t *c, const char *path, bool null_ok, img_list *imgs, char **out, api_error *e)
{
    char p[96];
    if (json_is_string(c)) {
        *out = dup_n(json_string_value(c), json_string_length(c));
        return *out ? 0 : fail(e, path, "out of memory");
    }
    if (!c && null_ok) { *out = dup_n("", 0); return *out ? 0 : fail(e, path, "out of memory"); }
    if (!json_is_array(c))
        return fail(e, path, "%s must be a string or an array of text%s parts", path, imgs ? " and image" : "");
    strbuf s = { 0 };
    size_t i, n_text = 0;
    json_t *part;
    json_array_foreach(c, i, part) {
        snprintf(p, sizeof p, "%s[%zu].type", path, i);
        json_t *t = json_object_get(part, "type");
        if (!json_is_object(part) || !json_is_string(t)) { strbuf_free(&s); return fail(e, p, "%s must be a string", p); }
        const char *type = json_string_value(t);
        if (imgs && !strcmp(type, "image_url")) {
            json_t *iu = json_object_get(part, "image_url");
            snprintf(p, sizeof p, "%s[%zu]", path, i);
            if (image_url(imgs, json_is_object(iu) ? json_object_get(iu, "url") : iu, s.len, p, e)) {
                strbuf_free(&s);
                return -1;
            }
            continue;
        }
        if (strcmp(type, "text")) {
            char q[40];
            strbuf_free(&s);
            return fail(e, p, "%s '%s' is not supported (%s)", p, quoted(type, q, sizeof q),
                        imgs ? "text, image_url" : "text only");
        }
        json_t *x = json_object_get(part, "text");
        snprintf(p, sizeof p, "%s[%zu].text", path, i);
        if (!json_is_string(x)) { strbuf_free(&s); return fail(e, p, "%s must be a string", p); }
        if (n_text++) strbuf_add(&s, "\n", 1);
        strbuf_add(&s, json_string_value(x), json_string_length(x));
    }
    if (!(*out = strbuf_take(&s))) return fail(e, path, "out of memory");
    return 0;
}

static int add_msg(api_request *r, const char *role, char *content, api_error *e)
{
    api_message *m = realloc(r->msgs, (r->n_msgs + 1) * sizeof *m);
    char *rc = dup_n(role, strlen(role));
    if (m) r->msgs = m;
    if (!m || !rc || !content) { free(content); free(rc); return fail(e, "messages", "out of memory"); }
    r->msgs[r->n_msgs++] = (api_message){ .role = rc, .content = content };
    return 0;
}

static char *dup_str(const json_t *s) { return dup_n(json_string_value(s), json_string_length(s)); }

/* One tool call onto the last message (an assistant's). arguments: the
 * client's JSON text as sent, or an object written as pyjson. */
static int add_call(api_request *r, const json_t *id, const char *name, const json_t *args, api_error *e)
{
    api_message *m = &r->msgs[r->n_msgs - 1];
    api_tool_call *c = realloc(m->calls, (m->n_calls + 1) * sizeof *c);
    if (!c) return fail(e, "messages", "out of memory");
    m->calls = c;
    api_tool_call t = {
        .id = id ? dup_str(id) : dup_n("", 0),
        .name = dup_n(name, strlen(name)),
        .arguments = !args ? dup_n("{}", 2) : json_is_string(args) ? dup_str(args) : pyjson_dumps(args),
    };
    m->calls[m->n_calls++] = t;
    if (!t.id || !t.name || !t.arguments) return fail(e, "messages", "out of memory");
    return 0;
}

static int nonempty_string(json_t *v, const char *path, api_error *e)
{
    if (!json_is_string(v) || json_string_length(v) == 0) return fail(e, path, "%s must be a non-empty string", path);
    return 0;
}

/* OpenAI: an assistant's tool_calls [{id, type: "function", function: {name, arguments}}]. */
static int openai_calls(json_t *tc, size_t mi, api_request *r, api_error *e)
{
    char p[96];
    snprintf(p, sizeof p, "messages[%zu].tool_calls", mi);
    if (!json_is_array(tc)) return fail(e, p, "%s must be an array", p);
    size_t i;
    json_t *c;
    json_array_foreach(tc, i, c) {
        snprintf(p, sizeof p, "messages[%zu].tool_calls[%zu]", mi, i);
        json_t *f = json_object_get(c, "function"), *t = field(c, "type"), *id = field(c, "id");
        if (!json_is_object(c) || !json_is_object(f)) return fail(e, p, "%s must be an object with a function object", p);
        if (t && (!json_is_string(t) || strcmp(json_string_value(t), "function")))
            return fail(e, p, "%s.type must be \"function\"", p);
        if (id && !json_is_string(id)) return fail(e, p, "%s.id must be a string", p);
        snprintf(p, sizeof p, "messages[%zu].tool_calls[%zu].function.name", mi, i);
        if (nonempty_string(json_object_get(f, "name"), p, e)) return -1;
        json_t *a = field(f, "arguments");
        snprintf(p, sizeof p, "messages[%zu].tool_calls[%zu].function.arguments", mi, i);
        if (a && !json_is_string(a) && !json_is_object(a)) return fail(e, p, "%s must be a JSON string or an object", p);
        if (add_call(r, id, json_string_value(json_object_get(f, "name")), a, e)) return -1;
    }
    return 0;
}

/* Anthropic content blocks: a user's text and tool_result blocks (each
 * result a "tool" message, in order, then the text as a user message), an
 * assistant's text, tool_use blocks and thinking blocks (its reasoning,
 * kept for the templates that render it; redacted ones dropped). */
static int anthropic_blocks(json_t *c, size_t mi, bool assistant, api_request *r, api_error *e)
{
    char p[96];
    strbuf text = { 0 };
    img_list imgs = { 0 };
    size_t i, n_text = 0;
    json_t *b;
    if (assistant && add_msg(r, "assistant", dup_n("", 0), e)) return -1;
    json_array_foreach(c, i, b) {
        snprintf(p, sizeof p, "messages[%zu].content[%zu].type", mi, i);
        json_t *t = json_object_get(b, "type");
        if (!json_is_object(b) || !json_is_string(t)) { strbuf_free(&text); return fail(e, p, "%s must be a string", p); }
        const char *type = json_string_value(t);
        int rc = 0;
        if (!strcmp(type, "text")) {
            json_t *x = json_object_get(b, "text");
            snprintf(p, sizeof p, "messages[%zu].content[%zu].text", mi, i);
            if (!json_is_string(x)) rc = fail(e, p, "%s must be a string", p);
            else {
                if (n_text++) strbuf_add(&text, "\n", 1);
                strbuf_add(&text, json_string_value(x), json_string_length(x));
            }
        } else if (!strcmp(type, "image") && !assistant) {
            snprintf(p, sizeof p, "messages[%zu].content[%zu]", mi, i);
            rc = image_source(&imgs, json_object_get(b, "source"), text.len, p, e);
        } else if (!strcmp(type, "tool_use") && assistant) {
            json_t *id = json_object_get(b, "id"), *name = json_object_get(b, "name"), *in = json_object_get(b, "input");
            snprintf(p, sizeof p, "messages[%zu].content[%zu].name", mi, i);
            if (nonempty_string(name, p, e)) rc = -1;
            else if (id && !json_is_string(id)) {
                snprintf(p, sizeof p, "messages[%zu].content[%zu].id", mi, i);
                rc = fail(e, p, "%s must be a string", p);
            } else if (!json_is_object(in)) {
                snprintf(p, sizeof p, "messages[%zu].content[%zu].input", mi, i);
                rc = fail(e, p, "%s must be an object", p);
            } else rc = add_call(r, id, json_string_value(name), in, e);
        } else if (!strcmp(type, "tool_result") && !assistant) {
            json_t *id = json_object_get(b, "tool_use_id");
            snprintf(p, sizeof p, "messages[%zu].content[%zu].tool_use_id", mi, i);
            if (id && !json_is_string(id)) rc = fail(e, p, "%s must be a string", p);
            else {
                char *rtext;
                snprintf(p, sizeof p, "messages[%zu].content[%zu].content", mi, i);
                rc = text_content(field(b, "content"), p, true, NULL, &rtext, e);
                if (!rc) rc = add_msg(r, "tool", rtext, e);
                if (!rc && id && !(r->msgs[r->n_msgs - 1].tool_call_id = dup_str(id)))
                    rc = fail(e, "messages", "out of memory");
            }
        } else if (assistant && !strcmp(type, "thinking")) {
            json_t *x = json_object_get(b, "thinking");
            snprintf(p, sizeof p, "messages[%zu].content[%zu].thinking", mi, i);
            if (!json_is_string(x)) rc = fail(e, p, "%s must be a string", p);
            else {
                api_message *am = &r->msgs[r->n_msgs - 1];
                size_t old = am->reasoning ? strlen(am->reasoning) : 0, add = json_string_length(x);
                char *g = realloc(am->reasoning, old + add + 2);
                if (!g) rc = fail(e, "messages", "out of memory");
                else {
                    if (old) g[old++] = '\n';
                    memcpy(g + old, json_string_value(x), add);
                    g[old + add] = 0;
                    am->reasoning = g;
                }
            }
        } else if (assistant && !strcmp(type, "redacted_thinking")) {
            /* dropped: nothing a template can show */
        } else {
            char q[40];
            rc = fail(e, p, "%s '%s' is not supported in a%s message (text%s)", p, quoted(type, q, sizeof q),
                      assistant ? "n assistant" : " user", assistant ? ", tool_use, thinking" : ", image, tool_result");
        }
        if (rc) { strbuf_free(&text); free_images(imgs.v, imgs.n); return -1; }
    }
    char *s = strbuf_take(&text);
    if (!s) { free_images(imgs.v, imgs.n); return fail(e, "messages", "out of memory"); }
    if (assistant) {
        free(r->msgs[r->n_msgs - 1].content);
        r->msgs[r->n_msgs - 1].content = s;
        return 0;
    }
    bool had_results = r->n_msgs && !strcmp(r->msgs[r->n_msgs - 1].role, "tool") && n_text == 0 && imgs.n == 0;
    if (had_results && json_array_size(c) > 0) { free(s); return 0; }
    if (add_msg(r, "user", s, e)) { free_images(imgs.v, imgs.n); return -1; }
    attach_images(r, &imgs);
    return 0;
}

static int parse_messages(json_t *o, api_request *r, bool anthropic, api_error *e)
{
    json_t *ms = json_object_get(o, "messages");
    if (!ms) return fail(e, "messages", "messages is required");
    if (!json_is_array(ms)) return fail(e, "messages", "messages must be an array");
    if (json_array_size(ms) == 0) return fail(e, "messages", "messages must not be empty");
    size_t i;
    json_t *m;
    char p[96];
    json_array_foreach(ms, i, m) {
        snprintf(p, sizeof p, "messages[%zu]", i);
        if (!json_is_object(m)) return fail(e, p, "%s must be an object", p);
        snprintf(p, sizeof p, "messages[%zu].role", i);
        json_t *rv = json_object_get(m, "role");
        if (!json_is_string(rv)) return fail(e, p, "%s must be a string", p);
        const char *role = json_string_value(rv);
        if (!strcmp(role, "developer") && !anthropic) role = "system";
        bool assistant = !strcmp(role, "assistant");
        /* a system message inside Anthropic's messages (Claude Code sends one after the first user
         * turn) is text, rendered where it stands, as the templates render a later system message */
        const bool system = !strcmp(role, "system");
        bool known = !strcmp(role, "user") || assistant || system || (!anthropic && !strcmp(role, "tool"));
        if (!known) {
            char q[40];
            return fail(e, p, "%s '%s' is not supported (%s)", p, quoted(role, q, sizeof q),
                        anthropic ? "user, assistant or system" : "system, developer, user, assistant or tool");
        }
        if (field(m, "function_call")) {
            snprintf(p, sizeof p, "messages[%zu].function_call", i);
            return fail(e, p, "%s: the legacy function_call is not supported (use tool_calls)", p);
        }
        json_t *tc = field(m, "tool_calls");
        if (tc && (anthropic || !assistant)) {
            snprintf(p, sizeof p, "messages[%zu].tool_calls", i);
            return fail(e, p, "%s: only an OpenAI assistant message carries tool_calls", p);
        }
        snprintf(p, sizeof p, "messages[%zu].content", i);
        json_t *cv = field(m, "content");
        if (anthropic && !system && json_is_array(cv)) {
            if (anthropic_blocks(cv, i, assistant, r, e) != 0) return -1;
            continue;
        }
        char *content;
        img_list imgs = { 0 };
        const bool user = !anthropic && !strcmp(role, "user");
        if (text_content(cv, p, !anthropic && assistant, user ? &imgs : NULL, &content, e) != 0 ||
            add_msg(r, role, content, e) != 0) {
            free_images(imgs.v, imgs.n);
            return -1;
        }
        attach_images(r, &imgs);
        if (!strcmp(role, "tool")) {
            json_t *id = field(m, "tool_call_id");
            snprintf(p, sizeof p, "messages[%zu].tool_call_id", i);
            if (id && !json_is_string(id)) return fail(e, p, "%s must be a string", p);
            if (id && !(r->msgs[r->n_msgs - 1].tool_call_id = dup_str(id))) return fail(e, p, "out of memory");
        }
        if (tc && openai_calls(tc, i, r, e) != 0) return -1;
        json_t *rc = field(m, "reasoning_content");
        if (rc && assistant) {
            snprintf(p, sizeof p, "messages[%zu].reasoning_content", i);
            if (!json_is_string(rc)) return fail(e, p, "%s must be a string", p);
            if (!(r->msgs[r->n_msgs - 1].reasoning = dup_str(rc))) return fail(e, p, "out of memory");
        }
    }
    return 0;
}

static int add_tool(api_request *r, json_t *tool, const char *path, api_error *e)
{
    char **t = realloc(r->tools, (r->n_tools + 1) * sizeof *t);
    if (!t) return fail(e, path, "out of memory");
    r->tools = t;
    if (!(r->tools[r->n_tools] = pyjson_dumps(tool))) return fail(e, path, "out of memory");
    r->n_tools++;
    return 0;
}

/* The request's tools array, each element (path p: "tools[i]") to one(). */
typedef int (*tool_fn)(api_request *r, size_t i, json_t *t, const char *p, api_error *e);
static int each_tool(json_t *o, api_request *r, tool_fn one, api_error *e)
{
    json_t *ts = field(o, "tools");
    if (!ts) return 0;
    if (!json_is_array(ts)) return fail(e, "tools", "tools must be an array");
    size_t i;
    json_t *t;
    char p[64];
    json_array_foreach(ts, i, t) {
        snprintf(p, sizeof p, "tools[%zu]", i);
        if (one(r, i, t, p, e)) return -1;
    }
    return 0;
}

/* OpenAI: [{"type": "function", "function": {"name", "description", "parameters"}}], kept whole. */
static int openai_tool(api_request *r, size_t i, json_t *t, const char *path, api_error *e)
{
    char p[64];
    json_t *type = json_object_get(t, "type"), *f = json_object_get(t, "function");
    if (!json_is_object(t) || !json_is_string(type) || strcmp(json_string_value(type), "function"))
        return fail(e, path, "%s must be an object with type \"function\"", path);
    if (!json_is_object(f)) return fail(e, path, "%s.function must be an object", path);
    snprintf(p, sizeof p, "tools[%zu].function.name", i);
    if (nonempty_string(json_object_get(f, "name"), p, e)) return -1;
    json_t *d = field(f, "description"), *pa = field(f, "parameters");
    snprintf(p, sizeof p, "tools[%zu].function", i);
    if (d && !json_is_string(d)) return fail(e, p, "%s.description must be a string", p);
    if (pa && !json_is_object(pa)) return fail(e, p, "%s.parameters must be an object", p);
    return add_tool(r, t, "tools", e);
}

static int openai_tools(json_t *o, api_request *r, api_error *e) { return each_tool(o, r, openai_tool, e); }

/* A tool given flat ({"name", "description", SCHEMA_KEY}: Anthropic's
 * input_schema, Responses' parameters), kept in OpenAI chat's shape. */
static int add_flat_tool(api_request *r, size_t i, json_t *t, const char *schema_key, bool schema_required,
                         api_error *e)
{
    char p[64];
    json_t *name = json_object_get(t, "name"), *d = field(t, "description"), *schema = field(t, schema_key);
    snprintf(p, sizeof p, "tools[%zu].name", i);
    if (nonempty_string(name, p, e)) return -1;
    snprintf(p, sizeof p, "tools[%zu]", i);
    if (d && !json_is_string(d)) return fail(e, p, "%s.description must be a string", p);
    if ((schema || schema_required) && !json_is_object(schema))
        return fail(e, p, "%s.%s must be an object", p, schema_key);
    json_t *f = json_object();
    json_object_set(f, "name", name);
    if (d) json_object_set(f, "description", d);
    if (schema) json_object_set(f, "parameters", schema);
    json_t *w = json_pack("{s:s, s:o}", "type", "function", "function", f);
    int rc = w ? add_tool(r, w, "tools", e) : fail(e, "tools", "out of memory");
    json_decref(w);
    return rc;
}

/* Anthropic: [{"name", "description", "input_schema"}] in OpenAI's shape. */
static int anthropic_tool(api_request *r, size_t i, json_t *t, const char *p, api_error *e)
{
    if (!json_is_object(t)) return fail(e, p, "%s must be an object", p);
    json_t *type = field(t, "type");
    if (type && (!json_is_string(type) || strcmp(json_string_value(type), "custom"))) {
        char q[40];
        return fail(e, p, "%s.type '%s' is not supported (client tools only: no type, or \"custom\")", p,
                    json_is_string(type) ? quoted(json_string_value(type), q, sizeof q) : "?");
    }
    return add_flat_tool(r, i, t, "input_schema", true, e);
}

static int anthropic_tools(json_t *o, api_request *r, api_error *e) { return each_tool(o, r, anthropic_tool, e); }

/* tool_choice: "auto" keeps the tools, "none" drops them; a forced call is
 * refused (nothing constrains the output to one). */
static int tool_choice(json_t *o, bool anthropic, api_request *r, api_error *e)
{
    json_t *c = field(o, "tool_choice");
    if (!c) return 0;
    const char *v = NULL;
    if (anthropic && json_is_object(c) && json_is_string(json_object_get(c, "type")))
        v = json_string_value(json_object_get(c, "type"));
    else if (!anthropic && json_is_string(c))
        v = json_string_value(c);
    if (v && !strcmp(v, "auto")) return 0;
    if (v && !strcmp(v, "none")) {
        for (size_t i = 0; i < r->n_tools; i++) free(r->tools[i]);
        free(r->tools);
        r->tools = NULL;
        r->n_tools = 0;
        return 0;
    }
    /* forcing: a call (OpenAI "required", Anthropic {"type": "any"}), or a named one (OpenAI's
     * {"type": "function", "function": {"name"}}, the Responses API's {"type": "function", "name"},
     * Anthropic's {"type": "tool", "name"}) */
    const char *name = NULL;
    if (anthropic && v && !strcmp(v, "tool")) name = json_string_value(json_object_get(c, "name"));
    if (!anthropic && json_is_object(c) && json_is_string(json_object_get(c, "type")) &&
        !strcmp(json_string_value(json_object_get(c, "type")), "function")) {
        json_t *f = json_object_get(c, "function");
        name = json_string_value(json_object_get(f ? f : c, "name"));
    }
    if (!(v && !strcmp(v, anthropic ? "any" : "required")) && !name)
        return fail(e, "tool_choice", "tool_choice must be %s",
                    anthropic ? "{\"type\": \"auto\"}, {\"type\": \"any\"}, {\"type\": \"tool\", \"name\": ...} or "
                                "{\"type\": \"none\"}"
                              : "\"auto\", \"required\", \"none\" or a named function");
    if (!r->n_tools) return fail(e, "tool_choice", "tool_choice forces a tool call, and no tools are offered");
    bool found = !name;
    for (size_t i = 0; name && !found && i < r->n_tools; i++) {
        json_t *t = json_loads(r->tools[i], 0, NULL);
        const char *nm = json_string_value(json_object_get(json_object_get(t, "function"), "name"));
        found = nm && !strcmp(nm, name);
        json_decref(t);
    }
    if (!found) return fail(e, "tool_choice", "tool_choice names %.100s, which is not among the tools", name);
    r->force_tool = true;
    if (name && !(r->force_name = strdup(name))) return fail(e, "tool_choice", "out of memory");
    return 0;
}

static int parse_stops(json_t *o, const char *k, bool string_ok, api_request *r, api_error *e)
{
    json_t *v = field(o, k);
    if (!v) return 0;
    if (json_is_string(v) && string_ok) {
        if (json_string_length(v) > API_MAX_STOP_LEN)
            return fail(e, k, "%s must be at most %d bytes long", k, API_MAX_STOP_LEN);
        r->stops = calloc(1, sizeof *r->stops);
        if (!r->stops) return fail(e, k, "out of memory");
        r->stops[0] = dup_n(json_string_value(v), json_string_length(v));
        if (!r->stops[0]) return fail(e, k, "out of memory");
        r->n_stops = 1;
        return 0;
    }
    if (!json_is_array(v))
        return fail(e, k, "%s must be %san array of strings", k, string_ok ? "a string or " : "");
    if (json_array_size(v) > API_MAX_STOPS)
        return fail(e, k, "%s may hold at most %d strings", k, API_MAX_STOPS);
    r->stops = calloc(json_array_size(v) + 1, sizeof *r->stops);
    if (!r->stops) return fail(e, k, "out of memory");
    size_t i;
    json_t *s;
    json_array_foreach(v, i, s) {
        if (!json_is_string(s)) return fail(e, k, "%s[%zu] must be a string", k, i);
        if (json_string_length(s) > API_MAX_STOP_LEN)
            return fail(e, k, "%s[%zu] must be at most %d bytes long", k, i, API_MAX_STOP_LEN);
        r->stops[i] = dup_n(json_string_value(s), json_string_length(s));
        if (!r->stops[i]) return fail(e, k, "out of memory");
        r->n_stops = i + 1;
    }
    return 0;
}

/* OpenAI's reasoning_effort, Anthropic's output_config.effort: "low",
 * "medium" or "high" (Anthropic's "max" is taken as "high"). */
static int set_effort(json_t *v, const char *name, api_request *r, api_error *e)
{
    static const char *const EFFORT[] = { "low", "medium", "high" };
    const char *s = json_is_string(v) ? json_string_value(v) : "";
    for (size_t i = 0; i < 3; i++)
        if (!strcmp(s, EFFORT[i])) r->reasoning_effort = EFFORT[i];
    if (!strcmp(s, "max") && strcmp(name, "reasoning_effort")) r->reasoning_effort = "high";
    if (r->reasoning_effort) return 0;
    char msg[128];
    snprintf(msg, sizeof msg, "%s must be \"low\", \"medium\" or \"high\"%s", name,
             strcmp(name, "reasoning_effort") ? " (or \"max\")" : "");
    return fail(e, name, "%s", msg);
}

/* OpenAI's logit_bias: {"TOKEN_ID": BIAS}, ids as decimal strings, biases in -100..100. */
static int logit_bias(json_t *o, api_request *r, api_error *e)
{
    json_t *lb = field(o, "logit_bias");
    if (!lb) return 0;
    if (!json_is_object(lb)) return fail(e, "logit_bias", "logit_bias must be an object of token ids and biases");
    size_t n = json_object_size(lb);
    if (n > API_MAX_LOGIT_BIAS) return fail(e, "logit_bias", "logit_bias may name at most %d tokens", API_MAX_LOGIT_BIAS);
    if (!n) return 0;
    r->bias_id = malloc(n * sizeof *r->bias_id);
    r->bias = malloc(n * sizeof *r->bias);
    if (!r->bias_id || !r->bias) return fail(e, "logit_bias", "out of memory");
    const char *k;
    json_t *v;
    json_object_foreach(lb, k, v) {
        char *end;
        long id = strtol(k, &end, 10);
        if (!*k || *end || id < 0 || id > INT32_MAX)
            return fail(e, "logit_bias", "logit_bias keys must be token ids (decimal); got '%.40s'", k);
        if (!json_is_number(v) || !isfinite(json_number_value(v)) || fabs(json_number_value(v)) > 100)
            return fail(e, "logit_bias", "logit_bias values must be numbers between -100 and 100");
        r->bias_id[r->n_bias] = (int32_t)id;
        r->bias[r->n_bias++] = (float)json_number_value(v);
    }
    return 0;
}

static int parse_openai(json_t *o, api_request *r, int limit, api_error *e)
{
    long long x;
    if (field(o, "model") && !json_is_string(field(o, "model")))
        return fail(e, "model", "model must be a string");
    if (refuse_unless(o, "n", is_one, "one choice per request", e)) return -1;
    double pen = 0;
    if (opt_num(o, "presence_penalty", -2, 2, &pen, e) < 0) return -1;
    r->presence_penalty = (float)pen;
    pen = 0;
    if (opt_num(o, "frequency_penalty", -2, 2, &pen, e) < 0) return -1;
    r->frequency_penalty = (float)pen;
    if (logit_bias(o, r, e) != 0) return -1;
    /* the local servers' extensions (vLLM's, llama.cpp's names) that local clients send */
    long long tk = 0;
    if (opt_int(o, "top_k", 0, 1000000, &tk, e) < 0) return -1;
    r->top_k = (int)tk;
    double mp = 0, rp = 1;
    if (opt_num(o, "min_p", 0, 1, &mp, e) < 0) return -1;
    r->min_p = (float)mp;
    if (field(o, "repetition_penalty") && field(o, "repeat_penalty"))
        return fail(e, "repeat_penalty", "repetition_penalty and repeat_penalty name the same thing: give one");
    const char *rpk = field(o, "repeat_penalty") ? "repeat_penalty" : "repetition_penalty";
    if (opt_num(o, rpk, 0.01, 10, &rp, e) < 0) return -1;
    r->repeat_penalty = (float)rp;
    /* strata's speculative decoding (as `strata run --draft ngram|mtp --draft-max N`) */
    r->draft_max = -1;
    r->draft_mtp = -1;
    json_t *dr = field(o, "draft");
    if (dr) {
        const char *ds = json_is_string(dr) ? json_string_value(dr) : NULL;
        if (!ds || (strcmp(ds, "none") && strcmp(ds, "ngram") && strcmp(ds, "mtp")))
            return fail(e, "draft", "draft must be \"none\", \"ngram\" or \"mtp\"");
        r->draft_max = strcmp(ds, "none") ? 8 : 0;
        r->draft_mtp = !strcmp(ds, "mtp");
    }
    long long dm = 0;
    const int has_dm = opt_int(o, "draft_max", 1, 16, &dm, e);
    if (has_dm < 0) return -1;
    if (has_dm && r->draft_max != 0) r->draft_max = (int)dm;
    if (r->kind == API_CHAT) {
        if (refuse_unless(o, "functions", is_empty, "the legacy functions: use tools", e) ||
            refuse_unless(o, "function_call", is_none, "the legacy function_call: use tool_choice", e))
            return -1;
        json_t *rf = field(o, "response_format");
        if (rf && output_format(rf, "response_format", r, e) != 0) return -1;
        if (parse_messages(o, r, false, e) != 0 || openai_tools(o, r, e) != 0 || tool_choice(o, false, r, e) != 0)
            return -1;
        json_t *re = field(o, "reasoning_effort");
        if (re && set_effort(re, "reasoning_effort", r, e) != 0) return -1;
        json_t *kw = field(o, "chat_template_kwargs");
        if (kw && !json_is_object(kw)) return fail(e, "chat_template_kwargs", "chat_template_kwargs must be an object");
        json_t *et = field(kw, "enable_thinking");
        if (et && !json_is_boolean(et))
            return fail(e, "chat_template_kwargs.enable_thinking", "chat_template_kwargs.enable_thinking must be a boolean");
        json_t *tk = field(kw, "thinking"); /* DeepSeek V3.1's own name for it (vLLM, SGLang) */
        if (tk && !json_is_boolean(tk))
            return fail(e, "chat_template_kwargs.thinking", "chat_template_kwargs.thinking must be a boolean");
        r->no_thinking = json_is_false(et) || json_is_false(tk);
        r->thinking_on = json_is_true(et) || json_is_true(tk);
        if (opt_bool(o, "logprobs", &r->logprobs, e) != 0) return -1;
        long long tl = 0;
        if (opt_int(o, "top_logprobs", 0, API_MAX_TOP_LOGPROBS, &tl, e) < 0) return -1;
        r->top_logprobs = (int)tl;
        if (r->top_logprobs && !r->logprobs)
            return fail(e, "top_logprobs", "top_logprobs needs logprobs set to true");
        long long mct = 0;
        if (opt_int(o, "max_completion_tokens", 1, limit, &mct, e) < 0) return -1;
        if (mct) r->max_tokens = (int)mct;
    } else {
        if (refuse_unless(o, "echo", is_false, "no echo", e) ||
            refuse_unless(o, "suffix", is_empty, "no insertion", e) ||
            refuse_unless(o, "best_of", is_one, "one candidate", e))
            return -1;
        json_t *p = field(o, "prompt");
        if (!p) return fail(e, "prompt", "prompt is required");
        if (json_is_array(p) && json_array_size(p) == 1 && json_is_string(json_array_get(p, 0)))
            p = json_array_get(p, 0);
        if (!json_is_string(p)) return fail(e, "prompt", "prompt must be a string");
        r->prompt = dup_n(json_string_value(p), json_string_length(p));
        if (!r->prompt) return fail(e, "prompt", "out of memory");
        long long lp = 0;
        if ((x = opt_int(o, "logprobs", 0, 5, &lp, e)) < 0) return -1;
        r->logprobs = x > 0;
        r->top_logprobs = (int)lp;
    }
    long long mt = 0;
    if (opt_int(o, "max_tokens", 1, limit, &mt, e) < 0) return -1;
    if (mt && !r->max_tokens) r->max_tokens = (int)mt;
    if (opt_num(o, "temperature", 0, 2, &r->temperature, e) < 0) return -1;
    json_t *so = field(o, "stream_options");
    if (so) {
        if (!json_is_object(so)) return fail(e, "stream_options", "stream_options must be an object");
        json_t *iu = field(so, "include_usage");
        if (iu && !json_is_boolean(iu))
            return fail(e, "stream_options.include_usage", "stream_options.include_usage must be a boolean");
        r->include_usage = json_is_true(iu);
    }
    return parse_stops(o, "stop", true, r, e);
}

static int parse_anthropic(json_t *o, api_request *r, int limit, api_error *e)
{
    if (field(o, "model") && !json_is_string(field(o, "model")))
        return fail(e, "model", "model must be a string");
    json_t *th = field(o, "thinking");
    if (th && is_thinking_off(th)) r->no_thinking = true; /* as enable_thinking false: Qwen3, GLM-4.5 */
    if (th && !is_thinking_off(th)) {
        json_t *t = json_object_get(th, "type"), *bt = json_object_get(th, "budget_tokens");
        /* "adaptive" (Claude Code sends it): the model decides whether to reason, as ours do */
        if (!json_is_object(th) || !json_is_string(t) ||
            (strcmp(json_string_value(t), "enabled") && strcmp(json_string_value(t), "adaptive")))
            return fail(e, "thinking", "thinking.type must be \"enabled\", \"adaptive\" or \"disabled\"");
        if (bt && !json_is_null(bt) && (!json_is_integer(bt) || json_integer_value(bt) < 1))
            return fail(e, "thinking.budget_tokens", "thinking.budget_tokens must be a positive integer");
        r->thinking = true;
        r->thinking_on = !strcmp(json_string_value(t), "enabled");
    }
    json_t *oc = field(o, "output_config");
    if (oc && !json_is_object(oc)) return fail(e, "output_config", "output_config must be an object");
    json_t *ef = oc ? json_object_get(oc, "effort") : NULL;
    if (ef && set_effort(ef, "output_config.effort", r, e) != 0) return -1;
    json_t *sys = field(o, "system");
    if (sys) {
        char *s;
        if (text_content(sys, "system", false, NULL, &s, e) != 0) return -1;
        if (add_msg(r, "system", s, e) != 0) return -1;
    }
    if (parse_messages(o, r, true, e) != 0 || anthropic_tools(o, r, e) != 0 || tool_choice(o, true, r, e) != 0)
        return -1;
    if (r->kind == API_COUNT_TOKENS) return 0;
    long long mt = 0;
    if (!field(o, "max_tokens")) return fail(e, "max_tokens", "max_tokens is required");
    if (opt_int(o, "max_tokens", 1, limit, &mt, e) < 0) return -1;
    r->max_tokens = (int)mt;
    if (opt_num(o, "temperature", 0, 1, &r->temperature, e) < 0) return -1;
    long long tk = 0;
    if (opt_int(o, "top_k", 0, 1000000, &tk, e) < 0) return -1;
    r->top_k = (int)tk;
    return parse_stops(o, "stop_sequences", false, r, e);
}

/* ---- OpenAI Responses ------------------------------------------------- */

/* A Responses content: a string, or parts of type input_text, output_text
 * or text, joined by '\n' (images and files refused by path). */
static int responses_text(json_t *c, const char *path, img_list *imgs, char **out, api_error *e)
{
    if (json_is_string(c) || !json_is_array(c)) return text_content(c, path, false, NULL, out, e);
    strbuf t = { 0 };
    size_t i, n_text = 0;
    json_t *part;
    char p[96];
    json_array_foreach(c, i, part) {
        snprintf(p, sizeof p, "%s[%zu].type", path, i);
        json_t *ty = json_object_get(part, "type"), *x = json_object_get(part, "text");
        const char *type = json_is_string(ty) ? json_string_value(ty) : "";
        if (imgs && !strcmp(type, "input_image")) {
            snprintf(p, sizeof p, "%s[%zu]", path, i);
            if (image_url(imgs, json_object_get(part, "image_url"), t.len, p, e)) { strbuf_free(&t); return -1; }
            continue;
        }
        if (strcmp(type, "input_text") && strcmp(type, "output_text") && strcmp(type, "text")) {
            char q[40];
            strbuf_free(&t);
            return fail(e, p, "%s '%s' is not supported (input_text, output_text%s)", p, quoted(type, q, sizeof q),
                        imgs ? ", input_image" : "");
        }
        snprintf(p, sizeof p, "%s[%zu].text", path, i);
        if (!json_is_string(x)) { strbuf_free(&t); return fail(e, p, "%s must be a string", p); }
        if (n_text++) strbuf_add(&t, "\n", 1);
        strbuf_add(&t, json_string_value(x), json_string_length(x));
    }
    if (t.oom || !(*out = strbuf_take(&t))) { strbuf_free(&t); return fail(e, path, "out of memory"); }
    return 0;
}

/* The assistant message a function_call (or the reasoning before it)
 * belongs to: the last message when it is an assistant's, else a new empty one. */
static int responses_assistant(api_request *r, api_error *e)
{
    if (r->n_msgs && !strcmp(r->msgs[r->n_msgs - 1].role, "assistant")) return 0;
    return add_msg(r, "assistant", dup_n("", 0), e);
}

/* A reasoning item's text: its reasoning_text content, or else its summary. */
static int responses_reasoning(json_t *it, const char *path, char **out, api_error *e)
{
    json_t *c = field(it, "content"), *sm = field(it, "summary");
    json_t *src = c && json_array_size(c) ? c : sm;
    strbuf t = { 0 };
    size_t i;
    json_t *part;
    char p[160];
    if (src && !json_is_array(src)) return fail(e, path, "%s.content and .summary must be arrays", path);
    json_array_foreach(src, i, part) {
        json_t *x = json_object_get(part, "text");
        snprintf(p, sizeof p, "%s.%s[%zu].text", path, src == c ? "content" : "summary", i);
        if (!json_is_string(x)) { strbuf_free(&t); return fail(e, p, "%s must be a string", p); }
        if (i) strbuf_add(&t, "\n", 1);
        strbuf_add(&t, json_string_value(x), json_string_length(x));
    }
    if (t.oom) { strbuf_free(&t); return fail(e, path, "out of memory"); }
    *out = t.len ? strbuf_take(&t) : NULL;
    return 0;
}

/* instructions, then input: a string (one user message) or items: messages
 * (roles system, developer = system, user, assistant), function_call (onto
 * the assistant message before it, or a new one), function_call_output (a
 * tool message) and reasoning (kept for the next assistant message, as
 * OpenAI chat's reasoning_content). */
static int responses_input(json_t *o, api_request *r, api_error *e)
{
    json_t *ins = field(o, "instructions"), *in = field(o, "input");
    if (ins) {
        if (!json_is_string(ins)) return fail(e, "instructions", "instructions must be a string");
        if (add_msg(r, "system", dup_str(ins), e)) return -1;
    }
    if (!in) return fail(e, "input", "input is required");
    if (json_is_string(in)) return add_msg(r, "user", dup_str(in), e);
    if (!json_is_array(in)) return fail(e, "input", "input must be a string or an array of items");
    char *pending = NULL; /* a reasoning item's text, for the assistant message that follows */
    size_t i;
    json_t *it;
    char p[96];
    int rc = 0;
    json_array_foreach(in, i, it) {
        snprintf(p, sizeof p, "input[%zu]", i);
        if (!json_is_object(it)) { rc = fail(e, p, "%s must be an object", p); break; }
        json_t *ty = field(it, "type");
        if (ty && !json_is_string(ty)) { rc = fail(e, p, "%s.type must be a string", p); break; }
        const char *type = ty ? json_string_value(ty) : "message";
        if (!strcmp(type, "message")) {
            json_t *rv = json_object_get(it, "role");
            const char *role = json_is_string(rv) ? json_string_value(rv) : "";
            if (!strcmp(role, "developer")) role = "system";
            if (strcmp(role, "system") && strcmp(role, "user") && strcmp(role, "assistant")) {
                char q[40];
                snprintf(p, sizeof p, "input[%zu].role", i);
                rc = fail(e, p, "%s '%s' is not supported (system, developer, user or assistant)", p,
                          quoted(role, q, sizeof q));
                break;
            }
            char *text;
            img_list imgs = { 0 };
            snprintf(p, sizeof p, "input[%zu].content", i);
            if ((rc = responses_text(field(it, "content"), p, !strcmp(role, "user") ? &imgs : NULL, &text, e)) ||
                (rc = add_msg(r, role, text, e))) {
                free_images(imgs.v, imgs.n);
                break;
            }
            attach_images(r, &imgs);
            if (!strcmp(role, "assistant") && pending) { r->msgs[r->n_msgs - 1].reasoning = pending; pending = NULL; }
        } else if (!strcmp(type, "function_call")) {
            json_t *name = json_object_get(it, "name"), *args = field(it, "arguments"), *id = field(it, "call_id");
            snprintf(p, sizeof p, "input[%zu].name", i);
            if ((rc = nonempty_string(name, p, e))) break;
            snprintf(p, sizeof p, "input[%zu]", i);
            if (id && !json_is_string(id)) { rc = fail(e, p, "%s.call_id must be a string", p); break; }
            if (args && !json_is_string(args)) { rc = fail(e, p, "%s.arguments must be a JSON string", p); break; }
            if ((rc = responses_assistant(r, e))) break;
            if (pending) {
                api_message *am = &r->msgs[r->n_msgs - 1];
                if (!am->reasoning) { am->reasoning = pending; pending = NULL; }
            }
            if ((rc = add_call(r, id, json_string_value(name), args, e))) break;
        } else if (!strcmp(type, "function_call_output")) {
            json_t *id = field(it, "call_id");
            snprintf(p, sizeof p, "input[%zu]", i);
            if (id && !json_is_string(id)) { rc = fail(e, p, "%s.call_id must be a string", p); break; }
            char *text;
            snprintf(p, sizeof p, "input[%zu].output", i);
            if ((rc = responses_text(field(it, "output"), p, NULL, &text, e))) break;
            if ((rc = add_msg(r, "tool", text, e))) break;
            if (id && !(r->msgs[r->n_msgs - 1].tool_call_id = dup_str(id))) { rc = fail(e, p, "out of memory"); break; }
        } else if (!strcmp(type, "reasoning")) {
            free(pending);
            pending = NULL;
            if ((rc = responses_reasoning(it, p, &pending, e))) break;
        } else {
            char q[40];
            snprintf(p, sizeof p, "input[%zu].type", i);
            rc = fail(e, p, "%s '%s' is not supported (message, function_call, function_call_output, reasoning)", p,
                      quoted(type, q, sizeof q));
            break;
        }
    }
    free(pending);
    return rc ? -1 : 0;
}

/* Responses tools: {"type": "function", "name", "description", "parameters"}
 * kept in chat's shape. The hosted tools (web_search, file_search,
 * code_interpreter...: nothing here runs them) and namespaces of tools are
 * left out of the prompt: Codex sends them with every request. */
static int responses_tool(api_request *r, size_t i, json_t *t, const char *p, api_error *e)
{
    json_t *type = json_object_get(t, "type");
    if (!json_is_object(t) || !json_is_string(type)) return fail(e, p, "%s must be an object with a type", p);
    if (strcmp(json_string_value(type), "function")) return 0;
    return add_flat_tool(r, i, t, "parameters", false, e);
}

static int responses_tools(json_t *o, api_request *r, api_error *e) { return each_tool(o, r, responses_tool, e); }

static int parse_responses(json_t *o, api_request *r, int limit, api_error *e)
{
    if (field(o, "model") && !json_is_string(field(o, "model")))
        return fail(e, "model", "model must be a string");
    if (field(o, "previous_response_id"))
        return fail(e, "previous_response_id",
                    "previous_response_id is not supported: this server keeps no responses (send the whole "
                    "conversation in input)");
    if (refuse_unless(o, "background", is_false, "answers in the request's own connection", e) ||
        refuse_unless(o, "conversation", is_empty, "no stored conversations", e))
        return -1;
    json_t *tx = field(o, "text");
    if (tx) {
        json_t *fmt = json_is_object(tx) ? field(tx, "format") : NULL;
        if (!json_is_object(tx)) return fail(e, "text", "text must be an object");
        if (fmt && output_format(fmt, "text.format", r, e) != 0) return -1;
    }
    json_t *rs = field(o, "reasoning");
    if (rs) {
        if (!json_is_object(rs)) return fail(e, "reasoning", "reasoning must be an object");
        json_t *ef = field(rs, "effort");
        const char *v = json_is_string(ef) ? json_string_value(ef) : NULL;
        if (v && !strcmp(v, "none")) r->no_thinking = true;
        else if (v && !strcmp(v, "minimal")) r->reasoning_effort = "low";
        else if (ef && set_effort(ef, "reasoning.effort", r, e) != 0) return -1;
    }
    if (responses_input(o, r, e) != 0 || responses_tools(o, r, e) != 0 || tool_choice(o, false, r, e) != 0)
        return -1;
    long long mt = 0;
    if (opt_int(o, "max_output_tokens", 1, limit, &mt, e) < 0) return -1;
    r->max_tokens = (int)mt;
    return opt_num(o, "temperature", 0, 2, &r->temperature, e) < 0 ? -1 : 0;
}

int api_request_parse(api_kind kind, const char *body, size_t len, int max_tokens_limit,
                      api_request *r, api_error *e)
{
    memset(r, 0, sizeof *r);
    memset(e, 0, sizeof *e);
    r->kind = kind;
    r->temperature = 1.0;
    r->top_p = 1.0;
    if (max_tokens_limit < 1) max_tokens_limit = 1;
    json_error_t je;
    json_t *o = json_loadb(body, len, JSON_REJECT_DUPLICATES, &je);
    if (!o) return fail(e, "body", "malformed JSON at byte %d: %s", je.position, je.text);
    int rc = -1;
    if (!json_is_object(o)) { fail(e, "body", "the body must be a JSON object"); goto out; }
    if (opt_bool(o, "stream", &r->stream, e) != 0) goto out;
    if (opt_num(o, "top_p", 0, 1, &r->top_p, e) < 0) goto out;
    json_t *seed = field(o, "seed");
    if (seed) {
        if (!json_is_integer(seed)) { fail(e, "seed", "seed must be an integer"); goto out; }
        r->has_seed = true;
        r->seed = (uint64_t)json_integer_value(seed);
    }
    if (kind == API_CHAT || kind == API_COMPLETION) rc = parse_openai(o, r, max_tokens_limit, e);
    else if (kind == API_RESPONSES) rc = parse_responses(o, r, max_tokens_limit, e);
    else rc = parse_anthropic(o, r, max_tokens_limit, e);
out:
    json_decref(o);
    if (rc != 0) {
        if (e->status == 0) fail(e, "body", "invalid request");
        api_request_free(r);
        return -1;
    }
    return 0;
}

void api_request_free(api_request *r)
{
    for (size_t i = 0; i < r->n_msgs; i++) {
        free(r->msgs[i].role);
        free(r->msgs[i].content);
        free(r->msgs[i].tool_call_id);
        free(r->msgs[i].reasoning);
        for (size_t j = 0; j < r->msgs[i].n_calls; j++) {
            free(r->msgs[i].calls[j].id);
            free(r->msgs[i].calls[j].name);
            free(r->msgs[i].calls[j].arguments);
        }
        free(r->msgs[i].calls);
        free_images(r->msgs[i].images, r->msgs[i].n_images);
    }
    for (size_t i = 0; i < r->n_tools; i++) free(r->tools[i]);
    free(r->tools);
    free(r->force_name);
    free(r->json_schema);
    free(r->bias_id);
    free(r->bias);
    free(r->msgs);
    for (size_t i = 0; r->stops && i < r->n_stops; i++) free(r->stops[i]);
    free(r->stops);
    free(r->prompt);
    memset(r, 0, sizeof *r);
}
