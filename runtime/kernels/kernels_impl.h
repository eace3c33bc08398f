/* kernels_impl.h: what the scalar and AVX2 kernel files share (private to
 * runtime/kernels/kernels*.c). The AVX2 table reuses the scalar decoders for forms
 * it has no faster path for, so "AVX2 equals scalar" is trivially true there. */
#ifndef STRATA_KERNELS_IMPL_H
#define STRATA_KERNELS_IMPL_H

#include "runtime/kernels/kernels.h"

void kscalar_row_p32(const weight *w, int64_t r, float *dst);
void kscalar_row_p16(const weight *w, int64_t r, float *dst);
void kscalar_row_scode(const weight *w, int64_t r, float *dst);
void kscalar_row_ggml(const weight *w, int64_t r, float *dst);
void kscalar_row_iq3(const weight *w, int64_t r, float *dst);

void kscalar_quant_q8_0(const float *x, int64_t n, int8_t *q, float *d, int32_t *sum16);
void kscalar_quant_q8_k(const float *x, int64_t n, int8_t *q, float *d, int32_t *sum16);
float kscalar_qdot_scode(const weight *w, int64_t r, const qrow *a);
float kscalar_qdot_kf(const weight *w, int64_t r, const qrow *a);
float kscalar_qdot_ggml(const weight *w, int64_t r, const qrow *a);
void kscalar_qdotn_ggml(const weight *w, int64_t r, const qrow *a, int nt, float *y, int64_t ystride);
int kq8_ggml_qdot_ok(int ggml_type); /* kscalar_qdot_ggml takes this native type */
void kscalar_qdot4_scode(const weight *w, int64_t r, int64_t stride, const qrow *a, float *y);
void kscalar_qdotn_scode(const weight *w, int64_t r, const qrow *a, int nt, float *y, int64_t ystride);
float kscalar_qdot_iq3(const weight *w, int64_t r, const qrow *a);
void kscalar_qdotn_iq3(const weight *w, int64_t r, const qrow *a, int nt, float *y, int64_t ystride);
void kavx2_quant_q8_0(const float *x, int64_t n, int8_t *q, float *d, int32_t *sum16);
void kavx2_quant_q8_k(const float *x, int64_t n, int8_t *q, float *d, int32_t *sum16);
float kavx2_qdot_scode(const weight *w, int64_t r, const qrow *a);
void kavx2_qdot4_scode(const weight *w, int64_t r, int64_t stride, const qrow *a, float *y);
void kavx2_qdotn_scode(const weight *w, int64_t r, const qrow *a, int nt, float *y, int64_t ystride);
float kavx2_qdot_iq3(const weight *w, int64_t r, const qrow *a);
void kavx2_qdotn_iq3(const weight *w, int64_t r, const qrow *a, int nt, float *y, int64_t ystride);
float kavx2_qdot_ggml(const weight *w, int64_t r, const qrow *a);
void kavx2_qdotn_ggml(const weight *w, int64_t r, const qrow *a, int nt, float *y, int64_t ystride);
void kavx2_qdot4_ggml(const weight *w, int64_t r, int64_t stride, const qrow *a, float *y);
void kavx512_qdot4_ggml(const weight *w, int64_t r, int64_t stride, const qrow *a, float *y);
void kavx512_qdotn_ggml(const weight *w, int64_t r, const qrow *a, int nt, float *y, int64_t ystride);
float kvnni_qdot_scode(const weight *w, int64_t r, const qrow *a);
void kvnni_qdot4_scode(const weight *w, int64_t r, int64_t stride, const qrow *a, float *y);
float kvnni_qdot_iq3(const weight *w, int64_t r, const qrow *a);
float kavx512_qdot_iq3(const weight *w, int64_t r, const qrow *a);
void kavx512_qdotn_iq3(const weight *w, int64_t r, const qrow *a, int nt, float *y, int64_t ystride);
void kavx512_qdot4_scode(const weight *w, int64_t r, int64_t stride, const qrow *a, float *y);
void kavx512v_qdot4_scode(const weight *w, int64_t r, int64_t stride, const qrow *a, float *y);
/* The codebook as int8 when every entry is an integer in [-128, 127]. */
int kq8_codebook_i8(const weight *w, int8_t out[16]);


#endif
