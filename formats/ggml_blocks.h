/* ggml_blocks.h: the byte layout of every ggml quantized block, declared once.
 *
 * Contract: each struct is ggml-common.h's block for that type, field for
 * field, with its byte size asserted next to it, so a layout mistake fails the
 * build instead of a model. fp16 fields are raw IEEE half bits (uint16_t),
 * decoded with fp16.h; multi-byte fields are little-endian (we run on
 * little-endian hosts only, as ggml files are little-endian). Pointers to a
 * block must honour the struct's alignment (2 bytes, 4 for Q8_K): GGUF tensor
 * data is 32-byte aligned and every row of these types has an even size.
 * Sizes: ggml_types.c's table rows must agree (test_ggml_types checks it). */
#ifndef STRATA_GGML_BLOCKS_H
#define STRATA_GGML_BLOCKS_H

#include <stdint.h>
#include <string.h>

#define QK_K   256 /* super-block of the K-quants and IQ types */
#define QK4_0  32
#define QK4_1  32
#define QK5_0  32
#define QK5_1  32
#define QK8_0  32
#define QK4_NL 32
#define QK_MXFP4 32
#define QK_NVFP4 64
#define QK_NVFP4_SUB 16 /* elements sharing one UE4M3 scale */
#define QK1_0  128
#define QK2_0  64

#define GGML_BLOCK_SIZE(T, BYTES) _Static_assert(sizeof(T) == (BYTES), #T " is not " #BYTES " bytes")

/* ---- legacy blocks: one fp16 scale (and min) per 32 ---------------------- */

typedef struct { uint16_t d; uint8_t qs[QK4_0 / 2]; } block_q4_0;
GGML_BLOCK_SIZE(block_q4_0, 18);

typedef struct { uint16_t d, m; uint8_t qs[QK4_1 / 2]; } block_q4_1;
GGML_BLOCK_SIZE(block_q4_1, 20);

typedef struct { uint16_t d; uint8_t qh[4]; uint8_t qs[QK5_0 / 2]; } block_q5_0;
GGML_BLOCK_SIZE(block_q5_0, 22);

typedef struct { uint16_t d, m; uint8_t qh[4]; uint8_t qs[QK5_1 / 2]; } block_q5_1;
GGML_BLOCK_SIZE(block_q5_1, 24);

typedef struct { uint16_t d; int8_t qs[QK8_0]; } block_q8_0;
GGML_BLOCK_SIZE(block_q8_0, 34);

typedef struct { uint16_t d, s; int8_t qs[QK8_0]; } block_q8_1; /* s = d * sum(qs) */
GGML_BLOCK_SIZE(block_q8_1, 36);

/* Q1_0: one sign bit per weight, LSB first; Q2_0: 2-bit codes, LSB first. */
typedef struct { uint16_t d; uint8_t qs[QK1_0 / 8]; } block_q1_0;
GGML_BLOCK_SIZE(block_q1_0, 18);

typedef struct { uint16_t d; uint8_t qs[QK2_0 / 4]; } block_q2_0;
GGML_BLOCK_SIZE(block_q2_0, 18);

/* ---- K-quants: 256 weights, 6-bit or 4-bit sub-block scales --------------- */

typedef struct {
    uint8_t  scales[QK_K / 16]; /* low nibble scale, high nibble min */
    uint8_t  qs[QK_K / 4];
    uint16_t d, dmin;
} block_q2_K;
GGML_BLOCK_SIZE(block_q2_K, 84);

typedef struct {
    uint8_t  hmask[QK_K / 8];
    uint8_t  qs[QK_K / 4];
    uint8_t  scales[12]; /* sixteen 6-bit scales, biased by 32 */
    uint16_t d;
} block_q3_K;
GGML_BLOCK_SIZE(block_q3_K, 110);

typedef struct {
    uint16_t d, dmin;
    uint8_t  scales[12]; /* eight 6-bit scales and eight 6-bit mins */
    uint8_t  qs[QK_K / 2];
} block_q4_K;
GGML_BLOCK_SIZE(block_q4_K, 144);

typedef struct {
    uint16_t d, dmin;
    uint8_t  scales[12];
    uint8_t  qh[QK_K / 8];
    uint8_t  qs[QK_K / 2];
} block_q5_K;
GGML_BLOCK_SIZE(block_q5_K, 176);

typedef struct {
    uint8_t  ql[QK_K / 2];
    uint8_t  qh[QK_K / 4];
    int8_t   scales[QK_K / 16];
    uint16_t d;
} block_q6_K;
GGML_BLOCK_SIZE(block_q6_K, 210);

typedef struct { float d; int8_t qs[QK_K]; int16_t bsums[QK_K / 16]; } block_q8_K;
GGML_BLOCK_SIZE(block_q8_K, 292);

/* ---- ternary ------------------------------------------------------------- */

typedef struct {
    uint8_t  qs[(QK_K - 4 * QK_K / 64) / 5]; /* five trits per byte */
    uint8_t  qh[QK_K / 64];                  /* four trits per byte */
    uint16_t d;
} block_tq1_0;
GGML_BLOCK_SIZE(block_tq1_0, 54);

typedef struct { uint8_t qs[QK_K / 4]; uint16_t d; } block_tq2_0;
GGML_BLOCK_SIZE(block_tq2_0, 66);

/* ---- IQ grid types ------------------------------------------------------- */

typedef struct { uint16_t d; uint16_t qs[QK_K / 8]; } block_iq2_xxs;
GGML_BLOCK_SIZE(block_iq2_xxs, 66);

typedef struct { uint16_t d; uint16_t qs[QK_K / 8]; uint8_t scales[QK_K / 32]; } block_iq2_xs;
GGML_BLOCK_SIZE(block_iq2_xs, 74);

typedef struct {
    uint16_t d;
    uint8_t  qs[QK_K / 4]; /* 32 grid index bytes, then 32 sign bytes */
    uint8_t  qh[QK_K / 32];
    uint8_t  scales[QK_K / 32];
} block_iq2_s;
GGML_BLOCK_SIZE(block_iq2_s, 82);

/* qs: 64 grid index bytes, then eight u32 of 4x7 sign bits + 4-bit scale. */
typedef struct { uint16_t d; uint8_t qs[3 * QK_K / 8]; } block_iq3_xxs;
GGML_BLOCK_SIZE(block_iq3_xxs, 98);

typedef struct {
    uint16_t d;
    uint8_t  qs[QK_K / 4];
    uint8_t  qh[QK_K / 32];
    uint8_t  signs[QK_K / 8];
    uint8_t  scales[QK_K / 64];
} block_iq3_s;
GGML_BLOCK_SIZE(block_iq3_s, 110);

typedef struct { uint16_t d; uint8_t qs[QK_K / 8]; uint16_t qh[QK_K / 32]; } block_iq1_s;
GGML_BLOCK_SIZE(block_iq1_s, 50);

/* IQ1_M has no d field: its fp16 scale is spread over the top nibbles of the
 * four u16 words in scales[]. */
typedef struct { uint8_t qs[QK_K / 8]; uint8_t qh[QK_K / 16]; uint8_t scales[QK_K / 32]; } block_iq1_m;
GGML_BLOCK_SIZE(block_iq1_m, 56);

/* IQ1_M's four scale words (sc) and its fp16 scale's bits, their top nibbles. */
static inline uint16_t block_iq1_m_d(const block_iq1_m *b, uint16_t sc[4])
{
    memcpy(sc, b->scales, 4 * sizeof sc[0]);
    return (uint16_t)((sc[0] >> 12) | ((sc[1] >> 8) & 0x00F0) | ((sc[2] >> 4) & 0x0F00) | (sc[3] & 0xF000));
}

typedef struct { uint16_t d; uint8_t qs[QK4_NL / 2]; } block_iq4_nl;
GGML_BLOCK_SIZE(block_iq4_nl, 18);

typedef struct {
    uint16_t d;
    uint16_t scales_h;
    uint8_t  scales_l[QK_K / 64];
    uint8_t  qs[QK_K / 2];
} block_iq4_xs;
GGML_BLOCK_SIZE(block_iq4_xs, 136);

/* ---- FP4 microscaling ---------------------------------------------------- */

typedef struct { uint8_t e; uint8_t qs[QK_MXFP4 / 2]; } block_mxfp4; /* e: E8M0 */
GGML_BLOCK_SIZE(block_mxfp4, 17);

typedef struct { uint8_t d[QK_NVFP4 / QK_NVFP4_SUB]; uint8_t qs[QK_NVFP4 / 2]; } block_nvfp4; /* d: UE4M3 */
GGML_BLOCK_SIZE(block_nvfp4, 36);

#endif
