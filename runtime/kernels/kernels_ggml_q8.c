/* kernels_ggml_q8.c: integer dots for native ggml blocks with quantized
 * activations, in ggml-cpu's x86 (AVX2) order, scalar: one entry per type
 * (qdot_ggml[type], kernel_table.c) that the SIMD layers keep or replace.
 *
 * Each super-block (or Q8_0 block) is summed as ggml's AVX2 vec_dot does:
 * integer products into 8 lanes (lane l = elements 4l..4l+3 of every 32),
 * each weighted by its sub-block's integer scale, the lanes converted to
 * float and fused-multiply-added by d x (activation scale), the lanes'
 * horizontal sum at the end (times the type's constant), plus the mins of
 * Q4_K/Q5_K as ggml adds them. Bits equal llama.cpp's on x86; every S-form
 * these types transcode to gives the same bits through kernels_q8.c. */
#include "runtime/kernels/kernels_impl.h"

#include "formats/fp16.h"
#include "formats/ggml_blocks.h"
#include "formats/ggml_dequant.h"
#include "formats/ggml_tables.h"
#include "formats/ggml_types.h"
#include "runtime/kernels/ggml_order.h"

#include <math.h>
#include <stddef.h>
#include <string.h>

/* lane[(e % 32) / 4] += v[e] * mul[e / 16] * q[e] over 256 elements. */
static void lanes256(const int16_t *v, const int32_t *mul16, const int8_t *q, int32_t lane[8])
{
    for (int e = 0; e < 256; e++) lane[(e % 32) / 4] += (int32_t)v[e] * mul16[e / 16] * q[e];
}

/* One super-block's 8 integer lanes (lanes256) fused-multiply-added into
 * acc by D, as ggml's AVX2 dots end each super-block. */
static void fma_block(float acc[8], float D, const int16_t *v, const int32_t *mul16, const int8_t *q)
{
    int32_t lane[8] = { 0 };
    lanes256(v, mul16, q, lane);
    for (int l = 0; l < 8; l++) acc[l] = fmaf(D, (float)lane[l], acc[l]);
}

/* The super-blocks of a type that sums as fma_block does, with no mins:
 * dec writes block blk's 256 values and 16 integer scales and returns its
 * fp16 d; the row is k x the lanes' horizontal sum (k: the type's constant,
 * 1 for Q6_K, Q3_K and IQ4_XS). */
typedef uint16_t (*block_dec_fn)(const uint8_t *blk, int16_t v[256], int32_t mul16[16]);

static float dot_blocks(const uint8_t *row, int64_t cols, const qrow *a, size_t bsize, block_dec_fn dec, float k)
{
    float acc[8] = { 0 };
    for (int64_t i = 0; i < cols / 256; i++) {
        int16_t v[256];
        int32_t mul16[16];
        const uint16_t dh = dec(row + (size_t)i * bsize, v, mul16);
        fma_block(acc, fp16_to_f32(dh) * a->d[i], v, mul16, a->q + i * 256);
    }
    return k * ggml_order_hsum8(acc);
}

static float dot_q8_0(const uint8_t *row, int64_t cols, const qrow *a)
{
    float acc[8] = { 0 };
    for (int64_t b = 0; b < cols / 32; b++) {
        const block_q8_0 *blk = (const block_q8_0 *)row + b;
        const int8_t *w = blk->qs, *q = a->q + b * 32;
        int32_t lane[8] = { 0 };
        for (int e = 0; e < 32; e++) lane[e / 4] += (int32_t)w[e] * q[e];
        const float d = fp16_to_f32(blk->d) * a->d[b];
        for (int l = 0; l < 8; l++) acc[l] = fmaf(d, (float)lane[l], acc[l]);
    }
    return ggml_order_hsum8(acc);
}

/* get_scale_min_k4 of ggml: the 6-bit scale and min of sub-block j. */
static void scale_min_k4(int j, const uint8_t *s, int32_t *sc, int32_t *m)
{
    if (j < 4) {
        *sc = s[j] & 63;
        *m = s[j + 4] & 63;
    } else {
        *sc = (s[j + 4] & 0xF) | ((s[j - 4] >> 6) << 4);
        *m = (s[j + 4] >> 4) | ((s[j] >> 6) << 4);
    }
}

/* Q4_K (style 4) and Q5_K (style 5): q in 0..15 / 0..31, value d*sc*q - dmin*m. */
static float dot_qk(const uint8_t *row, int64_t cols, const qrow *a, int style)
{
    float acc[8] = { 0 }, accm[4] = { 0 }, summs = 0.0f;
    for (int64_t i = 0; i < cols / 256; i++) {
        const uint8_t *scales, *qh = NULL, *qs;
        uint16_t dh, mh;
        if (style == 4) {
            const block_q4_K *blk = (const block_q4_K *)row + i;
            scales = blk->scales, qs = blk->qs, dh = blk->d, mh = blk->dmin;
        } else {
            const block_q5_K *blk = (const block_q5_K *)row + i;
            scales = blk->scales, qh = blk->qh, qs = blk->qs, dh = blk->d, mh = blk->dmin;
        }
        int16_t v[256];
        for (int j = 0; j < 4; j++)
            for (int l = 0; l < 32; l++) {
                int lo = qs[32 * j + l] & 15, hi = qs[32 * j + l] >> 4;
                if (style == 5) {
                    lo += ((qh[l] >> (2 * j)) & 1) << 4;
                    hi += ((qh[l] >> (2 * j + 1)) & 1) << 4;
                }
                v[64 * j + l] = (int16_t)lo;
                v[64 * j + 32 + l] = (int16_t)hi;
            }
        int32_t sc[8], mul16[16], lane[8] = { 0 }, bs[8];
        int8_t m[8];
        for (int j = 0; j < 8; j++) {
            int32_t mj;
            scale_min_k4(j, scales, &sc[j], &mj);
            m[j] = (int8_t)mj;
            mul16[2 * j] = mul16[2 * j + 1] = sc[j];
            bs[j] = a->sum16[(i * 256 + 32 * j) / 16] + a->sum16[(i * 256 + 32 * j) / 16 + 1];
        }
        lanes256(v, mul16, a->q + i * 256, lane);
        const float yd = a->d[i], D = yd * fp16_to_f32(dh);
        for (int l = 0; l < 8; l++) acc[l] = fmaf(D, (float)lane[l], acc[l]);
        summs = ggml_order_kmins(style, -yd * fp16_to_f32(mh), m, bs, accm, summs);
    }
    return ggml_order_hsum8(acc) + ggml_order_kmins_total(style, accm, summs);
}

static uint16_t dec_q6_k(const uint8_t *b, int16_t v[256], int32_t mul16[16])
{
    const block_q6_K *blk = (const block_q6_K *)b;
    const uint8_t *ql = blk->ql, *qh = blk->qh;
    const int8_t *sc = blk->scales;
    for (int n = 0; n < 2; n++)
        for (int l = 0; l < 32; l++) {
            const uint8_t *L = ql + 64 * n, *H = qh + 32 * n;
            v[128 * n + l] = (int16_t)(((L[l] & 15) | ((H[l] & 3) << 4)) - 32);
            v[128 * n + l + 32] = (int16_t)(((L[l + 32] & 15) | (((H[l] >> 2) & 3) << 4)) - 32);
            v[128 * n + l + 64] = (int16_t)(((L[l] >> 4) | (((H[l] >> 4) & 3) << 4)) - 32);
            v[128 * n + l + 96] = (int16_t)(((L[l + 32] >> 4) | (((H[l] >> 6) & 3) << 4)) - 32);
        }
    for (int k = 0; k < 16; k++) mul16[k] = sc[k];
    return blk->d;
}

/* The 2-bit fields of Q2_K's and Q3_K's 64 code bytes in element order:
 * byte k of half j holds elements 128j + 32l + k at bits 2l. */
static void low2_fields(const uint8_t qs[64], int16_t v[256])
{
    for (int j = 0; j < 2; j++)
        for (int l = 0; l < 4; l++)
            for (int k = 0; k < 32; k++) v[128 * j + 32 * l + k] = (int16_t)((qs[32 * j + k] >> (2 * l)) & 3);
}

/* Q2_K: 2-bit codes, four to a byte (byte k of half j holds elements
 * 128j + 32l + k at bits 2l), a 4-bit scale (low nibble) and min (high)
 * per 16; value d * sc * q - dmin * m. As ggml's AVX2 dot: per super-block
 * first the mins, lane k = m[2k] bs[2k] + m[2k+1] bs[2k+1] (bs: the
 * activation's sums of 16) fused-multiply-added by -dmin x (activation
 * scale), then the scaled products by d x (activation scale), both into the
 * same 8 lanes; their horizontal sum. */
static float dot_q2_k(const uint8_t *row, int64_t cols, const qrow *a)
{
    float acc[8] = { 0 };
    for (int64_t i = 0; i < cols / 256; i++) {
        const block_q2_K *blk = (const block_q2_K *)row + i;
        const float yd = a->d[i], D = yd * fp16_to_f32(blk->d), nd = -yd * fp16_to_f32(blk->dmin);
        const int32_t *bs = a->sum16 + i * 16;
        for (int k = 0; k < 8; k++) {
            const int32_t prod = (blk->scales[2 * k] >> 4) * bs[2 * k] + (blk->scales[2 * k + 1] >> 4) * bs[2 * k + 1];
            acc[k] = fmaf(nd, (float)prod, acc[k]);
        }
        int16_t v[256];
        int32_t mul16[16];
        low2_fields(blk->qs, v);
        for (int g = 0; g < 16; g++) mul16[g] = blk->scales[g] & 15;
        fma_block(acc, D, v, mul16, a->q + i * 256);
    }
    return ggml_order_hsum8(acc);
}

/* Q3_K: the low 2 bits of each code as Q2_K's, the third in hmask (bit
 * 4n + j of byte l for element 128n + 32j + l), value
 * d * (sc - 32) * (low + 4 * high - 4), sc 6-bit per 16; as ggml's AVX2
 * dot: integer lanes, one fused multiply-add by d x (activation scale). */
static uint16_t dec_q3_k(const uint8_t *b, int16_t v[256], int32_t mul16[16])
{
    const block_q3_K *blk = (const block_q3_K *)b;
    low2_fields(blk->qs, v);
    for (int n = 0; n < 2; n++)
        for (int j = 0; j < 4; j++)
            for (int l = 0; l < 32; l++)
                v[128 * n + 32 * j + l] += (int16_t)(4 * ((blk->hmask[l] >> (4 * n + j)) & 1) - 4);
    int8_t sc[16];
    ggml_q3_K_scales(blk->scales, sc);
    for (int g = 0; g < 16; g++) mul16[g] = sc[g];
    return blk->d;
}

/* IQ4_XS: per 32 elements 16 bytes (low nibbles elements 0..15, high
 * 16..31) into the IQ4_NL values, and a 6-bit scale minus 32 (its low 4
 * bits in scales_l, its high 2 in scales_h); value d * (ls - 32) * value;
 * as ggml's AVX2 dot: integer lanes, one fused multiply-add by
 * d x (activation scale). */
static uint16_t dec_iq4_xs(const uint8_t *b, int16_t v[256], int32_t mul16[16])
{
    const block_iq4_xs *blk = (const block_iq4_xs *)b;
    for (int ib = 0; ib < 8; ib++) {
        const int lo = (blk->scales_l[ib / 2] >> (4 * (ib % 2))) & 15, hi = (blk->scales_h >> (2 * ib)) & 3;
        const int ls = (lo | hi << 4) - 32;
        mul16[2 * ib] = mul16[2 * ib + 1] = ls;
        for (int j = 0; j < 16; j++) {
            v[32 * ib + j] = ggml_kvalues_iq4nl[blk->qs[16 * ib + j] & 15];
            v[32 * ib + 16 + j] = ggml_kvalues_iq4nl[blk->qs[16 * ib + j] >> 4];
        }
    }
    return blk->d;
}

/* IQ2_XXS: per 32 elements two words, four grid-index bytes (8 elements
 * each), then four 7-bit sign groups with the 4-bit scale on top; value
 * d * (0.5 + s) * 0.25 * grid * sign. */
static uint16_t dec_iq2_xxs(const uint8_t *b, int16_t v[256], int32_t mul16[16])
{
    const block_iq2_xxs *blk = (const block_iq2_xxs *)b;
    const uint8_t *qs = (const uint8_t *)blk->qs;
    for (int s = 0; s < 8; s++) {
        uint32_t idx, word;
        memcpy(&idx, qs + 8 * s, 4);
        memcpy(&word, qs + 8 * s + 4, 4);
        mul16[2 * s] = mul16[2 * s + 1] = (int32_t)(2 * (word >> 28) + 1);
        for (int k = 0; k < 4; k++) {
            const uint8_t signs = ggml_ksigns_iq2xs[(word >> (7 * k)) & 127];
            const uint64_t gv = ggml_iq2xxs_grid[(idx >> (8 * k)) & 255];
            for (int jj = 0; jj < 8; jj++) {
                const int g = (int)((gv >> (8 * jj)) & 255u);
                v[32 * s + 8 * k + jj] = (int16_t)((signs >> jj & 1) ? -g : g);
            }
        }
    }
    return blk->d;
}

/* IQ3_XXS: 64 grid-index bytes, then 8 words (four 7-bit sign groups, the
 * 4-bit scale on top); value d * (0.5 + s) * 0.5 * grid * sign. */
static uint16_t dec_iq3_xxs(const uint8_t *b, int16_t v[256], int32_t mul16[16])
{
    const block_iq3_xxs *blk = (const block_iq3_xxs *)b;
    const uint8_t *qs = blk->qs;
    for (int s = 0; s < 8; s++) {
        uint32_t word;
        memcpy(&word, qs + 64 + 4 * s, 4);
        mul16[2 * s] = mul16[2 * s + 1] = (int32_t)(2 * (word >> 28) + 1);
        for (int k = 0; k < 4; k++) {
            const uint8_t signs = ggml_ksigns_iq2xs[(word >> (7 * k)) & 127];
            for (int h = 0; h < 2; h++) {
                const uint32_t gv = ggml_iq3xxs_grid[qs[8 * s + 2 * k + h]];
                for (int jj = 0; jj < 4; jj++) {
                    const int e = 8 * k + 4 * h + jj, g = (int)((gv >> (8 * jj)) & 255u);
                    v[32 * s + e] = (int16_t)((signs >> (4 * h + jj) & 1) ? -g : g);
                }
            }
        }
    }
    return blk->d;
}

/* IQ2_S: 32 grid-index bytes, 32 sign bytes, 8 high-bit bytes, 8 scale
 * bytes (two 4-bit scales, one per 16); value d * (0.5 + s) * 0.25 * grid * sign. */
static uint16_t dec_iq2_s(const uint8_t *b, int16_t v[256], int32_t mul16[16])
{
    const block_iq2_s *blk = (const block_iq2_s *)b;
    const uint8_t *qs = blk->qs, *signs = blk->qs + 32, *qh = blk->qh, *sc = blk->scales;
    for (int ib = 0; ib < 8; ib++) {
        mul16[2 * ib] = 2 * (sc[ib] & 15) + 1;
        mul16[2 * ib + 1] = 2 * (sc[ib] >> 4) + 1;
        for (int g = 0; g < 4; g++) {
            const uint64_t gv = ggml_iq2s_grid[qs[ib * 4 + g] | ((qh[ib] << (8 - 2 * g)) & 0x300)];
            const uint8_t sg = signs[ib * 4 + g];
            for (int jj = 0; jj < 8; jj++) {
                const int val = (int)((gv >> (8 * jj)) & 255u);
                v[32 * ib + 8 * g + jj] = (int16_t)((sg >> jj & 1) ? -val : val);
            }
        }
    }
    return blk->d;
}

/* IQ2_XS: per 8 elements one u16, a 9-bit grid index and a 7-bit sign
 * group (ggml_ksigns_iq2xs gives the 8 signs), per 16 a 4-bit scale (low
 * nibble the first 16 of a sub-block of 32); value d * (0.5 + s) * 0.25 *
 * grid * sign. */
static uint16_t dec_iq2_xs(const uint8_t *b, int16_t v[256], int32_t mul16[16])
{
    const block_iq2_xs *blk = (const block_iq2_xs *)b;
    for (int ib = 0; ib < 8; ib++) {
        mul16[2 * ib] = 2 * (blk->scales[ib] & 15) + 1;
        mul16[2 * ib + 1] = 2 * (blk->scales[ib] >> 4) + 1;
        for (int g = 0; g < 4; g++) {
            const uint16_t x = blk->qs[4 * ib + g];
            const uint64_t gv = ggml_iq2xs_grid[x & 511];
            const uint8_t sg = ggml_ksigns_iq2xs[x >> 9];
            for (int jj = 0; jj < 8; jj++) {
                const int val = (int)((gv >> (8 * jj)) & 255u);
                v[32 * ib + 8 * g + jj] = (int16_t)((sg >> jj & 1) ? -val : val);
            }
        }
    }
    return blk->d;
}

/* IQ3_S: per 32 elements eight grid-index bytes with a ninth bit each in
 * qh, four sign bytes, and per 64 a byte of two 4-bit scales (low nibble
 * the first 32); value d * (1 + 2s) * grid * sign. */
static uint16_t dec_iq3_s(const uint8_t *b, int16_t v[256], int32_t mul16[16])
{
    const block_iq3_s *blk = (const block_iq3_s *)b;
    for (int ib = 0; ib < 8; ib++) {
        mul16[2 * ib] = mul16[2 * ib + 1] = 2 * ((blk->scales[ib / 2] >> (4 * (ib % 2))) & 15) + 1;
        for (int k = 0; k < 8; k++) {
            const uint32_t gv = ggml_iq3s_grid[blk->qs[8 * ib + k] | ((blk->qh[ib] << (8 - k)) & 256)];
            const uint8_t sg = blk->signs[4 * ib + k / 2];
            for (int jj = 0; jj < 4; jj++) {
                const int e = 4 * (k % 2) + jj, val = (int)((gv >> (8 * jj)) & 255u);
                v[32 * ib + 4 * k + jj] = (int16_t)((sg >> e & 1) ? -val : val);
            }
        }
    }
    return blk->d;
}

/* IQ1_S and IQ1_M: grid values of -1, 0 or 1 (11-bit indices into
 * ggml_iq1s_grid), each shifted by +-1/8 (the delta), an odd 3-bit scale
 * per 32 (IQ1_S) or 16 (IQ1_M). As ggml's AVX2 dots: the grid part's
 * integer lanes fused-multiply-added by d x (activation scale) as the
 * other types; IQ1_S's delta part one integer per block (the sums of 32
 * of the activation, signed, times the scales), its product by the same
 * factor added into one float (contracted, as ggml's build does), the row
 * hsum + delta x that; IQ1_M's delta part integer lanes (the activation
 * codes, signed, times the scales) into a second set of 8 float lanes,
 * the row hsum(first) + delta x hsum(second). */
static void iq1_grid8(uint64_t g, int16_t *v)
{
    for (int j = 0; j < 8; j++) v[j] = (int16_t)(int8_t)(uint8_t)(g >> (8 * j));
}

static float dot_iq1_s(const uint8_t *row, int64_t cols, const qrow *a)
{
    float acc[8] = { 0 }, acc1 = 0.0f;
    for (int64_t i = 0; i < cols / 256; i++) {
        const block_iq1_s *blk = (const block_iq1_s *)row + i;
        int16_t v[256];
        int32_t mul16[16], sumi1 = 0;
        for (int ib = 0; ib < 8; ib++) {
            const uint16_t qh = blk->qh[ib];
            const int32_t ls = 2 * ((qh >> 12) & 7) + 1;
            mul16[2 * ib] = mul16[2 * ib + 1] = ls;
            for (int l = 0; l < 4; l++)
                iq1_grid8(ggml_iq1s_grid[blk->qs[4 * ib + l] | (((qh >> (3 * l)) & 7) << 8)], v + 32 * ib + 8 * l);
            const int32_t bs = a->sum16[i * 16 + 2 * ib] + a->sum16[i * 16 + 2 * ib + 1];
            sumi1 += bs * ((qh & 0x8000) ? -ls : ls);
        }
        const float D = a->d[i] * fp16_to_f32(blk->d);
        fma_block(acc, D, v, mul16, a->q + i * 256);
        acc1 = fmaf(D, (float)sumi1, acc1);
    }
    return ggml_order_hsum8(acc) + 0.125f * acc1;
}

static float dot_iq1_m(const uint8_t *row, int64_t cols, const qrow *a)
{
    float acc[8] = { 0 }, accd[8] = { 0 };
    for (int64_t i = 0; i < cols / 256; i++) {
        const block_iq1_m *blk = (const block_iq1_m *)row + i;
        uint16_t sc[4];
        const uint16_t dh = block_iq1_m_d(blk, sc);
        int16_t v[256], dv[256];
        int32_t mul16[16];
        for (int ib = 0; ib < 8; ib++) {
            mul16[2 * ib] = 2 * ((sc[ib / 2] >> (6 * (ib % 2))) & 7) + 1;
            mul16[2 * ib + 1] = 2 * ((sc[ib / 2] >> (6 * (ib % 2) + 3)) & 7) + 1;
            for (int l = 0; l < 4; l++) {
                const uint8_t h = blk->qh[2 * ib + l / 2];
                const int up = 4 * (l % 2);
                iq1_grid8(ggml_iq1s_grid[blk->qs[4 * ib + l] | (((h >> up) & 7) << 8)], v + 32 * ib + 8 * l);
                for (int j = 0; j < 8; j++) dv[32 * ib + 8 * l + j] = (int16_t)((h & (0x08 << up)) ? -1 : 1);
            }
        }
        const float D = a->d[i] * fp16_to_f32(dh);
        fma_block(acc, D, v, mul16, a->q + i * 256);
        fma_block(accd, D, dv, mul16, a->q + i * 256);
    }
    return ggml_order_hsum8(acc) + 0.125f * ggml_order_hsum8(accd);
}

/* MXFP4 (gpt-oss's experts) as ggml's AVX2 vec_dot_mxfp4_q8_0: blocks in
 * pairs, the even one fused-multiply-added into one set of 8 lanes and the
 * odd one into another (lane l: elements 4l..4l+3, the low nibbles being
 * elements 0..15, the high ones 16..31), the two sets added lane by lane
 * and summed; a last odd block after that, d x its integer sum. */
static float dot_mxfp4(const uint8_t *row, int64_t cols, const qrow *a)
{
    float acc[2][8] = { { 0 } };
    const int64_t nb = cols / 32;
    int64_t b = 0;
    for (; b < nb; b++) {
        const block_mxfp4 *blk = (const block_mxfp4 *)row + b;
        const int8_t *q = a->q + b * 32;
        int32_t lane[8] = { 0 };
        for (int j = 0; j < 16; j++) {
            lane[j / 4] += (int32_t)ggml_kvalues_fp4[blk->qs[j] & 15] * q[j];
            lane[4 + j / 4] += (int32_t)ggml_kvalues_fp4[blk->qs[j] >> 4] * q[16 + j];
        }
        const float d = a->d[b] * ggml_e8m0_half(blk->e);
        if (b + 1 == nb && nb % 2) { /* the tail, after the pairs' sum */
            float s8[8];
            for (int l = 0; l < 8; l++) s8[l] = acc[0][l] + acc[1][l];
            int32_t sumi = 0;
            for (int l = 0; l < 8; l++) sumi += lane[l];
            return fmaf(d, (float)sumi, ggml_order_hsum8(s8));
        }
        for (int l = 0; l < 8; l++) acc[b % 2][l] = fmaf(d, (float)lane[l], acc[b % 2][l]);
    }
    float s8[8];
    for (int l = 0; l < 8; l++) s8[l] = acc[0][l] + acc[1][l];
    return ggml_order_hsum8(s8);
}

/* Q4_1 and Q5_1 as ggml's AVX2 vec_dot_q4_1_q8_1 / q5_1_q8_1: a block's
 * codes (0..15, or 0..31 with Q5_1's fifth bits from qh; low nibbles are
 * elements 0..15, high ones 16..31) against the activation into 8 integer
 * lanes, fused-multiply-added by d x (activation d), one product, into the
 * row's lanes; the mins as m x (the activation block's s, qrow.s1) fused
 * into one running float in block order; the lanes' sum plus that. */
static float dot_q41(const uint8_t *row, int64_t cols, const qrow *a, int five)
{
    const size_t bsize = five ? sizeof(block_q5_1) : sizeof(block_q4_1);
    float acc[8] = { 0 }, summs = 0.0f;
    for (int64_t b = 0; b < cols / 32; b++) {
        const uint8_t *blk = row + (size_t)b * bsize;
        uint16_t dh, mh;
        uint32_t qh = 0;
        memcpy(&dh, blk, 2);
        memcpy(&mh, blk + 2, 2);
        if (five) memcpy(&qh, blk + 4, 4);
        const uint8_t *qs = blk + (five ? 8 : 4);
        const int8_t *q = a->q + b * 32;
        int32_t lane[8] = { 0 };
        for (int j = 0; j < 16; j++) {
            lane[j / 4] += (int32_t)((qs[j] & 15) | ((qh >> j) & 1) << 4) * q[j];
            lane[4 + j / 4] += (int32_t)((qs[j] >> 4) | ((qh >> (j + 16)) & 1) << 4) * q[j + 16];
        }
        const float D = fp16_to_f32(dh) * a->d[b];
        for (int l = 0; l < 8; l++) acc[l] = fmaf(D, (float)lane[l], acc[l]);
        summs = fmaf(fp16_to_f32(mh), a->s1[b], summs);
    }
    return ggml_order_hsum8(acc) + summs;
}

/* NVFP4 as ggml's AVX2 vec_dot_nvfp4_q8_0: a block of 64 meets two Q8_0
 * activation blocks; each one's 8 integer lanes (lane l: elements 4l..4l+3
 * of its 32; a 16-weight sub-block is 8 code bytes, low nibbles its first
 * 8 weights, high nibbles the next 8) times the sub-block's scale, the
 * activation scale x the halved UE4M3 scale, fused-multiply-added into one
 * set of 8 float lanes, the first block's then the second's. */
static float dot_nvfp4(const uint8_t *row, int64_t cols, const qrow *a)
{
    float acc[8] = { 0 };
    for (int64_t b = 0; b < cols / 64; b++) {
        const block_nvfp4 *blk = (const block_nvfp4 *)row + b;
        for (int h = 0; h < 2; h++) {
            const int8_t *q = a->q + b * 64 + h * 32;
            int32_t lane[8] = { 0 };
            for (int e = 0; e < 32; e++) {
                const int s = 2 * h + e / 16, j = e % 16;
                const uint8_t byte = blk->qs[s * 8 + j % 8];
                lane[e / 4] += (int32_t)ggml_kvalues_fp4[j < 8 ? byte & 15 : byte >> 4] * q[e];
            }
            const float dq = a->d[2 * b + h];
            const float sc[2] = { dq * ggml_ue4m3_half(blk->d[2 * h]), dq * ggml_ue4m3_half(blk->d[2 * h + 1]) };
            for (int l = 0; l < 8; l++) acc[l] = fmaf((float)lane[l], sc[l / 4], acc[l]);
        }
    }
    return ggml_order_hsum8(acc);
}

/* Q1_0 as ggml's AVX2 vec_dot_q1_0_q8_0: a block of 128 signs (bit set +1,
 * clear -1) meets four Q8_0 activation blocks; their 8 integer lanes each
 * (as dot_nvfp4's) times the activation scale are summed in float (the
 * first a product, the next three fused), and that sum is fused-multiply-
 * added by the block's d into the row's lanes. */
static float dot_q1_0(const uint8_t *row, int64_t cols, const qrow *a)
{
    float acc[8] = { 0 };
    for (int64_t b = 0; b < cols / 128; b++) {
        const block_q1_0 *blk = (const block_q1_0 *)row + b;
        float t[8];
        for (int k = 0; k < 4; k++) {
            const int8_t *q = a->q + b * 128 + k * 32;
            int32_t lane[8] = { 0 };
            for (int e = 0; e < 32; e++) {
                const int bit = (blk->qs[4 * k + e / 8] >> (e % 8)) & 1;
                lane[e / 4] += bit ? q[e] : -q[e];
            }
            const float dq = a->d[4 * b + k];
            for (int l = 0; l < 8; l++) t[l] = k ? fmaf(dq, (float)lane[l], t[l]) : dq * (float)lane[l];
        }
        const float d = fp16_to_f32(blk->d);
        for (int l = 0; l < 8; l++) acc[l] = fmaf(d, t[l], acc[l]);
    }
    return ggml_order_hsum8(acc);
}

/* TQ1_0 and TQ2_0 as ggml's AVX2 vec_dot_tq1_0_q8_K / tq2_0_q8_K: the codes
 * t (the weight is (t - 1) d) against the activation into 8 integer lanes
 * (lane l: elements 4l..4l+3 of every 32), the -1 taken off through the
 * activation's 16-element sums as ggml does it, lane l less sums 2l and
 * 2l + 1 (elements 32l..32l+31: the same total, spread its way), then
 * D = d x (activation scale) times each lane fused into the row's lanes.
 * bsize and d_at: the block's size and where its fp16 d lies in it. */
typedef void (*tcodes_fn)(const void *block, uint8_t t[256]);

static float dot_ternary(const uint8_t *row, int64_t cols, const qrow *a, size_t bsize, size_t d_at, tcodes_fn codes)
{
    float acc[8] = { 0 };
    for (int64_t i = 0; i < cols / 256; i++) {
        const uint8_t *blk = row + (size_t)i * bsize;
        uint8_t t[256];
        codes(blk, t);
        const int8_t *q = a->q + i * 256;
        const int32_t *s16 = a->sum16 + i * 16;
        int32_t lane[8] = { 0 };
        for (int e = 0; e < 256; e++) lane[(e % 32) / 4] += (int32_t)t[e] * q[e];
        uint16_t dh;
        memcpy(&dh, blk + d_at, 2);
        const float D = a->d[i] * fp16_to_f32(dh);
        for (int l = 0; l < 8; l++) acc[l] = fmaf((float)(lane[l] - s16[2 * l] - s16[2 * l + 1]), D, acc[l]);
    }
    return ggml_order_hsum8(acc);
}

/* The table's entries (kernel_table.c: qdot_ggml[type]): row r of w. */
static const uint8_t *row_of(const weight *w, int64_t r) { return (const uint8_t *)w->data + (size_t)r * w->row_bytes; }

float kscalar_qdot_q8_0(const weight *w, int64_t r, const qrow *a) { return dot_q8_0(row_of(w, r), w->cols, a); }
float kscalar_qdot_q4_k(const weight *w, int64_t r, const qrow *a) { return dot_qk(row_of(w, r), w->cols, a, 4); }
float kscalar_qdot_q5_k(const weight *w, int64_t r, const qrow *a) { return dot_qk(row_of(w, r), w->cols, a, 5); }
float kscalar_qdot_q2_k(const weight *w, int64_t r, const qrow *a) { return dot_q2_k(row_of(w, r), w->cols, a); }
float kscalar_qdot_mxfp4(const weight *w, int64_t r, const qrow *a) { return dot_mxfp4(row_of(w, r), w->cols, a); }
float kscalar_qdot_iq1_s(const weight *w, int64_t r, const qrow *a) { return dot_iq1_s(row_of(w, r), w->cols, a); }
float kscalar_qdot_iq1_m(const weight *w, int64_t r, const qrow *a) { return dot_iq1_m(row_of(w, r), w->cols, a); }
float kscalar_qdot_nvfp4(const weight *w, int64_t r, const qrow *a) { return dot_nvfp4(row_of(w, r), w->cols, a); }
float kscalar_qdot_q4_1(const weight *w, int64_t r, const qrow *a) { return dot_q41(row_of(w, r), w->cols, a, 0); }
float kscalar_qdot_q5_1(const weight *w, int64_t r, const qrow *a) { return dot_q41(row_of(w, r), w->cols, a, 1); }
float kscalar_qdot_q1_0(const weight *w, int64_t r, const qrow *a) { return dot_q1_0(row_of(w, r), w->cols, a); }
float kscalar_qdot_tq1_0(const weight *w, int64_t r, const qrow *a)
{
    return dot_ternary(row_of(w, r), w->cols, a, sizeof(block_tq1_0), offsetof(block_tq1_0, d), ggml_tq1_0_codes);
}
float kscalar_qdot_tq2_0(const weight *w, int64_t r, const qrow *a)
{
    return dot_ternary(row_of(w, r), w->cols, a, sizeof(block_tq2_0), offsetof(block_tq2_0, d), ggml_tq2_0_codes);
}
/* The types that dot_blocks sums: block, decoder, constant. */
#define BLOCKS_DOT(T, BLK, DEC, K)                                                                              \
    float kscalar_qdot_##T(const weight *w, int64_t r, const qrow *a)                                          \
    {                                                                                                          \
        return dot_blocks(row_of(w, r), w->cols, a, sizeof(BLK), DEC, K);                                      \
    }
BLOCKS_DOT(q3_k, block_q3_K, dec_q3_k, 1.0f)
BLOCKS_DOT(q6_k, block_q6_K, dec_q6_k, 1.0f)
BLOCKS_DOT(iq4_xs, block_iq4_xs, dec_iq4_xs, 1.0f)
BLOCKS_DOT(iq2_xxs, block_iq2_xxs, dec_iq2_xxs, 0.125f)
BLOCKS_DOT(iq2_s, block_iq2_s, dec_iq2_s, 0.125f)
BLOCKS_DOT(iq3_xxs, block_iq3_xxs, dec_iq3_xxs, 0.25f)
BLOCKS_DOT(iq2_xs, block_iq2_xs, dec_iq2_xs, 0.125f)
BLOCKS_DOT(iq3_s, block_iq3_s, dec_iq3_s, 1.0f)

/* One row against nt tokens, one dot per token: the scalar table's qdotn
 * for the types whose SIMD qdotn shares work across tokens (so a batch
 * takes the same path whichever table runs it). */
#define PER_TOKEN_DOTN(T)                                                                                        \
    void kscalar_qdotn_##T(const weight *w, int64_t r, const qrow *a, int nt, float *y, int64_t ystride)         \
    {                                                                                                            \
        for (int t = 0; t < nt; t++) y[t * ystride] = kscalar_qdot_##T(w, r, &a[t]);                             \
    }
PER_TOKEN_DOTN(q2_k)
PER_TOKEN_DOTN(iq2_xxs)
PER_TOKEN_DOTN(iq2_s)
PER_TOKEN_DOTN(mxfp4)
PER_TOKEN_DOTN(iq2_xs)
PER_TOKEN_DOTN(iq3_s)
PER_TOKEN_DOTN(iq1_s)
PER_TOKEN_DOTN(iq1_m)
PER_TOKEN_DOTN(nvfp4)
PER_TOKEN_DOTN(q4_1)
PER_TOKEN_DOTN(q5_1)
PER_TOKEN_DOTN(q1_0)
PER_TOKEN_DOTN(tq1_0)
PER_TOKEN_DOTN(tq2_0)
