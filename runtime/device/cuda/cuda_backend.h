/* cuda_backend.h: the CUDA backend's C API (the .cu files of runtime/device/cuda, compiled by
 * `make cuda`). Usable from C11: no CUDA header is needed to include it.
 *
 * Contract:
 *  - A scuda_ctx owns one device's compute stream, a separate copy stream
 *    (expert refills), a cuBLAS handle, the IQ3 grid in device memory and a
 *    dequantisation tile for prefill. scuda_create() fails with a one-line
 *    message ("no CUDA device: ...") when no GPU is usable; the caller then
 *    stays on the CPU backend.
 *  - Every function returns 0, or -1 with one line in err naming the CUDA
 *    call or kernel that failed and CUDA's message. Every CUDA call and
 *    every launch is checked. Work is queued on the compute stream; results
 *    are visible to the host after scuda_sync() (or a download, which syncs).
 *  - Weights are runtime/kernels/weight.h `weight`s whose pointers (data, scales,
 *    offsets, codebook) are DEVICE pointers. Forms: WF_P32, WF_P16, WF_SCODE
 *    (2/4/8 bits, code bias or 16-entry codebook, optional offsets), WF_IQ3.
 *    WF_GGML (native ggml blocks) is refused ("not supported on the GPU").
 *    Decoding follows kernels.c's scalar order (product rounded, then the
 *    offset added; IQ3 as formats/iq3.c), so decoded values are the same
 *    floats; sums are in a different order (warp reductions).
 *  - Activations are f32 row-major [n][cols]. Prefill (n > 1) decodes tiles
 *    of W to f32 and multiplies with cuBLAS sgemm; decode (n == 1) is a
 *    fused decode + dot mat-vec, one warp per output row.
 *  - The KV cache is f16 (default) or f32 (--kv-type f32) in VRAM,
 *    [layer][n_ctx][n_head_kv * head_dim] for K and for V; attention is causal over positions 0..pos0+t for token t.
 * No global mutable state: everything lives in the context. */
#ifndef STRATA_CUDA_BACKEND_H
#define STRATA_CUDA_BACKEND_H

#include <stddef.h>
#include <stdint.h>

#include "runtime/device/expert_cache.h"
#include "runtime/kernels/weight.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct scuda_ctx scuda_ctx;

/* device < 0: device 0. tile_bytes: the prefill dequantisation tile (0: 64 MiB). */
scuda_ctx *scuda_create(int device, size_t tile_bytes, char *err, size_t errlen);
void scuda_free(scuda_ctx *c);
const char *scuda_device_name(const scuda_ctx *c);
int scuda_mem_info(scuda_ctx *c, uint64_t *free_bytes, uint64_t *total_bytes, char *err, size_t errlen);

int scuda_alloc(scuda_ctx *c, void **p, size_t bytes, char *err, size_t errlen);
void scuda_dfree(scuda_ctx *c, void *p);
int scuda_upload(scuda_ctx *c, void *dst, const void *src, size_t bytes, char *err, size_t errlen);
int scuda_download(scuda_ctx *c, void *dst, const void *src, size_t bytes, char *err, size_t errlen);
int scuda_memset(scuda_ctx *c, void *dst, int value, size_t bytes, char *err, size_t errlen);
int scuda_sync(scuda_ctx *c, char *err, size_t errlen);
/* Page-locks host memory (experts.bin) so refills are true async copies. */
int scuda_host_register(scuda_ctx *c, void *p, size_t bytes, char *err, size_t errlen);
int scuda_host_unregister(scuda_ctx *c, void *p, char *err, size_t errlen);

/* Y[n][rows] = X[n][cols] . W^T (x, y device pointers). */
int scuda_matmul(scuda_ctx *c, const weight *w, const float *x, float *y, int n, char *err, size_t errlen);
/* Decode rows [r0, r0+nr) of W to f32 dst[nr][cols] (device). */
int scuda_dequant(scuda_ctx *c, const weight *w, int64_t r0, int64_t nr, float *dst, char *err, size_t errlen);

/* out[b] = x[b] / sqrt(mean(x[b]^2) + eps) * w, rows of n; out may be x. */
int scuda_rmsnorm(scuda_ctx *c, const float *x, const float *w, float *out, int rows, int n, float eps, char *err,
                  size_t errlen);
/* In place on v[n_tok][n_heads][head_dim]: rotate the first n_rot dims of each
 * head at position pos0 + t; neox: pairs (i, i + n_rot/2), else (2i, 2i+1). */
int scuda_rope(scuda_ctx *c, float *v, int n_tok, int n_heads, int head_dim, int n_rot, int pos0, float base,
               int neox, char *err, size_t errlen);
/* out = silu(gate) * up, n elements (out may be gate). */
int scuda_swiglu(scuda_ctx *c, const float *gate, const float *up, float *out, int64_t n, char *err, size_t errlen);
/* y += a * x, n elements. */
int scuda_axpy(scuda_ctx *c, float a, const float *x, float *y, int64_t n, char *err, size_t errlen);
/* Append k, v [n_tok][kv_dim] (f32) at positions pos0.. of one layer's caches
 * [n_ctx][kv_dim]: f16 (rounded to nearest even), or f32 when f32 is 1. */
int scuda_kv_store(scuda_ctx *c, const float *k, const float *v, void *kcache, void *vcache, int f32, int n_tok,
                   int kv_dim, int pos0, char *err, size_t errlen);
/* out[t][h][d] = softmax_p(q[t][h]·K[p][h/g] / sqrt(head_dim)) V, p <= pos0 + t. */
int scuda_attention(scuda_ctx *c, const float *q, const void *kcache, const void *vcache, int f32, float *out,
                    int n_tok, int n_head, int n_head_kv, int head_dim, int pos0, char *err, size_t errlen);
/* Per token: softmax of logits[n_tok][n_expert], the top k by probability
 * (ties: lower index), weights optionally renormalised (clamped as llama.cpp).
 * sel[n_tok][k], wts[n_tok][k]; n_expert <= 256. */
int scuda_router_topk(scuda_ctx *c, const float *logits, int n_tok, int n_expert, int k, int renorm, int32_t *sel,
                      float *wts, char *err, size_t errlen);

/* An ec_device (expert_cache.h) of VRAM slots filled from host memory on the
 * copy stream: host_of(host_ctx, expert) gives the expert's host bytes (the
 * experts.bin mapping, registered with scuda_host_register). The slots are
 * freed by scuda_slots_free. */
typedef struct scuda_slots {
    scuda_ctx *c;
    uint8_t *base;           /* device: n_slots * slot_bytes */
    int n_slots;
    size_t slot_bytes;
    const void *(*host_of)(void *host_ctx, int64_t expert);
    void *host_ctx;
} scuda_slots;

ec_device scuda_slots_device(scuda_slots *s);
void *scuda_slot_ptr(const scuda_slots *s, int slot);
void scuda_slots_free(scuda_slots *s);

/* forward_ops.cu: what the forward pass (the ops of backend_cuda.c) adds. */
/* out = x rounded as the CPU rounds a weight's activations (weight.h wact:
 * WA_Q8_0 or WA_Q8_K, then q * d); cols a multiple of the block. */
int scuda_act_round(scuda_ctx *c, int act, const float *x, float *out, int rows, int64_t cols, char *err,
                    size_t errlen);
/* In place on rows x cols floats (device): each block of b rotated as
 * formats/hadamard.h's hadamard_rows, bit for bit; b a power of two
 * dividing cols, at most SCUDA_HADAMARD_MAX (one block in shared memory). */
#define SCUDA_HADAMARD_MAX 8192
int scuda_hadamard(scuda_ctx *c, float *x, int rows, int64_t cols, int64_t b, char *err, size_t errlen);
/* y[r][i] += bias[i]. */
int scuda_add_bias(scuda_ctx *c, float *y, const float *bias, int rows, int n, char *err, size_t errlen);
/* dst[r] = src[idx[r] / div] (rows of n floats; idx on the device). */
int scuda_gather_rows(scuda_ctx *c, const float *src, const int32_t *idx, int div, int rows, int n, float *dst,
                      char *err, size_t errlen);
/* dst[idx[r]] = src[r]. */
int scuda_scatter_rows(scuda_ctx *c, const float *src, const int32_t *idx, int rows, int n, float *dst, char *err,
                       size_t errlen);
/* out[b] = sum_j w[b*k+j] * eo[b*k+j] (rows of n), top-k order, products rounded. */
int scuda_moe_combine(scuda_ctx *c, const float *eo, const float *w, int rows, int k, int n, float *out, char *err,
                      size_t errlen);
/* out[b] += sigmoid(gate[b]) * x[b] (gate NULL: 1). */
int scuda_gate_add(scuda_ctx *c, const float *x, const float *gate, int rows, int n, float *out, char *err,
                   size_t errlen);
/* Host -> device on the copy stream (expert refills), and waiting for it. */
int scuda_copy_async(scuda_ctx *c, void *dst, const void *src, size_t bytes, char *err, size_t errlen);
int scuda_copy_sync(scuda_ctx *c, char *err, size_t errlen);
/* Device -> device on the compute stream. */
int scuda_copy_d2d(scuda_ctx *c, void *dst, const void *src, size_t bytes, char *err, size_t errlen);
/* Device memory bandwidth: the best of 5 device-to-device copies of `bytes`,
 * counting the bytes read and written. */
int scuda_measure_bandwidth(scuda_ctx *c, size_t bytes, double *bytes_per_s, char *err, size_t errlen);

/* Extern "C" from widen.cu: fp16/bf16 -> f32 on the device. stream NULL: default. */
int scuda_widen(scuda_ctx *c, int is_bf16, const uint16_t *src, float *dst, int64_t n, char *err, size_t errlen);

#ifdef __cplusplus
}
#endif

#endif
