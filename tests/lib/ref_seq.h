/* ref_seq.h: llama.cpp reference sequences, shared by the suites that check
 * the forward pass against llama.cpp's logits (test_model, test_loader).
 *
 * Contract: seq_load() reads DIR/ID.tokens.i32, LDIR/ID.logits.f32 and
 * LDIR/ID.meta.txt (n_prompt, n_vocab) under the shared folder and returns 0
 * only when all are present and the logits hold n_rows x n_vocab floats;
 * seq_free() releases what it read. run_seq() runs a sequence as llama.cpp
 * ran it (the prompt as one batch with every row's logits, then one token
 * at a time) and returns n_rows x n_vocab logits the caller frees; it fails
 * the current test on any model error. No global state. */
#ifndef STRATA_TEST_REF_SEQ_H
#define STRATA_TEST_REF_SEQ_H

#include "tests/lib/test_util.h"

#include "runtime/model/model.h"

typedef struct seq {
    int32_t *tok;
    float *ref;
    int n_rows, n_prompt, n_vocab;
} seq;

/* The integer after "KEY " on a line of a shared meta file, or -1. */
static inline int meta_int(const char *meta_rel, const char *key)
{
    char *meta = slurp_shared(meta_rel, NULL);
    if (!meta) return -1;
    int v = -1;
    size_t kl = strlen(key);
    for (char *line = meta; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL)
        if (!strncmp(line, key, kl) && line[kl] == ' ') { v = atoi(line + kl + 1); break; }
    free(meta);
    return v;
}

/* dir: folder of tokens; ldir: folder of logits and meta. */
static inline int seq_load(seq *s, const char *dir, const char *ldir, const char *id)
{
    char p[512], m[512];
    size_t nt = 0, nl = 0;
    snprintf(p, sizeof p, "%s/%s.tokens.i32", dir, id);
    s->tok = slurp_shared(p, &nt);
    snprintf(p, sizeof p, "%s/%s.logits.f32", ldir, id);
    s->ref = slurp_shared(p, &nl);
    snprintf(m, sizeof m, "%s/%s.meta.txt", ldir, id);
    s->n_prompt = meta_int(m, "n_prompt");
    s->n_vocab = meta_int(m, "n_vocab");
    s->n_rows = (int)(nt / 4);
    return s->tok && s->ref && s->n_prompt > 0 && s->n_vocab > 0 &&
                   nl == (size_t)s->n_rows * (size_t)s->n_vocab * 4 ? 0 : -1;
}

static inline void seq_free(seq *s) { free(s->tok); free(s->ref); }

static inline int argmax(const float *v, int n)
{
    int b = 0;
    for (int i = 1; i < n; i++) if (v[i] > v[b]) b = i;
    return b;
}

/* llama.cpp's way: the prompt as one batch (all logits), then one token at a time. */
static inline float *run_seq(model *m, const seq *s)
{
    char err[256];
    float *out = malloc((size_t)s->n_rows * (size_t)s->n_vocab * sizeof(float));
    assert_non_null(out);
    model_rewind(m, 0);
    assert_int_equal(model_forward(m, s->tok, s->n_prompt, out, true, err, sizeof err), 0);
    for (int r = s->n_prompt; r < s->n_rows; r++)
        assert_int_equal(model_forward(m, s->tok + r, 1, out + (size_t)r * s->n_vocab, false, err, sizeof err), 0);
    return out;
}

#endif
