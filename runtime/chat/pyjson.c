/* pyjson.c: see pyjson.h. */
#include "runtime/chat/pyjson.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void add_string(strbuf *b, const char *s, size_t n)
{
    strbuf_add(b, "\"", 1);
    size_t run = 0; /* bytes copied as they are, flushed before each escape */
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        const char *esc = NULL;
        char u[8];
        switch (c) {
        case '"': esc = "\\\""; break;
        case '\\': esc = "\\\\"; break;
        case '\n': esc = "\\n"; break;
        case '\r': esc = "\\r"; break;
        case '\t': esc = "\\t"; break;
        case '\b': esc = "\\b"; break;
        case '\f': esc = "\\f"; break;
        default:
            if (c < 0x20) { snprintf(u, sizeof u, "\\u%04x", c); esc = u; }
        }
        if (!esc) { run++; continue; }
        strbuf_add(b, s + i - run, run);
        run = 0;
        strbuf_puts(b, esc);
    }
    strbuf_add(b, s + n - run, run);
    strbuf_add(b, "\"", 1);
}

/* Python's float repr: the shortest round-tripping digits, positional when
 * the decimal exponent is in [-4, 16), else d.ddde+XX; ".0" on integers. */
static void add_real(strbuf *b, double x)
{
    if (isnan(x)) { strbuf_puts(b, "NaN"); return; }
    if (isinf(x)) { strbuf_puts(b, x < 0 ? "-Infinity" : "Infinity"); return; }
    char e[40];
    for (int p = 1; p <= 17; p++) {
        snprintf(e, sizeof e, "%.*e", p - 1, x);
        if (strtod(e, NULL) == x) break;
    }
    /* e: [-]d[.ddd]e[+-]XX */
    const char *s = e;
    bool neg = *s == '-';
    if (neg) s++;
    char digits[24];
    size_t nd = 0;
    for (; *s && *s != 'e'; s++)
        if (*s != '.') digits[nd++] = *s;
    int exp10 = atoi(s + 1);
    while (nd > 1 && digits[nd - 1] == '0') nd--;
    if (neg) strbuf_add(b, "-", 1);
    if (exp10 >= -4 && exp10 < 16) {
        if (exp10 < 0) {
            strbuf_puts(b, "0.");
            for (int i = -1; i > exp10; i--) strbuf_add(b, "0", 1);
            strbuf_add(b, digits, nd);
        } else {
            size_t whole = (size_t)exp10 + 1;
            for (size_t i = 0; i < whole; i++) strbuf_add(b, i < nd ? &digits[i] : "0", 1);
            strbuf_add(b, ".", 1);
            if (nd > whole) strbuf_add(b, digits + whole, nd - whole);
            else strbuf_add(b, "0", 1);
        }
    } else {
        strbuf_add(b, digits, 1);
        if (nd > 1) { strbuf_add(b, ".", 1); strbuf_add(b, digits + 1, nd - 1); }
        strbuf_printf(b, "e%c%02d", exp10 < 0 ? '-' : '+', exp10 < 0 ? -exp10 : exp10);
    }
}

static void add_repr_string(strbuf *b, const char *s, size_t n);

/* One walk for both: JSON (py false) or Python's repr (py true), which
 * differ only in how strings are quoted and how true/false/null read. */
static void add_value(strbuf *b, const json_t *v, bool py)
{
    void (*str)(strbuf *, const char *, size_t) = py ? add_repr_string : add_string;
    switch (json_typeof(v)) {
    case JSON_OBJECT: {
        const char *k;
        json_t *x;
        bool first = true;
        strbuf_add(b, "{", 1);
        json_object_foreach((json_t *)v, k, x) {
            if (!first) strbuf_add(b, ", ", 2);
            first = false;
            str(b, k, strlen(k));
            strbuf_add(b, ": ", 2);
            add_value(b, x, py);
        }
        strbuf_add(b, "}", 1);
        break;
    }
    case JSON_ARRAY: {
        size_t i;
        json_t *x;
        strbuf_add(b, "[", 1);
        json_array_foreach((json_t *)v, i, x) {
            if (i) strbuf_add(b, ", ", 2);
            add_value(b, x, py);
        }
        strbuf_add(b, "]", 1);
        break;
    }
    case JSON_STRING: str(b, json_string_value(v), json_string_length(v)); break;
    case JSON_INTEGER: strbuf_printf(b, "%" JSON_INTEGER_FORMAT, json_integer_value(v)); break;
    case JSON_REAL: add_real(b, json_real_value(v)); break;
    case JSON_TRUE: strbuf_puts(b, py ? "True" : "true"); break;
    case JSON_FALSE: strbuf_puts(b, py ? "False" : "false"); break;
    case JSON_NULL: strbuf_puts(b, py ? "None" : "null"); break;
    }
}

void pyjson_add(strbuf *b, const json_t *v) { add_value(b, v, false); }

static void add_newline_indent(strbuf *b, int n)
{
    strbuf_add(b, "\n", 1);
    for (int i = 0; i < n; i++) strbuf_add(b, " ", 1);
}

static void add_indented(strbuf *b, const json_t *v, int indent, int depth)
{
    const bool obj = json_is_object(v), arr = json_is_array(v);
    if ((!obj || !json_object_size(v)) && (!arr || !json_array_size(v))) { add_value(b, v, false); return; }
    strbuf_add(b, obj ? "{" : "[", 1);
    if (obj) {
        const char *k;
        json_t *x;
        bool first = true;
        json_object_foreach((json_t *)v, k, x) {
            if (!first) strbuf_add(b, ",", 1);
            first = false;
            add_newline_indent(b, (depth + 1) * indent);
            add_string(b, k, strlen(k));
            strbuf_add(b, ": ", 2);
            add_indented(b, x, indent, depth + 1);
        }
    } else {
        size_t i;
        json_t *x;
        json_array_foreach((json_t *)v, i, x) {
            if (i) strbuf_add(b, ",", 1);
            add_newline_indent(b, (depth + 1) * indent);
            add_indented(b, x, indent, depth + 1);
        }
    }
    add_newline_indent(b, depth * indent);
    strbuf_add(b, obj ? "}" : "]", 1);
}

void pyjson_add_indented(strbuf *b, const json_t *v, int indent) { add_indented(b, v, indent, 0); }

char *pyjson_dumps(const json_t *v)
{
    strbuf b = { 0 };
    pyjson_add(&b, v);
    return strbuf_take(&b);
}

/* The next code point of UTF-8 text (valid: jansson checked it). */
static unsigned next_cp(const unsigned char **p)
{
    const unsigned char *s = *p;
    unsigned c = s[0];
    int n = c < 0x80 ? 0 : c < 0xE0 ? 1 : c < 0xF0 ? 2 : 3;
    if (n) c &= 0x3Fu >> n;
    for (int i = 1; i <= n; i++) c = (c << 6) | (s[i] & 0x3F);
    *p = s + n + 1;
    return c;
}

static bool py_unprintable(unsigned c)
{
    return c < 0x20 || (c >= 0x7F && c <= 0xA0) || c == 0xAD || c == 0x1680 || (c >= 0x2000 && c <= 0x200F) ||
           (c >= 0x2028 && c <= 0x202F) || (c >= 0x205F && c <= 0x206F) || c == 0x3000 || c == 0xFEFF;
}

static void add_repr_string(strbuf *b, const char *s, size_t n)
{
    bool single = memchr(s, '\'', n) != NULL, dbl = memchr(s, '"', n) != NULL;
    char q = single && !dbl ? '"' : '\'';
    strbuf_add(b, &q, 1);
    const unsigned char *p = (const unsigned char *)s, *end = p + n;
    while (p < end) {
        const unsigned char *at = p;
        unsigned c = next_cp(&p);
        if (c == (unsigned char)q || c == '\\') { strbuf_add(b, "\\", 1); strbuf_add(b, (const char *)at, 1); }
        else if (c == '\n') strbuf_puts(b, "\\n");
        else if (c == '\r') strbuf_puts(b, "\\r");
        else if (c == '\t') strbuf_puts(b, "\\t");
        else if (py_unprintable(c)) strbuf_printf(b, c < 0x100 ? "\\x%02x" : "\\u%04x", c);
        else strbuf_add(b, (const char *)at, (size_t)(p - at));
    }
    strbuf_add(b, &q, 1);
}

void pyjson_add_str(strbuf *b, const json_t *v)
{
    if (json_is_string(v)) strbuf_add(b, json_string_value(v), json_string_length(v));
    else add_value(b, v, true);
}

/* ---- Python literals back to JSON ---------------------------------------- */

typedef struct lit { const char *p, *end; } lit;

static void lit_ws(lit *l)
{
    while (l->p < l->end && (*l->p == ' ' || *l->p == '\n' || *l->p == '\t' || *l->p == '\r')) l->p++;
}

static bool lit_word(lit *l, const char *w)
{
    size_t n = strlen(w);
    if ((size_t)(l->end - l->p) < n || memcmp(l->p, w, n)) return false;
    l->p += n;
    return true;
}

static void add_utf8(strbuf *b, uint32_t c)
{
    char u[4];
    int n = 0;
    if (c < 0x80) u[n++] = (char)c;
    else if (c < 0x800) { u[n++] = (char)(0xC0 | c >> 6); u[n++] = (char)(0x80 | (c & 0x3F)); }
    else if (c < 0x10000) {
        u[n++] = (char)(0xE0 | c >> 12); u[n++] = (char)(0x80 | ((c >> 6) & 0x3F)); u[n++] = (char)(0x80 | (c & 0x3F));
    } else {
        u[n++] = (char)(0xF0 | c >> 18); u[n++] = (char)(0x80 | ((c >> 12) & 0x3F));
        u[n++] = (char)(0x80 | ((c >> 6) & 0x3F)); u[n++] = (char)(0x80 | (c & 0x3F));
    }
    strbuf_add(b, u, (size_t)n);
}

static json_t *lit_string(lit *l)
{
    char q = *l->p++;
    strbuf b = { 0 };
    while (l->p < l->end && *l->p != q) {
        char c = *l->p++;
        if (c == '\n' || c == 0) goto bad;
        if (c != '\\') { strbuf_add(&b, &c, 1); continue; }
        if (l->p >= l->end) goto bad;
        char e = *l->p++;
        int hex = e == 'x' ? 2 : e == 'u' ? 4 : e == 'U' ? 8 : 0;
        if (hex) {
            uint32_t v = 0;
            for (int i = 0; i < hex; i++) {
                if (l->p >= l->end) goto bad;
                char h = *l->p++;
                int d = h >= '0' && h <= '9' ? h - '0' : h >= 'a' && h <= 'f' ? h - 'a' + 10 : h >= 'A' && h <= 'F' ? h - 'A' + 10 : -1;
                if (d < 0) goto bad;
                v = v * 16 + (uint32_t)d;
            }
            if (v == 0 || v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF)) goto bad;
            add_utf8(&b, v);
            continue;
        }
        static const char ESC[] = "n\nt\tr\rb\bf\f\\\\''\"\""; /* pairs: escape letter, the byte */
        const char *m = e ? strchr(ESC, e) : NULL;
        if (!m || (m - ESC) % 2) goto bad;
        strbuf_add(&b, m + 1, 1);
    }
    if (l->p >= l->end || b.oom) goto bad;
    l->p++;
    json_t *s = json_stringn(b.data ? b.data : "", b.len);
    strbuf_free(&b);
    return s;
bad:
    strbuf_free(&b);
    return NULL;
}

static json_t *lit_value(lit *l, int depth)
{
    if (depth > 64) return NULL;
    lit_ws(l);
    if (l->p >= l->end) return NULL;
    char c = *l->p;
    if (c == '\'' || c == '"') return lit_string(l);
    if (lit_word(l, "True")) return json_true();
    if (lit_word(l, "False")) return json_false();
    if (lit_word(l, "None")) return json_null();
    if (c == '[' || c == '{') {
        bool dict = c == '{';
        char close = dict ? '}' : ']';
        json_t *v = dict ? json_object() : json_array();
        l->p++;
        for (;;) {
            lit_ws(l);
            if (l->p < l->end && *l->p == close) { l->p++; return v; }
            json_t *k = lit_value(l, depth + 1), *x = k;
            if (!k) break;
            if (dict) {
                lit_ws(l);
                if (!json_is_string(k) || l->p >= l->end || *l->p != ':') { json_decref(k); break; }
                l->p++;
                x = lit_value(l, depth + 1);
                int bad = !x || json_object_set_new(v, json_string_value(k), x);
                json_decref(k);
                if (bad) break;
            } else if (json_array_append_new(v, x)) {
                break;
            }
            lit_ws(l);
            if (l->p < l->end && *l->p == ',') { l->p++; continue; }
            if (l->p < l->end && *l->p == close) { l->p++; return v; }
            break;
        }
        json_decref(v);
        return NULL;
    }
    /* a number: JSON's grammar covers what repr writes for ints and finite floats */
    const char *s = l->p;
    while (l->p < l->end && strchr("+-0123456789.eE", *l->p)) l->p++;
    return l->p > s ? json_loadb(s, (size_t)(l->p - s), JSON_DECODE_ANY, NULL) : NULL;
}

json_t *pyjson_parse_literal(const char *s, size_t n)
{
    lit l = { s, s + n };
    lit_ws(&l);
    if (l.p >= l.end || (*l.p != '{' && *l.p != '[')) return NULL;
    json_t *v = lit_value(&l, 0);
    lit_ws(&l);
    if (v && l.p != l.end) { json_decref(v); return NULL; }
    return v;
}
