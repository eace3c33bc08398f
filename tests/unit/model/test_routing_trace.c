/* test_routing_trace.c: the routing trace (runtime/model/routing_trace.h)
 * and its statistics (routing_stats.h) on small hand-made traces whose
 * answers are worked out in the comments: entropy, the top-25% share
 * (ceil(n_expert / 4) experts), reuse at the window edges (a gap of n
 * counts, n + 1 does not; only tokens with t + n < T), the mean row; the
 * rows a batched pass fills; the file round trip, byte for byte, never
 * overwritten; and hostile files refused with "<path>:<line>: <problem>". */
#include "tests/lib/test_util.h"

#include "runtime/model/routing_stats.h"
#include "runtime/model/routing_trace.h"

#include <dirent.h>
#include <math.h>

#define NEAR(a, b) assert_true(fabs((a) - (b)) < 1e-12)

static const int W[] = { 1, 2, 3, 4, 7, 8 };

/* 1 layer, 4 experts, 1 used, 8 tokens: 0 0 1 0 2 0 1 3 */
static void trace_a(routing_trace *t)
{
    char err[256];
    static const int32_t e[8] = { 0, 0, 1, 0, 2, 0, 1, 3 };
    assert_int_equal(routing_trace_init(t, 1, 4, 1, NULL, err, sizeof err), 0);
    for (int i = 0; i < 8; i++) assert_int_equal(routing_trace_observe(t, 0, &e[i], 1, err, sizeof err), 0);
    assert_int_equal(t->n_tokens, 8);
}

static void test_stats_one_layer(void **state)
{
    (void)state;
    char err[256];
    routing_trace t;
    trace_a(&t);
    routing_layer_stats s;
    assert_int_equal(routing_stats_layer(&t, 0, W, 6, &s, err, sizeof err), 0);
    assert_int_equal(s.tokens, 8);
    /* uses 4, 2, 1, 1 of 8: p = 1/2, 1/4, 1/8, 1/8: H = 1/2 + 2/4 + 3/8 + 3/8 = 1.75 bits, of log2(4) = 2 */
    NEAR(s.entropy_bits, 1.75);
    NEAR(s.uniform_bits, 2.0);
    /* ceil(4/4) = 1 expert: expert 0's 4 of 8 uses */
    assert_int_equal(s.top_experts, 1);
    NEAR(s.top_share, 0.5);
    /* next use of each token's expert: t0 +1, t1 +2, t2 +4, t3 +2, t4-t7 never */
    NEAR(s.reuse[0], 1.0 / 7.0); /* n 1: t0..t6, only t0 */
    NEAR(s.reuse[1], 3.0 / 6.0); /* n 2: t0..t5: t0, t1, t3 */
    NEAR(s.reuse[2], 3.0 / 5.0); /* n 3: t0..t4: t2's gap of 4 misses; t5 (never) is past the edge */
    NEAR(s.reuse[3], 4.0 / 4.0); /* n 4: t0..t3: t2's gap of 4 counts */
    NEAR(s.reuse[4], 1.0);       /* n 7: t0 only */
    assert_true(isnan(s.reuse[5])); /* n 8: no t with t + 8 < 8 */
    assert_int_equal(s.window[3], 4);
    /* refusals */
    assert_int_equal(routing_stats_layer(&t, 1, W, 1, &s, err, sizeof err), -1);
    assert_non_null(strstr(err, "layer 1 does not route"));
    assert_int_equal(routing_stats_layer(&t, 0, W, 0, &s, err, sizeof err), -1);
    const int zero = 0;
    assert_int_equal(routing_stats_layer(&t, 0, &zero, 1, &s, err, sizeof err), -1);
    assert_non_null(strstr(err, "a window of 0 tokens"));
    routing_trace_free(&t);
}

/* 3 layers of 8 experts, 2 used, layer 1 dense; 4 tokens:
 *   layer 0: {0,1} every token; layer 2: {0,1} {2,3} {4,5} {6,7} */
static void trace_b(routing_trace *t)
{
    char err[256];
    const bool routed[3] = { true, false, true };
    assert_int_equal(routing_trace_init(t, 3, 8, 2, routed, err, sizeof err), 0);
    for (int i = 0; i < 4; i++) {
        const int32_t l0[2] = { i % 2, 1 - i % 2 }, l2[2] = { 2 * i, 2 * i + 1 };
        assert_int_equal(routing_trace_observe(t, 0, l0, 2, err, sizeof err), 0);
        assert_int_equal(routing_trace_observe(t, 2, l2, 2, err, sizeof err), 0);
    }
}

static void test_stats_layers_and_mean(void **state)
{
    (void)state;
    char err[256];
    routing_trace t;
    trace_b(&t);
    const int w[2] = { 1, 4 };
    routing_layer_stats s[2], all;
    assert_int_equal(routing_stats_layer(&t, 0, w, 2, &s[0], err, sizeof err), 0);
    assert_int_equal(routing_stats_layer(&t, 2, w, 2, &s[1], err, sizeof err), 0);
    assert_int_equal(routing_stats_layer(&t, 1, w, 2, &all, err, sizeof err), -1);  /* the dense layer */
    /* layer 0: two experts, 4 uses each: 1 bit of 3; ceil(8/4) = 2 experts take all; always reused next token */
    NEAR(s[0].entropy_bits, 1.0);
    NEAR(s[0].uniform_bits, 3.0);
    assert_int_equal(s[0].top_experts, 2);
    NEAR(s[0].top_share, 1.0);
    NEAR(s[0].reuse[0], 1.0);
    assert_true(isnan(s[0].reuse[1]));
    /* layer 2: every expert once: uniform, the top 2 hold 2 of 8, never reused */
    NEAR(s[1].entropy_bits, 3.0);
    NEAR(s[1].top_share, 0.25);
    NEAR(s[1].reuse[0], 0.0);
    routing_stats_mean(s, 2, &all);
    assert_int_equal(all.layer, -1);
    assert_int_equal(all.tokens, 4);
    NEAR(all.entropy_bits, 2.0);
    NEAR(all.top_share, 0.625);
    NEAR(all.reuse[0], 0.5);
    assert_true(isnan(all.reuse[1]));
    routing_trace_free(&t);

    /* ceil, not floor: 5 experts -> the top 2; uses 3 1 1 of 5 -> 4/5 */
    assert_int_equal(routing_trace_init(&t, 1, 5, 1, NULL, err, sizeof err), 0);
    static const int32_t e[5] = { 0, 0, 1, 0, 2 };
    for (int i = 0; i < 5; i++) assert_int_equal(routing_trace_observe(&t, 0, &e[i], 1, err, sizeof err), 0);
    assert_int_equal(routing_stats_layer(&t, 0, w, 1, &s[0], err, sizeof err), 0);
    assert_int_equal(s[0].top_experts, 2);
    NEAR(s[0].top_share, 0.8);
    routing_trace_free(&t);

    /* no tokens: no figures */
    assert_int_equal(routing_trace_init(&t, 1, 4, 1, NULL, err, sizeof err), 0);
    assert_int_equal(routing_stats_layer(&t, 0, w, 2, &s[0], err, sizeof err), 0);
    assert_true(isnan(s[0].entropy_bits) && isnan(s[0].top_share) && isnan(s[0].reuse[0]));
    routing_trace_free(&t);
}

/* The model's batched pass: layer 0 for B tokens, then layer 1 for the
 * same B; a row counts once its last layer is in. */
static void test_observe_batched(void **state)
{
    (void)state;
    char err[256];
    routing_trace t;
    assert_int_equal(routing_trace_init(&t, 2, 4, 1, NULL, err, sizeof err), 0);
    for (int32_t b = 0; b < 3; b++) assert_int_equal(routing_trace_observe(&t, 0, &b, 1, err, sizeof err), 0);
    assert_int_equal(t.n_tokens, 0);
    for (int32_t b = 0; b < 3; b++) {
        const int32_t e = 3 - b;
        assert_int_equal(routing_trace_observe(&t, 1, &e, 1, err, sizeof err), 0);
        assert_int_equal(t.n_tokens, (uint64_t)b + 1);
    }
    const int32_t d0 = 2, d1 = 0; /* a decode step */
    assert_int_equal(routing_trace_observe(&t, 0, &d0, 1, err, sizeof err), 0);
    assert_int_equal(t.n_tokens, 3);
    assert_int_equal(routing_trace_observe(&t, 1, &d1, 1, err, sizeof err), 0);
    assert_int_equal(t.n_tokens, 4);
    static const int32_t want[4][2] = { { 0, 3 }, { 1, 2 }, { 2, 1 }, { 2, 0 } };
    for (int i = 0; i < 4; i++)
        for (int l = 0; l < 2; l++) assert_int_equal(routing_trace_at(&t, (uint64_t)i, l)[0], want[i][l]);
    /* many rows: the rows grow */
    for (int i = 0; i < 1000; i++) {
        const int32_t e = i % 4;
        assert_int_equal(routing_trace_observe(&t, 0, &e, 1, err, sizeof err), 0);
        assert_int_equal(routing_trace_observe(&t, 1, &e, 1, err, sizeof err), 0);
    }
    assert_int_equal(t.n_tokens, 1004);
    assert_int_equal(routing_trace_at(&t, 1003, 1)[0], 3);
    /* refusals record nothing */
    const int32_t bad[2] = { 1, 1 }, big = 4, neg = -1;
    assert_int_equal(routing_trace_observe(&t, 2, &d0, 1, err, sizeof err), -1);
    assert_non_null(strstr(err, "layer 2 of 2"));
    assert_int_equal(routing_trace_observe(&t, 0, bad, 2, err, sizeof err), -1);
    assert_non_null(strstr(err, "2 experts routed at layer 0, the trace records 1"));
    assert_int_equal(routing_trace_observe(&t, 0, &big, 1, err, sizeof err), -1);
    assert_non_null(strstr(err, "layer 0: expert 4 of 4"));
    assert_int_equal(routing_trace_observe(&t, 0, &neg, 1, err, sizeof err), -1);
    assert_int_equal(t.next[0], 1004);
    routing_trace_free(&t);
    assert_int_equal(routing_trace_init(&t, 2, 4, 2, NULL, err, sizeof err), 0);
    assert_int_equal(routing_trace_observe(&t, 0, bad, 2, err, sizeof err), -1);
    assert_non_null(strstr(err, "expert 1 routed twice in one token"));
    routing_trace_free(&t);
    const bool none[2] = { false, false }, one[2] = { false, true };
    assert_int_equal(routing_trace_init(&t, 2, 4, 1, none, err, sizeof err), -1);
    assert_non_null(strstr(err, "none of the 2 layers routes"));
    assert_int_equal(routing_trace_init(&t, 2, 4, 5, NULL, err, sizeof err), -1);
    assert_int_equal(routing_trace_init(&t, 2, 4, 1, one, err, sizeof err), 0);
    assert_int_equal(routing_trace_observe(&t, 0, &d0, 1, err, sizeof err), -1);
    assert_non_null(strstr(err, "layer 0 does not route"));
    routing_trace_free(&t);
}

static int files_in(const char *dir)
{
    DIR *d = opendir(dir);
    int n = 0;
    for (struct dirent *e; d && (e = readdir(d));) n += e->d_name[0] != '.';
    if (d) closedir(d);
    return n;
}

static void test_file_round_trip(void **state)
{
    (void)state;
    char err[512], dir[] = "/tmp/strata-trace-XXXXXX", path[300];
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/t.trace", dir);
    routing_trace t, u;
    trace_b(&t);
    assert_int_equal(routing_trace_save(&t, path, err, sizeof err), 0);
    size_t n;
    char *text = slurp(path, &n);
    assert_non_null(text);
    assert_string_equal(text, "strata-routing-trace 1 layers 3 experts 8 used 2 tokens 4\n"
                              "0,1 - 0,1\n1,0 - 2,3\n0,1 - 4,5\n1,0 - 6,7\n");
    free(text);
    assert_int_equal(routing_trace_load(&u, path, err, sizeof err), 0);
    assert_int_equal(u.n_layer, 3);
    assert_int_equal(u.n_expert, 8);
    assert_int_equal(u.n_used, 2);
    assert_int_equal(u.n_tokens, 4);
    assert_true(u.routed[0] && !u.routed[1] && u.routed[2]);
    for (uint64_t i = 0; i < 4; i++)
        assert_memory_equal(routing_trace_at(&u, i, 0), routing_trace_at(&t, i, 0), 3 * 2 * sizeof(int32_t));
    assert_int_equal(routing_trace_at(&u, 2, 1)[0], -1);
    /* the profile of its counts */
    ec_profile p;
    assert_int_equal(routing_trace_profile(&u, &p, err, sizeof err), 0);
    assert_int_equal(p.tokens, 4);
    assert_int_equal(p.count[0], 4);
    assert_int_equal(p.count[1], 4);
    assert_int_equal(p.count[8], 0);
    assert_int_equal(p.count[16 + 7], 1);
    ec_profile_free(&p);
    /* a loaded trace takes more rows like a recorded one */
    const int32_t more[2] = { 3, 4 };
    assert_int_equal(routing_trace_observe(&u, 0, more, 2, err, sizeof err), 0);
    assert_int_equal(routing_trace_observe(&u, 2, more, 2, err, sizeof err), 0);
    assert_int_equal(u.n_tokens, 5);
    routing_trace_free(&u);
    /* never overwritten, and no temporary left behind */
    assert_int_equal(routing_trace_save(&t, path, err, sizeof err), -1);
    assert_non_null(strstr(err, "already exists"));
    assert_int_equal(files_in(dir), 1);
    assert_int_equal(routing_trace_load(&u, "/nonexistent/t.trace", err, sizeof err), -1);
    assert_non_null(strstr(err, "/nonexistent/t.trace: "));
    /* an empty trace round-trips too */
    routing_trace_free(&t);
    assert_int_equal(routing_trace_init(&t, 2, 4, 1, NULL, err, sizeof err), 0);
    unlink(path);
    assert_int_equal(routing_trace_save(&t, path, err, sizeof err), 0);
    assert_int_equal(routing_trace_load(&u, path, err, sizeof err), 0);
    assert_int_equal(u.n_tokens, 0);
    routing_trace_free(&u);
    routing_trace_free(&t);
    unlink(path);
    rmdir(dir);
}

#define HDR "strata-routing-trace 1 layers 2 experts 4 used 2 tokens "

static void test_file_hostile(void **state)
{
    (void)state;
    static const struct { const char *text, *want; } cases[] = {
        { "", "tr:1: truncated: the file is empty" },
        { "strata-routing-profile 1\nshape 1 2 1\n", "tr:1: not a strata routing trace" },
        { "strata-routing-trace 2 layers 2 experts 4 used 2 tokens 1\n", "tr:1: version 2: this strata reads version 1" },
        { "strata-routing-trace 1 layers 2 experts 4 used 5 tokens 1\n", "tr:1: 2 layers of 4 experts with 5 used is impossible" },
        { "strata-routing-trace 1 layers 0 experts 4 used 1 tokens 1\n", "impossible" },
        { "strata-routing-trace 1 layers 2 experts 4 used 2\n", "tr:1: expected 'tokens'" },
        { "strata-routing-trace 1 layers 5000 experts 4 used 2 tokens 1\n", "tr:1: layer count 5000 is above the limit 4096" },
        { HDR "99999999999\n", "tr:1: token count 99999999999 is above the limit" },
        { HDR "3 4\n", "tr:1: unexpected text '4'" },
        { HDR "-1\n", "tr:1: token count '-1' is not an unsigned decimal number" },
        { "strata-routing-trace 1 layers 4096 experts 65536 used 65536 tokens 4096\n", "tr:1: 4096 layers x 65536 experts used is above the limit of 65536 a token" },
        { "strata-routing-trace 1 layers 64 experts 64 used 64 tokens 65537\n", "tr:1: 65537 tokens x 64 layers x 64 used is above the limit of 268435456 entries" },
        { HDR "1000\n0,1 1,2\n", "tr:1: truncated: the header promises 1000 tokens of 2 layers, more than" },
        { HDR "3\n0,1 1,2\n0,1 1,2\n", "tr:4: truncated: the header promises 3 tokens, the file ends after 2" },
        { HDR "1\n0,1\n", "tr:2: missing layer 1's experts (a token line holds 2 layers)" },
        { HDR "1\n0,1  1,2\n", "tr:2: missing layer 1's experts" },
        { HDR "1\n0,9 1,2\n", "tr:2: layer 0: expert 9 of 4 (experts are 0..3)" },
        { HDR "1\n0,1 1,99999999999999999999999\n", "tr:2: expert '99999999999999999999999' is too long" },
        { HDR "1\n0 1,2\n", "tr:2: layer 0: 1 experts, the header says 2 used" },
        { HDR "1\n0,1,2 1,2\n", "tr:2: layer 0: more than 2 experts (the header says 2 used)" },
        { HDR "1\n1,1 0,2\n", "tr:2: layer 0: expert 1 twice in one token" },
        { HDR "1\n0,,1 0,2\n", "tr:2: missing expert" },
        { HDR "1\na,1 0,2\n", "tr:2: expert 'a' is not an unsigned decimal number" },
        { HDR "1\n0,1 1,2 3\n", "tr:2: unexpected text '3'" },
        { HDR "2\n- 0,1\n0,1 0,1\n", "tr:3: layer 0 is routed here, but '-' on the first token line" },
        { HDR "2\n0,1 0,1\n0,1 -\n", "tr:3: layer 1 is '-' here, but routed on the first token line" },
        { HDR "1\n- -\n", "tr:2: no layer routes to experts" },
        { HDR "1\n0,1 1,2\n0,1 1,2\n", "tr:3: text after the 1 token lines the header promises" },
        { HDR "1\r\n0,1 1,2\n", "tr:1: a NUL or CR byte" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char err[512] = "";
        routing_trace t;
        int rc = routing_trace_parse(&t, cases[i].text, strlen(cases[i].text), "tr", err, sizeof err);
        if (rc != -1 || !strstr(err, cases[i].want)) {
            print_error("case %zu: rc %d, err '%s', wanted '%s'\n", i, rc, err, cases[i].want);
            fail();
        }
        assert_null(t.ex);
        assert_null(t.routed);
    }
    /* a NUL byte inside a token line */
    static const char nul[] = HDR "1\n0,1\0 1,2\n";
    char err[256];
    routing_trace t;
    assert_int_equal(routing_trace_parse(&t, nul, sizeof nul - 1, "tr", err, sizeof err), -1);
    assert_non_null(strstr(err, "tr:2: a NUL or CR byte"));
    /* good ones: trailing blank lines, no final newline, a dense layer */
    static const char good[] = HDR "2\n0,1 3,2\n1,0 2,3\n\n";
    assert_int_equal(routing_trace_parse(&t, good, sizeof good - 1, "tr", err, sizeof err), 0);
    assert_int_equal(t.n_tokens, 2);
    assert_int_equal(routing_trace_at(&t, 1, 1)[1], 3);
    routing_trace_free(&t);
    assert_int_equal(routing_trace_parse(&t, good, sizeof good - 3, "tr", err, sizeof err), 0);
    routing_trace_free(&t);
    static const char dense[] = HDR "2\n- 3,2\n- 2,3\n";
    assert_int_equal(routing_trace_parse(&t, dense, sizeof dense - 1, "tr", err, sizeof err), 0);
    assert_false(t.routed[0]);
    assert_true(t.routed[1]);
    routing_trace_free(&t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_stats_one_layer),
        cmocka_unit_test(test_stats_layers_and_mean),
        cmocka_unit_test(test_observe_batched),
        cmocka_unit_test(test_file_round_trip),
        cmocka_unit_test(test_file_hostile),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
