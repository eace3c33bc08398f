/* kernels.h: the CPU kernel table: vector primitives and one row decoder per
 * weight form (weight.h), in a portable scalar version and an AVX2 version.
 *
 * Contract:
 *  - kernels_scalar() is the reference: plain loops, summed left to right.
 *    kernels_get(1) returns the AVX2 table when the CPU has AVX2+FMA+F16C
 *    (checked at run time; the build uses no -march), else the scalar one;
 *    kernels_get(0) is always scalar. Both tables are const: no global
 *    mutable state; the model stores which one it uses.
 *  - row_f32[form] decodes row r of w into dst[cols]; it is exact in both
 *    tables (the same floats bit for bit). Float sums (dot, axpy) may differ
 *    between tables only by summation order.
 *  - f32_to_f16 rounds to nearest even in both (the KV cache's conversion).
 *  - weight_dot() is y_r = W[r]·x, decoding through `scratch` (cols floats)
 *    for forms without a direct dot. */
#ifndef STRATA_KERNELS_H
#define STRATA_KERNELS_H

#include "runtime/weight.h"

#include <stdint.h>

typedef void (*row_f32_fn)(const weight *w, int64_t r, float *dst);

typedef struct kernels {
    const char *name;
    float (*dot_f32)(const float *a, const float *b, int64_t n);
    float (*dot_f16)(const uint16_t *a, const float *b, int64_t n);
    void (*axpy_f32)(float *y, float a, const float *x, int64_t n);
    void (*axpy_f16)(float *y, float a, const uint16_t *x, int64_t n);
    void (*f16_to_f32)(const uint16_t *src, float *dst, int64_t n);
    void (*f32_to_f16)(const float *src, uint16_t *dst, int64_t n);
    row_f32_fn row_f32[WF_COUNT];
} kernels;

const kernels *kernels_scalar(void);
const kernels *kernels_get(int want_simd);

float weight_dot(const kernels *k, const weight *w, int64_t r, const float *x, float *scratch);

#endif
