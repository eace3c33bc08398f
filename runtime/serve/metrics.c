/* metrics.c: see metrics.h. Fixed-size tables: the server has a dozen
 * endpoints and a dozen statuses, so a linear scan beats a hash. */
#include "runtime/serve/metrics.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runtime/util/strbuf.h"

#define MAX_SERIES 96

/* Bucket bounds (seconds): TTFT spans prefill of long prompts, per-token
 * latency spans a GPU step to a slow CPU step. */
static const double TTFT_BUCKETS[] = { 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30 };
static const double TOKEN_BUCKETS[] = { 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1 };
#define N_TTFT (sizeof TTFT_BUCKETS / sizeof TTFT_BUCKETS[0])
#define N_TOKEN (sizeof TOKEN_BUCKETS / sizeof TOKEN_BUCKETS[0])

typedef struct histogram {
    unsigned long long counts[16]; /* cumulative rendering is done at render time */
    unsigned long long n;
    double sum;
} histogram;

struct metrics {
    pthread_mutex_t mu;
    struct { char endpoint[48]; int status; unsigned long long n; } req[MAX_SERIES];
    size_t n_req;
    unsigned long long prompt_tokens, generated_tokens, dropped_series, cached_tokens, ended_early;
    histogram ttft, token;
};

metrics *metrics_new(void)
{
    metrics *m = calloc(1, sizeof *m);
    if (m && pthread_mutex_init(&m->mu, NULL) != 0) { free(m); return NULL; }
    return m;
}

void metrics_free(metrics *m)
{
    if (!m) return;
    pthread_mutex_destroy(&m->mu);
    free(m);
}

void metrics_request(metrics *m, const char *endpoint, int status)
{
    pthread_mutex_lock(&m->mu);
    size_t i = 0;
    while (i < m->n_req && (m->req[i].status != status || strcmp(m->req[i].endpoint, endpoint)))
        i++;
    if (i == m->n_req && i < MAX_SERIES) {
        strncpy(m->req[i].endpoint, endpoint, sizeof m->req[i].endpoint - 1);
        m->req[i].status = status;
        m->n_req++;
    }
    if (i < m->n_req) m->req[i].n++;
    else m->dropped_series++;
    pthread_mutex_unlock(&m->mu);
}

void metrics_tokens(metrics *m, size_t prompt, size_t cached, size_t generated)
{
    pthread_mutex_lock(&m->mu);
    m->prompt_tokens += prompt;
    m->cached_tokens += cached;
    m->generated_tokens += generated;
    pthread_mutex_unlock(&m->mu);
}

void metrics_ended_early(metrics *m)
{
    pthread_mutex_lock(&m->mu);
    m->ended_early++;
    pthread_mutex_unlock(&m->mu);
}

static void observe(metrics *m, histogram *h, const double *bounds, size_t nb, double v)
{
    pthread_mutex_lock(&m->mu);
    size_t i = 0;
    while (i < nb && v > bounds[i]) i++;
    h->counts[i]++;
    h->n++;
    h->sum += v;
    pthread_mutex_unlock(&m->mu);
}

void metrics_ttft(metrics *m, double s) { observe(m, &m->ttft, TTFT_BUCKETS, N_TTFT, s); }
void metrics_token_latency(metrics *m, double s) { observe(m, &m->token, TOKEN_BUCKETS, N_TOKEN, s); }

static void render_hist(strbuf *b, const char *name, const char *help, const histogram *h,
                        const double *bounds, size_t nb)
{
    strbuf_printf(b, "# HELP %s %s\n# TYPE %s histogram\n", name, help, name);
    unsigned long long cum = 0;
    for (size_t i = 0; i < nb; i++) {
        cum += h->counts[i];
        strbuf_printf(b, "%s_bucket{le=\"%g\"} %llu\n", name, bounds[i], cum);
    }
    strbuf_printf(b, "%s_bucket{le=\"+Inf\"} %llu\n%s_sum %.9g\n%s_count %llu\n", name, h->n,
                  name, h->sum, name, h->n);
}

char *metrics_render(metrics *m, int queue_depth, int busy, int total)
{
    strbuf b = { 0 };
    pthread_mutex_lock(&m->mu);
    strbuf_puts(&b, "# HELP strata_requests_total HTTP requests by endpoint and status.\n"
                    "# TYPE strata_requests_total counter\n");
    for (size_t i = 0; i < m->n_req; i++)
        strbuf_printf(&b, "strata_requests_total{endpoint=\"%s\",status=\"%d\"} %llu\n",
                      m->req[i].endpoint, m->req[i].status, m->req[i].n);
    strbuf_printf(&b, "# HELP strata_prompt_tokens_total Prompt tokens processed.\n"
                      "# TYPE strata_prompt_tokens_total counter\nstrata_prompt_tokens_total %llu\n"
                      "# HELP strata_prompt_tokens_cached_total Prompt tokens a context's KV cache already held.\n"
                      "# TYPE strata_prompt_tokens_cached_total counter\nstrata_prompt_tokens_cached_total %llu\n"
                      "# HELP strata_generated_tokens_total Tokens generated.\n"
                      "# TYPE strata_generated_tokens_total counter\nstrata_generated_tokens_total %llu\n"
                      "# HELP strata_generations_ended_early_total Generations let go before their end (the client "
                      "closed the stream: a stop button, a dropped connection).\n"
                      "# TYPE strata_generations_ended_early_total counter\nstrata_generations_ended_early_total %llu\n",
                  m->prompt_tokens, m->cached_tokens, m->generated_tokens, m->ended_early);
    render_hist(&b, "strata_time_to_first_token_seconds",
                "Time from generation start to the first token.", &m->ttft, TTFT_BUCKETS, N_TTFT);
    render_hist(&b, "strata_token_latency_seconds", "Time between consecutive tokens.",
                &m->token, TOKEN_BUCKETS, N_TOKEN);
    pthread_mutex_unlock(&m->mu);
    strbuf_printf(&b, "# HELP strata_queue_depth Requests waiting for a slot.\n"
                      "# TYPE strata_queue_depth gauge\nstrata_queue_depth %d\n"
                      "# HELP strata_busy_slots Slots generating now.\n"
                      "# TYPE strata_busy_slots gauge\nstrata_busy_slots %d\n"
                      "# HELP strata_slots Slots configured (--parallel).\n"
                      "# TYPE strata_slots gauge\nstrata_slots %d\n",
                  queue_depth, busy, total);
    /* the process's resident memory (Linux; left out where /proc cannot tell) */
    FILE *f = fopen("/proc/self/statm", "r");
    unsigned long long pages_total = 0, pages_rss = 0;
    if (f && fscanf(f, "%llu %llu", &pages_total, &pages_rss) == 2)
        strbuf_printf(&b, "# HELP strata_process_resident_bytes Memory the server process holds in RAM.\n"
                          "# TYPE strata_process_resident_bytes gauge\nstrata_process_resident_bytes %llu\n",
                      pages_rss * (unsigned long long)sysconf(_SC_PAGESIZE));
    if (f) fclose(f);
    return strbuf_take(&b);
}
