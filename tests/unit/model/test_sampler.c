/* test_sampler.c: every stage of the sampling chain on hand-made logits,
 * reproducibility by seed, the drawn frequencies against the softmax, and
 * speculative sampling's draft rule against the same (chi-square). */
#include "tests/lib/test_util.h"

#include "runtime/model/sampler.h"

#include <math.h>

static sampler_params plain(void)
{
    sampler_params p = sampler_default_params();
    p.temp = 1.0f; p.top_k = 0; p.top_p = 1.0f; p.min_p = 0.0f;
    return p;
}

static void test_greedy(void **st)
{
    (void)st;
    sampler_params p = plain();
    p.temp = 0.0f;
    sampler *s = sampler_create(&p, 5);
    float l[5] = { 0.1f, 3.0f, -1.0f, 3.0f, 2.9f };
    assert_int_equal(sampler_sample(s, l), 1); /* tie: lower id */
    assert_true(l[1] == 3.0f);                  /* caller's logits untouched */
    sampler_free(s);
}

/* A constraint's mask: only the allowed tokens, greedy or drawn; none allowed is no mask */
static void test_masked(void **st)
{
    (void)st;
    sampler_params p = plain();
    p.temp = 0.0f;
    sampler *s = sampler_create(&p, 5);
    float l[5] = { 0.1f, 3.0f, -1.0f, 3.0f, 2.9f };
    const uint8_t some[5] = { 0, 0, 1, 0, 1 }, none[5] = { 0 };
    assert_int_equal(sampler_sample_masked(s, l, some), 4);
    assert_int_equal(sampler_sample_masked(s, l, none), 1);
    assert_int_equal(sampler_sample_masked(s, l, NULL), 1);
    sampler_free(s);
    p = plain();
    p.top_k = 2; /* the filters see the allowed tokens only: top-2 of {0, 2} is both */
    s = sampler_create(&p, 5);
    const uint8_t two[5] = { 1, 0, 1, 0, 0 };
    int seen[5] = { 0 };
    for (int i = 0; i < 400; i++) seen[sampler_sample_masked(s, l, two)]++;
    assert_int_equal(seen[1] + seen[3] + seen[4], 0);
    assert_true(seen[0] > 200 && seen[2] > 10); /* e^0.1 : e^-1, about 3:1 */
    sampler_free(s);
}

/* logit_bias: added first; -100 bans a token, a bias can lift another to the top */
static void test_bias(void **st)
{
    (void)st;
    sampler_params p = plain();
    p.temp = 0.0f;
    const int32_t id[2] = { 1, 4 };
    const float b[2] = { -100.0f, 0.5f };
    p.bias_id = id;
    p.bias = b;
    p.n_bias = 2;
    sampler *s = sampler_create(&p, 5);
    assert_non_null(s);
    float l[5] = { 0.1f, 3.0f, -1.0f, 3.0f, 2.9f };
    assert_int_equal(sampler_sample(s, l), 4); /* 2.9 + 0.5 beats 3.0; 1 is banned */
    assert_true(l[4] == 2.9f);                 /* the caller's logits untouched */
    sampler_free(s);
}

static void draw(const sampler_params *p, const float *l, int nv, int n, int *hist, int32_t *seq)
{
    sampler *s = sampler_create(p, nv);
    assert_non_null(s);
    for (int i = 0; i < n; i++) {
        int32_t t = sampler_sample(s, l);
        assert_true(t >= 0 && t < nv);
        if (hist) hist[t]++;
        if (seq) seq[i] = t;
    }
    sampler_free(s);
}

static void test_seed_reproducible(void **st)
{
    (void)st;
    float l[16];
    for (int i = 0; i < 16; i++) l[i] = 0.1f * (float)i;
    sampler_params p = plain();
    int32_t a[200], b[200], c[200];
    p.seed = 42; draw(&p, l, 16, 200, NULL, a);
    p.seed = 42; draw(&p, l, 16, 200, NULL, b);
    p.seed = 43; draw(&p, l, 16, 200, NULL, c);
    assert_memory_equal(a, b, sizeof a);
    assert_memory_not_equal(a, c, sizeof a);
}

/* probabilities 0.5, 0.3, 0.15, 0.05 */
static void set_probs(float *l)
{
    l[0] = logf(0.5f); l[1] = logf(0.3f); l[2] = logf(0.15f); l[3] = logf(0.05f);
}

static void test_distribution(void **st)
{
    (void)st;
    float l[4];
    set_probs(l);
    sampler_params p = plain();
    p.seed = 7;
    int h[4] = { 0 };
    const int n = 40000;
    draw(&p, l, 4, n, h, NULL);
    const double want[4] = { 0.5, 0.3, 0.15, 0.05 };
    for (int i = 0; i < 4; i++) assert_true(fabs((double)h[i] / n - want[i]) < 0.01);
}

/* Pearson's chi-square of n draws h[] against probabilities want[] (k cells). */
static double chi_square(const int *h, const double *want, int k, int n)
{
    double x2 = 0.0;
    for (int i = 0; i < k; i++) {
        const double e = want[i] * n;
        if (e > 0) x2 += ((double)h[i] - e) * ((double)h[i] - e) / e;
        else if (h[i]) return INFINITY; /* a token that cannot come out came out */
    }
    return x2;
}

/* Speculative sampling keeps the distribution: with the draft the most
 * likely token, an unlikely one, or one top-k cuts, the results of
 * sampler_sample_draft over 200000 draws fit the softmax by Pearson's
 * chi-square below 16.27 (3 degrees of freedom, p = 0.001). The draft's
 * own frequency is checked too: a rule that kept every draft would give it
 * 1.0. Greedy: the argmax, accepted only when it is the draft. */
static void test_draft_distribution(void **st)
{
    (void)st;
    float l[4];
    set_probs(l);
    const double soft[4] = { 0.5, 0.3, 0.15, 0.05 };
    const double top3[4] = { 0.5 / 0.95, 0.3 / 0.95, 0.15 / 0.95, 0.0 };
    const struct { int draft, top_k; const double *want; } cases[] = {
        { 0, 0, soft }, { 3, 0, soft }, { 2, 0, soft }, { 3, 3, top3 }, { 1, 3, top3 },
    };
    const int n = 200000;
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        sampler_params p = plain();
        p.seed = 11 + c;
        p.top_k = cases[c].top_k;
        sampler *s = sampler_create(&p, 4);
        assert_non_null(s);
        int h[4] = { 0 }, acc = 0;
        for (int i = 0; i < n; i++) {
            int a = -1;
            const int32_t t = sampler_sample_draft(s, l, cases[c].draft, &a);
            assert_true(t >= 0 && t < 4);
            assert_int_equal(a, t == cases[c].draft);
            h[t]++;
            acc += a;
        }
        sampler_free(s);
        const int k = cases[c].want[3] > 0 ? 4 : 3;
        const double x2 = chi_square(h, cases[c].want, 4, n);
        printf("draft %d top_k %d: %d %d %d %d, chi-square %.2f (%d cells), draft kept %.4f (p %.4f)\n",
               cases[c].draft, cases[c].top_k, h[0], h[1], h[2], h[3], x2, k, (double)acc / n,
               cases[c].want[cases[c].draft]);
        assert_true(x2 < (k == 4 ? 16.27 : 13.82));
        assert_true(fabs((double)acc / n - cases[c].want[cases[c].draft]) < 0.005);
    }
    sampler_params g = plain();
    g.temp = 0.0f;
    sampler *s = sampler_create(&g, 4);
    assert_non_null(s);
    int a = -1;
    assert_int_equal(sampler_sample_draft(s, l, 0, &a), 0);
    assert_int_equal(a, 1);
    assert_int_equal(sampler_sample_draft(s, l, 2, &a), 0);
    assert_int_equal(a, 0);
    sampler_free(s);
}

static void test_filters(void **st)
{
    (void)st;
    float l[4];
    set_probs(l);
    int h[4];
    sampler_params p = plain();

    p.top_k = 1; memset(h, 0, sizeof h); draw(&p, l, 4, 500, h, NULL);
    assert_int_equal(h[0], 500);
    p.top_k = 3; memset(h, 0, sizeof h); draw(&p, l, 4, 3000, h, NULL);
    assert_int_equal(h[3], 0);
    assert_true(h[0] > 0 && h[1] > 0 && h[2] > 0);

    p.top_k = 0; p.top_p = 0.7f; memset(h, 0, sizeof h); draw(&p, l, 4, 3000, h, NULL);
    assert_true(h[0] > 0 && h[1] > 0);          /* 0.5 < 0.7 <= 0.8: two survive */
    assert_int_equal(h[2] + h[3], 0);

    p.top_p = 1.0f; p.min_p = 0.25f; memset(h, 0, sizeof h); draw(&p, l, 4, 3000, h, NULL);
    assert_true(h[2] > 0);                      /* 0.15 >= 0.25 * 0.5 */
    assert_int_equal(h[3], 0);                  /* 0.05 < 0.125 */

    p.min_p = 0.0f; p.temp = 0.05f; memset(h, 0, sizeof h); draw(&p, l, 4, 1000, h, NULL);
    assert_int_equal(h[0], 1000);               /* cold: the mode */
    p.temp = 5.0f; memset(h, 0, sizeof h); draw(&p, l, 4, 4000, h, NULL);
    assert_true(h[3] > 600);                    /* hot: near uniform (~0.18 of draws) */
}

/* The heap-based top-k keeps exactly the k largest on a big vocabulary. */
static void test_top_k_large(void **st)
{
    (void)st;
    enum { NV = 5000 };
    float *l = malloc(NV * sizeof *l);
    for (int i = 0; i < NV; i++) l[i] = (float)((i * 7919) % NV) / 100.0f; /* a permutation */
    sampler_params p = plain();
    p.top_k = 5; p.temp = 100.0f;
    int *h = calloc(NV, sizeof *h);
    draw(&p, l, NV, 2000, h, NULL);
    int kept = 0;
    for (int i = 0; i < NV; i++)
        if (h[i]) { kept++; assert_true(l[i] >= (float)(NV - 5) / 100.0f); }
    assert_int_equal(kept, 5);
    free(h); free(l);
}

static void test_penalties(void **st)
{
    (void)st;
    sampler_params p = plain();
    p.temp = 0.0f;
    p.repeat_penalty = 1.2f;
    sampler *s = sampler_create(&p, 3);
    float l[3] = { 2.0f, 1.9f, -1.0f };
    assert_int_equal(sampler_sample(s, l), 0);
    sampler_accept(s, 0);
    assert_int_equal(sampler_sample(s, l), 1);  /* 2.0 / 1.2 < 1.9 */
    sampler_free(s);

    float n[3] = { -0.5f, -0.55f, -3.0f };     /* a negative logit is multiplied */
    s = sampler_create(&p, 3);
    sampler_accept(s, 0);
    assert_int_equal(sampler_sample(s, n), 1);
    sampler_free(s);

    p.repeat_penalty = 1.0f;
    p.frequency_penalty = 0.3f;
    s = sampler_create(&p, 3);
    float f[3] = { 1.0f, 0.5f, 0.0f };
    sampler_accept(s, 0);
    assert_int_equal(sampler_sample(s, f), 0);  /* 1.0 - 0.3 > 0.5 */
    sampler_accept(s, 0);
    assert_int_equal(sampler_sample(s, f), 1);  /* 1.0 - 0.6 < 0.5 */
    sampler_free(s);

    p.frequency_penalty = 0.0f;
    p.presence_penalty = 0.6f;
    p.penalty_last_n = 2;
    s = sampler_create(&p, 3);
    sampler_accept(s, 0);
    assert_int_equal(sampler_sample(s, f), 1);  /* 1.0 - 0.6 < 0.5 */
    sampler_accept(s, 2);
    sampler_accept(s, 2);                       /* token 0 has left the window */
    assert_int_equal(sampler_sample(s, f), 0);
    sampler_reset(s);
    assert_int_equal(sampler_sample(s, f), 0);
    sampler_free(s);
}

static void test_bad_params(void **st)
{
    (void)st;
    sampler_params p = plain();
    assert_null(sampler_create(&p, 0));
    p.top_p = 1.5f;
    assert_null(sampler_create(&p, 4));
    p = plain();
    p.repeat_penalty = 0.0f;
    assert_null(sampler_create(&p, 4));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_greedy),
        cmocka_unit_test(test_masked),
        cmocka_unit_test(test_bias),
        cmocka_unit_test(test_seed_reproducible),
        cmocka_unit_test(test_distribution),
        cmocka_unit_test(test_draft_distribution),
        cmocka_unit_test(test_filters),
        cmocka_unit_test(test_top_k_large),
        cmocka_unit_test(test_penalties),
        cmocka_unit_test(test_bad_params),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
