/* arch_facts.c: the shared architecture rows (arch_facts.h). */
#include "formats/arch_facts.h"

#include <string.h>

const arch_facts ARCH_FACTS[ARCH_COUNT] = {
    [ARCH_LLAMA] = { "llama", ROPE_NORM },
    [ARCH_QWEN2] = { "qwen2", ROPE_NEOX },
    [ARCH_QWEN3] = { "qwen3", ROPE_NEOX },
    [ARCH_QWEN3MOE] = { "qwen3moe", ROPE_NEOX },
    [ARCH_QWEN2MOE] = { "qwen2moe", ROPE_NEOX },
    [ARCH_DEEPSEEK] = { "deepseek", ROPE_NORM },
    [ARCH_GRANITE] = { "granite", ROPE_NORM },
    [ARCH_GRANITEMOE] = { "granitemoe", ROPE_NORM },
    [ARCH_DOTS1] = { "dots1", ROPE_NEOX },
    [ARCH_ERNIE4_5_MOE] = { "ernie4_5-moe", ROPE_NORM },
    [ARCH_GLM4MOE] = { "glm4moe", ROPE_NEOX },
    [ARCH_LLAMA4] = { "llama4", ROPE_NORM },
    [ARCH_HUNYUAN_MOE] = { "hunyuan-moe", ROPE_NEOX },
    [ARCH_MINIMAX_M2] = { "minimax-m2", ROPE_NEOX },
    [ARCH_DEEPSEEK2] = { "deepseek2", ROPE_NORM },
    [ARCH_GPT_OSS] = { "gpt-oss", ROPE_NEOX },
    [ARCH_BAILINGMOE2] = { "bailingmoe2", ROPE_NEOX },
    [ARCH_BAILINGMOE] = { "bailingmoe", ROPE_NORM },
    [ARCH_OLMOE] = { "olmoe", ROPE_NEOX },
    /* not run by the runtime; a pack of one still says how it rotates */
    [ARCH_PHI3] = { "phi3", ROPE_NEOX },
    [ARCH_GEMMA] = { "gemma", ROPE_NEOX },
    [ARCH_GEMMA2] = { "gemma2", ROPE_NEOX },
    [ARCH_GEMMA3] = { "gemma3", ROPE_NEOX },
    [ARCH_FALCON] = { "falcon", ROPE_NEOX },
    [ARCH_GPTNEOX] = { "gptneox", ROPE_NEOX },
    [ARCH_STABLELM] = { "stablelm", ROPE_NEOX },
};

const arch_facts *arch_facts_find(const char *name)
{
    for (int i = 0; name && i < ARCH_COUNT; i++)
        if (!strcmp(ARCH_FACTS[i].name, name)) return &ARCH_FACTS[i];
    return NULL;
}

const char *rope_kind_name(rope_kind r)
{
    return r == ROPE_NEOX ? "neox" : "norm";
}
