/* The host path's worker pool.
 *
 * Why not OpenBLAS's threads: the decode-step products ([N, H] x [H, 3H] with
 * N = 1..64) are too small for OpenBLAS's pool to pay, and every other slot
 * (attention, GRU gates, argmax) would stay on one core anyway. So OpenBLAS
 * runs single-threaded (threads.c) and the slots split their own rows, and
 * their products' rows or columns, across this pool.
 *
 * One job at a time: the caller that gets the owner lock publishes the job in
 * `claim` (generation | task count | next task), then it and the workers take
 * tasks with compare-and-swap until none are left, and the caller waits for
 * the workers' tasks to finish. A worker can only read the job's fn and arg after
 * claiming a task of the current generation, and the job cannot end (and be
 * replaced) before that task is done, so it never sees a half-written job.
 *
 * Idle workers watch `claim` for SPIN_NS (a decode step issues its slots
 * microseconds apart, so in a decode loop they never sleep), then sleep on a
 * condition variable; the caller wakes them only when some are asleep. */
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <time.h>

#include "backend/host/host_threads.h"
#include "backend/host/pool.h"
#include "core/ctx.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define cpu_relax() _mm_pause()
#else
#define cpu_relax() ((void)0)
#endif

/* Below this many multiply-adds (or as much other work) per part a split
 * costs more than it saves: handing a part to a watching worker and waiting
 * for it takes a few hundred nanoseconds on its own (an empty job: 0.2-0.35
 * us on a Zen 5 VM) and more with the data the part moves between the cores'
 * caches, up to about the microsecond one core needs for this much work. */
#define SQ_POOL_MIN_WORK 65536.0
/* How long an idle worker watches for the next job before it sleeps. */
#define SPIN_NS 200000L
#define MAX_WORKERS (SQ_POOL_MAX_THREADS - 1)
#define TASK_BITS 16
#define TASK_MASK ((1u << TASK_BITS) - 1)

static pthread_once_t pool_once = PTHREAD_ONCE_INIT;
static int n_workers; /* started; written once under pool_once */

/* The shared state, one cache line per group of fields that the same threads
 * write at the same moments. On separate lines, a caller taking the owner
 * lock does not pull away the line the workers watch, and a worker that sees
 * a job appear finds its function and argument in the line it just read: a
 * job handed to a watching worker costs fewer transfers between cores. */
enum { LINE = 64 };
/* The job the workers watch: generation << 32 | task count << 16 | next task,
 * then what to run (written before `claim` publishes the job). */
static struct {
  _Alignas(LINE) _Atomic uint64_t claim;
  sq_pool_fn fn;
  void *arg;
} job;
/* Tasks of the current job not yet finished (each worker's last write). */
static struct {
  _Alignas(LINE) atomic_int left;
} pending;
/* The callers' own: who holds the pool, and the job count. */
static struct {
  _Alignas(LINE) pthread_mutex_t mx;
  uint32_t generation; /* under mx */
} owner = {PTHREAD_MUTEX_INITIALIZER, 0};

static struct {
  _Alignas(LINE) pthread_mutex_t mx;
  pthread_cond_t cv;
  atomic_int count;
} sleepers = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0};

static int has_work(uint64_t c) { return (c & TASK_MASK) < ((c >> TASK_BITS) & TASK_MASK); }

static int try_claim(int *task) {
  uint64_t c = atomic_load(&job.claim);
  while (has_work(c))
    if (atomic_compare_exchange_weak(&job.claim, &c, c + 1)) {
      *task = (int)(c & TASK_MASK);
      return 1;
    }
  return 0;
}

static long elapsed_ns(const struct timespec *t0) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (t.tv_sec - t0->tv_sec) * 1000000000L + (t.tv_nsec - t0->tv_nsec);
}

/* Set while this thread runs a task of a pooled job: a slot called from inside
 * one finds the pool taken and would run its parts one after another, so
 * sq_pool_parts gives it one part (no split paid for nothing). */
static _Thread_local int in_task;

static void run_claimed(int task) {
  in_task = 1;
  job.fn(job.arg, task);
  in_task = 0;
  atomic_fetch_sub(&pending.left, 1);
}

/* 0 on threads that are not the pool's, 1 + the start order on its workers. */
static _Thread_local int thread_slot;

int sq_pool_thread_slot(void) { return thread_slot; }

static void *worker_main(void *slot) {
  thread_slot = (int)(intptr_t)slot;
  for (;;) {
    int task;
    if (try_claim(&task)) {
      run_claimed(task);
      continue;
    }
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    int found = 0;
    for (unsigned i = 1; !found; i++) {
      cpu_relax();
      found = has_work(atomic_load(&job.claim));
      if (!found && i % 64 == 0 && elapsed_ns(&t0) > SPIN_NS) break;
    }
    if (found) continue;
    /* sleepers is raised before work is looked for again, and the caller
     * publishes work before it reads sleepers (both sequentially consistent),
     * so one of the two always sees the other. */
    pthread_mutex_lock(&sleepers.mx);
    atomic_fetch_add(&sleepers.count, 1);
    while (!has_work(atomic_load(&job.claim))) pthread_cond_wait(&sleepers.cv, &sleepers.mx);
    atomic_fetch_sub(&sleepers.count, 1);
    pthread_mutex_unlock(&sleepers.mx);
  }
  return NULL;
}

static void start_workers(void) {
  int want = sq_host_threads() - 1;
  if (want > MAX_WORKERS) want = MAX_WORKERS;
  if (want < 1) return;
  /* Workers take no signals: they belong to the application's threads. */
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  pthread_attr_t attr;
  if (pthread_attr_init(&attr) == 0) {
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    for (int i = 0; i < want; i++) {
      pthread_t t;
      if (pthread_create(&t, &attr, worker_main, (void *)(intptr_t)(n_workers + 1)) != 0)
        break; /* run with fewer */
      n_workers++;
    }
    pthread_attr_destroy(&attr);
  }
  pthread_sigmask(SIG_SETMASK, &old, NULL);
}

static void run_serial(int tasks, sq_pool_fn fn, void *arg) {
  for (int t = 0; t < tasks; t++) fn(arg, t);
}

void sq_pool_run(int tasks, sq_pool_fn fn, void *arg) {
  if (tasks <= 1 || tasks > (int)TASK_MASK) {
    run_serial(tasks, fn, arg);
    return;
  }
  pthread_once(&pool_once, start_workers);
  if (n_workers == 0 || pthread_mutex_trylock(&owner.mx) != 0) {
    run_serial(tasks, fn, arg);
    return;
  }
  job.fn = fn;
  job.arg = arg;
  atomic_store(&pending.left, tasks);
  owner.generation++;
  atomic_store(&job.claim, (uint64_t)owner.generation << 32 | (uint64_t)tasks << TASK_BITS);
  if (atomic_load(&sleepers.count) > 0) {
    pthread_mutex_lock(&sleepers.mx);
    pthread_cond_broadcast(&sleepers.cv);
    pthread_mutex_unlock(&sleepers.mx);
  }
  int task;
  while (try_claim(&task)) run_claimed(task);
  /* A worker's last task may still be running; a worker preempted by another
   * process gets the core back through sched_yield. */
  for (unsigned i = 1; atomic_load(&pending.left) > 0; i++) {
    cpu_relax();
    if (i % 4096 == 0) sched_yield();
  }
  pthread_mutex_unlock(&owner.mx);
}

int sq_pool_parts(const sq_backend *be, int items, double work) {
  if (in_task) return 1;
  int parts = sq_host_threads();
  if (be && be->ctx) {
    const seqcl_ctx *ctx = be->ctx;
    if (ctx->settings.threads >= 1 && ctx->settings.threads < parts) parts = ctx->settings.threads;
    if (sq_ablated(ctx) & SQ_ABL_THREADS) parts = 1;
  }
  const double by_work = work / SQ_POOL_MIN_WORK;
  if (by_work < parts) parts = by_work < 1.0 ? 1 : (int)by_work;
  if (items < parts) parts = items < 1 ? 1 : items;
  return parts;
}

typedef struct for_job {
  sq_pool_range_fn fn;
  void *arg;
  int n, parts;
} for_job;

static void for_part(void *arg, int p) {
  const for_job *j = arg;
  int lo, hi;
  sq_pool_range(j->n, j->parts, p, &lo, &hi);
  if (lo < hi) j->fn(j->arg, lo, hi);
}

void sq_pool_for(const sq_backend *be, int n, double work, sq_pool_range_fn fn, void *arg) {
  if (n <= 0) return;
  for_job j = {fn, arg, n, sq_pool_parts(be, n, work)};
  sq_pool_run(j.parts, for_part, &j);
}
