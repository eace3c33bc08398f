/* fuzz_routing_trace.c: libFuzzer target for the routing trace reader
 * (runtime/model/routing_trace.c), which `strata routing --trace-in` hands
 * any file. A trace it accepts must hold only experts in range, each once a
 * token, '-' exactly at the layers that do not route, and go through the
 * statistics and the profile of its counts (every row read, so ASan sees a
 * row past the allocation); a refusal must say why in one line.
 * fuzz-link: runtime/model/routing_trace.c runtime/model/routing_stats.c runtime/util/textcur.c runtime/util/strbuf.c runtime/device/expert_cache.c */
#include "runtime/model/routing_stats.h"
#include "runtime/model/routing_trace.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* a copy of exactly size bytes: ASan then flags any read past the end */
    char *copy = malloc(size ? size : 1);
    if (!copy) return 0;
    memcpy(copy, data, size);
    routing_trace t;
    char err[512] = "";
    if (routing_trace_parse(&t, copy, size, "fuzz", err, sizeof err) != 0) {
        if (!err[0] || strchr(err, '\n') || t.ex || t.routed) __builtin_trap();
        free(copy);
        return 0;
    }
    for (uint64_t i = 0; i < t.n_tokens; i++)
        for (int l = 0; l < t.n_layer; l++) {
            const int32_t *e = routing_trace_at(&t, i, l);
            for (int k = 0; k < t.n_used; k++) {
                if (!t.routed[l] ? e[k] != -1 : e[k] < 0 || e[k] >= t.n_expert) __builtin_trap();
                for (int j = 0; j < k; j++)
                    if (t.routed[l] && e[j] == e[k]) __builtin_trap();
            }
        }
    static const int windows[3] = { 1, 4, 16 };
    for (int l = 0; l < t.n_layer; l++) {
        routing_layer_stats s;
        if (t.routed[l] && routing_stats_layer(&t, l, windows, 3, &s, err, sizeof err) != 0 &&
            !strstr(err, "out of memory"))
            __builtin_trap();
    }
    ec_profile p;
    if (routing_trace_profile(&t, &p, err, sizeof err) == 0) ec_profile_free(&p);
    routing_trace_free(&t);
    free(copy);
    return 0;
}
