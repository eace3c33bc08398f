/* sha256.h: SHA-256 (FIPS 180-4), streaming, for the pack's source digest.
 *
 * Contract: init, update any number of times with any lengths, final writes
 * 32 bytes; sha256_hex() renders them as 64 lowercase hex digits + NUL.
 * The context is caller-owned; no global state. */
#ifndef STRATA_SHA256_H
#define STRATA_SHA256_H

#include <stddef.h>
#include <stdint.h>

typedef struct sha256_ctx {
    uint32_t h[8];
    uint64_t total;
    uint8_t  buf[64];
    size_t   fill;
} sha256_ctx;

void sha256_init(sha256_ctx *c);
void sha256_update(sha256_ctx *c, const void *data, size_t n);
void sha256_final(sha256_ctx *c, uint8_t out[32]);
void sha256_hex(const uint8_t digest[32], char out[65]);

#endif
