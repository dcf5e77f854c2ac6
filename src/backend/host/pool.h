/* The host path's worker threads (pool.c): one process-wide pool of
 * sq_host_threads() - 1 workers that the caller joins, for splitting one
 * slot's rows or one product's rows/columns across the cores. */
#ifndef SQ_BACKEND_HOST_POOL_H
#define SQ_BACKEND_HOST_POOL_H

#include "backend/backend.h"

/* Runs fn(arg, t) for every t in [0, tasks) and returns when all have
 * returned. The caller runs tasks too. Tasks run in parallel only when the
 * pool is free: a call made while another thread's call (or this one's, from
 * inside a task) holds the pool runs its tasks one after another on the
 * caller. fn must not fail: statuses are checked before the split. */
typedef void (*sq_pool_fn)(void *arg, int task);
void sq_pool_run(int tasks, sq_pool_fn fn, void *arg);

/* The most threads the pool has, the caller's included. */
enum { SQ_POOL_MAX_THREADS = 64 };
/* Which of them this thread is: 0 for any thread that is not a worker (the
 * callers), 1 .. SQ_POOL_MAX_THREADS - 1 for the workers. Per-thread state of
 * the slots (the host's scratch rows) is kept by this number, since two
 * tasks of one job (sq_run_tasks) run slots at the same time. */
int sq_pool_thread_slot(void);

/* Into how many contiguous parts to split `items` items (rows, columns,
 * batches) costing about `work` multiply-adds in all, for a slot of backend be:
 * one part per thread, but never parts of less than SQ_POOL_MIN_WORK, nor more
 * parts than items, nor more threads than be's context allows (its
 * SEQCL_THREADS setting), nor more than one when the pool is switched off
 * (SEQCL_THREADS=1, or the context's bench ablation), nor more than one
 * inside a task of a pooled job (which runs its slots alone). be (or its context)
 * may be NULL: the pool's own limits only. */
int sq_pool_parts(const sq_backend *be, int items, double work);

/* fn(arg, lo, hi) over contiguous parts of [0, n) that together cover it,
 * in parallel where sq_pool_parts(be, n, work) says it pays. */
typedef void (*sq_pool_range_fn)(void *arg, int lo, int hi);
void sq_pool_for(const sq_backend *be, int n, double work, sq_pool_range_fn fn, void *arg);

/* Part p of `parts` of [0, n): [*lo, *hi), sizes differing by at most one. */
static inline void sq_pool_range(int n, int parts, int p, int *lo, int *hi) {
  const int base = n / parts, extra = n % parts;
  *lo = p * base + (p < extra ? p : extra);
  *hi = *lo + base + (p < extra);
}
/* The same for a count of elements beyond int (the whole-buffer copy and fill). */
static inline void sq_pool_range_size(size_t n, int parts, int p, size_t *lo, size_t *hi) {
  const size_t base = n / (size_t)parts, extra = n % (size_t)parts, q = (size_t)p;
  *lo = q * base + (q < extra ? q : extra);
  *hi = *lo + base + (q < extra);
}

#endif
