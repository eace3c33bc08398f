/* test_model.c: the CPU forward pass against llama.cpp's logits on the real
 * reference models (../shared/models), through the test-only GGUF adapter.
 * Each sequence is run as llama.cpp ran it: the prompt as one batch with the
 * logits of every row, then one token at a time. Every row must agree within
 * a tolerance relative to the row's largest |logit|, and greedy decoding must
 * pick the reference continuation. Also: ubatch sizes, f16 KV cache, native
 * ggml blocks against llama.cpp; and on the shipped model (no ../shared
 * needed): thread-count independence, ubatch sizes, scalar kernels and the
 * f16 KV cache against the default run, context overflow, shape errors. */
#include "tests/lib/test_util.h"

#include "tests/lib/gguf_weights.h"
#include "tests/lib/ref_seq.h"
#include "runtime/kernels/kernels.h"
#include "runtime/model/model.h"

#include <math.h>

/* Largest |ours - ref| / max|ref| over rows; greedy rows must equal the reference's next token. */
static double compare(const seq *s, const float *out, const char *what, int check_greedy)
{
    double worst = 0.0;
    for (int r = 0; r < s->n_rows; r++) {
        const float *a = out + (size_t)r * s->n_vocab, *b = s->ref + (size_t)r * s->n_vocab;
        double mx = 0.0, d = 0.0;
        for (int i = 0; i < s->n_vocab; i++) {
            if (fabs(b[i]) > mx) mx = fabs(b[i]);
            if (fabs(a[i] - b[i]) > d) d = fabs(a[i] - b[i]);
        }
        if (d / mx > worst) worst = d / mx;
        if (check_greedy && r >= s->n_prompt - 1 && r + 1 < s->n_rows && argmax(a, s->n_vocab) != s->tok[r + 1]) {
            printf("%s: row %d greedy %d, reference %d\n", what, r, argmax(a, s->n_vocab), s->tok[r + 1]);
            fail();
        }
    }
    printf("%s: %d rows, max |dlogit| / max|logit| = %.3g\n", what, s->n_rows, worst);
    return worst;
}

static model *open_model_at(gguf_model *gm, const char *path, int keep_native, model_options o)
{
    char err[256];
    if (gguf_model_load(gm, path, keep_native, err, sizeof err) != 0) { printf("%s\n", err); fail(); }
    model *m = model_create(&gm->hp, &gm->w, &o, err, sizeof err);
    if (!m) printf("%s\n", err);
    assert_non_null(m);
    return m;
}

/* rel: a file under ../shared */
static model *open_model(gguf_model *gm, const char *rel, int keep_native, model_options o)
{
    char path[4096];
    return open_model_at(gm, shared_path(path, sizeof path, rel), keep_native, o);
}

/* N_SEQ ids spread over a vocabulary of n_vocab, N_SEQ_PROMPT of them the prompt */
enum { N_SEQ = 40, N_SEQ_PROMPT = 16 };
static void spread_seq(seq *s, int n_vocab)
{
    static int32_t tok[N_SEQ];
    for (int i = 0; i < N_SEQ; i++) tok[i] = (int32_t)((i * 37 + 5) % n_vocab);
    *s = (seq){ .tok = tok, .n_rows = N_SEQ, .n_prompt = N_SEQ_PROMPT, .n_vocab = n_vocab };
}

/* The shipped model's n_vocab: its embedding's rows (the adapter leaves hp.n_vocab to model_create) */
static int shipped_vocab(void)
{
    gguf_model gm;
    char err[256];
    if (gguf_model_load(&gm, SHIPPED_MODEL, 0, err, sizeof err) != 0) { printf("%s\n", err); fail(); }
    const int n = (int)gm.w.tok_embd.rows;
    gguf_model_free(&gm);
    return n;
}

static model_options f32_opts(int threads)
{
    model_options o = model_default_options();
    o.kv = KV_F32;
    o.n_threads = threads;
    return o;
}

/* Tolerance: 1e-4 of the row's largest |logit| (what issue 6 accepts for an
 * F32 engine); measured worst cases are printed by each test. */
#define REL_TOL 1e-4

static void check_model_x(const char *gguf_rel, const char *dir, const char *ldir, const char *const *ids, int n_ids,
                          int exact)
{
    char rel[512];
    snprintf(rel, sizeof rel, "%s", gguf_rel);
    SKIP_UNLESS_SHARED(rel);
    gguf_model gm;
    model *m = open_model(&gm, rel, 0, f32_opts(2));
    for (int i = 0; i < n_ids; i++) {
        seq s;
        assert_int_equal(seq_load(&s, dir, ldir, ids[i]), 0);
        float *out = run_seq(m, &s);
        char what[256];
        snprintf(what, sizeof what, "%s %s", gguf_rel, ids[i]);
        assert_true(compare(&s, out, what, 1) < REL_TOL);
        if (exact) assert_memory_equal(out, s.ref, (size_t)s.n_rows * s.n_vocab * sizeof *out);
        free(out);
        seq_free(&s);
    }
    model_free(m);
    gguf_model_free(&gm);
}

static void check_model(const char *gguf_rel, const char *dir, const char *ldir, const char *const *ids, int n_ids)
{
    check_model_x(gguf_rel, dir, ldir, ids, n_ids, 0);
}

static const char *const v4[] = { "v0", "v1", "v2", "v3" };

static void test_stories260k(void **st)
{
    (void)st;
    /* bit for bit (head_dim 8 and n_ff 172: ggml_vec_dot_f32's tail, the
     * swiglu tail with libm's expf, vec_dot where tinyBLAS needs cols % 8) */
    check_model_x("models/stories260K/stories260K.gguf", "models/stories260K", "models/stories260K", v4, 4, 1);
}

static void test_tinymoe_f32(void **st)
{
    (void)st;
    /* bit for bit: every operation in ggml-cpu's x86 order, the experts'
     * batch products row by row as its mul_mat_id takes them */
    check_model_x("models/tinymoe/tinymoe-f32.gguf", "models/tinymoe", "models/tinymoe/logits/f32", v4, 4, 1);
}

/* The F16 file holds the F32 file's values exactly: same reference. */
static void test_tinymoe_f16(void **st)
{
    (void)st;
    check_model("models/tinymoe/tinymoe-f16.gguf", "models/tinymoe", "models/tinymoe/logits/f32", v4, 4);
}

static void test_qwen2(void **st)
{
    (void)st;
    check_model("models/archs/qwen2/qwen2-f16.gguf", "models/archs/qwen2", "models/archs/qwen2", v4, 3);
}

static void test_qwen3(void **st)
{
    (void)st;
    check_model("models/archs/qwen3/qwen3-f16.gguf", "models/archs/qwen3", "models/archs/qwen3", v4, 3);
}

static void test_qwen3moe(void **st)
{
    (void)st;
    check_model("models/archs/qwen3moe/qwen3moe-f16.gguf", "models/archs/qwen3moe", "models/archs/qwen3moe", v4, 3);
}

static void test_olmoe(void **st)
{
    (void)st;
    check_model("models/archs/olmoe/olmoe-f16.gguf", "models/archs/olmoe", "models/archs/olmoe", v4, 3);
}

/* Thread counts 1, 2, 3 give the same bits, prefill and decode alike: on
 * the shipped model, and on tinymoe-f16 where ../shared has it. */
static void threads_identical(const char *path)
{
    seq s;
    gguf_model gm;
    char err[256];
    if (gguf_model_load(&gm, path, 0, err, sizeof err) != 0) fail_msg("%s", err);
    spread_seq(&s, (int)gm.w.tok_embd.rows);
    gguf_model_free(&gm);
    float *base = NULL;
    for (int t = 1; t <= 3; t++) {
        model_options o = model_default_options();
        o.n_threads = t;
        o.n_batch = 8; /* several ubatches */
        model *m = open_model_at(&gm, path, 0, o);
        float *out = run_seq(m, &s);
        if (!base) base = out;
        else { assert_memory_equal(base, out, (size_t)s.n_rows * s.n_vocab * sizeof(float)); free(out); }
        model_free(m);
        gguf_model_free(&gm);
    }
    free(base);
}

static void test_threads_identical(void **st)
{
    (void)st;
    threads_identical(SHIPPED_MODEL);
    char path[4096];
    if (shared_part(path, sizeof path, "models/tinymoe/tinymoe-f16.gguf")) threads_identical(path);
}

/* The runs that change only rounding, and the f16 KV cache (a little) */
typedef struct variant { int n_batch, simd; kv_type kv; double tol; const char *what; } variant;
static const variant VARIANTS[] = {
    { 1, 1, KV_F32, REL_TOL, "n_batch 1 (token by token)" },
    { 7, 1, KV_F32, REL_TOL, "n_batch 7" },
    { 64, 0, KV_F32, REL_TOL, "scalar kernels" },
    { 64, 1, KV_F16, 5e-3, "f16 KV cache" },
};
#define N_VARIANTS (sizeof VARIANTS / sizeof VARIANTS[0])

static model_options variant_opts(const variant *v)
{
    model_options o = f32_opts(2);
    o.n_batch = v->n_batch;
    o.kernels = v->simd ? NULL : kernels_scalar();
    o.kv = v->kv;
    return o;
}

/* On the shipped model, against its own default run (F32 KV cache, SIMD,
 * the default ubatch). */
static void test_variants_agree(void **st)
{
    (void)st;
    seq s;
    spread_seq(&s, shipped_vocab());
    gguf_model gm;
    model *m = open_model_at(&gm, SHIPPED_MODEL, 0, f32_opts(2));
    float *base = run_seq(m, &s);
    model_free(m);
    s.ref = base;
    for (size_t i = 0; i < N_VARIANTS; i++) {
        char err[256], what[128];
        const model_options o = variant_opts(&VARIANTS[i]);
        m = model_create(&gm.hp, &gm.w, &o, err, sizeof err);
        if (!m) fail_msg("%s", err);
        float *out = run_seq(m, &s);
        snprintf(what, sizeof what, "shipped model, %s vs the default run", VARIANTS[i].what);
        assert_true(compare(&s, out, what, 0) < VARIANTS[i].tol);
        free(out);
        model_free(m);
    }
    free(base);
    gguf_model_free(&gm);
}

/* ubatch size and the scalar kernels change only rounding; the f16 KV cache
 * moves logits a little (llama.cpp's own default, 0.016 on stories260K). */
static void test_variants_close(void **st)
{
    (void)st;
    SKIP_UNLESS_SHARED("models/stories260K/stories260K.gguf");
    seq s;
    assert_int_equal(seq_load(&s, "models/stories260K", "models/stories260K", "v3"), 0);
    for (size_t i = 0; i < N_VARIANTS; i++) {
        gguf_model gm;
        model *m = open_model(&gm, "models/stories260K/stories260K.gguf", 0, variant_opts(&VARIANTS[i]));
        float *out = run_seq(m, &s);
        assert_true(compare(&s, out, VARIANTS[i].what, VARIANTS[i].kv == KV_F32) < VARIANTS[i].tol);
        free(out);
        model_free(m);
        gguf_model_free(&gm);
    }
    seq_free(&s);
}

/* Native ggml blocks decode row by row to the same floats the adapter's
 * whole-tensor dequantization gives: identical logits with f32 activations.
 * With ggml's quantized activations (keep_native 2: Q8_K for these K-quants,
 * Q8_0 for Q8_0) and ggml's integer dots in its order (kernels_ggml_q8.c)
 * the logits are llama.cpp's for the same file bit for bit (q4_k v2,
 * iq3_xxs v0-v3); the f32 path differs from them by up to 0.22 of
 * max|logit|. */
static void test_native_blocks(void **st)
{
    (void)st;
    SKIP_UNLESS_SHARED("models/tinymoe/tinymoe-q4_k.gguf");
    seq s;
    assert_int_equal(seq_load(&s, "models/tinymoe", "models/tinymoe/logits/q4_k", "v2"), 0);
    gguf_model g1, g2, g3;
    model *a = open_model(&g1, "models/tinymoe/tinymoe-q4_k.gguf", 1, f32_opts(2));
    model *b = open_model(&g2, "models/tinymoe/tinymoe-q4_k.gguf", 0, f32_opts(2));
    model *c = open_model(&g3, "models/tinymoe/tinymoe-q4_k.gguf", 2, f32_opts(2));
    float *oa = run_seq(a, &s), *ob = run_seq(b, &s), *oc = run_seq(c, &s);
    assert_memory_equal(oa, ob, (size_t)s.n_rows * s.n_vocab * sizeof(float));
    int agree = 0;
    for (int r = 0; r < s.n_rows; r++)
        agree += argmax(oc + (size_t)r * s.n_vocab, s.n_vocab) == argmax(s.ref + (size_t)r * s.n_vocab, s.n_vocab);
    compare(&s, oa, "tinymoe-q4_k native, f32 activations vs llama.cpp q4_k", 0);
    double q8 = compare(&s, oc, "tinymoe-q4_k native, Q8 activations vs llama.cpp q4_k", 0);
    printf("  top-1 agreement with llama.cpp on q4_k (Q8 activations): %d/%d rows\n", agree, s.n_rows);
    assert_true(q8 == 0.0); /* bit for bit: ggml's integer dots, in its order */
    assert_int_equal(agree, s.n_rows);
    free(oa); free(ob); free(oc);
    model_free(a); model_free(b); model_free(c);
    gguf_model_free(&g1); gguf_model_free(&g2); gguf_model_free(&g3);
    seq_free(&s);
    /* IQ3_XXS experts, IQ3_S/IQ2_S/Q5_K/Q8_0 dense, all native */
    SKIP_UNLESS_SHARED("models/tinymoe/tinymoe-iq3_xxs.gguf");
    for (int v = 0; v < 4; v++) {
        char name[16];
        snprintf(name, sizeof name, "v%d", v);
        assert_int_equal(seq_load(&s, "models/tinymoe", "models/tinymoe/logits/iq3_xxs", name), 0);
        c = open_model(&g3, "models/tinymoe/tinymoe-iq3_xxs.gguf", 2, f32_opts(2));
        oc = run_seq(c, &s);
        assert_true(compare(&s, oc, "tinymoe-iq3_xxs native, Q8 activations vs llama.cpp", 0) == 0.0);
        free(oc);
        model_free(c);
        gguf_model_free(&g3);
        seq_free(&s);
    }
}

/* tinymoe-iq3_xxs with Q8 activations is a float-noise amplifier: one
 * activation 2 ulps from a Q8 rounding boundary, rounded the other way,
 * moves logits by 1e-2 and, through the KV cache, by 0.3. So the scalar
 * table and the SIMD ones must sum in the same order (ggml's), and do: the
 * same bits, each equal to llama.cpp's, on all four sequences. */
static void test_iq3_xxs_tables_identical(void **st)
{
    (void)st;
    SKIP_UNLESS_SHARED("models/tinymoe/tinymoe-iq3_xxs.gguf");
    for (int v = 0; v < 4; v++) {
        char name[16];
        snprintf(name, sizeof name, "v%d", v);
        seq s;
        assert_int_equal(seq_load(&s, "models/tinymoe", "models/tinymoe/logits/iq3_xxs", name), 0);
        gguf_model g1, g2;
        model_options o = f32_opts(2);
        model *a = open_model(&g1, "models/tinymoe/tinymoe-iq3_xxs.gguf", 2, o);
        o.kernels = kernels_scalar();
        model *b = open_model(&g2, "models/tinymoe/tinymoe-iq3_xxs.gguf", 2, o);
        float *oa = run_seq(a, &s), *ob = run_seq(b, &s);
        assert_memory_equal(oa, ob, (size_t)s.n_rows * s.n_vocab * sizeof *oa);
        assert_true(compare(&s, ob, "iq3_xxs Q8, scalar table vs llama.cpp", 0) == 0.0);
        free(oa); free(ob);
        model_free(a); model_free(b);
        gguf_model_free(&g1); gguf_model_free(&g2);
        seq_free(&s);
    }
}

static void test_context_overflow(void **st)
{
    (void)st;
    gguf_model gm;
    model_options o = f32_opts(1);
    o.n_ctx = 8;
    model *m = open_model_at(&gm, SHIPPED_MODEL, 0, o);
    const int32_t n_vocab = (int32_t)gm.w.tok_embd.rows;
    int32_t tok[9] = { 1, 2, 3, 4, 5, 6, 7, 8, 9 };
    float *logits = malloc((size_t)n_vocab * sizeof *logits);
    assert_non_null(logits);
    char err[256] = "";
    assert_int_equal(model_forward(m, tok, 6, logits, false, err, sizeof err), 0);
    assert_int_equal(model_forward(m, tok, 3, logits, false, err, sizeof err), -1);
    assert_non_null(strstr(err, "context overflow"));
    assert_int_equal(model_n_past(m), 6); /* nothing was half-done */
    assert_int_equal(model_forward(m, tok, 2, logits, false, err, sizeof err), 0);
    assert_int_equal(model_n_past(m), 8);
    int32_t bad = n_vocab;
    model_rewind(m, 0);
    assert_int_equal(model_forward(m, &bad, 1, logits, false, err, sizeof err), -1);
    assert_non_null(strstr(err, "outside the vocabulary"));
    free(logits);
    model_free(m);
    gguf_model_free(&gm);
}

/* A layer's K projection one row off, and a q bias the architecture needs
 * missing: refused, naming the tensor (the shipped model; qwen2 too where
 * ../shared has it). Both have q/k/v biases and 2 KV heads of 32. */
static void shape_errors_name_tensor(const char *path)
{
    char err[256];
    gguf_model gm;
    if (gguf_model_load(&gm, path, 0, err, sizeof err)) fail_msg("%s", err);
    model_options o = f32_opts(1);
    assert_int_equal(gm.w.layers[1].wk.rows, 64);
    gm.w.layers[1].wk.rows = 65;
    assert_null(model_create(&gm.hp, &gm.w, &o, err, sizeof err));
    assert_non_null(strstr(err, "blk.1.attn_k"));
    gm.w.layers[1].wk.rows = 64;
    const float *bias = gm.w.layers[0].bq;
    assert_non_null(bias);
    gm.w.layers[0].bq = NULL; /* the architecture needs its biases */
    assert_null(model_create(&gm.hp, &gm.w, &o, err, sizeof err));
    assert_non_null(strstr(err, "blk.0.attn_q.bias"));
    gm.w.layers[0].bq = bias;
    model *m = model_create(&gm.hp, &gm.w, &o, err, sizeof err);
    assert_non_null(m);
    model_free(m);
    gguf_model_free(&gm);
}

static void test_shape_errors_name_tensor(void **st)
{
    (void)st;
    shape_errors_name_tensor(SHIPPED_MODEL);
    char path[4096];
    if (shared_part(path, sizeof path, "models/archs/qwen2/qwen2-f16.gguf")) shape_errors_name_tensor(path);
}

static int hp_get(void *ctx, const char *key, double *out)
{
    const char *const *kv = ctx;
    for (; *kv; kv += 2)
        if (!strcmp(*kv, key)) { *out = atof(kv[1]); return 0; }
    return -1;
}

static void test_hparams(void **st)
{
    (void)st;
    const char *kv[] = { "llama.context_length", "512", "llama.embedding_length", "256",
                         "llama.feed_forward_length", "512", "llama.block_count", "2",
                         "llama.attention.head_count", "8", "llama.attention.layer_norm_rms_epsilon", "1e-5", NULL };
    model_hparams hp;
    char err[1024]; /* the list of architectures runs past 256 */
    assert_int_equal(hparams_load(&hp, "llama", hp_get, kv, err, sizeof err), 0);
    assert_int_equal(hp.n_head_kv, 8);
    assert_int_equal(hp.head_dim, 32);
    assert_int_equal(hp.n_rot, 32);
    assert_true(hp.rope_base == 10000.0f);
    assert_int_equal(hp.arch.rope, ROPE_NORM);
    assert_int_equal(hparams_load(&hp, "gpt2", hp_get, kv, err, sizeof err), -1);
    assert_non_null(strstr(err, "gpt2"));
    assert_non_null(strstr(err, "(llama, qwen2,")); /* the table's names, in order */
    assert_non_null(strstr(err, ", llama4, "));
    assert_non_null(strstr(err, ", olmoe)"));
    kv[9] = "3"; /* head_count 3 does not divide into head_count_kv 8 */
    assert_int_equal(hparams_load(&hp, "llama", hp_get, kv, err, sizeof err), -1);
    kv[9] = "8";
    kv[10] = NULL; /* no eps */
    assert_int_equal(hparams_load(&hp, "llama", hp_get, kv, err, sizeof err), -1);
    assert_non_null(strstr(err, "layer_norm_rms_epsilon"));
    /* Llama 4 with every 2nd layer MoE and no feed_forward_length: its dense layers have no width
     * (fuzz_hparams found it accepted) */
    const char *l4[] = { "llama4.context_length", "512", "llama4.embedding_length", "64", "llama4.block_count", "4",
                         "llama4.attention.head_count", "4", "llama4.attention.layer_norm_rms_epsilon", "1e-5",
                         "llama4.expert_count", "4", "llama4.expert_used_count", "1",
                         "llama4.expert_feed_forward_length", "32", "llama4.interleave_moe_layer_step", "2", NULL };
    assert_int_equal(hparams_load(&hp, "llama4", hp_get, l4, err, sizeof err), -1);
    assert_non_null(strstr(err, "feed_forward_length is missing"));
    l4[16] = "llama4.interleave_moe_layer_step"; /* and with every layer MoE it is not needed */
    l4[17] = "1";
    assert_int_equal(hparams_load(&hp, "llama4", hp_get, l4, err, sizeof err), 0);
    assert_true(hparams_layer_moe(&hp, 0) && !hparams_layer_rope(&hp, 3) && hp.gating == GATING_SIGMOID);
    assert_int_equal(arch_find("olmoe")->qk_norm, QK_NORM_FULL);
    assert_false(arch_find("olmoe")->norm_topk);
    assert_int_equal(arch_find("qwen3")->qk_norm, QK_NORM_HEAD);
    assert_true(arch_find("qwen2")->attn_bias);
    /* a pack-only row is refused like an unknown name, and not listed */
    assert_null(arch_find("phi3"));
    assert_int_equal(hparams_load(&hp, "gemma2", hp_get, kv, err, sizeof err), -1);
    assert_non_null(strstr(err, "architecture 'gemma2' is not supported (llama, qwen2,"));
    assert_non_null(strstr(err, ", olmoe)"));
    assert_null(strstr(err, "phi3"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hparams),
        cmocka_unit_test(test_stories260k),
        cmocka_unit_test(test_tinymoe_f32),
        cmocka_unit_test(test_tinymoe_f16),
        cmocka_unit_test(test_qwen2),
        cmocka_unit_test(test_qwen3),
        cmocka_unit_test(test_qwen3moe),
        cmocka_unit_test(test_olmoe),
        cmocka_unit_test(test_threads_identical),
        cmocka_unit_test(test_variants_close),
        cmocka_unit_test(test_variants_agree),
        cmocka_unit_test(test_native_blocks),
        cmocka_unit_test(test_iq3_xxs_tables_identical),
        cmocka_unit_test(test_context_overflow),
        cmocka_unit_test(test_shape_errors_name_tensor),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
