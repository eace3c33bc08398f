/* sampler.h: picks the next token from a row of logits.
 *
 * Contract:
 *  - A logit bias (bias_id/bias) is added to the logits before all else.
 *  - The chain is llama.cpp's default order: repetition / presence /
 *    frequency penalties over the last penalty_last_n accepted tokens, then
 *    top-k, top-p, min-p (these three on the untempered distribution), then
 *    temperature, then a draw. temp <= 0 means greedy: the argmax after the
 *    penalties, lowest token id on ties.
 *  - Randomness comes only from the sampler's own generator, seeded from
 *    params.seed: the same seed, logits and accepted tokens give the same
 *    tokens on every machine and thread count. sampler_reset() restarts it.
 *  - At least one token always survives the filters. The caller's logits
 *    are never modified. No global state; one sampler per sequence.
 *  - sampler_create returns NULL on bad parameters (n_vocab < 1, negative
 *    temperature is fine = greedy, top_p/min_p outside [0,1], repeat_penalty
 *    <= 0) or out of memory. */
#ifndef STRATA_SAMPLER_H
#define STRATA_SAMPLER_H

#include <stdint.h>

typedef struct sampler_params {
    float temp;               /* <= 0: greedy */
    int top_k;                /* <= 0: off */
    float top_p;              /* 1: off */
    float min_p;              /* 0: off */
    float repeat_penalty;     /* 1: off; > 1 discourages repeats */
    float presence_penalty;   /* 0: off; subtracted once from every token seen */
    float frequency_penalty;  /* 0: off; subtracted per occurrence */
    int penalty_last_n;       /* tokens of history the penalties see */
    uint64_t seed;
    const int32_t *bias_id;   /* n_bias token ids whose logits get bias[i] added first (OpenAI's logit_bias;
                               * copied by sampler_create) */
    const float *bias;
    int n_bias;
} sampler_params;

/* temp 0.8, top_k 40, top_p 0.95, min_p 0.05, no penalties, last_n 64, seed 0. */
sampler_params sampler_default_params(void);

typedef struct sampler sampler;

sampler *sampler_create(const sampler_params *p, int n_vocab);
/* Records a token the sequence now holds (prompt tokens too, if they should
 * be penalised). */
void sampler_accept(sampler *s, int32_t token);
int32_t sampler_sample(sampler *s, const float *logits);
/* The same among the tokens allow[] marks (1 = may come next; a grammar's
 * constraint): the others are out before any filter. No token allowed, or
 * allow NULL: sampler_sample(). */
int32_t sampler_sample_masked(sampler *s, const float *logits, const uint8_t *allow);
/* Speculative decoding: the token at a position where `draft` was guessed,
 * drawn so that its distribution is sampler_sample's (the draft kept with
 * its probability, else a draw from the others renormalised); greedy: the
 * argmax. *accepted is 1 when the result is the draft. The caller then
 * sampler_accept()s the result. */
int32_t sampler_sample_draft(sampler *s, const float *logits, int32_t draft, int *accepted);
void sampler_reset(sampler *s);
void sampler_free(sampler *s);

#endif
