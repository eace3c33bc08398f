/* test_tiny_moe.c: the shipped trained model (models/tiny-moe/tiny-moe.gguf,
 * glm4moe with an MTP block, F16) against llama.cpp. The tokens are strata's
 * own tokenization of a fixed held-out sentence; llama.cpp's logits for them
 * are in tests/fixtures/tiny-moe/, made by
 * `sh tests/diag/diag_fixtures_llamacpp.sh test_tiny_moe tests/fixtures/tiny-moe`
 * (Debian's llama.cpp 0.7.0, CPU haswell variant, F32 KV cache; the prompt
 * as one batch, then one token at a time):
 *  - tiny-moe-f32: the same weights widened to F32 (exact), which llama.cpp
 *    multiplies in F32 as strata does: within 1e-5 of each row's largest
 *    |logit|, the tolerance the other architectures meet.
 *  - tiny-moe: the F16 file itself. llama.cpp's CPU rounds every activation
 *    to F16 before an F16 matrix product and strata does not, which moves
 *    this model's logits by 2.6e-4 relative (4.7e-4 on random weights of this
 *    shape); bounded at 3e-3.
 * The pack built with `--experts keep` is what runs; the pack built from the
 * F32 widening must also agree with llama.cpp's run of it; and the
 * model is trained: its top-1 prediction is the text's next token on at
 * least a fifth of the positions (9 of 31 when it shipped; its random
 * initialisation: 0 of 31).
 *
 * Its next-token-prediction block, as the pack keeps it and `--draft mtp`
 * runs it (model_create_mtp): for each position t of the same tokens, the
 * block's logits for the token at t + 2 from the main model's output at t
 * and the token at t + 1 agree with the training code's own PyTorch model
 * (tests/fixtures/tiny-moe/tiny-moe-mtp.logits.f32, made by
 * `/usr/bin/python3 tools/train/mtp_reference.py models/tiny-moe/tiny-moe.gguf
 * DIR/tiny-moe.tokens.i32 tests/fixtures/tiny-moe/tiny-moe-mtp.logits.f32`
 * after `test_tiny_moe --write DIR`; the same PyTorch model gives llama.cpp's
 * main logits within 1.2e-6) within 1e-5 of each row's largest |logit|.
 *
 *   test_tiny_moe --write DIR   writes both GGUFs and the tokens, then exits. */
#include "tests/lib/test_util.h"

#include "formats/fp16.h"
#include "formats/ggml_types.h"
#include "formats/gguf.h"
#include "tests/lib/llamacpp_fixture.h"
#include "runtime/tokenizer/tokenizer.h"

enum { N_TOK = 32, N_PROMPT = 12 };
#define MODEL "models/tiny-moe/tiny-moe.gguf"
#define TEXT                                                                                                  \
    "And the LORD said unto Cain, Where is Abel thy brother? And he said, I know not: Am I my brother's "   \
    "keeper? And he said, What hast thou done? the voice of thy brother's blood crieth unto me."

/* The fixed text through the GGUF's tokenizer (BOS first), N_TOK ids. */
static int32_t *text_tokens(void)
{
    char err[256];
    gguf_file *f = gguf_open(MODEL, err, sizeof err);
    if (!f) { printf("%s\n", err); return NULL; }
    tokenizer *t = tokenizer_load(f, err, sizeof err);
    int32_t *ids = NULL;
    size_t n = 0;
    if (!t) printf("%s\n", err);
    else if (tokenizer_encode(t, TEXT, strlen(TEXT), true, false, &ids, &n)) n = 0;
    tokenizer_free(t);
    gguf_close(f);
    if (n < N_TOK) { printf("%s: %zu tokens for the test text, want %d or more\n", MODEL, n, N_TOK); free(ids); return NULL; }
    return ids;
}

/* MODEL with every F16 tensor widened to F32 (exact) at dst. */
static int write_widened(const char *dst)
{
    char err[256];
    gguf_file *g = gguf_open(MODEL, err, sizeof err);
    if (!g) { printf("%s\n", err); return -1; }
    gguf_writer *w = gguf_writer_new();
    int rc = w ? 0 : -1;
    for (int64_t i = 0; rc == 0 && i < gguf_n_kv(g); i++)
        rc = strcmp(gguf_kv_key(g, i), "general.file_type") ? gguf_writer_copy_kv(w, g, i) : gguf_writer_add_u32(w, "general.file_type", 0);
    for (int64_t i = 0; rc == 0 && i < gguf_n_tensors(g); i++) {
        const gguf_tensor *t = gguf_tensor_at(g, i);
        if (t->type != GGML_TYPE_F16) {
            rc = gguf_writer_add_tensor(w, t->name, t->type, t->n_dims, t->ne, t->data, t->size) < 0 ? -1 : 0;
            continue;
        }
        const size_t n = t->size / 2;
        float *f = malloc(n * sizeof *f);
        const uint16_t *h = (const uint16_t *)(const void *)t->data;
        for (size_t j = 0; f && j < n; j++) f[j] = fp16_to_f32(h[j]);
        rc = f && gguf_writer_add_tensor(w, t->name, GGML_TYPE_F32, t->n_dims, t->ne, f, n * sizeof *f) >= 0 ? 0 : -1;
        free(f);
    }
    if (rc == 0) rc = gguf_writer_write(w, dst, err, sizeof err);
    if (rc) printf("%s: cannot write the F32 widening of %s (%s)\n", dst, MODEL, err);
    gguf_writer_free(w);
    gguf_close(g);
    return rc;
}

static void test_agrees_with_llamacpp(void **st)
{
    (void)st;
    seq s = { .n_rows = N_TOK, .n_prompt = N_PROMPT };
    s.tok = text_tokens();
    assert_non_null(s.tok);
    size_t nl = 0;
    s.ref = fixture_floats("tiny-moe", "tiny-moe-f32", "logits", 0, &nl);
    s.n_vocab = (int)(nl / N_TOK);
    assert_int_equal(nl, (size_t)N_TOK * s.n_vocab);
    float *ref16 = fixture_floats("tiny-moe", "tiny-moe", "logits", nl, NULL);

    scratch sc;
    scratch_make(&sc, "tiny-moe");
    build_pack(MODEL, sc.pack);
    float *out = run_pack(sc.pack, &s);
    const double rel = worst_rel(&s, out);
    float *ref32 = s.ref;
    s.ref = ref16;
    const double rel16 = worst_rel(&s, out);
    s.ref = ref32;
    int hits = 0;
    for (int r = 0; r + 1 < N_TOK; r++) hits += argmax(out + (size_t)r * s.n_vocab, s.n_vocab) == s.tok[r + 1];
    printf("tiny-moe: %d rows, max |ours - llama.cpp| / max|logit| = %.3g against the F32 widening, %.3g against "
           "the F16 file (F16 activations there); top-1 = next token on %d of %d\n",
           N_TOK, rel, rel16, hits, N_TOK - 1);
    assert_true(rel < 1e-5);
    assert_true(rel16 < 3e-3);
    assert_true(hits * 5 >= N_TOK - 1);

    /* the F32 widening, packed: what llama.cpp ran for the reference (its
     * products sum in the F32 order, not the F16 one, so the bits differ) */
    char wide[700], wide_pack[700];
    snprintf(wide, sizeof wide, "%s/tiny-moe-f32.gguf", sc.dir);
    snprintf(wide_pack, sizeof wide_pack, "%s/pack-f32", sc.dir);
    assert_int_equal(write_widened(wide), 0);
    build_pack(wide, wide_pack);
    float *out32 = run_pack(wide_pack, &s);
    const double rel_wide = worst_rel(&s, out32);
    printf("tiny-moe: the F32 widening's pack against llama.cpp on it: %.3g\n", rel_wide);
    assert_true(rel_wide < 1e-5);
    free(out32);
    free(out);
    free(ref16);
    seq_free(&s);
    scratch_rm(&sc);
}

static void test_mtp_agrees_with_torch(void **st)
{
    (void)st;
    int32_t *tok = text_tokens();
    assert_non_null(tok);
    size_t nl = 0;
    seq s = { .n_rows = N_TOK - 1, .n_prompt = N_TOK - 1, .tok = NULL };
    s.ref = fixture_floats("tiny-moe", "tiny-moe-mtp", "logits", 0, &nl);
    s.n_vocab = (int)(nl / (N_TOK - 1));
    assert_int_equal(nl, (size_t)(N_TOK - 1) * s.n_vocab);
    scratch sc;
    scratch_make(&sc, "tiny-moe-mtp");
    build_pack(MODEL, sc.pack);
    char err[512];
    loaded_pack *lp = loader_open(sc.pack, err, sizeof err);
    if (!lp) fail_msg("%s", err);
    model_options o = f32_opts();
    model *m = model_create(loader_hparams(lp), loader_weights(lp), &o, err, sizeof err);
    if (!m) fail_msg("%s", err);
    assert_int_equal(model_hp(m)->n_vocab, s.n_vocab);
    float *out = mtp_logits(m, tok, N_TOK);
    const double rel = worst_rel(&s, out);
    printf("tiny-moe's next-token-prediction block: %d rows, max |ours - PyTorch| / max|logit| = %.3g\n", N_TOK - 1,
           rel);
    assert_true(rel < 1e-5);
    model_free(m);
    loader_close(lp);
    scratch_rm(&sc);
    free(out);
    free(s.ref);
    free(tok);
}

/* --write DIR: both models and their tokens, for llama.cpp. */
static int write_all(const char *dir)
{
    int32_t *tok = text_tokens();
    char path[600], cmd[1300];
    snprintf(cmd, sizeof cmd, "cp '%s' '%s/tiny-moe.gguf'", MODEL, dir);
    int rc = tok && system(cmd) == 0 ? 0 : 1;
    snprintf(path, sizeof path, "%s/tiny-moe-f32.gguf", dir);
    if (rc == 0 && write_widened(path)) rc = 1;
    for (int k = 0; rc == 0 && k < 2; k++) {
        snprintf(path, sizeof path, "%s/tiny-moe%s.tokens.i32", dir, k ? "-f32" : "");
        FILE *fp = fopen(path, "wb");
        if (!fp || fwrite(tok, sizeof *tok, N_TOK, fp) != N_TOK) rc = 1;
        if (fp && fclose(fp)) rc = 1;
    }
    if (rc) fprintf(stderr, "%s: cannot write the models or their tokens\n", dir);
    else printf("tiny-moe %d %d\ntiny-moe-f32 %d %d\n", N_PROMPT, N_TOK, N_PROMPT, N_TOK);
    free(tok);
    return rc;
}

int main(int argc, char **argv)
{
    if (argc == 3 && !strcmp(argv[1], "--write")) return write_all(argv[2]);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_agrees_with_llamacpp),
        cmocka_unit_test(test_mtp_agrees_with_torch),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
