/* host_steadiness.c: a diagnostic (not built by make, not run by CI): how
 * steady this machine is for work bound by memory bandwidth against work
 * bound by the core, measured the way strata bench and llama-bench measure a
 * decode: three timed windows one after another, their spread (max - min)
 * over their median.
 *   host_steadiness [-b BLOCKS] [-w SECONDS] [-m MIB]
 * Each block times three windows of reading a buffer of MIB MiB (default
 * 1200, about the size of tests/diag/vs_llamacpp.sh's models; never more than
 * a quarter of the memory available) on one thread, three on two threads,
 * then three of multiply-adds on one thread that touch no memory. One line
 * per block and kind (its median and its spread), then for each kind the
 * median spread, the highest and in how many blocks it was over 10 %.
 * Why: a decode near its bandwidth floor moves with the bandwidth the machine
 * gives it, one limited by its arithmetic does not; on a shared host the two
 * kinds of work differ in how steady they can be, whatever the program.
 * Built and run by tests/diag/host_steadiness.sh. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define WINDOWS 3
#define WARN_SPREAD 0.10

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

typedef struct {
    const uint64_t *lo; /* the words this thread reads (read kinds) */
    size_t n;
    double secs;        /* the window */
    int compute;        /* multiply-adds in registers instead of reading */
    double rate;        /* out: bytes/s read, or multiply-adds/s */
    uint64_t sink;      /* out: keeps the work from being optimised away */
} job;

/* Whole passes over the thread's part until the window is over: the rate
 * counts only the passes done, over the time they took. */
static void *run_job(void *arg)
{
    job *j = arg;
    const double t0 = now();
    double done = 0;
    uint64_t s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    double a0 = 1, a1 = 2, a2 = 3, a3 = 4, a4 = 5, a5 = 6, a6 = 7, a7 = 8;
    while (now() - t0 < j->secs) {
        if (!j->compute) {
            for (size_t i = 0; i + 4 <= j->n; i += 4) {
                s0 += j->lo[i];
                s1 += j->lo[i + 1];
                s2 += j->lo[i + 2];
                s3 += j->lo[i + 3];
            }
            done += (double)j->n * sizeof(uint64_t);
        } else {
            /* eight independent chains, so the core's multiply-add units
             * and not one chain's latency set the rate */
            for (int i = 0; i < 1000000; i++) {
                a0 = a0 * 0.999999 + 1e-6;
                a1 = a1 * 0.999999 + 1e-6;
                a2 = a2 * 0.999999 + 1e-6;
                a3 = a3 * 0.999999 + 1e-6;
                a4 = a4 * 0.999999 + 1e-6;
                a5 = a5 * 0.999999 + 1e-6;
                a6 = a6 * 0.999999 + 1e-6;
                a7 = a7 * 0.999999 + 1e-6;
            }
            done += 8e6;
        }
    }
    j->rate = done / (now() - t0);
    j->sink = s0 + s1 + s2 + s3 + (uint64_t)(a0 + a1 + a2 + a3 + a4 + a5 + a6 + a7);
    return NULL;
}

/* One window of `threads` threads, each on its own part of the buffer;
 * the sum of their rates. -1 when a thread cannot start. */
static double window(const uint64_t *buf, size_t words, int threads, int compute, double secs, uint64_t *sink)
{
    pthread_t th[2];
    job j[2];
    for (int t = 0; t < threads; t++) {
        j[t] = (job){ buf + words / (size_t)threads * (size_t)t, words / (size_t)threads, secs, compute, 0, 0 };
        if (pthread_create(&th[t], NULL, run_job, &j[t])) {
            for (int u = 0; u < t; u++) pthread_join(th[u], NULL);
            return -1;
        }
    }
    double rate = 0;
    for (int t = 0; t < threads; t++) {
        pthread_join(th[t], NULL);
        rate += j[t].rate;
        *sink += j[t].sink;
    }
    return rate;
}

static int cmp_double(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static int usage(FILE *to, int status)
{
    fprintf(to, "usage: host_steadiness [-b BLOCKS] [-w SECONDS] [-m MIB]\n"
                "  -b BLOCKS   blocks of three windows of each kind (default 12)\n"
                "  -w SECONDS  one window (default 1.5)\n"
                "  -m MIB      the buffer read (default 1200; at most a quarter of the memory available)\n");
    return status;
}

enum { KINDS = 3 };
static const struct {
    const char *name, *unit;
    int threads, compute;
    double scale; /* unit per rate */
} KIND[KINDS] = {
    { "read, 1 thread", "GB/s", 1, 0, 1e-9 },
    { "read, 2 threads", "GB/s", 2, 0, 1e-9 },
    { "multiply-add, 1 thread", "G/s", 1, 1, 1e-9 },
};

int main(int argc, char **argv)
{
    long blocks = 12, mib = 1200;
    double secs = 1.5;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) return usage(stdout, 0);
        if (i + 1 >= argc) return usage(stderr, 2);
        char *end;
        if (!strcmp(argv[i], "-b")) blocks = strtol(argv[++i], &end, 10);
        else if (!strcmp(argv[i], "-w")) secs = strtod(argv[++i], &end);
        else if (!strcmp(argv[i], "-m")) mib = strtol(argv[++i], &end, 10);
        else return usage(stderr, 2);
        if (*end || blocks < 1 || blocks > 1000 || !(secs >= 0.1 && secs <= 60) || mib < 16) {
            fprintf(stderr, "host_steadiness: %s %s: not a usable value (blocks 1-1000, seconds 0.1-60, MiB 16 or more)\n",
                    argv[i - 1], argv[i]);
            return 2;
        }
    }
    const long avail = sysconf(_SC_AVPHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    if (avail > 0 && page > 0 && (double)mib * 1048576 > (double)avail * (double)page / 4) {
        mib = (long)((double)avail * (double)page / 4 / 1048576);
        fprintf(stderr, "host_steadiness: reading %ld MiB, a quarter of the memory available\n", mib);
        if (mib < 16) { fprintf(stderr, "host_steadiness: too little memory available\n"); return 1; }
    }
    const size_t bytes = (size_t)mib << 20, huge = (size_t)2 << 20;
    uint64_t *buf = aligned_alloc(huge, (bytes + huge - 1) / huge * huge);
    if (!buf) { fprintf(stderr, "host_steadiness: out of memory for %ld MiB\n", mib); return 1; }
#ifdef MADV_HUGEPAGE
    (void)madvise(buf, bytes, MADV_HUGEPAGE); /* as strata holds a pack's experts */
#endif
    memset(buf, 1, bytes);
    printf("block\tkind\tmedian\tunit\tspread %%\n");
    double *spread = malloc(sizeof(double) * (size_t)(KINDS * blocks));
    if (!spread) { fprintf(stderr, "host_steadiness: out of memory\n"); return 1; }
    uint64_t sink = 0;
    for (long b = 0; b < blocks; b++)
        for (int k = 0; k < KINDS; k++) {
            double v[WINDOWS];
            for (int w = 0; w < WINDOWS; w++) {
                v[w] = window(buf, bytes / sizeof(uint64_t), KIND[k].threads, KIND[k].compute, secs, &sink);
                if (v[w] < 0) { fprintf(stderr, "host_steadiness: cannot start a thread\n"); return 1; }
            }
            qsort(v, WINDOWS, sizeof v[0], cmp_double);
            spread[k * blocks + b] = (v[WINDOWS - 1] - v[0]) / v[WINDOWS / 2];
            printf("%ld\t%s\t%.2f\t%s\t%.1f\n", b + 1, KIND[k].name, v[WINDOWS / 2] * KIND[k].scale, KIND[k].unit,
                   100 * spread[k * blocks + b]);
            fflush(stdout);
        }
    printf("\nspread of %d windows of %.1f s one after another, (max - min) / median, over %ld blocks:\n", WINDOWS, secs,
           blocks);
    printf("%-24s %-10s %-10s %s\n", "kind", "median", "highest", "blocks over 10 %");
    for (int k = 0; k < KINDS; k++) {
        double *s = spread + k * blocks;
        int over = 0;
        for (long b = 0; b < blocks; b++) over += s[b] > WARN_SPREAD;
        qsort(s, (size_t)blocks, sizeof s[0], cmp_double);
        const double med = blocks % 2 ? s[blocks / 2] : (s[blocks / 2 - 1] + s[blocks / 2]) / 2;
        printf("%-24s %5.1f %%    %5.1f %%    %d of %ld\n", KIND[k].name, 100 * med, 100 * s[blocks - 1], over, blocks);
    }
    free(spread);
    free(buf);
    volatile uint64_t keep = sink; /* the sums are used, so the reads are kept */
    (void)keep;
    return 0;
}
