/* backend.h: the ops the forward pass (forward.c, the graph) is written in,
 * and the one row in which a backend states what it supports. The graph is
 * written once; the CPU (backend_cpu.c) and CUDA (runtime/device/cuda/
 * backend_cuda.c) backends implement its ops over their own memory.
 *
 * Contract:
 *  - A model runs on one backend at a time: the CPU's from model_create(),
 *    another one bound by model_bind_backend() before anything is evaluated.
 *    The graph then reads the weights from the backend's model_weights (the
 *    same struct as the host's, its pointers in the backend's memory; the
 *    routed experts stay the backend's own business) and passes activations
 *    of one ubatch from backend_bufs.
 *  - Every op works on rows of one ubatch, returns 0, or -1 with one line
 *    that error(ctx) returns (the CPU's ops cannot fail). Work may be queued:
 *    results are visible to the host after logits() or sync().
 *  - backend_caps is the capability row: what the graph may ask of the
 *    backend. backend_check() refuses a model that needs more, with one line
 *    naming what is missing and that --device cpu runs it; a backend calls it
 *    before it takes any resource. An op a backend does not have is NULL, and
 *    its row says the graph never calls it.
 *  - Results on the CPU are bit-identical to the graph before backends
 *    (each op is the same float code, in the same order).
 * No global mutable state: ops tables and rows are const. */
#ifndef STRATA_BACKEND_H
#define STRATA_BACKEND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "runtime/kernels/matmul.h"
#include "runtime/model/model.h"

/* What a backend runs beyond llama's plain attention, a dense or softmax
 * top-k MoE FFN, plain RoPE and an f16 KV cache (true: supported). */
typedef struct backend_caps {
    const char *name;           /* "CUDA": the refusals name it */
    bool kv_f32;                /* --kv-type f32 */
    bool granite_scales;        /* embedding, residual, attention and logit multipliers */
    bool routing;               /* sigmoid or gpt-oss gating, a selection bias, a weight scale, groups */
    bool mixed_layers;          /* dense layers among the MoE ones (DeepSeek's leading dense blocks) */
    bool mla;                   /* multi-head latent attention (ops copy_rows, mla_per_head) */
    bool qk_norm_after_rope;    /* Hunyuan */
    bool qk_norm_optional;      /* q/k norms on some layers only (GLM-4.5-Air) */
    bool llama4;                /* no-RoPE layers (op attn_temp), chunks, L2 q/k norms, weighted expert inputs */
    bool sinks_swa;             /* gpt-oss: attention sinks and sliding-window layers */
    bool rope_scaled;           /* linear, YaRN, an attention factor, Llama 3's rope_freqs */
    int max_head_dim;           /* 0: any */
    bool gqa_uneven;            /* n_head not a multiple of n_head_kv */
    bool gated_delta_net;       /* Qwen3-Next: Gated DeltaNet layers (op gdn), gated attention output (op mul_sigmoid) */
    bool dsa;                   /* DeepSeek V3.2, GLM-5: the lightning indexer picks each query's keys (op indexer) */
    bool mrope;                 /* interleaved M-RoPE whose sections leave pairs unturned (Qwen3-VL) */
} backend_caps;

/* One ubatch's activations, n_batch rows each, in the backend's memory. */
typedef struct backend_bufs {
    float *x, *h, *q, *kx, *vx, *att, *o, *rlog, *gd;
    float *mla_qa, *mla_q, *mla_kva, *mla_o;    /* MLA only */
    float *qg, *qgate;                          /* arch.attn_out_gate: q|gate per head (2 q_dim), the gates */
} backend_bufs;

typedef struct backend_ops {
    const backend_caps *caps;
    /* A ubatch starts: the embedding rows of tokens into x, B rows at positions pos0.. */
    int (*begin)(void *c, const int32_t *tokens, int B, int pos0);
    /* out[r] = x[r] / rms(x[r]) * w (w NULL: no weight), rows of n; out may be x. */
    int (*rmsnorm)(void *c, const float *x, const float *w, float *out, int rows, int n);
    /* Y[n][w->rows] = X[n][w->cols] . W^T */
    int (*matmul)(void *c, const weight *w, const float *x, int n, float *y);
    /* Decode: nv mat-vecs of one row as one job; next: the weights that follow (a hint, may be NULL). */
    int (*matvecs)(void *c, const mm_vec *v, int nv, const mm_next *next);
    /* y[r][i] += bias[i] (bias NULL: nothing). */
    int (*add_bias)(void *c, float *y, const float *bias, int rows, int n);
    /* x[i] *= s */
    int (*scale)(void *c, float *x, size_t n, float s);
    /* x[i] += y[i] */
    int (*add)(void *c, float *x, const float *y, size_t n);
    /* Rotates the first n_rot dims of n_heads heads of B rows (row b at position pos0 + b): head h of
     * row b at v + b * row_stride + h * head_stride. */
    int (*rope)(void *c, float *v, int B, size_t row_stride, int n_heads, size_t head_stride, int pos0);
    /* Llama 4's no-RoPE layers: q's B rows times the temperature of their positions. */
    int (*attn_temp)(void *c, float *q, int B, int pos0);
    /* Layer l: kx and vx of B rows into the KV cache at pos0.., then causal attention of q into att.
     * next: the weights that follow (a hint). */
    int (*attention)(void *c, int l, int B, int pos0, const mm_next *next);
    /* out = down(silu(gate x) * up x), B rows (a dense FFN or a shared expert). */
    int (*ffn)(void *c, const weight *gate, const weight *up, const weight *down, const float *x, int B,
               float *out);
    /* Layer l's routing of B rows from rlog: K picks a row, read back to the host (*sel). */
    int (*route)(void *c, int l, int B, const int **sel);
    /* Layer l's routed experts over B rows of h, weighted by the routing and summed into o. */
    int (*moe)(void *c, int l, int B);
    /* o[b] += g_b * y[b], rows of n, g_b = sigmoid(router . h[b]) (router absent: 1). */
    int (*gate_add)(void *c, const weight *router, const float *h, const float *y, int B, int n, float *o);
    /* dst[r] = src[r] (n floats), rows at their strides. */
    int (*copy_rows)(void *c, float *dst, size_t dst_stride, const float *src, size_t src_stride, int rows, int n);
    /* MLA: y_h = W_h x_h for each head h of B rows, W_h layer l's attn_k_b (v false) or attn_v_b (v true)
     * block: x_h at x + b * x_stride + h * x_step (x_w wide), y_h at y + b * y_stride + h * y_step. */
    int (*mla_per_head)(void *c, int l, bool v, int B, const float *x, size_t x_stride, size_t x_step, int x_w,
                        float *y, size_t y_stride, size_t y_step);
    /* Layer l's Gated DeltaNet over B rows of h (its normed input) into out (n_embd each), its
     * recurrent state carried from the previous positions and moved on. */
    int (*gdn)(void *c, int l, int B, const float *h, float *out);
    /* DSA: layer l's lightning indexer over B rows at pos0.. from h (the normed input) and qa (the normed
     * q LoRA rows): their indexer keys kept, and the positions each row's next attention() reads (the
     * top_k of its scores, all of them while they are no more). */
    int (*indexer)(void *c, int l, int B, int pos0, const float *h, const float *qa);
    /* x[i] *= sigmoid(g[i]) */
    int (*mul_sigmoid)(void *c, float *x, const float *g, size_t n);
    /* logits[rows][w->rows] (host) = h . W^T, everything queued done. */
    int (*logits)(void *c, const weight *w, const float *h, int rows, float *logits);
    /* Everything queued done (NULL: nothing is queued). */
    int (*sync)(void *c);
    const char *(*error)(void *c);
    void (*free)(void *c);
} backend_ops;

/* The CPU backend (backend_cpu.c): every model starts on it. */
extern const backend_ops backend_cpu;

/* 0 when the backend runs this model, else -1 with what it lacks in err. */
int backend_check(const backend_caps *caps, const model *m, char *err, size_t errlen);

/* Binds a backend to a fresh model (nothing evaluated): the graph runs on it from now on, and
 * model_free() frees ctx with ops->free. -1 with err when the model is already bound or has
 * evaluated tokens. */
int model_bind_backend(model *m, const backend_ops *ops, void *ctx, const model_weights *w,
                       const backend_bufs *bufs, char *err, size_t errlen);
/* The bound backend's ctx when it is ops, else NULL. */
void *model_backend_ctx(const model *m, const backend_ops *ops);

/* What a backend reads of the model on the host. */
const model_weights *model_host_weights(const model *m);
const model_options *model_opts(const model *m);
/* The embedding rows of B tokens, as the CPU decodes them (any form), into out[B][n_embd]. */
void model_embed_rows(const model *m, const int32_t *tokens, int B, float *out);
/* One routed expert's FFN on the CPU (host weights) for n rows of x, into out[n][n_embd]:
 * a backend's CPU path for an expert it does not hold (CUDA's --miss cpu). */
void model_expert_cpu(model *m, int layer, int expert, const float *x, int n, float *out);

#endif
