/* pool.c: see pool.h. Decode calls pool_run about ten times per layer, each
 * loop lasting tens of microseconds, so a condition-variable wake-up per
 * loop (futex, scheduler) costs as much as the work. Workers therefore spin
 * on a generation counter for a while after each loop (pausing, then
 * yielding the core so an oversubscribed pool still makes progress) and
 * only then sleep on the condition variable; the caller likewise spins for
 * the last worker before sleeping. An atomic counter hands out tasks. */
#include "runtime/pool.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>

/* About a millisecond of spinning before a thread goes to sleep. */
#define SPIN_PAUSES 2000
#define SPIN_YIELDS 2000

typedef struct worker { pool *p; int id; pthread_t th; } worker;

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
    int n_tasks;
    atomic_int next;
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

static void run_tasks(pool *p, int thread)
{
    for (;;) {
        int t = atomic_fetch_add(&p->next, 1);
        if (t >= p->n_tasks) break;
        p->fn(p->arg, t, thread);
    }
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
    if (!p->w) { free(p); return NULL; }
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->start, NULL);
    pthread_cond_init(&p->done, NULL);
    atomic_init(&p->gen, 0);
    atomic_init(&p->busy, 0);
    atomic_init(&p->quit, 0);
    atomic_init(&p->next, 0);
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

void pool_run(pool *p, int n_tasks, pool_fn fn, void *arg)
{
    if (n_tasks <= 0) return;
    if (p->n == 1 || n_tasks == 1) {
        for (int t = 0; t < n_tasks; t++) fn(arg, t, 0);
        return;
    }
    p->fn = fn;
    p->arg = arg;
    p->n_tasks = n_tasks;
    atomic_store(&p->next, 0);
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
    free(p);
}
