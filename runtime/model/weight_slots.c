/* weight_slots.c: the per-layer tensors and their fields (weight_slots.h).
 * A tensor the graph reads is a role in formats/tensor_names.c, a field in
 * layer_weights (model.h) and a row here. */
#include "runtime/model/weight_slots.h"

#define V(r, f) { r, SLOT_VEC, offsetof(layer_weights, f), SLOT_ANY, SLOT_ANY }
#define VN(r, f, n, rows) { r, SLOT_VEC, offsetof(layer_weights, f), n, rows }
#define M(r, f, k) { r, k, offsetof(layer_weights, f), SLOT_ANY, SLOT_ANY }

/* The loader's order: a model with two faults is refused for the first. */
const weight_slot LAYER_SLOTS[] = {
    V(TN_ATTN_NORM, attn_norm),
    V(TN_FFN_NORM, ffn_norm),
    V(TN_ATTN_Q_NORM, q_norm),
    V(TN_ATTN_K_NORM, k_norm),
    V(TN_ATTN_Q_BIAS, bq),
    V(TN_ATTN_K_BIAS, bk),
    V(TN_ATTN_V_BIAS, bv),
    M(TN_ATTN_Q, wq, SLOT_MAT),
    M(TN_ATTN_K, wk, SLOT_MAT),
    M(TN_ATTN_V, wv, SLOT_MAT),
    M(TN_ATTN_OUT, wo, SLOT_MAT),
    M(TN_ATTN_QKV, wqkv, SLOT_MAT),
    M(TN_FFN_GATE, ffn_gate, SLOT_MAT),
    M(TN_FFN_UP, ffn_up, SLOT_MAT),
    M(TN_FFN_DOWN, ffn_down, SLOT_MAT),
    M(TN_FFN_GATE_INP, router, SLOT_MAT),
    M(TN_FFN_GATE_SHEXP, sh_gate, SLOT_MAT),
    M(TN_FFN_UP_SHEXP, sh_up, SLOT_MAT),
    M(TN_FFN_DOWN_SHEXP, sh_down, SLOT_MAT),
    M(TN_FFN_GATE_INP_SHEXP, sh_router, SLOT_ROW),
    V(TN_FFN_EXP_PROBS_B, exp_probs_b),
    V(TN_ATTN_Q_A_NORM, q_a_norm),
    V(TN_ATTN_KV_A_NORM, kv_a_norm),
    M(TN_ATTN_Q_A, wq_a, SLOT_MAT),
    M(TN_ATTN_Q_B, wq_b, SLOT_MAT),
    M(TN_ATTN_KV_A_MQA, wkv_a, SLOT_MAT),
    M(TN_ATTN_K_B, wk_b, SLOT_BLOCKS),
    M(TN_ATTN_V_B, wv_b, SLOT_BLOCKS),
    VN(TN_ATTN_OUT_BIAS, bo, SLOT_EMBD, SLOT_ANY),
    VN(TN_ATTN_SINKS, sinks, SLOT_HEADS, SLOT_ANY),
    VN(TN_FFN_GATE_INP_BIAS, router_b, SLOT_EXPERTS, SLOT_ANY),
    VN(TN_FFN_GATE_EXPS_BIAS, exp_gate_b, SLOT_FF_EXP, SLOT_EXPERTS),
    VN(TN_FFN_UP_EXPS_BIAS, exp_up_b, SLOT_FF_EXP, SLOT_EXPERTS),
    VN(TN_FFN_DOWN_EXPS_BIAS, exp_down_b, SLOT_EMBD, SLOT_EXPERTS),
    M(TN_NEXTN_EH_PROJ, eh_proj, SLOT_MAT),
    M(TN_NEXTN_EMBED_TOKENS, nextn_embd, SLOT_MAT),
    M(TN_NEXTN_SHARED_HEAD_HEAD, nextn_head, SLOT_MAT),
    VN(TN_NEXTN_ENORM, enorm, SLOT_EMBD, SLOT_ANY),
    VN(TN_NEXTN_HNORM, hnorm, SLOT_EMBD, SLOT_ANY),
    VN(TN_NEXTN_SHARED_HEAD_NORM, nextn_norm, SLOT_EMBD, SLOT_ANY),
    VN(TN_LAYER_OUT_NORM, layer_out_norm, SLOT_EMBD, SLOT_ANY),
    M(TN_ATTN_GATE, ssm_z, SLOT_MAT),
    VN(TN_SSM_CONV1D, ssm_conv, SLOT_SSM_CONV, SLOT_SSM_CHANNELS),
    V(TN_SSM_DT, ssm_dt),
    V(TN_SSM_A, ssm_a),
    M(TN_SSM_BA, ssm_ba, SLOT_MAT),
    V(TN_SSM_NORM, ssm_norm),
    M(TN_SSM_OUT, ssm_out, SLOT_MAT),
    M(TN_SSM_BETA, ssm_beta, SLOT_MAT),
    M(TN_SSM_ALPHA, ssm_alpha, SLOT_MAT),
    M(TN_SSM_IN, ssm_in, SLOT_MAT),
    M(TN_INDEXER_ATTN_Q_B, idx_q_b, SLOT_MAT),
    M(TN_INDEXER_ATTN_K, idx_k, SLOT_MAT),
    M(TN_INDEXER_PROJ, idx_proj, SLOT_MAT),
    V(TN_INDEXER_K_NORM, idx_k_norm),
    V(TN_INDEXER_K_NORM_BIAS, idx_k_norm_b),
};

const int N_LAYER_SLOTS = (int)(sizeof LAYER_SLOTS / sizeof LAYER_SLOTS[0]);

const float **slot_vec(layer_weights *L, const weight_slot *s) { return (const float **)((char *)L + s->off); }

weight *slot_mat(layer_weights *L, const weight_slot *s) { return (weight *)((char *)L + s->off); }

int64_t slot_len_of(const model_hparams *hp, slot_len len)
{
    return len == SLOT_EMBD ? hp->n_embd : len == SLOT_HEADS ? hp->n_head : len == SLOT_EXPERTS ? hp->n_expert
         : len == SLOT_FF_EXP ? hp->n_ff_exp : len == SLOT_SSM_CONV ? hp->ssm_d_conv
         : len == SLOT_SSM_CHANNELS ? hparams_ssm_channels(hp) : 0;
}
