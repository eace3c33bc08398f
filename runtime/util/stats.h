/* stats.h: the median and spread of a few repeated measurements, the
 * summary `strata bench` and the benchmarks under tests/bench print, so
 * that one noisy run is neither the figure nor hidden.
 *
 * Contract: both functions sort v in place; n >= 1. The median of an even
 * count is the mean of the middle two. The spread is (max - min) / median,
 * a fraction (0 for one value or a median of 0). No allocation, no state. */
#ifndef STRATA_STATS_H
#define STRATA_STATS_H

typedef struct stats_summary {
    int n;
    double median, min, max;
    double spread; /* (max - min) / median */
} stats_summary;

double stats_median(double *v, int n);
stats_summary stats_summarize(double *v, int n);

#endif
