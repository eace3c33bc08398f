/* routing_stats.h: how a routing trace (routing_trace.h) uses the experts,
 * layer by layer: how evenly the load spreads, how much of it the most used
 * quarter takes, and how soon an expert is used again (what an expert
 * cache that keeps recent experts can hope for).
 *
 * Contract, for one routed layer of a trace of T tokens, K experts each:
 *  - entropy_bits = -sum_e p_e log2 p_e over the expert-use distribution
 *    p_e = uses of e / (T K); uniform_bits = log2(n_expert), the most it
 *    can be (every expert used alike).
 *  - top_share: the share of the T K uses that go to the ceil(n_expert / 4)
 *    most used experts.
 *  - reuse[i], for window n = window[i]: over every token t with t + n < T
 *    and every expert e that t uses, the fraction for which e is used again
 *    at the same layer by one of tokens t+1 .. t+n. NAN when no t
 *    qualifies (T <= n).
 *  - T = 0: entropy_bits and top_share are NAN.
 *  - routing_stats_layer() returns -1 with one line in err for a layer that
 *    does not route, a bad window list (1..ROUTING_STATS_MAX_WINDOWS
 *    windows, each >= 1) or no memory.
 *  - routing_stats_mean(): each figure's mean over the layers given, a NAN
 *    figure left out (NAN when every layer's is); layer -1, tokens the
 *    first layer's.
 * Exact functions of the trace; no global state. */
#ifndef STRATA_ROUTING_STATS_H
#define STRATA_ROUTING_STATS_H

#include <stddef.h>
#include <stdint.h>

#include "runtime/model/routing_trace.h"

#define ROUTING_STATS_MAX_WINDOWS 8

typedef struct routing_layer_stats {
    int layer;
    uint64_t tokens;
    double entropy_bits, uniform_bits;
    int top_experts;            /* ceil(n_expert / 4) */
    double top_share;
    int n_windows;
    int window[ROUTING_STATS_MAX_WINDOWS];
    double reuse[ROUTING_STATS_MAX_WINDOWS];
} routing_layer_stats;

int routing_stats_layer(const routing_trace *t, int layer, const int *windows, int n_windows, routing_layer_stats *out,
                        char *err, size_t errlen);
void routing_stats_mean(const routing_layer_stats *layers, int n, routing_layer_stats *out);

#endif
