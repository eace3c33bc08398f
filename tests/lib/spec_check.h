/* spec_check.h: TEST-ONLY greedy identity of speculative decoding
 * (runtime/model/speculate.h) on a GGUF through the test adapter: from a
 * prompt of three repeats of 8 ids, SPEC_N_GEN tokens decoded one at a time,
 * then with drafts of 1, 3 and 8 from an oracle (plain decoding's tokens,
 * every 5th one wrong, so guesses are kept in runs and refused), from
 * n-gram lookup and, where the file has a next-token-prediction block, from
 * that block (model_create_mtp; its output rows read the prompt's too): the
 * same tokens and the same logits rows, bit for bit.
 * Used by test_speculate.c and, for every architecture our writer makes,
 * test_archs_llamacpp.c. */
#ifndef STRATA_TEST_SPEC_CHECK_H
#define STRATA_TEST_SPEC_CHECK_H

#include "tests/lib/test_util.h"

#include "tests/lib/gguf_weights.h"
#include "runtime/model/speculate.h"

#include <math.h>
#include <string.h>

enum { SPEC_N_GEN = 40, SPEC_N_PROMPT = 24 };

/* The oracle drafter: plain decoding's tokens, every 5th of them replaced
 * by the next id, so guesses are kept in runs and refused now and then. */
typedef struct spec_oracle { const int32_t *tok; int nv; } spec_oracle;
static int spec_oracle_draft(void *ctx, const int32_t *hist, int n, int max, int32_t *out)
{
    (void)hist;
    const spec_oracle *o = ctx;
    const int g = n - SPEC_N_PROMPT; /* tokens out so far; the next is tok[g] */
    int k = 0;
    for (; k < max && g + k < SPEC_N_GEN; k++) out[k] = (g + k) % 5 == 4 ? (o->tok[g + k] + 1) % o->nv : o->tok[g + k];
    return k;
}

/* A prompt of three repeats of 8 ids spread over the vocabulary. */
static void spec_make_prompt(int32_t *p, int n_vocab)
{
    for (int i = 0; i < SPEC_N_PROMPT; i++) p[i] = (int32_t)(((i % 8) * 7919 + 3) % n_vocab);
}

/* SPEC_N_GEN tokens and the row that produced each: plain (max_draft 0) or
 * speculative with drafter `kind` (SPEC_FN: the oracle orc). */
static void spec_generate(const char *path, int keep_native, int max_draft, spec_kind kind, const spec_oracle *orc,
                          float temp, int32_t *tok, float *rows, spec_stats *st)
{
    gguf_model gm;
    char err[512];
    if (gguf_model_load(&gm, path, keep_native, err, sizeof err)) fail_msg("%s", err);
    model_options o = model_default_options();
    o.n_threads = 2;
    o.n_ctx = 128;
    model *m = model_create(&gm.hp, &gm.w, &o, err, sizeof err);
    if (!m) fail_msg("%s", err);
    const int nv = model_hp(m)->n_vocab;
    int32_t prompt[SPEC_N_PROMPT];
    spec_make_prompt(prompt, nv);
    sampler_params sp = sampler_default_params();
    sp.temp = temp;
    sp.seed = 5;
    sampler *s = sampler_create(&sp, nv);
    float *last = malloc((size_t)nv * sizeof *last);
    assert_non_null(s);
    assert_non_null(last);
    spec_ctx *c = NULL;
    model *d = NULL;
    if (max_draft > 0) { /* before the prompt's forward, as strata run: mtp reads the prompt's rows */
        spec_params p = spec_default_params();
        p.max_draft = max_draft;
        p.kind = kind;
        if (kind == SPEC_FN) {
            p.fn = spec_oracle_draft;
            p.fn_ctx = (void *)orc;
        }
        if (kind == SPEC_MTP && !(p.mtp = d = model_create_mtp(m, err, sizeof err))) fail_msg("%s", err);
        c = spec_create(m, s, &p, prompt, SPEC_N_PROMPT, err, sizeof err);
        if (!c) fail_msg("%s", err);
    }
    assert_int_equal(model_forward(m, prompt, SPEC_N_PROMPT, last, false, err, sizeof err), 0);
    for (int i = 0; i < SPEC_N_PROMPT; i++) sampler_accept(s, prompt[i]);
    tok[0] = sampler_sample(s, last);
    sampler_accept(s, tok[0]);
    int n = 1;
    if (max_draft == 0) {
        while (n < SPEC_N_GEN) {
            if (model_forward(m, &tok[n - 1], 1, rows + (size_t)(n - 1) * nv, false, err, sizeof err)) fail_msg("%s", err);
            tok[n] = sampler_sample(s, rows + (size_t)(n - 1) * nv);
            sampler_accept(s, tok[n]);
            n++;
        }
        memset(st, 0, sizeof *st);
    } else {
        assert_int_equal(spec_push(c, tok[0]), 0);
        int hlen = SPEC_N_PROMPT + 1; /* the history's length */
        while (n < SPEC_N_GEN) {
            const float *row = NULL;
            if (spec_next(c, &tok[n], &row, err, sizeof err)) fail_msg("%s", err);
            memcpy(rows + (size_t)(n - 1) * nv, row, (size_t)nv * sizeof *row);
            n++;
            int h = 0;
            spec_history(c, &h);
            /* a step adds 1 to 1 + max_draft tokens; the cache holds the history but its last */
            assert_true(h == hlen || (h > hlen && h <= hlen + 1 + max_draft));
            hlen = h;
            assert_int_equal(model_n_past(m), h - 1);
        }
        *st = spec_get_stats(c);
        spec_free(c);
    }
    free(last);
    sampler_free(s);
    model_free(d);
    model_free(m);
    gguf_model_free(&gm);
}

static void spec_greedy_identity(const char *path, int keep_native, const char *what)
{
    gguf_model gm;
    char err[512];
    if (gguf_model_load(&gm, path, keep_native, err, sizeof err)) fail_msg("%s", err);
    const int nv = (int)gm.w.tok_embd.rows, mtp = gm.w.n_mtp > 0;
    gguf_model_free(&gm);
    int32_t t0[SPEC_N_GEN], t1[SPEC_N_GEN];
    float *r0 = malloc((size_t)SPEC_N_GEN * nv * sizeof *r0), *r1 = malloc((size_t)SPEC_N_GEN * nv * sizeof *r1);
    assert_non_null(r0);
    assert_non_null(r1);
    spec_stats st;
    spec_generate(path, keep_native, 0, SPEC_NONE, NULL, 0.0f, t0, r0, &st);
    const spec_oracle orc = { t0, nv };
    long kept = 0, refused = 0;
    const int drafts[] = { 1, 3, 8 };
    const spec_kind kinds[] = { SPEC_FN, SPEC_NGRAM, SPEC_MTP };
    for (int d = 0; d < (mtp ? 9 : 6); d++) {
        spec_generate(path, keep_native, drafts[d % 3], kinds[d / 3], &orc, 0.0f, t1, r1, &st);
        printf("%s, %s draft %d: %ld steps for %d tokens, %ld of %ld guesses kept\n", what,
               d < 3 ? "oracle" : spec_kind_name(kinds[d / 3]), drafts[d % 3], st.steps, SPEC_N_GEN - 1, st.accepted,
               st.drafted);
        if (kinds[d / 3] == SPEC_MTP) assert_true(st.drafted > 0); /* the block drafted every step */
        assert_memory_equal(t0, t1, sizeof t0);
        for (int r = 0; r < SPEC_N_GEN - 1; r++)
            if (memcmp(r0 + (size_t)r * nv, r1 + (size_t)r * nv, (size_t)nv * sizeof *r0)) {
                double dd = 0;
                for (int i = 0; i < nv; i++) {
                    const double e = fabs((double)r0[(size_t)r * nv + i] - r1[(size_t)r * nv + i]);
                    if (e > dd) dd = e;
                }
                fail_msg("%s, draft %d: row %d (of the generated) differs from plain decoding's by up to %g",
                         what, drafts[d % 3], r, dd);
            }
        if (d < 3) {
            kept += st.accepted;
            refused += st.drafted - st.accepted;
        }
    }
    assert_true(kept > 0);
    assert_true(refused > 0);
    free(r0);
    free(r1);
}

#endif
