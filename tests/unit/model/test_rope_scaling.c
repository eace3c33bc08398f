/* test_rope_scaling.c: scaled RoPE against llama.cpp. Each variant is a
 * shared reference model rewritten by our GGUF writer with RoPE scaling
 * keys or a rope_freqs tensor (Llama 3's frequency factors); its logits on
 * a fixed token sequence (the prompt as one batch, then one token at a
 * time) must agree with llama.cpp's within 1e-5 of each row's largest
 * |logit| (the plain models differ from this llama.cpp build by ~5e-7: its
 * sums are a newer version's), and our RoPE applied to llama.cpp's own
 * layer-0 K (before its rope) must give llama.cpp's rotated K bit for bit.
 * tests/fixtures/rope/ holds what llama.cpp wrote (Debian's 0.7.0 build;
 * tests/diag/diag_fixtures_llamacpp.sh makes it again). The same variant built into
 * a pack and run through the loader must give the adapter's bits: the pack
 * carries the keys and the factors. Also: how the scaling type resolves (no
 * key: linear; none ignores the factor), refusals (on the shipped model
 * without ../shared, on the reference models too with it).
 *
 *   test_rope_scaling --write DIR   writes each variant's GGUF and tokens
 *                                   (for the diagnostic), then exits. */
#include "tests/lib/test_util.h"

#include "formats/fp16.h"
#include "tests/lib/gguf_weights.h"
#include "tests/lib/llamacpp_fixture.h"
#include "runtime/model/model_impl.h"

typedef struct variant {
    const char *name;
    const char *src;            /* shared GGUF, or SHIPPED_MODEL */
    const char *tokens;         /* shared token file: the first N_TOK are the sequence */
    const char *type;           /* rope.scaling.type, NULL: no key */
    float factor, attn_factor;  /* 0: no key */
    uint32_t orig_ctx;          /* 0: no key */
    int n_freqs;                /* rope_freqs.weight, 0: none */
    float freqs[8];
    int to_f32;                 /* F16 tensors rewritten as F32 (llama.cpp rounds activations for F16) */
    int old_key;                /* the factor under llama.cpp's older name, rope.scale_linear */
    const char *ref;            /* another variant's fixtures (the same angles), NULL: its own */
} variant;

enum { N_TOK = 20, N_PROMPT = 8 };

#define STORIES "models/stories260K/stories260K.gguf"
#define STORIES_TOKENS "models/stories260K/v3.tokens.i32"
static const variant variants[] = {
    /* Llama 3's frequency factors: each pair's angle divided by its own factor */
    { .name = "llama-freqs", .src = STORIES, .tokens = STORIES_TOKENS, .n_freqs = 4, .freqs = { 1.0f, 1.25f, 3.0f, 8.0f } },
    /* a factor and no type key: llama.cpp scales linearly */
    { .name = "llama-linear", .src = STORIES, .tokens = STORIES_TOKENS, .factor = 4.0f },
    /* YaRN over a 32-token original context, with an attention factor */
    { .name = "llama-yarn", .src = STORIES, .tokens = STORIES_TOKENS, .type = "yarn", .factor = 4.0f, .attn_factor = 0.75f, .orig_ctx = 32 },
    /* YaRN on the NEOX layout (qwen2: base 1e6, 32 rotary dims) */
    { .name = "qwen2-yarn", .src = "models/archs/qwen2/qwen2-f16.gguf", .tokens = "models/archs/qwen2/v2.tokens.i32",
      .type = "yarn", .factor = 8.0f, .orig_ctx = 64, .to_f32 = 1 },
    /* llama-linear with the factor under its older key name */
    { .name = "llama-linear-old-key", .src = STORIES, .tokens = STORIES_TOKENS, .factor = 4.0f, .old_key = 1, .ref = "llama-linear" },
};
#define N_VARIANTS ((int)(sizeof variants / sizeof variants[0]))

/* The variant's source: the shipped model from the project root, the others from ../shared. */
static const char *variant_src(const variant *v, char *buf, size_t n)
{
    if (!strcmp(v->src, SHIPPED_MODEL)) return SHIPPED_MODEL;
    return shared_path(buf, n, v->src);
}

/* The source with every rope.scaling key replaced by the variant's. */
static int write_variant(const variant *v, const char *path, char *err, size_t errlen)
{
    char buf[512];
    const char *src = variant_src(v, buf, sizeof buf);
    gguf_file *f = gguf_open(src, err, errlen);
    if (!f) return -1;
    const char *arch = gguf_get_str(f, "general.architecture");
    char key[160];
    gguf_writer *w = gguf_writer_new();
    int rc = w ? 0 : -1;
    for (int64_t i = 0; rc == 0 && i < gguf_n_kv(f); i++)
        if (!strstr(gguf_kv_key(f, i), ".rope.scal")) rc = gguf_writer_copy_kv(w, f, i);
    if (rc == 0 && v->type) {
        snprintf(key, sizeof key, "%s.rope.scaling.type", arch);
        rc = gguf_writer_add_str(w, key, v->type);
    }
    if (rc == 0 && v->factor != 0) {
        snprintf(key, sizeof key, v->old_key ? "%s.rope.scale_linear" : "%s.rope.scaling.factor", arch);
        rc = gguf_writer_add_kv(w, key, GGUF_TYPE_FLOAT32, &v->factor);
    }
    if (rc == 0 && v->attn_factor != 0) {
        snprintf(key, sizeof key, "%s.rope.scaling.attn_factor", arch);
        rc = gguf_writer_add_kv(w, key, GGUF_TYPE_FLOAT32, &v->attn_factor);
    }
    if (rc == 0 && v->orig_ctx) {
        snprintf(key, sizeof key, "%s.rope.scaling.original_context_length", arch);
        rc = gguf_writer_add_u32(w, key, v->orig_ctx);
    }
    for (int64_t i = 0; rc == 0 && i < gguf_n_tensors(f); i++) {
        const gguf_tensor *t = gguf_tensor_at(f, i);
        if (v->to_f32 && t->type == GGML_TYPE_F16) {
            float *x = malloc((size_t)t->n_elements * sizeof *x);
            for (int64_t k = 0; x && k < t->n_elements; k++) {
                uint16_t h;
                memcpy(&h, t->data + 2 * k, 2);
                x[k] = fp16_to_f32(h);
            }
            if (!x || gguf_writer_add_tensor(w, t->name, GGML_TYPE_F32, t->n_dims, t->ne, x,
                                             (size_t)t->n_elements * sizeof *x) < 0)
                rc = -1;
            free(x);
        } else if (gguf_writer_add_tensor(w, t->name, t->type, t->n_dims, t->ne, t->data, t->size) < 0) {
            rc = -1;
        }
    }
    if (rc == 0 && v->n_freqs) {
        const int64_t ne[1] = { v->n_freqs };
        const size_t bytes = sizeof(float) * (size_t)v->n_freqs;
        if (gguf_writer_add_tensor(w, "rope_freqs.weight", GGML_TYPE_F32, 1, ne, v->freqs, bytes) < 0) rc = -1;
    }
    if (rc) snprintf(err, errlen, "%s: cannot rewrite", v->name);
    else rc = gguf_writer_write(w, path, err, errlen);
    gguf_writer_free(w);
    gguf_close(f);
    return rc;
}

static const char *fixture_name(const variant *v) { return v->ref ? v->ref : v->name; }

static void scratch_variant(scratch *sc, const variant *v)
{
    scratch_make(sc, v->name);
    char err[256];
    if (write_variant(v, sc->gguf, err, sizeof err)) { printf("%s\n", err); fail(); }
}

/* Against the unscaled source: the scaling must have changed the logits
 * (else the fixture could not tell a variant from the plain model). */
static double moved_from_plain(const variant *v, const seq *s)
{
    char buf[512], err[256];
    const char *src = variant_src(v, buf, sizeof buf);
    gguf_model gm;
    if (gguf_model_load(&gm, src, 0, err, sizeof err)) { printf("%s\n", err); fail(); }
    model_options o = f32_opts();
    model *m = model_create(&gm.hp, &gm.w, &o, err, sizeof err);
    assert_non_null(m);
    float *plain = run_seq(m, s);
    const double d = worst_rel(s, plain);
    free(plain);
    model_free(m);
    gguf_model_free(&gm);
    return d;
}

static void check_variant(const variant *v)
{
    SKIP_UNLESS_SHARED(v->src);
    scratch sc;
    scratch_variant(&sc, v);
    seq s;
    fixture_seq(&s, v->tokens, N_TOK, N_PROMPT, "rope", fixture_name(v));
    char err[512];

    gguf_model gm;
    if (gguf_model_load(&gm, sc.gguf, 0, err, sizeof err)) { printf("%s\n", err); fail(); }
    model_options o = f32_opts();
    model *m = model_create(&gm.hp, &gm.w, &o, err, sizeof err);
    if (!m) printf("%s\n", err);
    assert_non_null(m);
    float *out = run_seq(m, &s);
    const double rel = worst_rel(&s, out), moved = moved_from_plain(v, &s);
    printf("%s: %d rows, max |ours - llama.cpp| / max|logit| = %.3g (the plain model is %.3g away)\n", v->name,
           s.n_rows, rel, moved);
    assert_true(moved > 1e-2);
    assert_true(rel < 1e-5);

    /* RoPE alone: llama.cpp's layer-0 K of the whole sequence as one batch,
     * before and after its rope, against ours on the same input. */
    const model_hparams *hp = model_hp(m);
    const size_t nk = (size_t)N_TOK * hp->n_head_kv * hp->head_dim;
    float *k_pre = fixture_floats("rope", fixture_name(v), "k_pre", nk, NULL);
    float *k_post = fixture_floats("rope", fixture_name(v), "k_post", nk, NULL);
    model_options wide = o;
    wide.n_batch = N_TOK;
    model *mw = model_create(&gm.hp, &gm.w, &wide, err, sizeof err);
    assert_non_null(mw);
    model_rope_rows(mw, k_pre, hp->n_head_kv, N_TOK, 0);
    assert_memory_equal(k_pre, k_post, nk * sizeof *k_pre);
    model_free(mw);
    free(k_pre);
    free(k_post);
    model_free(m);
    gguf_model_free(&gm);

    /* The pack carries the keys and the factors: the same bits. */
    pack_gives_same_bits(&sc, &s, out);
    free(out);
    seq_free(&s);
    scratch_rm(&sc);
}

static void test_llama_freqs(void **st) { (void)st; check_variant(&variants[0]); }
static void test_llama_linear(void **st)
{
    (void)st;
    check_variant(&variants[1]);
    check_variant(&variants[4]);
}
static void test_llama_yarn(void **st) { (void)st; check_variant(&variants[2]); }
static void test_qwen2_yarn(void **st) { (void)st; check_variant(&variants[3]); }

typedef struct kv { const char *key; double v; } kv;

static int kv_get(void *ctx, const char *key, double *out)
{
    for (const kv *k = ctx; k->key; k++)
        if (!strcmp(k->key, key)) { *out = k->v; return 0; }
    return -1;
}

/* The type resolves as llama.cpp's context does. */
static void test_resolution(void **st)
{
    (void)st;
    const kv keys[] = { { "llama.context_length", 4096 }, { "llama.embedding_length", 64 },
                        { "llama.block_count", 1 }, { "llama.attention.head_count", 8 },
                        { "llama.feed_forward_length", 128 }, { "llama.attention.layer_norm_rms_epsilon", 1e-5 },
                        { "llama.rope.scaling.factor", 4 }, { NULL, 0 } };
    model_hparams hp;
    char err[256];
    assert_int_equal(hparams_load(&hp, "llama", kv_get, (void *)keys, err, sizeof err), 0);
    /* no type key: linear, so the factor applies */
    assert_int_equal(hp.rope_scaling, ROPE_SCALING_LINEAR);
    assert_true(hp.rope_freq_scale == 0.25f && hp.yarn_ext_factor == 0.0f && hp.n_ctx_orig == 4096);
    assert_true(hparams_rope_scaled(&hp));
    /* "none" ignores the factor */
    assert_int_equal(hparams_rope_scaling(&hp, "none", err, sizeof err), 0);
    assert_true(hp.rope_freq_scale == 1.0f && !hparams_rope_scaled(&hp));
    assert_int_equal(hparams_rope_scaling(&hp, "yarn", err, sizeof err), 0);
    assert_true(hp.rope_freq_scale == 0.25f && hp.yarn_ext_factor == 1.0f);
    /* the older key name for the factor, read when the new one is absent */
    const kv old[] = { { "llama.context_length", 4096 }, { "llama.embedding_length", 64 },
                       { "llama.block_count", 1 }, { "llama.attention.head_count", 8 },
                       { "llama.feed_forward_length", 128 }, { "llama.attention.layer_norm_rms_epsilon", 1e-5 },
                       { "llama.rope.scale_linear", 2 }, { NULL, 0 } };
    model_hparams h2;
    assert_int_equal(hparams_load(&h2, "llama", kv_get, (void *)old, err, sizeof err), 0);
    assert_true(h2.rope_freq_scale == 0.5f);
    /* a kind the runtime does not compute is refused by name */
    assert_int_equal(hparams_rope_scaling(&hp, "longrope", err, sizeof err), -1);
    assert_non_null(strstr(err, "longrope"));
}

/* Frequency factors the graph cannot use are refused, naming the tensor:
 * a wrong count, and an architecture whose llama.cpp graph ignores them. */
static void test_freqs_refused(void **st)
{
    (void)st;
    const variant bad[] = {
        { .name = "glm4moe-freqs", .src = SHIPPED_MODEL, .n_freqs = 8, .freqs = { 1, 1, 1, 1, 2, 2, 2, 2 } },
        { .name = "llama-freqs-short", .src = STORIES, .tokens = STORIES_TOKENS, .n_freqs = 3, .freqs = { 1, 2, 3 } },
        { .name = "qwen2-freqs", .src = "models/archs/qwen2/qwen2-f16.gguf", .n_freqs = 8,
          .freqs = { 1, 1, 1, 1, 2, 2, 2, 2 } },
    };
    const char *why[] = { "architecture glm4moe does not use", "3 factors, the 8 RoPE dimensions need 4",
                          "architecture qwen2 does not use" };
    for (int i = 0; i < 3; i++) {
        if (i > 0 && !have_shared(bad[i].src)) {
            printf("SKIP (part) %s: %s/%s is absent\n", bad[i].name, shared_root(), bad[i].src);
            continue;
        }
        scratch sc;
        scratch_variant(&sc, &bad[i]);
        gguf_model gm;
        char err[256];
        assert_int_equal(gguf_model_load(&gm, sc.gguf, 0, err, sizeof err), 0);
        model_options o = f32_opts();
        model *m = model_create(&gm.hp, &gm.w, &o, err, sizeof err);
        assert_null(m);
        printf("%s\n", err);
        assert_non_null(strstr(err, "rope_freqs.weight"));
        assert_non_null(strstr(err, why[i]));
        gguf_model_free(&gm);
        scratch_rm(&sc);
    }
}

/* A pack whose scaling the runtime does not compute is refused at load. */
static void test_pack_refuses_longrope(void **st)
{
    (void)st;
    const variant v = { .name = "glm4moe-longrope", .src = SHIPPED_MODEL, .type = "longrope", .factor = 2.0f };
    scratch sc;
    scratch_variant(&sc, &v);
    build_pack(sc.gguf, sc.pack);
    char err[512];
    assert_null(loader_open(sc.pack, err, sizeof err));
    printf("%s\n", err);
    assert_non_null(strstr(err, "RoPE scaling 'longrope' is not supported"));
    scratch_rm(&sc);
}

/* --write DIR: each variant's GGUF and its token sequence, for llama.cpp. */
static int write_all(const char *dir)
{
    for (int i = 0; i < N_VARIANTS; i++) {
        const variant *v = &variants[i];
        if (v->ref) continue;
        char path[600], err[256];
        snprintf(path, sizeof path, "%s/%s.gguf", dir, v->name);
        if (write_variant(v, path, err, sizeof err)) { fprintf(stderr, "%s\n", err); return 1; }
        size_t nt = 0;
        int32_t *tok = slurp_shared(v->tokens, &nt);
        snprintf(path, sizeof path, "%s/%s.tokens.i32", dir, v->name);
        FILE *fp = tok && nt >= N_TOK * sizeof *tok ? fopen(path, "wb") : NULL;
        if (!fp || fwrite(tok, sizeof *tok, N_TOK, fp) != N_TOK) {
            fprintf(stderr, "%s: cannot write\n", path);
            free(tok);
            if (fp) fclose(fp);
            return 1;
        }
        fclose(fp);
        free(tok);
        printf("%s %d %d k\n", v->name, N_PROMPT, N_TOK);
    }
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 3 && !strcmp(argv[1], "--write")) return write_all(argv[2]);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_resolution),   cmocka_unit_test(test_freqs_refused), cmocka_unit_test(test_llama_freqs),
        cmocka_unit_test(test_llama_linear), cmocka_unit_test(test_llama_yarn),    cmocka_unit_test(test_qwen2_yarn),
        cmocka_unit_test(test_pack_refuses_longrope),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
