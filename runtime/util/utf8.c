/* utf8.c: see utf8.h. Follows the Unicode well-formed table (no overlongs,
 * no surrogates, nothing above U+10FFFF) because that is what jansson
 * checks when it serialises our text. */
#include "runtime/util/utf8.h"

#include <stdlib.h>
#include <string.h>

int utf8_seq_len(const unsigned char *s, size_t len)
{
    if (len == 0) return 0;
    unsigned c = s[0];
    int need;
    unsigned lo = 0x80, hi = 0xBF;
    if (c < 0x80) return 1;
    if (c >= 0xC2 && c <= 0xDF) need = 1;
    else if (c >= 0xE0 && c <= 0xEF) {
        need = 2;
        if (c == 0xE0) lo = 0xA0;
        if (c == 0xED) hi = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
        need = 3;
        if (c == 0xF0) lo = 0x90;
        if (c == 0xF4) hi = 0x8F;
    } else return 0;
    for (int i = 1; i <= need; i++) {
        if ((size_t)i >= len) return -1;
        unsigned b = s[i];
        unsigned l = i == 1 ? lo : 0x80, h = i == 1 ? hi : 0xBF;
        if (b < l || b > h) return 0;
    }
    return need + 1;
}

size_t utf8_incomplete_tail(const char *s, size_t len)
{
    const unsigned char *u = (const unsigned char *)s;
    for (size_t k = 1; k <= 3 && k <= len; k++) {
        unsigned c = u[len - k];
        if ((c & 0xC0) == 0x80) continue; /* a continuation byte: look further back */
        return utf8_seq_len(u + len - k, k) == -1 ? k : 0;
    }
    return 0;
}

/* The bytes one U+FFFD stands for at an ill-formed s: the longest start of
 * a well-formed sequence there (Unicode's "maximal subpart", as WHATWG's
 * and Python's decoders replace), at least 1. */
static size_t maximal_subpart(const unsigned char *s, size_t len)
{
    size_t k = 1;
    while (k < len && k < 4 && utf8_seq_len(s, k + 1) == -1) k++;
    return k;
}

char *utf8_sanitize(const char *s, size_t len, size_t *outlen)
{
    /* each bad byte grows to 3 bytes at most */
    if (len > ((size_t)-1 - 1) / 3) return NULL;
    char *out = malloc(len * 3 + 1);
    if (!out) return NULL;
    const unsigned char *u = (const unsigned char *)s;
    size_t o = 0;
    for (size_t i = 0; i < len;) {
        int n = utf8_seq_len(u + i, len - i);
        if (n > 0) {
            memcpy(out + o, u + i, (size_t)n);
            o += (size_t)n;
            i += (size_t)n;
        } else {
            memcpy(out + o, "\xEF\xBF\xBD", 3);
            o += 3;
            i += utf8_seq_len(u + i, 1) == -1 ? maximal_subpart(u + i, len - i) : 1;
        }
    }
    out[o] = 0;
    if (outlen) *outlen = o;
    return out;
}
