/* kernel_table.c: the one place that builds the CPU kernel tables
 * (kernels.h) and picks one for the CPU at run time.
 *
 * The scalar table is the base; each ISA is a layer of the slots it
 * implements, written over the layers beneath it (designated initialisers,
 * the later one for a slot winning), so a slot an ISA has no kernel for
 * keeps the one beneath:
 *
 *   scalar   the reference of every slot (kernels.c, kernels_q8.c,
 *            kernels_ggml_q8.c)
 *   AVX2     (+FMA, F16C) primitives, decoders, quantizers, S-form, IQ3,
 *            Q2_K, IQ2_XXS, IQ2_XS, IQ2_S, IQ3_S, IQ1_S, IQ1_M, MXFP4, NVFP4,
 *            Q1_0, TQ1_0, TQ2_0, Q4_1 and Q5_1 dots
 *   VNNI     (AVX-VNNI) the Q8_0-shaped S-form dots and the IQ3 dot
 *   AVX512   (F, BW, VL, VBMI, GFNI) the IQ3, Q2_K, IQ2_XXS, IQ2_XS, IQ2_S
 *            and IQ3_S dots, the f16 attention's two kernels
 *   VNNI512  (AVX-512 VNNI) the four-row S8 and MXFP4 dots, the NVFP4, Q1_0,
 *            TQ1_0, TQ2_0, IQ1_S and IQ1_M dots, the Q4_1 and Q5_1 single
 *            dots, the MXFP4 batch dot
 *
 * Every layer computes its slot's result bit for bit as the one beneath
 * (test_kernels runs every table the CPU has against the scalar one), so
 * which table runs never changes a logit. The native ggml types' slots are
 * the per-type arrays; qdot[WF_GGML], qdot4[WF_GGML] and qdotn[WF_GGML] of
 * each table look the weight's type up in that table's arrays. This file
 * is also the one place where a ggml type meets its CPU kernel. */
#include "runtime/kernels/kernels_impl.h"

#include <stdio.h>
#include <string.h>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define KT_X86 1
#include <cpuid.h>
#endif

/* ---------------------------------------------------------------- layers */

#define SCALAR_LAYER                                                                                    \
    .name = "scalar", .dot_f32 = kscalar_dot_f32, .dot8_f32 = kscalar_dot8_f32,                         \
    .gemm8_f32 = kscalar_gemm8_f32, .swiglu_f32 = kscalar_swiglu_f32, .softmax_f32 = kscalar_softmax_f32, \
    .dot_f16 = kscalar_dot_f16, .axpy_f32 = kscalar_axpy_f32, .axpy_f16 = kscalar_axpy_f16,             \
    .dot_f16_heads = kscalar_dot_f16_heads, .axpy_f16_heads = kscalar_axpy_f16_heads,                   \
    .f16_to_f32 = kscalar_f16_to_f32, .f32_to_f16 = kscalar_f32_to_f16,                                 \
    .row_f32[WF_P32] = kscalar_row_p32, .row_f32[WF_P16] = kscalar_row_p16,                             \
    .row_f32[WF_SCODE] = kscalar_row_scode, .row_f32[WF_GGML] = kscalar_row_ggml,                       \
    .row_f32[WF_IQ3] = kscalar_row_iq3,                                                                 \
    .quant_q8[WA_Q8_0] = kscalar_quant_q8_0, .quant_q8[WA_Q8_K] = kscalar_quant_q8_k,                   \
    .qdot[WF_SCODE] = kscalar_qdot_scode, .qdot4[WF_SCODE] = kscalar_qdot4_scode,                       \
    .qdotn[WF_SCODE] = kscalar_qdotn_scode,                                                             \
    .qdot[WF_IQ3] = kscalar_qdot_iq3, .qdotn[WF_IQ3] = kscalar_qdotn_iq3,                               \
    .qdot_ggml[GGML_TYPE_Q8_0] = kscalar_qdot_q8_0, .qdot_ggml[GGML_TYPE_Q4_K] = kscalar_qdot_q4_k,     \
    .qdot_ggml[GGML_TYPE_Q5_K] = kscalar_qdot_q5_k, .qdot_ggml[GGML_TYPE_Q6_K] = kscalar_qdot_q6_k,     \
    .qdot_ggml[GGML_TYPE_IQ3_XXS] = kscalar_qdot_iq3_xxs,                                               \
    .qdot_ggml[GGML_TYPE_Q2_K] = kscalar_qdot_q2_k, .qdotn_ggml[GGML_TYPE_Q2_K] = kscalar_qdotn_q2_k,    \
    .qdot_ggml[GGML_TYPE_Q3_K] = kscalar_qdot_q3_k, .qdot_ggml[GGML_TYPE_IQ4_XS] = kscalar_qdot_iq4_xs,  \
    .qdot_ggml[GGML_TYPE_IQ2_XXS] = kscalar_qdot_iq2_xxs,                                               \
    .qdotn_ggml[GGML_TYPE_IQ2_XXS] = kscalar_qdotn_iq2_xxs,                                             \
    .qdot_ggml[GGML_TYPE_IQ2_S] = kscalar_qdot_iq2_s, .qdotn_ggml[GGML_TYPE_IQ2_S] = kscalar_qdotn_iq2_s, \
    .qdot_ggml[GGML_TYPE_MXFP4] = kscalar_qdot_mxfp4, .qdotn_ggml[GGML_TYPE_MXFP4] = kscalar_qdotn_mxfp4, \
    .qdot_ggml[GGML_TYPE_IQ2_XS] = kscalar_qdot_iq2_xs, .qdotn_ggml[GGML_TYPE_IQ2_XS] = kscalar_qdotn_iq2_xs, \
    .qdot_ggml[GGML_TYPE_IQ3_S] = kscalar_qdot_iq3_s, .qdotn_ggml[GGML_TYPE_IQ3_S] = kscalar_qdotn_iq3_s,    \
    .qdot_ggml[GGML_TYPE_IQ1_S] = kscalar_qdot_iq1_s, .qdotn_ggml[GGML_TYPE_IQ1_S] = kscalar_qdotn_iq1_s,    \
    .qdot_ggml[GGML_TYPE_IQ1_M] = kscalar_qdot_iq1_m, .qdotn_ggml[GGML_TYPE_IQ1_M] = kscalar_qdotn_iq1_m,    \
    .qdot_ggml[GGML_TYPE_NVFP4] = kscalar_qdot_nvfp4, .qdotn_ggml[GGML_TYPE_NVFP4] = kscalar_qdotn_nvfp4,    \
    .qdot_ggml[GGML_TYPE_Q1_0] = kscalar_qdot_q1_0, .qdotn_ggml[GGML_TYPE_Q1_0] = kscalar_qdotn_q1_0,        \
    .qdot_ggml[GGML_TYPE_TQ1_0] = kscalar_qdot_tq1_0, .qdotn_ggml[GGML_TYPE_TQ1_0] = kscalar_qdotn_tq1_0,    \
    .qdot_ggml[GGML_TYPE_TQ2_0] = kscalar_qdot_tq2_0, .qdotn_ggml[GGML_TYPE_TQ2_0] = kscalar_qdotn_tq2_0,    \
    .qdot_ggml[GGML_TYPE_Q4_1] = kscalar_qdot_q4_1, .qdotn_ggml[GGML_TYPE_Q4_1] = kscalar_qdotn_q4_1,        \
    .qdot_ggml[GGML_TYPE_Q5_1] = kscalar_qdot_q5_1, .qdotn_ggml[GGML_TYPE_Q5_1] = kscalar_qdotn_q5_1,

#define AVX2_LAYER                                                                                      \
    .dot_f32 = kavx2_dot_f32, .dot8_f32 = kavx2_dot8_f32, .gemm8_f32 = kavx2_gemm8_f32,                 \
    .swiglu_f32 = kavx2_swiglu_f32, .softmax_f32 = kavx2_softmax_f32, .dot_f16 = kavx2_dot_f16,         \
    .axpy_f32 = kavx2_axpy_f32, .axpy_f16 = kavx2_axpy_f16, .f16_to_f32 = kavx2_f16_to_f32,             \
    .dot_f16_heads = kavx2_dot_f16_heads, .axpy_f16_heads = kavx2_axpy_f16_heads,                       \
    .f32_to_f16 = kavx2_f32_to_f16,                                                                     \
    .row_f32[WF_P16] = kavx2_row_p16, .row_f32[WF_SCODE] = kavx2_row_scode,                             \
    .quant_q8[WA_Q8_0] = kavx2_quant_q8_0, .quant_q8[WA_Q8_K] = kavx2_quant_q8_k,                       \
    .qdot[WF_SCODE] = kavx2_qdot_scode, .qdot4[WF_SCODE] = kavx2_qdot4_scode,                           \
    .qdotn[WF_SCODE] = kavx2_qdotn_scode, .reads_qnib = 1,                                              \
    .qdot[WF_IQ3] = kavx2_qdot_iq3, .qdotn[WF_IQ3] = kavx2_qdotn_iq3,                                   \
    .qdot_ggml[GGML_TYPE_IQ2_S] = kavx2_qdot_iq2_s, .qdotn_ggml[GGML_TYPE_IQ2_S] = kavx2_qdotn_iq2_s,    \
    .qdot_ggml[GGML_TYPE_Q2_K] = kavx2_qdot_q2_k, .qdotn_ggml[GGML_TYPE_Q2_K] = kavx2_qdotn_q2_k,        \
    .qdot_ggml[GGML_TYPE_IQ2_XXS] = kavx2_qdot_iq2_xxs, .qdotn_ggml[GGML_TYPE_IQ2_XXS] = kavx2_qdotn_iq2_xxs, \
    .qdot_ggml[GGML_TYPE_IQ2_XS] = kavx2_qdot_iq2_xs, .qdotn_ggml[GGML_TYPE_IQ2_XS] = kavx2_qdotn_iq2_xs,    \
    .qdot_ggml[GGML_TYPE_IQ3_S] = kavx2_qdot_iq3_s, .qdotn_ggml[GGML_TYPE_IQ3_S] = kavx2_qdotn_iq3_s,        \
    .qdot_ggml[GGML_TYPE_IQ1_S] = kavx2_qdot_iq1_s, .qdotn_ggml[GGML_TYPE_IQ1_S] = kavx2_qdotn_iq1_s,        \
    .qdot_ggml[GGML_TYPE_IQ1_M] = kavx2_qdot_iq1_m, .qdotn_ggml[GGML_TYPE_IQ1_M] = kavx2_qdotn_iq1_m,        \
    .qdot_ggml[GGML_TYPE_MXFP4] = kavx2_qdot_mxfp4, .qdot4_ggml[GGML_TYPE_MXFP4] = kavx2_qdot4_mxfp4,    \
    .qdotn_ggml[GGML_TYPE_MXFP4] = kavx2_qdotn_mxfp4,                                                   \
    .qdot_ggml[GGML_TYPE_NVFP4] = kavx2_qdot_nvfp4, .qdotn_ggml[GGML_TYPE_NVFP4] = kavx2_qdotn_nvfp4,    \
    .qdot_ggml[GGML_TYPE_Q1_0] = kavx2_qdot_q1_0, .qdotn_ggml[GGML_TYPE_Q1_0] = kavx2_qdotn_q1_0,        \
    .qdot_ggml[GGML_TYPE_TQ1_0] = kavx2_qdot_tq1_0, .qdotn_ggml[GGML_TYPE_TQ1_0] = kavx2_qdotn_tq1_0,    \
    .qdot_ggml[GGML_TYPE_TQ2_0] = kavx2_qdot_tq2_0, .qdotn_ggml[GGML_TYPE_TQ2_0] = kavx2_qdotn_tq2_0,    \
    .qdot_ggml[GGML_TYPE_Q4_1] = kavx2_qdot_q4_1, .qdotn_ggml[GGML_TYPE_Q4_1] = kavx2_qdotn_q4_1,        \
    .qdot_ggml[GGML_TYPE_Q5_1] = kavx2_qdot_q5_1, .qdotn_ggml[GGML_TYPE_Q5_1] = kavx2_qdotn_q5_1,

#define VNNI_LAYER                                                                                      \
    .qdot[WF_SCODE] = kvnni_qdot_scode, .qdot4[WF_SCODE] = kvnni_qdot4_scode, .qdot[WF_IQ3] = kvnni_qdot_iq3,

#define AVX512_LAYER                                                                                    \
    .dot_f16_heads = kavx512_dot_f16_heads, .axpy_f16_heads = kavx512_axpy_f16_heads,                   \
    .qdot_ggml[GGML_TYPE_IQ2_XS] = kavx512_qdot_iq2_xs, .qdotn_ggml[GGML_TYPE_IQ2_XS] = kavx512_qdotn_iq2_xs, \
    .qdot_ggml[GGML_TYPE_IQ2_S] = kavx512_qdot_iq2_s, .qdotn_ggml[GGML_TYPE_IQ2_S] = kavx512_qdotn_iq2_s,    \
    .qdot_ggml[GGML_TYPE_IQ3_S] = kavx512_qdot_iq3_s, .qdotn_ggml[GGML_TYPE_IQ3_S] = kavx512_qdotn_iq3_s,    \
    .qdot[WF_IQ3] = kavx512_qdot_iq3, .qdotn[WF_IQ3] = kavx512_qdotn_iq3,                               \
    .qdot_ggml[GGML_TYPE_Q2_K] = kavx512_qdot_q2_k, .qdotn_ggml[GGML_TYPE_Q2_K] = kavx512_qdotn_q2_k,    \
    .qdot_ggml[GGML_TYPE_IQ2_XXS] = kavx512_qdot_iq2_xxs, .qdotn_ggml[GGML_TYPE_IQ2_XXS] = kavx512_qdotn_iq2_xxs,

#define VNNI512_GGML                                                                                    \
    .qdot4_ggml[GGML_TYPE_MXFP4] = kavx512_qdot4_mxfp4, .qdotn_ggml[GGML_TYPE_MXFP4] = kavx512_qdotn_mxfp4, \
    .qdot_ggml[GGML_TYPE_IQ1_S] = kavx512v_qdot_iq1_s, .qdotn_ggml[GGML_TYPE_IQ1_S] = kavx512v_qdotn_iq1_s,    \
    .qdot_ggml[GGML_TYPE_IQ1_M] = kavx512v_qdot_iq1_m, .qdotn_ggml[GGML_TYPE_IQ1_M] = kavx512v_qdotn_iq1_m,    \
    .qdot_ggml[GGML_TYPE_NVFP4] = kavx512_qdot_nvfp4, .qdotn_ggml[GGML_TYPE_NVFP4] = kavx512_qdotn_nvfp4,    \
    .qdot_ggml[GGML_TYPE_TQ1_0] = kavx512v_qdot_tq1_0, .qdotn_ggml[GGML_TYPE_TQ1_0] = kavx512v_qdotn_tq1_0,    \
    .qdot_ggml[GGML_TYPE_TQ2_0] = kavx512v_qdot_tq2_0, .qdotn_ggml[GGML_TYPE_TQ2_0] = kavx512v_qdotn_tq2_0,    \
    .qdot_ggml[GGML_TYPE_Q1_0] = kavx512v_qdot_q1_0, .qdotn_ggml[GGML_TYPE_Q1_0] = kavx512v_qdotn_q1_0,    \
    .qdot_ggml[GGML_TYPE_Q4_1] = kavx512v_qdot_q4_1, .qdot_ggml[GGML_TYPE_Q5_1] = kavx512v_qdot_q5_1,
/* Its S8 four-row kernel and its K-quant kernels (kernels_kq_avx512.c) hand
 * the rows they do not take to the S-form kernels beneath: AVX2's, or
 * AVX-VNNI's where that layer is there. */
#define VNNI512_LAYER                                                                                   \
    .qdot[WF_SCODE] = kavx512_qdot_scode, .qdot4[WF_SCODE] = kavx512_qdot4_scode,                       \
    .qdotn[WF_SCODE] = kavx512_qdotn_scode, .qdot4n[WF_SCODE] = kavx512_qdot4n_scode, .reads_split = 1, \
    .reads_qnib = 0,                                                                                    \
    VNNI512_GGML
#define VNNI512_OVER_VNNI_LAYER                                                                         \
    .qdot[WF_SCODE] = kavx512v_qdot_scode, .qdot4[WF_SCODE] = kavx512v_qdot4_scode,                     \
    .qdotn[WF_SCODE] = kavx512_qdotn_scode, .qdot4n[WF_SCODE] = kavx512_qdot4n_scode, .reads_split = 1, \
    .reads_qnib = 0,                                                                                    \
    VNNI512_GGML

/* ------------------------------------------------- native ggml dispatch */

/* The form-level WF_GGML slots of table T: the weight's type's slot in T,
 * and where T has no such kernel for the type, its single dot four times
 * or once per token (the same bits: a qdot4 or qdotn is its qdot's). A type
 * without a dot gives 0 (kernels_qdot_ok keeps such weights away). */
static float native_qdot(const kernels *k, const weight *w, int64_t r, const qrow *a)
{
    const qdot_fn f = k->qdot_ggml[w->ggml_type];
    return f ? f(w, r, a) : 0.0f;
}

static void native_qdot4(const kernels *k, const weight *w, int64_t r, int64_t stride, const qrow *a, float *y)
{
    if (k->qdot4_ggml[w->ggml_type]) { k->qdot4_ggml[w->ggml_type](w, r, stride, a, y); return; }
    for (int i = 0; i < 4; i++) y[i * stride] = native_qdot(k, w, r + i * stride, a);
}

static void native_qdotn(const kernels *k, const weight *w, int64_t r, const qrow *a, int nt, float *y,
                         int64_t ystride)
{
    if (k->qdotn_ggml[w->ggml_type]) { k->qdotn_ggml[w->ggml_type](w, r, a, nt, y, ystride); return; }
    for (int t = 0; t < nt; t++) y[t * ystride] = native_qdot(k, w, r, &a[t]);
}

/* Table T's WF_GGML entries, T##_qdot and T##_qdotn (and T##_qdot4 for the
 * SIMD tables; the scalar one has no four-row entry, so a mat-vec takes
 * its native rows one by one), which close over T. */
#define NATIVE_ENTRIES(T)                                                                               \
    static const kernels T;                                                                             \
    static float T##_qdot(const weight *w, int64_t r, const qrow *a) { return native_qdot(&T, w, r, a); } \
    static void T##_qdotn(const weight *w, int64_t r, const qrow *a, int nt, float *y, int64_t ystride) \
    {                                                                                                   \
        native_qdotn(&T, w, r, a, nt, y, ystride);                                                      \
    }
#define NATIVE4_ENTRIES(T)                                                                              \
    NATIVE_ENTRIES(T)                                                                                   \
    static void T##_qdot4(const weight *w, int64_t r, int64_t stride, const qrow *a, float *y)          \
    {                                                                                                   \
        native_qdot4(&T, w, r, stride, a, y);                                                           \
    }
#define NATIVE(T) .qdot[WF_GGML] = T##_qdot, .qdotn[WF_GGML] = T##_qdotn,
#define NATIVE4(T) NATIVE(T) .qdot4[WF_GGML] = T##_qdot4,

/* ---------------------------------------------------------------- tables */

/* A later initialiser for a slot overrides an earlier one: that is the
 * layering, so the compilers' warning about it is off for the tables. */
#if defined(__clang__)
#pragma clang diagnostic push
#pragma clang diagnostic ignored "-Winitializer-overrides"
#elif defined(__GNUC__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Woverride-init"
#endif

NATIVE_ENTRIES(scalar_table)
static const kernels scalar_table = { SCALAR_LAYER NATIVE(scalar_table) };

#ifdef KT_X86
NATIVE4_ENTRIES(avx2_table)
NATIVE4_ENTRIES(avx2_vnni_table)
NATIVE4_ENTRIES(avx512_table)
NATIVE4_ENTRIES(avx512_vnni_table)
NATIVE4_ENTRIES(avx512_z_table)
NATIVE4_ENTRIES(avx512_vnni_z_table)
static const kernels avx2_table = { SCALAR_LAYER AVX2_LAYER NATIVE4(avx2_table) .name = "avx2" };
static const kernels avx2_vnni_table = {
    SCALAR_LAYER AVX2_LAYER VNNI_LAYER NATIVE4(avx2_vnni_table) .name = "avx2+vnni"
};
static const kernels avx512_table = {
    SCALAR_LAYER AVX2_LAYER AVX512_LAYER NATIVE4(avx512_table) .name = "avx2+avx512"
};
static const kernels avx512_vnni_table = {
    SCALAR_LAYER AVX2_LAYER VNNI_LAYER AVX512_LAYER NATIVE4(avx512_vnni_table) .name = "avx2+vnni+avx512"
};
static const kernels avx512_z_table = {
    SCALAR_LAYER AVX2_LAYER AVX512_LAYER VNNI512_LAYER NATIVE4(avx512_z_table) .name = "avx2+avx512+vnni512"
};
static const kernels avx512_vnni_z_table = {
    SCALAR_LAYER AVX2_LAYER VNNI_LAYER AVX512_LAYER VNNI512_OVER_VNNI_LAYER NATIVE4(avx512_vnni_z_table)
    .name = "avx2+vnni+avx512+vnni512"
};
#endif

#if defined(__clang__)
#pragma clang diagnostic pop
#elif defined(__GNUC__)
#pragma GCC diagnostic pop
#endif

/* ------------------------------------------------------------- selection */

const kernels *kernels_scalar(void) { return &scalar_table; }

/* What a table needs of the CPU, as bits of cpu_features(). */
enum { F_AVX2 = 1, F_VNNI = 2, F_AVX512 = 4, F_VNNI512 = 8 };

#ifdef KT_X86
/* AVX2 means AVX2 + FMA + F16C; F16C is read from CPUID leaf 1 (ECX bit
 * 29): not every clang knows the "f16c" name in __builtin_cpu_supports.
 * AVX-VNNI is CPUID leaf 7 sub-leaf 1, EAX bit 4 (its registers are the AVX
 * ones). AVX512 means F, BW, VL, VBMI and GFNI (leaf 7 sub-leaf 0, ECX bit
 * 8); __builtin_cpu_supports reports the AVX-512 features only when the OS
 * saves the zmm and mask registers (XCR0), in gcc's and clang's runtimes. */
static unsigned cpu_features(void)
{
    unsigned a, b, c, d, f = 0;
    __builtin_cpu_init();
    if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma")) return 0;
    if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & (1u << 29))) return 0;
    f |= F_AVX2;
    if (__get_cpuid_count(7, 1, &a, &b, &c, &d) && (a & (1u << 4))) f |= F_VNNI;
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512vbmi") &&
        __get_cpuid_count(7, 0, &a, &b, &c, &d) && (c & (1u << 8))) {
        f |= F_AVX512;
        if (__builtin_cpu_supports("avx512vnni")) f |= F_VNNI512;
    }
    return f;
}
#else
static unsigned cpu_features(void) { return 0; }
#endif

/* Every table with what it needs, each after every table whose features
 * are a subset of its own: the last one a CPU can run is the one it runs. */
static const struct {
    const kernels *k;
    unsigned needs;
} all_tables[] = {
    { &scalar_table, 0 },
#ifdef KT_X86
    { &avx2_table, F_AVX2 },
    { &avx2_vnni_table, F_AVX2 | F_VNNI },
    { &avx512_table, F_AVX2 | F_AVX512 },
    { &avx512_vnni_table, F_AVX2 | F_VNNI | F_AVX512 },
    { &avx512_z_table, F_AVX2 | F_AVX512 | F_VNNI512 },
    { &avx512_vnni_z_table, F_AVX2 | F_VNNI | F_AVX512 | F_VNNI512 },
#endif
};
#define N_TABLES (int)(sizeof all_tables / sizeof all_tables[0])
_Static_assert(N_TABLES <= KERNELS_MAX, "KERNELS_MAX is below the number of tables");

int kernels_runnable(const kernels *out[KERNELS_MAX])
{
    const unsigned f = cpu_features();
    int n = 0;
    for (int i = 0; i < N_TABLES; i++)
        if ((all_tables[i].needs & f) == all_tables[i].needs) out[n++] = all_tables[i].k;
    return n;
}

const kernels *kernels_get(int want_simd)
{
    const kernels *t[KERNELS_MAX];
    return want_simd ? t[kernels_runnable(t) - 1] : &scalar_table;
}

const kernels *kernels_named(const char *name)
{
    const kernels *t[KERNELS_MAX];
    const int n = kernels_runnable(t);
    for (int i = 0; name && i < n; i++)
        if (!strcmp(t[i]->name, name)) return t[i];
    return NULL;
}

void kernels_names(char *buf, size_t len)
{
    const kernels *t[KERNELS_MAX];
    const int n = kernels_runnable(t);
    size_t at = 0;
    if (len) buf[0] = 0;
    for (int i = 0; i < n && at < len; i++) {
        const int w = snprintf(buf + at, len - at, "%s%s", i ? ", " : "", t[i]->name);
        if (w < 0) break;
        at += (size_t)w;
    }
}

/* ------------------------------------------------------------- who takes */

int kernels_qdot_ok(const weight *w)
{
    const int blk = qrow_block(w->act);
    if (!blk || w->cols % blk) return 0;
    if (w->form == WF_IQ3) return w->act == WA_Q8_K;
    if (w->form == WF_GGML)
        return w->act == kernels_ggml_act(w->ggml_type) && scalar_table.qdot_ggml[w->ggml_type] != NULL;
    if (w->form != WF_SCODE) return 0;
    const int g = w->group;
    if (g % 16 || (g <= blk ? blk % g : g % blk)) return 0;
    if (w->codebook) {
        int8_t cb[16];
        return w->code_bits == 4 && kq8_codebook_i8(w, cb);
    }
    if (w->code_bits == 8) return 1;   /* the AVX2 path widens to int16 unless bias is -128 */
    const int maxcode = (1 << w->code_bits) - 1;
    return w->code_bias >= -128 && w->code_bias + maxcode <= 127;
}

int kernels_native_rows4(int ggml_type)
{
#ifdef KT_X86
    return ggml_type >= 0 && ggml_type < GGML_TYPE_COUNT && avx2_table.qdot4_ggml[ggml_type] != NULL;
#else
    (void)ggml_type;
    return 0;
#endif
}

int kernels_qdotn_ok(const kernels *k, const weight *w)
{
    if (!k->qdotn[w->form] || !kernels_qdot_ok(w)) return 0;
    if (w->form == WF_IQ3) return 1;
    if (w->form == WF_GGML) return k->qdotn_ggml[w->ggml_type] != NULL;
    return w->form == WF_SCODE && w->kf && w->act == WA_Q8_K;
}
