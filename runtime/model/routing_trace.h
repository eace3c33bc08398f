/* routing_trace.h: what the router picked, token by token: every evaluated
 * token's experts at every MoE layer, in order. A routing profile
 * (runtime/device/expert_cache.h) keeps only the counts; the trace keeps
 * the order, which is what locality statistics and a replay through the
 * expert cache need.
 *
 * Contract:
 *  - routing_trace_init(): n_layer layers of n_expert experts, n_used
 *    picked per token; routed[l] says which layers route (NULL: all of
 *    them). A layer that does not route holds -1 in every row.
 *  - routing_trace_observe(): the next token's n_used experts at one
 *    routed layer. Each layer keeps its own cursor, so the model's batched
 *    pass (layer 0 for B tokens, then layer 1 for the same B ...) and
 *    token-by-token decoding fill the same rows; a row counts (n_tokens)
 *    once every routed layer has observed it. -1 with one line in err, and
 *    nothing recorded, for a layer out of range or not routed, a count
 *    other than n_used, an expert out of range or repeated in one token,
 *    or no memory.
 *  - The file (docs/cuda.md, "Routing trace file") is text: a header line,
 *    then one line per token. routing_trace_save() writes the complete
 *    rows through formats/fileio.h (a temporary name, then link(2)): an
 *    existing file is never overwritten and an interrupted save leaves no
 *    file under the name. routing_trace_load()/_parse() refuse a hostile,
 *    truncated or inconsistent file with one line "<path>:<line>:
 *    <problem>" and leave *t empty (safe to free).
 *  - routing_trace_profile(): the trace's counts as a routing profile of
 *    the same shape (tokens = n_tokens), for ec_profile_hit_rate and
 *    ec_fill.
 * The trace owns its rows; no global state. */
#ifndef STRATA_ROUTING_TRACE_H
#define STRATA_ROUTING_TRACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "runtime/device/expert_cache.h"

#define ROUTING_TRACE_MAGIC "strata-routing-trace"
#define ROUTING_TRACE_VERSION 1

typedef struct routing_trace {
    int n_layer, n_expert, n_used;
    uint64_t n_tokens;          /* complete rows */
    bool *routed;               /* n_layer: the layer routes */
    int32_t *ex;                /* cap rows of n_layer x n_used experts */
    uint64_t cap;
    uint64_t *next;             /* n_layer: the row a layer's next observation fills */
} routing_trace;

int routing_trace_init(routing_trace *t, int n_layer, int n_expert, int n_used, const bool *routed, char *err,
                       size_t errlen);
void routing_trace_free(routing_trace *t);
int routing_trace_observe(routing_trace *t, int layer, const int32_t *experts, int n, char *err, size_t errlen);

/* Token `tok`'s n_used experts at `layer` (-1s where the layer does not route). */
static inline const int32_t *routing_trace_at(const routing_trace *t, uint64_t tok, int layer)
{
    return t->ex + (tok * (uint64_t)t->n_layer + (uint64_t)layer) * (uint64_t)t->n_used;
}

int routing_trace_save(const routing_trace *t, const char *path, char *err, size_t errlen);
int routing_trace_load(routing_trace *t, const char *path, char *err, size_t errlen);
/* As load, from memory (path only names the text in errors). */
int routing_trace_parse(routing_trace *t, const char *text, size_t len, const char *path, char *err, size_t errlen);

int routing_trace_profile(const routing_trace *t, ec_profile *p, char *err, size_t errlen);

#endif
