/* strbuf.c: see strbuf.h. */
#include "runtime/util/strbuf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool grow(strbuf *b, size_t extra)
{
    if (b->oom) return false;
    if (extra > (size_t)-1 / 2 - b->len) { b->oom = true; return false; }
    size_t need = b->len + extra + 1;
    if (need <= b->cap) return true;
    size_t cap = b->cap ? b->cap : 64;
    while (cap < need) cap *= 2;
    char *d = realloc(b->data, cap);
    if (!d) { b->oom = true; return false; }
    b->data = d;
    b->cap = cap;
    return true;
}

void strbuf_add(strbuf *b, const char *s, size_t n)
{
    if (!grow(b, n)) return;
    if (n) memcpy(b->data + b->len, s, n);
    b->len += n;
    b->data[b->len] = 0;
}

void strbuf_puts(strbuf *b, const char *s) { strbuf_add(b, s, strlen(s)); }

void strbuf_printf(strbuf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0) { b->oom = true; return; }
    if (!grow(b, (size_t)n)) return;
    va_start(ap, fmt);
    vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
}

char *strbuf_take(strbuf *b)
{
    if (b->oom) { strbuf_free(b); return NULL; }
    char *d = b->data ? b->data : calloc(1, 1);
    *b = (strbuf){ 0 };
    return d;
}

void strbuf_free(strbuf *b)
{
    free(b->data);
    *b = (strbuf){ 0 };
}

int err_printf(char *err, size_t errlen, const char *fmt, ...)
{
    if (!err || !errlen) return -1;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    return -1;
}
