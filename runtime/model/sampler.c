/* sampler.c: see sampler.h. Candidates are (id, logit) pairs; every filter
 * keeps them sorted by logit (descending, lower id first on ties) so a
 * filter is a cut of the list's tail. */
#include "runtime/model/sampler.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct cand { int32_t id; float logit; } cand;

struct sampler {
    sampler_params p;
    int n_vocab;
    uint64_t rng;
    int32_t *hist;            /* ring of the last penalty_last_n tokens */
    int hist_n, hist_pos;
    int *count;               /* scratch: occurrences per token, zero between calls */
    float *work;              /* penalised logits */
    cand *c;
    float *prob;
};

sampler_params sampler_default_params(void)
{
    sampler_params p = { .temp = 0.8f, .top_k = 40, .top_p = 0.95f, .min_p = 0.05f, .repeat_penalty = 1.0f,
                         .presence_penalty = 0.0f, .frequency_penalty = 0.0f, .penalty_last_n = 64, .seed = 0 };
    return p;
}

/* splitmix64: tiny, well mixed, and the same everywhere. */
static uint64_t next_u64(sampler *s)
{
    uint64_t z = (s->rng += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static double next_unit(sampler *s) { return (double)(next_u64(s) >> 11) * 0x1.0p-53; }

void sampler_reset(sampler *s)
{
    s->rng = s->p.seed;
    s->hist_n = s->hist_pos = 0;
}

sampler *sampler_create(const sampler_params *p, int n_vocab)
{
    if (n_vocab < 1 || !(p->top_p >= 0.0f && p->top_p <= 1.0f) || !(p->min_p >= 0.0f && p->min_p <= 1.0f) ||
        !(p->repeat_penalty > 0.0f) || p->penalty_last_n < 0 || isnan(p->temp))
        return NULL;
    sampler *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    s->p = *p;
    s->n_vocab = n_vocab;
    s->hist = malloc(((size_t)p->penalty_last_n + 1) * sizeof *s->hist);
    s->count = calloc((size_t)n_vocab, sizeof *s->count);
    s->work = malloc((size_t)n_vocab * sizeof *s->work);
    s->c = malloc((size_t)n_vocab * sizeof *s->c);
    s->prob = malloc((size_t)n_vocab * sizeof *s->prob);
    if (p->n_bias > 0) { /* the sampler's own copy: the caller's arrays need not outlive this call */
        int32_t *id = malloc((size_t)p->n_bias * sizeof *id);
        float *b = malloc((size_t)p->n_bias * sizeof *b);
        if (id) memcpy(id, p->bias_id, (size_t)p->n_bias * sizeof *id);
        if (b) memcpy(b, p->bias, (size_t)p->n_bias * sizeof *b);
        s->p.bias_id = id;
        s->p.bias = b;
        if (!id || !b) { free(id); free(b); s->p.bias_id = NULL; s->p.bias = NULL; s->p.n_bias = 0; sampler_free(s); return NULL; }
    } else {
        s->p.bias_id = NULL;
        s->p.bias = NULL;
        s->p.n_bias = 0;
    }
    if (!s->hist || !s->count || !s->work || !s->c || !s->prob) { sampler_free(s); return NULL; }
    sampler_reset(s);
    return s;
}

void sampler_free(sampler *s)
{
    if (!s) return;
    free(s->hist); free(s->count); free(s->work); free(s->c); free(s->prob);
    free((void *)s->p.bias_id); free((void *)s->p.bias);
    free(s);
}

void sampler_accept(sampler *s, int32_t token)
{
    const int cap = s->p.penalty_last_n;
    if (cap == 0 || token < 0 || token >= s->n_vocab) return;
    s->hist[s->hist_pos] = token;
    s->hist_pos = (s->hist_pos + 1) % cap;
    if (s->hist_n < cap) s->hist_n++;
}

static void apply_penalties(sampler *s)
{
    const sampler_params *p = &s->p;
    if (p->repeat_penalty == 1.0f && p->presence_penalty == 0.0f && p->frequency_penalty == 0.0f) return;
    for (int i = 0; i < s->hist_n; i++) s->count[s->hist[i]]++;
    for (int i = 0; i < s->hist_n; i++) {
        int32_t t = s->hist[i];
        int n = s->count[t];
        if (n == 0) continue; /* already penalised */
        float *l = &s->work[t];
        *l = *l > 0.0f ? *l / p->repeat_penalty : *l * p->repeat_penalty;
        *l -= (float)n * p->frequency_penalty + p->presence_penalty;
        s->count[t] = 0;
    }
}

static int cand_cmp(const void *a, const void *b)
{
    const cand *x = a, *y = b;
    if (x->logit != y->logit) return x->logit > y->logit ? -1 : 1;
    return (x->id > y->id) - (x->id < y->id);
}

/* Keeps the best k candidates sorted, via a min-heap (O(n log k)) instead
 * of sorting a whole vocabulary of 150k entries for every token. */
static int select_top(sampler *s, int k)
{
    const int n = s->n_vocab;
    if (k <= 0 || k >= n) {
        for (int i = 0; i < n; i++) s->c[i] = (cand){ i, s->work[i] };
        qsort(s->c, (size_t)n, sizeof *s->c, cand_cmp);
        return n;
    }
    cand *h = s->c; /* heap root = the worst kept (cand_cmp greatest) */
    int hn = 0;
    for (int i = 0; i < n; i++) {
        cand x = { i, s->work[i] };
        if (hn == k && cand_cmp(&x, &h[0]) >= 0) continue;
        int j;
        if (hn < k) { j = hn++; }
        else {
            /* replace the root: sift down */
            j = 0;
            for (;;) {
                int a = 2 * j + 1, b = a + 1, w = j;
                cand *cw = &x;
                if (a < hn && cand_cmp(&h[a], cw) > 0) { w = a; cw = &h[a]; }
                if (b < hn && cand_cmp(&h[b], cw) > 0) { w = b; }
                if (w == j) break;
                h[j] = h[w];
                j = w;
            }
            h[j] = x;
            continue;
        }
        while (j > 0 && cand_cmp(&x, &h[(j - 1) / 2]) > 0) { h[j] = h[(j - 1) / 2]; j = (j - 1) / 2; }
        h[j] = x;
    }
    qsort(h, (size_t)hn, sizeof *h, cand_cmp);
    return hn;
}

/* prob[i] = softmax of c[0..n) at temperature t (sorted: c[0] is the max). */
static void softmax(sampler *s, int n, float t)
{
    double sum = 0.0;
    for (int i = 0; i < n; i++) { s->prob[i] = expf((s->c[i].logit - s->c[0].logit) / t); sum += s->prob[i]; }
    for (int i = 0; i < n; i++) s->prob[i] = (float)(s->prob[i] / sum);
}

int32_t sampler_sample(sampler *s, const float *logits) { return sampler_sample_masked(s, logits, NULL); }

/* The chain up to the draw: returns the greedy pick (>= 0) when the
 * sampler is greedy, else -1 with the survivors in c[0..*n) and their
 * final probabilities in prob[0..*n). */
static int32_t final_dist(sampler *s, const float *logits, const uint8_t *allow, int *n_out)
{
    const sampler_params *p = &s->p;
    memcpy(s->work, logits, (size_t)s->n_vocab * sizeof *s->work);
    for (int i = 0; i < p->n_bias; i++)
        if (p->bias_id[i] >= 0 && p->bias_id[i] < s->n_vocab) s->work[p->bias_id[i]] += p->bias[i];
    apply_penalties(s);
    if (allow) {
        int any = 0;
        for (int i = 0; i < s->n_vocab && !any; i++) any = allow[i];
        for (int i = 0; any && i < s->n_vocab; i++)
            if (!allow[i]) s->work[i] = -INFINITY;
        if (any && !(p->temp > 0.0f)) { /* greedy among the allowed: the first of the highest */
            int32_t best = -1;
            for (int i = 0; i < s->n_vocab; i++)
                if (allow[i] && (best < 0 || s->work[i] > s->work[best])) best = i;
            return best;
        }
    }
    if (!(p->temp > 0.0f)) {
        int32_t best = 0;
        for (int i = 1; i < s->n_vocab; i++) if (s->work[i] > s->work[best]) best = i;
        return best;
    }
    int n = select_top(s, p->top_k);
    if (p->top_p < 1.0f) {
        softmax(s, n, 1.0f);
        double cum = 0.0;
        int keep = n;
        for (int i = 0; i < n; i++) {
            cum += s->prob[i];
            if (cum >= p->top_p) { keep = i + 1; break; }
        }
        n = keep;
    }
    if (p->min_p > 0.0f) {
        softmax(s, n, 1.0f);
        int keep = 1;
        while (keep < n && s->prob[keep] >= p->min_p * s->prob[0]) keep++;
        n = keep;
    }
    softmax(s, n, p->temp);
    *n_out = n;
    return -1;
}

int32_t sampler_sample_masked(sampler *s, const float *logits, const uint8_t *allow)
{
    int n = 0;
    const int32_t g = final_dist(s, logits, allow, &n);
    if (g >= 0) return g;
    double u = next_unit(s), cum = 0.0;
    for (int i = 0; i < n; i++) {
        cum += s->prob[i];
        if (u < cum) return s->c[i].id;
    }
    return s->c[n - 1].id; /* u landed in the rounding gap at the top */
}

/* Speculative sampling with a drafted token d (a point-mass draft, as
 * n-gram lookup drafts): d is kept with probability p(d); otherwise the
 * token comes from p with d taken out and the rest renormalised. Each
 * token t then comes out with probability p(d) [t = d] + (1 - p(d))
 * p(t) / (1 - p(d)) [t != d] = p(t): the distribution of sampler_sample. */
int32_t sampler_sample_draft(sampler *s, const float *logits, int32_t draft, int *accepted)
{
    int n = 0;
    const int32_t g = final_dist(s, logits, NULL, &n);
    if (g >= 0) {
        *accepted = g == draft;
        return g;
    }
    double pd = 0.0;
    for (int i = 0; i < n; i++)
        if (s->c[i].id == draft) pd = s->prob[i];
    if (next_unit(s) < pd) {
        *accepted = 1;
        return draft;
    }
    *accepted = 0;
    double rest = 0.0;
    int last = -1;
    for (int i = 0; i < n; i++)
        if (s->c[i].id != draft) { rest += s->prob[i]; last = i; }
    if (last < 0) { /* only d survived yet was refused: a rounding gap at p(d) ~ 1 */
        *accepted = 1;
        return draft;
    }
    double u = next_unit(s) * rest, cum = 0.0;
    for (int i = 0; i < n; i++) {
        if (s->c[i].id == draft) continue;
        cum += s->prob[i];
        if (u < cum) return s->c[i].id;
    }
    return s->c[last].id;
}
