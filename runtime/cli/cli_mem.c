/* cli_mem.c: the memory budget of the commands that run a pack (--mem,
 * cli.h): whether the routed experts fit beside everything else, and when
 * they do not, the bytes the RAM tier's slots get (runtime/model/
 * expert_tier.h). Decided from index.txt alone, before anything is read. */
#include "runtime/cli/budget.h"
#include "runtime/cli/cli.h"
#include "runtime/util/memavail.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Code, the tokenizer, the pool's threads and the allocator's slack: what
 * the process holds besides the pack's parts and buffers. */
#define MEM_OVERHEAD ((uint64_t)64 << 20)
/* Expert reads the tier keeps in flight per context while a batch's
 * experts run (backend_cpu_moe.c reads that many ahead). */
#define TIER_PINS_PER_CONTEXT 5

static void human(char *buf, size_t n, uint64_t b)
{
    if (b >= (1ull << 30)) snprintf(buf, n, "%.2f GiB", (double)b / (1ull << 30));
    else if (b >= (1ull << 20)) snprintf(buf, n, "%.1f MiB", (double)b / (1ull << 20));
    else snprintf(buf, n, "%.1f KiB", (double)b / 1024.0);
}

int cli_mem_plan(const char *dir, const device_opts *dev, int n_ctx, int parallel, tier_plan *plan, char *err,
                 size_t errlen)
{
    memset(plan, 0, sizeof *plan);
    if (parallel < 1) parallel = 1;
    /* STRATA_TIER_SLOTS=N: the tier with N slots whatever the memory (the
     * tests force misses with it, as STRATA_CUDA_SLOTS does on a GPU) */
    const char *force = getenv("STRATA_TIER_SLOTS");
    if (force && *force) {
        char *end;
        long v = strtol(force, &end, 10);
        if (*end || v < 1 || v > 1000000) {
            snprintf(err, errlen, "STRATA_TIER_SLOTS=%s: not a slot count", force);
            return -1;
        }
        plan->tier = 1;
        plan->forced_slots = (int)v;
        plan->min_slots = 1;
        plan->by = "STRATA_TIER_SLOTS";
        return 0;
    }
    if (dev && dev->mem_given) {
        plan->mem = dev->mem;
        plan->by = "--mem";
    } else {
        memavail ma;
        if (memavail_read("", &ma) != 0 || ma.bytes == 0) return 0; /* unknown: everything in memory, as before */
        plan->mem = ma.bytes;
        plan->by = ma.by;
    }
    budget_opts bo = { 0 };
    bo.n_ctx = n_ctx;
    budget_report r;
    if (budget_compute(dir, &bo, &r, err, errlen)) return -1;
    uint64_t kv = r.kv;
    if (n_ctx <= 0 && r.n_ctx > 0 && r.n_ctx_train > r.n_ctx) kv = kv / (uint64_t)r.n_ctx * (uint64_t)r.n_ctx_train;
    plan->fixed = r.dense + r.dense_half + (uint64_t)parallel * (kv + r.work) + r.vision + MEM_OVERHEAD;
    plan->experts = (uint64_t)r.n_experts * r.slot_bytes;
    if (r.n_experts == 0 || plan->fixed + plan->experts <= plan->mem) return 0;
    char a[32], b[32];
    human(a, sizeof a, plan->mem);
    if (plan->fixed >= plan->mem) {
        human(b, sizeof b, plan->fixed);
        snprintf(err, errlen,
                 "%s: %s of memory (%s) is less than the dense weights, KV cache and buffers need (%s%s); "
                 "give more with --mem, or a smaller context with -c",
                 dir, a, plan->by, b, parallel > 1 ? ", for every --parallel context" : "");
        return -1;
    }
    plan->tier = 1;
    plan->slot_budget = plan->mem - plan->fixed;
    plan->min_slots = parallel * (r.n_expert_used > TIER_PINS_PER_CONTEXT ? r.n_expert_used : TIER_PINS_PER_CONTEXT);
    return 0;
}

