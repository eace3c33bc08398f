/* test_dsa_llamacpp.c: DeepSeek V3.2's sparse attention (DSA) against
 * llama.cpp 0.7.0, on models our GGUF writer makes (tests/lib/dsa_model.h:
 * random weights, the shipped model's first 512 tokens as the vocabulary).
 *  - deepseek32: multi-head latent attention whose lightning indexer lets
 *    each query read its 16 best positions (NEOX-rotated indexer heads).
 *  - glm-dsa (GLM-5): the same with the indexer rotating adjacent pairs and
 *    the sigmoid router by default.
 * The sequence is DSA_TOK random tokens, the first SEQ_PROMPT as one batch,
 * then one at a time; llama.cpp's logits for the last SEQ_LAST rows are
 * tests/fixtures/archs/NAME.logits.f32 (made by `sh
 * tests/diag/diag_fixtures_llamacpp.sh test_dsa_llamacpp tests/fixtures/archs`).
 * Ours must agree within 1e-5 of each row's largest |logit|, in ubatches of
 * 64, 7 and 1; the control (the same weights with a top_k past the
 * sequence: plain MLA) must be far off; the pack must give the GGUF's bits;
 * speculative decoding plain decoding's; the IQ3 pack of the wide form must
 * agree with its F32-expert pack where the margin allows; a GLM-5.2 model
 * whose layers share an indexer is refused by name, and so is the model by
 * a backend without the indexer (CUDA's).
 *
 *   test_dsa_llamacpp --write DIR   writes the GGUFs and the tokens, then exits. */
#include "tests/lib/test_util.h"

#include "tests/lib/dsa_model.h"
#include "tests/lib/gguf_weights.h"
#include "tests/lib/logits_agree.h"
#include "tests/lib/spec_check.h"
#include "pack/build.h"
#include "runtime/model/backend.h"

#include <unistd.h>

enum { SEQ_PROMPT = 150, SEQ_LAST = 40 };

/* --write DIR: the models and their token sequence, for llama.cpp. */
static int write_all(const char *dir)
{
    int32_t *tok = dsa_tokens();
    int rc = tok ? 0 : 1;
    for (size_t i = 0; rc == 0 && i < sizeof DSA_SPECS / sizeof DSA_SPECS[0]; i++) {
        char path[600], err[256];
        snprintf(path, sizeof path, "%s/%s.gguf", dir, DSA_SPECS[i].name);
        if (dsa_write_model(&DSA_SPECS[i], path, 0, err, sizeof err)) { fprintf(stderr, "%s\n", err); rc = 1; break; }
        snprintf(path, sizeof path, "%s/%s.tokens.i32", dir, DSA_SPECS[i].name);
        FILE *fp = fopen(path, "wb");
        const int ok = fp && fwrite(tok, sizeof *tok, DSA_TOK, fp) == DSA_TOK;
        if (fp) fclose(fp);
        if (!ok) { fprintf(stderr, "%s: cannot write\n", path); rc = 1; break; }
        printf("%s %d %d last=%d\n", DSA_SPECS[i].name, SEQ_PROMPT, DSA_TOK, SEQ_LAST);
    }
    free(tok);
    return rc;
}

static float *run_model(const char *path, int n_batch, const seq *s)
{
    char err[256];
    gguf_model gm;
    if (gguf_model_load(&gm, path, 0, err, sizeof err)) fail_msg("%s", err);
    model_options o = f32_opts();
    o.n_batch = n_batch;
    model *m = model_create(&gm.hp, &gm.w, &o, err, sizeof err);
    if (!m) fail_msg("%s", err);
    float *out = run_seq(m, s);
    model_free(m);
    gguf_model_free(&gm);
    return out;
}

static void run_dsa(const dsa_spec *a, int n_batch)
{
    scratch sc;
    scratch_make(&sc, a->name);
    char err[256];
    if (dsa_write_model(a, sc.gguf, 0, err, sizeof err)) fail_msg("%s", err);
    int32_t *tok = dsa_tokens();
    assert_non_null(tok);
    seq s = { .tok = tok, .n_rows = DSA_TOK, .n_prompt = SEQ_PROMPT, .n_vocab = DSA_VOCAB };
    float *out = run_model(sc.gguf, n_batch, &s);
    seq tail = { .n_rows = SEQ_LAST, .n_vocab = DSA_VOCAB };
    tail.ref = fixture_floats("archs", a->name, "logits", (size_t)SEQ_LAST * DSA_VOCAB, NULL);
    const float *mine = out + (size_t)(DSA_TOK - SEQ_LAST) * DSA_VOCAB;
    const double rel = worst_rel(&tail, mine);
    char ctl[700];
    snprintf(ctl, sizeof ctl, "%s/control.gguf", sc.dir);
    if (dsa_write_model(a, ctl, DSA_TOK + 1, err, sizeof err)) fail_msg("%s", err);
    float *control = run_model(ctl, n_batch, &s);
    const double moved = worst_rel(&tail, control + (size_t)(DSA_TOK - SEQ_LAST) * DSA_VOCAB);
    printf("%s, ubatches of %d: last %d of %d rows, max |ours - llama.cpp| / max|logit| = %.3g (every position "
           "read: %.3g)\n", a->name, n_batch, SEQ_LAST, DSA_TOK, rel, moved);
    assert_true(moved > 1e-2);
    assert_true(rel < 1e-5);
    /* the rows before the indexer chooses anything are plain MLA's, bit for bit */
    assert_memory_equal(out, control, (size_t)DSA_TOP_K * DSA_VOCAB * sizeof *out);
    if (n_batch == 64) {
        build_pack(sc.gguf, sc.pack);
        float *packed = run_pack(sc.pack, &s);
        assert_memory_equal(packed, out, (size_t)DSA_TOK * DSA_VOCAB * sizeof *out);
        free(packed);
        spec_greedy_identity(sc.gguf, 0, a->name);
    }
    free(control);
    free(out);
    free(tail.ref);
    free(tok);
    scratch_rm(&sc);
}

static void test_deepseek32(void **st) { (void)st; run_dsa(&DSA_SPECS[0], 64); }
static void test_deepseek32_small_ubatches(void **st) { (void)st; run_dsa(&DSA_SPECS[0], 7); }
static void test_deepseek32_one_by_one(void **st) { (void)st; run_dsa(&DSA_SPECS[0], 1); }
static void test_glm_dsa(void **st) { (void)st; run_dsa(&DSA_SPECS[1], 64); }

/* The f16 KV cache (the default) keeps the indexer keys in f16 too: before
 * the indexer chooses (the first DSA_TOP_K rows) the cache's rounding alone
 * separates it from the f32 run; after, a choice may flip where two scores
 * stand closer than that rounding, but it stays far closer to the f32 run
 * than plain MLA is. */
static void test_f16_cache(void **st)
{
    (void)st;
    scratch sc;
    scratch_make(&sc, "dsa-f16");
    char err[256];
    if (dsa_write_model(&DSA_SPECS[0], sc.gguf, 0, err, sizeof err)) fail_msg("%s", err);
    int32_t *tok = dsa_tokens();
    seq s = { .tok = tok, .n_rows = DSA_TOK, .n_prompt = SEQ_PROMPT, .n_vocab = DSA_VOCAB };
    float *f32 = run_model(sc.gguf, 64, &s);
    gguf_model gm;
    if (gguf_model_load(&gm, sc.gguf, 0, err, sizeof err)) fail_msg("%s", err);
    model_options o = f32_opts();
    o.kv = KV_F16;
    model *m = model_create(&gm.hp, &gm.w, &o, err, sizeof err);
    if (!m) fail_msg("%s", err);
    float *f16 = run_seq(m, &s);
    model_free(m);
    gguf_model_free(&gm);
    char ctl[700];
    snprintf(ctl, sizeof ctl, "%s/control.gguf", sc.dir);
    if (dsa_write_model(&DSA_SPECS[0], ctl, DSA_TOK + 1, err, sizeof err)) fail_msg("%s", err);
    float *mla = run_model(ctl, 64, &s);
    seq head = { .n_rows = DSA_TOP_K, .n_vocab = DSA_VOCAB, .ref = f32 }, all = head;
    all.n_rows = DSA_TOK;
    const double early = worst_rel(&head, f16), whole = worst_rel(&all, f16), plain = worst_rel(&all, mla);
    printf("deepseek32, f16 cache against f32: %.3g of each row's largest logit in the first %d rows, %.3g in all "
           "(plain MLA: %.3g)\n", early, DSA_TOP_K, whole, plain);
    assert_true(early > 0 && early < 5e-3);
    assert_true(whole < plain / 4);
    free(mla);
    free(f32);
    free(f16);
    free(tok);
    scratch_rm(&sc);
}

/* The IQ3 pack of each (the wide forms, experts 256 wide) against the keep
 * pack: mean KL and top-1 printed and bounded, and where the keep pack's
 * top two logits stand MARGIN apart the same first choice. The bounds are
 * looser than the dense families' (tests/unit/model/test_hybrid_llamacpp.c):
 * the indexer's choice is discrete, and a score moved by the experts'
 * rounding past its neighbour's changes what a query reads. */
static const float MARGIN = 0.5f;
static void iq3_pack_agrees(const dsa_spec *spec)
{
    dsa_spec a = *spec;
    a.wide = 1;
    scratch sc;
    scratch_make(&sc, a.name);
    char err[256];
    if (dsa_write_model(&a, sc.gguf, 0, err, sizeof err)) fail_msg("%s", err);
    int32_t *tok = dsa_tokens();
    assert_non_null(tok);
    seq s = { .tok = tok, .n_rows = DSA_TOK, .n_prompt = SEQ_PROMPT, .n_vocab = DSA_VOCAB };
    iq3_agreement_holds(a.name, iq3_against_keep(&sc, &s, MARGIN), DSA_TOK, MARGIN, 0.05, DSA_TOK * 6 / 10);
    free(tok);
    scratch_rm(&sc);
}

static void test_iq3_packs(void **st)
{
    (void)st;
    for (size_t i = 0; i < sizeof DSA_SPECS / sizeof DSA_SPECS[0]; i++) iq3_pack_agrees(&DSA_SPECS[i]);
}

/* GLM-5.2's layers that reuse an earlier layer's indexer choice: refused by
 * name, nothing written; the same key all 1 builds. */
static void shared_indexers(const uint32_t *types, int refused)
{
    scratch sc;
    scratch_make(&sc, "glm-dsa-types");
    char err[256];
    dsa_spec a = DSA_SPECS[1];
    a.types = types;
    if (dsa_write_model(&a, sc.gguf, 0, err, sizeof err)) fail_msg("%s", err);
    build_opts o = { .src = sc.gguf, .out = sc.pack, .threads = 1 };
    char *msg = NULL;
    size_t len = 0;
    FILE *ef = open_memstream(&msg, &len), *of = fopen("/dev/null", "w");
    assert_non_null(ef);
    assert_non_null(of);
    const int rc = pack_build(&o, of, ef);
    fclose(ef);
    fclose(of);
    if (refused) {
        assert_int_not_equal(rc, 0);
        assert_non_null(strstr(msg, "glm-dsa has layers that reuse an earlier layer's indexer choice (a 0 in "
                                    "glm-dsa.attention.indexer.types)"));
        assert_int_not_equal(access(sc.pack, F_OK), 0);
    } else {
        assert_int_equal(rc, 0);
    }
    free(msg);
    scratch_rm(&sc);
}

static void test_shared_indexers_refused(void **st)
{
    (void)st;
    const uint32_t shared[DSA_LAYERS] = { 1, 0, 1, 0 }, own[DSA_LAYERS] = { 1, 1, 1, 1 };
    shared_indexers(shared, 1);
    shared_indexers(own, 0);
}

/* A backend without the indexer (CUDA's row) refuses the model by name,
 * before it takes anything; the CPU's runs it. */
static void test_backend_refuses(void **st)
{
    (void)st;
    scratch sc;
    scratch_make(&sc, "dsa-backend");
    char err[256];
    if (dsa_write_model(&DSA_SPECS[1], sc.gguf, 0, err, sizeof err)) fail_msg("%s", err);
    gguf_model gm;
    if (gguf_model_load(&gm, sc.gguf, 0, err, sizeof err)) fail_msg("%s", err);
    model_options o = f32_opts();
    model *m = model_create(&gm.hp, &gm.w, &o, err, sizeof err);
    if (!m) fail_msg("%s", err);
    assert_int_equal(backend_check(backend_cpu.caps, m, err, sizeof err), 0);
    backend_caps c = *backend_cpu.caps;
    c.name = "TEST";
    c.dsa = false;
    assert_int_equal(backend_check(&c, m, err, sizeof err), -1);
    assert_string_equal(err, "the TEST backend does not run glm-dsa's attention yet (the lightning indexer's sparse "
                             "attention (DSA): --device cpu)");
    model_free(m);
    gguf_model_free(&gm);
    scratch_rm(&sc);
}

int main(int argc, char **argv)
{
    if (argc == 3 && !strcmp(argv[1], "--write")) return write_all(argv[2]);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_deepseek32),
        cmocka_unit_test(test_deepseek32_small_ubatches),
        cmocka_unit_test(test_deepseek32_one_by_one),
        cmocka_unit_test(test_glm_dsa),
        cmocka_unit_test(test_f16_cache),
        cmocka_unit_test(test_iq3_packs),
        cmocka_unit_test(test_shared_indexers_refused),
        cmocka_unit_test(test_backend_refuses),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
