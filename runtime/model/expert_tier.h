/* expert_tier.h: the routed experts of a pack bigger than memory, held in
 * RAM slots inside a budget and read from the pack's experts.bin when the
 * router asks for one that is not there (direct I/O, on I/O threads of
 * its own, so reads overlap the computing of experts already present).
 *
 * Contract:
 *  - tier_create() takes a pack opened with lazy experts (loader.h) and the
 *    bytes its slots may use: n_slots = slot_budget / tier_slot_bytes(),
 *    at most every expert; fewer than min_slots is refused, with the budget
 *    it would need in err. It owns its file descriptors, threads and slot
 *    memory; tier_free() stops the threads and frees everything.
 *  - Which experts stay is the expert cache's policy (runtime/device/
 *    expert_cache.h: decaying scores, a routing profile's hot set placed at
 *    start by tier_fill, the lowest-scored unpinned slot evicted).
 *  - tier_get() is the router's word that experts[0..n) of a layer are
 *    needed now: each resident one is pinned (never evicted while pinned),
 *    each missing one gets a slot and its read starts on the I/O threads.
 *    It never waits for a read. tier_wait() waits until a ref's expert is in
 *    memory and gives its gate, up and down (loader_expert_build over the
 *    bytes read: the eager load's weights, bit for bit in every product),
 *    valid until tier_put() unpins it. When every slot is pinned, the expert
 *    is read into a buffer of its own at tier_wait and freed at tier_put
 *    (counted as a bounce; the planner sizes the slots so that one context
 *    never needs it).
 *  - A read that fails names experts.bin, the offset and the reason
 *    (tier_wait returns -1).
 *  - Thread-safe: the contexts of `strata serve --parallel N` share one tier.
 *  - tier_stats(): accesses, hits, misses, reads, bytes read and the seconds
 *    the I/O threads spent reading (their achieved bandwidth), the seconds
 *    the model waited on reads, bounces. */
#ifndef STRATA_EXPERT_TIER_H
#define STRATA_EXPERT_TIER_H

#include "runtime/kernels/weight.h"

#include <stddef.h>
#include <stdint.h>

#include <stdio.h>

typedef struct loaded_pack loaded_pack;
typedef struct ec_profile ec_profile;
typedef struct expert_tier expert_tier;

/* A slot's bytes for this pack: the largest expert's blob, rounded out to
 * direct-I/O alignment, plus its widened planes and K-quant factors. */
size_t tier_slot_bytes(const loaded_pack *p);

expert_tier *tier_create(const loaded_pack *p, uint64_t slot_budget, int min_slots, int io_threads, char *err,
                         size_t errlen);
void tier_free(expert_tier *t);

/* Places the profile's most used experts (checked against the pack's shape)
 * and waits for their reads. */
int tier_fill(expert_tier *t, const ec_profile *prof, const char *path, char *err, size_t errlen);

void tier_begin_token(expert_tier *t);

typedef struct tier_ref {
    int layer, expert;
    int slot;                /* -1: a bounce read at tier_wait */
    void *bounce;            /* its buffer, tier_wait to tier_put */
    weight parts[3];         /* a bounce's weights */
    kfactor kf[3];
} tier_ref;

int tier_get(expert_tier *t, int layer, const int *experts, int n, tier_ref *refs, char *err, size_t errlen);
int tier_wait(expert_tier *t, tier_ref *ref, const weight **gate, const weight **up, const weight **down, char *err,
              size_t errlen);
void tier_put(expert_tier *t, tier_ref *ref);
/* A prediction that experts[0..n) of a layer will be needed soon: reads
 * start for those not in memory, into slots of lower score (expert_cache.h:
 * ec_prefetch); nothing is pinned or counted as an access. While most
 * predictions go unused before their slot is taken again (a running mean
 * under 0.7), only one in 16 is read: wrong ones take the disk's time from
 * the misses. */
int tier_prefetch(expert_tier *t, int layer, const int *experts, int n, char *err, size_t errlen);
/* The bytes a product over one expert of the layer reads once it is in
 * memory (weight_bytes of its parts, as the eager load's weights). */
size_t tier_expert_bytes(const expert_tier *t, int layer);
/* 1 when the expert is in a slot and read (a hint: it may change at once). */
int tier_resident(expert_tier *t, int layer, int expert);

typedef struct tier_stats {
    int n_slots;
    int64_t n_experts;
    size_t slot_bytes;
    uint64_t accesses, hits, misses, reads, bytes_read, bounces;
    uint64_t prefetches;     /* reads started by tier_prefetch */
    uint64_t prefetch_hits;  /* accesses that found an expert a prefetch brought in */
    double read_seconds;     /* summed over the I/O threads */
    double stall_seconds;    /* the model waiting in tier_wait */
    int direct_io;           /* 1: O_DIRECT reads; 0: buffered, pages dropped after each read */
} tier_stats;

void tier_get_stats(expert_tier *t, tier_stats *s);

/* What the caller's budget left the tier (runtime/cli: cli_mem_plan). */
typedef struct tier_plan {
    uint64_t mem;               /* the budget */
    const char *by;             /* "--mem", or what set the default */
    int tier;                   /* 1: the routed experts go through a tier (load the pack with lazy experts) */
    uint64_t slot_budget;       /* bytes for its slots */
    uint64_t fixed, experts;    /* the estimates: dense + KV + buffers, every expert */
    int min_slots;
    int forced_slots;           /* STRATA_TIER_SLOTS=N: N slots whatever the memory */
} tier_plan;

/* The tier a plan asks for over a pack loaded with lazy experts (NULL in
 * *out and 0 when the plan has none), filled from a routing profile when
 * one is given, and one line on `note` (NULL: none) that says what stays in
 * memory. -1 with one line naming the pack and the figures. */
int tier_from_plan(const char *dir, const tier_plan *plan, const loaded_pack *pack, const char *profile, FILE *note,
                   expert_tier **out, char *err, size_t errlen);

/* Reads n whole experts (spread over the file, round robin over `threads`
 * threads, each into a buffer of its own) the way misses are read, and
 * returns the bytes per second; 0 with err when a read fails. The slots and
 * the counters are not touched. */
double tier_measure_reads(expert_tier *t, int n, int threads, char *err, size_t errlen);

#endif
