/* speculate.h: speculative decoding over model_forward. A drafter guesses
 * the next tokens; one batched forward over the last sampled token and the
 * guesses gives the logits of every position; the sampler's draft rule
 * (sampler_sample_draft) keeps the guesses left to right while they hold,
 * and the first position that refuses its guess gives the corrected token.
 *
 * Contract:
 *  - Drafters: SPEC_NGRAM (prompt lookup): the longest suffix of the
 *    history, ngram_max tokens down to ngram_min, that occurred earlier;
 *    the tokens after its most recent earlier occurrence are the draft,
 *    read on periodically past the history's end (the match and the
 *    suffix a period apart: "x y x y" drafts "x y x ..."; up
 *    to the step's length: 2 at first, 2 more after a step whose guesses
 *    all held, 1 less after one that failed, within 1..max_draft). spec_ngram_draft() is that lookup alone.
 *    SPEC_MTP: the model's own next-token-prediction block (model_create_mtp,
 *    the caller's draft model): after each step it reads the main model's
 *    output rows of the tokens kept, in one batch, and its last row's
 *    argmax is the first guess; each further guess is one more row of the
 *    block fed its own output row. Its cache holds the rows of the tokens
 *    kept; it sees the prompt when spec_create() comes before the prompt's
 *    forward (model_on_hidden; rows the main model evaluated earlier, such
 *    as a cached prefix, it starts after). SPEC_FN: the caller's function
 *    (tests give a known continuation with errors).
 *  - Batches of guesses are evaluated with model_exact_rows() on; other
 *    forwards (the prompt's) keep the model's own order.
 *  - The history's last token is the one the caller sampled last and the
 *    model has not seen: spec_push() the first (from the prompt's logits).
 *    spec_next() then hands out the following tokens one at a time, each
 *    given to sampler_accept() already, with the logits row that produced
 *    it (as plain decoding would have computed it). When the last step's
 *    tokens are all out it runs the next step: drafts after the history,
 *    one forward of the history's last token and the draft with the logits
 *    of every row, the guesses kept left to right and the first refusal's
 *    correction, every resulting token appended to the history. The
 *    model's cache then holds the history but its last token, always:
 *    model_n_past() == the history's length - 1 after a step.
 *  - Greedy output is token for token that of plain decoding as long as a
 *    batch of rows gives the bits single rows give (model.h: true on the
 *    CPU for every weight form; tests/unit/model/test_speculate.c checks
 *    it); with sampling the distribution of every token is unchanged.
 *  - The history (prompt and every token out) lives here: spec_create()
 *    takes the prompt, each step appends. No global state. */
#ifndef STRATA_SPECULATE_H
#define STRATA_SPECULATE_H

#include "runtime/model/model.h"
#include "runtime/model/sampler.h"

#include <stddef.h>
#include <stdint.h>

typedef enum spec_kind { SPEC_NONE = 0, SPEC_NGRAM, SPEC_MTP, SPEC_FN } spec_kind;

/* A caller's drafter (SPEC_FN): up to max tokens to follow hist[0..n) into out; returns how many. */
typedef int (*spec_draft_fn)(void *ctx, const int32_t *hist, int n, int max, int32_t *out);

typedef struct spec_params {
    spec_kind kind;
    model *mtp;                 /* SPEC_MTP's draft model (model_create_mtp of the main model) */
    spec_draft_fn fn;           /* SPEC_FN's drafter and its context */
    void *fn_ctx;
    int max_draft;              /* tokens drafted at most per step (1..SPEC_MAX_DRAFT) */
    int ngram_min, ngram_max;   /* suffix lengths tried, longest first */
} spec_params;

#define SPEC_MAX_DRAFT 16

/* ngram, 8 drafted at most, suffixes of 4 down to 2 tokens. */
spec_params spec_default_params(void);
/* Parses "none", "ngram" or "mtp" into *k; -1 for anything else.
 * spec_kind_name() is the name it parses ("fn" for SPEC_FN). */
int spec_kind_parse(const char *s, spec_kind *k);
const char *spec_kind_name(spec_kind k);

typedef struct spec_stats {
    long steps;                 /* batched forwards */
    long drafted, accepted;     /* guesses made, guesses kept */
} spec_stats;

/* max_draft tokens after the most recent earlier occurrence of the
 * longest suffix of hist[0..n) (ngram_max down to ngram_min tokens), read
 * on with its period past the end; 0 when no such suffix recurs. */
int spec_ngram_draft(const int32_t *hist, int n, int ngram_min, int ngram_max, int max_draft, int32_t *out);

typedef struct spec_ctx spec_ctx;

/* NULL with one line in err on bad parameters or out of memory. */
spec_ctx *spec_create(model *m, sampler *s, const spec_params *p, const int32_t *prompt, int n_prompt, char *err,
                      size_t errlen);
/* Appends a token the caller sampled itself (the first one, from the
 * prompt's logits). 0, or -1 when out of memory. */
int spec_push(spec_ctx *c, int32_t token);
/* The next token and (row non-NULL) its logits row, valid until the next
 * call. 0; 1 when a step is due and the model's context is full (nothing
 * handed out: generation ends there, as plain decoding's would); -1 with
 * one line in err. Drafts never pass the context. */
int spec_next(spec_ctx *c, int32_t *tok, const float **row, char *err, size_t errlen);
/* The prompt and every token handed out or waiting to be: *n of them. */
const int32_t *spec_history(const spec_ctx *c, int *n);
spec_stats spec_get_stats(const spec_ctx *c);
void spec_free(spec_ctx *c);

#endif
