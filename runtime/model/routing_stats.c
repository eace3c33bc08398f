/* routing_stats.c: per-layer statistics of a routing trace (routing_stats.h). */
#include "runtime/model/routing_stats.h"

#include "runtime/util/strbuf.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int cmp_desc(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? 1 : x > y ? -1 : 0;
}

int routing_stats_layer(const routing_trace *t, int layer, const int *windows, int n_windows, routing_layer_stats *out,
                        char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    if (layer < 0 || layer >= t->n_layer || !t->routed[layer])
        return err_printf(err, errlen, "routing statistics: layer %d does not route to experts", layer);
    if (n_windows < 1 || n_windows > ROUTING_STATS_MAX_WINDOWS)
        return err_printf(err, errlen, "routing statistics: %d windows (1 to %d)", n_windows, ROUTING_STATS_MAX_WINDOWS);
    for (int w = 0; w < n_windows; w++)
        if (windows[w] < 1) return err_printf(err, errlen, "routing statistics: a window of %d tokens", windows[w]);
    const int E = t->n_expert, K = t->n_used;
    const uint64_t T = t->n_tokens, never = UINT64_MAX;
    uint64_t *count = calloc((size_t)E, sizeof *count), *last = malloc((size_t)E * sizeof *last);
    if (!count || !last) { free(count); free(last); return err_printf(err, errlen, "routing statistics: out of memory"); }
    for (int e = 0; e < E; e++) last[e] = never;
    uint64_t hit[ROUTING_STATS_MAX_WINDOWS] = { 0 }, seen[ROUTING_STATS_MAX_WINDOWS] = { 0 };
    /* backwards, so that last[e] is the next token after t that uses e */
    for (uint64_t t1 = T; t1-- > 0;) {
        const int32_t *ex = routing_trace_at(t, t1, layer);
        for (int k = 0; k < K; k++) {
            const int e = ex[k];
            count[e]++;
            for (int w = 0; w < n_windows; w++) {
                const uint64_t n = (uint64_t)windows[w];
                if (t1 + n >= T) continue;
                seen[w]++;
                hit[w] += last[e] != never && last[e] - t1 <= n;
            }
            last[e] = t1;   /* a token uses an expert once: no later k sees it */
        }
    }
    out->layer = layer;
    out->tokens = T;
    out->uniform_bits = log2((double)E);
    out->top_experts = (E + 3) / 4;
    out->n_windows = n_windows;
    const double uses = (double)T * K;
    double h = 0;
    for (int e = 0; e < E; e++)
        if (count[e]) {
            const double p = (double)count[e] / uses;
            h -= p * log2(p);
        }
    qsort(count, (size_t)E, sizeof *count, cmp_desc);
    uint64_t top = 0;
    for (int e = 0; e < out->top_experts; e++) top += count[e];
    out->entropy_bits = T ? h : NAN;
    out->top_share = T ? (double)top / uses : NAN;
    for (int w = 0; w < n_windows; w++) {
        out->window[w] = windows[w];
        out->reuse[w] = seen[w] ? (double)hit[w] / (double)seen[w] : NAN;
    }
    free(count);
    free(last);
    return 0;
}

static double mean_of(const routing_layer_stats *l, int n, size_t off)
{
    double s = 0;
    int m = 0;
    for (int i = 0; i < n; i++) {
        const double v = *(const double *)((const char *)&l[i] + off);
        if (!isnan(v)) { s += v; m++; }
    }
    return m ? s / m : NAN;
}

void routing_stats_mean(const routing_layer_stats *layers, int n, routing_layer_stats *out)
{
    memset(out, 0, sizeof *out);
    out->layer = -1;
    if (n < 1) return;
    out->tokens = layers[0].tokens;
    out->uniform_bits = layers[0].uniform_bits;
    out->top_experts = layers[0].top_experts;
    out->n_windows = layers[0].n_windows;
    out->entropy_bits = mean_of(layers, n, offsetof(routing_layer_stats, entropy_bits));
    out->top_share = mean_of(layers, n, offsetof(routing_layer_stats, top_share));
    for (int w = 0; w < out->n_windows; w++) {
        out->window[w] = layers[0].window[w];
        out->reuse[w] = mean_of(layers, n, offsetof(routing_layer_stats, reuse) + (size_t)w * sizeof(double));
    }
}
