/* model.h: the Llama-family decoder on the CPU: hyperparameters, weights,
 * and the context that runs the forward pass.
 *
 * Contract:
 *  - Architectures are rows of one table (formats/arch_table.h), shared
 *    with the pack tools: llama (dense and Mixtral-style MoE), qwen2,
 *    qwen2moe, qwen3, qwen3moe, olmoe, deepseek, granite, granitemoe, dots1,
 *    ernie4_5-moe, glm4moe, llama4, hunyuan-moe, minimax-m2, deepseek2
 *    (multi-head latent attention: a graph of its own), deepseek32 and
 *    glm-dsa (its sparse form), gpt-oss, bailingmoe, bailingmoe2,
 *    qwen3next, qwen35moe, qwen35. A row names the architecture, its RoPE
 *    layout and how the shared forward pass is configured (q/k norm kind, attention biases,
 *    top-k renormalisation); arch_find() is NULL for a name without a row
 *    and for the pack-only rows, which the runtime does not run.
 *  - hparams_load() fills model_hparams from "<arch>.<key>" values read
 *    through a caller's getter (the pack loader, or the tests' GGUF adapter),
 *    applying llama.cpp's defaults (n_rot = head_dim = n_embd / n_head ...).
 *    hparams_rope_scaling() then applies "<arch>.rope.scaling.type" the way
 *    llama.cpp resolves it (no key: linear; none, linear and yarn taken;
 *    anything else refused), so the angles are llama.cpp's.
 *  - model_create() checks every weight's presence and shape against the
 *    hyperparameters, naming the tensor on failure (one line in err), then
 *    owns the KV cache, the scratch buffers and the thread pool. The weights
 *    themselves stay the caller's and must outlive the model.
 *  - model_forward() evaluates n tokens at positions n_past..n_past+n-1,
 *    in ubatches of opt.n_batch (prefill is batched, never token by token),
 *    appends them to the KV cache and writes the logits of every position
 *    (all_logits) or of the last one. A request that would pass n_ctx is
 *    refused before anything is computed: the cache is never truncated.
 *  - Results do not depend on opt.n_threads (bit for bit).
 * No global mutable state: everything lives in the model object. */
#ifndef STRATA_MODEL_H
#define STRATA_MODEL_H

#include "formats/arch_table.h"
#include "runtime/kernels/weight.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum kv_type { KV_F16, KV_F32 } kv_type;
typedef enum rope_scaling_kind { ROPE_SCALING_NONE, ROPE_SCALING_LINEAR, ROPE_SCALING_YARN } rope_scaling_kind;

/* GGUF expert_gating_func; SOFTMAX_WEIGHT: select by raw logits, softmax over the chosen (gpt-oss) */
typedef enum gating_kind { GATING_SOFTMAX = 1, GATING_SIGMOID = 2, GATING_SOFTMAX_WEIGHT = 3 } gating_kind;

const arch_info *arch_find(const char *name);  /* NULL if unknown or pack-only */

typedef struct model_hparams {
    arch_info arch;             /* a copy of its row (formats/arch_table.h); expert_weights_norm may set norm_topk */
    int n_vocab, n_embd, n_layer, n_head, n_head_kv, head_dim, n_rot, n_ff, n_ctx_train;
    int head_dim_v;             /* attention.value_length: V's width per KV head (head_dim unless MLA) */
    /* MLA (arch.mla): q_lora_rank (0: one q matrix), kv_lora_rank, and the
     * per-head widths before absorption: q/k (nope + n_rot) and v */
    int n_lora_q, n_lora_kv, head_k_mla, head_v_mla;
    float yarn_log_mul;         /* rope.scaling.yarn_log_multiplier (MLA's attention scale under YaRN) */
    int n_expert, n_expert_used, n_ff_exp, n_ff_shexp;   /* 0 experts: dense */
    int n_layer_dense_lead;     /* MoE models: the first layers keep a dense FFN (DeepSeek) */
    int n_moe_layer_step;       /* after them, every step-th layer is MoE (1: all; interleave_moe_layer_step) */
    int n_nextn;                /* nextn_predict_layers: blocks after n_layer that only predict further tokens
                                 * (GLM-4.5's MTP); the forward pass never runs them, a draft model
                                 * (model_create_mtp) does when the weights hold them (n_mtp) */
    int no_rope_step, attn_chunk; /* from the arch row; 0 when attention.sliding_window is 0 (Llama 4) */
    int n_swa;                  /* arch.swa_pattern: the sliding layers' window (attention.sliding_window) */
    int gating;                 /* gating_kind: router probabilities by softmax or sigmoid */
    int n_group, n_group_used;  /* grouped routing (DeepSeek V3): experts only from the n_group_used groups of
                                 * n_expert / n_group whose two best selection scores sum highest; 0: none */
    float expert_weights_scale; /* routed weights times this where arch.scale_w (0: key absent) */
    int n_expert_shared;        /* shared experts (their width: n_ff_shexp, by default n_ff_exp each) */
    float rms_eps, rope_base;
    /* RoPE scaling, as llama.cpp's context resolves it from the GGUF keys:
     * theta_i = freq_scale * pos * base^(-2i/n_rot) (divided by the
     * frequency factor when the model has rope_freqs), YaRN mixing in the
     * unscaled angle for the dimensions below its correction range and
     * scaling cos/sin by 1 + 0.1 ln(1/freq_scale); attn_factor scales
     * cos/sin always. */
    rope_scaling_kind rope_scaling;
    float rope_factor;          /* rope.scaling.factor as stored (0: none given) */
    float rope_freq_scale;      /* 1/factor for linear and yarn, else 1 */
    float rope_attn_factor;     /* rope.scaling.attn_factor (default 1) */
    float yarn_ext_factor;      /* 1 for yarn, else 0 */
    float yarn_beta_fast, yarn_beta_slow; /* llama.cpp's defaults, 32 and 1 */
    int n_ctx_orig;             /* rope.scaling.original_context_length, default context_length */
    /* Granite's multipliers, 0 when absent (then not applied): embeddings
     * times embd_scale, each attention and FFN output times residual_scale
     * before its residual add, attention scores times attn_scale instead of
     * 1/sqrt(head_dim), logits times 1/logit_scale. */
    float embd_scale, residual_scale, attn_scale, logit_scale;
    /* Gated DeltaNet layers (arch.gated_delta_net): the convolution's width, the value width (value
     * heads x head width), the head width (keys and values), the value heads and the key heads; every
     * full_attn_interval-th layer is full attention */
    int ssm_d_conv, ssm_d_inner, ssm_d_state, ssm_dt_rank, ssm_n_group, full_attn_interval;
    /* DSA (arch.dsa): the lightning indexer's heads, their width (the first n_rot rotated) and the
     * positions each query attends to at most */
    int n_idx_head, idx_head_dim, idx_top_k;
    /* interleaved M-RoPE (arch.mrope_sections, Qwen3-VL, Qwen3.5): rope.dimension_sections, which
     * assign each rotated pair one of a row's four positions (hparams_mrope_axis); the vision
     * tower's deepstack features the text model adds after its first n_deepstack layers */
    int rope_sections[4];
    int n_deepstack;
} model_hparams;

/* Layer l is a Gated DeltaNet layer (Qwen3-Next's linear attention). */
static inline bool hparams_layer_recurrent(const model_hparams *hp, int l)
{
    return hp->arch.gated_delta_net && (l + 1) % (hp->full_attn_interval > 0 ? hp->full_attn_interval : 4) != 0;
}

/* The channels a Gated DeltaNet layer convolves: q and k (key heads x head width each), then v. */
static inline int hparams_ssm_channels(const model_hparams *hp)
{
    return 2 * hp->ssm_n_group * hp->ssm_d_state + hp->ssm_d_inner;
}

/* Layer l rotates q and k (Llama 4's every 4th layer does not). */
static inline bool hparams_layer_rope(const model_hparams *hp, int l)
{
    return hp->no_rope_step <= 0 || (l + 1) % hp->no_rope_step != 0;
}

/* Layer l attends only to its last n_swa positions (gpt-oss's even layers). */
static inline bool hparams_layer_swa(const model_hparams *hp, int l)
{
    return hp->n_swa > 0 && hp->arch.swa_pattern > 0 && l % hp->arch.swa_pattern < hp->arch.swa_pattern - 1;
}

/* Layer l routes to experts (else its FFN is dense). */
static inline bool hparams_layer_moe(const model_hparams *hp, int l)
{
    return hp->n_expert > 0 && l >= hp->n_layer_dense_lead &&
           (hp->n_moe_layer_step <= 1 || (l + 1) % hp->n_moe_layer_step == 0);
}

/* Returns 0 and sets *out when "<key>" exists as a number, else -1. */
typedef int (*hparam_get_fn)(void *ctx, const char *key, double *out);

int hparams_load(model_hparams *hp, const char *arch, hparam_get_fn get, void *ctx, char *err,
                 size_t errlen);
/* type: the "<arch>.rope.scaling.type" string, NULL when the key is absent
 * (llama.cpp then takes "linear", which with no factor changes nothing).
 * Returns 0, or -1 with one line in err for a kind the runtime does not do. */
int hparams_rope_scaling(model_hparams *hp, const char *type, char *err, size_t errlen);
/* Interleaved M-RoPE (llama.cpp's IMROPE): the position rotated pair `pair` takes, 0 t (a text
 * token's position, a picture's first), 1 y, 2 x, 3 the fourth (always 0 here, so those pairs
 * never turn). */
int hparams_mrope_axis(const model_hparams *hp, int pair);
/* True when a text position rotates every pair as plain NEOX RoPE does (no M-RoPE, or sections
 * that leave no rotated pair to the fourth position). */
bool hparams_mrope_text_plain(const model_hparams *hp);
/* True when the angles differ from plain RoPE (a scaling that changes them). */
bool hparams_rope_scaled(const model_hparams *hp);

typedef struct layer_weights {
    const float *attn_norm, *ffn_norm;          /* n_embd */
    const float *q_norm, *k_norm;               /* head_dim or full width, per arch */
    const float *bq, *bk, *bv;                  /* attention biases, when the arch has them */
    const float *bo;                            /* attn_output.bias (gpt-oss) */
    const float *sinks;                         /* n_head sink logits (arch.attn_sinks) */
    weight wq, wk, wv, wo;
    weight wqkv;                                /* q, k and v as one matrix (Bailing's attn_qkv): model_create
                                                 * makes wq, wk and wv row views of it */
    weight ffn_gate, ffn_up, ffn_down;          /* dense FFN */
    weight router;                              /* MoE: n_expert x n_embd */
    weight *exp_gate, *exp_up, *exp_down;       /* MoE: n_expert each */
    weight sh_gate, sh_up, sh_down;             /* optional shared expert */
    weight sh_router;                           /* optional 1-row sigmoid gate of the shared expert */
    /* arch.oai_moe: the router's n_expert bias; each expert's bias rows, n_expert x rows of its part */
    const float *router_b, *exp_gate_b, *exp_up_b, *exp_down_b;
    const float *exp_probs_b;                   /* optional n_expert bias on the probabilities that select the
                                                 * experts (not on their weights: DeepSeek V3's, ERNIE's) */
    /* MLA: q = wq_b(norm(wq_a x)) (or wq x); [compressed | rotated] = wkv_a x;
     * wk_b: n_head x (kv_lora_rank rows x nope cols), wv_b: n_head x (v rows x kv_lora_rank cols) */
    weight wq_a, wq_b, wkv_a, wk_b, wv_b;
    const float *q_a_norm, *kv_a_norm;
    /* a next-token-prediction block (GLM-4.5's, DeepSeek V3's, Ling 2.0's MTP): its input
     * is eh_proj [enorm(embed(t)); hnorm(h)], its output goes through nextn_norm (Ling's:
     * layer_out_norm, arch_info.mtp_out_norm) to the head; its own embedding and head are
     * optional (else the model's) */
    weight eh_proj, nextn_embd, nextn_head;
    const float *enorm, *hnorm, *nextn_norm, *layer_out_norm;
    /* a Gated DeltaNet layer (hparams_layer_recurrent): q|k|v = wqkv x (not split into views), the
     * output gate z = ssm_z x, beta|alpha per key head = ssm_ba x; the convolution's weights
     * (channels x ssm_d_conv), dt's bias and A (-exp(A_log)) per value head, the gated norm's weight
     * (head width), ssm_out back to n_embd */
    weight ssm_z, ssm_ba, ssm_out;
    weight ssm_beta, ssm_alpha;                 /* Qwen3.5: the betas and alphas apart, per value head */
    weight ssm_in;                              /* the first Qwen3-Next GGUFs: q, k, v and z in one matrix, per
                                                 * key head [q | k | its value heads' v | their z] */
    const float *ssm_conv, *ssm_dt, *ssm_a, *ssm_norm;
    /* DSA's lightning indexer (arch.dsa): q heads from the normed q LoRA row, one key from the normed
     * input, the key's LayerNorm, one weight per head from the normed input */
    weight idx_q_b, idx_k, idx_proj;
    const float *idx_k_norm, *idx_k_norm_b;
} layer_weights;

typedef struct model_weights {
    weight tok_embd;            /* n_vocab x n_embd */
    const float *output_norm;
    weight output;              /* absent: tied to tok_embd */
    layer_weights *layers;      /* n_layer, then n_mtp next-token-prediction blocks */
    int n_mtp;                  /* 0, or the hyperparameters' n_nextn when the weights hold those blocks */
    const float *rope_freqs;    /* optional: n_rot/2 divisors of the RoPE angles (rope_freqs.weight) */
    int n_rope_freqs;           /* its length, checked against n_rot/2 */
} model_weights;

typedef struct expert_tier expert_tier;
typedef struct kernels kernels;

typedef struct model_options {
    int n_threads;              /* <= 0: all online cores */
    int n_ctx;                  /* <= 0: the model's n_ctx_train */
    int n_batch;                /* tokens per prefill ubatch; <= 0: 64 */
    kv_type kv;                 /* KV_F16 by default */
    const kernels *kernels;     /* the CPU kernel table (kernels.h); NULL (default): the best this
                                 * CPU runs, kernels_get(1); kernels_scalar(): the reference */
    expert_tier *tier;          /* NULL: the routed experts are in w; else read through this RAM tier
                                 * (runtime/model/expert_tier.h), the caller's, shared by contexts */
} model_options;

model_options model_default_options(void);

typedef struct model model;

model *model_create(const model_hparams *hp, const model_weights *w, const model_options *opt,
                    char *err, size_t errlen);
int model_forward(model *m, const int32_t *tokens, int n, float *logits, bool all_logits, char *err,
                  size_t errlen);
/* A picture's rows (a vision tower's output, vision.h) into the context:
 * nx * ny rows in raster order, each width floats (n_embd, then
 * n_deepstack deepstack features of n_embd, which join the residual after
 * layers 0..n_deepstack-1), at the next cache slots, in place of token
 * embeddings. As llama.cpp's mtmd places them: with interleaved M-RoPE
 * (Qwen3-VL) every row at position t (where the next text token would be),
 * y and x on the grid, the text after continuing at t + max(nx, ny);
 * otherwise (Llama 4) at the next positions, as text. No logits (a picture
 * is followed by its end marker). CPU only; -1 with one line in err for a
 * wrong width, a model whose graph takes no rows (MLA, Gated DeltaNet, a
 * draft model), another backend or a full context. */
int model_forward_image(model *m, const float *rows, int width, int nx, int ny, char *err, size_t errlen);
int model_n_past(const model *m);
int model_n_ctx(const model *m);
/* on: every row of a batch gets the bits a one-token forward would give it
 * (f32 products summed row by row instead of register-blocked; the
 * quantized paths already agree), so a batch can check drafted tokens for
 * speculative decoding without changing greedy output. Off (default):
 * llama.cpp's batch order, which its prefill logits match bit for bit. */
void model_exact_rows(model *m, bool on);
/* The rows the output head reads (the final norm's output, n_embd floats
 * each), handed to fn after every ubatch of every later forward: B rows at
 * positions pos0.. (rows valid during the call only). fn returns 0, or -1
 * with one line in err (errlen bytes), which fails the forward. fn NULL:
 * none. Logits are unchanged, bit for bit. -1 with err when the model runs
 * on another backend than the CPU's. */
typedef int (*model_hidden_fn)(void *ctx, int pos0, int B, const float *rows, char *err, size_t errlen);
int model_on_hidden(model *m, model_hidden_fn fn, void *ctx, char *err, size_t errlen);
/* The routed experts' input at every MoE layer (the ffn_norm output, n_embd
 * floats a row) and the n_expert_used experts each row chose, handed to fn
 * during every later forward, after routing: B rows of layer l (valid
 * during the call only). For calibration (`strata calibrate`). fn returns 0,
 * or -1 with one line in err, which fails the forward; NULL: none. Logits
 * unchanged. -1 with err on another backend than the CPU's. */
typedef int (*model_moe_input_fn)(void *ctx, int layer, int B, const float *x, const int *sel, char *err,
                                  size_t errlen);
int model_on_moe_input(model *m, model_moe_input_fn fn, void *ctx, char *err, size_t errlen);
/* The input of a routed expert's down projection (its GLU's output, ff
 * floats a row): n rows of expert e at MoE layer l, handed to fn as each
 * expert is computed (valid during the call only; a failure is kept and
 * fails the forward). Set with model_on_moe_input's rules. */
typedef int (*model_expert_hidden_fn)(void *ctx, int layer, int expert, int n, const float *rows);
int model_on_expert_hidden(model *m, model_expert_hidden_fn fn, void *ctx, char *err, size_t errlen);
/* A draft model over m's first next-token-prediction block (GLM-4.5's,
 * DeepSeek V3's and Ling 2.0's MTP; weights' n_mtp > 0): one block of the same graph whose
 * row at position p reads h, the main model's model_on_hidden row at p,
 * and t, the token at p + 1, as eh_proj [enorm(embed(t)); hnorm(h)], and
 * whose logits (through the block's own norm and head, or the model's)
 * predict the token at p + 2; its own model_on_hidden rows can stand in for
 * h to draft further. It shares m's weights and threads (use the two in
 * turn, never at once), keeps its own KV cache (m's n_ctx) and runs on the
 * CPU. NULL with one line in err when m has no such block. Free it before m. */
model *model_create_mtp(model *m, char *err, size_t errlen);
/* A draft model's forward: n rows at its positions n_past.., each a token
 * and the hidden row it follows (hidden: n x n_embd); otherwise model_forward. */
int model_forward_mtp(model *m, const int32_t *tokens, const float *hidden, int n, float *logits, bool all_logits,
                      char *err, size_t errlen);
/* Forget positions >= n_past (0: start over). With sliding-window layers
 * (their cache a ring of window + n_batch positions) a rewind further back
 * than n_batch positions starts over instead. With Gated DeltaNet layers
 * (their state holds the last position only) a rewind resumes from the
 * checkpoint when it lies at or before n_past, else starts over; callers
 * read model_n_past() after it and evaluate from there. */
void model_rewind(model *m, int n_past);
/* Keeps the Gated DeltaNet layers' state at the current position, the one
 * checkpoint of this context (a no-op for other models): the server takes
 * it before a prompt's last token, so the next request that shares the
 * prompt resumes there. A rewind before it drops it. */
void model_checkpoint(model *m);
const model_hparams *model_hp(const model *m);
/* Bytes of weights one decode step reads (routed experts: n_expert_used of them). */
size_t model_active_bytes(const model *m);
const char *model_kernels_name(const model *m);
int model_n_threads(const model *m);          /* the pool's threads (options resolved) */
void model_free(model *m);

#endif
