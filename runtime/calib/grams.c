/* grams.c: see grams.h. Each update gathers the rows going into one gram,
 * transposed (a column of x per row of the buffer), so that every element
 * of the upper triangle is one contiguous dot product. */
#include "runtime/calib/grams.h"

#include "formats/hadamard.h"
#include "formats/radgram.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct gram {
    double  *g;      /* k x k, upper triangle kept */
    uint64_t rows;
} gram;

struct gram_set {
    int     n_layer, n_expert, K, k, kd;
    gram   *grams;   /* [n_layer][n_expert + 1]: index 0 pooled, 1 + e expert e; g NULL when not recorded */
    gram   *down;    /* [n_layer][n_expert]: the experts' down inputs (kd x kd) */
    double *t;       /* max(k, kd) x cap: the rows being added, transposed */
    int     cap;
    int64_t rk, rkd; /* Hadamard blocks of the two inputs (0: none) */
    float  *xr;      /* cap x max(k, kd): rotated rows */
};

uint64_t gram_set_bytes(int n_layers, int n_expert, int k, int kd)
{
    return 8ull * ((uint64_t)k * (uint64_t)k * (uint64_t)(n_expert + 1) + (uint64_t)kd * (uint64_t)kd * (uint64_t)n_expert) *
           (uint64_t)n_layers;
}

static gram *at(const gram_set *s, int l, int e) { return &s->grams[(size_t)l * (s->n_expert + 1) + (e < 0 ? 0 : 1 + e)]; }
static gram *down_at(const gram_set *s, int l, int e) { return &s->down[(size_t)l * s->n_expert + e]; }

gram_set *gram_set_new(int n_layer, const unsigned char *record, int n_expert, int K, int k, int kd, char *err,
                       size_t errlen)
{
    gram_set *s = calloc(1, sizeof *s);
    if (s) {
        s->grams = calloc((size_t)n_layer * (size_t)(n_expert + 1), sizeof *s->grams);
        s->down = calloc((size_t)n_layer * (size_t)n_expert, sizeof *s->down);
    }
    if (!s || !s->grams || !s->down) goto oom;
    s->n_layer = n_layer;
    s->n_expert = n_expert;
    s->K = K;
    s->k = k;
    s->kd = kd;
    for (int l = 0; l < n_layer; l++) {
        if (!record[l]) continue;
        for (int e = -1; e < n_expert; e++)
            if (!(at(s, l, e)->g = calloc((size_t)k * (size_t)k, sizeof(double)))) goto oom;
        for (int e = 0; e < n_expert; e++)
            if (!(down_at(s, l, e)->g = calloc((size_t)kd * (size_t)kd, sizeof(double)))) goto oom;
    }
    return s;
oom:
    snprintf(err, errlen, "out of memory for the grams (%.1f MiB)",
             (double)gram_set_bytes(n_layer, n_expert, k, kd) / 1048576.0);
    gram_set_free(s);
    return NULL;
}

static int reserve(gram_set *s, int n)
{
    if (n <= s->cap) return 0;
    const int w = s->k > s->kd ? s->k : s->kd;
    double *t = realloc(s->t, (size_t)w * (size_t)n * sizeof *t);
    if (!t) return -1;
    s->t = t;
    if (s->rk || s->rkd) {
        float *xr = realloc(s->xr, (size_t)w * (size_t)n * sizeof *xr);
        if (!xr) return -1;
        s->xr = xr;
    }
    s->cap = n;
    return 0;
}

void gram_set_rotate(gram_set *s, int64_t rk, int64_t rkd)
{
    s->rk = rk;
    s->rkd = rkd;
}

/* n rows of width k as recorded: x, or a rotated copy of it */
static const float *recorded_rows(gram_set *s, const float *x, int n, int k, int64_t b)
{
    if (!b) return x;
    memcpy(s->xr, x, (size_t)n * (size_t)k * sizeof *x);
    hadamard_rows(s->xr, n, k, b);
    return s->xr;
}

/* g (k x k) += T^T T for the n rows in s->t */
static void accumulate(gram_set *s, gram *g, int k, int n)
{
    const int ld = s->cap;
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
    if (reserve(s, B)) return -1;
    const int k = s->k;
    x = recorded_rows(s, x, B, k, s->rk);
    for (int e = -1; e < s->n_expert; e++) {
        int n = 0;
        for (int b = 0; b < B; b++) {
            int take = e < 0;
            for (int j = 0; j < s->K && !take; j++) take = sel[(size_t)b * s->K + j] == e;
            if (!take) continue;
            for (int i = 0; i < k; i++) s->t[(size_t)i * s->cap + n] = (double)x[(size_t)b * k + i];
            n++;
        }
        if (n) accumulate(s, at(s, l, e), k, n);
    }
    return 0;
}

int gram_set_add_down(gram_set *s, int l, int e, int n, const float *rows)
{
    if (l < 0 || l >= s->n_layer || e < 0 || e >= s->n_expert || !down_at(s, l, e)->g || n <= 0) return 0;
    if (reserve(s, n)) return -1;
    const int kd = s->kd;
    rows = recorded_rows(s, rows, n, kd, s->rkd);
    for (int r = 0; r < n; r++)
        for (int i = 0; i < kd; i++) s->t[(size_t)i * s->cap + r] = (double)rows[(size_t)r * kd + i];
    accumulate(s, down_at(s, l, e), kd, n);
    return 0;
}

uint64_t gram_set_down_rows(const gram_set *s, int l, int e) { return down_at(s, l, e)->rows; }

double gram_set_down_at(const gram_set *s, int l, int e, int i, int j)
{
    const gram *g = down_at(s, l, e);
    return i <= j ? g->g[(size_t)i * s->kd + j] : g->g[(size_t)j * s->kd + i];
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
            const radgram_header h = { .k = (uint32_t)s->k, .rank = (uint32_t)rank, .rows = g->rows,
                                      .domain = (uint32_t)s->rk };
            if (radgram_write(path, &h, g->g, err, errlen)) return -1;
        }
        for (int e = 0; e < s->n_expert; e++) {
            const gram *g = down_at(s, l, e);
            if (g->rows == 0) continue;
            char path[4096];
            snprintf(path, sizeof path, "%s/gram.r%d.blk.%d.ffn_down_input.%d.bin", dir, rank, l, e);
            const radgram_header h = { .k = (uint32_t)s->kd, .rank = (uint32_t)rank, .rows = g->rows,
                                       .domain = (uint32_t)s->rkd };
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
    if (s->down)
        for (size_t i = 0; i < (size_t)s->n_layer * (size_t)s->n_expert; i++) free(s->down[i].g);
    free(s->grams);
    free(s->down);
    free(s->t);
    free(s->xr);
    free(s);
}
