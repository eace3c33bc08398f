/* hparam_keys.c: the hyperparameter key table (hparam_keys.h). */
#include "formats/hparam_keys.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const hparam_key HPARAM_KEYS[HPK_COUNT] = {
    [HPK_LAYERS] = { "layers", "block_count", HPARAM_UINT },
    [HPK_EMBD] = { "embd", "embedding_length", HPARAM_UINT },
    [HPK_FF] = { "ff", "feed_forward_length", HPARAM_UINT },
    [HPK_EXPERT_FF] = { "expert_ff", "expert_feed_forward_length", HPARAM_UINT },
    [HPK_SHARED_EXPERT_FF] = { "shared_expert_ff", "expert_shared_feed_forward_length", HPARAM_UINT },
    [HPK_HEADS] = { "heads", "attention.head_count", HPARAM_UINT },
    [HPK_KV_HEADS] = { "kv_heads", "attention.head_count_kv", HPARAM_UINT },
    [HPK_HEAD_DIM] = { "head_dim", "attention.key_length", HPARAM_UINT },
    [HPK_HEAD_DIM_V] = { "head_dim_v", "attention.value_length", HPARAM_UINT },
    [HPK_Q_LORA_RANK] = { "q_lora_rank", "attention.q_lora_rank", HPARAM_UINT },
    [HPK_KV_LORA_RANK] = { "kv_lora_rank", "attention.kv_lora_rank", HPARAM_UINT },
    [HPK_HEAD_DIM_MLA] = { "head_dim_mla", "attention.key_length_mla", HPARAM_UINT },
    [HPK_HEAD_DIM_V_MLA] = { "head_dim_v_mla", "attention.value_length_mla", HPARAM_UINT },
    [HPK_EXPERTS] = { "experts", "expert_count", HPARAM_UINT },
    [HPK_EXPERTS_USED] = { "experts_used", "expert_used_count", HPARAM_UINT },
    [HPK_SHARED_EXPERTS] = { "shared_experts", "expert_shared_count", HPARAM_UINT },
    [HPK_DENSE_LEAD_LAYERS] = { "dense_lead_layers", "leading_dense_block_count", HPARAM_UINT },
    [HPK_MOE_LAYER_STEP] = { "moe_layer_step", "interleave_moe_layer_step", HPARAM_UINT },
    [HPK_GATING] = { "gating", "expert_gating_func", HPARAM_UINT },
    [HPK_NEXTN_LAYERS] = { "nextn_layers", "nextn_predict_layers", HPARAM_UINT },
    [HPK_SLIDING_WINDOW] = { "sliding_window", "attention.sliding_window", HPARAM_UINT },
    [HPK_EXPERT_WEIGHTS_SCALE] = { "expert_weights_scale", "expert_weights_scale", HPARAM_FLOAT },
    [HPK_EXPERT_GROUPS] = { "expert_groups", "expert_group_count", HPARAM_UINT },
    [HPK_EXPERT_GROUPS_USED] = { "expert_groups_used", "expert_group_used_count", HPARAM_UINT },
    [HPK_CONTEXT] = { "context", "context_length", HPARAM_UINT },
    [HPK_VOCAB] = { "vocab", "vocab_size", HPARAM_UINT },
    [HPK_ROPE_DIM] = { "rope_dim", "rope.dimension_count", HPARAM_UINT },
    [HPK_ROPE_BASE] = { "rope_base", "rope.freq_base", HPARAM_FLOAT },
    [HPK_ROPE_SCALING_FACTOR] = { "rope_scaling_factor", "rope.scaling.factor", HPARAM_FLOAT },
    [HPK_ROPE_SCALING_ATTN_FACTOR] = { "rope_scaling_attn_factor", "rope.scaling.attn_factor", HPARAM_FLOAT },
    [HPK_ROPE_SCALING_ORIG_CONTEXT] = { "rope_scaling_orig_context", "rope.scaling.original_context_length",
                                        HPARAM_UINT },
    [HPK_ROPE_YARN_LOG_MULTIPLIER] = { "rope_yarn_log_multiplier", "rope.scaling.yarn_log_multiplier",
                                       HPARAM_FLOAT },
    [HPK_NORM_EPS] = { "norm_eps", "attention.layer_norm_rms_epsilon", HPARAM_FLOAT },
    [HPK_NORM_EPS_LN] = { "norm_eps_ln", "attention.layer_norm_epsilon", HPARAM_FLOAT },
    [HPK_EXPERT_WEIGHTS_NORM] = { "expert_weights_norm", "expert_weights_norm", HPARAM_BOOL },
    [HPK_EMBEDDING_SCALE] = { "embedding_scale", "embedding_scale", HPARAM_FLOAT },
    [HPK_RESIDUAL_SCALE] = { "residual_scale", "residual_scale", HPARAM_FLOAT },
    [HPK_ATTENTION_SCALE] = { "attention_scale", "attention.scale", HPARAM_FLOAT },
    [HPK_LOGIT_SCALE] = { "logit_scale", "logit_scale", HPARAM_FLOAT },
    /* Gated DeltaNet layers (Qwen3-Next) */
    [HPK_SSM_CONV_KERNEL] = { "ssm_conv_kernel", "ssm.conv_kernel", HPARAM_UINT },
    [HPK_SSM_INNER_SIZE] = { "ssm_inner_size", "ssm.inner_size", HPARAM_UINT },
    [HPK_SSM_STATE_SIZE] = { "ssm_state_size", "ssm.state_size", HPARAM_UINT },
    [HPK_SSM_TIME_STEP_RANK] = { "ssm_time_step_rank", "ssm.time_step_rank", HPARAM_UINT },
    [HPK_SSM_GROUP_COUNT] = { "ssm_group_count", "ssm.group_count", HPARAM_UINT },
    [HPK_FULL_ATTENTION_INTERVAL] = { "full_attention_interval", "full_attention_interval", HPARAM_UINT },
    /* DeepSeek V3.2's lightning indexer (DSA) */
    [HPK_INDEXER_HEADS] = { "indexer_heads", "attention.indexer.head_count", HPARAM_UINT },
    [HPK_INDEXER_KEY_LENGTH] = { "indexer_key_length", "attention.indexer.key_length", HPARAM_UINT },
    [HPK_INDEXER_TOP_K] = { "indexer_top_k", "attention.indexer.top_k", HPARAM_UINT },
    /* Qwen3-VL and Qwen3.5: the interleaved M-RoPE's sections (t, y, x, and a fourth position that is 0
     * for text and pictures), and the vision tower's deepstack features the text model adds */
    [HPK_ROPE_SECTIONS] = { "rope_sections", "rope.dimension_sections", HPARAM_UINT4 },
    [HPK_DEEPSTACK_LAYERS] = { "deepstack_layers", "n_deepstack_layers", HPARAM_UINT },
};

const hparam_key HPARAM_ROPE_SCALING = { "rope_scaling", "rope.scaling.type", HPARAM_STRING };
const char HPARAM_ROPE_SCALE_LINEAR[] = "rope.scale_linear";

int hparam_elem_split(const char *key, char *base, size_t n, int *i)
{
    const size_t len = strlen(key);
    const char *open = strrchr(key, '[');
    if (!open || len < 3 || key[len - 1] != ']' || open == key || (size_t)(open - key) >= n) return 0;
    char *end;
    const long v = strtol(open + 1, &end, 10);
    if (end != key + len - 1 || end == open + 1 || v < 0 || v > 64) return 0;
    memcpy(base, key, (size_t)(open - key));
    base[open - key] = '\0';
    *i = (int)v;
    return 1;
}

int hparam_list_elem(const char *list, int i, double *out)
{
    const char *p = list;
    for (int k = 0; k < i; k++) {
        p = strchr(p, ',');
        if (!p) return -1;
        p++;
    }
    char *end;
    const double v = strtod(p, &end);
    if (end == p || (*end && *end != ',')) return -1;
    *out = v;
    return 0;
}
