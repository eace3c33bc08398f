/* model_impl.h: the model object (private to runtime/model/: model.c,
 * forward.c, backend.c and the CPU backend, backend_cpu.c). Everything one
 * forward pass touches lives here; other backends see backend.h only. */
#ifndef STRATA_MODEL_IMPL_H
#define STRATA_MODEL_IMPL_H

#include "runtime/device/expert_cache.h"
#include "runtime/kernels/matmul.h"
#include "runtime/model/backend.h"
#include "runtime/model/model.h"
#include "runtime/model/routing_trace.h"

/* Query heads (sharing one KV head) that one task of the f16 attention
 * takes, at most: the cached rows are read and widened once for them. */
#define ATTN_HEADS 4

#define GDN_CHUNK 64 /* rows of a Gated DeltaNet chunk (backend_cpu_gdn.c) */
/* a chunk's scratch for one thread: cumulative decays, updates, a row */
#define GDN_CK_FLOATS(S) ((size_t)GDN_CHUNK * (1 + (size_t)(S)) + (size_t)(S))

struct model {
    model_hparams hp;
    model_weights w;            /* the caller's planes; layers array is the caller's too */
    model_options opt;
    const kernels *k;
    pool *pool;
    mm_ctx mm;
    int n_ctx, n_past;
    int q_dim, kv_dim;          /* n_head * head_dim, n_head_kv * head_dim */
    int att_dim, kv_dim_v;      /* n_head * head_dim_v, n_head_kv * head_dim_v (V's widths) */
    size_t kv_elt;              /* 2 (f16) or 4 (f32) */
    void *kcache, *vcache;      /* layer l from row kv_off[l] on: kv_rows[l] rows of kv_dim (kv_dim_v), */
    /* kept head by head (each KV head's kv_rows[l] rows of head_dim, then the next head's), so that
     * attention reads one head's positions as one stream. n_ctx rows a layer, or for a
     * sliding-window layer (gpt-oss) a ring of n_swa + n_batch: position p in row p % kv_rows[l] */
    size_t *kv_off;
    int *kv_rows;
    bool kv_ring;               /* some layer's rows are a ring */
    /* activations of one ubatch (n_batch rows each) */
    float *x, *h, *q, *kx, *vx, *att, *o, *ffa, *ffb;
    /* MLA (arch.mla): per row q_lora_rank, n_head x head_k_mla, kv_lora_rank + n_rot and
     * n_head x head_v_mla floats; two gather buffers for the per-head products; the
     * per-head row blocks of each layer's wk_b and wv_b (n_layer x n_head each) */
    float *mla_qa, *mla_q, *mla_kva, *mla_o, *mla_in, *mla_out;
    weight *mla_kb, *mla_vb;
    kfactor *mla_kf;
    kfactor *qkv_kf;            /* fused qkv: the q, k and v views' K-quant factors, 3 a layer */
    float *rope_cs;             /* per row: n_rot/2 cos, then n_rot/2 sin */
    float *att_scores;          /* per thread, att_stride floats: n_ctx + 8 scores, then 32 x head_dim lane sums;
                                 * with an f16 cache ATTN_HEADS x (n_ctx + 8) scores */
    size_t att_stride;
    /* MoE */
    float *rlog, *selw, *eo, *hg, *gd;
    float *hrot;                /* rotated experts' inputs (as hg); NULL when no expert is rotated */
    int *sel, *grp;             /* grp: (row, slot) pairs routed to one expert */
    /* the backend the graph runs on (backend.h): the CPU's (ctx the model
     * itself, bw its weights, bufs its ubatch buffers) unless another is bound */
    const backend_ops *ops;
    void *ctx;
    const model_weights *bw;
    backend_bufs bufs;
    char cpu_err[512];          /* the CPU backend's last error (an expert read) */
    /* the routing profile being recorded (NULL: not recording) */
    ec_profile *routing;
    /* the routing trace being recorded (NULL: not recording) */
    routing_trace *trace;
    bool routing_paused;   /* model_pause_routing: passes not counted (nor traced) */
    /* model_on_hidden's sink: each ubatch's final-norm rows after its logits */
    model_hidden_fn hidden_fn;
    void *hidden_ctx;
    /* model_on_moe_input's sink: each MoE layer's expert input and choices */
    model_moe_input_fn moe_in_fn;
    void *moe_in_ctx;
    /* model_on_expert_hidden's sink, the layer cpu_moe is computing, and a failure it reported */
    model_expert_hidden_fn exp_hid_fn;
    void *exp_hid_ctx;
    int moe_layer;
    bool exp_hid_failed;
    /* Gated DeltaNet layers (hparams_layer_recurrent): layer l's state is
     * slot gdn_slot[l] (-1 for the other layers): the convolution's last
     * ssm_d_conv - 1 input rows (channels wide, oldest first) and the delta
     * rule's matrix per value head (state_size x state_size, [value][key]);
     * zero at position 0. Scratch for one ubatch: the q|k|v projection, its
     * convolution, the output gate z, beta|alpha and the heads' outputs.
     * Attention layers with an output gate (arch.attn_out_gate): q|gate per
     * head from wq, and the gates. */
    int *gdn_slot;
    float *gdn_conv, *gdn_state;
    float *gdn_bg;              /* beta, then the log decay: n_batch x value heads each */
    float *gdn_ck;              /* per pool thread GDN_CK_FLOATS(state_size): a chunk's scratch */
    size_t gdn_floats;          /* the states' size: conv, then matrices, contiguous in gdn_conv */
    float *gdn_ckpt;            /* model_checkpoint's copy, at position gdn_ckpt_pos (0: none) */
    int gdn_ckpt_pos;
    float *gdn_qkv, *gdn_cv, *gdn_z, *gdn_ba, *gdn_o;
    float *gdn_in;              /* a fused ssm_in's rows (channels + value width each), before the split */
    float *qg, *qgate;
    /* DSA (arch.dsa): every layer's indexer keys (n_ctx rows of idx_head_dim, in the KV cache's type,
     * position p in row p of layer l's block), the ubatch's indexer keys, queries (n_idx_head x
     * idx_head_dim a row), head weights and scores (n_ctx a row), and the positions each row attends
     * to (dsa_sel: n_ctx flags a row), which attention reads while dsa_on */
    void *dsa_kcache;
    float *dsa_k, *dsa_q, *dsa_w, *dsa_score;
    uint8_t *dsa_sel;
    bool dsa_on;
    /* a draft model over a next-token-prediction block (model_create_mtp):
     * its input rows are [enorm(embed(t)); hnorm(h)] side by side (mtp_cat,
     * n_batch x 2 n_embd); the pool is the main model's (own_pool false) */
    bool mtp, own_pool;
    float *mtp_cat;
    /* interleaved M-RoPE (arch.mrope_sections): the ubatch's positions, t, y and x per row, which
     * rope_tables reads; pos_next[s]: the position of the text token after cache slot s (a
     * picture's rows all start at one t and take max(nx, ny) positions, so positions and slots part) */
    int32_t *mpos;
    uint8_t *mrope_axis;        /* each rotated pair's position (hparams_mrope_axis), made once */
    int32_t *pos_next;
    /* model_forward_image's rows (width floats each: the embedding, then the deepstack features)
     * while it runs, NULL otherwise */
    const float *img_rows;
    int img_width;
};

/* Records one row's routing at layer l in the profile and the trace,
 * whichever are being recorded (forward.c). */
void model_observe_routing(model *m, int layer, const int *sel);
/* RoPE as the forward pass applies it: B rows of n_heads heads at
 * positions pos0.. rotated in place (B <= the model's ubatch). For tests
 * that hold llama.cpp's own rotated tensors against ours. */
void model_rope_rows(model *m, float *v, int n_heads, int B, int pos0);

#endif
