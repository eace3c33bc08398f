/* strbuf.h: a growable byte string, the one way the runtime builds text
 * (prompts, SSE frames, metrics pages).
 *
 * Contract: a zeroed strbuf is empty and valid. After an allocation
 * failure the buffer remembers it (oom), ignores further appends, and
 * every caller checks once at the end instead of after each append. data
 * is NUL-terminated whenever len > 0 and !oom. strbuf_free() releases it.
 * err_printf() is the other half: one message into a caller's fixed error
 * buffer (cut to errlen; none when err is NULL), returning -1 for
 * `return err_printf(err, ...)`. */
#ifndef STRATA_STRBUF_H
#define STRATA_STRBUF_H

#include <stdbool.h>
#include <stddef.h>

typedef struct strbuf {
    char  *data;
    size_t len, cap;
    bool   oom;
} strbuf;

void strbuf_add(strbuf *b, const char *s, size_t n);
void strbuf_puts(strbuf *b, const char *s);
void strbuf_printf(strbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Hands the bytes to the caller (malloc'd, NUL-terminated; "" if empty)
 * and leaves b empty; NULL if an append had failed. */
char *strbuf_take(strbuf *b);
void strbuf_free(strbuf *b);

int err_printf(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#endif
