/* engine_model.h: the real model behind engine.h, for `strata serve PACK`.
 *
 * Contract:
 *  - engine_model_open() loads a finished pack once (loader.h) and builds
 *    `parallel` model contexts over its one set of weights: each context
 *    owns its KV cache, scratch and thread pool, the weights are shared
 *    read-only. A session takes a free context for its whole life, so
 *    sessions never wait on each other.
 *  - Output is what `strata run` gives for the same prompt ids and sampler
 *    parameters (batched prefill, then one token per step, the same
 *    sampler with min_p and penalties off), whatever the thread count.
 *  - Prompt cache: each context remembers the ids its KV cache holds. A
 *    session takes the free context sharing the longest prefix with its
 *    prompt and evaluates only the rest (at least the last prompt token,
 *    for its logits); cached() says how many were reused. A chat's next
 *    turn thus costs its new tokens, not the whole conversation again.
 *    The rest is evaluated as its own batch, so logits may differ from a
 *    whole prefill in the last bits, as in llama.cpp's server. With
 *    no_prompt_cache every session starts over. Sliding-window layers
 *    keep only n_batch positions of slack: a longer rewind starts over.
 *  - is_eog(): the tokenizer's EOS, the metadata's EOT/EOM ids, and the
 *    control tokens that end a turn in the template families we render
 *    (<|im_end|>, <|eot_id|>, <|end|>, <end_of_turn>, <|return|>, ...);
 *    where <|return|> and <|call|> both exist (gpt-oss's harmony), <|end|>
 *    is not one: it closes the analysis message inside the turn.
 *  - Logprobs are the log-softmax of the raw logits (the model's own
 *    distribution, before temperature and filters), alternatives best
 *    first, lower id first on ties.
 *  - chat_template is tokenizer.chat_template of the pack's tokenizer.gguf
 *    (NULL when absent); name is the pack directory's base name.
 *  - begin() when every context is busy fails with a message: the server
 *    keeps at most `parallel` sessions, so that is a caller bug.
 * device_metrics: the GPU expert cache's counters as Prometheus text
 * (strata_device_gpu 0 and zeros on the CPU), a snapshot taken after each
 * forward pass.
 * Failures are one line in err naming the pack. engine_model_free() frees
 * everything, sessions must have ended. */
#ifndef STRATA_ENGINE_MODEL_H
#define STRATA_ENGINE_MODEL_H

#include <stdbool.h>
#include <stddef.h>

#include "runtime/device/device.h"
#include "runtime/serve/engine.h"
#include "runtime/model/expert_tier.h"
#include "runtime/model/loader.h"
#include "runtime/model/model.h"

typedef struct engine_model_opts {
    int     parallel;  /* contexts; <= 0: 1 */
    int     n_ctx;     /* tokens per context; <= 0: the model's n_ctx_train */
    int     n_threads; /* per context; <= 0: online cores / parallel, at least 1 */
    kv_type kv;
    /* device.h options (NULL: the CPU). CUDA serves one context: --parallel
     * above 1 is refused under --device cuda and stays on the CPU under auto.
     * --record-routing: every context records; the sum is written by
     * engine_model_free(). */
    const device_opts *dev;
    bool no_prompt_cache; /* every session starts from an empty KV cache */
    /* called as the pack's dense weights are read (loader_open_progress) */
    loader_progress_fn progress;
    void *progress_ctx;
    /* the memory budget's verdict (runtime/cli: cli_mem_plan; NULL: the
     * whole pack in memory): with plan->tier the routed experts go through
     * one RAM tier that every context shares (runtime/model/expert_tier.h) */
    const tier_plan *plan;
} engine_model_opts;

engine *engine_model_open(const char *pack_dir, const engine_model_opts *o, char *err,
                          size_t errlen);
void engine_model_free(engine *e);

#endif
