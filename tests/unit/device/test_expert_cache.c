/* test_expert_cache.c: the expert-cache policy on the simulated device:
 * slot sizing, allocation and initial fill, decaying scores, eviction order,
 * miss decisions, the routing profile file (round trip, hostile files, a
 * dense layer leading the MoE ones), and the hit rate on a synthetic routing
 * trace against the profile's prediction, the trace generated on the fly
 * and, through replay_trace(), a recorded one (runtime/model/routing_trace.h)
 * saved and loaded back, and the shipped model's own trace. */
#include "tests/lib/test_util.h"

#include "runtime/device/expert_cache.h"
#include "runtime/model/routing_trace.h"

#include <math.h>
#include <unistd.h>

static void test_sizes_and_plan(void **state)
{
    (void)state;
    uint64_t v;
    assert_int_equal(ec_parse_size("123", &v), 0);      assert_int_equal(v, 123);
    assert_int_equal(ec_parse_size("512K", &v), 0);     assert_int_equal(v, 512 * 1024);
    assert_int_equal(ec_parse_size("24G", &v), 0);      assert_true(v == 24ull << 30);
    assert_int_equal(ec_parse_size("1.5GiB", &v), 0);   assert_true(v == 3ull << 29);
    assert_int_equal(ec_parse_size("800MB", &v), 0);    assert_true(v == 800ull << 20);
    assert_int_equal(ec_parse_size("-1G", &v), -1);
    assert_int_equal(ec_parse_size("12X", &v), -1);
    assert_int_equal(ec_parse_size("", &v), -1);
    assert_int_equal(ec_parse_size("G", &v), -1);
    assert_int_equal(ec_parse_size("nan", &v), -1);
    /* (free - reserve) / slot, capped at the expert count, 0 when the reserve eats it */
    assert_int_equal(ec_plan_slots(10000, 1000, 1000, 100), 9);
    assert_int_equal(ec_plan_slots(10999, 1000, 1000, 100), 9);
    assert_int_equal(ec_plan_slots(1000000, 0, 1000, 100), 100);
    assert_int_equal(ec_plan_slots(1000, 1000, 10, 100), 0);
    assert_int_equal(ec_plan_slots(500, 1000, 10, 100), 0);
    assert_int_equal(ec_plan_slots(500, 0, 0, 100), 0);
}

static void test_miss_decision(void **state)
{
    (void)state;
    assert_int_equal(ec_miss_parse("cpu"), EC_MISS_CPU);
    assert_int_equal(ec_miss_parse("pcie"), EC_MISS_PCIE);
    assert_int_equal(ec_miss_parse("auto"), EC_MISS_AUTO);
    assert_int_equal(ec_miss_parse("gpu"), -1);
    assert_int_equal(ec_miss_resolve(EC_MISS_AUTO, 2e-3, 1e-3), EC_MISS_PCIE);
    assert_int_equal(ec_miss_resolve(EC_MISS_AUTO, 1e-3, 2e-3), EC_MISS_CPU);
    assert_int_equal(ec_miss_resolve(EC_MISS_AUTO, 1e-3, 1e-3), EC_MISS_CPU);
    assert_int_equal(ec_miss_resolve(EC_MISS_AUTO, NAN, 1e-3), EC_MISS_CPU);
    assert_int_equal(ec_miss_resolve(EC_MISS_AUTO, 1e-3, 0), EC_MISS_CPU);
    assert_int_equal(ec_miss_resolve(EC_MISS_PCIE, 1e-6, 1), EC_MISS_PCIE);
    assert_int_equal(ec_miss_resolve(EC_MISS_CPU, 1, 1e-6), EC_MISS_CPU);
}

/* A profile of 2 layers x 4 experts, 2 used, 10 tokens. */
static void small_profile(ec_profile *p)
{
    char err[256];
    assert_int_equal(ec_profile_init(p, 2, 4, 2, err, sizeof err), 0);
    static const int32_t r0[10][2] = { {0, 1}, {0, 1}, {0, 2}, {0, 1}, {0, 3}, {1, 0}, {0, 2}, {1, 2}, {0, 1}, {3, 0} };
    static const int32_t r1[10][2] = { {3, 2}, {3, 1}, {3, 2}, {3, 2}, {0, 3}, {3, 2}, {1, 3}, {2, 3}, {3, 0}, {3, 1} };
    for (int t = 0; t < 10; t++) {
        assert_int_equal(ec_profile_observe(p, 0, r0[t], 2, err, sizeof err), 0);
        assert_int_equal(ec_profile_observe(p, 1, r1[t], 2, err, sizeof err), 0);
    }
    /* layer 0: e0 9, e1 6, e2 3, e3 2; layer 1: e0 2, e1 3, e2 5, e3 10 */
}

static void test_fill_allocates_top_slots(void **state)
{
    (void)state;
    char err[256];
    ec_profile p;
    small_profile(&p);
    assert_int_equal(p.tokens, 10);
    assert_int_equal(p.count[0], 9);
    assert_int_equal(p.count[7], 10);
    ec_sim sim;
    ec_sim_init(&sim, 1e9);
    ec_config cfg = { .n_layer = 2, .n_expert = 4, .n_slots = 3, .slot_bytes = 4096, .decay = 0.9, .miss = EC_MISS_CPU };
    expert_cache *c = ec_create(&cfg, ec_sim_device(&sim), err, sizeof err);
    assert_non_null(c);
    assert_int_equal(sim.n_slots, 3);
    assert_int_equal(sim.slot_bytes, 4096);
    assert_int_equal(ec_fill(c, &p, err, sizeof err), 0);
    /* top 3 by count: (1,3)=10 [id 7], (0,0)=9 [id 0], (0,1)=6 [id 1] */
    assert_int_equal(ec_slot_expert(c, 0), 7);
    assert_int_equal(ec_slot_expert(c, 1), 0);
    assert_int_equal(ec_slot_expert(c, 2), 1);
    assert_int_equal(ec_slot_of(c, 1, 3), 0);
    assert_int_equal(ec_slot_of(c, 0, 2), -1);
    for (int k = 0; k < 3; k++) assert_int_equal(sim.resident[k], ec_slot_expert(c, k));
    assert_int_equal(sim.copies, 3);
    assert_int_equal(sim.bytes, 3 * 4096);
    assert_int_equal(ec_get_stats(c)->bytes, 3 * 4096);
    assert_true(sim.syncs >= 1);
    /* steady-state seeding: count / tokens / (1 - decay) */
    assert_true(fabs(ec_score(c, 0, 0) - 0.9 / 0.1) < 1e-9);
    assert_true(fabs(ec_score(c, 1, 3) - 1.0 / 0.1) < 1e-9);
    /* the prediction of the same profile: (10 + 9 + 6) / 40 uses */
    assert_true(fabs(ec_profile_hit_rate(&p, 3) - 25.0 / 40.0) < 1e-12);
    assert_true(fabs(ec_profile_hit_rate(&p, 8) - 1.0) < 1e-12);
    assert_true(fabs(ec_profile_hit_rate(&p, 0)) < 1e-12);
    /* a profile of another shape is refused */
    ec_profile q;
    assert_int_equal(ec_profile_init(&q, 3, 4, 2, err, sizeof err), 0);
    assert_int_equal(ec_fill(c, &q, err, sizeof err), -1);
    assert_non_null(strstr(err, "3 layers x 4 experts"));
    assert_int_equal(ec_profile_check(&q, 2, 4, 2, "x.prof", err, sizeof err), -1);
    assert_non_null(strstr(err, "x.prof: the profile is for 3 layers x 4 experts (2 used), the model has 2 x 4 (2 used)"));
    assert_int_equal(ec_profile_check(&p, 2, 4, 2, "x.prof", err, sizeof err), 0);
    ec_profile_free(&q);
    ec_free(c);
    ec_sim_free(&sim);
    ec_profile_free(&p);
}

static void test_scores_decay(void **state)
{
    (void)state;
    char err[256];
    ec_sim sim;
    ec_sim_init(&sim, 0);
    ec_config cfg = { .n_layer = 1, .n_expert = 4, .n_slots = 2, .slot_bytes = 64, .decay = 0.5, .miss = EC_MISS_CPU };
    expert_cache *c = ec_create(&cfg, ec_sim_device(&sim), err, sizeof err);
    assert_non_null(c);
    ec_result r;
    assert_true(ec_score(c, 0, 1) == 0);
    assert_int_equal(ec_access(c, 0, 1, &r, err, sizeof err), 0);
    assert_true(ec_score(c, 0, 1) == 1);
    ec_begin_token(c);
    assert_true(ec_score(c, 0, 1) == 0.5);
    ec_begin_token(c);
    ec_begin_token(c);
    assert_true(ec_score(c, 0, 1) == 0.125);
    assert_int_equal(ec_access(c, 0, 1, &r, err, sizeof err), 0);
    assert_true(ec_score(c, 0, 1) == 1.125);
    ec_begin_token(c);
    assert_true(ec_score(c, 0, 1) == 0.5625);
    assert_true(isnan(ec_score(c, 1, 0)));
    assert_int_equal(ec_access(c, 0, 4, &r, err, sizeof err), -1);
    assert_non_null(strstr(err, "layer 0 expert 4 is out of range"));
    /* a bad configuration is refused with a reason */
    ec_config bad = cfg;
    bad.decay = 1.0;
    assert_null(ec_create(&bad, ec_sim_device(&sim), err, sizeof err));
    assert_non_null(strstr(err, "decay"));
    bad = cfg;
    bad.n_slots = 5;
    assert_null(ec_create(&bad, ec_sim_device(&sim), err, sizeof err));
    bad = cfg;
    bad.miss = EC_MISS_AUTO;
    assert_null(ec_create(&bad, ec_sim_device(&sim), err, sizeof err));
    assert_non_null(strstr(err, "resolved"));
    ec_free(c);
    ec_sim_free(&sim);
}

static ec_result acc(expert_cache *c, int e)
{
    char err[256];
    ec_result r;
    assert_int_equal(ec_access(c, 0, e, &r, err, sizeof err), 0);
    return r;
}

static void test_eviction_order_cpu(void **state)
{
    (void)state;
    char err[256];
    ec_sim sim;
    ec_sim_init(&sim, 0);
    ec_config cfg = { .n_layer = 1, .n_expert = 8, .n_slots = 3, .slot_bytes = 100, .decay = 0.8, .miss = EC_MISS_CPU };
    expert_cache *c = ec_create(&cfg, ec_sim_device(&sim), err, sizeof err);
    assert_non_null(c);
    /* empty slots: every miss is admitted (victim score -1), in slot order */
    ec_result r = acc(c, 5);
    assert_int_equal(r.where, EC_MISS_ON_CPU);
    assert_int_equal(r.copied, 1);
    assert_int_equal(ec_slot_of(c, 0, 5), 0);
    ec_begin_token(c);
    acc(c, 6);
    ec_begin_token(c);
    acc(c, 7);
    assert_int_equal(ec_sync(c, err, sizeof err), 0);
    for (int k = 0; k < 3; k++) assert_int_equal(sim.resident[k], ec_slot_expert(c, k));
    /* scores now: 5 -> 0.512, 6 -> 0.64, 7 -> 0.8 */
    ec_begin_token(c);
    r = acc(c, 7);
    assert_int_equal(r.where, EC_HIT);
    assert_int_equal(r.slot, 2);
    /* expert 1 at 1.0 beats the lowest resident (5 at 0.512): 5 goes */
    r = acc(c, 1);
    assert_int_equal(r.where, EC_MISS_ON_CPU);
    assert_int_equal(r.copied, 1);
    assert_int_equal(ec_slot_of(c, 0, 5), -1);
    assert_int_equal(ec_slot_of(c, 0, 1), 0);
    assert_int_equal(ec_get_stats(c)->evictions, 1);
    /* three tokens of 6, 1, 7: then a newcomer (score 1) is below every
     * resident (6: 2.21, 1: 2.36, 7: 2.69) and is not admitted */
    for (int i = 0; i < 3; i++) { ec_begin_token(c); acc(c, 6); acc(c, 1); acc(c, 7); }
    ec_begin_token(c);
    r = acc(c, 2);
    assert_int_equal(r.where, EC_MISS_ON_CPU);
    assert_int_equal(r.copied, 0);
    assert_int_equal(ec_slot_of(c, 0, 2), -1);
    /* 2 used every token overtakes 1 (no longer used) on the second token:
     * 2.44 against 1.51; 6 and 7, used by the token, are not candidates */
    int copied_at = -1;
    for (int i = 0; i < 3; i++) {
        ec_begin_token(c);
        acc(c, 6);
        acc(c, 7);
        r = acc(c, 2);
        if (r.copied) { assert_int_equal(copied_at, -1); copied_at = i; }
    }
    assert_int_equal(copied_at, 1);
    assert_int_equal(r.where, EC_HIT);
    assert_int_equal(ec_slot_of(c, 0, 1), -1);   /* 1 was the coldest */
    assert_true(ec_slot_of(c, 0, 2) >= 0);
    assert_true(ec_slot_of(c, 0, 6) >= 0 && ec_slot_of(c, 0, 7) >= 0);
    const ec_stats *st = ec_get_stats(c);
    assert_int_equal(st->hits + st->miss_cpu + st->miss_pcie, st->accesses);
    assert_int_equal(st->miss_pcie, 0);
    assert_int_equal(st->bytes, sim.bytes);
    ec_free(c);
    ec_sim_free(&sim);
}

static void test_eviction_order_pcie(void **state)
{
    (void)state;
    char err[256];
    ec_sim sim;
    ec_sim_init(&sim, 0);
    ec_config cfg = { .n_layer = 1, .n_expert = 8, .n_slots = 2, .slot_bytes = 100, .decay = 0.5, .miss = EC_MISS_PCIE };
    expert_cache *c = ec_create(&cfg, ec_sim_device(&sim), err, sizeof err);
    assert_non_null(c);
    acc(c, 0);
    acc(c, 1);
    ec_begin_token(c);
    acc(c, 0);   /* 0: 1.5, 1: 0.5 */
    ec_begin_token(c);
    /* a miss always goes to the GPU, into the lowest-scored slot (1's) */
    ec_result r = acc(c, 4);
    assert_int_equal(r.where, EC_MISS_ON_GPU);
    assert_int_equal(r.copied, 1);
    assert_int_equal(r.slot, ec_slot_of(c, 0, 4));
    assert_int_equal(ec_slot_of(c, 0, 1), -1);
    assert_true(ec_slot_of(c, 0, 0) >= 0);
    /* slots used by the current token are never evicted: the second miss takes
     * 0's slot, the third finds none free and is computed on the CPU */
    r = acc(c, 5);
    assert_int_equal(r.where, EC_MISS_ON_GPU);
    assert_int_equal(ec_slot_of(c, 0, 0), -1);
    r = acc(c, 6);
    assert_int_equal(r.where, EC_MISS_ON_CPU);
    assert_int_equal(r.copied, 0);
    assert_true(ec_slot_of(c, 0, 4) >= 0 && ec_slot_of(c, 0, 5) >= 0);
    assert_int_equal(ec_sync(c, err, sizeof err), 0);
    for (int k = 0; k < 2; k++) assert_int_equal(sim.resident[k], ec_slot_expert(c, k));
    const ec_stats *st = ec_get_stats(c);
    assert_int_equal(st->miss_pcie, 4);
    assert_int_equal(st->miss_cpu, 1);
    assert_int_equal(st->hits, 1);
    ec_note_miss_seconds(c, 0.25);
    ec_note_miss_seconds(c, 0.5);
    assert_true(st->miss_seconds == 0.75 && st->miss_timed == 2);
    /* a failing copy surfaces the device's message and leaves the map alone */
    sim.fail_copy_at = (int64_t)sim.copies;
    ec_begin_token(c);
    assert_int_equal(ec_access(c, 0, 7, &r, err, sizeof err), -1);
    assert_non_null(strstr(err, "injected"));
    assert_int_equal(ec_slot_of(c, 0, 7), -1);
    ec_free(c);
    ec_sim_free(&sim);
}

/* The CPU tier's rules (pin_only): within one token a slot is protected
 * only while pinned, so a batch can cycle more experts than it has slots;
 * a pinned slot is never the victim (every slot pinned: the miss is
 * computed from host memory, copied nowhere); a prefetch places an expert
 * without counting an access and only over a victim scoring below it plus
 * one. */
static void test_pins_and_prefetch(void **state)
{
    (void)state;
    char err[256];
    ec_sim sim;
    ec_sim_init(&sim, 0);
    ec_config cfg = { .n_layer = 2, .n_expert = 8, .n_slots = 2, .slot_bytes = 100, .decay = 0.5,
                      .miss = EC_MISS_PCIE, .pin_only = 1 };
    expert_cache *c = ec_create(&cfg, ec_sim_device(&sim), err, sizeof err);
    assert_non_null(c);
    ec_begin_token(c);
    ec_result r = acc(c, 0), r1 = acc(c, 1);
    assert_int_equal(r.where, EC_MISS_ON_GPU);
    assert_int_equal(r1.where, EC_MISS_ON_GPU);
    /* same token, both slots used: without pins a third expert still gets one */
    r = acc(c, 2);
    assert_int_equal(r.where, EC_MISS_ON_GPU);
    assert_int_equal(ec_get_stats(c)->evictions, 1);
    /* pin both residents: the next miss has no victim and goes nowhere */
    ec_pin(c, 0);
    ec_pin(c, 1);
    r = acc(c, 3);
    assert_int_equal(r.where, EC_MISS_ON_CPU);
    assert_int_equal(r.copied, 0);
    assert_int_equal(ec_slot_of(c, 0, 3), -1);
    /* a prefetch cannot take a pinned slot either */
    assert_int_equal(ec_prefetch(c, 1, 4, err, sizeof err), 0);
    /* pins count: one unpin of a twice-pinned slot keeps it */
    ec_pin(c, 0);
    ec_unpin(c, 0);
    ec_unpin(c, 1);
    const int64_t in0 = ec_slot_expert(c, 0);
    const uint64_t accesses = ec_get_stats(c)->accesses;
    /* this token's access gave slot 1's expert 1: a prediction (0 + 1) does not beat it... */
    assert_int_equal(ec_prefetch(c, 1, 4, err, sizeof err), 0);
    /* ...after a token it has decayed to 0.5, and the prediction takes its slot */
    ec_begin_token(c);
    assert_int_equal(ec_prefetch(c, 1, 4, err, sizeof err), 1);
    assert_int_equal(ec_slot_of(c, 1, 4), 1); /* slot 1, the unpinned one */
    assert_int_equal(ec_slot_expert(c, 0), in0);
    assert_int_equal(ec_get_stats(c)->accesses, accesses);
    /* already resident: nothing to do */
    assert_int_equal(ec_prefetch(c, 1, 4, err, sizeof err), 0);
    ec_unpin(c, 0);
    /* a prediction does not displace an expert it does not outscore by one:
     * expert 5 of layer 0 used five times this token scores 5, a fresh
     * prediction (0 + 1) is below it */
    for (int i = 0; i < 5; i++) acc(c, 5);
    for (int i = 0; i < 5; i++) (void)ec_access(c, 1, 4, &r, err, sizeof err);
    assert_int_equal(ec_prefetch(c, 1, 7, err, sizeof err), 0);
    assert_int_equal(ec_slot_of(c, 1, 7), -1);
    assert_int_equal(ec_prefetch(c, 9, 0, err, sizeof err), -1); /* out of range */
    assert_int_equal(ec_sync(c, err, sizeof err), 0);
    for (int k = 0; k < 2; k++) assert_int_equal(sim.resident[k], ec_slot_expert(c, k));
    ec_free(c);
    ec_sim_free(&sim);
}

static void test_profile_round_trip(void **state)
{
    (void)state;
    char err[256], dir[] = "/tmp/strata-ec-XXXXXX", path[300];
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/route.prof", dir);
    ec_profile p, q;
    small_profile(&p);
    int32_t bad[2] = { 1, 1 };
    assert_int_equal(ec_profile_observe(&p, 0, bad, 2, err, sizeof err), -1);
    assert_non_null(strstr(err, "twice"));
    bad[1] = 4;
    assert_int_equal(ec_profile_observe(&p, 0, bad, 2, err, sizeof err), -1);
    assert_int_equal(ec_profile_observe(&p, 2, bad, 2, err, sizeof err), -1);
    assert_int_equal(ec_profile_save(&p, path, err, sizeof err), 0);
    assert_int_equal(ec_profile_load(&q, path, err, sizeof err), 0);
    assert_int_equal(q.n_layer, 2);
    assert_int_equal(q.n_expert, 4);
    assert_int_equal(q.n_used, 2);
    assert_int_equal(q.tokens, 10);
    assert_memory_equal(p.count, q.count, 8 * sizeof(uint64_t));
    /* never overwritten */
    assert_int_equal(ec_profile_save(&p, path, err, sizeof err), -1);
    assert_non_null(strstr(err, "never overwritten"));
    size_t n;
    char *text = slurp(path, &n);
    assert_non_null(text);
    assert_string_equal(text, "strata-routing-profile 1\nshape 2 4 2\ntokens 10\nlayer 0 9 6 3 2\nlayer 1 2 3 5 10\nend\n");
    free(text);
    ec_profile_free(&q);
    assert_int_equal(ec_profile_load(&q, "/nonexistent/strata.prof", err, sizeof err), -1);
    assert_non_null(strstr(err, "/nonexistent/strata.prof: "));
    unlink(path);
    rmdir(dir);
    ec_profile_free(&p);
}

static void test_profile_hostile(void **state)
{
    (void)state;
    static const struct { const char *text, *want; } cases[] = {
        { "", "p:1: truncated" },
        { "strata-routing-profile 2\n", "p:1: not a strata routing profile" },
        { "GGUF\n", "p:1: not a strata routing profile" },
        { "strata-routing-profile 1\nshape 2 4\n", "p:2: missing experts used" },
        { "strata-routing-profile 1\nshape 2 4 5\ntokens 1\n", "p:2: shape 2 x 4 with 5 used is impossible" },
        { "strata-routing-profile 1\nshape 0 4 1\ntokens 1\n", "p:2: shape 0 x 4" },
        { "strata-routing-profile 1\nshape 4096 65536 1\n", "p:2: 4096 layers x 65536 experts is above the limit" },
        { "strata-routing-profile 1\nshape 99999 4 1\n", "p:2: layer count 99999 is above the limit 4096" },
        { "strata-routing-profile 1\nshape 1 2 1\ntokens 99999999999999999999999\n", "p:3: token count '99999999999999999999999' is too long" },
        { "strata-routing-profile 1\nshape 1 2 1\ntokens 18446744073709551615\n", "p:3: token count 18446744073709551615 is above the limit" },
        { "strata-routing-profile 1\nshape 1 2 1\ntokens -3\n", "p:3: token count '-3' is not an unsigned decimal number" },
        { "strata-routing-profile 1\nshape 1 2 1\ntokens 3\nlayer 0 1 2\n", "p:5: truncated" },
        { "strata-routing-profile 1\nshape 1 2 1\ntokens 3\nlayer 0 1 1\nend\n", "p:4: layer 0 counts add up to 2, but 3 tokens x 1 experts used is 3" },
        { "strata-routing-profile 1\nshape 1 2 1\ntokens 3\nlayer 0 4 0\nend\n", "p:4: count 4 is above the limit 3" },
        { "strata-routing-profile 1\nshape 1 2 1\ntokens 3\nlayer 0 1\nend\n", "p:4: missing count" },
        { "strata-routing-profile 1\nshape 1 2 1\ntokens 3\nlayer 0 1 2 0\nend\n", "p:4: unexpected text '0'" },
        { "strata-routing-profile 1\nshape 2 2 1\ntokens 3\nlayer 1 1 2\n", "p:4: layer 1 where layer 0 was expected" },
        { "strata-routing-profile 1\nshape 1 2 1\ntokens 3\nlayer 0 1 2\nend\nlayer 0 1 2\n", "p:6: text after the 'end' line" },
        { "strata-routing-profile 1\nshape 1 2 1\ntokens 3\nlayer 0 1 2\nEND\n", "p:5: expected 'end'" },
        { "strata-routing-profile 1\r\nshape 1 2 1\n", "p:1: a NUL or CR byte" },
        { "strata-routing-profile 1\nshape 1  2 1\n", "p:2: missing expert count" },
        { "strata-routing-profile 1\nshape 1 2 1\ntokens 3\nlayer 0 1 0x2\nend\n", "p:4: count '0x2' is not an unsigned decimal number" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char err[512] = "";
        ec_profile p;
        int rc = ec_profile_parse(&p, cases[i].text, strlen(cases[i].text), "p", err, sizeof err);
        if (rc != -1 || !strstr(err, cases[i].want)) {
            print_error("case %zu: rc %d, err '%s', wanted '%s'\n", i, rc, err, cases[i].want);
            fail();
        }
        assert_null(p.count);
    }
    /* a NUL byte inside the text */
    static const char nul[] = "strata-routing-profile 1\nshape 1 2 1\0\ntokens 3\n";
    char err[256];
    ec_profile p;
    assert_int_equal(ec_profile_parse(&p, nul, sizeof nul - 1, "p", err, sizeof err), -1);
    assert_non_null(strstr(err, "p:2: a NUL or CR byte"));
    /* and the good one, with and without trailing blank lines */
    static const char good[] = "strata-routing-profile 1\nshape 1 2 1\ntokens 3\nlayer 0 1 2\nend\n\n";
    assert_int_equal(ec_profile_parse(&p, good, sizeof good - 1, "p", err, sizeof err), 0);
    assert_int_equal(p.count[1], 2);
    ec_profile_free(&p);
    assert_int_equal(ec_profile_parse(&p, good, sizeof good - 3, "p", err, sizeof err), 0);  /* no final newline */
    ec_profile_free(&p);
}

/* A dense layer leading an MoE model routes nothing: with token_layer at the
 * first routed layer the tokens are counted there, the dense layer's row is
 * all 0, and the file reads back (a row of 0 is a layer without experts). */
static void test_profile_dense_lead(void **state)
{
    (void)state;
    char err[256];
    ec_profile p;
    assert_int_equal(ec_profile_init(&p, 3, 2, 1, err, sizeof err), 0);
    assert_int_equal(p.token_layer, 0);
    p.token_layer = 1;
    for (int t = 0; t < 3; t++)
        for (int l = 1; l < 3; l++) {
            const int32_t e = (t + l) % 2;
            assert_int_equal(ec_profile_observe(&p, l, &e, 1, err, sizeof err), 0);
        }
    assert_int_equal(p.tokens, 3);
    char *dir = make_scratch_dir(), path[4200];
    assert_non_null(dir);
    snprintf(path, sizeof path, "%s/dense-lead.prof", dir);
    assert_int_equal(ec_profile_save(&p, path, err, sizeof err), 0);
    size_t n;
    char *text = slurp(path, &n);
    assert_non_null(text);
    assert_string_equal(text, "strata-routing-profile 1\nshape 3 2 1\ntokens 3\nlayer 0 0 0\nlayer 1 1 2\nlayer 2 2 1\nend\n");
    free(text);
    ec_profile q;
    if (ec_profile_load(&q, path, err, sizeof err)) fail_msg("%s", err);
    assert_int_equal(q.tokens, 3);
    assert_memory_equal(q.count, p.count, 6 * sizeof(uint64_t));
    ec_profile_free(&q);
    unlink(path);
    rmdir(dir);
    free(dir);
    ec_profile_free(&p);
}

/* A skewed synthetic router: per layer a fixed random permutation of
 * experts, picked with Zipf-like weights 1/(rank+1), top-k without repeats. */
typedef struct lcg { uint64_t s; } lcg;
static double lcg_unit(lcg *g)
{
    g->s = g->s * 6364136223846793005ull + 1442695040888963407ull;
    return (double)(g->s >> 11) / 9007199254740992.0;
}

enum { TL = 8, TE = 32, TK = 2, TSLOTS = 64 };

static void route(lcg *g, const int perm[TL][TE], int l, int32_t out[TK])
{
    for (int k = 0; k < TK; k++) {
        for (;;) {
            double total = 0, u;
            for (int r = 0; r < TE; r++) total += 1.0 / (r + 1);
            u = lcg_unit(g) * total;
            int r = 0;
            while (r < TE - 1 && (u -= 1.0 / (r + 1)) > 0) r++;
            int e = perm[l][r], dup = 0;
            for (int j = 0; j < k; j++) dup |= out[j] == e;
            if (!dup) { out[k] = e; break; }
        }
    }
}

/* The router's per-layer order of experts: a shuffle from `seed`. */
static void router_perm(int perm[TL][TE], uint64_t seed)
{
    lcg g = { seed };
    for (int l = 0; l < TL; l++) {
        for (int e = 0; e < TE; e++) perm[l][e] = e;
        for (int e = TE - 1; e > 0; e--) {
            int j = (int)(lcg_unit(&g) * (e + 1));
            int t = perm[l][e]; perm[l][e] = perm[l][j]; perm[l][j] = t;
        }
    }
}

static double run_trace(ec_miss_mode miss, const ec_profile *prof, const int perm[TL][TE], uint64_t seed, ec_sim *sim,
                        ec_stats *st_out)
{
    char err[256];
    ec_config cfg = { .n_layer = TL, .n_expert = TE, .n_slots = TSLOTS, .slot_bytes = 1 << 20, .decay = 0.995, .miss = miss };
    expert_cache *c = ec_create(&cfg, ec_sim_device(sim), err, sizeof err);
    assert_non_null(c);
    if (prof) assert_int_equal(ec_fill(c, prof, err, sizeof err), 0);
    uint64_t fill_bytes = ec_get_stats(c)->bytes;
    lcg g = { seed };
    for (int t = 0; t < 4000; t++) {
        ec_begin_token(c);
        for (int l = 0; l < TL; l++) {
            int32_t ex[TK];
            route(&g, perm, l, ex);
            for (int k = 0; k < TK; k++) {
                ec_result r;
                assert_int_equal(ec_access(c, l, ex[k], &r, err, sizeof err), 0);
                if (r.where == EC_MISS_ON_GPU) assert_int_equal(ec_sync(c, err, sizeof err), 0);
                if (r.where != EC_HIT) ec_note_miss_seconds(c, r.where == EC_MISS_ON_GPU ? 2e-4 : 3e-4);
            }
        }
    }
    assert_int_equal(ec_sync(c, err, sizeof err), 0);
    for (int k = 0; k < TSLOTS; k++) assert_int_equal(sim->resident[k], ec_slot_expert(c, k));
    *st_out = *ec_get_stats(c);
    assert_int_equal(st_out->bytes, sim->bytes);
    assert_int_equal(st_out->hits + st_out->miss_cpu + st_out->miss_pcie, st_out->accesses);
    assert_int_equal(st_out->accesses, 4000 * TL * TK);
    assert_int_equal(st_out->miss_timed, st_out->miss_cpu + st_out->miss_pcie);
    assert_true(st_out->bytes >= fill_bytes);
    double hr = ec_hit_rate(c);
    ec_free(c);
    return hr;
}

static void test_hit_rate_synthetic_trace(void **state)
{
    (void)state;
    char err[256];
    int perm[TL][TE];
    router_perm(perm, 12345);
    /* record a profile from one trace, serve another trace from the same router */
    ec_profile prof;
    assert_int_equal(ec_profile_init(&prof, TL, TE, TK, err, sizeof err), 0);
    lcg rg = { 777 };
    for (int t = 0; t < 4000; t++)
        for (int l = 0; l < TL; l++) {
            int32_t ex[TK];
            route(&rg, perm, l, ex);
            assert_int_equal(ec_profile_observe(&prof, l, ex, TK, err, sizeof err), 0);
        }
    double predicted = ec_profile_hit_rate(&prof, TSLOTS);
    /* 64 of 256 experts under a Zipf router: the prediction is well above 64/256 */
    assert_true(predicted > 0.5 && predicted < 0.95);

    ec_sim sim;
    ec_stats st_cpu, st_pcie, st_cold;
    ec_sim_init(&sim, 25e9);
    double hr_cpu = run_trace(EC_MISS_CPU, &prof, perm, 999, &sim, &st_cpu);
    ec_sim_free(&sim);
    ec_sim_init(&sim, 25e9);
    double hr_pcie = run_trace(EC_MISS_PCIE, &prof, perm, 999, &sim, &st_pcie);
    ec_sim_free(&sim);
    ec_sim_init(&sim, 25e9);
    double hr_cold = run_trace(EC_MISS_CPU, NULL, perm, 999, &sim, &st_cold);
    assert_true(sim.clock_s > 0);
    ec_sim_free(&sim);
    printf("predicted %.4f  cpu-miss %.4f (%llu copies)  pcie-miss %.4f (%llu copies)  cold %.4f\n", predicted, hr_cpu,
           (unsigned long long)st_cpu.copies, hr_pcie, (unsigned long long)st_pcie.copies, hr_cold);
    /* a profile-filled cache under CPU misses holds the frequent set: close to the prediction */
    assert_true(fabs(hr_cpu - predicted) < 0.03);
    /* PCIe misses admit everything: more copies, and no better hit rate than frequency admission */
    assert_true(st_pcie.copies > st_cpu.copies);
    assert_true(hr_pcie <= hr_cpu + 0.01);
    assert_true(st_pcie.miss_cpu == 0 || st_pcie.miss_pcie > st_pcie.miss_cpu);
    /* a cold start learns the same set online */
    assert_true(hr_cold > predicted - 0.05);
    ec_profile_free(&prof);
}

/* Replays a recorded routing trace through the cache on the simulated
 * device under the policy run_trace() drives: the slots filled from a
 * profile of the trace's own counts, per-token decay 0.995, one
 * ec_begin_token per token, then every routed layer's experts in order
 * (ec_sync after a miss copied to the GPU). Returns the measured hit rate
 * and sets *predicted to ec_profile_hit_rate's figure for the same counts
 * and n_slots. Any trace works: a synthetic one here, a real model's
 * (`strata routing --trace-out`) as a fixture. */
static double replay_trace(const routing_trace *t, int n_slots, ec_miss_mode miss, double *predicted, ec_stats *st)
{
    char err[256];
    ec_profile prof;
    assert_int_equal(routing_trace_profile(t, &prof, err, sizeof err), 0);
    *predicted = ec_profile_hit_rate(&prof, n_slots);
    ec_sim sim;
    ec_sim_init(&sim, 25e9);
    ec_config cfg = { .n_layer = t->n_layer, .n_expert = t->n_expert, .n_slots = n_slots, .slot_bytes = 1 << 20,
                      .decay = 0.995, .miss = miss };
    expert_cache *c = ec_create(&cfg, ec_sim_device(&sim), err, sizeof err);
    assert_non_null(c);
    assert_int_equal(ec_fill(c, &prof, err, sizeof err), 0);
    uint64_t uses = 0;
    for (uint64_t i = 0; i < t->n_tokens; i++) {
        ec_begin_token(c);
        for (int l = 0; l < t->n_layer; l++) {
            if (!t->routed[l]) continue;
            const int32_t *ex = routing_trace_at(t, i, l);
            for (int k = 0; k < t->n_used; k++, uses++) {
                ec_result r;
                assert_int_equal(ec_access(c, l, ex[k], &r, err, sizeof err), 0);
                if (r.where == EC_MISS_ON_GPU) assert_int_equal(ec_sync(c, err, sizeof err), 0);
            }
        }
    }
    assert_int_equal(ec_sync(c, err, sizeof err), 0);
    *st = *ec_get_stats(c);
    assert_int_equal(st->accesses, uses);
    assert_int_equal(st->hits + st->miss_cpu + st->miss_pcie, st->accesses);
    assert_int_equal(st->bytes, sim.bytes);
    double hr = ec_hit_rate(c);
    ec_free(c);
    ec_sim_free(&sim);
    ec_profile_free(&prof);
    return hr;
}

/* The synthetic Zipf router's trace, recorded into a routing trace with a
 * dense first layer (as DeepSeek's), saved and loaded back, then replayed:
 * the profile-filled cache under CPU misses keeps the frequent set, so it
 * measures about what the prediction says. */
static void test_hit_rate_replayed_trace(void **state)
{
    (void)state;
    char err[512], dir[] = "/tmp/strata-ec-XXXXXX", path[300];
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/zipf.trace", dir);
    int perm[TL][TE];
    router_perm(perm, 4242);
    bool routed[TL + 1];
    for (int l = 0; l <= TL; l++) routed[l] = l > 0;
    routing_trace rec, t;
    assert_int_equal(routing_trace_init(&rec, TL + 1, TE, TK, routed, err, sizeof err), 0);
    lcg rg = { 31337 };
    for (int i = 0; i < 4000; i++)
        for (int l = 0; l < TL; l++) {
            int32_t ex[TK];
            route(&rg, perm, l, ex);
            assert_int_equal(routing_trace_observe(&rec, l + 1, ex, TK, err, sizeof err), 0);
        }
    assert_int_equal(routing_trace_save(&rec, path, err, sizeof err), 0);
    routing_trace_free(&rec);
    assert_int_equal(routing_trace_load(&t, path, err, sizeof err), 0);
    assert_int_equal(t.n_tokens, 4000);
    double predicted, predicted_pcie;
    ec_stats st_cpu, st_pcie;
    double hr_cpu = replay_trace(&t, TSLOTS, EC_MISS_CPU, &predicted, &st_cpu);
    double hr_pcie = replay_trace(&t, TSLOTS, EC_MISS_PCIE, &predicted_pcie, &st_pcie);
    printf("replayed trace: predicted %.4f  cpu-miss %.4f  pcie-miss %.4f\n", predicted, hr_cpu, hr_pcie);
    assert_true(predicted == predicted_pcie);
    assert_true(predicted > 0.5 && predicted < 0.95);
    assert_true(fabs(hr_cpu - predicted) < 0.03);
    assert_true(hr_pcie <= hr_cpu + 0.01);
    assert_true(st_pcie.copies > st_cpu.copies);
    /* every slot for every expert: nothing misses */
    double all_pred;
    ec_stats st_all;
    double hr_all = replay_trace(&t, (TL + 1) * TE, EC_MISS_CPU, &all_pred, &st_all);
    assert_true(fabs(all_pred - 1.0) < 1e-12);
    assert_true(fabs(hr_all - 1.0) < 1e-12);
    routing_trace_free(&t);
    unlink(path);
    rmdir(dir);
}

/* The shipped model's own routing (tests/fixtures/tiny-moe/heldout.trace:
 * `strata routing` over the first 24 KB of models/tiny-moe/heldout.txt,
 * recorded from the pack `make demo` builds, the IQ3 one), replayed with a
 * quarter and half of the 24 routed experts in slots. A trained router is
 * far from uniform, so the profile-filled slots serve more than their share
 * of uses (a uniform router: exactly n_slots / 24), the prediction holds, and
 * the measured rates stay above the floors this trace gave when the model
 * shipped (models/tiny-moe/README.md), less about 0.03. */
static void test_hit_rate_tiny_moe_trace(void **state)
{
    (void)state;
    char err[512];
    routing_trace t;
    if (routing_trace_load(&t, "tests/fixtures/tiny-moe/heldout.trace", err, sizeof err)) { printf("%s\n", err); fail(); }
    assert_int_equal(t.n_expert, 8);
    assert_int_equal(t.n_used, 2);
    int routed = 0;
    for (int l = 0; l < t.n_layer; l++) routed += t.routed[l];
    assert_int_equal(routed, 3);
    assert_true(t.n_tokens > 5000);
    static const struct { int slots; double floor; } cases[] = { { 6, 0.37 }, { 12, 0.64 } };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        double predicted;
        ec_stats st;
        const double hr = replay_trace(&t, cases[i].slots, EC_MISS_CPU, &predicted, &st);
        const double uniform = cases[i].slots / 24.0;
        printf("tiny-moe held-out trace (%llu tokens), %d of 24 experts in slots: predicted %.4f, measured %.4f "
               "(a uniform router: %.4f; floor %.2f)\n",
               (unsigned long long)t.n_tokens, cases[i].slots, predicted, hr, uniform, cases[i].floor);
        assert_true(predicted > uniform + 0.05);
        assert_true(fabs(hr - predicted) < 0.05);
        assert_true(hr >= cases[i].floor);
    }
    routing_trace_free(&t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sizes_and_plan),
        cmocka_unit_test(test_miss_decision),
        cmocka_unit_test(test_fill_allocates_top_slots),
        cmocka_unit_test(test_scores_decay),
        cmocka_unit_test(test_eviction_order_cpu),
        cmocka_unit_test(test_eviction_order_pcie),
        cmocka_unit_test(test_pins_and_prefetch),
        cmocka_unit_test(test_profile_round_trip),
        cmocka_unit_test(test_profile_hostile),
        cmocka_unit_test(test_profile_dense_lead),
        cmocka_unit_test(test_hit_rate_synthetic_trace),
        cmocka_unit_test(test_hit_rate_replayed_trace),
        cmocka_unit_test(test_hit_rate_tiny_moe_trace),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
