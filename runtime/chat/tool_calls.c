/* tool_calls.c: see tool_calls.h. */
#include "runtime/chat/tool_calls.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/chat/pyjson.h"

static const char OPEN[] = "<tool_call>", CLOSE[] = "</tool_call>";
#define OPEN_LEN (sizeof OPEN - 1)
#define CLOSE_LEN (sizeof CLOSE - 1)

static bool is_ws(char c) { return c == ' ' || c == '\n' || c == '\t' || c == '\r'; }

/* A name or key: non-empty, one line, no NUL, valid UTF-8. */
static bool good_label(const char *s, size_t n)
{
    if (!n || memchr(s, '\n', n) || memchr(s, 0, n)) return false;
    json_t *t = json_stringn(s, n);
    json_decref(t);
    return t != NULL;
}

static const char MM_OPEN[] = "<minimax:tool_call>", MM_CLOSE[] = "</minimax:tool_call>";
static const char LLAMA_OPEN[] = "{\"name\"";
static const char MISTRAL_OPEN[] = "[TOOL_CALLS]";
static const char KIMI_OPEN[] = "<|tool_calls_section_begin|>", KIMI_CLOSE[] = "<|tool_calls_section_end|>";

#define DS_BAR "\xef\xbd\x9c" /* U+FF5C */
#define DS_SP "\xe2\x96\x81"  /* U+2581 */
#define DS_OPEN "<" DS_BAR "tool" DS_SP "calls" DS_SP "begin" DS_BAR ">"
#define DS_CLOSE "<" DS_BAR "tool" DS_SP "calls" DS_SP "end" DS_BAR ">"
#define DS_CALL "<" DS_BAR "tool" DS_SP "call" DS_SP "begin" DS_BAR ">"
#define DS_CALL_END "<" DS_BAR "tool" DS_SP "call" DS_SP "end" DS_BAR ">"
#define DS_SEP "<" DS_BAR "tool" DS_SP "sep" DS_BAR ">"

/* One row per tool_format (SYNTAX, below its parsers): how its calls are told apart from text,
 * parsed and forced. Adding a syntax is a parser and a row. */
typedef int parse_fn(const tool_scan *ts, json_t **schemas, const char **p, const char *end, tool_call *c);
typedef struct tool_syntax {
    const char        *open;         /* the text that starts the calls: the scan holds back any start of it */
    const char *const *parts;        /* texts around and between calls that only part them (NULL-ended) */
    bool               parts_between; /* ... only after a first call (Llama's ';' and ',') */
    parse_fn          *parse;        /* one call at *p */
    bool               typed;        /* values are text, typed by the offered tools' schemas */
    bool               name_line;    /* parse_one_tagged: GLM's NAME on the <tool_call> line, not <function=NAME> */
    const char *const *markers;      /* tool_format_markers() */
    size_t             n_markers;
    const char        *prefix, *after_name; /* tool_call_prefix(): the opening up to the name, and after it */
    const char        *args_close;   /* tool_call_args_close() */
    size_t             id_len;       /* tool_call_id_len() */
} tool_syntax;
static const tool_syntax *syntax(tool_format f);

/* The first byte of the held text's tail that cannot yet be released:
 * trailing whitespace and a proper prefix of the opening tag at the end. */
static size_t releasable(const char *s, size_t n, const char *tag)
{
    size_t keep = n, tl = strlen(tag);
    for (size_t k = tl - 1; k > 0; k--) {
        if (k <= n && !memcmp(s + n - k, tag, k)) { keep = n - k; break; }
    }
    while (keep && is_ws(s[keep - 1])) keep--;
    return keep;
}

static const char *find(const char *h, size_t n, const char *needle, size_t k)
{
    for (size_t i = 0; i + k <= n; i++)
        if (h[i] == needle[0] && !memcmp(h + i, needle, k)) return h + i;
    return NULL;
}

static void drop_front(strbuf *b, size_t k)
{
    memmove(b->data, b->data + k, b->len - k);
    b->len -= k;
    if (b->data) b->data[b->len] = 0;
}

void tool_scan_feed(tool_scan *ts, const char *d, size_t n, strbuf *out)
{
    if (ts->prefix && !ts->prefix_taken) { /* a forced call's opening, written into the prompt: the answer's start */
        strbuf_puts(&ts->held, ts->prefix);
        ts->prefix_taken = true;
    }
    strbuf_add(&ts->held, d, n);
    if (ts->capturing || ts->held.oom || !ts->held.len) return;
    const char *tag = syntax(ts->format)->open;
    const char *h = ts->held.data, *o = find(h, ts->held.len, tag, strlen(tag));
    if (o) {
        /* the text before the call; the whitespace that parts them stays
         * held: dropped if the calls parse, released with them if not */
        size_t k = (size_t)(o - h);
        while (k && is_ws(h[k - 1])) k--;
        strbuf_add(out, h, k);
        drop_front(&ts->held, k);
        ts->capturing = true;
        return;
    }
    size_t rel = releasable(h, ts->held.len, tag);
    strbuf_add(out, h, rel);
    drop_front(&ts->held, rel);
}

/* The arguments object of v (itself, or a string holding one) as pyjson, or NULL. */
static char *arguments_text(json_t *v)
{
    json_t *parsed = NULL;
    if (json_is_string(v)) v = parsed = json_loads(json_string_value(v), JSON_REJECT_DUPLICATES, NULL);
    else if (!v) v = parsed = json_object();
    char *out = json_is_object(v) ? pyjson_dumps(v) : NULL;
    json_decref(parsed);
    return out;
}

size_t tool_calls_from(const char *const *names, const char *const *args, size_t n, tool_call **calls)
{
    *calls = NULL;
    tool_call *c = n ? calloc(n, sizeof *c) : NULL;
    if (!c) return 0;
    for (size_t i = 0; i < n; i++) {
        json_t *v = json_loads(args[i], JSON_DECODE_ANY | JSON_REJECT_DUPLICATES, NULL);
        c[i].arguments = v ? arguments_text(v) : NULL;
        json_decref(v);
        c[i].name = good_label(names[i], strlen(names[i])) ? strdup(names[i]) : NULL;
        if (!c[i].arguments || !c[i].name) { tool_calls_free(c, i + 1); return 0; }
    }
    *calls = c;
    return n;
}

/* One "<tool_call> JSON </tool_call>" at *p (after whitespace); advances *p. */
static int parse_one(const tool_scan *ts, json_t **schemas, const char **p, const char *end, tool_call *c)
{
    (void)ts;
    (void)schemas;
    const char *s = *p;
    if ((size_t)(end - s) < OPEN_LEN || memcmp(s, OPEN, OPEN_LEN)) return -1;
    s += OPEN_LEN;
    json_error_t je;
    json_t *o = json_loadb(s, (size_t)(end - s), JSON_DISABLE_EOF_CHECK | JSON_REJECT_DUPLICATES, &je);
    if (!o) return -1;
    s += je.position;
    int rc = -1;
    json_t *name = json_object_get(o, "name");
    char *args = arguments_text(json_object_get(o, "arguments"));
    if (json_is_string(name) && json_string_length(name) > 0 && args) {
        while (s < end && is_ws(*s)) s++;
        if ((size_t)(end - s) >= CLOSE_LEN && !memcmp(s, CLOSE, CLOSE_LEN)) s += CLOSE_LEN;
        else if (s != end) goto out; /* only the last call may lack its close */
        c->name = strdup(json_string_value(name));
        c->arguments = args;
        args = NULL;
        if (c->name) { rc = 0; *p = s; }
    }
out:
    free(args);
    json_decref(o);
    return rc;
}

static bool take(const char **p, const char *end, const char *lit)
{
    size_t n = strlen(lit);
    if ((size_t)(end - *p) < n || memcmp(*p, lit, n)) return false;
    *p += n;
    return true;
}

static void skip_ws(const char **p, const char *end)
{
    while (*p < end && is_ws(**p)) (*p)++;
}

/* The declared type of a tool's parameter: "string", another, or NULL (unknown). */
static const char *param_type(const tool_scan *ts, json_t **schemas, const char *tool, const char *key)
{
    for (size_t i = 0; i < ts->n_tools; i++) {
        if (!schemas[i]) schemas[i] = json_loads(ts->tools[i], 0, NULL);
        json_t *f = json_object_get(schemas[i], "function");
        if (!json_is_string(json_object_get(f, "name")) || strcmp(json_string_value(json_object_get(f, "name")), tool))
            continue;
        json_t *t = json_object_get(json_object_get(json_object_get(json_object_get(f, "parameters"), "properties"), key),
                                    "type");
        return json_is_string(t) ? json_string_value(t) : t ? "" : NULL;
    }
    return NULL;
}

static const char *find_lit(const char *s, const char *end, const char *lit)
{
    size_t n = strlen(lit);
    for (const char *q = s; q + n <= end; q++)
        if (*q == *lit && !memcmp(q, lit, n)) return q;
    return NULL;
}

/* A value as the tool's schema types it: a "string" parameter keeps its
 * text; any other, or one the schema does not name, is read as JSON when it
 * is JSON, an "object"/"array" (or unnamed) one also as a Python literal
 * dict or list. NULL when the text cannot be a JSON string (a NUL, bad
 * UTF-8). */
static json_t *typed_value(const tool_scan *ts, json_t **schemas, const char *tool, const char *key, const char *v,
                           size_t n)
{
    const char *type = param_type(ts, schemas, tool, key);
    json_t *val = NULL;
    if (!type || strcmp(type, "string")) val = json_loadb(v, n, JSON_DECODE_ANY | JSON_REJECT_DUPLICATES, NULL);
    /* Qwen3-Coder's template shows past object arguments as Python's repr ({'a': True}); a model may answer so */
    if (!val && (!type || !strcmp(type, "object") || !strcmp(type, "array"))) val = pyjson_parse_literal(v, n);
    if (!val && !memchr(v, 0, n)) val = json_stringn(v, n);
    return val;
}

/* The text up to lit (which must follow); *s moves past lit. NULL if absent. */
static const char *until(const char **s, const char *end, const char *lit, size_t *n)
{
    const char *q = find_lit(*s, end, lit);
    if (!q) return NULL;
    const char *v = *s;
    *n = (size_t)(q - v);
    *s = q + strlen(lit);
    return v;
}

/* One argument of the tagged formats into args: its key a good label, its value typed. */
static int set_arg(const tool_scan *ts, json_t **schemas, json_t *args, const char *tool, const char *k, size_t kn,
                   const char *v, size_t vn)
{
    if (!good_label(k, kn)) return -1;
    char *key = strndup(k, kn);
    json_t *val = key ? typed_value(ts, schemas, tool, key, v, vn) : NULL;
    int set = val ? json_object_set_new(args, key, val) : -1;
    free(key);
    return set ? -1 : 0;
}

/* A parsed call into c (the name taken from *name), *p past it at s. */
static int take_call(tool_call *c, char **name, json_t *args, const char **p, const char *s)
{
    c->arguments = pyjson_dumps(args);
    if (!c->arguments) return -1;
    c->name = *name;
    *name = NULL;
    *p = s;
    return 0;
}

/* One call at *p, in Qwen3-Coder's or GLM-4.5's tags (tool_calls.h). */
static int parse_one_tagged(const tool_scan *ts, json_t **schemas, const char **p, const char *end, tool_call *c)
{
    const bool glm = syntax(ts->format)->name_line;
    const char *s = *p;
    if (!take(&s, end, OPEN)) return -1;
    char *name = NULL;
    if (glm) { /* <tool_call>NAME then the first line break or <arg_key> */
        const char *e = s;
        while (e < end && *e != '\n' && *e != '<') e++;
        const char *b = s;
        while (b < e && is_ws(*b)) b++;
        while (e > b && is_ws(e[-1])) e--;
        if (good_label(b, (size_t)(e - b))) name = strndup(b, (size_t)(e - b));
        s = e;
    } else {
        skip_ws(&s, end);
        if (!take(&s, end, "<function=")) return -1;
        const char *gt = memchr(s, '>', (size_t)(end - s));
        if (!gt || !good_label(s, (size_t)(gt - s))) return -1;
        name = strndup(s, (size_t)(gt - s));
        s = gt + 1;
    }
    json_t *args = json_object();
    int rc = -1;
    if (!name || !args) goto out;
    for (;;) {
        skip_ws(&s, end);
        if (glm ? s == end || (end - s >= (long)CLOSE_LEN && !memcmp(s, CLOSE, CLOSE_LEN)) : take(&s, end, "</function>"))
            break;
        size_t kn, vn;
        const char *k, *v;
        if (glm) {
            if (!take(&s, end, "<arg_key>") || !(k = until(&s, end, "</arg_key>", &kn))) goto out;
            skip_ws(&s, end);
            if (!take(&s, end, "<arg_value>") || !(v = until(&s, end, "</arg_value>", &vn))) goto out;
        } else {
            if (!take(&s, end, "<parameter=") || !(k = until(&s, end, ">", &kn)) ||
                !(v = until(&s, end, "</parameter>", &vn)))
                goto out;
            if (vn && *v == '\n') { v++; vn--; } /* the template's newlines around the value */
            if (vn && v[vn - 1] == '\n') vn--;
        }
        if (set_arg(ts, schemas, args, name, k, kn, v, vn)) goto out;
    }
    skip_ws(&s, end);
    if (!take(&s, end, CLOSE) && s != end) goto out; /* only the last call may lack its close */
    rc = take_call(c, &name, args, p, s);
out:
    free(name);
    json_decref(args);
    return rc;
}

/* One MiniMax-M2 <invoke name="NAME"> (<parameter name="KEY">VALUE</parameter>)* </invoke> at *p. */
static int parse_invoke(const tool_scan *ts, json_t **schemas, const char **p, const char *end, tool_call *c)
{
    const char *s = *p;
    size_t nn;
    const char *nm;
    if (!take(&s, end, "<invoke name=\"") || !(nm = until(&s, end, "\">", &nn)) || !good_label(nm, nn)) return -1;
    char *name = strndup(nm, nn);
    json_t *args = json_object();
    int rc = -1;
    if (!name || !args) goto out;
    for (;;) {
        skip_ws(&s, end);
        if (take(&s, end, "</invoke>")) break;
        size_t kn, vn;
        const char *k, *v;
        if (!take(&s, end, "<parameter name=\"") || !(k = until(&s, end, "\">", &kn)) ||
            !(v = until(&s, end, "</parameter>", &vn)) || set_arg(ts, schemas, args, name, k, kn, v, vn))
            goto out;
    }
    rc = take_call(c, &name, args, p, s);
out:
    free(name);
    json_decref(args);
    return rc;
}

/* The JSON object at *s (NULL if none), *s moved past it and the blanks after it. */
static json_t *object_at(const char **s, const char *end)
{
    json_error_t je;
    json_t *o = json_loadb(*s, (size_t)(end - *s), JSON_DISABLE_EOF_CHECK | JSON_REJECT_DUPLICATES, &je);
    if (!json_is_object(o)) { json_decref(o); return NULL; }
    *s += je.position;
    skip_ws(s, end);
    return o;
}

static void trim_ws(const char **t, size_t *n)
{
    while (*n && is_ws(**t)) { (*t)++; (*n)--; }
    while (*n && is_ws((*t)[*n - 1])) (*n)--;
}

/* One Kimi K2 <|tool_call_begin|>functions.NAME:IDX<|tool_call_argument_begin|>{...}<|tool_call_end|>
 * at *p: the name from the id, which is kept (Kimi reads its own ids back). */
static int parse_kimi(const tool_scan *ts, json_t **schemas, const char **p, const char *end, tool_call *c)
{
    (void)ts;
    (void)schemas;
    const char *s = *p;
    size_t idn;
    const char *id;
    if (!take(&s, end, "<|tool_call_begin|>") || !(id = until(&s, end, "<|tool_call_argument_begin|>", &idn)))
        return -1;
    trim_ws(&id, &idn);
    const char *colon = NULL;
    for (size_t i = 0; i < idn; i++)
        if (id[i] == ':') colon = id + i;
    if (idn < 11 || memcmp(id, "functions.", 10) || !colon || colon == id + 10 || !good_label(id, idn)) return -1;
    for (const char *d = colon + 1; d < id + idn; d++)
        if (*d < '0' || *d > '9') return -1;
    json_t *o = object_at(&s, end);
    int rc = -1;
    if (!o || (!take(&s, end, "<|tool_call_end|>") && s != end)) goto out; /* only the last may lack its end */
    c->name = strndup(id + 10, (size_t)(colon - id - 10));
    c->id = strndup(id, idn);
    c->arguments = pyjson_dumps(o);
    if (c->name && c->id && c->arguments && good_label(c->name, strlen(c->name))) { rc = 0; *p = s; }
out:
    json_decref(o);
    return rc;
}

/* One DeepSeek <｜tool▁call▁begin｜>NAME<｜tool▁sep｜>{...}<｜tool▁call▁end｜> at *p;
 * also V3's and R1's older form, function<｜tool▁sep｜>NAME then the
 * arguments in a ```json fence, which V3.1 falls back to at times. */
static int parse_deepseek(const tool_scan *ts, json_t **schemas, const char **p, const char *end, tool_call *c)
{
    (void)ts;
    (void)schemas;
    const char *s = *p;
    size_t nn;
    const char *nm;
    if (!take(&s, end, DS_CALL) || !(nm = until(&s, end, DS_SEP, &nn))) return -1;
    bool fenced = nn == 8 && !memcmp(nm, "function", 8);
    if (fenced) {
        const char *e = memchr(s, '\n', (size_t)(end - s));
        if (!e) return -1;
        nm = s;
        nn = (size_t)(e - s);
        s = e;
        skip_ws(&s, end);
        if (!take(&s, end, "```json")) return -1;
    }
    trim_ws(&nm, &nn);
    if (!good_label(nm, nn)) return -1;
    json_t *o = object_at(&s, end);
    int rc = -1;
    if (!o || (fenced && !take(&s, end, "```"))) goto out;
    skip_ws(&s, end);
    if (!take(&s, end, DS_CALL_END) && s != end) goto out; /* only the last may lack its end */
    c->name = strndup(nm, nn);
    c->arguments = pyjson_dumps(o);
    if (c->name && c->arguments) { rc = 0; *p = s; }
out:
    json_decref(o);
    return rc;
}

/* Whether name is one of the offered tools' names. */
static bool offered(const tool_scan *ts, const char *name)
{
    bool found = false;
    for (size_t i = 0; i < ts->n_tools && !found; i++) {
        json_t *t = json_loads(ts->tools[i], 0, NULL);
        json_t *f = json_object_get(t, "function") ? json_object_get(t, "function") : t;
        const char *nm = json_string_value(json_object_get(f, "name"));
        found = nm && !strcmp(nm, name);
        json_decref(t);
    }
    return found;
}

/* A call's name and arguments (an object, or a string holding one; absent: {}) into c: 0, or -1 when
 * the name is not a good label or the arguments not an object. */
static int take_name_args(json_t *name, json_t *args, tool_call *c)
{
    if (!json_is_string(name) || !good_label(json_string_value(name), json_string_length(name))) return -1;
    char *a = arguments_text(args), *nm = a ? strdup(json_string_value(name)) : NULL;
    if (!nm) { free(a); return -1; }
    c->name = nm;
    c->arguments = a;
    return 0;
}

/* One Llama {"name": NAME, "parameters": {...}} at *p. Bare JSON has no tag
 * to tell a call from an answer that happens to be JSON, so the object must
 * name an offered tool and hold "parameters" (or "arguments"). */
static int parse_llama(const tool_scan *ts, json_t **schemas, const char **p, const char *end, tool_call *c)
{
    (void)schemas;
    const char *s = *p;
    json_t *o = object_at(&s, end), *name = json_object_get(o, "name"), *args = json_object_get(o, "parameters");
    if (!args) args = json_object_get(o, "arguments");
    int rc = args && json_is_string(name) && offered(ts, json_string_value(name)) ? take_name_args(name, args, c) : -1;
    if (rc == 0) *p = s;
    json_decref(o);
    return rc;
}

/* One Mistral {"name": NAME, "arguments": {...}, "id": ID} at *p (the [TOOL_CALLS] tag and the list's
 * brackets and commas around it are taken by the caller); an id of 9 letters and digits is kept. */
static int parse_mistral(const tool_scan *ts, json_t **schemas, const char **p, const char *end, tool_call *c)
{
    (void)schemas;
    const char *s = *p;
    json_t *o = object_at(&s, end);
    int rc = o ? take_name_args(json_object_get(o, "name"), json_object_get(o, "arguments"), c) : -1;
    const char *id = json_string_value(json_object_get(o, "id"));
    const size_t len = syntax(ts->format)->id_len; /* Mistral's 9 */
    bool alnum = rc == 0 && id && len && strlen(id) == len;
    for (size_t j = 0; alnum && j < len; j++)
        alnum = (id[j] >= '0' && id[j] <= '9') || (id[j] >= 'a' && id[j] <= 'z') || (id[j] >= 'A' && id[j] <= 'Z');
    if (alnum && !(c->id = strdup(id))) rc = -1;
    if (rc == 0) *p = s;
    json_decref(o);
    return rc;
}


static const char *const JSON_MARKS[] = { "<think>", "</think>", OPEN, CLOSE };
static const char *const GLM_MARKS[] = { "<think>", "</think>", OPEN, CLOSE, "<arg_key>", "</arg_key>", "<arg_value>",
                                         "</arg_value>" };
static const char *const MM_MARKS[] = { "<think>", "</think>", MM_OPEN, MM_CLOSE };
static const char *const KIMI_MARKS[] = { "<think>", "</think>", KIMI_OPEN, KIMI_CLOSE, "<|tool_call_begin|>",
                                          "<|tool_call_argument_begin|>", "<|tool_call_end|>" };
static const char *const DS_MARKS[] = { "<think>", "</think>", DS_OPEN, DS_CLOSE, DS_CALL, DS_CALL_END, DS_SEP };
static const char *const MISTRAL_MARKS[] = { MISTRAL_OPEN };
static const char *const MM_PARTS[] = { MM_OPEN, MM_CLOSE, NULL };
static const char *const KIMI_PARTS[] = { KIMI_OPEN, KIMI_CLOSE, NULL };
static const char *const DS_PARTS[] = { DS_OPEN, DS_CLOSE, NULL };
static const char *const LLAMA_PARTS[] = { ";", ",", NULL };
/* [TOOL_CALLS] then a JSON list of calls (or one call): the tag and the list's punctuation part them */
static const char *const MISTRAL_PARTS[] = { MISTRAL_OPEN, "[", ",", "]", NULL };
#define MARKS(a) a, sizeof a / sizeof *a

static const tool_syntax SYNTAX[] = {
    [TOOL_FORMAT_JSON] = { .open = OPEN, .parse = parse_one, .markers = MARKS(JSON_MARKS),
                           .prefix = "<tool_call>\n{\"name\": \"", .after_name = "\", \"arguments\": ",
                           .args_close = "}\n</tool_call>" },
    [TOOL_FORMAT_CODER] = { .open = OPEN, .parse = parse_one_tagged, .typed = true, .markers = MARKS(JSON_MARKS),
                            .prefix = "<tool_call>\n<function=", .after_name = ">\n" },
    [TOOL_FORMAT_GLM45] = { .open = OPEN, .parse = parse_one_tagged, .typed = true, .name_line = true,
                            .markers = MARKS(GLM_MARKS),
                            .prefix = OPEN, .after_name = "\n" },
    [TOOL_FORMAT_MINIMAX] = { .open = MM_OPEN, .parts = MM_PARTS, .parse = parse_invoke, .typed = true,
                              .markers = MARKS(MM_MARKS), .prefix = "<minimax:tool_call>\n<invoke name=\"",
                              .after_name = "\">\n" },
    [TOOL_FORMAT_KIMI] = { .open = KIMI_OPEN, .parts = KIMI_PARTS, .parse = parse_kimi, .markers = MARKS(KIMI_MARKS),
                           .prefix = "<|tool_calls_section_begin|><|tool_call_begin|>functions.",
                           .after_name = ":0<|tool_call_argument_begin|>",
                           .args_close = "<|tool_call_end|><|tool_calls_section_end|>" },
    [TOOL_FORMAT_DEEPSEEK] = { .open = DS_OPEN, .parts = DS_PARTS, .parse = parse_deepseek, .markers = MARKS(DS_MARKS),
                               .prefix = DS_OPEN DS_CALL, .after_name = DS_SEP,
                               .args_close = DS_CALL_END DS_CLOSE },
    /* bare JSON: no markers (<|python_start|> is left out of text) */
    [TOOL_FORMAT_LLAMA] = { .open = LLAMA_OPEN, .parts = LLAMA_PARTS, .parts_between = true, .parse = parse_llama,
                            .prefix = "{\"name\": \"", .after_name = "\", \"parameters\": ", .args_close = "}" },
    /* the template refuses call ids that are not 9 characters: the server makes such ones */
    [TOOL_FORMAT_MISTRAL] = { .open = MISTRAL_OPEN, .parts = MISTRAL_PARTS, .parse = parse_mistral,
                              .markers = MARKS(MISTRAL_MARKS), .prefix = "[TOOL_CALLS] [{\"name\": \"",
                              .after_name = "\", \"arguments\": ", .args_close = "}]", .id_len = 9 },
};

/* f's row; a value out of the enum reads as Qwen3's, the zeroed scan's */
static const tool_syntax *syntax(tool_format f)
{
    return (unsigned)f < sizeof SYNTAX / sizeof *SYNTAX ? &SYNTAX[f] : &SYNTAX[TOOL_FORMAT_JSON];
}

size_t tool_format_markers(tool_format f, const char *const **texts)
{
    *texts = syntax(f)->markers;
    return syntax(f)->n_markers;
}

char *tool_call_prefix(tool_format f, const char *name)
{
    strbuf b = { 0 };
    strbuf_puts(&b, syntax(f)->prefix);
    if (name) strbuf_printf(&b, "%s%s", name, syntax(f)->after_name);
    return strbuf_take(&b);
}

const char *tool_call_args_close(tool_format f) { return syntax(f)->args_close; }

size_t tool_call_id_len(tool_format f) { return syntax(f)->id_len; }

/* Whether *p is at a text that only parts calls (taken). */
static bool take_part(const tool_syntax *sx, const char **p, const char *end, size_t n_calls)
{
    if (!sx->parts || (sx->parts_between && !n_calls)) return false;
    for (const char *const *t = sx->parts; *t; t++)
        if (take(p, end, *t)) return true;
    return false;
}

size_t tool_scan_finish(tool_scan *ts, tool_call **calls, strbuf *out)
{
    *calls = NULL;
    if (ts->prefix && !ts->prefix_taken) tool_scan_feed(ts, "", 0, out);
    if (ts->suffix) tool_scan_feed(ts, ts->suffix, strlen(ts->suffix), out);
    if (ts->held.oom) { out->oom = true; return 0; }
    const char *h = ts->held.data ? ts->held.data : "", *end = h + ts->held.len;
    if (!ts->capturing) {
        strbuf_add(out, h, ts->held.len);
        ts->held.len = 0;
        return 0;
    }
    tool_call *c = NULL;
    size_t n = 0;
    const char *p = h;
    const tool_syntax *sx = syntax(ts->format);
    json_t **schemas = sx->typed ? calloc(ts->n_tools + 1, sizeof *schemas) : NULL;
    for (;;) {
        while (p < end && is_ws(*p)) p++;
        if (p == end) break;
        tool_call *g = realloc(c, (n + 1) * sizeof *c);
        if (!g || (sx->typed && !schemas)) break;
        c = g;
        c[n] = (tool_call){ 0 };
        if (take_part(sx, &p, end, n)) continue;
        int rc = sx->parse(ts, schemas, &p, end, &c[n]);
        if (rc != 0) { free(c[n].name); free(c[n].arguments); free(c[n].id); break; }
        n++;
    }
    for (size_t i = 0; schemas && i < ts->n_tools; i++) json_decref(schemas[i]);
    free(schemas);
    if (p != end || n == 0) {
        tool_calls_free(c, n);
        strbuf_add(out, h, ts->held.len);
        ts->held.len = 0;
        return 0;
    }
    ts->held.len = 0;
    *calls = c;
    return n;
}

void tool_calls_free(tool_call *c, size_t n)
{
    for (size_t i = 0; i < n; i++) { free(c[i].name); free(c[i].arguments); free(c[i].id); }
    free(c);
}

void tool_scan_free(tool_scan *ts) { strbuf_free(&ts->held); }
