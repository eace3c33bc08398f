/* cli_bench.c: `strata bench`: prefill and decode tokens/s of a pack, and
 * decode against the floor that memory bandwidth sets. */
#include "runtime/cli/cli.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Read bandwidth: a buffer far larger than the caches summed by as many
 * threads as decode runs on (each its contiguous share, AVX2 loads where
 * the CPU has them, as tests/bench/bench_moe_floor.c measures it); the
 * best of three sweeps. One thread's sweep would understate what two cores
 * can read (on the 2-core test machine by about 2x), making the "fraction
 * of the floor" look better than it is. */
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

static double read_bandwidth(size_t bytes, int threads)
{
    enum { MAXT = 256 };
    if (threads < 1) threads = 1;
    if (threads > MAXT) threads = MAXT;
    size_t n = bytes / sizeof(uint64_t);
    uint64_t *buf = malloc(n * sizeof *buf);
    if (!buf) return 0;
    for (size_t i = 0; i < n; i++) buf[i] = i;
    bw_share sh[MAXT];
    pthread_t th[MAXT];
    const int avx2 = have_avx2();
    double best = 0;
    volatile uint64_t sink = 0;
    for (int rep = 0; rep < 3; rep++) {
        int started = 1;
        double t0 = cli_now();
        for (int t = 0; t < threads; t++) {
            sh[t] = (bw_share){ buf + n / (size_t)threads * (size_t)t, n / (size_t)threads, avx2, 0 };
            if (t > 0 && pthread_create(&th[t], NULL, bw_thread, &sh[t]) == 0) started++;
            else if (t > 0) break;
        }
        bw_thread(&sh[0]);
        for (int t = 1; t < started; t++) pthread_join(th[t], NULL);
        const double dt = cli_now() - t0;
        for (int t = 0; t < started; t++) sink += sh[t].sum;
        const double bw = (double)(n / (size_t)threads * (size_t)started * sizeof *buf) / dt;
        if (bw > best) best = bw;
    }
    (void)sink;
    free(buf);
    return best;
}

static void bench_usage(FILE *fp)
{
    fprintf(fp, "usage: strata bench PACK [-p N] [-n N] [-t|--threads N] [-c|--ctx N] [--device auto|cpu|cuda]\n"
                "                    [--vram-reserve SIZE] [--miss cpu|pcie|auto] [--profile FILE] [--record-routing FILE]\n"
                "  Prefill of N tokens (default 128; timed after one untimed warm-up pass) and decode of\n"
                "  N tokens (default 32) with an f16 KV cache; prints tokens/s, the weight bytes one\n"
                "  decode step reads, the measured read\n"
                "  bandwidth, and decode speed as a fraction of the bandwidth floor. On CUDA the floor\n"
                "  uses the GPU's measured copy bandwidth, and the expert cache's hit rate, bytes moved\n"
                "  and miss latency are printed (\"cache\" lines; absent on the CPU).\n"
                DEVICE_HELP);
}

int cmd_bench(int argc, char **argv)
{
    const char *pack = NULL;
    long np = 128, ng = 32, threads = 0, ctx = 0;
    device_opts dev;
    device_opts_default(&dev);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) { bench_usage(stdout); return 0; }
        if (a[0] != '-') { if (pack) { cli_opt_bad("bench", a, NULL); bench_usage(stderr); return 2; } pack = a; continue; }
        i++;
        int dr = v ? cli_device_arg("bench", &dev, a, v) : 0;
        if (dr < 0) { bench_usage(stderr); return 2; }
        if (dr > 0) continue;
        int bad;
        if (!v) bad = cli_opt_bad("bench", a, NULL);
        else if (!strcmp(a, "-p")) bad = cli_opt_int("bench", a, v, 1, 1 << 20, &np);
        else if (!strcmp(a, "-n")) bad = cli_opt_int("bench", a, v, 1, 1 << 20, &ng);
        else if (!strcmp(a, "-c") || !strcmp(a, "--ctx")) bad = cli_opt_int("bench", a, v, 2, 1 << 24, &ctx);
        else if (cli_is_threads(a)) bad = cli_opt_int("bench", a, v, 0, 1024, &threads);
        else bad = cli_opt_bad("bench", a, NULL);
        if (bad) { bench_usage(stderr); return 2; }
    }
    if (!pack) { fprintf(stderr, "strata bench: no PACK given\n"); bench_usage(stderr); return 2; }
    cli_model cm;
    if (cli_open_dev(&cm, pack, (int)threads, KV_F16, (int)ctx, &dev)) return 1;
    const model_hparams *hp = loader_hparams(cm.pack);
    const long n_ctx = model_n_ctx(cm.m);
    if (np + ng > n_ctx) {
        const long np0 = np, ng0 = ng;
        if (np < n_ctx) ng = n_ctx - np;
        else { np = n_ctx / 2; ng = n_ctx - np; }
        fprintf(stderr, "strata bench: -p %ld plus -n %ld exceed the context of %ld tokens; measuring -p %ld -n %ld\n",
                np0, ng0, n_ctx, np, ng);
    }
    int32_t *tok = malloc((size_t)np * sizeof *tok);
    float *logits = malloc((size_t)hp->n_vocab * sizeof *logits);
    char err[512];
    int rc = 1;
    if (!tok || !logits) { fprintf(stderr, "strata: out of memory\n"); goto out; }
    for (long i = 0; i < np; i++) tok[i] = (int32_t)((i * 7919 + 13) % hp->n_vocab); /* any fixed ids */
    /* One untimed pass first: the weights are mmapped, and the first touch
     * of every page (a page fault, a read when not cached) is a cost of
     * starting, not of prefill; llama-bench warms up likewise. */
    model_pause_routing(cm.m, true);
    if (model_forward(cm.m, tok, (int)np, logits, false, err, sizeof err)) { fprintf(stderr, "strata: %s\n", err); goto out; }
    model_pause_routing(cm.m, false);
    model_rewind(cm.m, 0);
    double t0 = cli_now();
    if (model_forward(cm.m, tok, (int)np, logits, false, err, sizeof err)) { fprintf(stderr, "strata: %s\n", err); goto out; }
    double t_pre = cli_now() - t0;
    device_stats ds0;
    device_get_stats(cm.m, &ds0);
    t0 = cli_now();
    for (long i = 0; i < ng; i++) {
        int32_t t = (int32_t)((i * 31 + 7) % hp->n_vocab);
        if (model_forward(cm.m, &t, 1, logits, false, err, sizeof err)) { fprintf(stderr, "strata: %s\n", err); goto out; }
    }
    double t_dec = cli_now() - t0;
    device_stats ds;
    device_get_stats(cm.m, &ds);
    const int nt = model_n_threads(cm.m);
    const double active = (double)model_active_bytes(cm.m);
    const double bw = ds.on_gpu && ds.bandwidth > 0 ? ds.bandwidth : read_bandwidth((size_t)512 << 20, nt);
    const double dec_tps = (double)ng / t_dec, floor_tps = bw / active;
    printf("kernels %s\n", ds.on_gpu ? "cuda" : model_kernels_name(cm.m));
    if (ds.on_gpu) printf("device %s\n", ds.name);
    printf("prefill %ld tokens: %.1f tokens/s (after one untimed warm-up pass)\n", np, (double)np / t_pre);
    printf("decode  %ld tokens: %.1f tokens/s\n", ng, dec_tps);
    printf("active weight bytes per token: %.0f (%.2f MiB)\n", active, active / 1048576.0);
    if (ds.on_gpu)
        printf("memory read bandwidth (GPU, device-to-device copy): %.2f GB/s\n", bw / 1e9);
    else
        printf("memory read bandwidth (%d thread%s as decode, 512 MiB sweep, best of 3): %.2f GB/s\n", nt,
               nt == 1 ? "" : "s", bw / 1e9);
    printf("  (the floor: decode reads every active weight byte once per token, at best at this rate)\n");
    printf("bandwidth floor: %.1f tokens/s; decode is %.3f of it%s\n", floor_tps, dec_tps / floor_tps,
           !ds.on_gpu && active < 64.0 * 1048576 ? " (weights fit in cache: not memory-bound, the fraction can exceed 1)" : "");
    if (ds.on_gpu) {
        const ec_stats *a = &ds.cache, *b = &ds0.cache;
        const uint64_t acc = a->accesses - b->accesses, hits = a->hits - b->hits;
        printf("cache slots %d of %lld experts, miss %s, dense %.2f MiB in VRAM\n", ds.n_slots,
               (long long)ds.n_experts, ds.miss, (double)ds.dense_bytes / 1048576.0);
        printf("cache decode: hit rate %.3f (%llu of %llu), bytes moved %llu, misses cpu %llu pcie %llu, "
               "miss latency %.3f ms mean\n",
               acc ? (double)hits / (double)acc : 0.0, (unsigned long long)hits, (unsigned long long)acc,
               (unsigned long long)(a->bytes - b->bytes), (unsigned long long)(a->miss_cpu - b->miss_cpu),
               (unsigned long long)(a->miss_pcie - b->miss_pcie),
               a->miss_timed > b->miss_timed ? 1e3 * (a->miss_seconds - b->miss_seconds) / (double)(a->miss_timed - b->miss_timed) : 0.0);
        printf("cache total: hit rate %.3f, bytes moved %llu\n", ds.hit_rate, (unsigned long long)a->bytes);
    }
    rc = cli_save_routing(&cm, &dev) ? 1 : 0;
out:
    free(tok);
    free(logits);
    cli_close(&cm);
    return rc;
}
