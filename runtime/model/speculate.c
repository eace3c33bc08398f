/* speculate.c: see speculate.h. */
#include "runtime/model/speculate.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct spec_ctx {
    model *m;
    sampler *s;
    spec_params p;
    int n_vocab;
    int32_t *hist;
    int n_hist, cap_hist;
    float *logits;              /* (1 + SPEC_MAX_DRAFT) rows */
    int cur;                    /* this step's draft length, 1..max_draft */
    int32_t out[1 + SPEC_MAX_DRAFT]; /* the last step's tokens; out[i] came from logits row i */
    int at, n_out;              /* out[at..n_out) not yet handed out */
    spec_stats st;
};

spec_params spec_default_params(void)
{
    spec_params p = { .kind = SPEC_NGRAM, .max_draft = 8, .ngram_min = 2, .ngram_max = 4 };
    return p;
}

int spec_kind_parse(const char *s, spec_kind *k)
{
    if (!strcmp(s, "none")) *k = SPEC_NONE;
    else if (!strcmp(s, "ngram")) *k = SPEC_NGRAM;
    else return -1;
    return 0;
}

int spec_ngram_draft(const int32_t *hist, int n, int ngram_min, int ngram_max, int max_draft, int32_t *out)
{
    if (ngram_min < 1) ngram_min = 1;
    for (int len = ngram_max; len >= ngram_min; len--) {
        if (len >= n) continue;
        const int32_t *suf = hist + n - len;
        /* the most recent earlier occurrence: starts at n - len - 1 and back */
        for (int at = n - len - 1; at >= 0; at--) {
            if (memcmp(hist + at, suf, (size_t)len * sizeof *hist) != 0) continue;
            /* the text from the match on repeats with period n - len - at: past
             * the history's end the draft goes on with what it drafted (a run
             * of one token drafts that token max_draft times, not once) */
            const int period = n - len - at;
            for (int k = 0; k < max_draft; k++)
                out[k] = at + len + k < n ? hist[at + len + k] : out[k - period];
            return max_draft;
        }
    }
    return 0;
}

spec_ctx *spec_create(model *m, sampler *s, const spec_params *p, const int32_t *prompt, int n_prompt, char *err,
                      size_t errlen)
{
    if (p->max_draft < 1 || p->max_draft > SPEC_MAX_DRAFT || p->ngram_min < 1 || p->ngram_max < p->ngram_min ||
        (p->kind == SPEC_FN && !p->fn)) {
        snprintf(err, errlen, "speculative decoding: a draft of 1 to %d tokens and 1 <= ngram_min <= ngram_max",
                 SPEC_MAX_DRAFT);
        return NULL;
    }
    spec_ctx *c = calloc(1, sizeof *c);
    if (!c) { snprintf(err, errlen, "out of memory"); return NULL; }
    c->m = m;
    c->s = s;
    c->p = *p;
    c->n_vocab = model_hp(m)->n_vocab;
    c->cap_hist = n_prompt + 256;
    c->hist = malloc((size_t)c->cap_hist * sizeof *c->hist);
    c->logits = malloc((size_t)(1 + SPEC_MAX_DRAFT) * (size_t)c->n_vocab * sizeof *c->logits);
    if (!c->hist || !c->logits) {
        spec_free(c);
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    if (n_prompt > 0) memcpy(c->hist, prompt, (size_t)n_prompt * sizeof *prompt);
    c->n_hist = n_prompt;
    c->cur = p->max_draft < 2 ? p->max_draft : 2;
    model_exact_rows(m, true);
    return c;
}

int spec_push(spec_ctx *c, int32_t token)
{
    if (c->n_hist == c->cap_hist) {
        int32_t *h = realloc(c->hist, (size_t)c->cap_hist * 2 * sizeof *h);
        if (!h) return -1;
        c->hist = h;
        c->cap_hist *= 2;
    }
    c->hist[c->n_hist++] = token;
    return 0;
}

/* One step: c->out[0..c->n_out) and their rows in c->logits. */
static int step(spec_ctx *c, char *err, size_t errlen)
{
    int32_t *out = c->out;
    c->n_out = c->at = 0;
    int32_t in[1 + SPEC_MAX_DRAFT];
    in[0] = c->hist[c->n_hist - 1];
    const int base = model_n_past(c->m);
    int room = model_n_ctx(c->m) - base - 1, max = c->cur < room ? c->cur : room;
    int k = 0;
    if (c->p.kind == SPEC_NGRAM && max > 0)
        k = spec_ngram_draft(c->hist, c->n_hist, c->p.ngram_min, c->p.ngram_max, max, in + 1);
    else if (c->p.kind == SPEC_FN && max > 0)
        k = c->p.fn(c->p.fn_ctx, c->hist, c->n_hist, max, in + 1);
    if (k < 0 || k > max) k = 0;
    if (model_forward(c->m, in, 1 + k, c->logits, true, err, errlen)) return -1;
    const size_t nv = (size_t)c->n_vocab;
    int n = 0, kept = 0;
    for (int i = 0; i <= k; i++) {
        const float *row = c->logits + (size_t)i * nv;
        int acc = 0;
        const int32_t t = i < k ? sampler_sample_draft(c->s, row, in[1 + i], &acc) : sampler_sample(c->s, row);
        sampler_accept(c->s, t);
        out[n++] = t;
        if (spec_push(c, t)) { snprintf(err, errlen, "out of memory"); return -1; }
        if (i < k && !acc) break;
        kept += i < k;
    }
    /* the cache keeps the input and the guesses that held */
    model_rewind(c->m, base + n);
    /* Each guess costs a row of the batch, and on an MoE the experts its
     * token routes to: the draft grows by 2 while every guess holds and
     * shrinks by 1 when one fails (as Hugging Face's assisted generation). */
    if (k > 0) c->cur = kept == k ? (c->cur + 2 < c->p.max_draft ? c->cur + 2 : c->p.max_draft)
                                  : (c->cur > 1 ? c->cur - 1 : 1);
    c->st.steps++;
    c->st.drafted += k;
    c->st.accepted += kept;
    c->n_out = n;
    return 0;
}

int spec_next(spec_ctx *c, int32_t *tok, const float **row, char *err, size_t errlen)
{
    if (c->at == c->n_out) {
        if (c->n_hist < 1) { snprintf(err, errlen, "speculative decoding: no token to start from"); return -1; }
        if (model_n_past(c->m) >= model_n_ctx(c->m)) return 1;
        if (step(c, err, errlen)) return -1;
    }
    *tok = c->out[c->at];
    if (row) *row = c->logits + (size_t)c->at * (size_t)c->n_vocab;
    c->at++;
    return 0;
}

const int32_t *spec_history(const spec_ctx *c, int *n)
{
    *n = c->n_hist;
    return c->hist;
}

spec_stats spec_get_stats(const spec_ctx *c) { return c->st; }

void spec_free(spec_ctx *c)
{
    if (!c) return;
    if (c->m) model_exact_rows(c->m, false);
    free(c->hist);
    free(c->logits);
    free(c);
}
