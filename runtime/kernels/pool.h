/* pool.h: a fixed pthreads pool that runs one parallel loop at a time.
 *
 * Contract: pool_create(n) starts n-1 workers; the caller of pool_run is the
 * n-th. pool_run(p, n_tasks, fn, arg) calls fn(arg, task, thread) once for
 * every task in 0..n_tasks-1 and returns when all are done. Thread t first
 * runs the contiguous tasks [t*n/T, (t+1)*n/T) in order, then takes tasks
 * from the back of other threads' ranges; so WHICH thread runs a task
 * varies; callers keep results
 * independent of that (each task writes its own outputs with its own
 * scratch indexed by `thread`, 0..n-1), which is what makes the model's
 * output identical for every thread count. One pool_run at a time per pool.
 * pool_create returns NULL when a thread cannot be started (nothing leaks). */
#ifndef STRATA_POOL_H
#define STRATA_POOL_H

typedef void (*pool_fn)(void *arg, int task, int thread);
typedef struct pool pool;

pool *pool_create(int n_threads);
int pool_size(const pool *p);
void pool_run(pool *p, int n_tasks, pool_fn fn, void *arg);

/* pool_run, and each thread (thread 0..n_threads-1 of the n_threads that
 * ran the loop; 0 of 1 when it ran serially) calls idle(idle_arg, thread,
 * n_threads) once after its last task, before it waits for the others:
 * a place for hints such as prefetching what that thread takes first in
 * the next loop. Results must not depend on it (it may run while other
 * threads are still inside fn). idle may be NULL. */
typedef void (*pool_idle_fn)(void *arg, int thread, int n_threads);
void pool_run_then(pool *p, int n_tasks, pool_fn fn, void *arg, pool_idle_fn idle, void *idle_arg);
void pool_free(pool *p);

#endif
