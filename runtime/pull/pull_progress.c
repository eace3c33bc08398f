/* pull_progress.c: progress bar / plain progress lines (see pull_progress.h). */
#include "runtime/pull/pull_progress.h"

#include <time.h>

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void fmt_eta(char *out, size_t n, double s)
{
    if (s < 0 || s > 99 * 3600.0) { snprintf(out, n, "--:--"); return; }
    long t = (long)(s + 0.5);
    if (t >= 3600) snprintf(out, n, "%ld:%02ld:%02ld", t / 3600, t / 60 % 60, t % 60);
    else snprintf(out, n, "%ld:%02ld", t / 60, t % 60);
}

void pull_progress_start(pull_progress *p, FILE *out, enum pull_progress_mode mode,
                         const char *name, int64_t total, int64_t have)
{
    p->out = out;
    p->mode = mode;
    p->name = name;
    p->total = total;
    p->first = have;
    p->t0 = now_s();
    p->last_draw = 0;
    p->last_decile = total > 0 ? (int)(have * 10 / total) : 0;
    p->drawn = 0;
    if (mode == PULL_PROGRESS_NONE) return;
    char a[32], b[32];
    pull_human_bytes(b, sizeof b, (double)total);
    if (have > 0) {
        pull_human_bytes(a, sizeof a, (double)have);
        fprintf(out, "pull: %s: resuming at %s of %s\n", name, a, total >= 0 ? b : "unknown size");
    } else {
        fprintf(out, "pull: %s: downloading %s\n", name, total >= 0 ? b : "(size not stated)");
    }
}

static void draw_bar(pull_progress *p, int64_t have, double rate)
{
    char got[32], tot[32], r[32], eta[32];
    pull_human_bytes(got, sizeof got, (double)have);
    pull_human_bytes(tot, sizeof tot, (double)p->total);
    pull_human_bytes(r, sizeof r, rate);
    fmt_eta(eta, sizeof eta, rate > 0 && p->total > 0 ? (double)(p->total - have) / rate : -1);
    char bar[25];
    int fill = p->total > 0 ? (int)(have * 24 / p->total) : 0;
    for (int i = 0; i < 24; i++) bar[i] = i < fill ? '#' : '.';
    bar[24] = 0;
    if (p->total > 0)
        fprintf(p->out, "\r%s [%s] %3d%% %s / %s  %s/s  ETA %s\033[K", p->name, bar,
                (int)(have * 100 / p->total), got, tot, r, eta);
    else
        fprintf(p->out, "\r%s %s  %s/s\033[K", p->name, got, r);
    fflush(p->out);
    p->drawn = 1;
}

void pull_progress_update(pull_progress *p, int64_t have)
{
    if (p->mode == PULL_PROGRESS_NONE) return;
    double t = now_s(), dt = t - p->t0;
    double rate = dt > 0 ? (double)(have - p->first) / dt : 0;
    if (p->mode == PULL_PROGRESS_BAR) {
        if (t - p->last_draw < 0.2) return;
        p->last_draw = t;
        draw_bar(p, have, rate);
        return;
    }
    if (p->total <= 0) return;
    int decile = (int)(have * 10 / p->total);
    if (decile <= p->last_decile || decile >= 10) return;
    p->last_decile = decile;
    char got[32], r[32], eta[32];
    pull_human_bytes(got, sizeof got, (double)have);
    pull_human_bytes(r, sizeof r, rate);
    fmt_eta(eta, sizeof eta, rate > 0 ? (double)(p->total - have) / rate : -1);
    fprintf(p->out, "pull: %s: %d%% (%s) %s/s ETA %s\n", p->name, decile * 10, got, r, eta);
}

void pull_progress_break(pull_progress *p)
{
    if (p->drawn) fputc('\n', p->out);
    p->drawn = 0;
}

void pull_progress_done(pull_progress *p, int64_t have)
{
    if (p->mode == PULL_PROGRESS_NONE) return;
    double dt = now_s() - p->t0;
    if (p->mode == PULL_PROGRESS_BAR) draw_bar(p, have, dt > 0 ? (double)(have - p->first) / dt : 0);
    pull_progress_break(p);
    char got[32], r[32];
    pull_human_bytes(got, sizeof got, (double)(have - p->first));
    pull_human_bytes(r, sizeof r, dt > 0 ? (double)(have - p->first) / dt : 0);
    fprintf(p->out, "pull: %s: downloaded %s in %.1f s (%s/s)\n", p->name, got, dt, r);
}
