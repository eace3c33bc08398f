/* base64.h: standard base64 (RFC 4648, "+/" alphabet) decoding, for the
 * images API requests carry (data: URIs, Anthropic's base64 sources).
 *
 * Contract: base64_decode() takes the text as sent: padding optional,
 * ASCII whitespace ignored (some clients wrap lines), anything else outside
 * the alphabet, padding in the middle, or a last group of one character
 * refused. It returns 0 with a malloc'd buffer of *out_len bytes (never
 * NULL, free it), or -1 with nothing allocated. No global state. */
#ifndef STRATA_BASE64_H
#define STRATA_BASE64_H

#include <stddef.h>
#include <stdint.h>

int base64_decode(const char *text, size_t len, uint8_t **out, size_t *out_len);

#endif
