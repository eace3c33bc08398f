/* textcur.c: the bounded line cursor (textcur.h). */
#include "runtime/util/textcur.h"

#include "runtime/util/strbuf.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void tc_init(textcur *c, const char *text, size_t len, const char *path, const char *eof, char *err, size_t errlen)
{
    memset(c, 0, sizeof *c);
    c->s = text;
    c->end = text + len;
    c->path = path;
    c->eof = eof;
    c->err = err;
    c->errlen = errlen;
}

int tc_fail(textcur *c, const char *fmt, ...)
{
    char msg[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return err_printf(c->err, c->errlen, "%s:%d: %s", c->path, c->line, msg);
}

int tc_line(textcur *c)
{
    c->line++;
    if (c->s >= c->end) return tc_fail(c, "%s", c->eof);
    c->ls = c->s;
    const char *nl = memchr(c->s, '\n', (size_t)(c->end - c->s));
    c->le = nl ? nl : c->end;
    c->s = nl ? nl + 1 : c->end;
    for (const char *q = c->ls; q < c->le; q++)
        if (*q == '\0' || *q == '\r') return tc_fail(c, "a NUL or CR byte in the line");
    return 0;
}

int tc_word(textcur *c, const char **w, size_t *n)
{
    if (c->ls < c->le && *c->ls == ' ') c->ls++;
    if (c->ls >= c->le || *c->ls == ' ') return -1;
    *w = c->ls;
    while (c->ls < c->le && *c->ls != ' ') c->ls++;
    *n = (size_t)(c->ls - *w);
    return 0;
}

int tc_keyword(textcur *c, const char *kw)
{
    const char *w;
    size_t n;
    if (tc_word(c, &w, &n) || n != strlen(kw) || memcmp(w, kw, n)) return tc_fail(c, "expected '%s'", kw);
    return 0;
}

int tc_num(textcur *c, const char *w, size_t n, const char *what, uint64_t max, uint64_t *out)
{
    if (n == 0) return tc_fail(c, "missing %s", what);
    if (n > 20) return tc_fail(c, "%s '%.*s' is too long", what, (int)(n > 24 ? 24 : n), w);
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++) {
        if (w[i] < '0' || w[i] > '9') return tc_fail(c, "%s '%.*s' is not an unsigned decimal number", what, (int)n, w);
        if (v > (UINT64_MAX - (uint64_t)(w[i] - '0')) / 10) return tc_fail(c, "%s '%.*s' overflows", what, (int)n, w);
        v = v * 10 + (uint64_t)(w[i] - '0');
    }
    if (v > max) return tc_fail(c, "%s %llu is above the limit %llu", what, (unsigned long long)v, (unsigned long long)max);
    *out = v;
    return 0;
}

int tc_u64(textcur *c, const char *what, uint64_t max, uint64_t *out)
{
    const char *w;
    size_t n;
    if (tc_word(c, &w, &n)) return tc_fail(c, "missing %s", what);
    return tc_num(c, w, n, what, max, out);
}

int tc_eol(textcur *c)
{
    if (c->ls != c->le) {
        const char *t = *c->ls == ' ' ? c->ls + 1 : c->ls;
        return tc_fail(c, "unexpected text '%.*s' at the end of the line", (int)(c->le - t > 24 ? 24 : c->le - t), t);
    }
    return 0;
}

int tc_tail(textcur *c, const char *what)
{
    while (c->s < c->end) {
        if (*c->s != '\n') { c->line++; return tc_fail(c, "%s", what); }
        c->s++;
    }
    return 0;
}

int tc_slurp(const char *path, size_t max, const char *what, char **buf, size_t *n, char *err, size_t errlen)
{
    *buf = NULL;
    *n = 0;
    FILE *fp = fopen(path, "rb");
    if (!fp) return err_printf(err, errlen, "%s: %s", path, strerror(errno));
    /* grown as it fills: a small file never costs the limit */
    size_t cap = max < ((size_t)1 << 16) ? max + 1 : (size_t)1 << 16, got = 0;
    char *b = malloc(cap + 1);
    while (b) {
        got += fread(b + got, 1, cap - got, fp);
        if (got < cap || got > max) break;
        size_t ncap = cap > max / 2 ? max + 1 : cap * 2;
        char *g = realloc(b, ncap + 1);
        if (!g) { free(b); b = NULL; break; }
        b = g;
        cap = ncap;
    }
    int rerr = ferror(fp);
    fclose(fp);
    if (!b) return err_printf(err, errlen, "%s: out of memory", path);
    if (rerr) { free(b); return err_printf(err, errlen, "%s: read error", path); }
    if (got > max) { free(b); return err_printf(err, errlen, "%s: larger than %zu MiB: not %s", path, max >> 20, what); }
    b[got] = '\0';
    *buf = b;
    *n = got;
    return 0;
}
