/* hparam_keys.h: the model hyperparameters a pack carries, named once
 * (docs/pack-format.md). Each row is a manifest `hparams` name, the GGUF key
 * it comes from ("<arch>.<key>") and the kind of its value: `iq3pack build`
 * reads the GGUF keys into the manifest, `packindex` turns the manifest
 * names back into "@hparam <arch>.<key>" lines, and the runtime's hparams
 * (runtime/model/arch.c) asks for the same keys by id, so the three cannot
 * drift apart.
 *
 * Contract: HPARAM_KEYS[id] is the row of id (HPK_*), in the order the
 * index's @hparam lines are written. HPARAM_ROPE_SCALING (the RoPE scaling
 * type, a string) and HPARAM_ROPE_SCALE_LINEAR (llama.cpp's older GGUF name
 * for rope.scaling.factor, read when that is absent; no manifest member)
 * are keys with rules of their own, outside the table. Const data only. */
#ifndef STRATA_HPARAM_KEYS_H
#define STRATA_HPARAM_KEYS_H

#include <stddef.h>

/* HPARAM_UINT4: an array of 4 counts (M-RoPE's rope.dimension_sections), a
 * JSON array in the manifest and "a,b,c,d" in the index; the runtime asks
 * for element i as "<arch>.<key>[i]" (hparam_elem_split). */
enum { HPARAM_UINT, HPARAM_FLOAT, HPARAM_BOOL, HPARAM_STRING, HPARAM_UINT4 };

typedef enum hparam_id {
    HPK_LAYERS, HPK_EMBD, HPK_FF, HPK_EXPERT_FF, HPK_SHARED_EXPERT_FF, HPK_HEADS, HPK_KV_HEADS, HPK_HEAD_DIM,
    HPK_HEAD_DIM_V, HPK_Q_LORA_RANK, HPK_KV_LORA_RANK, HPK_HEAD_DIM_MLA, HPK_HEAD_DIM_V_MLA, HPK_EXPERTS,
    HPK_EXPERTS_USED, HPK_SHARED_EXPERTS, HPK_DENSE_LEAD_LAYERS, HPK_MOE_LAYER_STEP, HPK_GATING,
    HPK_NEXTN_LAYERS, HPK_SLIDING_WINDOW, HPK_EXPERT_WEIGHTS_SCALE, HPK_EXPERT_GROUPS, HPK_EXPERT_GROUPS_USED,
    HPK_CONTEXT, HPK_VOCAB, HPK_ROPE_DIM, HPK_ROPE_BASE, HPK_ROPE_SCALING_FACTOR, HPK_ROPE_SCALING_ATTN_FACTOR,
    HPK_ROPE_SCALING_ORIG_CONTEXT, HPK_ROPE_YARN_LOG_MULTIPLIER, HPK_NORM_EPS, HPK_NORM_EPS_LN,
    HPK_EXPERT_WEIGHTS_NORM, HPK_EMBEDDING_SCALE, HPK_RESIDUAL_SCALE, HPK_ATTENTION_SCALE, HPK_LOGIT_SCALE,
    HPK_SSM_CONV_KERNEL, HPK_SSM_INNER_SIZE, HPK_SSM_STATE_SIZE, HPK_SSM_TIME_STEP_RANK, HPK_SSM_GROUP_COUNT,
    HPK_FULL_ATTENTION_INTERVAL, HPK_INDEXER_HEADS, HPK_INDEXER_KEY_LENGTH, HPK_INDEXER_TOP_K,
    HPK_ROPE_SECTIONS, HPK_DEEPSTACK_LAYERS,
    HPK_COUNT
} hparam_id;

typedef struct hparam_key {
    const char *json; /* the manifest's `hparams` member */
    const char *key;  /* the GGUF key after "<arch>." */
    int kind;         /* HPARAM_UINT / HPARAM_FLOAT / HPARAM_BOOL / HPARAM_STRING / HPARAM_UINT4 */
} hparam_key;

extern const hparam_key HPARAM_KEYS[HPK_COUNT];
extern const hparam_key HPARAM_ROPE_SCALING;
extern const char HPARAM_ROPE_SCALE_LINEAR[];

/* key "<base>[i]" (an element of an array hyperparameter): 1 with its base
 * in base (n bytes) and i in *i; 0 for any other key. */
int hparam_elem_split(const char *key, char *base, size_t n, int *i);
/* Element i of an index's list value "a,b,c,d" into *out: 0, or -1 when
 * the list is shorter or an element is not a number. */
int hparam_list_elem(const char *list, int i, double *out);

#endif
