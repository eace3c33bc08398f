/* gguf_rewrite.h: for tests that write a GGUF again with its routed experts
 * changed (split per expert, requantized).
 *
 * Contract: gguf_rewrite_experts(src, path, fn, ctx) writes path with src's
 * key-values and tensors, except that each merged expert tensor (3-D, named
 * "blk.L.ffn_PART_exps.weight") is handed to fn with its layer and PART (at
 * most 15 letters), which adds what stands for it to w (or nothing). Any
 * failure fails the test (cmocka); returns how many tensors went to fn. */
#ifndef STRATA_TEST_GGUF_REWRITE_H
#define STRATA_TEST_GGUF_REWRITE_H

#include "formats/gguf.h"
#include "tests/lib/test_util.h"

typedef void (*gguf_expert_fn)(gguf_writer *w, const gguf_file *f, const gguf_tensor *t, int layer, const char *part,
                               void *ctx);

static inline int gguf_rewrite_experts(const char *src, const char *path, gguf_expert_fn fn, void *ctx)
{
    char err[512];
    gguf_file *f = gguf_open(src, err, sizeof err);
    if (!f) fail_msg("%s", err);
    gguf_writer *w = gguf_writer_new();
    assert_non_null(w);
    int experts = 0;
    for (int64_t i = 0; i < gguf_n_kv(f); i++) assert_int_equal(gguf_writer_copy_kv(w, f, i), 0);
    for (int64_t i = 0; i < gguf_n_tensors(f); i++) {
        const gguf_tensor *t = gguf_tensor_at(f, i);
        int l, n = 0;
        char part[16];
        if (t->n_dims == 3 && sscanf(t->name, "blk.%d.ffn_%15[a-z]_exps.weight%n", &l, part, &n) == 2 && n) {
            fn(w, f, t, l, part, ctx);
            experts++;
            continue;
        }
        assert_true(gguf_writer_add_tensor(w, t->name, t->type, t->n_dims, t->ne, t->data, t->size) >= 0);
    }
    if (gguf_writer_write(w, path, err, sizeof err)) fail_msg("%s", err);
    gguf_writer_free(w);
    gguf_close(f);
    return experts;
}

#endif
