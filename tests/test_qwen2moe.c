/* test_qwen2moe.c: the qwen2moe architecture (Qwen1.5-MoE, Qwen2-57B-A14B)
 * against llama.cpp. The model is ours: a small random qwen2moe written by
 * our GGUF writer (q/k/v biases, 4 experts of which 2 are used, top-k
 * weights not renormalised, a shared expert behind a sigmoid gate row
 * stored as a 1-D [n_embd] tensor), with stories260K's tokenizer keys.
 * llama.cpp ran it (tests/fixtures/qwen2moe/, made by
 * tests/diag_fixtures_llamacpp.sh): our logits on 20 positions (8 as one
 * batch, then one at a time) must agree within 1e-5 of each row's largest
 * |logit|; the pack built from it must give the adapter's bits; and the
 * shared expert's gate must matter (the same model without it differs).
 *
 *   test_qwen2moe --write DIR   writes the GGUF and the tokens, then exits. */
#include "test_util.h"

#include "gguf_weights.h"
#include "llamacpp_fixture.h"

enum { N_TOK = 20, N_PROMPT = 8 };
enum { VOCAB = 512, EMBD = 64, LAYERS = 2, HEADS = 4, KV_HEADS = 2, EXPERTS = 4, USED = 2, FF_EXP = 32, FF_SH = 48 };
#define TOKENS "models/stories260K/v3.tokens.i32"
#define TOKENIZER_SRC "models/stories260K/stories260K.gguf"

/* splitmix64: the weights are the same on every machine. */
static float uniform(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    return (float)((double)(z >> 40) / (double)(1ull << 24) * 2.0 - 1.0); /* [-1, 1), 24 bits */
}

static int add_tensor(gguf_writer *w, uint64_t *s, const char *name, int n_dims, int64_t ne0, int64_t ne1, int64_t ne2,
                      float scale, float offset)
{
    const int64_t ne[3] = { ne0, ne1, ne2 };
    const size_t n = (size_t)(ne0 * ne1 * ne2);
    float *x = malloc(n * sizeof *x);
    if (!x) return -1;
    for (size_t i = 0; i < n; i++) x[i] = offset + scale * uniform(s);
    const int rc = gguf_writer_add_tensor(w, name, GGML_TYPE_F32, (uint32_t)n_dims, ne, x, n * sizeof *x) < 0 ? -1 : 0;
    free(x);
    return rc;
}

/* with_gate 0 leaves out the shared expert's gate row (a control). */
static int write_model(const char *path, int with_gate, char *err, size_t errlen)
{
    char src[512];
    shared_path(src, sizeof src, TOKENIZER_SRC);
    gguf_file *tf = gguf_open(src, err, errlen);
    if (!tf) return -1;
    gguf_writer *w = gguf_writer_new();
    int rc = w ? 0 : -1;
    rc |= gguf_writer_add_str(w, "general.architecture", "qwen2moe");
    rc |= gguf_writer_add_str(w, "general.name", "strata qwen2moe test model");
    const struct { const char *key; uint32_t v; } u32[] = {
        { "qwen2moe.context_length", 512 }, { "qwen2moe.embedding_length", EMBD }, { "qwen2moe.block_count", LAYERS },
        { "qwen2moe.feed_forward_length", FF_EXP }, { "qwen2moe.attention.head_count", HEADS },
        { "qwen2moe.attention.head_count_kv", KV_HEADS }, { "qwen2moe.expert_count", EXPERTS },
        { "qwen2moe.expert_used_count", USED }, { "qwen2moe.expert_feed_forward_length", FF_EXP },
        { "qwen2moe.expert_shared_feed_forward_length", FF_SH },
    };
    for (size_t i = 0; rc == 0 && i < sizeof u32 / sizeof u32[0]; i++) rc = gguf_writer_add_u32(w, u32[i].key, u32[i].v);
    const float base = 1e6f, eps = 1e-6f;
    rc |= gguf_writer_add_kv(w, "qwen2moe.rope.freq_base", GGUF_TYPE_FLOAT32, &base);
    rc |= gguf_writer_add_kv(w, "qwen2moe.attention.layer_norm_rms_epsilon", GGUF_TYPE_FLOAT32, &eps);
    for (int64_t i = 0; rc == 0 && i < gguf_n_kv(tf); i++)
        if (!strncmp(gguf_kv_key(tf, i), "tokenizer.", 10)) rc = gguf_writer_copy_kv(w, tf, i);

    uint64_t s = 20261202;
    const int hd = EMBD / HEADS, kvd = KV_HEADS * hd;
    const float in_d = 1.0f / sqrtf((float)EMBD), in_ff = 1.0f / sqrtf((float)FF_EXP), in_sh = 1.0f / sqrtf((float)FF_SH);
    rc |= add_tensor(w, &s, "token_embd.weight", 2, EMBD, VOCAB, 1, 1.0f, 0);
    rc |= add_tensor(w, &s, "output_norm.weight", 1, EMBD, 1, 1, 0.1f, 1.0f);
    rc |= add_tensor(w, &s, "output.weight", 2, EMBD, VOCAB, 1, 2 * in_d, 0);
    char n[96];
#define T(fmt, ...) (snprintf(n, sizeof n, fmt, l), add_tensor(w, &s, n, __VA_ARGS__))
    for (int l = 0; rc == 0 && l < LAYERS; l++) {
        rc |= T("blk.%d.attn_norm.weight", 1, EMBD, 1, 1, 0.1f, 1.0f);
        rc |= T("blk.%d.attn_q.weight", 2, EMBD, EMBD, 1, in_d, 0);
        rc |= T("blk.%d.attn_q.bias", 1, EMBD, 1, 1, 0.1f, 0);
        rc |= T("blk.%d.attn_k.weight", 2, EMBD, kvd, 1, in_d, 0);
        rc |= T("blk.%d.attn_k.bias", 1, kvd, 1, 1, 0.1f, 0);
        rc |= T("blk.%d.attn_v.weight", 2, EMBD, kvd, 1, in_d, 0);
        rc |= T("blk.%d.attn_v.bias", 1, kvd, 1, 1, 0.1f, 0);
        rc |= T("blk.%d.attn_output.weight", 2, EMBD, EMBD, 1, in_d, 0);
        rc |= T("blk.%d.ffn_norm.weight", 1, EMBD, 1, 1, 0.1f, 1.0f);
        rc |= T("blk.%d.ffn_gate_inp.weight", 2, EMBD, EXPERTS, 1, 4 * in_d, 0);
        rc |= T("blk.%d.ffn_gate_exps.weight", 3, EMBD, FF_EXP, EXPERTS, in_d, 0);
        rc |= T("blk.%d.ffn_up_exps.weight", 3, EMBD, FF_EXP, EXPERTS, in_d, 0);
        rc |= T("blk.%d.ffn_down_exps.weight", 3, FF_EXP, EMBD, EXPERTS, in_ff, 0);
        if (with_gate) rc |= T("blk.%d.ffn_gate_inp_shexp.weight", 1, EMBD, 1, 1, 2 * in_d, 0);
        rc |= T("blk.%d.ffn_gate_shexp.weight", 2, EMBD, FF_SH, 1, in_d, 0);
        rc |= T("blk.%d.ffn_up_shexp.weight", 2, EMBD, FF_SH, 1, in_d, 0);
        rc |= T("blk.%d.ffn_down_shexp.weight", 2, FF_SH, EMBD, 1, in_sh, 0);
    }
#undef T
    if (rc) snprintf(err, errlen, "%s: cannot write the qwen2moe model", path);
    else rc = gguf_writer_write(w, path, err, errlen);
    gguf_writer_free(w);
    gguf_close(tf);
    return rc;
}

static float *run_gguf(const char *path, const seq *s)
{
    char err[256];
    gguf_model gm;
    if (gguf_model_load(&gm, path, 0, err, sizeof err)) { printf("%s\n", err); fail(); }
    model_options o = f32_opts();
    model *m = model_create(&gm.hp, &gm.w, &o, err, sizeof err);
    if (!m) printf("%s\n", err);
    assert_non_null(m);
    float *out = run_seq(m, s);
    model_free(m);
    gguf_model_free(&gm);
    return out;
}

static void test_against_llamacpp(void **st)
{
    (void)st;
    SKIP_UNLESS_SHARED(TOKENIZER_SRC);
    scratch sc;
    scratch_make(&sc, "qwen2moe");
    char err[256];
    if (write_model(sc.gguf, 1, err, sizeof err)) { printf("%s\n", err); fail(); }
    seq s;
    fixture_seq(&s, TOKENS, N_TOK, N_PROMPT, "qwen2moe", "qwen2moe");
    assert_int_equal(s.n_vocab, VOCAB);
    float *out = run_gguf(sc.gguf, &s);
    const double rel = worst_rel(&s, out);

    /* the control: without the gate row the shared expert enters at weight 1 */
    char ctl[700];
    snprintf(ctl, sizeof ctl, "%s/ungated.gguf", sc.dir);
    if (write_model(ctl, 0, err, sizeof err)) { printf("%s\n", err); fail(); }
    float *ungated = run_gguf(ctl, &s);
    const double moved = worst_rel(&s, ungated);
    free(ungated);
    printf("qwen2moe: %d rows, max |ours - llama.cpp| / max|logit| = %.3g (without the shared gate: %.3g)\n",
           s.n_rows, rel, moved);
    assert_true(moved > 1e-2);
    assert_true(rel < 1e-5);

    build_pack(sc.gguf, sc.pack);
    float *packed = run_pack(sc.pack, &s);
    assert_memory_equal(packed, out, (size_t)s.n_rows * s.n_vocab * sizeof *out);
    free(packed);
    free(out);
    seq_free(&s);
    scratch_rm(&sc);
}

/* --write DIR: the model and its token sequence, for llama.cpp. */
static int write_all(const char *dir)
{
    char path[600], err[256];
    snprintf(path, sizeof path, "%s/qwen2moe.gguf", dir);
    if (write_model(path, 1, err, sizeof err)) { fprintf(stderr, "%s\n", err); return 1; }
    size_t nt = 0;
    int32_t *tok = slurp_shared(TOKENS, &nt);
    snprintf(path, sizeof path, "%s/qwen2moe.tokens.i32", dir);
    FILE *fp = tok && nt >= N_TOK * sizeof *tok ? fopen(path, "wb") : NULL;
    const int ok = fp && fwrite(tok, sizeof *tok, N_TOK, fp) == N_TOK;
    if (fp) fclose(fp);
    free(tok);
    if (!ok) { fprintf(stderr, "%s: cannot write\n", path); return 1; }
    printf("qwen2moe %d %d\n", N_PROMPT, N_TOK);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 3 && !strcmp(argv[1], "--write")) return write_all(argv[2]);
    const struct CMUnitTest tests[] = { cmocka_unit_test(test_against_llamacpp) };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
