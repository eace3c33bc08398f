/* sha256.h: SHA-256 (FIPS 180-4), incremental.
 *
 * Contract: sha256_init / sha256_update (any number of times, any chunk
 * sizes, including 0) / sha256_final give the same digest as one call over
 * the concatenated input. The context is plain data: copyable, no
 * allocation, no global state, safe from any thread. sha256_hex writes 64
 * lowercase hex digits and a NUL. sha256_file hashes a whole file and
 * returns -1 with errno set on a read error. */
#ifndef STRATA_SHA256_H
#define STRATA_SHA256_H

#include <stddef.h>
#include <stdint.h>

typedef struct sha256_ctx {
    uint32_t h[8];
    uint64_t bytes;          /* total bytes fed so far */
    unsigned char buf[64];   /* a partial block */
    size_t used;             /* bytes held in buf */
} sha256_ctx;

void sha256_init(sha256_ctx *c);
void sha256_update(sha256_ctx *c, const void *data, size_t len);
void sha256_final(sha256_ctx *c, unsigned char out[32]);

void sha256_hex(const unsigned char digest[32], char hex[65]);
int  sha256_file(const char *path, unsigned char out[32]);

#endif
