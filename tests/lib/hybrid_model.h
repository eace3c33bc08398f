/* hybrid_model.h: the hybrid linear-attention test models our GGUF writer
 * makes (tests/unit/model/test_hybrid_llamacpp.c holds them against
 * llama.cpp; the server tests run them): random weights, the shipped
 * model's first 512 tokens as the vocabulary.
 *  - qwen3next: 4 layers, full_attention_interval 2, so layers 0 and 2 are
 *    Gated DeltaNet (q/k/v through a causal convolution of 4, 2 key heads
 *    shared by 4 value heads of 16) and 1 and 3 full attention (q with a
 *    per-head output gate, per-head q/k norms, 8 of 16 dimensions rotated);
 *    every layer a MoE of 4 experts (2 used) with a gated shared expert.
 *  - qwen35moe: the same with Qwen3.5's separate ssm_beta and ssm_alpha and
 *    its M-RoPE sections (2, 1, 1, 0: every rotated pair a text position's);
 *    qwen35 with a dense FFN of 96 instead of the experts.
 *  - qwen3next-ssm-in: qwen3next as the first GGUFs store it, q, k, v and
 *    z in one ssm_in, per key head [q | k | its value heads' v | their z].
 *  - wide: 4 x the widths, the experts 256 wide, so that their IQ3 packs
 *    can be built (not held against llama.cpp; the agreement tests use the
 *    narrow ones).
 * hybrid_write_model(control 1): every layer full attention, the same
 * weights where they exist. hybrid_tokens(): HYBRID_TOK ids (BOS first),
 * the same on every machine. */
#ifndef STRATA_TEST_HYBRID_MODEL_H
#define STRATA_TEST_HYBRID_MODEL_H

#include <math.h>
#include <stdio.h>

#include "formats/gguf.h"
#include "formats/tensor_names.h"
#include "tests/lib/gguf_random.h"
#include "tests/lib/test_util.h"
#include "tests/lib/vocab_relabel.h"

enum { VOCAB = 512, EMBD = 64, HEADS = 4, KV_HEADS = 2, HEAD_DIM = 16, ROT = 8, EXPERTS = 4, USED = 2, FF_EXP = 32 };
/* the Gated DeltaNet layers: key heads, value heads, head width (keys and values), convolution */
enum { GK = 2, GV = 4, GD = 16, CONV = 4 };
enum { HYBRID_TOK = 160 };

typedef struct hybrid_spec {
    const char *name, *arch;
    int layers, interval;
    int qwen35;                 /* Qwen3.5: ssm_beta and ssm_alpha apart, M-RoPE sections */
    int dense;                  /* a dense FFN instead of the experts (qwen35) */
    int wide_sections;          /* M-RoPE sections wider than the head (refused) */
    int wide;                   /* 4 x the widths (n_embd 256, heads and state of 64, experts 256 wide: IQ3 packs) */
    int ssm_in;                 /* the first Qwen3-Next GGUFs' fused ssm_in instead of attn_qkv and attn_gate */
} hybrid_spec;

static const hybrid_spec HYBRID_SPECS[] = {
    { .name = "qwen3next", .arch = "qwen3next", .layers = 4, .interval = 2 },
    { .name = "qwen35moe", .arch = "qwen35moe", .layers = 4, .interval = 2, .qwen35 = 1 },
    { .name = "qwen35", .arch = "qwen35", .layers = 4, .interval = 2, .qwen35 = 1, .dense = 1 },
    { .name = "qwen3next-ssm-in", .arch = "qwen3next", .layers = 4, .interval = 2, .ssm_in = 1 },
};

static inline int32_t *hybrid_tokens(void) { return random_tokens(HYBRID_TOK, VOCAB, 3); }

/* control 1: every layer full attention (interval 1), the same weights where they exist */
static inline int hybrid_write_model(const hybrid_spec *a, const char *path, int control, char *err, size_t errlen)
{
    gguf_file *tf = gguf_open(SHIPPED_MODEL, err, errlen);
    if (!tf) return -1;
    gguf_writer *w = gguf_writer_new();
    int rc = w ? 0 : -1;
    char key[128];
    const int interval = control ? 1 : a->interval;
    const int x = a->wide ? 4 : 1, e_ = EMBD * x, hd_ = HEAD_DIM * x, rot_ = ROT * x, gd_ = GD * x,
              ffx_ = FF_EXP * (a->wide ? 8 : 1);
    rc |= gguf_writer_add_str(w, "general.architecture", a->arch);
    rc |= gguf_writer_add_str(w, "general.name", "strata hybrid test model");
    const struct { const char *key; uint32_t v; } u32[] = {
        { "context_length", 512 }, { "embedding_length", e_ }, { "block_count", (uint32_t)a->layers },
        { "feed_forward_length", 96 }, { "attention.head_count", HEADS }, { "attention.head_count_kv", KV_HEADS },
        { "attention.key_length", hd_ }, { "attention.value_length", hd_ },
        { "rope.dimension_count", rot_ }, { "ssm.conv_kernel", CONV }, { "ssm.state_size", gd_ },
        { "ssm.group_count", GK }, { "ssm.time_step_rank", GV }, { "ssm.inner_size", GV * gd_ },
        { "full_attention_interval", (uint32_t)interval }, { "expert_count", EXPERTS }, { "expert_used_count", USED },
        { "expert_feed_forward_length", ffx_ }, { "expert_shared_feed_forward_length", ffx_ },
    };
    const size_t n_u32 = sizeof u32 / sizeof u32[0] - (a->dense ? 4 : 0); /* the experts' keys come last */
    if (a->qwen35) {
        const int32_t sections[4] = { (a->wide_sections ? 1000 : 2) * x, x, x, 0 };
        snprintf(key, sizeof key, "%s.rope.dimension_sections", a->arch);
        rc |= gguf_writer_add_arr(w, key, GGUF_TYPE_INT32, sections, 4);
    }
    for (size_t i = 0; rc == 0 && i < n_u32; i++) {
        snprintf(key, sizeof key, "%s.%s", a->arch, u32[i].key);
        rc = gguf_writer_add_u32(w, key, u32[i].v);
    }
    const struct { const char *key; float v; } f32[] = {
        { "rope.freq_base", 1e7f }, { "attention.layer_norm_rms_epsilon", 1e-6f }, { "expert_weights_scale", 1.0f },
    };
    for (size_t i = 0; rc == 0 && i < sizeof f32 / sizeof f32[0] - (a->dense ? 1 : 0); i++) {
        snprintf(key, sizeof key, "%s.%s", a->arch, f32[i].key);
        rc = gguf_writer_add_kv(w, key, GGUF_TYPE_FLOAT32, &f32[i].v);
    }
    snprintf(key, sizeof key, "%s.expert_weights_norm", a->arch);
    const uint8_t yes = 1;
    rc |= gguf_writer_add_kv(w, key, GGUF_TYPE_BOOL, &yes);
    if (rc == 0) rc = vocab_keys_head(w, tf, VOCAB);

    uint64_t s = 20261205;
    const float in_d = 1.0f / sqrtf((float)e_), in_ff = 1.0f / sqrtf((float)ffx_);
    const int key_dim = GK * gd_, value_dim = GV * gd_, conv_dim = 2 * key_dim + value_dim;
    char n[96];
    rc |= add_tensor(w, &s, tensor_name(n, sizeof n, TN_TOKEN_EMBD, 0), 2, e_, VOCAB, 1, 1.0f, 0);
    rc |= add_tensor(w, &s, tensor_name(n, sizeof n, TN_OUTPUT_NORM, 0), 1, e_, 1, 1, 0.1f, 1.0f);
    rc |= add_tensor(w, &s, tensor_name(n, sizeof n, TN_OUTPUT, 0), 2, e_, VOCAB, 1, 2 * in_d, 0);
#define T(role, ...) add_tensor(w, &s, tensor_name(n, sizeof n, role, l), __VA_ARGS__)
    for (int l = 0; rc == 0 && l < a->layers; l++) {
        rc |= T(TN_ATTN_NORM, 1, e_, 1, 1, 0.1f, 1.0f);
        rc |= T(TN_ATTN_POST_NORM, 1, e_, 1, 1, 0.1f, 1.0f);
        if ((l + 1) % interval != 0) { /* Gated DeltaNet */
            if (a->ssm_in) {
                rc |= T(TN_SSM_IN, 2, e_, conv_dim + value_dim, 1, 2 * in_d, 0);
            } else {
                rc |= T(TN_ATTN_QKV, 2, e_, conv_dim, 1, 2 * in_d, 0);
                rc |= T(TN_ATTN_GATE, 2, e_, value_dim, 1, 2 * in_d, 0);
            }
            rc |= T(TN_SSM_CONV1D, 2, CONV, conv_dim, 1, 0.5f, 0);
            rc |= T(TN_SSM_DT, 1, GV, 1, 1, 1.0f, 0);
            rc |= T(TN_SSM_A, 1, GV, 1, 1, 0.4f, -0.6f); /* -exp(A_log): negative */
            if (a->qwen35) {
                rc |= T(TN_SSM_BETA, 2, e_, GV, 1, 2 * in_d, 0);
                rc |= T(TN_SSM_ALPHA, 2, e_, GV, 1, 2 * in_d, 0);
            } else {
                rc |= T(TN_SSM_BA, 2, e_, 2 * GV, 1, 2 * in_d, 0);
            }
            rc |= T(TN_SSM_NORM, 1, gd_, 1, 1, 0.1f, 1.0f);
            rc |= T(TN_SSM_OUT, 2, value_dim, e_, 1, 1.0f / sqrtf((float)value_dim), 0);
        } else {
            rc |= T(TN_ATTN_Q, 2, e_, 2 * HEADS * hd_, 1, in_d, 0);
            rc |= T(TN_ATTN_K, 2, e_, KV_HEADS * hd_, 1, in_d, 0);
            rc |= T(TN_ATTN_V, 2, e_, KV_HEADS * hd_, 1, in_d, 0);
            rc |= T(TN_ATTN_OUT, 2, HEADS * hd_, e_, 1, 1.0f / sqrtf((float)(HEADS * hd_)), 0);
            rc |= T(TN_ATTN_Q_NORM, 1, hd_, 1, 1, 0.1f, 1.0f);
            rc |= T(TN_ATTN_K_NORM, 1, hd_, 1, 1, 0.1f, 1.0f);
        }
        if (a->dense) {
            rc |= T(TN_FFN_GATE, 2, e_, 96, 1, in_d, 0);
            rc |= T(TN_FFN_UP, 2, e_, 96, 1, in_d, 0);
            rc |= T(TN_FFN_DOWN, 2, 96, e_, 1, 1.0f / sqrtf(96.0f), 0);
            continue;
        }
        rc |= T(TN_FFN_GATE_INP, 2, e_, EXPERTS, 1, in_d, 0);
        rc |= T(TN_FFN_GATE_EXPS, 3, e_, ffx_, EXPERTS, in_d, 0);
        rc |= T(TN_FFN_UP_EXPS, 3, e_, ffx_, EXPERTS, in_d, 0);
        rc |= T(TN_FFN_DOWN_EXPS, 3, ffx_, e_, EXPERTS, in_ff, 0);
        rc |= T(TN_FFN_GATE_INP_SHEXP, 1, e_, 1, 1, 2 * in_d, 0);
        rc |= T(TN_FFN_GATE_SHEXP, 2, e_, ffx_, 1, in_d, 0);
        rc |= T(TN_FFN_UP_SHEXP, 2, e_, ffx_, 1, in_d, 0);
        rc |= T(TN_FFN_DOWN_SHEXP, 2, ffx_, e_, 1, in_ff, 0);
    }
#undef T
    if (rc) snprintf(err, errlen, "%s: cannot write the %s model", path, a->arch);
    else rc = gguf_writer_write(w, path, err, errlen);
    gguf_writer_free(w);
    gguf_close(tf);
    return rc;
}

#endif
