/* cli_bench.c: `strata bench`: prefill and decode tokens/s of a pack, each
 * the median of -r timed runs with their spread, and decode against the
 * floor that memory read bandwidth sets (itself the median of -r sweeps).
 * A single run is one sample of a noisy machine: the spread says how much
 * the figure can be trusted, and a warning says when it cannot. */
#include "runtime/cli/cli.h"

#include "runtime/util/hugemem.h"
#include "runtime/util/memavail.h"
#include "runtime/util/stats.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { REPS_DEFAULT = 5, REPS_MAX = 1000 };
/* Above this spread ((max - min) / median) a figure gets a warning: on a
 * quiet machine runs agree within a few per cent. */
#define SPREAD_WARN 0.10
/* The sweep: at most a quarter of the memory this process may still use
 * (the model and the OS need the rest; over a cgroup's limit the OOM killer
 * ends the run), at most SWEEP_MAX (a larger one measures nothing more),
 * and it should be at least SWEEP_MIN and 4x the L3 cache, or part of it
 * is read from cache. */
#define MiB ((size_t)1 << 20)
#define SWEEP_MAX (512 * MiB)
#define SWEEP_MIN (64 * MiB)

/* ------------------------------------------------------ read bandwidth */

/* Read bandwidth: a buffer larger than the caches summed by as many
 * threads as decode runs on (each its contiguous share, AVX2 loads where
 * the CPU has them, as tests/bench/bench_moe_floor.c measures it). One
 * thread's sweep would understate what two cores can read (on the 2-core
 * test machine by about 2x), making the "fraction of the floor" look
 * better than it is. */
typedef struct bw_share { const uint64_t *p; size_t n; int avx2; uint64_t sum; } bw_share;

static uint64_t sum_plain(const uint64_t *p, size_t n)
{
    uint64_t s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    for (size_t i = 0; i + 4 <= n; i += 4) { s0 += p[i]; s1 += p[i + 1]; s2 += p[i + 2]; s3 += p[i + 3]; }
    return s0 + s1 + s2 + s3;
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
__attribute__((target("avx2"))) static uint64_t sum_avx2(const uint64_t *p, size_t n)
{
    __m256i s0 = _mm256_setzero_si256(), s1 = s0, s2 = s0, s3 = s0;
    for (size_t i = 0; i + 16 <= n; i += 16) {
        s0 = _mm256_add_epi64(s0, _mm256_loadu_si256((const __m256i *)(p + i)));
        s1 = _mm256_add_epi64(s1, _mm256_loadu_si256((const __m256i *)(p + i + 4)));
        s2 = _mm256_add_epi64(s2, _mm256_loadu_si256((const __m256i *)(p + i + 8)));
        s3 = _mm256_add_epi64(s3, _mm256_loadu_si256((const __m256i *)(p + i + 12)));
    }
    s0 = _mm256_add_epi64(_mm256_add_epi64(s0, s1), _mm256_add_epi64(s2, s3));
    uint64_t t[4];
    _mm256_storeu_si256((__m256i *)t, s0);
    return t[0] + t[1] + t[2] + t[3];
}
static int have_avx2(void) { __builtin_cpu_init(); return __builtin_cpu_supports("avx2"); }
#else
static uint64_t sum_avx2(const uint64_t *p, size_t n) { return sum_plain(p, n); }
static int have_avx2(void) { return 0; }
#endif

static void *bw_thread(void *v)
{
    bw_share *b = v;
    b->sum = b->avx2 ? sum_avx2(b->p, b->n) : sum_plain(b->p, b->n);
    return NULL;
}

/* One sweep of buf's n words: bytes per second. The sums go to sink, so
 * that no compiler drops the loads. */
static double bw_sweep(const uint64_t *buf, size_t n, int threads, int avx2, volatile uint64_t *sink)
{
    enum { MAXT = 256 };
    bw_share sh[MAXT];
    pthread_t th[MAXT];
    const size_t per = n / (size_t)threads;
    int started = 1;
    const double t0 = cli_now();
    for (int t = 0; t < threads; t++) {
        sh[t] = (bw_share){ buf + per * (size_t)t, per, avx2, 0 };
        if (t > 0 && pthread_create(&th[t], NULL, bw_thread, &sh[t]) == 0) started++;
        else if (t > 0) break;
    }
    bw_thread(&sh[0]);
    for (int t = 1; t < started; t++) pthread_join(th[t], NULL);
    const double dt = cli_now() - t0;
    for (int t = 0; t < started; t++) *sink += sh[t].sum;
    return (double)(per * (size_t)started * sizeof *buf) / dt;
}

/* bw[0..sweeps) the bytes per second of each sweep of a buffer of bytes;
 * -1 when the buffer cannot be had. The buffer sits on 2 MiB boundaries
 * with huge pages asked for, as the loader places the weights decode reads,
 * and one untimed sweep goes first: on the test machine the first sweep
 * after the filling ran at half the speed of every later one (29 against
 * 54-59 GB/s on two threads), whatever the buffer's pages. */
static int read_bandwidth(size_t bytes, int threads, int sweeps, double *bw)
{
    if (threads < 1) threads = 1;
    if (threads > 256) threads = 256;
    const size_t n = bytes / sizeof(uint64_t);
    uint64_t *buf = hugemem_alloc(bytes);
    if (!buf) return -1;
    for (size_t i = 0; i < n; i++) buf[i] = i;
    const int avx2 = have_avx2();
    volatile uint64_t sink = 0;
    (void)bw_sweep(buf, n, threads, avx2, &sink);
    for (int r = 0; r < sweeps; r++) bw[r] = bw_sweep(buf, n, threads, avx2, &sink);
    free(buf);
    return 0;
}

/* The L3 cache, from cpu0's index3 ("32768K"); 0 when the CPU or the
 * system does not say. */
static size_t l3_bytes(void)
{
    char text[64];
    FILE *f = fopen("/sys/devices/system/cpu/cpu0/cache/index3/size", "r");
    if (!f) return 0;
    const int ok = fgets(text, sizeof text, f) != NULL;
    fclose(f);
    long v;
    char unit = 0;
    if (!ok || sscanf(text, "%ld%c", &v, &unit) < 1 || v <= 0) return 0;
    return (size_t)v << (unit == 'K' ? 10 : unit == 'M' ? 20 : unit == 'G' ? 30 : 0);
}

typedef struct sweep_plan {
    size_t bytes;  /* 0: too little memory left to measure */
    int known;     /* whether memavail could say what is left */
    memavail ma;
    size_t l3;     /* 0: unknown */
} sweep_plan;

static sweep_plan plan_sweep(void)
{
    sweep_plan p = { .bytes = SWEEP_MAX };
    p.known = memavail_read("", &p.ma) == 0;
    if (p.known && p.ma.bytes / 4 < SWEEP_MAX) p.bytes = (size_t)(p.ma.bytes / 4) / MiB * MiB;
    p.l3 = l3_bytes();
    return p;
}

/* The notes under the bandwidth line: why the sweep has the size it has,
 * and whether the caches can have flattered it. */
static void print_sweep_notes(const sweep_plan *p)
{
    const double avail = (double)p->ma.bytes / (double)MiB;
    if (!p->known)
        printf("  (how much memory this process may still use could not be read: the sweep is %zu MiB)\n", p->bytes / MiB);
    else if (p->bytes < SWEEP_MIN)
        printf("  (the sweep is a quarter of the %.0f MiB this process may still use, by %s: less than the %zu MiB\n"
               "  a sweep should be)\n", avail, p->ma.by, SWEEP_MIN / MiB);
    else if (p->bytes < SWEEP_MAX)
        printf("  (the sweep is a quarter of the %.0f MiB this process may still use, by %s)\n", avail, p->ma.by);
    if (p->l3 && p->bytes < 4 * p->l3)
        printf("  (the %zu MiB sweep is less than 4x the %.0f MiB L3 cache: the figure may be inflated by cache)\n",
               p->bytes / MiB, (double)p->l3 / (double)MiB);
}

/* ------------------------------------------------------ timed runs */

/* tps[0..reps) the tokens/s of reps prefills of tok from an empty context.
 * Only the first is counted in a --record-routing profile, so that the
 * profile holds one prefill and one decode whatever -r is. */
static int time_prefill(model *m, const int32_t *tok, int np, int reps, float *logits, double *tps, char *err,
                        size_t errlen)
{
    for (int r = 0; r < reps; r++) {
        model_pause_routing(m, r > 0);
        model_rewind(m, 0);
        const double t0 = cli_now();
        const int rc = model_forward(m, tok, np, logits, false, err, errlen);
        tps[r] = (double)np / (cli_now() - t0);
        if (rc) return -1;
    }
    return 0;
}

/* tps[0..reps) the tokens/s of reps decodes of ng tokens, each after the
 * prompt the last prefill left in the context. A sliding-window model
 * cannot rewind that far back (model_rewind starts it over): the prompt is
 * then evaluated again, untimed. The first decode alone is profiled. */
static int time_decode(model *m, const int32_t *tok, int np, int ng, int reps, int n_vocab, float *logits,
                       double *tps, char *err, size_t errlen)
{
    for (int r = 0; r < reps; r++) {
        model_pause_routing(m, true);
        model_rewind(m, np);
        if (model_n_past(m) != np) {
            model_rewind(m, 0);
            if (model_forward(m, tok, np, logits, false, err, errlen)) return -1;
        }
        model_pause_routing(m, r > 0);
        const double t0 = cli_now();
        for (int i = 0; i < ng; i++) {
            int32_t t = (int32_t)((i * 31 + 7) % n_vocab);
            if (model_forward(m, &t, 1, logits, false, err, errlen)) return -1;
        }
        tps[r] = (double)ng / (cli_now() - t0);
    }
    return 0;
}

/* ------------------------------------------------------ the report */

/* " (median of 5; spread 2.1 %: min 800.1, max 817.0)" after a figure
 * printed with prec decimals. */
static void print_runs(const stats_summary *s, int prec)
{
    if (s->n == 1) { printf(" (one run: -r 2 or more gives a spread)"); return; }
    printf(" (median of %d; spread %.1f %%: min %.*f, max %.*f)", s->n, 100 * s->spread, prec, s->min, prec, s->max);
}

/* The warning for a figure whose runs disagree by more than SPREAD_WARN;
 * causes lists what may be behind it. */
static void warn_spread(const char *what, const stats_summary *s, const char *causes)
{
    if (s->n < 2 || s->spread <= SPREAD_WARN) return;
    fprintf(stderr, "strata bench: warning: the %s figure is unreliable: its %d runs spread %.1f %% (more than %.0f %%); "
                    "%s can cause that\n", what, s->n, 100 * s->spread, 100 * SPREAD_WARN, causes);
}

static void print_cache(const device_stats *ds, const device_stats *ds0)
{
    const ec_stats *a = &ds->cache, *b = &ds0->cache;
    const uint64_t acc = a->accesses - b->accesses, hits = a->hits - b->hits;
    printf("cache slots %d of %lld experts, miss %s, dense %.2f MiB in VRAM\n", ds->n_slots,
           (long long)ds->n_experts, ds->miss, (double)ds->dense_bytes / 1048576.0);
    printf("cache decode: hit rate %.3f (%llu of %llu), bytes moved %llu, misses cpu %llu pcie %llu, "
           "miss latency %.3f ms mean\n",
           acc ? (double)hits / (double)acc : 0.0, (unsigned long long)hits, (unsigned long long)acc,
           (unsigned long long)(a->bytes - b->bytes), (unsigned long long)(a->miss_cpu - b->miss_cpu),
           (unsigned long long)(a->miss_pcie - b->miss_pcie),
           a->miss_timed > b->miss_timed ? 1e3 * (a->miss_seconds - b->miss_seconds) / (double)(a->miss_timed - b->miss_timed) : 0.0);
    printf("cache total: hit rate %.3f, bytes moved %llu\n", ds->hit_rate, (unsigned long long)a->bytes);
}

/* The RAM tier over the decode runs (a..b): its hit rate, what it read,
 * the disk's bandwidth measured the way misses read (whole experts, direct
 * I/O, the tier's 4 threads), and the floor those set: the bytes the
 * misses must read per token at that bandwidth (a prediction that went
 * unused is not counted: it is the tier's own waste), plus the weights
 * read from memory at the memory floor. */
static void print_tier(expert_tier *t, const tier_stats *a, const tier_stats *b, long ng, int reps, double dec_tps,
                       double mem_bw, double active, int n_meas)
{
    const uint64_t acc = b->accesses - a->accesses, hits = b->hits - a->hits, reads = b->reads - a->reads;
    const double tokens = (double)ng * reps, read = (double)(b->bytes_read - a->bytes_read);
    const double per_read = reads ? read / (double)reads : 0, miss_bytes = (double)(acc - hits) * per_read / tokens;
    printf("tier: %d of %lld routed experts in memory (%.2f MiB a slot), the others read from experts.bin (%s)\n",
           b->n_slots, (long long)b->n_experts, (double)b->slot_bytes / (double)MiB,
           b->direct_io ? "direct I/O" : "buffered reads, pages dropped");
    printf("tier decode: hit rate %.3f (%llu of %llu), %llu reads, %.1f MiB read per token (misses: %.1f), waited "
           "%.2f ms per token, %llu bounce reads\n",
           acc ? (double)hits / (double)acc : 0.0, (unsigned long long)hits, (unsigned long long)acc,
           (unsigned long long)reads, read / tokens / (double)MiB, miss_bytes / (double)MiB,
           1e3 * (b->stall_seconds - a->stall_seconds) / tokens, (unsigned long long)(b->bounces - a->bounces));
    const uint64_t pf = b->prefetches - a->prefetches, pfh = b->prefetch_hits - a->prefetch_hits;
    printf("tier prefetch: %llu reads started from the next layer's router applied early, %llu of them used (%.1f %%)\n",
           (unsigned long long)pf, (unsigned long long)pfh, pf ? 100.0 * (double)pfh / (double)pf : 0.0);
    char err[256];
    const double disk = tier_measure_reads(t, n_meas, 4, err, sizeof err);
    if (disk <= 0) { fprintf(stderr, "strata bench: the disk read measurement failed: %s\n", err); return; }
    printf("disk read bandwidth (experts.bin, %d whole experts on 4 threads, as misses read): %.2f GB/s\n", n_meas,
           disk / 1e9);
    if (mem_bw <= 0 || tokens <= 0) return;
    const double per_token = miss_bytes / disk + active / mem_bw;
    printf("tier floor: %.1f tokens/s (the misses' bytes at the disk's rate plus the active bytes at memory's); "
           "decode (median) is %.3f of it\n", 1.0 / per_token, dec_tps * per_token);
}

static void bench_usage(FILE *fp)
{
    fprintf(fp, "usage: strata bench PACK [-p N] [-n N] [-r|--repetitions N] [-t|--threads N] [-c|--ctx N]\n"
                "                    [--device auto|cpu|cuda] [--vram-reserve SIZE] [--miss cpu|pcie|auto]\n"
                "                    [--profile FILE] [--record-routing FILE]\n"
                "                    [--draft ngram|mtp [--draft-max N] [--draft-prompt TEXT] [--draft-warmup N]]\n"
                "  Times prefill of -p tokens (default 128) and decode of -n tokens (default 32) after\n"
                "  the prompt, with an f16 KV cache, each -r times (default 5) after one untimed warm-up\n"
                "  pass, and prints for each the median tokens/s, the runs' min and max, and their\n"
                "  spread = (max - min) / median. Then the weight bytes one decode step reads, the memory\n"
                "  read bandwidth (the median of -r sweeps, after an untimed one, of a buffer of at most\n"
                "  512 MiB and at most a quarter of the memory this process may still use, cgroup limits\n"
                "  included; a buffer under 4x the L3 cache is noted), and the median decode speed as a\n"
                "  fraction of the floor that bandwidth sets. A spread over 10 %% gets a warning on stderr:\n"
                "  that figure is unreliable (other load, CPU frequency scaling, memory bandwidth that\n"
                "  moves from second to second, as on many shared virtual machines, or too few tokens:\n"
                "  raise -n or -p).\n"
                "  On CUDA the floor uses the GPU's measured copy bandwidth, and the expert cache's hit\n"
                "  rate, bytes moved and miss latency over the decode runs are printed (\"cache\" lines;\n"
                "  absent on the CPU). --record-routing counts the first timed prefill and decode.\n"
                "  With --draft: greedy generation of -n tokens after --draft-prompt TEXT (default the\n"
                "  -p prompt), plain and speculative in turn, -r times each; the speed of each, their\n"
                "  ratio, the guesses kept, and a check that both gave the same tokens (exit 1 if not).\n"
                DRAFT_HELP
                "  --draft-prompt TEXT  the prompt of the --draft comparison (text that repeats itself\n"
                "                   shows what prompt lookup gains)\n"
                "  --draft-warmup N  first extend that prompt with the model's own N-token greedy\n"
                "                   continuation (untimed): the comparison then measures a long\n"
                "                   generation's later part (default 0)\n"
                DEVICE_HELP);
}

/* The CPU's read bandwidth in bytes/s, the median of reps sweeps (runs:
 * room for reps), with its line and notes printed; 0 when it could not be
 * measured, which is said instead. */
static double cpu_bandwidth(int nt, int reps, double *runs, stats_summary *s)
{
    const sweep_plan p = plan_sweep();
    if (p.bytes == 0) {
        printf("memory read bandwidth: not measured: this process may use only %.1f MiB more (by %s), and a sweep\n"
               "  takes at most a quarter of that\n", (double)p.ma.bytes / (double)MiB, p.ma.by);
        return 0;
    }
    if (read_bandwidth(p.bytes, nt, reps, runs)) {
        printf("memory read bandwidth: not measured: no memory for a %zu MiB sweep\n", p.bytes / MiB);
        return 0;
    }
    for (int r = 0; r < reps; r++) runs[r] /= 1e9;
    *s = stats_summarize(runs, reps);
    printf("memory read bandwidth (%d thread%s as decode, %zu MiB sweep): %.2f GB/s", nt, nt == 1 ? "" : "s",
           p.bytes / MiB, s->median);
    print_runs(s, 2);
    printf("\n");
    print_sweep_notes(&p);
    return s->median * 1e9;
}

typedef struct bench_opts {
    const char *pack;
    long np, ng, reps, threads, ctx;
    device_opts dev;
    spec_params draft;
    const char *draft_prompt;
    long draft_warmup;
} bench_opts;

/* -1 to go on and measure; otherwise the exit status (0 after --help, 2
 * for bad arguments, said on stderr). */
static int bench_args(int argc, char **argv, bench_opts *o)
{
    *o = (bench_opts){ .np = 128, .ng = 32, .reps = REPS_DEFAULT };
    device_opts_default(&o->dev);
    cli_draft_default(&o->draft);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) { bench_usage(stdout); return 0; }
        if (a[0] != '-') {
            if (o->pack) { cli_opt_bad("bench", a, NULL); bench_usage(stderr); return 2; }
            o->pack = a;
            continue;
        }
        i++;
        int dr = v ? cli_device_arg("bench", &o->dev, a, v) : 0;
        if (dr == 0) dr = cli_draft_arg("bench", &o->draft, a, v);
        if (dr < 0) { bench_usage(stderr); return 2; }
        if (dr > 0) continue;
        int bad;
        if (!v) bad = cli_opt_bad("bench", a, NULL);
        else if (!strcmp(a, "-p")) bad = cli_opt_int("bench", a, v, 1, 1 << 20, &o->np);
        else if (!strcmp(a, "-n")) bad = cli_opt_int("bench", a, v, 1, 1 << 20, &o->ng);
        else if (!strcmp(a, "-r") || !strcmp(a, "--repetitions")) bad = cli_opt_int("bench", a, v, 1, REPS_MAX, &o->reps);
        else if (!strcmp(a, "-c") || !strcmp(a, "--ctx")) bad = cli_opt_int("bench", a, v, 2, 1 << 24, &o->ctx);
        else if (cli_is_threads(a)) bad = cli_opt_int("bench", a, v, 0, 1024, &o->threads);
        else if (!strcmp(a, "--draft-prompt")) { o->draft_prompt = v; bad = 0; }
        else if (!strcmp(a, "--draft-warmup")) bad = cli_opt_int("bench", a, v, 0, 1 << 20, &o->draft_warmup);
        else bad = cli_opt_bad("bench", a, NULL);
        if (bad) { bench_usage(stderr); return 2; }
    }
    if (!o->pack) { fprintf(stderr, "strata bench: no PACK given\n"); bench_usage(stderr); return 2; }
    if ((o->draft_prompt || o->draft_warmup) && o->draft.kind == SPEC_NONE) {
        fprintf(stderr, "strata bench: --draft-prompt and --draft-warmup need --draft ngram or mtp\n");
        return 2;
    }
    return -1;
}

/* -p plus -n beyond the context: cut to fit, and say so. */
static void fit_context(bench_opts *o, long n_ctx)
{
    if (o->np + o->ng <= n_ctx) return;
    const long np0 = o->np, ng0 = o->ng;
    if (o->np < n_ctx) o->ng = n_ctx - o->np;
    else { o->np = n_ctx / 2; o->ng = n_ctx - o->np; }
    fprintf(stderr, "strata bench: -p %ld plus -n %ld exceed the context of %ld tokens; measuring -p %ld -n %ld\n",
            np0, ng0, n_ctx, o->np, o->ng);
}

/* Everything after the timed runs: the figures, the floor, the cache, and
 * last the warnings, so that they follow what they are about. */
static void report(model *m, const bench_opts *o, const device_stats *ds, const device_stats *ds0,
                   stats_summary pre, stats_summary dec, double *bw_runs, expert_tier *tier, const tier_stats *ts0,
                   const tier_stats *ts1)
{
    const int nt = model_n_threads(m);
    const double active = (double)model_active_bytes(m);
    printf("kernels %s\n", ds->on_gpu ? "cuda" : model_kernels_name(m));
    if (ds->on_gpu) printf("device %s\n", ds->name);
    printf("prefill %ld tokens: %.1f tokens/s", o->np, pre.median);
    print_runs(&pre, 1);
    printf(", after one untimed warm-up pass\n");
    printf("decode  %ld tokens: %.1f tokens/s", o->ng, dec.median);
    print_runs(&dec, 1);
    printf("\n");
    printf("active weight bytes per token: %.0f (%.2f MiB)\n", active, active / 1048576.0);
    stats_summary bws = { 0 };
    double bw = ds->on_gpu ? ds->bandwidth : 0;
    if (bw > 0) printf("memory read bandwidth (GPU, device-to-device copy): %.2f GB/s\n", bw / 1e9);
    else bw = cpu_bandwidth(nt, (int)o->reps, bw_runs, &bws);
    if (bw > 0) {
        const double floor_tps = bw / active;
        printf("  (the floor: decode reads every active weight byte once per token, at best at this rate)\n");
        printf("bandwidth floor: %.1f tokens/s; decode (median) is %.3f of it%s\n", floor_tps, dec.median / floor_tps,
               !ds->on_gpu && active < 64.0 * 1048576 ? " (weights fit in cache: not memory-bound, the fraction can exceed 1)" : "");
    }
    if (ds->on_gpu) print_cache(ds, ds0);
    if (tier) {
        const int n_meas = ts1->n_experts < 64 ? (int)ts1->n_experts : 64;
        print_tier(tier, ts0, ts1, o->ng, (int)o->reps, dec.median, bw, active, n_meas);
    }
    fflush(stdout);
    warn_spread("prefill", &pre, "other load on the machine, CPU frequency scaling or too few tokens per run (raise -p)");
    warn_spread("decode", &dec,
                "other load on the machine, CPU frequency scaling, the machine's memory bandwidth moving (a decode "
                "near its floor moves with it; common on shared virtual machines) or too few tokens per run (raise -n)");
    warn_spread("bandwidth", &bws,
                "other load on the machine, CPU frequency scaling or the machine's memory bandwidth moving (common on "
                "shared virtual machines)");
}

/* ------------------------------------------------------ speculative decoding */

/* Greedy generation of ng tokens after prompt[0..np), plain (dp NULL) or
 * with the drafter dp: its tokens in out, tokens/s after the first (which
 * comes from the prompt's logits) in *tps, the drafter's stats in *st. */
static int time_greedy(model *m, const int32_t *prompt, int np, int ng, const spec_params *dp, float *logits,
                       int32_t *out, double *tps, spec_stats *st, char *err, size_t errlen)
{
    sampler_params sp = sampler_default_params();
    sp.temp = 0.0f;
    sampler *s = sampler_create(&sp, model_hp(m)->n_vocab);
    spec_ctx *c = NULL;
    int rc = -1;
    memset(st, 0, sizeof *st);
    if (!s) { snprintf(err, errlen, "out of memory"); return -1; }
    model_rewind(m, 0);
    /* the drafter first: mtp reads the prompt's rows */
    if (dp && !(c = spec_create(m, s, dp, prompt, np, err, errlen))) goto out;
    if (model_forward(m, prompt, np, logits, false, err, errlen)) goto out;
    for (int i = 0; i < np; i++) sampler_accept(s, prompt[i]);
    const double t0 = cli_now();
    out[0] = sampler_sample(s, logits);
    sampler_accept(s, out[0]);
    if (c && spec_push(c, out[0])) { snprintf(err, errlen, "out of memory"); goto out; }
    for (int n = 1; n < ng; n++) {
        if (c) {
            const int r = spec_next(c, &out[n], NULL, err, errlen);
            if (r) { if (r > 0) snprintf(err, errlen, "the context is full"); goto out; }
            continue;
        }
        if (model_forward(m, &out[n - 1], 1, logits, false, err, errlen)) goto out;
        out[n] = sampler_sample(s, logits);
        sampler_accept(s, out[n]);
    }
    *tps = (double)(ng - 1) / (cli_now() - t0);
    if (c) *st = spec_get_stats(c);
    rc = 0;
out:
    spec_free(c);
    sampler_free(s);
    return rc;
}

/* The --draft comparison: plain and speculative greedy runs in turn, the
 * same tokens from both, each figure the median of reps. 0, 1 when the
 * tokens differ (said on stderr), -1 on a failure (in err). */
static int bench_draft(cli_model *cm, const bench_opts *o, const int32_t *bench_tok, float *logits, char *err,
                       size_t errlen)
{
    model *m = cm->m;
    int32_t *ids = NULL, *a = NULL, *b = NULL;
    size_t n_ids = 0;
    double *runs = malloc((size_t)o->reps * 2 * sizeof *runs);
    int rc = -1;
    if (o->draft_prompt) {
        if (tokenizer_encode(loader_tokenizer(cm->pack), o->draft_prompt, strlen(o->draft_prompt), true, false, &ids,
                             &n_ids) || n_ids == 0) {
            snprintf(err, errlen, "--draft-prompt gives no tokens");
            goto out;
        }
    } else {
        n_ids = (size_t)o->np;
        ids = malloc(n_ids * sizeof *ids);
        if (ids) memcpy(ids, bench_tok, n_ids * sizeof *ids);
    }
    if (o->draft_warmup > 0 && ids) {
        const long w = o->draft_warmup, have = model_n_ctx(m) - (long)n_ids;
        if (w + 2 > have) {
            snprintf(err, errlen, "--draft-warmup %ld after a %zu-token prompt leaves no room in the context of %d (-c N)",
                     w, n_ids, model_n_ctx(m));
            goto out;
        }
        int32_t *g = realloc(ids, (n_ids + (size_t)w + 1) * sizeof *ids);
        if (!g) { snprintf(err, errlen, "out of memory"); goto out; }
        ids = g;
        double t;
        spec_stats st0;
        if (time_greedy(m, ids, (int)n_ids, (int)w, NULL, logits, ids + n_ids, &t, &st0, err, errlen)) goto out;
        n_ids += (size_t)w;
    }
    long ng = o->ng;
    const long room = model_n_ctx(m) - (long)n_ids;
    if (room < 2) { snprintf(err, errlen, "the --draft prompt (%zu tokens) leaves no room in the context", n_ids); goto out; }
    if (ng > room) ng = room;
    a = malloc((size_t)ng * sizeof *a);
    b = malloc((size_t)ng * sizeof *b);
    if (!ids || !a || !b || !runs) { snprintf(err, errlen, "out of memory"); goto out; }
    spec_stats st = { 0 }, sum = { 0 };
    for (int r = 0; r < (int)o->reps; r++) {
        if (time_greedy(m, ids, (int)n_ids, (int)ng, NULL, logits, a, &runs[r], &st, err, errlen) ||
            time_greedy(m, ids, (int)n_ids, (int)ng, &o->draft, logits, b, &runs[o->reps + r], &st, err, errlen))
            goto out;
        sum.steps += st.steps;
        sum.drafted += st.drafted;
        sum.accepted += st.accepted;
        if (memcmp(a, b, (size_t)ng * sizeof *a) != 0) {
            long at = 0;
            while (a[at] == b[at]) at++;
            fprintf(stderr, "strata bench: speculative decoding changed the greedy output at token %ld (%d, plain %d)\n",
                    at, b[at], a[at]);
            rc = 1;
            goto out;
        }
    }
    const stats_summary plain = stats_summarize(runs, (int)o->reps), spec = stats_summarize(runs + o->reps, (int)o->reps);
    printf("draft %s (at most %d a step), %zu-token prompt (%ld of them the model's own continuation), %ld tokens "
           "greedy:\n", spec_kind_name(o->draft.kind), o->draft.max_draft, n_ids, o->draft_warmup, ng);
    printf("  plain       %.1f tokens/s", plain.median);
    print_runs(&plain, 1);
    printf("\n  speculative %.1f tokens/s", spec.median);
    print_runs(&spec, 1);
    printf("\n  speed-up %.2fx; %ld of %ld guessed tokens kept (%.1f %%), %.2f tokens a forward pass; the same tokens\n",
           plain.median > 0 ? spec.median / plain.median : 0.0, sum.accepted, sum.drafted,
           sum.drafted ? 100.0 * (double)sum.accepted / (double)sum.drafted : 0.0,
           sum.steps ? (double)(sum.steps + sum.accepted) / (double)sum.steps : 0.0);
    fflush(stdout);
    warn_spread("plain greedy decode", &plain, "other load on the machine or too few tokens (raise -n)");
    warn_spread("speculative decode", &spec, "other load on the machine or too few tokens (raise -n)");
    rc = 0;
out:
    free(ids);
    free(a);
    free(b);
    free(runs);
    return rc;
}

int cmd_bench(int argc, char **argv)
{
    bench_opts o;
    const int arc = bench_args(argc, argv, &o);
    if (arc >= 0) return arc;
    cli_model cm;
    if (cli_open_dev(&cm, o.pack, (int)o.threads, KV_F16, (int)o.ctx, &o.dev)) return 1;
    const model_hparams *hp = loader_hparams(cm.pack);
    fit_context(&o, model_n_ctx(cm.m));
    const int np = (int)o.np, ng = (int)o.ng, reps = (int)o.reps;
    int32_t *tok = malloc((size_t)np * sizeof *tok);
    float *logits = malloc((size_t)hp->n_vocab * sizeof *logits);
    double *runs = malloc((size_t)reps * 3 * sizeof *runs); /* prefill, decode, bandwidth */
    char err[512];
    int rc = 1;
    if (!tok || !logits || !runs) { fprintf(stderr, "strata: out of memory\n"); goto out; }
    for (int i = 0; i < np; i++) tok[i] = (int32_t)(((long)i * 7919 + 13) % hp->n_vocab); /* any fixed ids */
    /* One untimed pass first: the weights are mmapped, and the first touch
     * of every page (a page fault, a read when not cached) is a cost of
     * starting, not of prefill; llama-bench warms up likewise. */
    model_pause_routing(cm.m, true);
    if (model_forward(cm.m, tok, np, logits, false, err, sizeof err)) goto fail;
    if (time_prefill(cm.m, tok, np, reps, logits, runs, err, sizeof err)) goto fail;
    device_stats ds0, ds;
    tier_stats ts0 = { 0 }, ts1 = { 0 };
    device_get_stats(cm.m, &ds0);
    if (cm.tier) tier_get_stats(cm.tier, &ts0);
    if (time_decode(cm.m, tok, np, ng, reps, hp->n_vocab, logits, runs + reps, err, sizeof err)) goto fail;
    device_get_stats(cm.m, &ds);
    if (cm.tier) tier_get_stats(cm.tier, &ts1);
    model_pause_routing(cm.m, false);
    report(cm.m, &o, &ds, &ds0, stats_summarize(runs, reps), stats_summarize(runs + reps, reps), runs + 2 * reps,
           cm.tier, &ts0, &ts1);
    rc = cli_save_routing(&cm, &o.dev) ? 1 : 0;
    if (rc == 0 && o.draft.kind != SPEC_NONE) {
        if (cli_draft_model("bench", &cm, &o.draft)) { rc = 1; goto out; }
        const int dr = bench_draft(&cm, &o, tok, logits, err, sizeof err);
        if (dr < 0) goto fail;
        if (dr > 0) rc = 1;
    }
    goto out;
fail:
    fprintf(stderr, "strata: %s\n", err);
out:
    free(tok);
    free(logits);
    free(runs);
    cli_close(&cm);
    return rc;
}
