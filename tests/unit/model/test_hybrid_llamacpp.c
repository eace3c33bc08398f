/* test_hybrid_llamacpp.c: the hybrid linear-attention family against
 * llama.cpp 0.7.0, on models our GGUF writer makes (random weights, the
 * shipped model's first 512 tokens as the vocabulary).
 *  - qwen3next (Qwen3-Next): 4 layers, full_attention_interval 2, so layers
 *    0 and 2 are Gated DeltaNet (q/k/v through a causal convolution of 4,
 *    L2-normed q and k, 2 key heads shared by 4 value heads, the gated
 *    delta rule with its decay and beta, a gated RMSNorm, ssm_out) and 1 and
 *    3 full attention (q with a per-head output gate, per-head q/k norms,
 *    8 of 16 dimensions rotated); every layer a MoE with a gated shared
 *    expert.
 *  - qwen35moe, qwen35 (Qwen3.5): the beta and alpha projections apart, the
 *    key heads tiled over the value heads, M-RoPE sections that rotate a
 *    text position as NEOX does; qwen35 with a dense FFN.
 *  - qwen3next-ssm-in: the first Qwen3-Next GGUFs' fused ssm_in.
 * The sequence is SEQ_TOK random tokens, the first SEQ_PROMPT as one batch
 * (llama.cpp's chunks of 64 cross twice), then one at a time; llama.cpp's
 * logits for the last SEQ_LAST rows are tests/fixtures/archs/NAME.logits.f32
 * (made by `sh tests/diag/diag_fixtures_llamacpp.sh test_hybrid_llamacpp
 * tests/fixtures/archs`). Ours must agree within 1e-5 of each row's largest
 * |logit|, in ubatches of 64 and of 7 (the delta rule's chunked form) and
 * of 1 (its step); the pack built from the model must
 * give the GGUF's bits; a control model whose every layer is full attention
 * is far off.
 *
 *   test_hybrid_llamacpp --write DIR   writes the GGUFs and the tokens, then exits. */
#include "tests/lib/test_util.h"

#include "tests/lib/gguf_weights.h"
#include "tests/lib/hybrid_model.h"
#include "tests/lib/logits_agree.h"
#include "pack/build.h"
#include "runtime/model/speculate.h"

#include <unistd.h>

enum { SEQ_TOK = HYBRID_TOK, SEQ_PROMPT = 150, SEQ_LAST = 40 };

/* --write DIR: the models and their token sequence, for llama.cpp. */
static int write_all(const char *dir)
{
    int32_t *tok = hybrid_tokens();
    int rc = tok ? 0 : 1;
    for (size_t i = 0; rc == 0 && i < sizeof HYBRID_SPECS / sizeof HYBRID_SPECS[0]; i++) {
        char path[600], err[256];
        snprintf(path, sizeof path, "%s/%s.gguf", dir, HYBRID_SPECS[i].name);
        if (hybrid_write_model(&HYBRID_SPECS[i], path, 0, err, sizeof err)) { fprintf(stderr, "%s\n", err); rc = 1; break; }
        snprintf(path, sizeof path, "%s/%s.tokens.i32", dir, HYBRID_SPECS[i].name);
        FILE *fp = fopen(path, "wb");
        const int ok = fp && fwrite(tok, sizeof *tok, SEQ_TOK, fp) == SEQ_TOK;
        if (fp) fclose(fp);
        if (!ok) { fprintf(stderr, "%s: cannot write\n", path); rc = 1; break; }
        printf("%s %d %d last=%d\n", HYBRID_SPECS[i].name, SEQ_PROMPT, SEQ_TOK, SEQ_LAST);
    }
    free(tok);
    return rc;
}

static void run_hybrid(const hybrid_spec *a, int n_batch)
{
    scratch sc;
    scratch_make(&sc, a->name);
    char err[256];
    if (hybrid_write_model(a, sc.gguf, 0, err, sizeof err)) fail_msg("%s", err);
    int32_t *tok = hybrid_tokens();
    assert_non_null(tok);
    seq s = { .tok = tok, .n_rows = SEQ_TOK, .n_prompt = SEQ_PROMPT, .n_vocab = VOCAB };
    gguf_model gm;
    if (gguf_model_load(&gm, sc.gguf, 0, err, sizeof err)) fail_msg("%s", err);
    model_options o = f32_opts();
    o.n_batch = n_batch;
    model *m = model_create(&gm.hp, &gm.w, &o, err, sizeof err);
    if (!m) fail_msg("%s", err);
    float *out = run_seq(m, &s);
    /* drafts are refused: a refused guess cannot be taken back out of the recurrent state */
    spec_params dp = spec_default_params();
    assert_null(spec_create(m, NULL, &dp, tok, 4, err, sizeof err));
    assert_non_null(strstr(err, "Gated DeltaNet layers cannot take back refused guesses"));
    model_free(m);
    gguf_model_free(&gm);
    seq tail = { .n_rows = SEQ_LAST, .n_vocab = VOCAB };
    tail.ref = fixture_floats("archs", a->name, "logits", (size_t)SEQ_LAST * VOCAB, NULL);
    const float *mine = out + (size_t)(SEQ_TOK - SEQ_LAST) * VOCAB;
    const double rel = worst_rel(&tail, mine);
    char ctl[700];
    snprintf(ctl, sizeof ctl, "%s/control.gguf", sc.dir);
    if (hybrid_write_model(a, ctl, 1, err, sizeof err)) fail_msg("%s", err);
    if (gguf_model_load(&gm, ctl, 0, err, sizeof err)) fail_msg("%s", err);
    m = model_create(&gm.hp, &gm.w, &o, err, sizeof err);
    if (!m) fail_msg("%s", err);
    float *control = run_seq(m, &s);
    model_free(m);
    gguf_model_free(&gm);
    const double moved = worst_rel(&tail, control + (size_t)(SEQ_TOK - SEQ_LAST) * VOCAB);
    printf("%s, ubatches of %d: last %d of %d rows, max |ours - llama.cpp| / max|logit| = %.3g (all layers full "
           "attention: %.3g)\n", a->name, n_batch, SEQ_LAST, SEQ_TOK, rel, moved);
    assert_true(moved > 1e-2);
    assert_true(rel < 1e-5);
    if (n_batch == 64) {
        seq whole = { .tok = tok, .n_rows = SEQ_TOK, .n_prompt = SEQ_PROMPT, .n_vocab = VOCAB };
        build_pack(sc.gguf, sc.pack);
        float *packed = run_pack(sc.pack, &whole);
        assert_memory_equal(packed, out, (size_t)SEQ_TOK * VOCAB * sizeof *out);
        free(packed);
    }
    free(control);
    free(out);
    free(tail.ref);
    free(tok);
    scratch_rm(&sc);
}

static void test_qwen3next(void **st) { (void)st; run_hybrid(&HYBRID_SPECS[0], 64); }
static void test_qwen3next_small_ubatches(void **st) { (void)st; run_hybrid(&HYBRID_SPECS[0], 7); }
static void test_qwen3next_one_by_one(void **st) { (void)st; run_hybrid(&HYBRID_SPECS[0], 1); }
static void test_qwen35moe(void **st) { (void)st; run_hybrid(&HYBRID_SPECS[1], 64); }
static void test_qwen35(void **st) { (void)st; run_hybrid(&HYBRID_SPECS[2], 64); }
static void test_qwen3next_ssm_in(void **st) { (void)st; run_hybrid(&HYBRID_SPECS[3], 64); }

/* The IQ3 pack of each (their wide forms, experts 256 wide): its logits
 * over the sequence against the keep pack's (the same model with its F32
 * experts): mean KL divergence and top-1 agreement printed and bounded, and
 * where the keep pack's top two logits stand MARGIN apart the IQ3 pack's
 * first choice is the same. */
static const float MARGIN = 0.5f;
static void iq3_pack_agrees(const hybrid_spec *spec)
{
    hybrid_spec a = *spec;
    a.wide = 1;
    scratch sc;
    scratch_make(&sc, a.name);
    char err[256];
    if (hybrid_write_model(&a, sc.gguf, 0, err, sizeof err)) fail_msg("%s", err);
    int32_t *tok = hybrid_tokens();
    assert_non_null(tok);
    seq s = { .tok = tok, .n_rows = SEQ_TOK, .n_prompt = SEQ_PROMPT, .n_vocab = VOCAB };
    iq3_agreement_holds(a.name, iq3_against_keep(&sc, &s, MARGIN), SEQ_TOK, MARGIN, 0.02, SEQ_TOK * 8 / 10);
    free(tok);
    scratch_rm(&sc);
}

static void test_iq3_packs(void **st)
{
    (void)st;
    for (size_t i = 0; i < sizeof HYBRID_SPECS / sizeof HYBRID_SPECS[0]; i++)
        if (!HYBRID_SPECS[i].dense) iq3_pack_agrees(&HYBRID_SPECS[i]);
}

/* M-RoPE sections that leave a rotated pair to the fourth (a text position
 * would not rotate it): iq3pack build refuses the model by name. */
static void test_qwen35_sections_refused(void **st)
{
    (void)st;
    hybrid_spec a = HYBRID_SPECS[1];
    a.wide_sections = 1;
    scratch sc;
    scratch_make(&sc, "qwen35-sections");
    char err[256];
    if (hybrid_write_model(&a, sc.gguf, 0, err, sizeof err)) fail_msg("%s", err);
    build_opts o = { .src = sc.gguf, .out = sc.pack, .threads = 1 };
    char *msg = NULL;
    size_t len = 0;
    FILE *ef = open_memstream(&msg, &len), *of = fopen("/dev/null", "w");
    assert_non_null(ef);
    assert_non_null(of);
    assert_int_not_equal(pack_build(&o, of, ef), 0);
    fclose(ef);
    fclose(of);
    assert_non_null(strstr(msg, "rope.dimension_sections must be 4 counts whose sum is 1 to the head's width"));
    assert_int_not_equal(access(sc.pack, F_OK), 0);
    free(msg);
    scratch_rm(&sc);
}

int main(int argc, char **argv)
{
    if (argc == 3 && !strcmp(argv[1], "--write")) return write_all(argv[2]);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_qwen3next),
        cmocka_unit_test(test_qwen3next_small_ubatches),
        cmocka_unit_test(test_qwen3next_one_by_one),
        cmocka_unit_test(test_qwen35moe),
        cmocka_unit_test(test_qwen35),
        cmocka_unit_test(test_qwen3next_ssm_in),
        cmocka_unit_test(test_qwen35_sections_refused),
        cmocka_unit_test(test_iq3_packs),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
