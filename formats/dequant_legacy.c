/* dequant_legacy.c: row decoders for the plain float types and the
 * 32/64/128-element blocks with one fp16 scale (Q4_0 ... Q8_0, Q1_0, Q2_0).
 * Operation order follows ggml's reference to_float exactly (ggml_dequant.h). */
#include "ggml_dequant.h"

#include <string.h>

#include "fp16.h"
#include "ggml_blocks.h"

void dequantize_row_f32(const void *src, float *dst, int64_t n)
{
    memcpy(dst, src, (size_t)n * sizeof(float));
}

void dequantize_row_f16(const void *src, float *dst, int64_t n)
{
    fp16_row_to_f32(src, dst, n);
}

void dequantize_row_bf16(const void *src, float *dst, int64_t n)
{
    bf16_row_to_f32(src, dst, n);
}

/* Q4_0: low nibbles are the first half of the block, high nibbles the second. */
void dequantize_row_q4_0(const void *src, float *dst, int64_t n)
{
    const block_q4_0 *x = src;
    for (int64_t i = 0; i < n / QK4_0; i++, dst += QK4_0) {
        const float d = fp16_to_f32(x[i].d);
        for (int j = 0; j < QK4_0 / 2; j++) {
            const int lo = (x[i].qs[j] & 0x0F) - 8;
            const int hi = (x[i].qs[j] >> 4) - 8;
            dst[j] = lo * d;
            dst[j + QK4_0 / 2] = hi * d;
        }
    }
}

/* Q4_1: x*d + m, two roundings (never an fma). */
void dequantize_row_q4_1(const void *src, float *dst, int64_t n)
{
    const block_q4_1 *x = src;
    for (int64_t i = 0; i < n / QK4_1; i++, dst += QK4_1) {
        const float d = fp16_to_f32(x[i].d);
        const float m = fp16_to_f32(x[i].m);
        for (int j = 0; j < QK4_1 / 2; j++) {
            const int lo = x[i].qs[j] & 0x0F;
            const int hi = x[i].qs[j] >> 4;
            dst[j] = lo * d + m;
            dst[j + QK4_1 / 2] = hi * d + m;
        }
    }
}

static uint32_t load_u32le(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* Q5_0/Q5_1: bit j of qh is the fifth bit of weight j (j < 32). */
void dequantize_row_q5_0(const void *src, float *dst, int64_t n)
{
    const block_q5_0 *x = src;
    for (int64_t i = 0; i < n / QK5_0; i++, dst += QK5_0) {
        const float d = fp16_to_f32(x[i].d);
        const uint32_t qh = load_u32le(x[i].qh);
        for (int j = 0; j < QK5_0 / 2; j++) {
            const int h0 = (qh >> j) & 1, h1 = (qh >> (j + QK5_0 / 2)) & 1;
            const int lo = ((x[i].qs[j] & 0x0F) | h0 << 4) - 16;
            const int hi = ((x[i].qs[j] >> 4) | h1 << 4) - 16;
            dst[j] = lo * d;
            dst[j + QK5_0 / 2] = hi * d;
        }
    }
}

void dequantize_row_q5_1(const void *src, float *dst, int64_t n)
{
    const block_q5_1 *x = src;
    for (int64_t i = 0; i < n / QK5_1; i++, dst += QK5_1) {
        const float d = fp16_to_f32(x[i].d);
        const float m = fp16_to_f32(x[i].m);
        const uint32_t qh = load_u32le(x[i].qh);
        for (int j = 0; j < QK5_1 / 2; j++) {
            const int h0 = (qh >> j) & 1, h1 = (qh >> (j + QK5_1 / 2)) & 1;
            const int lo = (x[i].qs[j] & 0x0F) | h0 << 4;
            const int hi = (x[i].qs[j] >> 4) | h1 << 4;
            dst[j] = lo * d + m;
            dst[j + QK5_1 / 2] = hi * d + m;
        }
    }
}

void dequantize_row_q8_0(const void *src, float *dst, int64_t n)
{
    const block_q8_0 *x = src;
    for (int64_t i = 0; i < n / QK8_0; i++, dst += QK8_0) {
        const float d = fp16_to_f32(x[i].d);
        for (int j = 0; j < QK8_0; j++) dst[j] = x[i].qs[j] * d;
    }
}

/* Q1_0: bit set = +d, clear = -d. */
void dequantize_row_q1_0(const void *src, float *dst, int64_t n)
{
    const block_q1_0 *x = src;
    for (int64_t i = 0; i < n / QK1_0; i++, dst += QK1_0) {
        const float d = fp16_to_f32(x[i].d);
        for (int j = 0; j < QK1_0; j++) {
            const int bit = (x[i].qs[j / 8] >> (j % 8)) & 1;
            dst[j] = (2 * bit - 1) * d;
        }
    }
}

/* Q2_0: codes 0..3 mean -1, 0, +1, +2 times d. */
void dequantize_row_q2_0(const void *src, float *dst, int64_t n)
{
    const block_q2_0 *x = src;
    for (int64_t i = 0; i < n / QK2_0; i++, dst += QK2_0) {
        const float d = fp16_to_f32(x[i].d);
        for (int j = 0; j < QK2_0; j++) {
            const int code = (x[i].qs[j / 4] >> (2 * (j % 4))) & 3;
            dst[j] = (code - 1) * d;
        }
    }
}
