/* tensor_names.h: the one table of GGUF tensor names (llama.cpp's
 * LLM_TENSOR_NAMES): every tensor a model may hold, by role, and the name
 * each architecture gives it.
 *
 * Contract:
 *  - A role (tensor_role) is one tensor of the model graph: attn_q,
 *    ffn_gate_exps ... Its GGUF name is "<stem>.<suffix>" for the model-wide
 *    tensors (token_embd.weight) and "blk.<layer>.<stem>.<suffix>" for the
 *    per-layer ones (blk.3.attn_q.weight, blk.3.attn_q.bias). This file's
 *    table is the only place a name is spelled: the pack builder, the loader,
 *    the shape checks, the CUDA backend and the tests' GGUF writer all ask it.
 *  - tensor_arch_role(arch, r) is the role that plays r in that architecture
 *    (GLM-4.5's and gpt-oss's FFN norm is their post_attention_norm);
 *    anything not listed plays itself.
 *  - tensor_name() writes the GGUF name of role r in layer l (l ignored for
 *    model-wide roles); tensor_label() the same without a ".weight" suffix,
 *    as error messages and imatrix keys name a weight; tensor_layer_label()
 *    "blk.<l>" for what concerns a whole layer. Each returns buf, truncated
 *    to n like snprintf.
 *  - tensor_split_name() is the pre-April-2024 per-expert name of a merged
 *    expert role ("blk.3.ffn_gate.5.weight"); "" for a role without one.
 *  - tensor_role_of() parses a name back: its role, layer (-1 model-wide)
 *    and, for a per-expert split name, its expert (else -1); TN_NONE for a
 *    name the table does not hold. The layer number is read as sscanf's %d
 *    reads it, as the pack builder always has.
 *  - tensor_name_layer() is the layer of any "blk.<l>..." name, -1 when the
 *    name is not a layer's.
 * Const tables only; no state. */
#ifndef STRATA_TENSOR_NAMES_H
#define STRATA_TENSOR_NAMES_H

#include <stddef.h>

typedef enum tensor_role {
    TN_NONE = -1,
    /* model-wide */
    TN_TOKEN_EMBD, TN_OUTPUT, TN_OUTPUT_NORM, TN_ROPE_FREQS,
    /* norms */
    TN_ATTN_NORM, TN_FFN_NORM, TN_ATTN_POST_NORM, TN_ATTN_Q_NORM, TN_ATTN_K_NORM, TN_LAYER_OUT_NORM,
    /* attention */
    TN_ATTN_Q, TN_ATTN_K, TN_ATTN_V, TN_ATTN_OUT, TN_ATTN_QKV,
    TN_ATTN_Q_BIAS, TN_ATTN_K_BIAS, TN_ATTN_V_BIAS, TN_ATTN_OUT_BIAS, TN_ATTN_SINKS,
    /* multi-head latent attention (DeepSeek V2/V3) */
    TN_ATTN_Q_A, TN_ATTN_Q_A_NORM, TN_ATTN_Q_B, TN_ATTN_KV_A_MQA, TN_ATTN_KV_A_NORM, TN_ATTN_K_B, TN_ATTN_V_B,
    /* dense FFN */
    TN_FFN_GATE, TN_FFN_UP, TN_FFN_DOWN,
    /* router and routed experts */
    TN_FFN_GATE_INP, TN_FFN_GATE_INP_BIAS, TN_FFN_EXP_PROBS_B,
    TN_FFN_GATE_EXPS, TN_FFN_UP_EXPS, TN_FFN_GATE_UP_EXPS, TN_FFN_DOWN_EXPS,
    TN_FFN_GATE_EXPS_BIAS, TN_FFN_UP_EXPS_BIAS, TN_FFN_DOWN_EXPS_BIAS,
    /* shared experts */
    TN_FFN_GATE_SHEXP, TN_FFN_UP_SHEXP, TN_FFN_DOWN_SHEXP, TN_FFN_GATE_INP_SHEXP,
    /* next-token-prediction blocks (GLM-4.5's MTP), which the pack leaves out */
    TN_NEXTN_EH_PROJ, TN_NEXTN_ENORM, TN_NEXTN_HNORM, TN_NEXTN_SHARED_HEAD_NORM, TN_NEXTN_EMBED_TOKENS,
    TN_NEXTN_SHARED_HEAD_HEAD,
    /* Gated DeltaNet layers (Qwen3-Next): the q/k/v and output-gate projections (attn_qkv, attn_gate;
     * ssm_in in the first GGUFs), the causal convolution, dt bias, A (no suffix: "blk.N.ssm_a"), the
     * beta/alpha projection, the gated norm and the output projection */
    TN_ATTN_GATE, TN_SSM_IN, TN_SSM_CONV1D, TN_SSM_DT, TN_SSM_A, TN_SSM_BA, TN_SSM_NORM, TN_SSM_OUT,
    TN_SSM_BETA, TN_SSM_ALPHA, /* Qwen3.5: the beta and alpha projections apart */
    /* DeepSeek V3.2's lightning indexer: its q from the q LoRA row, its key, the key's LayerNorm (weight and
     * bias), the per-head weights */
    TN_INDEXER_ATTN_Q_B, TN_INDEXER_ATTN_K, TN_INDEXER_K_NORM, TN_INDEXER_K_NORM_BIAS, TN_INDEXER_PROJ,
    TN_COUNT
} tensor_role;

tensor_role tensor_arch_role(const char *arch, tensor_role r);

char *tensor_name(char *buf, size_t n, tensor_role r, int layer);
char *tensor_label(char *buf, size_t n, tensor_role r, int layer);
char *tensor_layer_label(char *buf, size_t n, int layer);
char *tensor_split_name(char *buf, size_t n, tensor_role r, int layer, int expert);

tensor_role tensor_role_of(const char *name, int *layer, int *expert);
int tensor_name_layer(const char *name);

#endif
