/* matmul.h: Y = X · Wᵀ for any weight form, on the model's thread pool.
 *
 * Contract: mm_mul(c, w, X, B, Y) computes Y[b][r] = W[r]·X[b] for b < B,
 * r < w->rows (X is B x cols, Y is B x rows, both row-major, no overlap).
 *  - B == 1 (decode): a mat-vec, rows split in chunks over the pool (their
 *    size from the job's rows and the thread count); each row is one
 *    weight_dot, so the result does not depend on the thread count.
 *  - B > 1 (prefill): rows are cut into fixed tiles of MM_TILE (tiles never
 *    depend on the thread count either). Where the integer qdot kernel
 *    takes the weight, each tile row is multiplied by every rounded row of
 *    X with it: the bits decode gives. Otherwise the tile is decoded once
 *    to f32 (P32 is used in place) and each product summed in llamafile
 *    tinyBLAS's order (gemm8_f32) when cols % 8 == 0 and c->rowwise is 0,
 *    else as one row would be (dot_f32; llama.cpp's mul_mat_id does that
 *    for experts). Summation orders are llama.cpp's on x86, so its logits
 *    come out bit for bit.
 *  - as_decode: f32 and P16 products of a batch are summed as B == 1 sums
 *    them (the quantized paths already give decode's bits).
 *  - w->act Q8_0/Q8_K/Q8_1: each row of X is first rounded as ggml rounds it
 *    (kernels.h, qrow) into `qbuf`; a mat-vec then uses the integer qdot
 *    kernel where kernels_qdot_ok(w), else the decoded row times the
 *    rounded activation (q * d). Without qbuf (or when cols is not a
 *    multiple of the block) the activation stays f32. A batch of 8 rows or
 *    more is rounded row by row over the pool (each row on its own, so the
 *    same values on any thread).
 * Needs MM_TILE * max cols floats of scratch per pool thread, and for
 * quantized activations MM_QBUF_BYTES(max rows of X, max cols) of qbuf. */
#ifndef STRATA_MATMUL_H
#define STRATA_MATMUL_H

#include "runtime/kernels/kernels.h"
#include "runtime/kernels/pool.h"

#define MM_TILE 64
#define MM_QBUF_BYTES(rows, cols) ((size_t)(rows) * (size_t)(cols) * 7 + 512)

typedef struct mm_ctx {
    const kernels *k;
    pool *pool;
    float *scratch;           /* pool_size(pool) blocks of `scratch_stride` floats */
    int64_t scratch_stride;   /* >= MM_TILE * max cols */
    void *qbuf;               /* quantized activations, NULL: f32 only */
    size_t qbuf_bytes;
    int rowwise;              /* 1: an f32 batch sums each product as one row would
                               * (dot_f32, ggml_vec_dot_f32's order), as llama.cpp's
                               * mul_mat_id does for experts; 0: dot8_f32 (tinyBLAS) */
    int as_decode;            /* 1: every product of a batch has the bits B == 1 gives it
                               * (weight_dot: dot_f32 for f32 rows, dot_f16 for P16), so
                               * speculative decoding's checks equal plain decoding */
} mm_ctx;

void mm_mul(mm_ctx *c, const weight *w, const float *X, int B, float *Y);

/* Y0 = X·W0ᵀ and Y1 = X·W1ᵀ (an expert's gate and up): for two weights of
 * one activation form and width on the integer kernels, X is rounded once
 * and both run as one pool loop (a mat-vec's chunks, or a batch's tiles of
 * W0 then of W1), so one barrier instead of two; every output is the same
 * kernel call as in mm_mul, hence bit-identical to two mm_mul calls, which
 * is what it does in every other case. */
void mm_mul2(mm_ctx *c, const weight *w0, const weight *w1, const float *X, int B, float *Y0, float *Y1);

/* Several mat-vecs as one pool loop: y_i = W_i · x_i (one activation row of
 * W_i->cols each) for i < n. Activations that are the same pointer (and
 * kind and width) are rounded once; each thread takes contiguous chunks of
 * rows, matrix after matrix, and warms the next chunk's first rows before
 * its last ones. Every output is the same kernel call as in mm_mul, hence
 * bit-identical to n mm_mul calls, which is what it does when n >
 * MM_VEC_MAX, when any W_i is off the integer kernels, or when the rounded
 * rows do not fit qbuf (one row of cols needs at most cols * 6 bytes). */
#define MM_VEC_MAX 16 /* decode's gates and ups of 8 routed experts in one job */
typedef struct mm_vec {
    const weight *w;
    const float *x;
    float *y;
} mm_vec;
void mm_mulv(mm_ctx *c, const mm_vec *v, int n);

/* The weights of the mat-vec job (mm_mulv order) that comes after this
 * one, when known in advance. mm_mulv_next is mm_mulv, and each pool
 * thread, once done with its share, prefetches the first rows it will take
 * in that next job (mm_warm_next) while it waits for the others; nothing
 * but timing depends on it. mm_warm_next is a pool_idle_fn (pool.h) taking
 * an mm_next, for other pool jobs that precede a mat-vec job. */
typedef struct mm_next {
    int n;
    const weight *w[MM_VEC_MAX];
} mm_next;
void mm_mulv_next(mm_ctx *c, const mm_vec *v, int n, const mm_next *next);
void mm_warm_next(void *next, int thread, int n_threads);

/* Keeps OpenBLAS from starting threads of its own under ours (it is a
 * process-wide setting of that library). No-op without OpenBLAS. */
void mm_blas_single_thread(void);

#endif
