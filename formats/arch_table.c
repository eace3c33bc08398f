/* arch_table.c: the architecture rows (arch_table.h). The rows the runtime
 * runs come first, in the order its refusal lists them; the pack-only rows
 * follow. */
#include "formats/arch_table.h"

#include <stdio.h>
#include <string.h>

static const arch_info ARCH_TABLE[] = {
    /* Llama 1/2/3 and Mixtral (llama.cpp builds Mixtral as `llama` with experts, norm_w = true). */
    { .name = "llama", .rope = ROPE_NORM, .qk_norm = QK_NORM_NONE, .attn_bias = false, .norm_topk = true,
      .rope_freqs = true },
    { .name = "qwen2", .rope = ROPE_NEOX, .qk_norm = QK_NORM_NONE, .attn_bias = true,  .norm_topk = true },
    { .name = "qwen3", .rope = ROPE_NEOX, .qk_norm = QK_NORM_HEAD, .attn_bias = false, .norm_topk = true },
    { .name = "qwen3moe", .rope = ROPE_NEOX, .qk_norm = QK_NORM_HEAD, .attn_bias = false, .norm_topk = true },
    /* Qwen3-VL MoE's text model: Qwen3-MoE's layers under interleaved M-RoPE, which rotates a text position as
     * NEOX does when the sections cover the rotated dimensions (iq3pack build checks them); the
     * deepstack additions are zero for text tokens */
    { .name = "qwen3vlmoe", .rope = ROPE_NEOX, .qk_norm = QK_NORM_HEAD, .attn_bias = false, .norm_topk = true,
      .mrope_sections = true },
    /* Qwen1.5/Qwen2-MoE: qwen2 attention, raw top-k weights, a shared expert behind a sigmoid gate row. */
    { .name = "qwen2moe", .rope = ROPE_NEOX, .qk_norm = QK_NORM_NONE, .attn_bias = true,  .norm_topk = false },
    /* DeepSeek-MoE (v1): llama attention, the first layers dense, shared experts without a gate, raw top-k weights. */
    { .name = "deepseek", .rope = ROPE_NORM, .qk_norm = QK_NORM_NONE, .attn_bias = false, .norm_topk = false },
    /* IBM Granite 3.x, dense and MoE (with or without a shared expert): llama plus four multipliers. */
    { .name = "granite", .rope = ROPE_NORM, .qk_norm = QK_NORM_NONE, .attn_bias = false, .norm_topk = true,
      .rope_freqs = true, .granite_scales = true },
    { .name = "granitemoe", .rope = ROPE_NORM, .qk_norm = QK_NORM_NONE, .attn_bias = false, .norm_topk = true,
      .rope_freqs = true, .granite_scales = true },
    /* dots.llm1: qwen3 attention, DeepSeek-V3 routing (sigmoid, selection bias, scaled weights). */
    { .name = "dots1", .rope = ROPE_NEOX, .qk_norm = QK_NORM_HEAD, .attn_bias = false, .norm_topk = false,
      .scale_w = true },
    /* ERNIE 4.5 MoE: llama attention, softmax routing with a selection bias, shared experts. */
    { .name = "ernie4_5-moe", .rope = ROPE_NORM, .qk_norm = QK_NORM_NONE, .attn_bias = false, .norm_topk = true },
    /* GLM-4.5 / 4.6 / 4.5-Air: q/k/v biases, partial NEOX rotary, optional q/k norms, DeepSeek-V3 routing,
     * the FFN norm named post_attention_norm; its next-token-prediction block drafts (--draft mtp). */
    { .name = "glm4moe", .rope = ROPE_NEOX, .qk_norm = QK_NORM_HEAD, .attn_bias = true, .norm_topk = false,
      .scale_w = true, .qk_norm_optional = true, .mtp = true },
    /* Llama 4 (Scout, Maverick): llama attention with no-RoPE layers, chunked attention, L2 q/k norms,
     * top-k sigmoid routing whose weight scales the expert's input, a shared expert. */
    { .name = "llama4", .rope = ROPE_NORM, .qk_norm = QK_NORM_NONE, .attn_bias = false, .norm_topk = false,
      .rope_freqs = true, .no_rope_step = 4, .attn_chunk = 8192, .l2_qk_norm = true, .weight_before_ffn = true },
    /* Hunyuan-A13B: llama-like attention with per-head q/k norms after RoPE, softmax top-k, a shared expert. */
    { .name = "hunyuan-moe", .rope = ROPE_NEOX, .qk_norm = QK_NORM_HEAD, .attn_bias = false, .norm_topk = true,
      .qk_norm_after_rope = true },
    /* MiniMax-M2: q/k norms over the whole projected width, partial NEOX rotary, sigmoid routing with a
     * selection bias, no shared expert. */
    { .name = "minimax-m2", .rope = ROPE_NEOX, .qk_norm = QK_NORM_FULL, .attn_bias = false, .norm_topk = true },
    /* DeepSeek V2/V3, Kimi K2: multi-head latent attention, DeepSeek-MoE's FFN (dense lead, shared
     * experts), routed weights times expert_weights_scale, raw top-k unless expert_weights_norm; V3's
     * next-token-prediction block drafts (--draft mtp). */
    { .name = "deepseek2", .rope = ROPE_NORM, .qk_norm = QK_NORM_NONE, .attn_bias = false, .norm_topk = false,
      .scale_w = true, .mla = true, .mtp = true },
    /* DeepSeek V3.2 and GLM-5 (glm-dsa): deepseek2's layers with the lightning indexer's sparse
     * attention; llama.cpp's LayerNorm eps there is 1e-6 for DeepSeek, its default 0 for GLM-5. Their
     * next-token-prediction blocks are not drafted with (they would need the indexer too). */
    { .name = "deepseek32", .rope = ROPE_NORM, .qk_norm = QK_NORM_NONE, .attn_bias = false, .norm_topk = false,
      .scale_w = true, .mla = true, .dsa = true, .dsa_rope = ROPE_NEOX, .dsa_ln_eps = 1e-6f },
    { .name = "glm-dsa", .rope = ROPE_NORM, .qk_norm = QK_NORM_NONE, .attn_bias = false, .norm_topk = false,
      .scale_w = true, .mla = true, .dsa = true, .dsa_rope = ROPE_NORM, .dsa_ln_eps = 0.0f, .sigmoid_default = true,
      .dsa_shared_ctx = 1048576 },
    /* gpt-oss: q/k/v/o biases, attention sinks, sliding-window attention on every other layer, the FFN
     * norm named post_attention_norm, softmax over the chosen router logits, biased experts with a
     * clamped SwiGLU. */
    { .name = "gpt-oss", .rope = ROPE_NEOX, .qk_norm = QK_NORM_NONE, .attn_bias = true, .norm_topk = false,
      .attn_sinks = true, .swa_pattern = 2, .oai_moe = true },
    /* Ling 2.0 (bailingmoe2): fused qkv, per-head q/k norms, partial NEOX rotary, DeepSeek V3's routing
     * (sigmoid, selection bias, groups, scaled weights), dense lead, shared experts; its
     * next-token-prediction block, ending in its own layer_output_norm, drafts (--draft mtp). */
    { .name = "bailingmoe2", .rope = ROPE_NEOX, .qk_norm = QK_NORM_HEAD, .attn_bias = false, .norm_topk = true,
      .scale_w = true, .mtp = true, .mtp_out_norm = true },
    /* Ling v1 (bailingmoe): fused qkv, llama's rotation, softmax top-k, shared experts. */
    { .name = "bailingmoe", .rope = ROPE_NORM, .qk_norm = QK_NORM_NONE, .attn_bias = false, .norm_topk = false },
    /* Qwen3-Next: Gated DeltaNet layers, every full_attention_interval-th one full attention with a
     * per-head output gate in its q projection, per-head q/k norms and partial NEOX rotary; the FFN norm
     * named post_attention_norm; softmax routing renormalised, a shared expert behind a sigmoid gate. */
    { .name = "qwen3next", .rope = ROPE_NEOX, .qk_norm = QK_NORM_HEAD, .attn_bias = false, .norm_topk = true,
      .scale_w = true, .gated_delta_net = true, .attn_out_gate = true },
    /* Qwen3.5 (MoE and dense): Qwen3-Next's layers with the beta and alpha projections apart and the
     * key heads tiled over the value heads (value head h reads key head h mod key heads); its
     * interleaved M-RoPE rotates a text position as NEOX does when the sections cover the rotated
     * dimensions (iq3pack build checks them) */
    { .name = "qwen35moe", .rope = ROPE_NEOX, .qk_norm = QK_NORM_HEAD, .attn_bias = false, .norm_topk = true,
      .scale_w = true, .gated_delta_net = true, .attn_out_gate = true, .gdn_tiled_heads = true, .mrope_sections = true },
    { .name = "qwen35", .rope = ROPE_NEOX, .qk_norm = QK_NORM_HEAD, .attn_bias = false, .norm_topk = true,
      .gated_delta_net = true, .attn_out_gate = true, .gdn_tiled_heads = true, .mrope_sections = true },
    /* OLMoE normalises q and k over the whole projected width, and keeps the raw top-k probabilities. */
    { .name = "olmoe", .rope = ROPE_NEOX, .qk_norm = QK_NORM_FULL, .attn_bias = false, .norm_topk = false },
    /* not run by the runtime; a pack of one still says how it rotates */
    { .name = "phi3", .rope = ROPE_NEOX, .pack_only = true },
    { .name = "gemma", .rope = ROPE_NEOX, .pack_only = true },
    { .name = "gemma2", .rope = ROPE_NEOX, .pack_only = true },
    { .name = "gemma3", .rope = ROPE_NEOX, .pack_only = true },
    { .name = "falcon", .rope = ROPE_NEOX, .pack_only = true },
    { .name = "gptneox", .rope = ROPE_NEOX, .pack_only = true },
    { .name = "stablelm", .rope = ROPE_NEOX, .pack_only = true },
};

const arch_info *arch_table_row(size_t i)
{
    return i < sizeof ARCH_TABLE / sizeof ARCH_TABLE[0] ? &ARCH_TABLE[i] : NULL;
}

const arch_info *arch_table_find(const char *name)
{
    for (size_t i = 0; name && i < sizeof ARCH_TABLE / sizeof ARCH_TABLE[0]; i++)
        if (!strcmp(ARCH_TABLE[i].name, name)) return &ARCH_TABLE[i];
    return NULL;
}

const char *rope_kind_name(rope_kind r)
{
    return r == ROPE_NEOX ? "neox" : "norm";
}

int arch_table_runnable_names(char *buf, size_t n)
{
    int k = n ? snprintf(buf, n, "%s", "") : 0;
    const char *sep = "";
    for (size_t i = 0; i < sizeof ARCH_TABLE / sizeof ARCH_TABLE[0] && (size_t)k < n; i++)
        if (!ARCH_TABLE[i].pack_only) {
            k += snprintf(buf + k, n - (size_t)k, "%s%s", sep, ARCH_TABLE[i].name);
            sep = ", ";
        }
    return k;
}
