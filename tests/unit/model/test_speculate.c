/* test_speculate.c: speculative decoding (runtime/model/speculate.h).
 *  - The n-gram lookup on hand-made histories: longest suffix first, its
 *    most recent earlier occurrence, the draft cut at max_draft and at the
 *    history's end, nothing when no suffix recurs.
 *  - Greedy identity: from a prompt that repeats itself, 40 tokens decoded
 *    one at a time, with n-gram drafts of 1, 3 and 8, and with the same
 *    drafts from an oracle (plain decoding's tokens with every 5th one
 *    wrong, so guesses are kept in runs and refused) give the same
 *    tokens and the same logits row for row, bit for bit, on the shipped
 *    model (glm4moe, f32 and f16 weights) and, where ../shared has them,
 *    tinymoe (f32; Q8_0, Q4_K and IQ3_XXS as llama.cpp runs them), stories260K
 *    and qwen3moe; the oracle's guesses must be kept and refused.
 *  - With sampling, the same seed through both paths gives tokens that
 *    exist (the distribution itself: test_sampler.c's chi-square). */
#include "tests/lib/test_util.h"

#include "tests/lib/spec_check.h"

static void test_ngram_lookup(void **st)
{
    (void)st;
    int32_t out[8];
    /* 1 2 3 4 | 9 | 1 2 3 -> suffix "1 2 3" recurs at 0: draft 4 9 1 2 3,
     * then on with the period 5: 4 9 1 */
    const int32_t h1[] = { 1, 2, 3, 4, 9, 1, 2, 3 };
    assert_int_equal(spec_ngram_draft(h1, 8, 2, 4, 8, out), 8);
    const int32_t w1[] = { 4, 9, 1, 2, 3, 4, 9, 1 };
    assert_memory_equal(out, w1, sizeof w1);
    assert_int_equal(spec_ngram_draft(h1, 8, 2, 4, 2, out), 2);
    assert_memory_equal(out, w1, 2 * sizeof *out);
    /* the most recent occurrence wins: 5 6 7 | 5 6 8 | 5 6 -> 8 ... */
    const int32_t h2[] = { 5, 6, 7, 5, 6, 8, 5, 6 };
    assert_int_equal(spec_ngram_draft(h2, 8, 2, 4, 1, out), 1);
    assert_int_equal(out[0], 8);
    /* the longest suffix first: "2 5 6" recurs at 1 (-> 1), "5 6" alone more recently (-> 9) */
    const int32_t h3[] = { 0, 2, 5, 6, 1, 5, 6, 9, 2, 5, 6 };
    assert_int_equal(spec_ngram_draft(h3, 11, 2, 4, 1, out), 1);
    assert_int_equal(out[0], 1);
    assert_int_equal(spec_ngram_draft(h3, 11, 2, 2, 1, out), 1);
    assert_int_equal(out[0], 9);
    /* no recurring suffix of 2 or more; a single token recurs but ngram_min is 2 */
    const int32_t h4[] = { 1, 2, 3, 4, 5, 3 };
    assert_int_equal(spec_ngram_draft(h4, 6, 2, 4, 8, out), 0);
    assert_int_equal(spec_ngram_draft(h4, 6, 1, 4, 4, out), 4); /* "3" recurs at 2: 4 5 3, then 4 */
    const int32_t w4[] = { 4, 5, 3, 4 };
    assert_memory_equal(out, w4, sizeof w4);
    assert_int_equal(spec_ngram_draft(h4, 0, 1, 4, 8, out), 0);
    /* a run of one token drafts that token throughout */
    const int32_t h5[] = { 8, 7, 7, 7 };
    assert_int_equal(spec_ngram_draft(h5, 4, 2, 4, 5, out), 5);
    for (int i = 0; i < 5; i++) assert_int_equal(out[i], 7);
}

static void test_greedy_shipped(void **st)
{
    (void)st;
    spec_greedy_identity(SHIPPED_MODEL, 0, "tiny-moe");
}

static void test_greedy_shared(void **st)
{
    (void)st;
    static const struct { const char *rel; int native; } models[] = {
        { "models/tinymoe/tinymoe-f32.gguf", 0 },    { "models/tinymoe/tinymoe-f16.gguf", 0 },
        { "models/tinymoe/tinymoe-q8_0.gguf", 2 },   { "models/tinymoe/tinymoe-q4_k.gguf", 2 },
        { "models/tinymoe/tinymoe-iq3_xxs.gguf", 2 }, { "models/stories260K/stories260K.gguf", 0 },
        { "models/archs/qwen3moe/qwen3moe-f16.gguf", 0 },
    };
    int ran = 0;
    for (size_t i = 0; i < sizeof models / sizeof models[0]; i++) {
        char path[4096];
        if (!shared_part(path, sizeof path, models[i].rel)) continue;
        spec_greedy_identity(path, models[i].native, models[i].rel);
        ran++;
    }
    if (!ran) skip();
}

/* Sampling: both paths give valid tokens from the same prompt; the draft
 * rule's distribution is test_sampler.c's. */
static void test_sampling_runs(void **st)
{
    (void)st;
    int32_t t[SPEC_N_GEN];
    gguf_model gm;
    char err[512];
    if (gguf_model_load(&gm, SHIPPED_MODEL, 0, err, sizeof err)) fail_msg("%s", err);
    const int nv = (int)gm.w.tok_embd.rows;
    gguf_model_free(&gm);
    float *r = malloc((size_t)SPEC_N_GEN * nv * sizeof *r);
    assert_non_null(r);
    spec_stats s;
    spec_generate(SHIPPED_MODEL, 0, 4, NULL, 0.8f, t, r, &s);
    for (int i = 0; i < SPEC_N_GEN; i++) assert_true(t[i] >= 0 && t[i] < nv);
    assert_true(s.steps > 0 && s.steps < SPEC_N_GEN);
    free(r);
}

static void test_bad_params(void **st)
{
    (void)st;
    char err[256];
    spec_params p = spec_default_params();
    p.max_draft = SPEC_MAX_DRAFT + 1;
    assert_null(spec_create(NULL, NULL, &p, NULL, 0, err, sizeof err));
    assert_non_null(strstr(err, "draft of 1 to"));
    spec_kind k;
    assert_int_equal(spec_kind_parse("ngram", &k), 0);
    assert_int_equal(k, SPEC_NGRAM);
    assert_int_equal(spec_kind_parse("mtp", &k), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ngram_lookup),
        cmocka_unit_test(test_greedy_shipped),
        cmocka_unit_test(test_greedy_shared),
        cmocka_unit_test(test_sampling_runs),
        cmocka_unit_test(test_bad_params),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
