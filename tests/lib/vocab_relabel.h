/* vocab_relabel.h: TEST-ONLY. A copy of a GGUF (every key and tensor) whose
 * tokens first..first+n-1 are renamed to names[] and typed CONTROL, so a
 * test can give a small real vocabulary the special tokens of another
 * family (gpt-oss's harmony markers on the shipped model's byte tokens, which
 * its texts do not need). Returns 0, or -1 with one line in err.
 * vocab_keys_head() copies a GGUF's tokenizer.* keys into a writer with the
 * token arrays cut to their first n entries: a real vocabulary for a test
 * model whose embedding has n rows. Returns 0, or -1. */
#ifndef STRATA_TEST_VOCAB_RELABEL_H
#define STRATA_TEST_VOCAB_RELABEL_H

#include "formats/gguf.h"

#include <stdlib.h>
#include <string.h>

static inline int vocab_relabel(const char *src, const char *dst, int first, const char *const *names, int n,
                                char *err, size_t errlen)
{
    gguf_file *g = gguf_open(src, err, errlen);
    if (!g) return -1;
    gguf_writer *w = gguf_writer_new();
    const int64_t it = gguf_find_key(g, "tokenizer.ggml.tokens"), ity = gguf_find_key(g, "tokenizer.ggml.token_type");
    const uint64_t nv = it >= 0 ? gguf_kv_arr_n(g, it) : 0;
    const char **tok = calloc(nv + 1, sizeof *tok);
    int32_t *type = calloc(nv + 1, sizeof *type);
    int rc = w && tok && type && it >= 0 && ity >= 0 && gguf_kv_arr_n(g, ity) == nv && (uint64_t)(first + n) <= nv ? 0 : -1;
    for (int64_t i = 0; rc == 0 && i < gguf_n_kv(g); i++) {
        const char *k = gguf_kv_key(g, i);
        if (strcmp(k, "tokenizer.ggml.tokens") && strcmp(k, "tokenizer.ggml.token_type")) rc = gguf_writer_copy_kv(w, g, i);
    }
    if (rc == 0) {
        memcpy(type, gguf_kv_arr_data(g, ity), nv * sizeof *type);
        for (uint64_t j = 0; j < nv; j++) tok[j] = gguf_kv_arr_str(g, it, j);
        for (int j = 0; j < n; j++) { tok[first + j] = names[j]; type[first + j] = 3; /* control */ }
        rc = gguf_writer_add_arr_str(w, "tokenizer.ggml.tokens", tok, nv) ||
             gguf_writer_add_arr(w, "tokenizer.ggml.token_type", GGUF_TYPE_INT32, type, nv) ? -1 : 0;
    }
    for (int64_t i = 0; rc == 0 && i < gguf_n_tensors(g); i++) {
        const gguf_tensor *t = gguf_tensor_at(g, i);
        if (gguf_writer_add_tensor(w, t->name, t->type, t->n_dims, t->ne, t->data, t->size) < 0) rc = -1;
    }
    if (rc) snprintf(err, errlen, "%.200s: cannot relabel its vocabulary", src);
    else rc = gguf_writer_write(w, dst, err, errlen);
    gguf_writer_free(w);
    gguf_close(g);
    free(tok);
    free(type);
    return rc;
}

static inline int vocab_keys_head(gguf_writer *w, const gguf_file *f, uint64_t n)
{
    int rc = 0;
    for (int64_t i = 0; rc == 0 && i < gguf_n_kv(f); i++) {
        const char *k = gguf_kv_key(f, i);
        if (strncmp(k, "tokenizer.", 10)) continue;
        const int cut = !strcmp(k, "tokenizer.ggml.tokens") || !strcmp(k, "tokenizer.ggml.scores") ||
                        !strcmp(k, "tokenizer.ggml.token_type");
        if (!cut) { rc = gguf_writer_copy_kv(w, f, i); continue; }
        if (gguf_kv_type(f, i) != GGUF_TYPE_ARRAY || gguf_kv_arr_n(f, i) < n) return -1;
        const gguf_type t = gguf_kv_arr_type(f, i);
        if (t == GGUF_TYPE_STRING) {
            const char **tok = calloc(n + 1, sizeof *tok);
            if (!tok) return -1;
            for (uint64_t j = 0; j < n; j++) tok[j] = gguf_kv_arr_str(f, i, j);
            rc = gguf_writer_add_arr_str(w, k, tok, n) ? -1 : 0;
            free(tok);
        } else if (t == GGUF_TYPE_FLOAT32 || t == GGUF_TYPE_INT32) {
            rc = gguf_writer_add_arr(w, k, t, gguf_kv_arr_data(f, i), n) ? -1 : 0;
        } else {
            return -1;
        }
    }
    return rc;
}

#endif
