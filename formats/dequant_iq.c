/* dequant_iq.c: row decoders for the importance-matrix types: the
 * non-linear 4-bit codebooks (IQ4_NL, IQ4_XS) and the lattice-grid types
 * (IQ2_XXS/XS/S, IQ3_XXS/S, IQ1_S/M), whose codes index ggml's grids in
 * ggml_tables.h. Operation order is ggml's (ggml_dequant.h). */
#include "ggml_dequant.h"

#include <string.h>

#include "fp16.h"
#include "ggml_blocks.h"
#include "ggml_tables.h"

#define IQ1S_DELTA 0.125f
#define IQ1M_DELTA 0.125f

/* Lane j of a grid entry (little-endian byte j). */
static inline uint8_t grid8(uint64_t g, int j) { return (uint8_t)(g >> (8 * j)); }
static inline int8_t grid8s(uint64_t g, int j) { return (int8_t)(uint8_t)(g >> (8 * j)); }
static inline uint8_t grid4(uint32_t g, int j) { return (uint8_t)(g >> (8 * j)); }

static inline float sign_of(uint8_t signs, int j) { return (signs & ggml_kmask_iq2xs[j]) ? -1.f : 1.f; }

void dequantize_row_iq4_nl(const void *src, float *dst, int64_t n)
{
    const block_iq4_nl *x = src;
    for (int64_t i = 0; i < n / QK4_NL; i++, dst += QK4_NL) {
        const float d = fp16_to_f32(x[i].d);
        for (int j = 0; j < QK4_NL / 2; j++) {
            dst[j] = d * ggml_kvalues_iq4nl[x[i].qs[j] & 0xF];
            dst[j + QK4_NL / 2] = d * ggml_kvalues_iq4nl[x[i].qs[j] >> 4];
        }
    }
}

/* IQ4_XS: IQ4_NL codes with a 6-bit scale (biased by 32) per 32 weights. */
void dequantize_row_iq4_xs(const void *src, float *dst, int64_t n)
{
    const block_iq4_xs *x = src;
    for (int64_t i = 0; i < n / QK_K; i++) {
        const float d = fp16_to_f32(x[i].d);
        const uint8_t *qs = x[i].qs;
        for (int ib = 0; ib < QK_K / 32; ib++, dst += 32, qs += 16) {
            const int ls = ((x[i].scales_l[ib / 2] >> 4 * (ib % 2)) & 0xF) | (((x[i].scales_h >> 2 * ib) & 3) << 4);
            const float dl = d * (ls - 32);
            for (int j = 0; j < 16; j++) {
                dst[j] = dl * ggml_kvalues_iq4nl[qs[j] & 0xF];
                dst[j + 16] = dl * ggml_kvalues_iq4nl[qs[j] >> 4];
            }
        }
    }
}

/* IQ2_XXS: per 32 weights two u32: four 8-bit grid indices, then four 7-bit
 * sign words and a 4-bit scale in the top nibble. */
void dequantize_row_iq2_xxs(const void *src, float *dst, int64_t n)
{
    const block_iq2_xxs *x = src;
    for (int64_t i = 0; i < n / QK_K; i++) {
        const float d = fp16_to_f32(x[i].d);
        for (int ib = 0; ib < QK_K / 32; ib++) {
            uint8_t idx[4];
            uint32_t meta;
            memcpy(idx, &x[i].qs[4 * ib], 4);
            memcpy(&meta, &x[i].qs[4 * ib + 2], 4);
            const float db = d * (0.5f + (meta >> 28)) * 0.25f;
            for (int l = 0; l < 4; l++, dst += 8) {
                const uint64_t g = ggml_iq2xxs_grid[idx[l]];
                const uint8_t signs = ggml_ksigns_iq2xs[(meta >> 7 * l) & 127];
                for (int j = 0; j < 8; j++) dst[j] = db * grid8(g, j) * sign_of(signs, j);
            }
        }
    }
}

/* IQ2_XS: u16 per 8 weights: 9-bit grid index, 7-bit sign word; two 4-bit
 * scales per 32 weights. */
void dequantize_row_iq2_xs(const void *src, float *dst, int64_t n)
{
    const block_iq2_xs *x = src;
    for (int64_t i = 0; i < n / QK_K; i++) {
        const float d = fp16_to_f32(x[i].d);
        for (int ib = 0; ib < QK_K / 32; ib++) {
            const float db[2] = { d * (0.5f + (x[i].scales[ib] & 0xF)) * 0.25f,
                                  d * (0.5f + (x[i].scales[ib] >> 4)) * 0.25f };
            for (int l = 0; l < 4; l++, dst += 8) {
                const uint16_t q = x[i].qs[4 * ib + l];
                const uint64_t g = ggml_iq2xs_grid[q & 511];
                const uint8_t signs = ggml_ksigns_iq2xs[q >> 9];
                for (int j = 0; j < 8; j++) dst[j] = db[l / 2] * grid8(g, j) * sign_of(signs, j);
            }
        }
    }
}

/* IQ2_S: 10-bit grid index (8 bits in qs, 2 in qh), explicit sign bytes. */
void dequantize_row_iq2_s(const void *src, float *dst, int64_t n)
{
    const block_iq2_s *x = src;
    for (int64_t i = 0; i < n / QK_K; i++) {
        const float d = fp16_to_f32(x[i].d);
        const uint8_t *qs = x[i].qs, *signs = x[i].qs + QK_K / 8;
        for (int ib = 0; ib < QK_K / 32; ib++, qs += 4, signs += 4) {
            const float db[2] = { d * (0.5f + (x[i].scales[ib] & 0xF)) * 0.25f,
                                  d * (0.5f + (x[i].scales[ib] >> 4)) * 0.25f };
            for (int l = 0; l < 4; l++, dst += 8) {
                const int idx = qs[l] | ((x[i].qh[ib] << (8 - 2 * l)) & 0x300);
                const uint64_t g = ggml_iq2s_grid[idx];
                for (int j = 0; j < 8; j++) dst[j] = db[l / 2] * grid8(g, j) * sign_of(signs[l], j);
            }
        }
    }
}

/* IQ3_XXS: 8-bit indices into a 4-lane grid; per 32 weights a u32 of four
 * 7-bit sign words and a 4-bit scale (the IQ3 container's words, DESIGN.md). */
void dequantize_row_iq3_xxs(const void *src, float *dst, int64_t n)
{
    const block_iq3_xxs *x = src;
    for (int64_t i = 0; i < n / QK_K; i++) {
        const float d = fp16_to_f32(x[i].d);
        const uint8_t *qs = x[i].qs, *words = x[i].qs + QK_K / 4;
        for (int ib = 0; ib < QK_K / 32; ib++, qs += 8) {
            uint32_t meta;
            memcpy(&meta, words + 4 * ib, 4);
            const float db = d * (0.5f + (meta >> 28)) * 0.5f;
            for (int l = 0; l < 4; l++, dst += 8) {
                const uint8_t signs = ggml_ksigns_iq2xs[(meta >> 7 * l) & 127];
                const uint32_t g1 = ggml_iq3xxs_grid[qs[2 * l]], g2 = ggml_iq3xxs_grid[qs[2 * l + 1]];
                for (int j = 0; j < 4; j++) {
                    dst[j] = db * grid4(g1, j) * sign_of(signs, j);
                    dst[j + 4] = db * grid4(g2, j) * sign_of(signs, j + 4);
                }
            }
        }
    }
}

/* IQ3_S: 9-bit indices (8 in qs, 1 in qh), explicit signs, a 4-bit odd
 * scale (1 + 2s) per 32 weights. */
void dequantize_row_iq3_s(const void *src, float *dst, int64_t n)
{
    const block_iq3_s *x = src;
    for (int64_t i = 0; i < n / QK_K; i++) {
        const float d = fp16_to_f32(x[i].d);
        const uint8_t *qs = x[i].qs, *signs = x[i].signs;
        for (int ib = 0; ib < QK_K / 32; ib++, qs += 8, signs += 4) {
            const int s = (x[i].scales[ib / 2] >> 4 * (ib % 2)) & 0xF;
            const float db = d * (1 + 2 * s);
            const uint8_t qh = x[i].qh[ib];
            for (int l = 0; l < 4; l++, dst += 8) {
                const uint32_t g1 = ggml_iq3s_grid[qs[2 * l] | ((qh << (8 - 2 * l)) & 256)];
                const uint32_t g2 = ggml_iq3s_grid[qs[2 * l + 1] | ((qh << (7 - 2 * l)) & 256)];
                for (int j = 0; j < 4; j++) {
                    dst[j] = db * grid4(g1, j) * sign_of(signs[l], j);
                    dst[j + 4] = db * grid4(g2, j) * sign_of(signs[l], j + 4);
                }
            }
        }
    }
}

/* IQ1_S: 11-bit indices into a grid of {-1,0,1} lanes, shifted by +-delta,
 * a 3-bit odd scale per 32 weights. */
void dequantize_row_iq1_s(const void *src, float *dst, int64_t n)
{
    const block_iq1_s *x = src;
    for (int64_t i = 0; i < n / QK_K; i++) {
        const float d = fp16_to_f32(x[i].d);
        const uint8_t *qs = x[i].qs;
        for (int ib = 0; ib < QK_K / 32; ib++, qs += 4) {
            const uint16_t qh = x[i].qh[ib];
            const float dl = d * (2 * ((qh >> 12) & 7) + 1);
            const float delta = (qh & 0x8000) ? -IQ1S_DELTA : IQ1S_DELTA;
            for (int l = 0; l < 4; l++, dst += 8) {
                const uint64_t g = ggml_iq1s_grid[qs[l] | (((qh >> 3 * l) & 7) << 8)];
                for (int j = 0; j < 8; j++) dst[j] = dl * (grid8s(g, j) + delta);
            }
        }
    }
}

/* IQ1_M: like IQ1_S with a delta sign per 8 weights and a 3-bit scale per
 * 16; the fp16 super-scale is the top nibbles of the four scale words. */
void dequantize_row_iq1_m(const void *src, float *dst, int64_t n)
{
    const block_iq1_m *x = src;
    for (int64_t i = 0; i < n / QK_K; i++) {
        uint16_t sc[4];
        const float d = fp16_to_f32(block_iq1_m_d(&x[i], sc));
        const uint8_t *qs = x[i].qs, *qh = x[i].qh;
        for (int ib = 0; ib < QK_K / 32; ib++, qs += 4, qh += 2) {
            const float dl[2] = { d * (2 * ((sc[ib / 2] >> (6 * (ib % 2) + 0)) & 7) + 1),
                                  d * (2 * ((sc[ib / 2] >> (6 * (ib % 2) + 3)) & 7) + 1) };
            for (int l = 0; l < 4; l++, dst += 8) {
                const uint8_t h = qh[l / 2];
                const int up = (l % 2) * 4; /* odd groups use the high nibble of qh */
                const int idx = qs[l] | (((h >> up) & 7) << 8);
                const float delta = (h & (0x08 << up)) ? -IQ1M_DELTA : IQ1M_DELTA;
                const uint64_t g = ggml_iq1s_grid[idx];
                for (int j = 0; j < 8; j++) dst[j] = dl[l / 2] * (grid8s(g, j) + delta);
            }
        }
    }
}
