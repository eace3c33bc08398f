/* arch.c: which hyperparameters the runtime reads, with llama.cpp's
 * defaults (model.h), and which architectures it runs: the rows of
 * formats/arch_table.h not marked pack_only. The keys' names are
 * formats/hparam_keys.h's. */
#include "runtime/model/model.h"

#include "formats/hparam_keys.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* The rows are formats/arch_table.h's; a pack-only row is refused like an
 * unknown name. */
const arch_info *arch_find(const char *name)
{
    const arch_info *a = arch_table_find(name);
    return a && !a->pack_only ? a : NULL;
}

enum { REQ, OPT };

/* Which keys the runtime reads, into which field, with llama.cpp's
 * defaults; the key names and value kinds are formats/hparam_keys.h's.
 * Defaults that depend on other keys (-1) are resolved after the table. */
static const struct hkey {
    hparam_id id;
    size_t off;
    int need;
    double def;
} hkeys[] = {
    { HPK_VOCAB,                       offsetof(model_hparams, n_vocab), OPT, 0 },
    { HPK_CONTEXT,                     offsetof(model_hparams, n_ctx_train), REQ, 0 },
    { HPK_EMBD,                        offsetof(model_hparams, n_embd), REQ, 0 },
    { HPK_FF,                          offsetof(model_hparams, n_ff), OPT, 0 },
    { HPK_LAYERS,                      offsetof(model_hparams, n_layer), REQ, 0 },
    { HPK_HEADS,                       offsetof(model_hparams, n_head), REQ, 0 },
    { HPK_KV_HEADS,                    offsetof(model_hparams, n_head_kv), OPT, -1 },
    { HPK_HEAD_DIM,                    offsetof(model_hparams, head_dim), OPT, -1 },
    { HPK_HEAD_DIM_V,                  offsetof(model_hparams, head_dim_v), OPT, -1 },
    { HPK_Q_LORA_RANK,                 offsetof(model_hparams, n_lora_q), OPT, 0 },
    { HPK_KV_LORA_RANK,                offsetof(model_hparams, n_lora_kv), OPT, 0 },
    { HPK_HEAD_DIM_MLA,                offsetof(model_hparams, head_k_mla), OPT, 0 },
    { HPK_HEAD_DIM_V_MLA,              offsetof(model_hparams, head_v_mla), OPT, 0 },
    { HPK_ROPE_YARN_LOG_MULTIPLIER,    offsetof(model_hparams, yarn_log_mul), OPT, 0 },
    { HPK_ROPE_DIM,                    offsetof(model_hparams, n_rot), OPT, -1 },
    { HPK_ROPE_BASE,                   offsetof(model_hparams, rope_base), OPT, 10000.0 },
    { HPK_NORM_EPS,                    offsetof(model_hparams, rms_eps), REQ, 0 },
    { HPK_EXPERTS,                     offsetof(model_hparams, n_expert), OPT, 0 },
    { HPK_EXPERTS_USED,                offsetof(model_hparams, n_expert_used), OPT, 0 },
    { HPK_EXPERT_FF,                   offsetof(model_hparams, n_ff_exp), OPT, -1 },
    { HPK_SHARED_EXPERT_FF,            offsetof(model_hparams, n_ff_shexp), OPT, 0 },
    { HPK_SHARED_EXPERTS,              offsetof(model_hparams, n_expert_shared), OPT, 0 },
    { HPK_DENSE_LEAD_LAYERS,           offsetof(model_hparams, n_layer_dense_lead), OPT, 0 },
    { HPK_MOE_LAYER_STEP,              offsetof(model_hparams, n_moe_layer_step), OPT, 1 },
    { HPK_GATING,                      offsetof(model_hparams, gating), OPT, GATING_SOFTMAX },
    { HPK_EXPERT_GROUPS,               offsetof(model_hparams, n_group), OPT, 0 },
    { HPK_EXPERT_GROUPS_USED,          offsetof(model_hparams, n_group_used), OPT, 0 },
    { HPK_EXPERT_WEIGHTS_SCALE,        offsetof(model_hparams, expert_weights_scale), OPT, 0 },
    { HPK_NEXTN_LAYERS,                offsetof(model_hparams, n_nextn), OPT, 0 },
    { HPK_ROPE_SCALING_FACTOR,         offsetof(model_hparams, rope_factor), OPT, 0 },
    { HPK_ROPE_SCALING_ATTN_FACTOR,    offsetof(model_hparams, rope_attn_factor), OPT, 1.0 },
    { HPK_ROPE_SCALING_ORIG_CONTEXT,   offsetof(model_hparams, n_ctx_orig), OPT, 0 },
    { HPK_SSM_CONV_KERNEL,             offsetof(model_hparams, ssm_d_conv), OPT, 0 },
    { HPK_SSM_INNER_SIZE,              offsetof(model_hparams, ssm_d_inner), OPT, 0 },
    { HPK_SSM_STATE_SIZE,              offsetof(model_hparams, ssm_d_state), OPT, 0 },
    { HPK_SSM_TIME_STEP_RANK,          offsetof(model_hparams, ssm_dt_rank), OPT, 0 },
    { HPK_SSM_GROUP_COUNT,             offsetof(model_hparams, ssm_n_group), OPT, 0 },
    { HPK_FULL_ATTENTION_INTERVAL,     offsetof(model_hparams, full_attn_interval), OPT, 4 },
    { HPK_INDEXER_HEADS,               offsetof(model_hparams, n_idx_head), OPT, 0 },
    { HPK_INDEXER_KEY_LENGTH,          offsetof(model_hparams, idx_head_dim), OPT, 0 },
    { HPK_INDEXER_TOP_K,               offsetof(model_hparams, idx_top_k), OPT, 0 },
    { HPK_DEEPSTACK_LAYERS,            offsetof(model_hparams, n_deepstack), OPT, 0 },
};

int hparams_load(model_hparams *hp, const char *arch, hparam_get_fn get, void *ctx, char *err,
                 size_t errlen)
{
    memset(hp, 0, sizeof *hp);
    const arch_info *a = arch_find(arch);
    if (!a) {
        /* the list is the table's, so it cannot go stale */
        int n = snprintf(err, errlen, "architecture '%s' is not supported (", arch ? arch : "(none)");
        const char *sep = "";
        const arch_info *r;
        for (size_t i = 0; (r = arch_table_row(i)) && n > 0 && (size_t)n < errlen; i++)
            if (!r->pack_only) {
                n += snprintf(err + n, errlen - (size_t)n, "%s%s", sep, r->name);
                sep = ", ";
            }
        if (n > 0 && (size_t)n < errlen) snprintf(err + n, errlen - (size_t)n, ")");
        return -1;
    }
    hp->arch = *a;
    char key[160];
    for (size_t i = 0; i < sizeof hkeys / sizeof hkeys[0]; i++) {
        const struct hkey *k = &hkeys[i];
        const int is_int = HPARAM_KEYS[k->id].kind != HPARAM_FLOAT;
        double v = k->def;
        snprintf(key, sizeof key, "%s.%s", arch, HPARAM_KEYS[k->id].key);
        if (get(ctx, key, &v) != 0) {
            if (k->need == REQ) { snprintf(err, errlen, "hyperparameter %s is missing", key); return -1; }
            v = k->def;
        } else if (!isfinite(v) || v < 0 || (is_int && (v != floor(v) || v > 1e9))) {
            snprintf(err, errlen, "hyperparameter %s = %g is not a valid value", key, v);
            return -1;
        }
        if (is_int) *(int *)((char *)hp + k->off) = (int)v;
        else *(float *)((char *)hp + k->off) = (float)v;
    }
    /* Llama 4: the router is a sigmoid whatever the key says; the shared expert is an expert wide;
     * attention.sliding_window = 0 turns the no-RoPE layers and the chunks off (llama.cpp). */
    hp->no_rope_step = a->no_rope_step;
    hp->attn_chunk = a->attn_chunk;
    if (a->weight_before_ffn) {
        hp->gating = GATING_SIGMOID;
        double swa;
        snprintf(key, sizeof key, "%s.%s", arch, HPARAM_KEYS[HPK_SLIDING_WINDOW].key);
        if (get(ctx, key, &swa) == 0 && swa == 0) hp->no_rope_step = hp->attn_chunk = 0;
    }
    /* gpt-oss: the window of its sliding layers; its routing is fixed by the graph, not a key */
    if (a->swa_pattern > 0) {
        double swa;
        snprintf(key, sizeof key, "%s.%s", arch, HPARAM_KEYS[HPK_SLIDING_WINDOW].key);
        if (get(ctx, key, &swa) == 0) {
            if (!isfinite(swa) || swa < 0 || swa != floor(swa) || swa > 1e9) {
                snprintf(err, errlen, "hyperparameter %s = %g is not a valid value", key, swa);
                return -1;
            }
            hp->n_swa = (int)swa;
        }
    }
    if (a->oai_moe) hp->gating = GATING_SOFTMAX_WEIGHT;
    if (a->sigmoid_default) { /* GLM-5: a sigmoid unless the key says otherwise */
        double g;
        snprintf(key, sizeof key, "%s.%s", arch, HPARAM_KEYS[HPK_GATING].key);
        if (get(ctx, key, &g) != 0) hp->gating = GATING_SIGMOID;
    }
    /* llama.cpp's older name for the factor, read when the new one is absent. */
    double old_factor;
    snprintf(key, sizeof key, "%s.%s", arch, HPARAM_KEYS[HPK_ROPE_SCALING_FACTOR].key);
    if (get(ctx, key, &old_factor) != 0) {
        snprintf(key, sizeof key, "%s.%s", arch, HPARAM_ROPE_SCALE_LINEAR);
        if (get(ctx, key, &old_factor) == 0) {
            if (!isfinite(old_factor) || old_factor < 0) {
                snprintf(err, errlen, "hyperparameter %s = %g is not a valid value", key, old_factor);
                return -1;
            }
            hp->rope_factor = (float)old_factor;
        }
    }
    /* Granite's multipliers: read only where llama.cpp's graph applies them. */
    static const struct { hparam_id id; size_t off; } granite[] = {
        { HPK_EMBEDDING_SCALE, offsetof(model_hparams, embd_scale) },
        { HPK_RESIDUAL_SCALE, offsetof(model_hparams, residual_scale) },
        { HPK_ATTENTION_SCALE, offsetof(model_hparams, attn_scale) },
        { HPK_LOGIT_SCALE, offsetof(model_hparams, logit_scale) },
    };
    for (size_t i = 0; a->granite_scales && i < sizeof granite / sizeof granite[0]; i++) {
        double v;
        snprintf(key, sizeof key, "%s.%s", arch, HPARAM_KEYS[granite[i].id].key);
        if (get(ctx, key, &v) != 0) continue;
        if (!isfinite(v) || v < 0) {
            snprintf(err, errlen, "hyperparameter %s = %g is not a valid value", key, v);
            return -1;
        }
        *(float *)((char *)hp + granite[i].off) = (float)v;
    }
    /* Interleaved M-RoPE: the four sections, element by element ("<key>[i]") */
    for (int i = 0; a->mrope_sections && i < 4; i++) {
        double v;
        snprintf(key, sizeof key, "%s.%s[%d]", arch, HPARAM_KEYS[HPK_ROPE_SECTIONS].key, i);
        if (get(ctx, key, &v) != 0) {
            snprintf(err, errlen, "hyperparameter %s.%s (4 counts) is missing (a pack built before strata carried it "
                     "needs building again)", arch, HPARAM_KEYS[HPK_ROPE_SECTIONS].key);
            return -1;
        }
        if (!isfinite(v) || v < 0 || v != floor(v) || v > 1e6) {
            snprintf(err, errlen, "hyperparameter %s = %g is not a valid value", key, v);
            return -1;
        }
        hp->rope_sections[i] = (int)v;
    }
    /* An explicit key beats the arch default for top-k renormalisation. */
    double norm;
    snprintf(key, sizeof key, "%s.%s", arch, HPARAM_KEYS[HPK_EXPERT_WEIGHTS_NORM].key);
    if (get(ctx, key, &norm) == 0) hp->arch.norm_topk = norm != 0;

    if (hp->n_nextn >= hp->n_layer && hp->n_nextn > 0) {
        snprintf(err, errlen, "hyperparameters: %d next-token-prediction layers of %d blocks", hp->n_nextn, hp->n_layer);
        return -1;
    }
    hp->n_layer -= hp->n_nextn; /* the blocks the forward pass runs */
    if (hp->n_head < 1 || hp->n_embd < 1 || hp->n_layer < 1 || hp->n_ctx_train < 1) {
        snprintf(err, errlen, "hyperparameters: n_embd %d, n_layer %d, n_head %d, context %d must be >= 1",
                 hp->n_embd, hp->n_layer, hp->n_head, hp->n_ctx_train);
        return -1;
    }
    if (hp->n_head_kv < 0) hp->n_head_kv = hp->n_head;
    if (hp->head_dim < 0) hp->head_dim = hp->n_embd / hp->n_head;
    if (hp->n_rot < 0) hp->n_rot = hp->head_dim;
    if (hp->head_dim_v < 0) hp->head_dim_v = hp->head_dim;
    if (hp->arch.mla) {
        /* llama.cpp's MLA layout: one KV head, K = [kv_lora_rank | n_rot], V = kv_lora_rank */
        if (hp->head_k_mla == 0 || hp->head_v_mla == 0) {
            snprintf(err, errlen, "%s: no attention.key_length_mla (a GGUF from before llama.cpp's MLA layout, with "
                     "attn_kv_b): convert the model again with a current llama.cpp", arch);
            return -1;
        }
        if (hp->n_lora_kv < 1 || hp->n_head_kv != 1 || hp->head_dim != hp->n_lora_kv + hp->n_rot ||
            hp->head_dim_v != hp->n_lora_kv || hp->head_k_mla <= hp->n_rot) {
            snprintf(err, errlen, "hyperparameters: MLA with kv_lora_rank %d, rope dims %d, key/value length %d/%d, "
                     "%d KV heads, q/k head %d do not fit", hp->n_lora_kv, hp->n_rot, hp->head_dim, hp->head_dim_v,
                     hp->n_head_kv, hp->head_k_mla);
            return -1;
        }
    } else if (hp->head_dim_v != hp->head_dim) {
        snprintf(err, errlen, "hyperparameters: value_length %d differs from key_length %d", hp->head_dim_v,
                 hp->head_dim);
        return -1;
    }
    /* DSA's indexer: llama.cpp requires its three keys; its heads rotate their first n_rot dimensions */
    if (hp->arch.dsa && (hp->n_idx_head < 1 || hp->idx_head_dim <= hp->n_rot || hp->idx_top_k < 1 ||
                         hp->n_idx_head > 1024 || hp->idx_head_dim > 4096)) {
        snprintf(err, errlen, "hyperparameters: a lightning indexer of %d heads of %d (rope dims %d), top_k %d does "
                 "not fit (%s.attention.indexer.* missing?)", hp->n_idx_head, hp->idx_head_dim, hp->n_rot,
                 hp->idx_top_k, arch);
        return -1;
    }
    if (hp->n_ff_exp < 0) hp->n_ff_exp = hp->n_ff;
    if (hp->arch.weight_before_ffn && hp->n_ff_shexp == 0) hp->n_ff_shexp = hp->n_ff_exp;
    /* DeepSeek's shared experts: expert_shared_count of them, side by side */
    if (hp->n_ff_shexp == 0 && hp->n_expert_shared > 0) hp->n_ff_shexp = hp->n_expert_shared * hp->n_ff_exp;
    if (hp->n_ctx_orig == 0) hp->n_ctx_orig = hp->n_ctx_train;
    hp->yarn_beta_fast = 32.0f;
    hp->yarn_beta_slow = 1.0f;
    if (hparams_rope_scaling(hp, NULL, err, errlen)) return -1;
    if (hp->n_head_kv < 1 || hp->n_head % hp->n_head_kv) {
        snprintf(err, errlen, "hyperparameters: head_count %d is not a multiple of head_count_kv %d",
                 hp->n_head, hp->n_head_kv);
        return -1;
    }
    if (hp->head_dim < 2 || hp->n_rot > hp->head_dim || hp->n_rot % 2) {
        snprintf(err, errlen, "hyperparameters: head_dim %d / rope dims %d do not fit", hp->head_dim,
                 hp->n_rot);
        return -1;
    }
    if (hp->n_expert > 0 && (hp->n_expert_used < 1 || hp->n_expert_used > hp->n_expert || hp->n_ff_exp < 1)) {
        snprintf(err, errlen, "hyperparameters: %d experts, %d used, width %d do not fit", hp->n_expert,
                 hp->n_expert_used, hp->n_ff_exp);
        return -1;
    }
    if (hp->gating != GATING_SOFTMAX && hp->gating != GATING_SIGMOID && hp->gating != GATING_SOFTMAX_WEIGHT) {
        snprintf(err, errlen, "hyperparameter %s.%s = %d: only softmax (1), sigmoid (2) and softmax "
                 "over the chosen (3) are known",
                 arch, HPARAM_KEYS[HPK_GATING].key, hp->gating);
        return -1;
    }
    /* Grouped routing (DeepSeek V3): one group, or all of them used, is plain top-k */
    if (hp->n_group <= 1 || hp->n_group_used >= hp->n_group) hp->n_group = hp->n_group_used = 0;
    if (hp->n_group > 0 &&
        (hp->n_expert % hp->n_group || hp->n_group_used < 1 ||
         hp->n_group_used * (hp->n_expert / hp->n_group) < hp->n_expert_used)) {
        snprintf(err, errlen, "hyperparameters: %d experts in %d groups, %d groups used, %d experts used do not fit",
                 hp->n_expert, hp->n_group, hp->n_group_used, hp->n_expert_used);
        return -1;
    }
    if (hp->n_layer_dense_lead > hp->n_layer || (hp->n_layer_dense_lead > 0 && hp->n_expert == 0)) {
        snprintf(err, errlen, "hyperparameters: %d leading dense layers of %d, %d experts do not fit",
                 hp->n_layer_dense_lead, hp->n_layer, hp->n_expert);
        return -1;
    }
    /* Gated DeltaNet layers: llama.cpp's shapes (value heads a multiple of key heads, keys and values
     * state_size wide, inner_size = value heads x state_size) */
    if (hp->arch.gated_delta_net &&
        (hp->ssm_d_conv < 2 || hp->ssm_d_state < 1 || hp->ssm_n_group < 1 || hp->ssm_dt_rank < hp->ssm_n_group ||
         hp->ssm_dt_rank % hp->ssm_n_group || hp->ssm_d_inner != hp->ssm_dt_rank * hp->ssm_d_state ||
         hp->ssm_d_conv > 64 || hp->ssm_d_state > 1024)) {
        snprintf(err, errlen, "hyperparameters: Gated DeltaNet layers with conv_kernel %d, state_size %d, group_count "
                 "%d, time_step_rank %d, inner_size %d do not fit", hp->ssm_d_conv, hp->ssm_d_state, hp->ssm_n_group,
                 hp->ssm_dt_rank, hp->ssm_d_inner);
        return -1;
    }
    if (a->mrope_sections) {
        const int sum = hp->rope_sections[0] + hp->rope_sections[1] + hp->rope_sections[2] + hp->rope_sections[3];
        if (sum < 1 || sum > hp->head_dim) {
            snprintf(err, errlen, "hyperparameters: M-RoPE sections %d, %d, %d, %d do not fit a head of %d",
                     hp->rope_sections[0], hp->rope_sections[1], hp->rope_sections[2], hp->rope_sections[3],
                     hp->head_dim);
            return -1;
        }
    }
    bool any_dense = false; /* a dense layer needs its width: all of a dense model, DeepSeek's lead, Llama 4's steps */
    for (int l = 0; l < hp->n_layer; l++) any_dense |= !hparams_layer_moe(hp, l);
    if (any_dense && hp->n_ff < 1) {
        snprintf(err, errlen, "hyperparameter %s.%s is missing", arch, HPARAM_KEYS[HPK_FF].key);
        return -1;
    }
    return 0;
}

int hparams_rope_scaling(model_hparams *hp, const char *type, char *err, size_t errlen)
{
    /* llama.cpp: no type key means "linear"; "none" never scales, whatever
     * the factor; linear and yarn scale by 1/factor (no factor: 1). */
    const char *t = type ? type : "linear";
    if (!strcmp(t, "none")) hp->rope_scaling = ROPE_SCALING_NONE;
    else if (!strcmp(t, "linear")) hp->rope_scaling = ROPE_SCALING_LINEAR;
    else if (!strcmp(t, "yarn")) hp->rope_scaling = ROPE_SCALING_YARN;
    else {
        snprintf(err, errlen, "RoPE scaling '%s' is not supported (none, linear, yarn): refusing to run the model "
                 "with wrong angles", t);
        return -1;
    }
    const bool scales = hp->rope_scaling != ROPE_SCALING_NONE && hp->rope_factor != 0.0f;
    hp->rope_freq_scale = scales ? 1.0f / hp->rope_factor : 1.0f;
    hp->yarn_ext_factor = hp->rope_scaling == ROPE_SCALING_YARN ? 1.0f : 0.0f;
    return 0;
}

int hparams_mrope_axis(const model_hparams *hp, int pair)
{
    const int *s = hp->rope_sections;
    const int sector = pair % (s[0] + s[1] + s[2] + s[3]);
    if (sector % 3 == 1 && sector < 3 * s[1]) return 1;
    if (sector % 3 == 2 && sector < 3 * s[2]) return 2;
    if (sector % 3 == 0 && sector < 3 * s[0]) return 0;
    return 3;
}

bool hparams_mrope_text_plain(const model_hparams *hp)
{
    if (!hp->arch.mrope_sections) return true;
    for (int i = 0; i < hp->n_rot / 2; i++)
        if (hparams_mrope_axis(hp, i) == 3) return false;
    return true;
}

bool hparams_rope_scaled(const model_hparams *hp)
{
    return hp->rope_freq_scale != 1.0f || hp->yarn_ext_factor != 0.0f || hp->rope_attn_factor != 1.0f;
}
