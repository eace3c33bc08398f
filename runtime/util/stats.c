/* stats.c: see stats.h. */
#include "runtime/util/stats.h"

#include <stdlib.h>

static int cmp_double(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double stats_median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

stats_summary stats_summarize(double *v, int n)
{
    stats_summary s = { .n = n, .median = stats_median(v, n) };
    s.min = v[0];
    s.max = v[n - 1];
    s.spread = s.median > 0 ? (s.max - s.min) / s.median : 0;
    return s;
}
