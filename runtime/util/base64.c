/* base64.c: see base64.h. */
#include "runtime/util/base64.h"

#include <stdlib.h>

/* 0..63 for the alphabet, 64 for '=', 65 for whitespace, 66 otherwise. */
static int b64_class(unsigned char c)
{
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    if (c == '=') return 64;
    if (c == ' ' || c == '\t' || c == '\r' || c == '\n') return 65;
    return 66;
}

int base64_decode(const char *text, size_t len, uint8_t **out, size_t *out_len)
{
    uint8_t *buf = malloc(len / 4 * 3 + 3);
    if (!buf) return -1;
    size_t n = 0, pad = 0;
    uint32_t acc = 0;
    int have = 0; /* characters of the current group of four */
    for (size_t i = 0; i < len; i++) {
        const int c = b64_class((unsigned char)text[i]);
        if (c == 65) continue;
        if (c == 66 || (c < 64 && pad)) goto bad; /* a stranger, or data after padding */
        if (c == 64) {
            if (have < 2 || ++pad > 2) goto bad;
            continue;
        }
        acc = acc << 6 | (uint32_t)c;
        if (++have == 4) {
            buf[n++] = (uint8_t)(acc >> 16);
            buf[n++] = (uint8_t)(acc >> 8);
            buf[n++] = (uint8_t)acc;
            acc = 0;
            have = 0;
        }
    }
    if (have == 1 || (pad && have + pad != 4)) goto bad;
    if (have == 2) buf[n++] = (uint8_t)(acc >> 4);
    if (have == 3) {
        buf[n++] = (uint8_t)(acc >> 10);
        buf[n++] = (uint8_t)(acc >> 2);
    }
    *out = buf;
    *out_len = n;
    return 0;
bad:
    free(buf);
    return -1;
}
