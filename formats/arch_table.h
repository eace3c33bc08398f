/* arch_table.h: the one architecture table (llama.cpp's LLM_ARCH_NAMES plus
 * what its graph builders decide by architecture), one row per
 * architecture: its GGUF name (general.architecture), its RoPE layout,
 * which llama.cpp decides by architecture, not by a key, and how the
 * runtime's one forward pass is configured for it. `iq3pack build` records
 * the layout in the manifest (`rope_type`); the runtime copies a row into
 * its hyperparameters (runtime/model/arch.c) and the graph reads the flags.
 * Adding an architecture is adding a row here (plus, where it names a
 * tensor its own way, an ARCH_ROLES row in tensor_names.c) and teaching the
 * graph (runtime/model/forward.c) whatever new step its flags ask for.
 *
 * Contract: rows are found by name; arch_table_find() is NULL for a name
 * without a row (or NULL). arch_table_row(i) is the i-th row in table
 * order (the order the runtime lists what it runs), NULL past the last.
 * A pack_only row is known to llama.cpp and recorded by the pack, never
 * run: the runtime refuses it as it refuses an unknown name.
 * rope_kind_name() is the manifest's spelling ("norm", "neox"). Const data
 * only. */
#ifndef STRATA_ARCH_TABLE_H
#define STRATA_ARCH_TABLE_H

#include <stdbool.h>
#include <stddef.h>

typedef enum rope_kind { ROPE_NORM, ROPE_NEOX } rope_kind; /* rotate adjacent pairs / the two halves */
typedef enum qk_norm_kind { QK_NORM_NONE, QK_NORM_HEAD, QK_NORM_FULL } qk_norm_kind;

typedef struct arch_info {
    const char *name;           /* GGUF general.architecture */
    rope_kind rope;
    bool pack_only;             /* recorded by the pack, not run by the runtime */
    qk_norm_kind qk_norm;
    bool attn_bias;             /* q/k/v biases (qwen2) */
    bool norm_topk;             /* renormalise the top-k router weights */
    bool rope_freqs;            /* the graph divides RoPE angles by rope_freqs.weight when present (Llama 3) */
    bool granite_scales;        /* the graph reads Granite's four multipliers (model_hparams) */
    bool scale_w;               /* the routed weights are multiplied by expert_weights_scale */
    bool qk_norm_optional;      /* q/k norms applied where the layer has them (GLM-4.5 has, GLM-4.5-Air not) */
    bool qk_norm_after_rope;    /* the q/k norms follow RoPE instead of preceding it (Hunyuan) */
    /* Llama 4: every no_rope_step-th layer has no RoPE and full attention
     * (its queries scaled by the temperature log(floor((pos+1)/chunk)+1)*0.1+1),
     * the others attend within chunks of attn_chunk positions and, unless
     * the model has 128 experts, normalise q and k per head (no weight)
     * after RoPE; the router's sigmoid weight multiplies an expert's input,
     * not its output. */
    int no_rope_step, attn_chunk;
    bool l2_qk_norm, weight_before_ffn;
    /* DeepSeek V2/V3's multi-head latent attention, as llama.cpp runs it
     * (absorbed): q from a low-rank pair (or one matrix), k and v share one
     * compressed row per position (kv_lora_rank, normed) plus a rotated
     * part n_rot wide; each head's q_nope goes through attn_k_b into that
     * row's space, its attention output back through attn_v_b. One KV
     * "head": K = [compressed, rotated], V = compressed. */
    bool mla;
    /* gpt-oss: a learned sink logit per head in each softmax's denominator
     * (attn_sinks) and a bias on o; every swa_pattern-th layer attends to
     * all positions, the others only to the last attention.sliding_window
     * (llama.cpp's pattern: layer l slides when l % swa_pattern <
     * swa_pattern - 1); routed by the router's biased logits, the chosen
     * ones' weights a softmax over those K logits; every expert product
     * plus its bias row, the activation clamped:
     * min(g, 7) sigmoid(1.702 min(g, 7)) (clamp(u, -7, 7) + 1). */
    bool attn_sinks;
    int swa_pattern;
    bool oai_moe;
    /* Its next-token-prediction blocks (nextn_predict_layers) are DeepSeek
     * V3's MTP module: eh_proj [enorm(embed); hnorm(h)], one decoder block,
     * shared_head_norm, the head. Packs keep them (unless --no-nextn) and
     * `--draft mtp` runs them; other architectures' are left out of packs.
     * mtp_out_norm: the block ends in its layer_output_norm instead (Ling
     * 2.0's final_layernorm; it has no shared_head_norm). */
    bool mtp;
    bool mtp_out_norm;
    /* Qwen3-Next's hybrid stack: every layer but each full_attention_interval-th
     * (default 4) is a Gated DeltaNet layer (linear attention with a
     * recurrent state per sequence: a short causal convolution over its q, k
     * and v, then the gated delta rule; runtime/model/forward.c); the full
     * attention layers' q projection carries a per-head gate, and their
     * output is multiplied by its sigmoid before o (attn_out_gate). */
    bool gated_delta_net;
    bool attn_out_gate;
    /* Qwen3.5: value head h reads key head h % key heads (ggml_repeat); Qwen3-Next's reads
     * h / (value heads / key heads) */
    bool gdn_tiled_heads;
    /* Qwen3.5's interleaved M-RoPE (rope.dimension_sections): a text position rotates a pair as NEOX
     * does when the first three sections cover the rotated pairs, the only case strata runs;
     * iq3pack build refuses a source whose sections leave pairs to the fourth */
    bool mrope_sections;
    /* DeepSeek V3.2's sparse attention (DSA) on top of mla: a lightning
     * indexer per layer picks the attention.indexer.top_k positions each
     * query attends to. Indexer q = attn_q_b of the normed q LoRA row
     * (indexer.head_count heads of indexer.key_length), one indexer key a
     * position = indexer.attn_k of the normed input through a LayerNorm
     * (eps dsa_ln_eps); each rotates its first n_rot dimensions (dsa_rope:
     * DeepSeek's NEOX, GLM-5's adjacent pairs); score(q, s) = sum_h
     * w_h relu(q_h . k_s) / sqrt(key_length x head_count), w = indexer.proj
     * of the normed input. With no more positions than top_k it is plain
     * MLA. sigmoid_default: the router is a sigmoid when expert_gating_func
     * is absent (GLM-5). Layers that reuse an earlier layer's choice
     * (GLM-5.2's attention.indexer.types 0; llama.cpp assumes its pattern
     * without the key from a context of dsa_shared_ctx on) are not run:
     * iq3pack build refuses them. */
    bool dsa;
    rope_kind dsa_rope;
    float dsa_ln_eps;
    bool sigmoid_default;
    int dsa_shared_ctx;
} arch_info;

const arch_info *arch_table_find(const char *name);
const arch_info *arch_table_row(size_t i);
const char *rope_kind_name(rope_kind r);
/* The names of the rows the runtime runs (not pack_only), in table order,
 * ", "-separated, into buf (truncated to n); returns snprintf's count. For
 * the refusals that list what is supported, so the list cannot go stale. */
int arch_table_runnable_names(char *buf, size_t n);

#endif
