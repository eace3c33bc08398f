/* textcur.h: a bounded cursor over a text held in memory, one line at a
 * time, for the runtime's own line formats (the routing profile of
 * runtime/device/expert_cache.h, the routing trace of
 * runtime/model/routing_trace.h), so that each parser checks lengths,
 * numbers and line ends the same way and names the same place.
 *
 * Contract:
 *  - Nothing is read past the end of the text. Every failure writes one
 *    line "<path>:<line>: <problem>" into err and returns -1.
 *  - tc_line() steps to the next line, refusing NUL and CR bytes; at the
 *    end of the text it fails with the message given to tc_init (what a
 *    truncated file means in that format).
 *  - Words are separated by one space (two spaces leave an empty word,
 *    which is "missing"). Numbers are unsigned decimal, at most 20 digits,
 *    checked for overflow and against a caller's limit.
 *  - tc_tail() accepts only empty lines after the last expected one.
 *  - tc_slurp() reads a whole file of at most max bytes (NUL-terminated,
 *    the caller frees it); a larger one is refused as "not WHAT".
 * No allocation except tc_slurp's buffer; no global state. */
#ifndef STRATA_TEXTCUR_H
#define STRATA_TEXTCUR_H

#include <stddef.h>
#include <stdint.h>

typedef struct textcur {
    const char *s, *end, *path;
    int line;
    const char *ls, *le;     /* the rest of the current line */
    const char *eof;         /* the message for a text that ends too soon */
    char *err;
    size_t errlen;
} textcur;

void tc_init(textcur *c, const char *text, size_t len, const char *path, const char *eof, char *err, size_t errlen);
int tc_fail(textcur *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int tc_line(textcur *c);
/* The next word of the line; -1 (no message) at the end of the line. */
int tc_word(textcur *c, const char **w, size_t *n);
int tc_keyword(textcur *c, const char *kw);
/* The next word as a number <= max; `what` names it in the message. */
int tc_u64(textcur *c, const char *what, uint64_t max, uint64_t *out);
/* A number already cut out of the line (w, n). */
int tc_num(textcur *c, const char *w, size_t n, const char *what, uint64_t max, uint64_t *out);
int tc_eol(textcur *c);
/* Only empty lines may follow; anything else is "<what>". */
int tc_tail(textcur *c, const char *what);

int tc_slurp(const char *path, size_t max, const char *what, char **buf, size_t *n, char *err, size_t errlen);

#endif
