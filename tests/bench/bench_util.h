/* bench_util.h: the clock and the median every benchmark uses (the median
 * is runtime/util/stats.h's, the one `strata bench` prints).
 * Contract: bench_now() is monotonic seconds; bench_median() sorts v in
 * place and returns its median (the mean of the middle two for even n). */
#ifndef STRATA_BENCH_UTIL_H
#define STRATA_BENCH_UTIL_H

#include "runtime/util/stats.h"

#include <time.h>

static inline double bench_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static inline double bench_median(double *v, int n) { return stats_median(v, n); }

#endif
