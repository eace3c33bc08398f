/* metrics.h: the server's counters and histograms, rendered as Prometheus
 * text for GET /metrics.
 *
 * Contract: a metrics object is owned by one server; every function is
 * thread-safe (one mutex: updates are a handful of adds per token, far
 * below what a token costs). Endpoint labels are the route paths; statuses
 * are whatever the server answered. metrics_render() returns malloc'd text
 * or NULL on out of memory. */
#ifndef STRATA_METRICS_H
#define STRATA_METRICS_H

#include <stddef.h>

typedef struct metrics metrics;

metrics *metrics_new(void);
void metrics_free(metrics *m);

void metrics_request(metrics *m, const char *endpoint, int status);
/* prompt: all of a request's prompt tokens; cached: how many of them a
 * context's KV cache already held (not evaluated again). */
void metrics_tokens(metrics *m, size_t prompt, size_t cached, size_t generated);
/* A generation let go before its end: its client closed the stream (a stop
 * button, a dropped connection). */
void metrics_ended_early(metrics *m);
void metrics_ttft(metrics *m, double seconds);
void metrics_token_latency(metrics *m, double seconds);

/* Gauges are read by the caller at render time (they live in the server). */
char *metrics_render(metrics *m, int queue_depth, int busy_slots, int total_slots);

#endif
