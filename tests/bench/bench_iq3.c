/* bench_iq3.c: IQ3 container encode (both modes) and decode speed on
 * [256 x 4096] N(0,1), each beside a baseline measured in the same run (the
 * scalar path; memcpy for decode) and the seed numpy figures from
 * reference/baselines.md (0.44 M weights/s encode, 25.5 M weights/s decode).
 * Medians of several runs; also prints rel-RMSE (plain and with
 * imp[j] = 1 + 9*(j%7==0)) so quality is read beside speed. */
#define _POSIX_C_SOURCE 200809L
#include "formats/iq3.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "tests/bench/bench_util.h"

enum { ROWS = 256, K = 4096, REPS = 5 };
static const double SEED_ENCODE_MWS = 0.44, SEED_DECODE_MWS = 25.5;

static uint64_t splitmix(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static double unit(uint64_t *s) { return ((splitmix(s) >> 11) + 0.5) / 9007199254740992.0; }

/* Seconds per encode of the whole matrix: median of reps runs. */
static double time_encode(const float *x, int rows, iq3_encode_opts o, uint8_t *q, int reps)
{
    double t[REPS];
    char err[256];
    for (int i = 0; i < reps; i++) {
        double t0 = bench_now();
        if (iq3_encode(x, rows, K, &o, q, err, sizeof err)) { fprintf(stderr, "%s\n", err); exit(1); }
        t[i] = bench_now() - t0;
    }
    return bench_median(t, reps);
}

static double rel(const float *x, const float *y, size_t n, const float *imp)
{
    double a = 0, b = 0;
    for (size_t i = 0; i < n; i++) {
        double w = imp ? imp[i % K] : 1, e = (double)y[i] - x[i];
        a += w * e * e;
        b += w * (double)x[i] * x[i];
    }
    return sqrt(a / b);
}

int main(void)
{
    size_t n = (size_t)ROWS * K;
    float *x = malloc(n * sizeof *x), *y = malloc(n * sizeof *y), *y2 = malloc(n * sizeof *y);
    static float imp[K];
    uint8_t *q = malloc((size_t)ROWS * iq3_row_bytes(K));
    uint64_t s = 1;
    for (size_t i = 0; i < n; i++)
        x[i] = (float)(sqrt(-2 * log(unit(&s))) * cos(6.283185307179586 * unit(&s)));
    for (int j = 0; j < K; j++) imp[j] = 1.0f + 9.0f * (j % 7 == 0);
    char err[256];

    printf("IQ3 encode, [%d x %d] N(0,1), M weights/s (median of %d)\n", ROWS, K, REPS);
    for (int mode = 1; mode >= 0; mode--) {
        iq3_encode_opts o = { .mode = (iq3_mode)mode, .n_threads = 1, .importance = NULL, .force_scalar = 1 };
        /* the scalar baseline runs on a quarter of the rows to keep it short */
        double ts = time_encode(x, ROWS / 4, o, q, 3) * 4;
        o.force_scalar = 0;
        double t1 = time_encode(x, ROWS, o, q, REPS);
        o.n_threads = 2;
        double t2 = time_encode(x, ROWS, o, q, REPS);
        double ms = n / ts / 1e6, m1 = n / t1 / 1e6, m2 = n / t2 / 1e6;
        iq3_decode(q, ROWS, K, y, err, sizeof err);
        o.importance = imp;
        time_encode(x, ROWS, o, q, 1);
        iq3_decode(q, ROWS, K, y2, err, sizeof err);
        printf("  %-9s 1 thread %7.2f  2 threads %7.2f | scalar 1 thread %6.2f (x%.1f) | seed %.2f (x%.0f 1t, x%.0f 2t)"
               " | rel-RMSE %.4f weighted %.4f\n",
               iq3_mode_name((iq3_mode)mode), m1, m2, ms, m1 / ms, SEED_ENCODE_MWS, m1 / SEED_ENCODE_MWS,
               m2 / SEED_ENCODE_MWS, rel(x, y, n, NULL), rel(x, y2, n, imp));
    }

    double td[REPS * 4], tm[REPS * 4];
    for (int i = 0; i < REPS * 4; i++) {
        double t0 = bench_now();
        iq3_decode(q, ROWS, K, y, err, sizeof err);
        td[i] = bench_now() - t0;
        t0 = bench_now();
        memcpy(y2, y, n * sizeof *y);
        tm[i] = bench_now() - t0;
        y[i] += y2[i]; /* keep the copy observable */
    }
    double dt = bench_median(td, REPS * 4), mt = bench_median(tm, REPS * 4);
    double out_bytes = (double)n * 4, in_bytes = (double)ROWS * iq3_row_bytes(K);
    printf("IQ3 decode: %.1f M weights/s, %.2f GB/s written (%.2f GB/s read) | memcpy %.2f GB/s"
           " (decode = %.2f of memcpy) | seed %.1f M weights/s (x%.0f)\n",
           n / dt / 1e6, out_bytes / dt / 1e9, in_bytes / dt / 1e9, 2 * out_bytes / mt / 1e9,
           (out_bytes / dt) / (2 * out_bytes / mt), SEED_DECODE_MWS, n / dt / 1e6 / SEED_DECODE_MWS);
    free(x); free(y); free(y2); free(q);
    return 0;
}
