/* gguf_random.h: random tensors for the test models our GGUF writer makes
 * (the architecture agreement tests). uniform() is splitmix64 mapped to
 * [-1, 1) with 24 bits, so the weights are the same on every machine;
 * add_tensor() adds an F32 tensor of offset + scale * uniform;
 * random_tokens() n token ids below vocab from seed, BOS (1) first. */
#ifndef STRATA_TEST_GGUF_RANDOM_H
#define STRATA_TEST_GGUF_RANDOM_H

#include <stdint.h>
#include <stdlib.h>

#include "formats/ggml_types.h"
#include "formats/gguf.h"

static inline float uniform(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    return (float)((double)(z >> 40) / (double)(1ull << 24) * 2.0 - 1.0); /* [-1, 1), 24 bits */
}

static inline int add_tensor(gguf_writer *w, uint64_t *s, const char *name, int n_dims, int64_t ne0, int64_t ne1,
                             int64_t ne2, float scale, float offset)
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

static inline int32_t *random_tokens(int n, int vocab, uint64_t seed)
{
    int32_t *t = malloc((size_t)n * sizeof *t);
    for (int i = 0; t && i < n; i++) t[i] = (int32_t)((uniform(&seed) + 1.0f) * 0.5f * (float)(vocab - 1));
    if (t) t[0] = 1;
    return t;
}

#endif
