/* engine.h: what the HTTP server needs from a model, and nothing more.
 *
 * The server is written against this table so that it can be built and
 * tested before the real forward pass exists (a fake engine drives the
 * tests) and so that wiring the real model is one adapter file.
 *
 * Contract:
 *  - Generation is pull-shaped: begin() makes a session from prompt ids and
 *    sampling parameters, step() samples one token, end() frees it. The
 *    server pulls tokens as the client can take them, so a client that goes
 *    away simply causes end() at the next token, and no thread is parked on
 *    a callback. Stopping early is just not calling step() again.
 *  - The server keeps at most its --parallel count of sessions alive; begin,
 *    step and end on DIFFERENT sessions may run concurrently from several
 *    threads (an engine that cannot do that serialises internally). tokenize
 *    and piece are called from any thread at any time.
 *  - step() fills out->id; when the session was begun with n_probs > 0 it
 *    also fills logprob and up to n_probs alternatives, best first.
 *  - Returned strings (name, chat_template, bos_text, eos_text) live as long
 *    as the engine; chat_template may be NULL (the pack carries none).
 *  - Every function that can fail returns -1 / NULL and writes one line
 *    into err. */
#ifndef STRATA_ENGINE_H
#define STRATA_ENGINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define ENGINE_MAX_PROBS 20

struct image_rgb;                                   /* runtime/vision/image.h */
typedef struct engine_pictures engine_pictures;     /* the engine's: a prompt's pictures */

/* A constraint on what may come next (JSON mode): fill() marks allow[id] 1
 * for each token that may, for the n_vocab of the vocabulary, and returns
 * true; false when nothing is constrained at this step. Called by step()
 * before each draw, on the session's thread. */
typedef struct engine_mask {
    bool (*fill)(void *ud, uint8_t *allow, int n_vocab);
    void *ud;
} engine_mask;

typedef struct engine_sampling {
    float              temperature; /* 0 = greedy */
    float              top_p;       /* 1 = off */
    int                top_k;       /* 0 = off */
    uint64_t           seed;
    int                n_probs;     /* alternatives wanted per token, 0..ENGINE_MAX_PROBS */
    const engine_mask *mask;        /* NULL: none; the fake engine answers its script's token if allowed, else
                                     * the lowest allowed id */
    float              presence_penalty, frequency_penalty; /* OpenAI's, over the tokens generated (0: off) */
    float              min_p;          /* 0: off */
    float              repeat_penalty; /* llama.cpp's, over the last 64 tokens generated; 0 or 1: off */
    int                draft_max;   /* speculative decoding: guesses at most a step (runtime/model/speculate.h);
                                     * 0: none. Off under a mask. */
    bool               draft_mtp;   /* the guesses from the next-token-prediction block (engine.mtp), else
                                     * n-gram lookup */
    const int32_t     *bias_id;     /* logit_bias: n_bias token ids (each < n_vocab) and the bias added to each */
    const float       *bias;
    int                n_bias;
    const engine_pictures *pictures; /* the prompt's pictures (tokenize_pictures made both), NULL: none; no
                                      * drafting then */
} engine_sampling;

typedef struct engine_token {
    int32_t id;
    float   logprob;
    int     n_top;
    int32_t top_id[ENGINE_MAX_PROBS];
    float   top_logprob[ENGINE_MAX_PROBS];
} engine_token;

typedef struct engine_session engine_session;

typedef struct engine {
    void       *self;
    const char *name;          /* the id /v1/models reports */
    int         n_ctx;         /* the most tokens one session may hold */
    const char *chat_template; /* the pack's tokenizer.chat_template or NULL */
    const char *bos_text;      /* "" when the vocabulary has none */
    int         n_vocab;       /* token ids are 0..n_vocab-1 */
    const char *eos_text;
    bool        mtp;           /* sessions may draft with the model's next-token-prediction block
                                * (engine_sampling.draft_mtp) */
    const char *vision;        /* the pack's vision projector type (clip.projector_type), NULL when it has
                                * none */
    const char *vision_off;    /* with a projector: why pictures are not taken (NULL: they are, through
                                * tokenize_pictures) */

    /* Special tokens written in text become their ids (templates rely on it). */
    int  (*tokenize)(void *self, const char *text, size_t len, bool add_special,
                     int32_t **ids, size_t *n);
    /* Optional (NULL: no pictures): text with one "<__media__>" marker per picture (none: the pictures
     * go first), tokenized with the pictures run through the vision projector. *ids is begin()'s prompt,
     * each picture a run of ids below 0, one per row, the same for the same pixels (so the prompt cache
     * keys on them), *pics what begin() needs for them (sampling.pictures; pictures_free). -1 with one
     * line in err (a marker count that does not match, a prompt ending with a picture). */
    int  (*tokenize_pictures)(void *self, const char *text, size_t len, bool add_special,
                              const struct image_rgb *pics, size_t n_pics, int32_t **ids, size_t *n,
                              engine_pictures **out, char *err, size_t errlen);
    void (*pictures_free)(engine_pictures *p);
    /* Same return convention as tokenizer_piece(): the full length, or -1. */
    int  (*piece)(void *self, int32_t id, char *buf, size_t bufsz);
    bool (*is_eog)(void *self, int32_t id);

    engine_session *(*begin)(void *self, const int32_t *prompt, size_t n_prompt,
                             const engine_sampling *s, char *err, size_t errlen);
    int  (*step)(engine_session *s, engine_token *out);
    void (*end)(engine_session *s);

    /* Optional (NULL: none): Prometheus text lines appended to /metrics
     * (the GPU expert cache's counters), written into buf, NUL-terminated.
     * Called from any thread. */
    void (*device_metrics)(void *self, char *buf, size_t bufsz);
    /* Optional (NULL: never any): how many of the session's prompt tokens
     * came from an earlier session's KV cache instead of being evaluated. */
    size_t (*cached)(const engine_session *s);
} engine;

#endif
