/* engine_fake.h: a deterministic stand-in for the model, for tests only.
 *
 * It tokenizes with a real tokenizer (any GGUF carrying tokenizer.* keys,
 * e.g. the shipped model's, or a pack's tokenizer.gguf) and "generates" by
 * replaying the tokens of a fixed story, then the end-of-generation token.
 * Which story is a function of the seed alone when temperature > 0 (story
 * 0 when greedy), so a streamed and a non-streamed request with the same
 * seed must give the same text: the tests rely on it. Logprobs are made up
 * but stable. delay_ms sleeps before each token so concurrency and
 * disconnect tests have a generation that lasts long enough to interrupt.
 *
 * Linked into every cmocka suite (tests/lib/), and served over HTTP by
 * the test program strata-fake (strata_fake_main.c) for the end-to-end
 * scripts; never part of bin/strata. */
#ifndef STRATA_ENGINE_FAKE_H
#define STRATA_ENGINE_FAKE_H

#include <stdbool.h>
#include <stddef.h>

#include "runtime/serve/engine.h"

typedef struct fake_engine_opts {
    int         n_ctx;         /* 0: 512 */
    int         delay_ms;      /* sleep before each token */
    const char *chat_template; /* reported as the pack's template; NULL: none */
    const char *script;        /* replayed instead of story 0, special tokens written as text
                                * becoming theirs (a gpt-oss turn); NULL: the story */
    bool        script_always; /* the script answers sampled requests too (agents sample) */
} fake_engine_opts;

/* The texts the fake engine replays; index = story chosen for a request. */
#define FAKE_ENGINE_N_STORIES 3
const char *fake_engine_story(int i);
/* The story a request with these parameters replays. */
int fake_engine_story_for(float temperature, unsigned long long seed);

engine *fake_engine_new(const char *gguf_path, const fake_engine_opts *o, char *err, size_t errlen);
void fake_engine_free(engine *e);

#endif
