/* tensor_names.c: the GGUF tensor-name table (tensor_names.h). Adding a
 * tensor is adding a role to the enum and a row here; an architecture that
 * names a role its own way adds a row to ARCH_ROLES. */
#include "formats/tensor_names.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

typedef struct role_row {
    const char *stem;   /* the name between "blk.<l>." and the suffix */
    const char *suffix; /* "weight" or "bias" */
    bool layer;         /* one per layer ("blk.<l>.") rather than one per model */
    bool split;         /* a merged expert tensor that old GGUFs store one per expert */
} role_row;

#define W(s) { s, "weight", true, false }
#define B(s) { s, "bias", true, false }

static const role_row ROLES[TN_COUNT] = {
    [TN_TOKEN_EMBD] = { "token_embd", "weight", false, false },
    [TN_OUTPUT] = { "output", "weight", false, false },
    [TN_OUTPUT_NORM] = { "output_norm", "weight", false, false },
    [TN_ROPE_FREQS] = { "rope_freqs", "weight", false, false },

    [TN_ATTN_NORM] = W("attn_norm"),
    [TN_FFN_NORM] = W("ffn_norm"),
    [TN_ATTN_POST_NORM] = W("post_attention_norm"),
    [TN_ATTN_Q_NORM] = W("attn_q_norm"),
    [TN_ATTN_K_NORM] = W("attn_k_norm"),
    [TN_LAYER_OUT_NORM] = W("layer_output_norm"),

    [TN_ATTN_Q] = W("attn_q"),
    [TN_ATTN_K] = W("attn_k"),
    [TN_ATTN_V] = W("attn_v"),
    [TN_ATTN_OUT] = W("attn_output"),
    [TN_ATTN_QKV] = W("attn_qkv"),
    [TN_ATTN_Q_BIAS] = B("attn_q"),
    [TN_ATTN_K_BIAS] = B("attn_k"),
    [TN_ATTN_V_BIAS] = B("attn_v"),
    [TN_ATTN_OUT_BIAS] = B("attn_output"),
    [TN_ATTN_SINKS] = W("attn_sinks"),

    [TN_ATTN_Q_A] = W("attn_q_a"),
    [TN_ATTN_Q_A_NORM] = W("attn_q_a_norm"),
    [TN_ATTN_Q_B] = W("attn_q_b"),
    [TN_ATTN_KV_A_MQA] = W("attn_kv_a_mqa"),
    [TN_ATTN_KV_A_NORM] = W("attn_kv_a_norm"),
    [TN_ATTN_K_B] = W("attn_k_b"),
    [TN_ATTN_V_B] = W("attn_v_b"),

    [TN_FFN_GATE] = W("ffn_gate"),
    [TN_FFN_UP] = W("ffn_up"),
    [TN_FFN_DOWN] = W("ffn_down"),

    [TN_FFN_GATE_INP] = W("ffn_gate_inp"),
    [TN_FFN_GATE_INP_BIAS] = B("ffn_gate_inp"),
    [TN_FFN_EXP_PROBS_B] = B("exp_probs_b"),
    [TN_FFN_GATE_EXPS] = { "ffn_gate_exps", "weight", true, true },
    [TN_FFN_UP_EXPS] = { "ffn_up_exps", "weight", true, true },
    [TN_FFN_GATE_UP_EXPS] = W("ffn_gate_up_exps"), /* llama.cpp never split a fused pair */
    [TN_FFN_DOWN_EXPS] = { "ffn_down_exps", "weight", true, true },
    [TN_FFN_GATE_EXPS_BIAS] = B("ffn_gate_exps"),
    [TN_FFN_UP_EXPS_BIAS] = B("ffn_up_exps"),
    [TN_FFN_DOWN_EXPS_BIAS] = B("ffn_down_exps"),

    [TN_FFN_GATE_SHEXP] = W("ffn_gate_shexp"),
    [TN_FFN_UP_SHEXP] = W("ffn_up_shexp"),
    [TN_FFN_DOWN_SHEXP] = W("ffn_down_shexp"),
    [TN_FFN_GATE_INP_SHEXP] = W("ffn_gate_inp_shexp"),

    [TN_NEXTN_EH_PROJ] = W("nextn.eh_proj"),
    [TN_NEXTN_ENORM] = W("nextn.enorm"),
    [TN_NEXTN_HNORM] = W("nextn.hnorm"),
    [TN_NEXTN_SHARED_HEAD_NORM] = W("nextn.shared_head_norm"),
    [TN_NEXTN_EMBED_TOKENS] = W("nextn.embed_tokens"),     /* optional: else the model's own */
    [TN_NEXTN_SHARED_HEAD_HEAD] = W("nextn.shared_head_head"),

    [TN_ATTN_GATE] = W("attn_gate"),
    [TN_SSM_IN] = W("ssm_in"),
    [TN_SSM_CONV1D] = W("ssm_conv1d"),
    [TN_SSM_DT] = B("ssm_dt"),
    [TN_SSM_A] = { "ssm_a", "", true, false }, /* llama.cpp names it without a suffix */
    [TN_SSM_BA] = W("ssm_ba"),
    [TN_SSM_NORM] = W("ssm_norm"),
    [TN_SSM_OUT] = W("ssm_out"),
    [TN_SSM_BETA] = W("ssm_beta"),
    [TN_SSM_ALPHA] = W("ssm_alpha"),

    [TN_INDEXER_ATTN_Q_B] = W("indexer.attn_q_b"),
    [TN_INDEXER_ATTN_K] = W("indexer.attn_k"),
    [TN_INDEXER_K_NORM] = W("indexer.k_norm"),
    [TN_INDEXER_K_NORM_BIAS] = B("indexer.k_norm"),
    [TN_INDEXER_PROJ] = W("indexer.proj"),
};

/* Where an architecture stores a role under another role's name. */
static const struct {
    const char *arch;
    tensor_role role, as;
} ARCH_ROLES[] = {
    { "glm4moe", TN_FFN_NORM, TN_ATTN_POST_NORM },
    { "gpt-oss", TN_FFN_NORM, TN_ATTN_POST_NORM },
    { "qwen3next", TN_FFN_NORM, TN_ATTN_POST_NORM },
    { "qwen35moe", TN_FFN_NORM, TN_ATTN_POST_NORM },
    { "qwen35", TN_FFN_NORM, TN_ATTN_POST_NORM },
};

static const role_row *row(tensor_role r) { return r >= 0 && r < TN_COUNT ? &ROLES[r] : NULL; }

tensor_role tensor_arch_role(const char *arch, tensor_role r)
{
    for (size_t i = 0; arch && i < sizeof ARCH_ROLES / sizeof ARCH_ROLES[0]; i++)
        if (ARCH_ROLES[i].role == r && !strcmp(ARCH_ROLES[i].arch, arch)) return ARCH_ROLES[i].as;
    return r;
}

/* with_weight 0: a weight named without its ".weight" (a bias keeps ".bias") */
static char *format(char *buf, size_t n, tensor_role r, int layer, bool with_weight)
{
    const role_row *t = row(r);
    if (!t) { snprintf(buf, n, "?"); return buf; }
    const bool weight = !strcmp(t->suffix, "weight");
    const char *dot = (with_weight || !weight) && *t->suffix ? "." : "", *suffix = with_weight || !weight ? t->suffix : "";
    if (t->layer) snprintf(buf, n, "blk.%d.%s%s%s", layer, t->stem, dot, suffix);
    else snprintf(buf, n, "%s%s%s", t->stem, dot, suffix);
    return buf;
}

char *tensor_name(char *buf, size_t n, tensor_role r, int layer) { return format(buf, n, r, layer, true); }

char *tensor_label(char *buf, size_t n, tensor_role r, int layer) { return format(buf, n, r, layer, false); }

char *tensor_layer_label(char *buf, size_t n, int layer)
{
    snprintf(buf, n, "blk.%d", layer);
    return buf;
}

char *tensor_split_name(char *buf, size_t n, tensor_role r, int layer, int expert)
{
    const role_row *t = row(r);
    if (!t || !t->split) { snprintf(buf, n, "%s", ""); return buf; }
    /* the merged stem less its "_exps": ffn_gate_exps -> ffn_gate */
    snprintf(buf, n, "blk.%d.%.*s.%d.%s", layer, (int)(strlen(t->stem) - 5), t->stem, expert, t->suffix);
    return buf;
}

/* rest is "<stem>.<suffix>" (expert -1) or, for a split role,
 * "<stem less _exps>.<e>.<suffix>" (e >= 0, read as %d). */
static bool matches(const role_row *t, const char *rest, int *expert)
{
    const size_t sl = strlen(t->stem);
    *expert = -1;
    if (!*t->suffix) return !strcmp(rest, t->stem); /* a name without a suffix */
    if (!strncmp(rest, t->stem, sl) && rest[sl] == '.' && !strcmp(rest + sl + 1, t->suffix)) return true;
    if (!t->split || strncmp(rest, t->stem, sl - 5)) return false;
    int e = -1, m = 0;
    return sscanf(rest + sl - 5, ".%d.%n", &e, &m) == 1 && m > 0 && e >= 0 &&
           !strcmp(rest + sl - 5 + m, t->suffix) && (*expert = e, true);
}

tensor_role tensor_role_of(const char *name, int *layer, int *expert)
{
    *layer = -1;
    *expert = -1;
    int l = -1, n = 0;
    const bool in_layer = sscanf(name, "blk.%d.%n", &l, &n) == 1 && n > 0;
    if (in_layer && l < 0) return TN_NONE;
    for (int r = 0; r < TN_COUNT; r++) {
        const role_row *t = &ROLES[r];
        if (t->layer != in_layer) continue;
        char whole[96];
        if (!t->layer ? !strcmp(name, format(whole, sizeof whole, (tensor_role)r, 0, true))
                      : matches(t, name + n, expert)) {
            *layer = in_layer ? l : -1;
            return (tensor_role)r;
        }
    }
    return TN_NONE;
}

int tensor_name_layer(const char *name)
{
    int l;
    return sscanf(name, "blk.%d", &l) == 1 ? l : -1;
}
