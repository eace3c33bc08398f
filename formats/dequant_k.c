/* dequant_k.c: row decoders for the K-quants (Q2_K ... Q6_K, Q8_K), 256
 * weights per super-block. Each sub-block scale is formed first (d * sc, a
 * rounded float), then multiplied by the code and the min subtracted, which
 * is ggml's order; computing d * (sc * q) instead flips the sign of zeros
 * (Q6_K: (d * sc) * 0 is -0 when sc < 0, d * (sc * 0) is +0 when d > 0). */
#include "ggml_dequant.h"

#include "fp16.h"
#include "ggml_blocks.h"

/* Q2_K: four 2-bit planes per 32 bytes; each 16 weights have a 4-bit scale
 * and a 4-bit min. */
void dequantize_row_q2_K(const void *src, float *dst, int64_t n)
{
    const block_q2_K *x = src;
    for (int64_t i = 0; i < n / QK_K; i++) {
        const float d = fp16_to_f32(x[i].d);
        const float dmin = fp16_to_f32(x[i].dmin);
        const uint8_t *q = x[i].qs;
        int is = 0;
        for (int half = 0; half < 2; half++, q += 32) {
            for (int shift = 0; shift < 8; shift += 2) {
                for (int part = 0; part < 2; part++) {
                    const uint8_t sc = x[i].scales[is++];
                    const float dl = d * (sc & 0xF);
                    const float ml = dmin * (sc >> 4);
                    for (int l = 0; l < 16; l++)
                        *dst++ = dl * ((q[16 * part + l] >> shift) & 3) - ml;
                }
            }
        }
    }
}

/* Q3_K's twelve scale bytes hold sixteen 6-bit values: the low nibbles come
 * from bytes 0..7, the top two bits from bytes 8..11. */
void ggml_q3_K_scales(const uint8_t in[12], int8_t out[16])
{
    for (int k = 0; k < 16; k++) {
        const int lo = (k < 8) ? (in[k] & 0xF) : (in[k - 8] >> 4);
        const int hi = (in[8 + (k % 4)] >> (2 * (k / 4))) & 3;
        out[k] = (int8_t)((lo | hi << 4) - 32);
    }
}

void dequantize_row_q3_K(const void *src, float *dst, int64_t n)
{
    const block_q3_K *x = src;
    for (int64_t i = 0; i < n / QK_K; i++) {
        const float d = fp16_to_f32(x[i].d);
        int8_t scales[16];
        ggml_q3_K_scales(x[i].scales, scales);
        const uint8_t *q = x[i].qs;
        uint8_t m = 1;
        int is = 0;
        for (int half = 0; half < 2; half++, q += 32) {
            for (int shift = 0; shift < 8; shift += 2, m <<= 1) {
                for (int part = 0; part < 2; part++) {
                    const float dl = d * scales[is++];
                    for (int l = 0; l < 16; l++) {
                        const int k = 16 * part + l;
                        const int v = ((q[k] >> shift) & 3) - ((x[i].hmask[k] & m) ? 0 : 4);
                        *dst++ = dl * v;
                    }
                }
            }
        }
    }
}

/* Q4_K/Q5_K: eight 6-bit scales and mins packed in 12 bytes. */
static void scale_min_k4(int j, const uint8_t q[12], int *sc, int *m)
{
    if (j < 4) {
        *sc = q[j] & 63;
        *m = q[j + 4] & 63;
    } else {
        *sc = (q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4);
        *m = (q[j + 4] >> 4) | ((q[j] >> 6) << 4);
    }
}

void dequantize_row_q4_K(const void *src, float *dst, int64_t n)
{
    const block_q4_K *x = src;
    for (int64_t i = 0; i < n / QK_K; i++) {
        const float d = fp16_to_f32(x[i].d);
        const float dmin = fp16_to_f32(x[i].dmin);
        const uint8_t *q = x[i].qs;
        for (int is = 0; is < 8; is += 2, q += 32) {
            int sc, m;
            scale_min_k4(is, x[i].scales, &sc, &m);
            const float d1 = d * sc, m1 = dmin * m;
            scale_min_k4(is + 1, x[i].scales, &sc, &m);
            const float d2 = d * sc, m2 = dmin * m;
            for (int l = 0; l < 32; l++) *dst++ = d1 * (q[l] & 0xF) - m1;
            for (int l = 0; l < 32; l++) *dst++ = d2 * (q[l] >> 4) - m2;
        }
    }
}

void dequantize_row_q5_K(const void *src, float *dst, int64_t n)
{
    const block_q5_K *x = src;
    for (int64_t i = 0; i < n / QK_K; i++) {
        const float d = fp16_to_f32(x[i].d);
        const float dmin = fp16_to_f32(x[i].dmin);
        const uint8_t *ql = x[i].qs, *qh = x[i].qh;
        uint8_t u1 = 1, u2 = 2;
        for (int is = 0; is < 8; is += 2, ql += 32, u1 <<= 2, u2 <<= 2) {
            int sc, m;
            scale_min_k4(is, x[i].scales, &sc, &m);
            const float d1 = d * sc, m1 = dmin * m;
            scale_min_k4(is + 1, x[i].scales, &sc, &m);
            const float d2 = d * sc, m2 = dmin * m;
            for (int l = 0; l < 32; l++) *dst++ = d1 * ((ql[l] & 0xF) + ((qh[l] & u1) ? 16 : 0)) - m1;
            for (int l = 0; l < 32; l++) *dst++ = d2 * ((ql[l] >> 4) + ((qh[l] & u2) ? 16 : 0)) - m2;
        }
    }
}

/* Q6_K: y = (d * scale) * q, with q = 4 low bits from ql, 2 high from qh, -32. */
void dequantize_row_q6_K(const void *src, float *dst, int64_t n)
{
    const block_q6_K *x = src;
    for (int64_t i = 0; i < n / QK_K; i++) {
        const float d = fp16_to_f32(x[i].d);
        const uint8_t *ql = x[i].ql, *qh = x[i].qh;
        const int8_t *sc = x[i].scales;
        for (int half = 0; half < 2; half++, dst += 128, ql += 64, qh += 32, sc += 8) {
            for (int l = 0; l < 32; l++) {
                const int is = l / 16;
                const int q1 = ((ql[l] & 0xF) | ((qh[l] >> 0) & 3) << 4) - 32;
                const int q2 = ((ql[l + 32] & 0xF) | ((qh[l] >> 2) & 3) << 4) - 32;
                const int q3 = ((ql[l] >> 4) | ((qh[l] >> 4) & 3) << 4) - 32;
                const int q4 = ((ql[l + 32] >> 4) | ((qh[l] >> 6) & 3) << 4) - 32;
                dst[l] = d * sc[is] * q1;
                dst[l + 32] = d * sc[is + 2] * q2;
                dst[l + 64] = d * sc[is + 4] * q3;
                dst[l + 96] = d * sc[is + 6] * q4;
            }
        }
    }
}

void dequantize_row_q8_K(const void *src, float *dst, int64_t n)
{
    const block_q8_K *x = src;
    for (int64_t i = 0; i < n / QK_K; i++, dst += QK_K)
        for (int j = 0; j < QK_K; j++) dst[j] = x[i].d * x[i].qs[j];
}
