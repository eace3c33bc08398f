/* expert_cache.h: the policy of the GPU expert cache, in plain C with no
 * CUDA dependency: which routed experts live in the N device slots, what
 * happens on a miss, and what it cost. The device is abstract (ec_device:
 * allocate slots, copy an expert into a slot asynchronously, wait); the CUDA
 * backend supplies a real one, tests the simulated one (ec_sim).
 *
 * Contract:
 *  - Experts are numbered layer * n_expert + e. One slot holds one expert's
 *    blob (gate, up, down), slot_bytes each.
 *  - ec_plan_slots(): N = (free - reserve) / slot_bytes, at most every
 *    expert, 0 when the reserve leaves nothing.
 *  - Score: a decaying frequency. Each token (ec_begin_token) multiplies
 *    every score by `decay` (lazily, on read); each routing of an expert adds
 *    1. A profile seeds scores with their steady state count/tokens/(1-decay)
 *    and fills the slots with the top N experts (ties: lower id first).
 *  - ec_access() on a miss: under EC_MISS_PCIE the expert is always copied
 *    into the slot of the lowest-scored resident (ties: least recently used,
 *    then lower slot) that the current token has not used, and the caller
 *    must ec_sync before computing with it; under EC_MISS_CPU the caller
 *    computes it on the CPU from host memory, and the expert is admitted
 *    (copied asynchronously) only when its score beats that victim's. A miss
 *    with no evictable slot is computed on the CPU. A pinned slot (ec_pin)
 *    is never evicted; with pin_only the current token's accesses do not
 *    protect a slot, only pins do.
 *  - EC_MISS_AUTO resolves once, from start-up measurements of one expert's
 *    CPU compute time and PCIe copy time: the faster wins (CPU on a tie or
 *    when a measurement is missing).
 *  - Profiles are text (docs/cuda.md); ec_profile_load refuses a hostile or
 *    inconsistent file with one line "<path>:<line>: <problem>" and no
 *    partial result. ec_profile_save never overwrites a file.
 *  - Statistics: accesses, hits, misses by kind, copies, bytes moved, miss
 *    seconds (reported by the caller through ec_note_miss_seconds).
 * Every object owns what it allocates; no global mutable state. */
#ifndef STRATA_EXPERT_CACHE_H
#define STRATA_EXPERT_CACHE_H

#include <stddef.h>
#include <stdint.h>

/* ------------------------------------------------------------------ device */

typedef struct ec_device {
    void *ctx;
    /* Reserve n_slots slots of slot_bytes each; 0 or -1 with err. */
    int (*alloc)(void *ctx, int n_slots, size_t slot_bytes, char *err, size_t errlen);
    /* Start copying expert `expert` (bytes from host memory) into `slot`. */
    int (*copy)(void *ctx, int slot, int64_t expert, size_t bytes, char *err, size_t errlen);
    /* Wait for every copy started so far. */
    int (*sync)(void *ctx, char *err, size_t errlen);
} ec_device;

/* The simulated device: slots are expert ids; a copy becomes visible at the
 * next sync; the clock advances by bytes / bandwidth per sync. */
typedef struct ec_sim {
    int n_slots;
    size_t slot_bytes;
    int64_t *resident;       /* n_slots: expert id after the last sync, -1 empty */
    int64_t *pending;        /* n_slots: expert id of a copy in flight, -1 none */
    uint64_t bytes, copies, syncs;
    double pcie_bytes_per_s, clock_s;
    int64_t fail_copy_at;    /* the copy with this 0-based number fails; -1 never */
} ec_sim;

void ec_sim_init(ec_sim *s, double pcie_bytes_per_s);
ec_device ec_sim_device(ec_sim *s);
void ec_sim_free(ec_sim *s);

/* ------------------------------------------------------------------ profile */

typedef struct ec_profile {
    int n_layer, n_expert, n_used;
    int token_layer;         /* the layer whose observations count tokens: 0 by default, the first
                              * routed one where dense layers lead (their rows stay 0) */
    uint64_t tokens;
    uint64_t *count;         /* n_layer * n_expert */
} ec_profile;

int ec_profile_init(ec_profile *p, int n_layer, int n_expert, int n_used, char *err, size_t errlen);
void ec_profile_free(ec_profile *p);
/* One token's routing at one layer (n == n_used experts); tokens counts the
 * observations at token_layer. -1 with err on an expert or layer out of range. */
int ec_profile_observe(ec_profile *p, int layer, const int32_t *experts, int n, char *err, size_t errlen);
int ec_profile_save(const ec_profile *p, const char *path, char *err, size_t errlen);
int ec_profile_load(ec_profile *p, const char *path, char *err, size_t errlen);
/* Same as load, from memory (path only names the text in errors). */
int ec_profile_parse(ec_profile *p, const char *text, size_t len, const char *path, char *err, size_t errlen);
/* -1 with "<path>: ..." when the profile's shape is not the model's. */
int ec_profile_check(const ec_profile *p, int n_layer, int n_expert, int n_used, const char *path, char *err,
                     size_t errlen);
/* Fraction of expert uses the n_slots most used experts would serve. */
double ec_profile_hit_rate(const ec_profile *p, int64_t n_slots);

/* ------------------------------------------------------------------ policy */

typedef enum ec_miss_mode { EC_MISS_CPU, EC_MISS_PCIE, EC_MISS_AUTO } ec_miss_mode;

int ec_miss_parse(const char *s);                       /* -1 when unknown */
const char *ec_miss_name(ec_miss_mode m);
ec_miss_mode ec_miss_resolve(ec_miss_mode m, double cpu_s_per_expert, double pcie_s_per_expert);

/* "123", "512K", "24G", "1.5GiB", "800MB" (binary units) -> bytes; -1 on junk. */
int ec_parse_size(const char *s, uint64_t *out);

int64_t ec_plan_slots(uint64_t free_bytes, uint64_t reserve_bytes, size_t slot_bytes, int64_t n_experts);

typedef struct ec_stats {
    uint64_t accesses, hits, miss_cpu, miss_pcie, copies, bytes, evictions;
    double miss_seconds;
    uint64_t miss_timed;
} ec_stats;

typedef enum ec_where { EC_HIT, EC_MISS_ON_CPU, EC_MISS_ON_GPU } ec_where;

typedef struct ec_result {
    ec_where where;
    int slot;                /* HIT and MISS_ON_GPU: the slot; -1 on CPU */
    int copied;              /* a copy into `slot` was started by this access */
} ec_result;

typedef struct expert_cache expert_cache;

typedef struct ec_config {
    int n_layer, n_expert;
    int n_slots;
    size_t slot_bytes;
    double decay;            /* per token, in (0, 1); <= 0 means 0.99 */
    ec_miss_mode miss;       /* resolved: CPU or PCIE */
    int pin_only;            /* 1: only ec_pin protects a slot from eviction (a CPU tier computes
                              * synchronously); 0: so do the current token's accesses (a GPU's
                              * queued kernels may still read them) */
} ec_config;

expert_cache *ec_create(const ec_config *cfg, ec_device dev, char *err, size_t errlen);
void ec_free(expert_cache *c);
/* Seed scores and fill the slots from a profile (checked against the cache's
 * shape), then wait for the copies. */
int ec_fill(expert_cache *c, const ec_profile *p, char *err, size_t errlen);
void ec_begin_token(expert_cache *c);
int ec_access(expert_cache *c, int layer, int expert, ec_result *r, char *err, size_t errlen);
int ec_sync(expert_cache *c, char *err, size_t errlen);
void ec_note_miss_seconds(expert_cache *c, double s);

/* Brings an expert in ahead of its access (a prediction): when it is not
 * resident and a victim exists whose decayed score is below the expert's
 * plus one (what an access would give it), the copy into that slot starts;
 * nothing is counted as an access. 1 when a copy started, 0 when not, -1
 * with err. */
int ec_prefetch(expert_cache *c, int layer, int expert, char *err, size_t errlen);
/* A pinned slot is never chosen as a victim (pins count; unpin what was pinned). */
void ec_pin(expert_cache *c, int slot);
void ec_unpin(expert_cache *c, int slot);
int ec_slot_of(const expert_cache *c, int layer, int expert);   /* -1: not resident */
int64_t ec_slot_expert(const expert_cache *c, int slot);       /* -1: empty */
double ec_score(const expert_cache *c, int layer, int expert);  /* decayed to now */
const ec_stats *ec_get_stats(const expert_cache *c);
double ec_hit_rate(const expert_cache *c);
int ec_n_slots(const expert_cache *c);

#endif
