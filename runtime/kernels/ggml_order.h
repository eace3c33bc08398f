/* ggml_order.h: ggml-cpu's x86 (AVX2 + FMA) float arithmetic for the
 * element-wise steps of the forward pass, spelled out in scalar C so that
 * every build and table gives the same bits as llama.cpp's CPU backend.
 *
 * Contract:
 *  - ggml_order_expf(x) is ggml_v_expf (ggml-cpu/vec.h, "adapted from arm
 *    limited optimized routine"), lane by lane: within 1.5 ulp of e^x, +inf
 *    above ~88.38, 0 below ~-103.97; not libm's expf.
 *  - ggml_order_silu(x) = x / (1 + ggml_order_expf(0 - x)), as ggml_v_silu.
 *  - ggml_order_hsum8(v) adds 8 floats as ggml's AVX horizontal sums do:
 *    halves, then pairs: ((v0+v4) + (v2+v6)) + ((v1+v5) + (v3+v7)).
 *  - ggml_order_fold32(l) reduces ggml_vec_dot_f32's 32 lanes as its
 *    GGML_F32_VEC_REDUCE does: vectors 0+2, 1+3, then 0+1, then the 8
 *    lanes as (0+4 + 1+5) + (2+6 + 3+7).
 *  - ggml_order_kmins(style, dmin, m, bs, accm, summs) adds one K-quant
 *    super-block's mins (m[8] 6-bit, bs[8] activation sums of 32) times
 *    dmin (= -(activation scale) x dmin) as ggml's x86 dots do: Q5_K
 *    (style 5) one integer sum fused-multiply-added into summs (returned;
 *    ggml's build contracts its summs += dmin * sum, which only rows of
 *    two or more super-blocks show);
 *    Q4_K (style 4) four lanes fused-multiply-added into accm[4], which
 *    ggml_order_kmins_total() folds at the end (summs for style 5).
 *  - ggml_order_softmax(x, n, y) is ggml_vec_soft_max_f32 plus the scaling
 *    of ggml_compute_forward_soft_max_f32: max, e_i = expf(x_i - max) (this
 *    expf for every whole group of 8 from the start, libm's for a tail),
 *    each group's sum by hsum8 added into a double, y_i = e_i * (float)(1 /
 *    sum). -INFINITY entries give 0. A sink (gpt-oss; -INFINITY: none) as
 *    ggml_soft_max_add_sinks: the max taken over it too, expf(sink - max)
 *    added to the sum last. Returns nothing; n >= 1.
 * Everything is pure; no state. */
#ifndef STRATA_GGML_ORDER_H
#define STRATA_GGML_ORDER_H

#include <math.h>
#include <stdint.h>
#include <string.h>

static inline uint32_t ggml_order_bits(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
static inline float ggml_order_float(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }

static inline float ggml_order_expf(float x)
{
    const float r = 0x1.8p23f;
    const float z = fmaf(x, 0x1.715476p+0f, r);
    const float n = z - r;
    const float b = fmaf(-n, 0x1.7f7d1cp-20f, fmaf(-n, 0x1.62e4p-1f, x));
    const uint32_t e = ggml_order_bits(z) << 23;
    const float k = ggml_order_float(e + ggml_order_bits(1.0f));
    const float u = b * b;
    const float j = fmaf(fmaf(fmaf(0x1.0e4020p-7f, b, 0x1.573e2ep-5f), u, fmaf(0x1.555e66p-3f, b, 0x1.fffdb6p-2f)), u,
                         0x1.ffffecp-1f * b);
    if (!(fabsf(n) > 126.0f)) return fmaf(j, k, k);
    const uint32_t g = n <= 0.0f ? 0x82000000u : 0u;
    const float s1 = ggml_order_float(g + 0x7f000000u), s2 = ggml_order_float(e - g);
    if (fabsf(n) > 192.0f) return s1 * s1;
    return fmaf(s2, j, s2) * s1;
}

static inline float ggml_order_silu(float x) { return x / (1.0f + ggml_order_expf(0.0f - x)); }

static inline float ggml_order_hsum8(const float v[8])
{
    return ((v[0] + v[4]) + (v[2] + v[6])) + ((v[1] + v[5]) + (v[3] + v[7]));
}

static inline float ggml_order_fold32(const float l[32])
{
    float v[8];
    for (int k = 0; k < 8; k++) v[k] = (l[k] + l[16 + k]) + (l[8 + k] + l[24 + k]);
    return ((v[0] + v[4]) + (v[1] + v[5])) + ((v[2] + v[6]) + (v[3] + v[7]));
}

static inline float ggml_order_kmins(int style, float dmin, const int8_t m[8], const int32_t bs[8], float accm[4],
                                     float summs)
{
    if (style == 5) {
        int32_t tot = 0;
        for (int j = 0; j < 8; j++) tot += (int32_t)m[j] * bs[j];
        return fmaf(dmin, (float)tot, summs); /* contracted in ggml's build */
    }
    for (int k = 0; k < 4; k++)
        accm[k] = fmaf(dmin, (float)((int32_t)m[2 * k] * bs[2 * k] + (int32_t)m[2 * k + 1] * bs[2 * k + 1]), accm[k]);
    return summs;
}

static inline float ggml_order_kmins_total(int style, const float accm[4], float summs)
{
    return style == 4 ? (accm[0] + accm[2]) + (accm[1] + accm[3]) : summs;
}

static inline void ggml_order_softmax(const float *x, int n, float *y, float sink)
{
    float mx = -INFINITY;
    for (int i = 0; i < n; i++) mx = x[i] > mx ? x[i] : mx;
    mx = sink > mx ? sink : mx;
    double sum = 0.0;
    int i = 0;
    for (; i + 8 <= n; i += 8) {
        for (int k = 0; k < 8; k++) y[i + k] = ggml_order_expf(x[i + k] - mx);
        sum += (double)ggml_order_hsum8(y + i);
    }
    for (; i < n; i++) {
        y[i] = expf(x[i] - mx);
        sum += (double)y[i];
    }
    if (sink != -INFINITY) sum += (double)expf(sink - mx);
    const float inv = (float)(1.0 / sum);
    for (i = 0; i < n; i++) y[i] *= inv;
}

#endif
