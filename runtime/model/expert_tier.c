/* expert_tier.c: see expert_tier.h. The expert cache decides; this file
 * is its device: slots in RAM, a "copy" a read of the expert's blob from
 * experts.bin by an I/O thread, then its planes widened into the slot. */
/* O_DIRECT */
#define _GNU_SOURCE
#include "runtime/model/expert_tier.h"

#include "formats/pack_files.h"
#include "runtime/device/expert_cache.h"
#include "runtime/model/loader.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* Direct I/O wants the file offset, the length and the buffer aligned to
 * the device's logical block; 4096 covers every common one. */
#define TIER_ALIGN 4096
#define TIER_MAX_IO 16
/* An expert's read is cut into up to this many pieces, each at least
 * TIER_PIECE_MIN, which the I/O threads take in parallel: a decode step
 * misses only a few experts at a time, and one read in flight per expert
 * leaves an SSD's queue mostly empty (the synthetic 13 MiB experts here:
 * whole reads at 2 in flight reached about half of what 4 did). */
#define TIER_PIECES 4
#define TIER_PIECE_MIN ((size_t)1 << 20)

typedef enum { SLOT_EMPTY, SLOT_LOADING, SLOT_READY, SLOT_FAILED } slot_state;

typedef struct tier_slot {
    uint8_t *mem;            /* read area, then the derived planes */
    slot_state state;
    int64_t expert;          /* layer * n_expert + e being read or held */
    uint64_t at;             /* the read: file offset (aligned down), */
    size_t len, piece;       /* bytes (aligned up), bytes a piece */
    size_t skip, need;       /* the blob at mem + skip; bytes up to its end */
    int pieces_left, failed;
    size_t got;              /* bytes read so far */
    int prefetched;          /* brought in by a prediction, not accessed since */
    weight w[3];
    kfactor kf[3];
    char err[256];
} tier_slot;

struct expert_tier {
    const loaded_pack *p;
    int n_layer, n_expert;
    size_t read_bytes;       /* the read area of a slot */
    size_t slot_bytes;
    char *path;
    int fd, fd_buffered;     /* fd: O_DIRECT when the file system takes it, else == fd_buffered */
    int direct;
    expert_cache *ec;
    tier_slot *slots;
    uint8_t *arena;
    int n_slots;
    /* the read queue: (slot, piece) pairs pending, in order */
    int *queue;
    int q_cap, q_head, q_len, in_flight;
    pthread_mutex_t mu;
    pthread_cond_t work, done;
    pthread_t io[TIER_MAX_IO];
    int n_io, stop;
    /* how often a prediction is used before its slot is taken again: a
     * running mean (1 used, 0 wasted); below PF_MIN only every PF_PROBE-th
     * prediction is still read, to keep measuring */
    double pf_score;
    uint64_t pf_asked;
    tier_stats st;
};

#define PF_MIN 0.7
#define PF_RATE 0.05
#define PF_PROBE 16

static int err_set(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    return -1;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static size_t round_up(size_t n, size_t a) { return (n + a - 1) / a * a; }

/* The largest blob of any layer, and of derived bytes. */
static void sizes(const loaded_pack *p, size_t *blob, size_t *derived)
{
    const model_hparams *hp = loader_hparams(p);
    *blob = *derived = 0;
    for (int l = 0; l < hp->n_layer; l++) {
        uint64_t off;
        size_t b;
        if (loader_expert_span(p, l, 0, &off, &b)) continue;
        if (b > *blob) *blob = b;
        const size_t d = loader_expert_derived_bytes(p, l);
        if (d > *derived) *derived = d;
    }
}

size_t tier_slot_bytes(const loaded_pack *p)
{
    size_t blob, derived;
    sizes(p, &blob, &derived);
    if (!blob) return 0;
    /* an unaligned blob start costs up to one more block at each end */
    return round_up(blob, TIER_ALIGN) + 2 * TIER_ALIGN + round_up(derived, TIER_ALIGN);
}

/* Where expert x's blob lies: the aligned span to read and the blob's
 * place in it. -1 with err when the layer has no such expert. */
static int blob_span(expert_tier *t, int64_t x, uint64_t *at, size_t *len, size_t *skip, size_t *need, char *err,
                     size_t errlen)
{
    const int l = (int)(x / t->n_expert), e = (int)(x % t->n_expert);
    uint64_t off;
    size_t bytes;
    if (loader_expert_span(t->p, l, e, &off, &bytes)) return err_set(err, errlen, "%s: layer %d has no expert %d", t->path, l, e);
    *at = off / TIER_ALIGN * TIER_ALIGN;
    *skip = (size_t)(off - *at);
    *need = *skip + bytes;
    *len = round_up(*need, TIER_ALIGN);
    return 0;
}

/* Reads [at, at + len) of experts.bin into buf (both aligned for direct
 * I/O); the file may end first, but not before at + need. Returns the
 * bytes read, or -1 with err. */
static ssize_t read_range(expert_tier *t, uint8_t *buf, uint64_t at, size_t len, size_t need, char *err,
                          size_t errlen)
{
    int fd = t->fd;
    size_t got = 0;
    while (got < len) {
        ssize_t r = pread(fd, buf + got, len - got, (off_t)(at + got));
        if (r < 0 && errno == EINTR) continue;
        if (r < 0 && errno == EINVAL && fd != t->fd_buffered) { /* this file system refuses direct reads here */
            fd = t->fd_buffered;
            continue;
        }
        if (r < 0)
            return err_set(err, errlen, "%s: reading %zu bytes at offset %llu: %s", t->path, len - got,
                           (unsigned long long)(at + got), strerror(errno));
        if (r == 0) break;
        got += (size_t)r;
    }
    if (got < need)
        return err_set(err, errlen, "%s: ends at %llu, inside an expert that should end at %llu (the file changed "
                                    "since the pack was loaded?)",
                       t->path, (unsigned long long)(at + got), (unsigned long long)(at + need));
    /* a buffered read leaves the pages cached: drop them, the slot holds the bytes */
    if (fd == t->fd_buffered) (void)posix_fadvise(fd, (off_t)at, (off_t)len, POSIX_FADV_DONTNEED);
    return (ssize_t)got;
}

/* Reads expert x's blob into buf (TIER_ALIGN-aligned, t->read_bytes) in one
 * piece and returns where the blob starts in it, or NULL with err. */
static const uint8_t *read_blob(expert_tier *t, int64_t x, uint8_t *buf, size_t *nread, char *err, size_t errlen)
{
    uint64_t at;
    size_t len, skip, need;
    if (blob_span(t, x, &at, &len, &skip, &need, err, errlen)) return NULL;
    const ssize_t got = read_range(t, buf, at, len, need, err, errlen);
    if (got < 0) return NULL;
    *nread = (size_t)got;
    return buf + skip;
}

/* An I/O thread: takes a (slot, piece) pair, reads the piece; whoever
 * reads a slot's last piece builds its weights and marks it ready. */
static void *io_main(void *arg)
{
    expert_tier *t = arg;
    pthread_mutex_lock(&t->mu);
    for (;;) {
        while (!t->stop && t->q_len == 0) pthread_cond_wait(&t->work, &t->mu);
        if (t->stop) break;
        const int job = t->queue[t->q_head];
        t->q_head = (t->q_head + 1) % t->q_cap;
        t->q_len--;
        t->in_flight++;
        tier_slot *s = &t->slots[job / TIER_PIECES];
        const int k = job % TIER_PIECES;
        const size_t p0 = (size_t)k * s->piece, n = s->len - p0 < s->piece ? s->len - p0 : s->piece;
        const size_t need = s->need > p0 ? (s->need - p0 < n ? s->need - p0 : n) : 0;
        pthread_mutex_unlock(&t->mu);
        char err[256] = "";
        const double t0 = now_s();
        const ssize_t got = read_range(t, s->mem + p0, s->at + p0, n, need, err, sizeof err);
        double dt = now_s() - t0;
        pthread_mutex_lock(&t->mu);
        if (got < 0 && !s->failed) {
            s->failed = 1;
            snprintf(s->err, sizeof s->err, "%s", err);
        }
        if (got > 0) s->got += (size_t)got;
        const int last = --s->pieces_left == 0;
        if (last && !s->failed) {
            /* the slot is pinned until it is ready: nobody else touches it */
            pthread_mutex_unlock(&t->mu);
            const double t1 = now_s();
            const int64_t x = s->expert;
            loader_expert_build(t->p, (int)(x / t->n_expert), (int)(x % t->n_expert), s->mem + s->skip,
                                s->mem + t->read_bytes, s->w, s->kf);
            dt += now_s() - t1;
            pthread_mutex_lock(&t->mu);
        }
        if (last) {
            s->state = s->failed ? SLOT_FAILED : SLOT_READY;
            t->st.reads++;
            t->st.bytes_read += s->got;
            ec_unpin(t->ec, job / TIER_PIECES); /* the pin its read held */
        }
        t->st.read_seconds += dt;
        t->in_flight--;
        pthread_cond_broadcast(&t->done);
    }
    pthread_mutex_unlock(&t->mu);
    return NULL;
}

/* ------------------------------------------------ the expert cache's device */

static int dev_alloc(void *ctx, int n_slots, size_t slot_bytes, char *err, size_t errlen)
{
    expert_tier *t = ctx;
    if ((size_t)n_slots > SIZE_MAX / slot_bytes) return err_set(err, errlen, "expert slots: too many");
    t->arena = aligned_alloc(TIER_ALIGN, (size_t)n_slots * slot_bytes);
    t->slots = calloc((size_t)n_slots, sizeof *t->slots);
    t->q_cap = n_slots * TIER_PIECES;
    t->queue = calloc((size_t)t->q_cap, sizeof *t->queue);
    if (!t->arena || !t->slots || !t->queue)
        return err_set(err, errlen, "expert slots: out of memory for %d slots of %zu bytes", n_slots, slot_bytes);
    for (int k = 0; k < n_slots; k++) {
        t->slots[k].mem = t->arena + (size_t)k * slot_bytes;
        t->slots[k].expert = -1;
    }
    t->n_slots = n_slots;
    return 0;
}

/* Called by the cache under t->mu: queue the read; the slot stays pinned
 * until it is done, so no later miss can take it mid-read. */
static int dev_copy(void *ctx, int slot, int64_t expert, size_t bytes, char *err, size_t errlen)
{
    expert_tier *t = ctx;
    (void)bytes;
    if (slot < 0 || slot >= t->n_slots) return err_set(err, errlen, "expert slots: slot %d of %d", slot, t->n_slots);
    tier_slot *s = &t->slots[slot];
    if (blob_span(t, expert, &s->at, &s->len, &s->skip, &s->need, err, errlen)) return -1;
    if (s->prefetched) t->pf_score += PF_RATE * (0.0 - t->pf_score); /* a prediction never used */
    s->state = SLOT_LOADING;
    s->expert = expert;
    s->prefetched = 0;
    s->failed = 0;
    s->got = 0;
    s->err[0] = 0;
    size_t piece = round_up((s->len + TIER_PIECES - 1) / TIER_PIECES, TIER_ALIGN);
    if (piece < TIER_PIECE_MIN) piece = TIER_PIECE_MIN;
    s->piece = piece;
    s->pieces_left = (int)((s->len + piece - 1) / piece);
    ec_pin(t->ec, slot);
    for (int k = 0; k < s->pieces_left; k++) {
        t->queue[(t->q_head + t->q_len) % t->q_cap] = slot * TIER_PIECES + k;
        t->q_len++;
    }
    pthread_cond_broadcast(&t->work);
    return 0;
}

/* Called under t->mu. */
static int dev_sync(void *ctx, char *err, size_t errlen)
{
    expert_tier *t = ctx;
    while (t->q_len > 0 || t->in_flight > 0) pthread_cond_wait(&t->done, &t->mu);
    for (int k = 0; k < t->n_slots; k++)
        if (t->slots[k].state == SLOT_FAILED) return err_set(err, errlen, "%s", t->slots[k].err);
    return 0;
}

/* ------------------------------------------------------------------ the API */

expert_tier *tier_create(const loaded_pack *p, uint64_t slot_budget, int min_slots, int io_threads, char *err,
                         size_t errlen)
{
    const model_hparams *hp = loader_hparams(p);
    const size_t sb = tier_slot_bytes(p);
    if (!sb || hp->n_expert <= 0) {
        err_set(err, errlen, "%s: this pack has no routed experts to keep out of memory", loader_dir(p));
        return NULL;
    }
    int64_t n_routed = 0; /* layers without experts (dense ones) have none */
    for (int l = 0; l < hp->n_layer; l++) {
        uint64_t off;
        size_t b;
        if (!loader_expert_span(p, l, 0, &off, &b)) n_routed += hp->n_expert;
    }
    int64_t n = (int64_t)(slot_budget / sb);
    if (n > n_routed) n = n_routed;
    if (min_slots < 1) min_slots = 1;
    if (n < min_slots) {
        err_set(err, errlen, "room for %lld expert slots of %zu bytes, at least %d needed (%llu more bytes)",
                (long long)n, sb, min_slots, (unsigned long long)((uint64_t)min_slots * sb - slot_budget));
        return NULL;
    }
    expert_tier *t = calloc(1, sizeof *t);
    if (!t) { err_set(err, errlen, "out of memory"); return NULL; }
    t->p = p;
    t->n_layer = hp->n_layer;
    t->n_expert = hp->n_expert;
    t->slot_bytes = sb;
    size_t blob, derived;
    sizes(p, &blob, &derived);
    t->read_bytes = round_up(blob, TIER_ALIGN) + 2 * TIER_ALIGN;
    t->fd = t->fd_buffered = -1;
    pthread_mutex_init(&t->mu, NULL);
    pthread_cond_init(&t->work, NULL);
    pthread_cond_init(&t->done, NULL);
    t->path = pack_path(loader_dir(p), PACK_FILE_NAMES[PACK_EXPERTS]);
    if (!t->path) { err_set(err, errlen, "out of memory"); tier_free(t); return NULL; }
    t->fd_buffered = open(t->path, O_RDONLY | O_CLOEXEC);
    if (t->fd_buffered < 0) {
        err_set(err, errlen, "%s: %s", t->path, strerror(errno));
        tier_free(t);
        return NULL;
    }
#ifdef O_DIRECT
    t->fd = open(t->path, O_RDONLY | O_CLOEXEC | O_DIRECT);
#endif
    t->direct = t->fd >= 0;
    if (t->fd < 0) t->fd = t->fd_buffered;
    ec_config cfg = { .n_layer = hp->n_layer, .n_expert = hp->n_expert, .n_slots = (int)n, .slot_bytes = sb,
                      .decay = 0.99, .miss = EC_MISS_PCIE, .pin_only = 1 };
    ec_device dev = { t, dev_alloc, dev_copy, dev_sync };
    t->ec = ec_create(&cfg, dev, err, errlen);
    if (!t->ec) { tier_free(t); return NULL; }
    if (io_threads < 1) io_threads = 1;
    if (io_threads > TIER_MAX_IO) io_threads = TIER_MAX_IO;
    for (int i = 0; i < io_threads; i++) {
        if (pthread_create(&t->io[i], NULL, io_main, t)) {
            err_set(err, errlen, "cannot start an I/O thread");
            tier_free(t);
            return NULL;
        }
        t->n_io++;
    }
    t->pf_score = 1.0;
    t->st.n_slots = (int)n;
    t->st.n_experts = n_routed;
    t->st.slot_bytes = sb;
    t->st.direct_io = t->direct;
    return t;
}

void tier_free(expert_tier *t)
{
    if (!t) return;
    pthread_mutex_lock(&t->mu);
    t->stop = 1;
    pthread_cond_broadcast(&t->work);
    pthread_mutex_unlock(&t->mu);
    for (int i = 0; i < t->n_io; i++) pthread_join(t->io[i], NULL);
    ec_free(t->ec);
    if (t->fd >= 0 && t->fd != t->fd_buffered) close(t->fd);
    if (t->fd_buffered >= 0) close(t->fd_buffered);
    free(t->arena);
    free(t->slots);
    free(t->queue);
    free(t->path);
    pthread_cond_destroy(&t->work);
    pthread_cond_destroy(&t->done);
    pthread_mutex_destroy(&t->mu);
    free(t);
}

int tier_fill(expert_tier *t, const ec_profile *prof, const char *path, char *err, size_t errlen)
{
    const model_hparams *hp = loader_hparams(t->p);
    if (ec_profile_check(prof, hp->n_layer, hp->n_expert, hp->n_expert_used, path, err, errlen)) return -1;
    pthread_mutex_lock(&t->mu);
    const int rc = ec_fill(t->ec, prof, err, errlen);
    pthread_mutex_unlock(&t->mu);
    return rc;
}

void tier_begin_token(expert_tier *t)
{
    pthread_mutex_lock(&t->mu);
    ec_begin_token(t->ec);
    pthread_mutex_unlock(&t->mu);
}

int tier_get(expert_tier *t, int layer, const int *experts, int n, tier_ref *refs, char *err, size_t errlen)
{
    for (int i = 0; i < n; i++) { /* every ref can be put, whatever fails */
        memset(&refs[i], 0, sizeof refs[i]);
        refs[i].layer = layer;
        refs[i].expert = experts[i];
        refs[i].slot = -1;
    }
    pthread_mutex_lock(&t->mu);
    int rc = 0;
    for (int i = 0; i < n && rc == 0; i++) {
        tier_ref *r = &refs[i];
        ec_result res;
        rc = ec_access(t->ec, layer, experts[i], &res, err, errlen);
        if (rc) break;
        if (res.where == EC_HIT) t->st.hits++;
        else t->st.misses++;
        if (res.where == EC_HIT && t->slots[res.slot].prefetched) {
            t->st.prefetch_hits++;
            t->slots[res.slot].prefetched = 0;
            t->pf_score += PF_RATE * (1.0 - t->pf_score);
        }
        t->st.accesses++;
        if (res.slot >= 0 && res.where != EC_MISS_ON_CPU) {
            r->slot = res.slot;
            ec_pin(t->ec, res.slot);
        }
    }
    pthread_mutex_unlock(&t->mu);
    return rc;
}

int tier_wait(expert_tier *t, tier_ref *r, const weight **gate, const weight **up, const weight **down, char *err,
              size_t errlen)
{
    const weight *w = NULL;
    if (r->slot >= 0) {
        const double t0 = now_s();
        pthread_mutex_lock(&t->mu);
        tier_slot *s = &t->slots[r->slot];
        int waited = 0;
        while (s->state == SLOT_LOADING) {
            pthread_cond_wait(&t->done, &t->mu);
            waited = 1;
        }
        const int failed = s->state != SLOT_READY;
        if (failed) err_set(err, errlen, "%s", s->err[0] ? s->err : "expert slot: not loaded");
        if (waited) t->st.stall_seconds += now_s() - t0;
        pthread_mutex_unlock(&t->mu);
        if (failed) return -1;
        w = s->w;
    } else {
        /* every slot pinned: a buffer of its own, read now */
        if (!r->bounce) {
            const double t0 = now_s();
            r->bounce = aligned_alloc(TIER_ALIGN, t->slot_bytes);
            if (!r->bounce) return err_set(err, errlen, "out of memory for an expert read");
            size_t nread = 0;
            const uint8_t *blob =
                read_blob(t, (int64_t)r->layer * t->n_expert + r->expert, r->bounce, &nread, err, errlen);
            if (!blob) return -1;
            loader_expert_build(t->p, r->layer, r->expert, blob, (uint8_t *)r->bounce + t->read_bytes, r->parts,
                                r->kf);
            pthread_mutex_lock(&t->mu);
            t->st.bounces++;
            t->st.reads++;
            t->st.bytes_read += nread;
            t->st.stall_seconds += now_s() - t0;
            t->st.read_seconds += now_s() - t0;
            pthread_mutex_unlock(&t->mu);
        }
        w = r->parts;
    }
    *gate = &w[0];
    *up = &w[1];
    *down = &w[2];
    return 0;
}

void tier_put(expert_tier *t, tier_ref *r)
{
    if (r->slot >= 0) {
        pthread_mutex_lock(&t->mu);
        ec_unpin(t->ec, r->slot);
        pthread_mutex_unlock(&t->mu);
        r->slot = -1;
    }
    free(r->bounce);
    r->bounce = NULL;
}

int tier_prefetch(expert_tier *t, int layer, const int *experts, int n, char *err, size_t errlen)
{
    pthread_mutex_lock(&t->mu);
    int rc = 0;
    /* predictions that are mostly wrong only take the disk's time from the misses */
    if (t->pf_score < PF_MIN && t->pf_asked++ % PF_PROBE != 0) n = 0;
    for (int i = 0; i < n && rc >= 0; i++) {
        rc = ec_prefetch(t->ec, layer, experts[i], err, errlen);
        if (rc == 1) {
            t->slots[ec_slot_of(t->ec, layer, experts[i])].prefetched = 1;
            t->st.prefetches++;
        }
    }
    pthread_mutex_unlock(&t->mu);
    return rc < 0 ? -1 : 0;
}

size_t tier_expert_bytes(const expert_tier *t, int layer) { return loader_expert_weight_bytes(t->p, layer); }

int tier_resident(expert_tier *t, int layer, int expert)
{
    pthread_mutex_lock(&t->mu);
    const int s = ec_slot_of(t->ec, layer, expert);
    const int ready = s >= 0 && t->slots[s].state == SLOT_READY;
    pthread_mutex_unlock(&t->mu);
    return ready;
}

void tier_get_stats(expert_tier *t, tier_stats *s)
{
    pthread_mutex_lock(&t->mu);
    *s = t->st;
    pthread_mutex_unlock(&t->mu);
}

typedef struct measure_job {
    expert_tier *t;
    int first, n, step;
    uint64_t bytes;
    char err[256];
} measure_job;

static void *measure_main(void *arg)
{
    measure_job *j = arg;
    expert_tier *t = j->t;
    uint8_t *buf = aligned_alloc(TIER_ALIGN, t->read_bytes);
    if (!buf) { snprintf(j->err, sizeof j->err, "out of memory"); return NULL; }
    const int64_t n_all = (int64_t)t->n_layer * t->n_expert;
    for (int i = j->first; i < j->n; i += j->step) {
        /* experts of layers with none are skipped by read_blob's error: walk by a stride coprime to most counts */
        const int64_t x = ((int64_t)i * 7919) % n_all;
        uint64_t off;
        size_t bytes, got = 0;
        if (loader_expert_span(t->p, (int)(x / t->n_expert), (int)(x % t->n_expert), &off, &bytes)) continue;
        if (!read_blob(t, x, buf, &got, j->err, sizeof j->err)) break;
        j->bytes += got;
    }
    free(buf);
    return NULL;
}

double tier_measure_reads(expert_tier *t, int n, int threads, char *err, size_t errlen)
{
    if (threads < 1) threads = 1;
    if (threads > TIER_MAX_IO) threads = TIER_MAX_IO;
    measure_job jobs[TIER_MAX_IO];
    pthread_t th[TIER_MAX_IO];
    int started = 0;
    const double t0 = now_s();
    for (int i = 0; i < threads; i++) {
        jobs[i] = (measure_job){ t, i, n, threads, 0, "" };
        if (pthread_create(&th[i], NULL, measure_main, &jobs[i])) break;
        started++;
    }
    uint64_t bytes = 0;
    for (int i = 0; i < started; i++) {
        pthread_join(th[i], NULL);
        bytes += jobs[i].bytes;
    }
    const double dt = now_s() - t0;
    for (int i = 0; i < started; i++)
        if (jobs[i].err[0]) { err_set(err, errlen, "%s", jobs[i].err); return 0; }
    if (started == 0) { err_set(err, errlen, "cannot start a thread"); return 0; }
    return dt > 0 ? (double)bytes / dt : 0;
}

/* ------------------------------------------------------------ from a plan */

static void human(char *buf, size_t n, uint64_t b)
{
    if (b >= (1ull << 30)) snprintf(buf, n, "%.2f GiB", (double)b / (1ull << 30));
    else if (b >= (1ull << 20)) snprintf(buf, n, "%.1f MiB", (double)b / (1ull << 20));
    else snprintf(buf, n, "%.1f KiB", (double)b / 1024.0);
}

int tier_from_plan(const char *dir, const tier_plan *plan, const loaded_pack *pack, const char *profile, FILE *note,
                   expert_tier **out, char *err, size_t errlen)
{
    *out = NULL;
    if (!plan->tier) return 0;
    char e2[512];
    const uint64_t budget =
        plan->forced_slots ? (uint64_t)plan->forced_slots * tier_slot_bytes(pack) : plan->slot_budget;
    expert_tier *t = tier_create(pack, budget, plan->min_slots, 4, e2, sizeof e2);
    if (!t) {
        char a[32], b[32];
        human(a, sizeof a, plan->mem);
        human(b, sizeof b, plan->fixed);
        snprintf(err, errlen, "%s: %s of memory (%s), %s of it for the dense weights, KV cache and buffers: %s; "
                              "give more with --mem",
                 dir, a, plan->by, b, e2);
        return -1;
    }
    if (profile) {
        ec_profile pr;
        if (ec_profile_load(&pr, profile, err, errlen)) { tier_free(t); return -1; }
        int rc = tier_fill(t, &pr, profile, err, errlen);
        ec_profile_free(&pr);
        if (rc) { tier_free(t); return -1; }
    }
    *out = t;
    if (!note) return 0;
    tier_stats s;
    tier_get_stats(t, &s);
    char a[192], b[32];
    human(b, sizeof b, (uint64_t)s.slot_bytes);
    if (plan->forced_slots) {
        a[0] = 0;
    } else {
        char m[32];
        human(m, sizeof m, plan->mem);
        snprintf(a, sizeof a, " does not fit in %s of memory (%s)", m, plan->by);
    }
    fprintf(note,
            "strata: %s%s: %d of its %lld routed experts stay in memory (%s each%s), the others are read from "
            "experts.bin when the router picks them%s\n",
            dir, a, s.n_slots, (long long)s.n_experts, b, plan->forced_slots ? ", STRATA_TIER_SLOTS" : "",
            s.direct_io ? "" : " (buffered reads: this file system refuses direct I/O)");
    return 0;
}
