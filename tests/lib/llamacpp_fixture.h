/* llamacpp_fixture.h: TEST-ONLY helpers for models our GGUF writer makes
 * and llama.cpp ran (tests/diag/diag_fixtures_llamacpp.sh wrote its outputs to
 * tests/fixtures/<set>/): a scratch folder per model, the fixture files,
 * the token sequence (a shared token file's head, or ids given) with
 * llama.cpp's logits, the relative distance of two logit sets, the same
 * model built into a pack and run through the loader, and a model's
 * next-token-prediction block's logits over a sequence. Fixture paths are relative to the project root (where make test
 * runs); a missing fixture fails with its path. */
#ifndef STRATA_TEST_LLAMACPP_FIXTURE_H
#define STRATA_TEST_LLAMACPP_FIXTURE_H

#include "tests/lib/test_util.h"

#include "pack/pack_cli.h"
#include "tests/lib/ref_seq.h"
#include "runtime/model/loader.h"
#include "runtime/model/model.h"

#include <math.h>


typedef struct scratch { char *dir; char gguf[600], pack[600]; } scratch;

static inline void scratch_make(scratch *sc, const char *name)
{
    sc->dir = make_scratch_dir();
    assert_non_null(sc->dir);
    snprintf(sc->gguf, sizeof sc->gguf, "%s/%s.gguf", sc->dir, name);
    snprintf(sc->pack, sizeof sc->pack, "%s/pack", sc->dir);
}

static inline void scratch_rm(scratch *sc)
{
    char cmd[700];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", sc->dir);
    assert_int_equal(system(cmd), 0);
    free(sc->dir);
}

/* tests/fixtures/SET/NAME.WHAT.f32, exactly n floats (n 0: any length, *n_out set). */
static inline float *fixture_floats(const char *set, const char *name, const char *what, size_t n, size_t *n_out)
{
    char p[256];
    size_t bytes = 0;
    snprintf(p, sizeof p, "tests/fixtures/%s/%s.%s.f32", set, name, what);
    float *f = slurp(p, &bytes);
    if (!f) printf("%s: missing (run from the project root)\n", p);
    assert_non_null(f);
    if (n) assert_int_equal(bytes, n * sizeof *f);
    if (n_out) *n_out = bytes / sizeof *f;
    return f;
}

/* The first n_tok tokens of a shared token file, with llama.cpp's logits
 * (tests/fixtures/SET/NAME.logits.f32): n_prompt as one batch, then one
 * token at a time. */
static inline void fixture_seq(seq *s, const char *tokens_rel, int n_tok, int n_prompt, const char *set,
                               const char *name)
{
    size_t nt = 0, nl = 0;
    s->tok = slurp_shared(tokens_rel, &nt);
    assert_non_null(s->tok);
    assert_true(nt >= (size_t)n_tok * sizeof(int32_t));
    s->ref = fixture_floats(set, name, "logits", 0, &nl);
    s->n_rows = n_tok;
    s->n_prompt = n_prompt;
    s->n_vocab = (int)(nl / (size_t)n_tok);
    assert_int_equal(nl, (size_t)s->n_rows * s->n_vocab);
}

/* The same with the token sequence given (n_tok ids, copied). */
static inline void fixture_seq_ids(seq *s, const int32_t *ids, int n_tok, int n_prompt, const char *set,
                                   const char *name)
{
    size_t nl = 0;
    s->tok = malloc((size_t)n_tok * sizeof *s->tok);
    assert_non_null(s->tok);
    memcpy(s->tok, ids, (size_t)n_tok * sizeof *s->tok);
    s->ref = fixture_floats(set, name, "logits", 0, &nl);
    s->n_rows = n_tok;
    s->n_prompt = n_prompt;
    s->n_vocab = (int)(nl / (size_t)n_tok);
    assert_int_equal(nl, (size_t)s->n_rows * s->n_vocab);
}

static inline model_options f32_opts(void)
{
    model_options o = model_default_options();
    o.kv = KV_F32;
    o.n_threads = 2;
    return o;
}

/* Largest |out - ref| over a row, relative to the row's max |ref|. */
static inline double worst_rel(const seq *s, const float *out)
{
    double worst = 0;
    for (int r = 0; r < s->n_rows; r++) {
        const float *a = out + (size_t)r * s->n_vocab, *b = s->ref + (size_t)r * s->n_vocab;
        double mx = 0, d = 0;
        for (int i = 0; i < s->n_vocab; i++) {
            if (fabs(b[i]) > mx) mx = fabs(b[i]);
            if (fabs(a[i] - b[i]) > d) d = fabs(a[i] - b[i]);
        }
        if (d / mx > worst) worst = d / mx;
    }
    return worst;
}

/* iq3pack build GGUF -o PACK --experts keep, through the library, quietly. */
static inline void build_pack(const char *gguf, const char *pack)
{
    char *argv[] = { "build", (char *)gguf, "-o", (char *)pack, "--experts", "keep", "--threads", "2", NULL };
    assert_int_equal(run_quiet(iq3pack_cmd_build, 8, argv), 0);
}

/* The sequence through the pack's loader (F32 KV cache, 2 threads). */
static inline float *run_pack(const char *pack, const seq *s)
{
    char err[512];
    loaded_pack *lp = loader_open(pack, err, sizeof err);
    if (!lp) printf("%s\n", err);
    assert_non_null(lp);
    model_options o = f32_opts();
    model *m = model_create(loader_hparams(lp), loader_weights(lp), &o, err, sizeof err);
    if (!m) printf("%s\n", err);
    assert_non_null(m);
    float *out = run_seq(m, s);
    model_free(m);
    loader_close(lp);
    return out;
}

/* The main model's output rows, kept for the block (model_on_hidden's sink). */
typedef struct kept_rows { float *rows; int n_embd; } kept_rows;

static inline int keep_rows(void *ctx, int pos0, int B, const float *rows, char *err, size_t errlen)
{
    (void)err; (void)errlen;
    kept_rows *k = ctx;
    memcpy(k->rows + (size_t)pos0 * k->n_embd, rows, (size_t)B * k->n_embd * sizeof *rows);
    return 0;
}

/* m's next-token-prediction block (model_create_mtp) over tok[0..n): row t
 * of the result (n - 1 rows of n_vocab) is its logits from the main model's
 * output at t and the token at t + 1, as --draft mtp computes them. */
static inline float *mtp_logits(model *m, const int32_t *tok, int n)
{
    char err[512];
    const model_hparams *hp = model_hp(m);
    model *d = model_create_mtp(m, err, sizeof err);
    if (!d) fail_msg("%s", err);
    kept_rows k = { malloc((size_t)n * hp->n_embd * sizeof(float)), hp->n_embd };
    float *out = malloc((size_t)(n - 1) * hp->n_vocab * sizeof *out), *last = malloc((size_t)hp->n_vocab * sizeof *last);
    assert_non_null(k.rows);
    assert_non_null(out);
    assert_non_null(last);
    assert_int_equal(model_on_hidden(m, keep_rows, &k, err, sizeof err), 0);
    assert_int_equal(model_forward(m, tok, n, last, false, err, sizeof err), 0);
    assert_int_equal(model_forward_mtp(d, tok + 1, k.rows, n - 1, out, true, err, sizeof err), 0);
    model_free(d);
    free(k.rows);
    free(last);
    return out;
}

/* The model at sc->gguf built into a pack: its logits must be `out`'s bits. */
static inline void pack_gives_same_bits(const scratch *sc, const seq *s, const float *out)
{
    build_pack(sc->gguf, sc->pack);
    float *packed = run_pack(sc->pack, s);
    assert_memory_equal(packed, out, (size_t)s->n_rows * s->n_vocab * sizeof *out);
    free(packed);
}

#endif
