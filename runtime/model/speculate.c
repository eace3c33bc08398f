/* speculate.c: see speculate.h. */
#include "runtime/model/speculate.h"

#include <limits.h>
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
    /* SPEC_MTP: the main model's output rows at positions pend_pos.. not yet
     * read by the draft model d (their next token not yet known; the rows of
     * refused guesses wait there too, never read, until the next forward's
     * rows replace them), d's row 0's position, the position whose row gave
     * d_logits (they predict the token two after it; INT_MIN: none), and d's
     * last output row (g) */
    model *d;
    int D;
    float *pend;
    int pend_pos, pend_n, pend_cap;
    int d_base, d_last;
    float *d_logits, *g, *g_in;
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
    else if (!strcmp(s, "mtp")) *k = SPEC_MTP;
    else return -1;
    return 0;
}

const char *spec_kind_name(spec_kind k)
{
    return k == SPEC_NGRAM ? "ngram" : k == SPEC_MTP ? "mtp" : k == SPEC_FN ? "fn" : "none";
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

/* The draft model reads the pending rows whose next token the history
 * holds, in one batch (SPEC_MTP). */
static int drain(spec_ctx *c, char *err, size_t errlen)
{
    int n = c->n_hist - 1 - c->pend_pos;
    if (n > c->pend_n) n = c->pend_n;
    if (n <= 0) return 0;
    const int t0 = c->pend_pos, have = model_n_past(c->d);
    /* d's rows after t0 (guesses, or a rewound main model's) go; a gap
     * before t0 (a cached prefix, a first call) starts d over at t0 */
    if (c->d_base >= 0 && t0 - c->d_base >= 0 && t0 - c->d_base <= have) {
        model_rewind(c->d, t0 - c->d_base);
    } else {
        model_rewind(c->d, 0);
        c->d_base = t0;
    }
    if (model_forward_mtp(c->d, c->hist + t0 + 1, c->pend, n, c->d_logits, false, err, errlen)) return -1;
    c->d_last = t0 + n - 1;
    memmove(c->pend, c->pend + (size_t)n * c->D, (size_t)(c->pend_n - n) * c->D * sizeof *c->pend);
    c->pend_pos += n;
    c->pend_n -= n;
    return 0;
}

/* The main model's output rows (model_on_hidden): kept until their next
 * token is known, then read by the draft model. */
static int main_rows(void *ctx, int pos0, int B, const float *rows, char *err, size_t errlen)
{
    spec_ctx *c = ctx;
    if (c->pend_n > 0 && pos0 >= c->pend_pos && pos0 <= c->pend_pos + c->pend_n)
        c->pend_n = pos0 - c->pend_pos; /* the main model rewound: later rows are gone */
    else
        c->pend_n = 0;
    if (c->pend_n == 0) c->pend_pos = pos0;
    if (c->pend_n + B > c->pend_cap) {
        const int cap = c->pend_n + B;
        float *p = realloc(c->pend, (size_t)cap * c->D * sizeof *p);
        if (!p) { snprintf(err, errlen, "out of memory"); return -1; }
        c->pend = p;
        c->pend_cap = cap;
    }
    memcpy(c->pend + (size_t)c->pend_n * c->D, rows, (size_t)B * c->D * sizeof *rows);
    c->pend_n += B;
    return drain(c, err, errlen);
}

/* The draft model's own output rows: the last one drafts the next guess. */
static int draft_rows(void *ctx, int pos0, int B, const float *rows, char *err, size_t errlen)
{
    spec_ctx *c = ctx;
    (void)pos0; (void)err; (void)errlen;
    memcpy(c->g, rows + (size_t)(B - 1) * c->D, (size_t)c->D * sizeof *rows);
    return 0;
}

static int32_t argmax(const float *v, int n)
{
    int32_t best = 0;
    for (int i = 1; i < n; i++)
        if (v[i] > v[best]) best = i;
    return best;
}

/* Up to max guesses after the history from the draft model (0 when its
 * rows do not reach the history's end). */
static int mtp_draft(spec_ctx *c, int max, int32_t *out, char *err, size_t errlen)
{
    if (drain(c, err, errlen)) return -1;
    if (c->d_last != c->n_hist - 2 || max < 1) return 0;
    out[0] = argmax(c->d_logits, c->n_vocab);
    int k = 1;
    for (; k < max; k++) {
        if (c->d_last + k - c->d_base >= model_n_ctx(c->d)) break;
        memcpy(c->g_in, c->g, (size_t)c->D * sizeof *c->g);
        if (model_forward_mtp(c->d, &out[k - 1], c->g_in, 1, c->d_logits, false, err, errlen)) return -1;
        out[k] = argmax(c->d_logits, c->n_vocab);
    }
    /* the chain's rows were guesses: d keeps the rows of tokens kept */
    model_rewind(c->d, c->d_last + 1 - c->d_base);
    c->d_last = INT_MIN;
    return k;
}

spec_ctx *spec_create(model *m, sampler *s, const spec_params *p, const int32_t *prompt, int n_prompt, char *err,
                      size_t errlen)
{
    if (p->kind == SPEC_MTP && !p->mtp) {
        snprintf(err, errlen, "speculative decoding: --draft mtp needs the model's next-token-prediction block");
        return NULL;
    }
    if (p->max_draft < 1 || p->max_draft > SPEC_MAX_DRAFT || p->ngram_min < 1 || p->ngram_max < p->ngram_min ||
        (p->kind == SPEC_FN && !p->fn)) {
        snprintf(err, errlen, "speculative decoding: a draft of 1 to %d tokens and 1 <= ngram_min <= ngram_max",
                 SPEC_MAX_DRAFT);
        return NULL;
    }
    if (m && model_hp(m)->arch.gated_delta_net) {
        /* a refused guess would have to be taken back out of the recurrent state, which holds only the
         * last position */
        snprintf(err, errlen, "speculative decoding: %s's Gated DeltaNet layers cannot take back refused guesses yet "
                 "(run without --draft)", model_hp(m)->arch.name);
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
    c->d_base = -1;
    c->d_last = INT_MIN;
    if (p->kind == SPEC_MTP) {
        c->d = p->mtp;
        c->D = model_hp(m)->n_embd;
        c->d_logits = malloc((size_t)c->n_vocab * sizeof *c->d_logits);
        c->g = malloc((size_t)c->D * sizeof *c->g);
        c->g_in = malloc((size_t)c->D * sizeof *c->g_in);
        if (!c->d_logits || !c->g || !c->g_in) {
            spec_free(c);
            snprintf(err, errlen, "out of memory");
            return NULL;
        }
        if (model_on_hidden(m, main_rows, c, err, errlen) || model_on_hidden(c->d, draft_rows, c, err, errlen)) {
            spec_free(c);
            return NULL;
        }
    }
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
    else if (c->p.kind == SPEC_MTP && (k = mtp_draft(c, max, in + 1, err, errlen)) < 0)
        return -1;
    else if (c->p.kind == SPEC_FN && max > 0)
        k = c->p.fn(c->p.fn_ctx, c->hist, c->n_hist, max, in + 1);
    if (k < 0 || k > max) k = 0;
    model_exact_rows(c->m, true);
    const int rc = model_forward(c->m, in, 1 + k, c->logits, true, err, errlen);
    model_exact_rows(c->m, false);
    if (rc) return -1;
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
    if (c->m && c->d) {
        char e[8];
        model_on_hidden(c->m, NULL, NULL, e, sizeof e);
        model_on_hidden(c->d, NULL, NULL, e, sizeof e);
    }
    free(c->pend);
    free(c->d_logits);
    free(c->g);
    free(c->g_in);
    free(c->hist);
    free(c->logits);
    free(c);
}
