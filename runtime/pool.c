/* pool.c: see pool.h. Workers sleep on a condition variable between loops;
 * a generation counter tells them a new loop started, an atomic counter
 * hands out tasks, and the last worker to finish wakes the caller. */
#include "runtime/pool.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

typedef struct worker { pool *p; int id; pthread_t th; } worker;

struct pool {
    int n;
    worker *w;
    pthread_mutex_t mu;
    pthread_cond_t start, done;
    unsigned long gen;
    int busy;      /* workers still inside the current loop */
    int quit;
    pool_fn fn;
    void *arg;
    int n_tasks;
    atomic_int next;
};

static void run_tasks(pool *p, int thread)
{
    for (;;) {
        int t = atomic_fetch_add(&p->next, 1);
        if (t >= p->n_tasks) break;
        p->fn(p->arg, t, thread);
    }
}

static void *worker_main(void *v)
{
    worker *w = v;
    pool *p = w->p;
    unsigned long seen = 0;
    pthread_mutex_lock(&p->mu);
    for (;;) {
        while (!p->quit && p->gen == seen) pthread_cond_wait(&p->start, &p->mu);
        if (p->quit) break;
        seen = p->gen;
        pthread_mutex_unlock(&p->mu);
        run_tasks(p, w->id);
        pthread_mutex_lock(&p->mu);
        if (--p->busy == 0) pthread_cond_signal(&p->done);
    }
    pthread_mutex_unlock(&p->mu);
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
    pthread_mutex_lock(&p->mu);
    p->fn = fn;
    p->arg = arg;
    p->n_tasks = n_tasks;
    atomic_store(&p->next, 0);
    p->busy = p->n - 1;
    p->gen++;
    pthread_cond_broadcast(&p->start);
    pthread_mutex_unlock(&p->mu);
    run_tasks(p, 0);
    pthread_mutex_lock(&p->mu);
    while (p->busy > 0) pthread_cond_wait(&p->done, &p->mu);
    pthread_mutex_unlock(&p->mu);
}

void pool_free(pool *p)
{
    if (!p) return;
    pthread_mutex_lock(&p->mu);
    p->quit = 1;
    pthread_cond_broadcast(&p->start);
    pthread_mutex_unlock(&p->mu);
    for (int i = 1; i < p->n; i++) pthread_join(p->w[i].th, NULL);
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->start);
    pthread_cond_destroy(&p->done);
    free(p->w);
    free(p);
}
