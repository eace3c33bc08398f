/* build_common.c: what build.c and build_experts.c share (build_common.h). */
#include "pack/build_common.h"

#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "formats/arch_table.h"
#include "formats/hparam_keys.h"
#include "formats/tensor_names.h"

/* Set by the handler only (async-signal-safe), read by the write loops. */
static volatile sig_atomic_t interrupted_by;

static void on_signal(int sig) { interrupted_by = sig; }

void build_catch_signals(build_signals *bs)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESETHAND;
    interrupted_by = 0;
    sigaction(SIGINT, &sa, &bs->old_int);
    sigaction(SIGTERM, &sa, &bs->old_term);
}

int build_interrupted(void) { return interrupted_by != 0; }

void build_release_signals(const build_signals *bs)
{
    sigaction(SIGINT, &bs->old_int, NULL);
    sigaction(SIGTERM, &bs->old_term, NULL);
    const int sig = interrupted_by;
    interrupted_by = 0;
    if (sig) raise(sig);
}

double build_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

void build_progress_step(build_progress *p, uint64_t bytes, const char *what)
{
    p->done += bytes;
    if (!p->on || !p->total) return;
    const double frac = (double)p->done / (double)p->total, el = build_now() - p->t0;
    const double eta = frac > 0 ? el / frac - el : 0;
    if (p->on == 2) {
        const int decile = (int)(frac * 10);
        if (decile <= p->last_decile || decile >= 10) return;
        p->last_decile = decile;
        const long t = (long)(eta + 0.5);
        char left[32];
        if (t >= 3600) snprintf(left, sizeof left, "%ld:%02ld:%02ld", t / 3600, t / 60 % 60, t % 60);
        else snprintf(left, sizeof left, "%ld:%02ld", t / 60, t % 60);
        fprintf(stderr, "%s: %d%% (%.1f of %.1f MiB) ETA %s\n", p->label ? p->label : "progress", decile * 10,
                (double)p->done / 1048576.0, (double)p->total / 1048576.0, left);
        return;
    }
    char bar[31];
    for (int i = 0; i < 30; i++) bar[i] = i < (int)(frac * 30) ? '#' : '.';
    bar[30] = 0;
    fprintf(stderr, "\r[%s] %3.0f%%  ETA %4.0fs  %-40.40s", bar, 100 * frac, eta, what);
    if (p->done >= p->total) fputc('\n', stderr);
}

int build_first_dropped_layer(const source *s, int drop_nextn)
{
    const char *arch = gguf_get_str(source_meta(s), "general.architecture");
    const arch_info *ai = arch_table_find(arch);
    if (!drop_nextn && ai && ai->mtp) return INT_MAX;
    char key[128];
    uint64_t blocks, nextn;
    snprintf(key, sizeof key, "%s.%s", arch ? arch : "", HPARAM_KEYS[HPK_LAYERS].key);
    if (gguf_get_uint(source_meta(s), key, &blocks) != 0) return INT_MAX;
    snprintf(key, sizeof key, "%s.%s", arch ? arch : "", HPARAM_KEYS[HPK_NEXTN_LAYERS].key);
    if (gguf_get_uint(source_meta(s), key, &nextn) != 0 || nextn == 0 || nextn >= blocks) return INT_MAX;
    return (int)(blocks - nextn);
}

int build_tensor_dropped(const char *name, int first)
{
    return tensor_name_layer(name) >= first;
}
