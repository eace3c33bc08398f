/* kernels.h: the CPU kernel table: vector primitives and one row decoder per
 * weight form (weight.h), in a portable scalar version and ISA layers over
 * it (kernel_table.c builds every table: the scalar one, then each ISA's
 * entries over it, so a slot an ISA does not implement keeps the one
 * beneath).
 *
 * Contract:
 *  - kernels_scalar() is the reference: plain loops, summed left to right.
 *    kernels_get(1) returns the AVX2 table when the CPU has AVX2+FMA+F16C
 *    (checked at run time; the build uses no -march), its AVX-VNNI variant
 *    when the CPU has that too (the Q8_0-shaped qdot/qdot4 of S-forms on
 *    vpdpbusd, equal to the AVX2 ones bit for bit), and either of those
 *    with the IQ3 qdot on AVX-512 F/BW/VL/VBMI + GFNI when the CPU has those
 *    (equal to the AVX2 IQ3 dot bit for bit; with AVX512-VNNI as well, the
 *    Q8_0-shaped S8 qdot4 on 512-bit registers too, equal bit for bit),
 *    else the scalar one;
 *    kernels_get(0) is always scalar. kernels_runnable() lists every table
 *    the CPU can run (tests run them all). All tables are const: no global
 *    mutable state; the model stores which one it uses.
 *  - row_f32[form] decodes row r of w into dst[cols]; it is exact in both
 *    tables (the same floats bit for bit). The dots sum in ggml-cpu's x86
 *    order in every table, bit for bit: dot_f32 as ggml_vec_dot_f32 (32
 *    lanes; what llama.cpp uses for one row), dot8_f32 as llamafile's
 *    tinyBLAS (8 lanes, one horizontal sum; what it uses for a batch, n %
 *    8 == 0); the integer qdots likewise (kernels_q8.c). axpy may differ
 *    between tables by rounding.
 *  - f32_to_f16 rounds to nearest even in both (the KV cache's conversion).
 *  - weight_dot() is y_r = W[r]·x, decoding through `scratch` (cols floats)
 *    for forms without a direct dot.
 *  - Quantized activations (weight.act): quant_q8[kind] rounds a row of x
 *    exactly as ggml-cpu does on x86: quantize_row_q8_0's x86 version
 *    (127/amax, ties to even) and the reference quantize_row_q8_K (same
 *    int8 codes and scales in both tables); qrow_fill makes Q8_1 (ggml's
 *    quantize_row_q8_1: Q8_0's codes and scales, plus the block sums s1).
 *    qdot[form] is W[r]·a with integer products per group and one float
 *    multiply-add per group; it exists for the S-forms, IQ3 and native
 *    blocks where kernels_qdot_ok(w) says so. Other
 *    forms multiply the decoded row by qrow.deq (q * d), the same value
 *    up to float rounding.
 *  - qdot4[form] (where set) fills y[k * stride] with qdot[form] of row
 *    r + k * stride, k = 0..3, of the same table, bit for bit: a mat-vec
 *    may group rows by four, adjacent (stride 1) or as four separate
 *    sequential streams (stride > 1), without changing a result.
 *  - qdotn[form] (where set) fills y[t * ystride] with qdot[form] of row r
 *    against a[t], t < nt <= KQ_NT_MAX, of the same table, bit for bit: a
 *    batch (prefill) may meet one row with several tokens at once, so the
 *    row's decoding is shared (IQ3 and native IQ2_S: the grid and sign
 *    expansion; S-forms with K-quant factors: the code values and integer
 *    scales; other S-forms gain nothing and go through qdot4, see
 *    kernels_qdotn_ok).
 *  - qdot4n[form] (where set) fills y[k + t * ystride] with qdot[form] of
 *    row r + k (k < 4) against a[t] (t < nt <= KQ_NT_MAX), bit for bit, or
 *    returns 0 and writes nothing when it does not take the weight: a batch
 *    meets four adjacent rows with several tokens at once, so each loaded
 *    code serves every token and each activation load four rows (the
 *    Q8_0-shaped S8 rows, whose decoding has nothing to share). */
#ifndef STRATA_KERNELS_H
#define STRATA_KERNELS_H

#include "formats/ggml_types.h"
#include "runtime/kernels/weight.h"

#include <stddef.h>
#include <stdint.h>

typedef void (*row_f32_fn)(const weight *w, int64_t r, float *dst);

/* One activation row rounded to Q8_0, Q8_K or Q8_1 (struct of arrays, not
 * ggml's byte layout). Q8_0's fp16 scale is kept widened to f32 (exact). */
typedef struct qrow {
    int kind;           /* WA_Q8_0, WA_Q8_K or WA_Q8_1 */
    int64_t n;          /* a multiple of qrow_block(kind) */
    int8_t *q;          /* n codes */
    float *d;           /* n / block scales */
    int32_t *sum16;     /* n / 16 sums of q (Q8_K's bsums) */
    float *deq;         /* n values q * d: what the float products see (NULL: not made) */
    /* Q8_1 only (else unused, may be NULL): n / 32 values, each block's
     * ggml block_q8_1.s widened: fp16 of (sum of its q) x amax / 127, the
     * scale before its fp16 rounding. Q8_1's codes and d are Q8_0's. */
    float *s1;
    /* Q8_K only (else unused), may be NULL: n / 32 sums of q in int16
     * (|sum| <= 32 x 127), qrow_fill's pairs of sum16. The AVX-512 K-quant
     * kernels read a super-block's eight at once for the mins, instead of
     * adding and narrowing sum16 again for every row (and every token of
     * a batch); without them they do that. */
    int16_t *sum32;
    /* Q8_K only (else unused), may be NULL: the n codes of q again, each
     * 64 in the order in which the AVX2 Q4_K dot meets 4-bit codes (two a
     * byte, element 2i low) after one in-lane and one cross-lane shuffle
     * per 64 (qnib_src in kernels_impl.h), so that a single madd puts two
     * groups' products into ggml's lanes. Made by qrow_fill when given, for
     * tables with reads_qnib; without it those kernels widen the codes
     * into element order instead (four steps per 32, not two per 64). */
    int8_t *qnib;
} qrow;

typedef void (*quant_fn)(const float *x, int64_t n, int8_t *q, float *d, int32_t *sum16);
typedef float (*qdot_fn)(const weight *w, int64_t r, const qrow *a);
typedef void (*qdot4_fn)(const weight *w, int64_t r, int64_t stride, const qrow *a, float *y);
/* Tokens a qdotn call takes at most. */
#define KQ_NT_MAX 8
typedef void (*qdotn_fn)(const weight *w, int64_t r, const qrow *a, int nt, float *y, int64_t ystride);
/* Rows r..r + 3 against nt <= KQ_NT_MAX tokens into y[k + t * ystride];
 * returns 0, computing nothing, for a weight it does not take. */
typedef int (*qdot4n_fn)(const weight *w, int64_t r, const qrow *a, int nt, float *y, int64_t ystride);

typedef struct kernels {
    const char *name;
    float (*dot_f32)(const float *a, const float *b, int64_t n);
    float (*dot8_f32)(const float *a, const float *b, int64_t n);
    /* C[j*ldc + i] = dot8_f32(A + i*lda, B + j*ldb, k) for i < m, j < n
     * (k % 8 == 0): the same bits, register-blocked as tinyBLAS is */
    void (*gemm8_f32)(const float *A, int64_t lda, int64_t m, const float *B, int64_t ldb, int64_t n, float *C,
                      int64_t ldc, int64_t k);
    float (*dot_f16)(const uint16_t *a, const float *b, int64_t n);
    /* x = silu(x) * g, n elements, as ggml_vec_swiglu_f32 (ggml's expf on
     * whole groups of 8, libm's on the tail): the same bits in every table */
    void (*swiglu_f32)(float *x, const float *g, int64_t n);
    /* y = softmax(x), n >= 1, as ggml_order_softmax (ggml_soft_max's order,
     * -INFINITY entries giving 0), with a sink logit in the denominator
     * (-INFINITY: none, the same bits as without); y may be x: the same
     * bits in every table */
    void (*softmax_f32)(const float *x, int64_t n, float *y, float sink);
    void (*axpy_f32)(float *y, float a, const float *x, int64_t n);
    void (*axpy_f16)(float *y, float a, const uint16_t *x, int64_t n);
    /* The f16 attention of nb <= 4 query heads that share a KV head, over
     * cached rows a[0..rows): out[h * ostride + i] = dot_f16(a[i], b + h * n,
     * n), each with the bits of its own dot_f16; each row widened once */
    void (*dot_f16_heads)(const uint16_t *const *a, int rows, const float *b, int nb, int64_t n, float *out,
                          int64_t ostride);
    /* and their weighted sums: for each h < ny, axpy_f16(y + h * n,
     * w[h * wstride + i], x[i], n) for i = 0, 1, .., rows - 1 in turn, with
     * their bits; each row widened once, y kept in registers meanwhile */
    void (*axpy_f16_heads)(float *y, int ny, const float *w, int64_t wstride, const uint16_t *const *x, int rows,
                           int64_t n);
    void (*f16_to_f32)(const uint16_t *src, float *dst, int64_t n);
    void (*f32_to_f16)(const float *src, uint16_t *dst, int64_t n);
    row_f32_fn row_f32[WF_COUNT];
    quant_fn quant_q8[3];       /* [WA_Q8_0], [WA_Q8_K] */
    qdot_fn qdot[WF_COUNT];     /* [WF_SCODE], [WF_IQ3] */
    qdot4_fn qdot4[WF_COUNT];   /* [WF_SCODE]: rows r + k * stride, k < 4 */
    qdotn_fn qdotn[WF_COUNT];   /* [WF_SCODE], [WF_GGML], [WF_IQ3]: one row, up to KQ_NT_MAX tokens */
    qdot4n_fn qdot4n[WF_COUNT]; /* [WF_SCODE] (AVX-512 VNNI, Q8_0-shaped S8): four rows, up to KQ_NT_MAX tokens */
    /* Native ggml blocks by type, the dot-kernel slots that qdot[WF_GGML],
     * qdot4[WF_GGML] and qdotn[WF_GGML] look w->ggml_type up in: qdot_ggml
     * set for the types with an integer dot (the others have none:
     * kernels_qdot_ok says 0), qdot4_ggml where a four-row kernel exists
     * (else four single dots), qdotn_ggml where one row shares work across
     * tokens (else a dot per token; kernels_qdotn_ok says 0). */
    qdot_fn qdot_ggml[GGML_TYPE_COUNT];
    qdot4_fn qdot4_ggml[GGML_TYPE_COUNT];
    qdotn_fn qdotn_ggml[GGML_TYPE_COUNT];
    /* 1: its K-quant kernels read split codes (weight.h code_split) as they
     * lie, so a split reads fewer bytes at no cost; 0: they write each
     * super-block out to one code a byte first (kq_sb_codes), 15-25 times
     * slower than reading the unsplit codes (AVX2: 240 and 400 against 16
     * ns per super-block, Q5_K and Q6_K shapes), so the loader is not asked
     * to split for such a table (the callers read this of the table they
     * will run) */
    int reads_split;
    /* 1: its Q4_K dots read qrow.qnib where a qrow has it, so callers that
     * lay out activation buffers (matmul.c) make it for this table */
    int reads_qnib;
} kernels;

/* The most tables one CPU can run (kernels_runnable). */
#define KERNELS_MAX 8

const kernels *kernels_scalar(void);
/* The table this CPU runs best (the last of kernels_runnable) or, with
 * want_simd 0, the scalar one. */
const kernels *kernels_get(int want_simd);
/* Every table this CPU can run, scalar first and kernels_get(1)'s last;
 * returns how many. Each computes what the scalar one does bit for bit, so
 * the choice moves only speed: tests run them all, `--cpu-kernels` times
 * one. */
int kernels_runnable(const kernels *out[KERNELS_MAX]);
/* The runnable table whose .name is `name` (the names `strata --version`
 * prints: "scalar", "avx2", "avx2+vnni", ...), or NULL. */
const kernels *kernels_named(const char *name);
/* The runnable tables' names, ", " between, into buf (cut to len). */
void kernels_names(char *buf, size_t len);

float weight_dot(const kernels *k, const weight *w, int64_t r, const float *x, float *scratch);

/* 32 (Q8_0) or 256 (Q8_K); 0 for f32. */
int qrow_block(int act);
/* ggml's vec_dot_type for a native type, as a wact (WA_F32 when ggml keeps
 * the activation in float or this runtime does not know the type). */
int kernels_ggml_act(int ggml_type);
/* Quantizes x (a->n values, a->kind) into a, filling deq too unless it is
 * NULL (the integer kernels read only the codes and their sums). */
void qrow_fill(const kernels *k, qrow *a, const float *x);
/* 1 when qdot[w->form] computes W·a for this weight and a->kind = w->act:
 * S-forms whose groups tile the activation blocks (16, 32, 64... elements),
 * a codebook of small integers, and codes + bias that fit int8 (S2/S4);
 * IQ3 with Q8_K. */
int kernels_qdot_ok(const weight *w);
/* 1 when a batch should take qdotn[w->form] for this weight (it shares
 * work across tokens): IQ3, native IQ2_S, and S-forms with K-quant factors. */
int kernels_qdotn_ok(const kernels *k, const weight *w);
/* 1 when the SIMD tables have a four-row kernel for native blocks of this
 * ggml type (qdot4_ggml: one activation load for four rows, read ahead in
 * each); the others' qdot4 is their single dot four times. */
int kernels_native_rows4(int ggml_type);

#endif
