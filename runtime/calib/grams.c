/* grams.c: see grams.h. Each update gathers the rows going into one gram,
 * transposed (a column of x per row of the buffer), so that every element
 * of the upper triangle is one contiguous dot product. */
#include "runtime/calib/grams.h"

#include "formats/radgram.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct gram {
    double  *g;      /* k x k, upper triangle kept */
    uint64_t rows;
} gram;

struct gram_set {
    int     n_layer, n_expert, K, k;
    gram   *grams;   /* [n_layer][n_expert + 1]: index 0 pooled, 1 + e expert e; g NULL when not recorded */
    double *t;       /* k x cap: the rows being added, transposed */
    int     cap;
};

uint64_t gram_set_bytes(int n_layers, int n_expert, int k)
{
    return 8ull * (uint64_t)k * (uint64_t)k * (uint64_t)(n_expert + 1) * (uint64_t)n_layers;
}

static gram *at(const gram_set *s, int l, int e) { return &s->grams[(size_t)l * (s->n_expert + 1) + (e < 0 ? 0 : 1 + e)]; }

gram_set *gram_set_new(int n_layer, const unsigned char *record, int n_expert, int K, int k, char *err,
                       size_t errlen)
{
    gram_set *s = calloc(1, sizeof *s);
    if (s) s->grams = calloc((size_t)n_layer * (size_t)(n_expert + 1), sizeof *s->grams);
    if (!s || !s->grams) goto oom;
    *s = (gram_set){ n_layer, n_expert, K, k, s->grams, NULL, 0 };
    for (int l = 0; l < n_layer; l++) {
        if (!record[l]) continue;
        for (int e = -1; e < n_expert; e++)
            if (!(at(s, l, e)->g = calloc((size_t)k * (size_t)k, sizeof(double)))) goto oom;
    }
    return s;
oom:
    snprintf(err, errlen, "out of memory for the grams (%.1f MiB)",
             (double)gram_set_bytes(1, n_expert, k) * n_layer / 1048576.0);
    gram_set_free(s);
    return NULL;
}

/* g += T^T T for the n rows in s->t */
static void accumulate(gram_set *s, gram *g, int n)
{
    const int k = s->k, ld = s->cap;
    for (int i = 0; i < k; i++) {
        const double *a = s->t + (size_t)i * ld;
        double *row = g->g + (size_t)i * k;
        for (int j = i; j < k; j++) {
            const double *b = s->t + (size_t)j * ld;
            double d = 0.0;
            for (int r = 0; r < n; r++) d += a[r] * b[r];
            row[j] += d;
        }
    }
    g->rows += (uint64_t)n;
}

int gram_set_add(gram_set *s, int l, int B, const float *x, const int *sel)
{
    if (l < 0 || l >= s->n_layer || !at(s, l, -1)->g) return 0;
    if (B > s->cap) {
        double *t = realloc(s->t, (size_t)s->k * (size_t)B * sizeof *t);
        if (!t) return -1;
        s->t = t;
        s->cap = B;
    }
    const int k = s->k;
    for (int e = -1; e < s->n_expert; e++) {
        int n = 0;
        for (int b = 0; b < B; b++) {
            int take = e < 0;
            for (int j = 0; j < s->K && !take; j++) take = sel[(size_t)b * s->K + j] == e;
            if (!take) continue;
            for (int i = 0; i < k; i++) s->t[(size_t)i * s->cap + n] = (double)x[(size_t)b * k + i];
            n++;
        }
        if (n) accumulate(s, at(s, l, e), n);
    }
    return 0;
}

uint64_t gram_set_rows(const gram_set *s, int l, int e) { return at(s, l, e)->rows; }

double gram_set_at(const gram_set *s, int l, int e, int i, int j)
{
    const gram *g = at(s, l, e);
    return i <= j ? g->g[(size_t)i * s->k + j] : g->g[(size_t)j * s->k + i];
}

int gram_set_write(const gram_set *s, const char *dir, int rank, char *err, size_t errlen)
{
    for (int l = 0; l < s->n_layer; l++) {
        if (!at(s, l, -1)->g) continue;
        for (int e = -1; e < s->n_expert; e++) {
            const gram *g = at(s, l, e);
            if (e >= 0 && g->rows == 0) continue; /* no own gram: grams2imatrix gives it the pooled diagonal */
            char path[4096];
            if (e < 0) snprintf(path, sizeof path, "%s/gram.r%d.blk.%d.ffn_down_exps.bin", dir, rank, l);
            else snprintf(path, sizeof path, "%s/gram.r%d.blk.%d.ffn_down_exps.%d.bin", dir, rank, l, e);
            const radgram_header h = { .k = (uint32_t)s->k, .rank = (uint32_t)rank, .rows = g->rows, .domain = 0 };
            if (radgram_write(path, &h, g->g, err, errlen)) return -1;
        }
    }
    return 0;
}

void gram_set_free(gram_set *s)
{
    if (!s) return;
    if (s->grams)
        for (size_t i = 0; i < (size_t)s->n_layer * (size_t)(s->n_expert + 1); i++) free(s->grams[i].g);
    free(s->grams);
    free(s->t);
    free(s);
}
