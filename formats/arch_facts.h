/* arch_facts.h: what both the pack tools and the runtime know about a model
 * architecture, one row per architecture: its GGUF name
 * (general.architecture) and its RoPE layout, which llama.cpp decides by
 * architecture, not by a key. `iq3pack build` records the layout in the
 * manifest (`rope_type`); the runtime's architecture table
 * (runtime/model/arch.c) points each of its rows at one of these and keeps
 * only the facts the forward pass alone needs.
 *
 * Contract: ARCH_FACTS[id] is the row of id (ARCH_*); the rows before
 * ARCH_N_RUN are the architectures the runtime runs, the rest are known to
 * llama.cpp and only recorded by the pack. arch_facts_find() is NULL for a
 * name without a row. rope_kind_name() is the manifest's spelling ("norm",
 * "neox"). Const data only. */
#ifndef STRATA_ARCH_FACTS_H
#define STRATA_ARCH_FACTS_H

typedef enum rope_kind { ROPE_NORM, ROPE_NEOX } rope_kind; /* rotate adjacent pairs / the two halves */

typedef enum arch_id {
    ARCH_LLAMA, ARCH_QWEN2, ARCH_QWEN3, ARCH_QWEN3MOE, ARCH_QWEN2MOE, ARCH_DEEPSEEK, ARCH_GRANITE,
    ARCH_GRANITEMOE, ARCH_DOTS1, ARCH_ERNIE4_5_MOE, ARCH_GLM4MOE, ARCH_LLAMA4, ARCH_HUNYUAN_MOE,
    ARCH_MINIMAX_M2, ARCH_DEEPSEEK2, ARCH_GPT_OSS, ARCH_BAILINGMOE2, ARCH_BAILINGMOE, ARCH_OLMOE,
    ARCH_N_RUN,
    ARCH_PHI3 = ARCH_N_RUN, ARCH_GEMMA, ARCH_GEMMA2, ARCH_GEMMA3, ARCH_FALCON, ARCH_GPTNEOX, ARCH_STABLELM,
    ARCH_COUNT
} arch_id;

typedef struct arch_facts {
    const char *name; /* GGUF general.architecture */
    rope_kind rope;
} arch_facts;

extern const arch_facts ARCH_FACTS[ARCH_COUNT];

const arch_facts *arch_facts_find(const char *name);
const char *rope_kind_name(rope_kind r);

#endif
