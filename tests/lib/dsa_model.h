/* dsa_model.h: the sparse-attention (DSA) test models our GGUF writer makes
 * (tests/unit/model/test_dsa_llamacpp.c holds them against llama.cpp):
 * random weights, the shipped model's first 512 tokens as the vocabulary.
 *  - deepseek32 (DeepSeek V3.2): 4 layers of multi-head latent attention
 *    (q through a rank-32 pair, a compressed row of 32, 16 + 8 rotated
 *    dimensions a q/k head, v heads of 16) with the lightning indexer: 4
 *    heads of 64 (the first 8 rotated, NEOX), a LayerNorm on its key, each
 *    query reading its DSA_TOP_K best positions; a dense first layer, then
 *    8 experts (2 used) by a sigmoid with a selection bias, renormalised
 *    and scaled, and a shared expert.
 *  - glm-dsa (GLM-5): the same layers, the indexer rotating adjacent pairs,
 *    no expert_gating_func key (the sigmoid is GLM-5's default).
 *  - wide: 4 x the widths, the experts 256 wide, so that their IQ3 packs can
 *    be built (not held against llama.cpp), each query reading DSA_TOP_K_WIDE
 *    positions: with random weights the indexer's scores bear no relation to
 *    where attention looks, so a choice flipped by the experts' rounding
 *    moves a 16th of a row's attention (a 64th here).
 * types: GLM-5.2's attention.indexer.types (0: the layer reuses an earlier
 * layer's choice), which iq3pack build refuses.
 * dsa_write_model(top_k): the model with that indexer.top_k (0: DSA_TOP_K;
 * one past the sequence: plain MLA, the control). dsa_tokens(): DSA_TOK ids
 * (BOS first), the same on every machine. */
#ifndef STRATA_TEST_DSA_MODEL_H
#define STRATA_TEST_DSA_MODEL_H

#include <math.h>
#include <stdio.h>

#include "formats/gguf.h"
#include "formats/tensor_names.h"
#include "tests/lib/gguf_random.h"
#include "tests/lib/test_util.h"
#include "tests/lib/vocab_relabel.h"

enum { DSA_VOCAB = 512, DSA_EMBD = 64, DSA_HEADS = 4, DSA_QLORA = 32, DSA_R = 32, DSA_NOPE = 16, DSA_ROT = 8,
       DSA_V = 16, DSA_IDX_HEADS = 4, DSA_IDX_DIM = 64, DSA_TOP_K = 16, DSA_EXPERTS = 8, DSA_USED = 2,
       DSA_FF_EXP = 32, DSA_FF = 96, DSA_LAYERS = 4 };
enum { DSA_TOK = 160, DSA_TOP_K_WIDE = 64 };

typedef struct dsa_spec {
    const char *name, *arch;
    int gating_key;             /* write expert_gating_func (sigmoid) */
    int wide;                   /* 4 x the widths, experts 256 wide */
    const uint32_t *types;      /* attention.indexer.types, DSA_LAYERS of them (NULL: no key) */
} dsa_spec;

static const dsa_spec DSA_SPECS[] = {
    { .name = "deepseek32", .arch = "deepseek32", .gating_key = 1 },
    { .name = "glm-dsa", .arch = "glm-dsa", .gating_key = 0 },
};

static inline int32_t *dsa_tokens(void) { return random_tokens(DSA_TOK, DSA_VOCAB, 5); }

static inline int dsa_write_model(const dsa_spec *a, const char *path, int top_k, char *err, size_t errlen)
{
    gguf_file *tf = gguf_open(SHIPPED_MODEL, err, errlen);
    if (!tf) return -1;
    gguf_writer *w = gguf_writer_new();
    int rc = w ? 0 : -1;
    char key[128];
    const int x = a->wide ? 4 : 1, e_ = DSA_EMBD * x, r_ = DSA_R * x, nope_ = DSA_NOPE * x, rot_ = DSA_ROT * x,
              v_ = DSA_V * x, ql_ = DSA_QLORA * x, id_ = DSA_IDX_DIM * x, ffx_ = DSA_FF_EXP * (a->wide ? 8 : 1);
    rc |= gguf_writer_add_str(w, "general.architecture", a->arch);
    rc |= gguf_writer_add_str(w, "general.name", "strata DSA test model");
    const struct { const char *key; uint32_t v; } u32[] = {
        { "context_length", 512 }, { "embedding_length", e_ }, { "block_count", DSA_LAYERS },
        { "feed_forward_length", DSA_FF }, { "attention.head_count", DSA_HEADS }, { "attention.head_count_kv", 1 },
        { "attention.key_length", r_ + rot_ }, { "attention.value_length", r_ },
        { "attention.key_length_mla", nope_ + rot_ }, { "attention.value_length_mla", v_ },
        { "attention.q_lora_rank", ql_ }, { "attention.kv_lora_rank", r_ }, { "rope.dimension_count", rot_ },
        { "attention.indexer.head_count", DSA_IDX_HEADS }, { "attention.indexer.key_length", id_ },
        { "attention.indexer.top_k", (uint32_t)(top_k ? top_k : a->wide ? DSA_TOP_K_WIDE : DSA_TOP_K) },
        { "expert_count", DSA_EXPERTS }, { "expert_used_count", DSA_USED }, { "expert_feed_forward_length", ffx_ },
        { "expert_shared_count", 1 }, { "leading_dense_block_count", 1 },
    };
    for (size_t i = 0; rc == 0 && i < sizeof u32 / sizeof u32[0]; i++) {
        snprintf(key, sizeof key, "%s.%s", a->arch, u32[i].key);
        rc = gguf_writer_add_u32(w, key, u32[i].v);
    }
    if (a->gating_key) {
        snprintf(key, sizeof key, "%s.expert_gating_func", a->arch);
        rc |= gguf_writer_add_u32(w, key, 2);
    }
    const struct { const char *key; float v; } f32[] = {
        { "rope.freq_base", 1e4f }, { "attention.layer_norm_rms_epsilon", 1e-6f }, { "expert_weights_scale", 2.5f },
    };
    for (size_t i = 0; rc == 0 && i < sizeof f32 / sizeof f32[0]; i++) {
        snprintf(key, sizeof key, "%s.%s", a->arch, f32[i].key);
        rc = gguf_writer_add_kv(w, key, GGUF_TYPE_FLOAT32, &f32[i].v);
    }
    if (a->types) {
        snprintf(key, sizeof key, "%s.attention.indexer.types", a->arch);
        rc |= gguf_writer_add_arr(w, key, GGUF_TYPE_UINT32, a->types, DSA_LAYERS);
    }
    snprintf(key, sizeof key, "%s.expert_weights_norm", a->arch);
    const uint8_t yes = 1;
    rc |= gguf_writer_add_kv(w, key, GGUF_TYPE_BOOL, &yes);
    if (rc == 0) rc = vocab_keys_head(w, tf, DSA_VOCAB);

    uint64_t s = 20261205;
    const float in_d = 1.0f / sqrtf((float)e_), in_ff = 1.0f / sqrtf((float)ffx_);
    char n[96];
    rc |= add_tensor(w, &s, tensor_name(n, sizeof n, TN_TOKEN_EMBD, 0), 2, e_, DSA_VOCAB, 1, 1.0f, 0);
    rc |= add_tensor(w, &s, tensor_name(n, sizeof n, TN_OUTPUT_NORM, 0), 1, e_, 1, 1, 0.1f, 1.0f);
    rc |= add_tensor(w, &s, tensor_name(n, sizeof n, TN_OUTPUT, 0), 2, e_, DSA_VOCAB, 1, 2 * in_d, 0);
#define T(role, ...) add_tensor(w, &s, tensor_name(n, sizeof n, role, l), __VA_ARGS__)
    for (int l = 0; rc == 0 && l < DSA_LAYERS; l++) {
        rc |= T(TN_ATTN_NORM, 1, e_, 1, 1, 0.1f, 1.0f);
        rc |= T(TN_ATTN_Q_A, 2, e_, ql_, 1, in_d, 0);
        rc |= T(TN_ATTN_Q_A_NORM, 1, ql_, 1, 1, 0.1f, 1.0f);
        rc |= T(TN_ATTN_Q_B, 2, ql_, DSA_HEADS * (nope_ + rot_), 1, 1.0f / sqrtf((float)ql_), 0);
        rc |= T(TN_ATTN_KV_A_MQA, 2, e_, r_ + rot_, 1, in_d, 0);
        rc |= T(TN_ATTN_KV_A_NORM, 1, r_, 1, 1, 0.1f, 1.0f);
        /* large enough that where attention looks matters */
        rc |= T(TN_ATTN_K_B, 3, nope_, r_, DSA_HEADS, 1.0f / sqrtf((float)nope_), 0);
        rc |= T(TN_ATTN_V_B, 3, r_, v_, DSA_HEADS, 1.0f / sqrtf((float)r_), 0);
        rc |= T(TN_ATTN_OUT, 2, DSA_HEADS * v_, e_, 1, 1.0f / sqrtf((float)(DSA_HEADS * v_)), 0);
        rc |= T(TN_INDEXER_ATTN_Q_B, 2, ql_, DSA_IDX_HEADS * id_, 1, 1.0f / sqrtf((float)ql_), 0);
        rc |= T(TN_INDEXER_ATTN_K, 2, e_, id_, 1, in_d, 0);
        rc |= T(TN_INDEXER_K_NORM, 1, id_, 1, 1, 0.1f, 1.0f);
        rc |= T(TN_INDEXER_K_NORM_BIAS, 1, id_, 1, 1, 0.1f, 0);
        rc |= T(TN_INDEXER_PROJ, 2, e_, DSA_IDX_HEADS, 1, in_d, 0);
        rc |= T(TN_FFN_NORM, 1, e_, 1, 1, 0.1f, 1.0f);
        if (l == 0) {
            rc |= T(TN_FFN_GATE, 2, e_, DSA_FF, 1, in_d, 0);
            rc |= T(TN_FFN_UP, 2, e_, DSA_FF, 1, in_d, 0);
            rc |= T(TN_FFN_DOWN, 2, DSA_FF, e_, 1, 1.0f / sqrtf((float)DSA_FF), 0);
            continue;
        }
        rc |= T(TN_FFN_GATE_INP, 2, e_, DSA_EXPERTS, 1, 4 * in_d, 0);
        rc |= T(TN_FFN_EXP_PROBS_B, 1, DSA_EXPERTS, 1, 1, 0.2f, 0);
        rc |= T(TN_FFN_GATE_EXPS, 3, e_, ffx_, DSA_EXPERTS, in_d, 0);
        rc |= T(TN_FFN_UP_EXPS, 3, e_, ffx_, DSA_EXPERTS, in_d, 0);
        rc |= T(TN_FFN_DOWN_EXPS, 3, ffx_, e_, DSA_EXPERTS, in_ff, 0);
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
