/* iq3.h: the IQ3 expert container codec (3.0625 bits per weight).
 *
 * Contract. A row of K floats (K % 256 == 0) becomes K/256 blocks of 98 bytes:
 *   bytes 0..63   one ggml iq3xxs_grid index per 4 weights;
 *   bytes 64..95  eight little-endian u32, one per 32 weights: four 7-bit sign
 *                 words (bit i set = weight i negative; the 8th sign of each 8
 *                 is the parity of the 7 stored bits) and the 4-bit sub-scale
 *                 code in bits 28..31;
 *   bytes 96..97  fp16 super-scale d.
 *   value = d * (0.5 + code) * 0.5 * (grid byte / 2) * sign.
 *
 * iq3_encode() refuses K % 256 != 0 and any NaN/Inf (naming row and column)
 * with a one-line message in err and returns -1; it writes nothing then.
 * IQ3_MODE_REFERENCE reproduces seeds/iq3_pack.py encode() byte for byte
 * (importance is ignored there, as the seed does). IQ3_MODE_QUALITY (the
 * default, value 0) writes the same format with a search that minimises the
 * (importance-weighted) squared error actually stored. Output bytes never
 * depend on n_threads or on whether the AVX2 or the scalar path ran.
 * iq3_decode() is exact: it equals the seed's decode floats bit for bit.
 * No global mutable state; every function is safe to call from any thread. */
#ifndef STRATA_IQ3_H
#define STRATA_IQ3_H

#include <stddef.h>
#include <stdint.h>

#define IQ3_QK          256 /* weights per block */
#define IQ3_SUB         32  /* weights per sign/scale word */
#define IQ3_BLOCK_BYTES 98

/* One block as it lies in a row (the layout above). Byte arrays only, so the
 * struct has alignment 1: rows are 98-byte strides from wherever a pack or a
 * test buffer puts them, and a block pointer never promises more. The u32
 * words and the fp16 are little-endian (iq3_block_word, iq3_block_d). */
typedef struct iq3_block {
    uint8_t grid[IQ3_QK / 4];          /* one ggml iq3xxs_grid index per 4 weights */
    uint8_t word[IQ3_QK / IQ3_SUB][4]; /* per 32 weights: 4 x 7 sign bits, scale code in 28..31 */
    uint8_t d[2];                      /* fp16 super-scale */
} iq3_block;
_Static_assert(sizeof(iq3_block) == IQ3_BLOCK_BYTES, "iq3_block is not IQ3_BLOCK_BYTES bytes");

/* Sign/scale word s (0..7) of b. */
static inline uint32_t iq3_block_word(const iq3_block *b, int s)
{
    const uint8_t *p = b->word[s];
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* The fp16 bits of b's super-scale d. */
static inline uint16_t iq3_block_d(const iq3_block *b) { return (uint16_t)(b->d[0] | b->d[1] << 8); }

static inline void iq3_block_set_word(iq3_block *b, int s, uint32_t v)
{
    uint8_t *p = b->word[s];
    p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8); p[2] = (uint8_t)(v >> 16); p[3] = (uint8_t)(v >> 24);
}

static inline void iq3_block_set_d(iq3_block *b, uint16_t h)
{
    b->d[0] = (uint8_t)h;
    b->d[1] = (uint8_t)(h >> 8);
}

typedef enum iq3_mode {
    IQ3_MODE_QUALITY = 0,
    IQ3_MODE_REFERENCE = 1,
} iq3_mode;

typedef struct iq3_encode_opts {
    iq3_mode mode;
    int n_threads;           /* <= 1: the calling thread only */
    const float *importance; /* K non-negative weights per column, or NULL */
    int force_scalar;        /* 1: skip the AVX2 path (tests compare both) */
    /* Quality mode with GPTQ's error feedback (iq3_gptq.c): k x k, row-major,
     * the upper Cholesky factor of the inputs' damped inverse Gram
     * (iq3_gptq_factor); each row's error on those inputs is what the
     * choices minimise. NULL: none. The identity gives quality mode's bytes. */
    const double *gptq_u;
} iq3_encode_opts;

/* Bytes of one encoded row; 0 when k is not a positive multiple of 256. */
size_t iq3_row_bytes(int64_t k);

/* Checks k; on failure writes the seed's message and returns -1. */
int iq3_check_k(int64_t k, char *err, size_t errlen);

/* x: rows*k floats row-major; out: rows*iq3_row_bytes(k) bytes.
 * opts NULL means quality mode, one thread. */
int iq3_encode(const float *x, int64_t rows, int64_t k, const iq3_encode_opts *opts,
               uint8_t *out, char *err, size_t errlen);

/* in: rows*iq3_row_bytes(k) bytes; out: rows*k floats. */
int iq3_decode(const uint8_t *in, int64_t rows, int64_t k, float *out, char *err, size_t errlen);

/* u (k x k doubles) from a Gram of the inputs (k x k floats, as RADGRAM2
 * holds it; any positive scale): H = the Gram, symmetrised, plus damp x its
 * mean diagonal on the diagonal (1 where a column never had input);
 * H^-1 = u^T u, u upper triangular. -1 with one line in err when H is not
 * positive definite even so, or out of memory. O(k^3) time, 2 k^2 doubles. */
int iq3_gptq_factor(const float *gram, int64_t k, double damp, double *u, char *err, size_t errlen);

/* "reference" / "quality" -> mode; -1 when unknown. */
int iq3_mode_parse(const char *s);
const char *iq3_mode_name(iq3_mode m);

#endif
