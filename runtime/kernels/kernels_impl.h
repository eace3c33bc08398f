/* kernels_impl.h: the kernels' pieces, private to runtime/kernels/. Every
 * primitive, decoder, quantizer and dot is declared here once, with its ISA
 * in its prefix (kscalar_, kavx2_, kvnni_, kavx512_); kernel_table.c is the
 * one file that puts them into tables (the scalar table, and each ISA layer
 * over it), so the files that define them never refer to a table or to one
 * another's ISA, except where a faster kernel falls back to a slower one
 * for rows it does not take. */
#ifndef STRATA_KERNELS_IMPL_H
#define STRATA_KERNELS_IMPL_H

#include "runtime/kernels/kernels.h"
#include "runtime/kernels/kfactor.h"

/* qrow.qnib's order: element j (0..63) of a chunk of 64 is code
 * qnib_src(j) of it. The AVX2 Q4_K dot loads the chunk's 32 code bytes
 * (bytes 0..15 group A = elements 0..31, 16..31 group B; byte b holds
 * elements 2b low and 2b + 1 high) and moves them, by a vpermq of its
 * quarters (0, 2, 1, 3) and a vpshufb in each half (0 1 8 9 2 3 10 11 4 5
 * 12 13 6 7 14 15), so that position u of half h holds byte sb = 8h +
 * 2 (u / 4) + u % 2 of A for u % 4 < 2, of B otherwise. Its low nibbles
 * then meet qnib[0..31], its high ones qnib[32..63]; every 4 bytes are
 * positions 4k..4k+3 (k = 4h + u / 4) of A, then of B: one madd by their
 * scales gives ggml's lane k for both groups. */
static inline int qnib_src(int j)
{
    const int u = j % 16, h = (j % 32) / 16, group = (u / 2) % 2, sb = 8 * h + 2 * (u / 4) + u % 2;
    return group * 32 + 2 * sb + j / 32;
}

/* ---- scalar (kernels.c, kernels_q8.c, kernels_ggml_q8.c) ---- */
float kscalar_dot_f32(const float *a, const float *b, int64_t n);
float kscalar_dot8_f32(const float *a, const float *b, int64_t n);
void kscalar_gemm8_f32(const float *A, int64_t lda, int64_t m, const float *B, int64_t ldb, int64_t n, float *C,
                       int64_t ldc, int64_t k);
float kscalar_dot_f16(const uint16_t *a, const float *b, int64_t n);
void kscalar_swiglu_f32(float *x, const float *g, int64_t n);
void kscalar_softmax_f32(const float *x, int64_t n, float *y, float sink);
void kscalar_axpy_f32(float *y, float a, const float *x, int64_t n);
void kscalar_axpy_f16(float *y, float a, const uint16_t *x, int64_t n);
void kscalar_dot_f16_heads(const uint16_t *const *a, int rows, const float *b, int nb, int64_t n, float *out,
                           int64_t ostride);
void kscalar_axpy_f16_heads(float *y, int ny, const float *w, int64_t wstride, const uint16_t *const *x, int rows,
                            int64_t n);
void kscalar_f16_to_f32(const uint16_t *src, float *dst, int64_t n);
void kscalar_f32_to_f16(const float *src, uint16_t *dst, int64_t n);

void kscalar_row_p32(const weight *w, int64_t r, float *dst);
void kscalar_row_p16(const weight *w, int64_t r, float *dst);
void kscalar_row_scode(const weight *w, int64_t r, float *dst);
void kscalar_row_ggml(const weight *w, int64_t r, float *dst);
void kscalar_row_iq3(const weight *w, int64_t r, float *dst);

void kscalar_quant_q8_0(const float *x, int64_t n, int8_t *q, float *d, int32_t *sum16);
void kscalar_quant_q8_k(const float *x, int64_t n, int8_t *q, float *d, int32_t *sum16);
float kscalar_qdot_scode(const weight *w, int64_t r, const qrow *a);
float kscalar_qdot_kf(const weight *w, int64_t r, const qrow *a);
void kscalar_qdot4_scode(const weight *w, int64_t r, int64_t stride, const qrow *a, float *y);
void kscalar_qdotn_scode(const weight *w, int64_t r, const qrow *a, int nt, float *y, int64_t ystride);
float kscalar_qdot_iq3(const weight *w, int64_t r, const qrow *a);
void kscalar_qdotn_iq3(const weight *w, int64_t r, const qrow *a, int nt, float *y, int64_t ystride);
/* native ggml blocks, one per type (qdot_ggml[type]) */
float kscalar_qdot_q8_0(const weight *w, int64_t r, const qrow *a);
float kscalar_qdot_q4_k(const weight *w, int64_t r, const qrow *a);
float kscalar_qdot_q5_k(const weight *w, int64_t r, const qrow *a);
float kscalar_qdot_q6_k(const weight *w, int64_t r, const qrow *a);
float kscalar_qdot_q2_k(const weight *w, int64_t r, const qrow *a);
float kscalar_qdot_q3_k(const weight *w, int64_t r, const qrow *a);
float kscalar_qdot_iq4_xs(const weight *w, int64_t r, const qrow *a);
float kscalar_qdot_iq2_xxs(const weight *w, int64_t r, const qrow *a);
void kscalar_qdotn_q2_k(const weight *w, int64_t r, const qrow *a, int nt, float *y, int64_t ystride);
void kscalar_qdotn_iq2_xxs(const weight *w, int64_t r, const qrow *a, int nt, float *y, int64_t ystride);
float kscalar_qdot_iq3_xxs(const weight *w, int64_t r, const qrow *a);
float kscalar_qdot_iq2_s(const weight *w, int64_t r, const qrow *a);
float kscalar_qdot_mxfp4(const weight *w, int64_t r, const qrow *a);
void kscalar_qdotn_iq2_s(const weight *w, int64_t r, const qrow *a, int nt, float *y, int64_t ystride);
void kscalar_qdotn_mxfp4(const weight *w, int64_t r, const qrow *a, int nt, float *y, int64_t ystride);
float kscalar_qdot_iq2_xs(const weight *w, int64_t r, const qrow *a);
float kscalar_qdot_iq3_s(const weight *w, int64_t r, const qrow *a);
float kscalar_qdot_iq1_s(const weight *w, int64_t r, const qrow *a);
float kscalar_qdot_iq1_m(const weight *w, int64_t r, const qrow *a);
void kscalar_qdotn_iq2_xs(const weight *w, int64_t r, const qrow *a, int nt, float *y, int64_t ystride);
void kscalar_qdotn_iq3_s(const weight *w, int64_t r, const qrow *a, int nt, float *y, int64_t ystride);
void kscalar_qdotn_iq1_s(const weight *w, int64_t r, const qrow *a, int nt, float *y, int64_t ystride);
void kscalar_qdotn_iq1_m(const weight *w, int64_t r, const qrow *a, int nt, float *y, int64_t ystride);
/* NVFP4, Q1_0 (Q8_0 activations), TQ1_0 and TQ2_0 (Q8_K), Q4_1 and Q5_1 (Q8_1) */
#define GGML_DOT_DECLS(PFX, T)                                                                                   \
    float PFX##_qdot_##T(const weight *w, int64_t r, const qrow *a);                                             \
    void PFX##_qdotn_##T(const weight *w, int64_t r, const qrow *a, int nt, float *y, int64_t ystride);
GGML_DOT_DECLS(kscalar, nvfp4)
GGML_DOT_DECLS(kscalar, q4_1)
GGML_DOT_DECLS(kscalar, q5_1)
GGML_DOT_DECLS(kscalar, q1_0)
GGML_DOT_DECLS(kscalar, tq1_0)
GGML_DOT_DECLS(kscalar, tq2_0)

/* ---- AVX2 + FMA + F16C (kernels_avx2.c, kernels_q8_avx2.c) ---- */
float kavx2_dot_f32(const float *a, const float *b, int64_t n);
float kavx2_dot8_f32(const float *a, const float *b, int64_t n);
void kavx2_gemm8_f32(const float *A, int64_t lda, int64_t m, const float *B, int64_t ldb, int64_t n, float *C,
                     int64_t ldc, int64_t k);
float kavx2_dot_f16(const uint16_t *a, const float *b, int64_t n);
void kavx2_swiglu_f32(float *x, const float *g, int64_t n);
void kavx2_softmax_f32(const float *x, int64_t n, float *y, float sink);
void kavx2_axpy_f32(float *y, float a, const float *x, int64_t n);
void kavx2_axpy_f16(float *y, float a, const uint16_t *x, int64_t n);
void kavx2_dot_f16_heads(const uint16_t *const *a, int rows, const float *b, int nb, int64_t n, float *out,
                         int64_t ostride);
void kavx2_axpy_f16_heads(float *y, int ny, const float *w, int64_t wstride, const uint16_t *const *x, int rows,
                          int64_t n);
void kavx2_f16_to_f32(const uint16_t *src, float *dst, int64_t n);
void kavx2_f32_to_f16(const float *src, uint16_t *dst, int64_t n);
void kavx2_row_p16(const weight *w, int64_t r, float *dst);
void kavx2_row_scode(const weight *w, int64_t r, float *dst);

void kavx2_quant_q8_0(const float *x, int64_t n, int8_t *q, float *d, int32_t *sum16);
void kavx2_quant_q8_k(const float *x, int64_t n, int8_t *q, float *d, int32_t *sum16);
float kavx2_qdot_scode(const weight *w, int64_t r, const qrow *a);
void kavx2_qdot4_scode(const weight *w, int64_t r, int64_t stride, const qrow *a, float *y);
void kavx2_qdotn_scode(const weight *w, int64_t r, const qrow *a, int nt, float *y, int64_t ystride);
float kavx2_qdot_iq3(const weight *w, int64_t r, const qrow *a);
void kavx2_qdotn_iq3(const weight *w, int64_t r, const qrow *a, int nt, float *y, int64_t ystride);
float kavx2_qdot_iq2_s(const weight *w, int64_t r, const qrow *a);
float kavx2_qdot_q2_k(const weight *w, int64_t r, const qrow *a);
float kavx2_qdot_iq2_xxs(const weight *w, int64_t r, const qrow *a);
void kavx2_qdotn_q2_k(const weight *w, int64_t r, const qrow *a, int nt, float *y, int64_t ystride);
void kavx2_qdotn_iq2_xxs(const weight *w, int64_t r, const qrow *a, int nt, float *y, int64_t ystride);
void kavx2_qdotn_iq2_s(const weight *w, int64_t r, const qrow *a, int nt, float *y, int64_t ystride);
float kavx2_qdot_iq2_xs(const weight *w, int64_t r, const qrow *a);
float kavx2_qdot_iq3_s(const weight *w, int64_t r, const qrow *a);
float kavx2_qdot_iq1_s(const weight *w, int64_t r, const qrow *a);
float kavx2_qdot_iq1_m(const weight *w, int64_t r, const qrow *a);
void kavx2_qdotn_iq2_xs(const weight *w, int64_t r, const qrow *a, int nt, float *y, int64_t ystride);
void kavx2_qdotn_iq3_s(const weight *w, int64_t r, const qrow *a, int nt, float *y, int64_t ystride);
void kavx2_qdotn_iq1_s(const weight *w, int64_t r, const qrow *a, int nt, float *y, int64_t ystride);
void kavx2_qdotn_iq1_m(const weight *w, int64_t r, const qrow *a, int nt, float *y, int64_t ystride);
GGML_DOT_DECLS(kavx2, nvfp4)
GGML_DOT_DECLS(kavx2, q4_1)
GGML_DOT_DECLS(kavx2, q5_1)
GGML_DOT_DECLS(kavx2, q1_0)
GGML_DOT_DECLS(kavx2, tq1_0)
GGML_DOT_DECLS(kavx2, tq2_0)
float kavx2_qdot_mxfp4(const weight *w, int64_t r, const qrow *a);
void kavx2_qdot4_mxfp4(const weight *w, int64_t r, int64_t stride, const qrow *a, float *y);
void kavx2_qdotn_mxfp4(const weight *w, int64_t r, const qrow *a, int nt, float *y, int64_t ystride);

/* ---- AVX-VNNI ---- */
float kvnni_qdot_scode(const weight *w, int64_t r, const qrow *a);
void kvnni_qdot4_scode(const weight *w, int64_t r, int64_t stride, const qrow *a, float *y);
float kvnni_qdot_iq3(const weight *w, int64_t r, const qrow *a);

/* ---- AVX-512 (F, BW, VL, VBMI, GFNI; "512" names: AVX-512 VNNI too) ---- */
float kavx512_qdot_iq3(const weight *w, int64_t r, const qrow *a);
void kavx512_dot_f16_heads(const uint16_t *const *a, int rows, const float *b, int nb, int64_t n, float *out,
                           int64_t ostride);
void kavx512_axpy_f16_heads(float *y, int ny, const float *w, int64_t wstride, const uint16_t *const *x, int rows,
                            int64_t n);
float kavx512_qdot_iq2_xs(const weight *w, int64_t r, const qrow *a);
void kavx512_qdotn_iq2_xs(const weight *w, int64_t r, const qrow *a, int nt, float *y, int64_t ystride);
float kavx512_qdot_iq2_s(const weight *w, int64_t r, const qrow *a);
void kavx512_qdotn_iq2_s(const weight *w, int64_t r, const qrow *a, int nt, float *y, int64_t ystride);
float kavx512_qdot_iq3_s(const weight *w, int64_t r, const qrow *a);
void kavx512_qdotn_iq3_s(const weight *w, int64_t r, const qrow *a, int nt, float *y, int64_t ystride);
void kavx512_qdotn_iq3(const weight *w, int64_t r, const qrow *a, int nt, float *y, int64_t ystride);
/* the S8 four-row dot on zmm; other rows to AVX2's (kavx512_) or AVX-VNNI's (kavx512v_) */
void kavx512_qdot4_scode(const weight *w, int64_t r, int64_t stride, const qrow *a, float *y);
void kavx512v_qdot4_scode(const weight *w, int64_t r, int64_t stride, const qrow *a, float *y);
/* the S8 four-row batch kernel (qdot4n); 0 for rows other than Q8_0-shaped S8 */
int kavx512_qdot4n_scode(const weight *w, int64_t r, const qrow *a, int nt, float *y, int64_t ystride);
/* K-quant S-forms with factors against Q8_K (kernels_kq_avx512.c); other
 * rows to AVX2's (kavx512_) or AVX-VNNI's (kavx512v_) S-form kernels.
 * kavx512_qdot4_kq returns 0, computing nothing, for rows it does not take. */
float kavx512_qdot_scode(const weight *w, int64_t r, const qrow *a);
float kavx512v_qdot_scode(const weight *w, int64_t r, const qrow *a);
int kavx512_qdot4_kq(const weight *w, int64_t r, int64_t stride, const qrow *a, float *y);
void kavx512_qdotn_scode(const weight *w, int64_t r, const qrow *a, int nt, float *y, int64_t ystride);
void kavx512_qdot4_mxfp4(const weight *w, int64_t r, int64_t stride, const qrow *a, float *y);
void kavx512_qdotn_mxfp4(const weight *w, int64_t r, const qrow *a, int nt, float *y, int64_t ystride);
GGML_DOT_DECLS(kavx512, nvfp4)
GGML_DOT_DECLS(kavx512v, tq1_0)
GGML_DOT_DECLS(kavx512v, tq2_0)
GGML_DOT_DECLS(kavx512v, q1_0)
float kavx512v_qdot_q4_1(const weight *w, int64_t r, const qrow *a);
float kavx512v_qdot_q5_1(const weight *w, int64_t r, const qrow *a);
/* IQ1_S and IQ1_M single and batch dots with AVX-512 VNNI */
float kavx512v_qdot_iq1_s(const weight *w, int64_t r, const qrow *a);
float kavx512v_qdot_iq1_m(const weight *w, int64_t r, const qrow *a);
void kavx512v_qdotn_iq1_s(const weight *w, int64_t r, const qrow *a, int nt, float *y, int64_t ystride);
void kavx512v_qdotn_iq1_m(const weight *w, int64_t r, const qrow *a, int nt, float *y, int64_t ystride);
float kavx512_qdot_q2_k(const weight *w, int64_t r, const qrow *a);
void kavx512_qdotn_q2_k(const weight *w, int64_t r, const qrow *a, int nt, float *y, int64_t ystride);
float kavx512_qdot_iq2_xxs(const weight *w, int64_t r, const qrow *a);
void kavx512_qdotn_iq2_xxs(const weight *w, int64_t r, const qrow *a, int nt, float *y, int64_t ystride);

#endif
