/* tool_calls.c: see tool_calls.h. */
#include "runtime/tool_calls.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/pyjson.h"

static const char OPEN[] = "<tool_call>", CLOSE[] = "</tool_call>";
#define OPEN_LEN (sizeof OPEN - 1)
#define CLOSE_LEN (sizeof CLOSE - 1)

static bool is_ws(char c) { return c == ' ' || c == '\n' || c == '\t' || c == '\r'; }

/* The first byte of the held text's tail that cannot yet be released:
 * trailing whitespace and a proper prefix of OPEN at the end. */
static size_t releasable(const char *s, size_t n)
{
    size_t keep = n;
    for (size_t k = OPEN_LEN - 1; k > 0; k--) {
        if (k <= n && !memcmp(s + n - k, OPEN, k)) { keep = n - k; break; }
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
    strbuf_add(&ts->held, d, n);
    if (ts->capturing || ts->held.oom || !ts->held.len) return;
    const char *h = ts->held.data, *o = find(h, ts->held.len, OPEN, OPEN_LEN);
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
    size_t rel = releasable(h, ts->held.len);
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
        c[i].name = names[i][0] ? strdup(names[i]) : NULL;
        if (!c[i].arguments || !c[i].name) { tool_calls_free(c, i + 1); return 0; }
    }
    *calls = c;
    return n;
}

/* One "<tool_call> JSON </tool_call>" at *p (after whitespace); advances *p. */
static int parse_one(const char **p, const char *end, tool_call *c)
{
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

size_t tool_scan_finish(tool_scan *ts, tool_call **calls, strbuf *out)
{
    *calls = NULL;
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
    for (;;) {
        while (p < end && is_ws(*p)) p++;
        if (p == end) break;
        tool_call *g = realloc(c, (n + 1) * sizeof *c);
        if (!g) break;
        c = g;
        c[n] = (tool_call){ 0 };
        if (parse_one(&p, end, &c[n]) != 0) { free(c[n].name); free(c[n].arguments); break; }
        n++;
    }
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
    for (size_t i = 0; i < n; i++) { free(c[i].name); free(c[i].arguments); }
    free(c);
}

void tool_scan_free(tool_scan *ts) { strbuf_free(&ts->held); }
