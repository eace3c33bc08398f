/* utf8.h: the two UTF-8 questions streaming text asks.
 *
 * Tokens end in the middle of characters (byte-fallback tokens carry one
 * byte each), and a JSON string must be valid UTF-8 or jansson refuses it
 * and the client sees nothing. So the generator holds back an incomplete
 * trailing sequence until the next token completes it, and whatever it
 * finally releases is passed through utf8_sanitize().
 *
 * Contract: pure functions, no allocation except utf8_sanitize's result. */
#ifndef STRATA_UTF8_H
#define STRATA_UTF8_H

#include <stddef.h>

/* Length of a well-formed sequence starting at s (1..4), 0 if s[0..len) does
 * not start with one, -1 if it is a valid but truncated prefix. */
int utf8_seq_len(const unsigned char *s, size_t len);

/* How many trailing bytes of s[0..len) are the start of a character that the
 * next bytes may complete (0..3). */
size_t utf8_incomplete_tail(const char *s, size_t len);

/* A copy of s[0..len) with each ill-formed part replaced by one U+FFFD
 * (the longest start of a sequence, else one byte: Unicode's maximal
 * subparts, as browsers and Python decode);
 * NUL-terminated, *outlen excludes the NUL. NULL on out of memory. */
char *utf8_sanitize(const char *s, size_t len, size_t *outlen);

#endif
