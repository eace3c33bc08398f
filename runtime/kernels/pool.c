/* pool.c: see pool.h. Decode calls pool_run about ten times per layer, each
 * loop lasting tens of microseconds, so a condition-variable wake-up per
 * loop (futex, scheduler) costs as much as the work. Workers therefore spin
 * on a generation counter for a while after each loop (pausing, then
 * yielding the core so an oversubscribed pool still makes progress) and
 * only then sleep on the condition variable; the caller likewise spins for
 * the last worker before sleeping.
 *
 * Tasks are handed out by ranges: thread t owns the contiguous tasks
 * [t*n/T, (t+1)*n/T) and takes them front to back; a thread whose range is
 * empty takes from the back of another's. A mat-vec's tasks are row
 * chunks, so each thread reads one contiguous stretch of the matrix, and a
 * kernel reading ahead past its chunk reads what the same thread takes
 * next (tasks handed out alternately put every other chunk on the other
 * core, where the read-ahead was wasted); the stealing keeps a late or
 * descheduled thread from holding up the loop. */
#include "runtime/kernels/pool.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>

/* About a millisecond of spinning before a thread goes to sleep. */
#define SPIN_PAUSES 2000
#define SPIN_YIELDS 2000

typedef struct worker { pool *p; int id; pthread_t th; } worker;

/* One thread's range of tasks, [lo, hi) packed as lo | hi << 32, updated
 * by compare-and-swap (the owner moves lo up, thieves move hi down); a
 * cache line each. */
typedef struct range { _Alignas(64) atomic_ullong v; } range;

struct pool {
    int n;
    worker *w;
    pthread_mutex_t mu;
    pthread_cond_t start, done;
    atomic_ulong gen;     /* bumped (release) once fn/arg/n_tasks are set */
    atomic_int busy;      /* workers still inside the current loop */
    atomic_int quit;
    int sleepers;         /* workers waiting on `start` (under mu) */
    int caller_sleeps;    /* the caller waits on `done` (under mu) */
    pool_fn fn;
    void *arg;
    pool_idle_fn idle;    /* NULL, or called by each thread after its tasks */
    void *idle_arg;
    int n_tasks;
    range *r;             /* n ranges */
};

static void relax(int spin)
{
    if (spin < SPIN_PAUSES) {
#if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause();
#endif
    } else {
        sched_yield();
    }
}

static unsigned long long pack_range(unsigned long long lo, unsigned long long hi) { return lo | hi << 32; }

/* The next task of range r (front: its owner; back: a thief), or -1. */
static int take(range *r, int front)
{
    unsigned long long v = atomic_load_explicit(&r->v, memory_order_relaxed);
    for (;;) {
        const unsigned long long lo = v & 0xffffffffu, hi = v >> 32;
        if (lo >= hi) return -1;
        const unsigned long long nv = front ? pack_range(lo + 1, hi) : pack_range(lo, hi - 1);
        if (atomic_compare_exchange_weak_explicit(&r->v, &v, nv, memory_order_relaxed, memory_order_relaxed))
            return (int)(front ? lo : hi - 1);
    }
}

static void run_tasks(pool *p, int thread)
{
    int t;
    while ((t = take(&p->r[thread], 1)) >= 0) p->fn(p->arg, t, thread);
    for (int k = 1; k < p->n; k++) {
        range *victim = &p->r[(thread + k) % p->n];
        while ((t = take(victim, 0)) >= 0) p->fn(p->arg, t, thread);
    }
    if (p->idle) p->idle(p->idle_arg, thread, p->n);
}

/* Waits until gen differs from `seen` or quit is set; returns the new gen. */
static unsigned long wait_gen(pool *p, unsigned long seen)
{
    unsigned long g;
    for (int spin = 0;; spin++) {
        g = atomic_load_explicit(&p->gen, memory_order_acquire);
        if (g != seen || atomic_load(&p->quit)) return g;
        if (spin < SPIN_PAUSES + SPIN_YIELDS) { relax(spin); continue; }
        pthread_mutex_lock(&p->mu);
        p->sleepers++;
        while ((g = atomic_load_explicit(&p->gen, memory_order_acquire)) == seen && !atomic_load(&p->quit))
            pthread_cond_wait(&p->start, &p->mu);
        p->sleepers--;
        pthread_mutex_unlock(&p->mu);
        return g;
    }
}

static void *worker_main(void *v)
{
    worker *w = v;
    pool *p = w->p;
    unsigned long seen = 0;
    for (;;) {
        seen = wait_gen(p, seen);
        if (atomic_load(&p->quit)) break;
        run_tasks(p, w->id);
        if (atomic_fetch_sub_explicit(&p->busy, 1, memory_order_acq_rel) == 1) {
            pthread_mutex_lock(&p->mu);
            if (p->caller_sleeps) pthread_cond_signal(&p->done);
            pthread_mutex_unlock(&p->mu);
        }
    }
    return NULL;
}

pool *pool_create(int n_threads)
{
    if (n_threads < 1) n_threads = 1;
    pool *p = calloc(1, sizeof *p);
    if (!p) return NULL;
    p->n = n_threads;
    p->w = calloc((size_t)n_threads, sizeof *p->w);
    p->r = aligned_alloc(_Alignof(range), (size_t)n_threads * sizeof *p->r);
    if (!p->w || !p->r) { free(p->w); free(p->r); free(p); return NULL; }
    for (int i = 0; i < n_threads; i++) atomic_init(&p->r[i].v, 0);
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->start, NULL);
    pthread_cond_init(&p->done, NULL);
    atomic_init(&p->gen, 0);
    atomic_init(&p->busy, 0);
    atomic_init(&p->quit, 0);
    for (int i = 1; i < n_threads; i++) {
        p->w[i].p = p;
        p->w[i].id = i;
        if (pthread_create(&p->w[i].th, NULL, worker_main, &p->w[i]) != 0) {
            p->n = i; /* only workers 1..i-1 exist: stop those */
            pool_free(p);
            return NULL;
        }
    }
    return p;
}

int pool_size(const pool *p) { return p->n; }

void pool_run(pool *p, int n_tasks, pool_fn fn, void *arg) { pool_run_then(p, n_tasks, fn, arg, NULL, NULL); }

void pool_run_then(pool *p, int n_tasks, pool_fn fn, void *arg, pool_idle_fn idle, void *idle_arg)
{
    if (n_tasks <= 0) return;
    if (p->n == 1 || n_tasks == 1) {
        for (int t = 0; t < n_tasks; t++) fn(arg, t, 0);
        if (idle) idle(idle_arg, 0, 1);
        return;
    }
    p->fn = fn;
    p->arg = arg;
    p->idle = idle;
    p->idle_arg = idle_arg;
    p->n_tasks = n_tasks;
    for (int i = 0; i < p->n; i++) {
        const unsigned long long lo = (unsigned long long)n_tasks * (unsigned)i / (unsigned)p->n;
        const unsigned long long hi = (unsigned long long)n_tasks * (unsigned)(i + 1) / (unsigned)p->n;
        atomic_store_explicit(&p->r[i].v, pack_range(lo, hi), memory_order_relaxed);
    }
    atomic_store(&p->busy, p->n - 1);
    pthread_mutex_lock(&p->mu);
    atomic_fetch_add_explicit(&p->gen, 1, memory_order_release);
    if (p->sleepers) pthread_cond_broadcast(&p->start);
    pthread_mutex_unlock(&p->mu);
    run_tasks(p, 0);
    for (int spin = 0; spin < SPIN_PAUSES + SPIN_YIELDS; spin++) {
        if (atomic_load_explicit(&p->busy, memory_order_acquire) == 0) return;
        relax(spin);
    }
    pthread_mutex_lock(&p->mu);
    p->caller_sleeps = 1;
    while (atomic_load_explicit(&p->busy, memory_order_acquire) > 0) pthread_cond_wait(&p->done, &p->mu);
    p->caller_sleeps = 0;
    pthread_mutex_unlock(&p->mu);
}

void pool_free(pool *p)
{
    if (!p) return;
    pthread_mutex_lock(&p->mu);
    atomic_store(&p->quit, 1);
    pthread_cond_broadcast(&p->start);
    pthread_mutex_unlock(&p->mu);
    for (int i = 1; i < p->n; i++) pthread_join(p->w[i].th, NULL);
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->start);
    pthread_cond_destroy(&p->done);
    free(p->w);
    free(p->r);
    free(p);
}
