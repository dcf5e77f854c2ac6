/* The host worker pool (src/backend/host/pool.c): every task of a job runs
 * exactly once, whatever the task count, from nested calls and from several
 * application threads at once; sq_pool_for covers its range exactly once;
 * the split arithmetic; sq_run_tasks keeps failing tasks' messages off the
 * context's. Run with SEQCL_THREADS=3 (meson.build), so the pool
 * has two workers even on a one-core machine. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "../common/test_main.h"
#include "backend/host/host_threads.h"
#include "backend/host/pool.h"
#include "core/error.h"
#include "ops/ops.h"

#include <seqcl/seqcl.h>

enum { MAX_TASKS = 300 };

typedef struct count_job {
  atomic_int hits[MAX_TASKS];
  int nested; /* each task also runs a small job of its own */
} count_job;

static void inner_task(void *arg, int t) {
  atomic_fetch_add((atomic_int *)arg + t, 1);
}

static void count_task(void *arg, int t) {
  count_job *j = arg;
  atomic_fetch_add(&j->hits[t], 1);
  if (j->nested) {
    atomic_int inner[5];
    for (int i = 0; i < 5; i++) atomic_init(&inner[i], 0);
    sq_pool_run(5, inner_task, inner); /* the pool is busy: runs on this thread */
    for (int i = 0; i < 5; i++) assert_int_equal(atomic_load(&inner[i]), 1);
  }
}

static void run_and_check(int tasks, int nested) {
  count_job *j = calloc(1, sizeof *j);
  assert_non_null(j);
  j->nested = nested;
  sq_pool_run(tasks, count_task, j);
  for (int t = 0; t < MAX_TASKS; t++)
    if (atomic_load(&j->hits[t]) != (t < tasks ? 1 : 0))
      fail_msg("%d tasks%s: task %d ran %d times", tasks, nested ? " (nested)" : "", t,
               atomic_load(&j->hits[t]));
  free(j);
}

static void every_task_once(void **state) {
  (void)state;
  assert_int_equal(sq_host_threads(), 3);
  for (int tasks = 0; tasks <= 40; tasks++) run_and_check(tasks, 0);
  run_and_check(MAX_TASKS, 0);
  /* many small jobs in a row: the workers keep up with generation changes */
  for (int r = 0; r < 2000; r++) run_and_check(3, 0);
}

static void nested_calls_run_inline(void **state) {
  (void)state;
  for (int tasks = 1; tasks <= 9; tasks++) run_and_check(tasks, 1);
}

static void *app_thread(void *arg) {
  (void)arg;
  for (int r = 0; r < 300; r++) run_and_check(1 + r % 11, r % 3 == 0);
  return NULL;
}

/* Several application threads share the one pool: whoever finds it busy runs
 * its job alone, and nobody's tasks are lost or run twice. */
static void concurrent_callers(void **state) {
  (void)state;
  pthread_t t[4];
  for (int i = 0; i < 4; i++) assert_int_equal(pthread_create(&t[i], NULL, app_thread, NULL), 0);
  for (int i = 0; i < 4; i++) assert_int_equal(pthread_join(t[i], NULL), 0);
}

/* Sleeping workers wake for the next job (idle beyond their 0.2 ms watch). */
static void jobs_after_idle(void **state) {
  (void)state;
  for (int r = 0; r < 3; r++) {
    struct timespec ts = {0, 5 * 1000 * 1000};
    nanosleep(&ts, NULL);
    run_and_check(17, 0);
  }
}

typedef struct cover_job {
  atomic_int *hits;
  atomic_int calls;
} cover_job;

static void cover_range(void *arg, int lo, int hi) {
  cover_job *c = arg;
  assert_true(lo < hi);
  atomic_fetch_add(&c->calls, 1);
  for (int i = lo; i < hi; i++) atomic_fetch_add(&c->hits[i], 1);
}

static void pool_for_covers_range(void **state) {
  (void)state;
  static const int ns[] = {1, 2, 3, 17, 1000, 65537};
  for (size_t k = 0; k < sizeof ns / sizeof ns[0]; k++)
    for (int heavy = 0; heavy < 2; heavy++) {
      const int n = ns[k];
      cover_job c;
      c.hits = calloc((size_t)n, sizeof *c.hits);
      assert_non_null(c.hits);
      atomic_init(&c.calls, 0);
      sq_pool_for(NULL, n, heavy ? 1e9 : 1.0, cover_range, &c);
      for (int i = 0; i < n; i++)
        if (atomic_load(&c.hits[i]) != 1)
          fail_msg("n %d: index %d covered %d times", n, i, atomic_load(&c.hits[i]));
      /* light work stays one part; heavy work is split, at most one part per
       * thread and never more parts than items */
      const int want = heavy ? (n < 3 ? n : 3) : 1;
      assert_int_equal(atomic_load(&c.calls), want);
      free(c.hits);
    }
}

static void split_arithmetic(void **state) {
  (void)state;
  for (int n = 0; n <= 50; n++)
    for (int parts = 1; parts <= 7; parts++) {
      int expect_lo = 0;
      for (int p = 0; p < parts; p++) {
        int lo, hi;
        sq_pool_range(n, parts, p, &lo, &hi);
        assert_int_equal(lo, expect_lo);
        assert_true(hi - lo == n / parts || hi - lo == n / parts + 1);
        expect_lo = hi;
      }
      assert_int_equal(expect_lo, n);
    }
  /* at least 64 K multiply-adds per part */
  assert_int_equal(sq_pool_parts(NULL, 64, 100000.0), 1);
  assert_int_equal(sq_pool_parts(NULL, 64, 140000.0), 2);
  assert_int_equal(sq_pool_parts(NULL, 64, 1e9), 3);
  assert_int_equal(sq_pool_parts(NULL, 2, 1e9), 2);
  assert_int_equal(sq_pool_parts(NULL, 0, 1e9), 1);
}

/* Tasks of sq_run_tasks that fail, with one thread per task (3: at once on
 * the pool) and fewer (2: one after the other on the caller): each task's
 * failure is its own thread's message, the context's message stays what the
 * caller last set, and the caller's next failure is published again. */
typedef struct failing_tasks {
  seqcl_ctx *ctx;
  char msg[3][64];
} failing_tasks;

static void failing_task(void *arg, int t) {
  failing_tasks *j = arg;
  sq_fail(j->ctx, SEQCL_ERR_INVALID_ARGUMENT, "task %d failed", t);
  snprintf(j->msg[t], sizeof j->msg[t], "%s", seqcl_last_message());
}

static void tasks_keep_messages_private(void **state) {
  (void)state;
  seqcl_ctx *ctx = NULL;
  assert_int_equal(seqcl_ctx_open("cpu", &ctx), SEQCL_OK);
  for (int n = 2; n <= 3; n++) {
    failing_tasks j;
    memset(&j, 0, sizeof j);
    j.ctx = ctx;
    sq_fail(ctx, SEQCL_ERR_IO, "before the tasks");
    sq_run_tasks(ctx, n, failing_task, &j);
    assert_string_equal(seqcl_ctx_message(ctx), "before the tasks");
    for (int t = 0; t < n; t++) {
      char want[64];
      snprintf(want, sizeof want, "task %d failed", t);
      assert_string_equal(j.msg[t], want);
    }
    sq_fail(ctx, SEQCL_ERR_IO, "after the tasks");
    assert_string_equal(seqcl_ctx_message(ctx), "after the tasks");
  }
  seqcl_ctx_close(ctx);
}

SQ_TEST_MAIN(NULL, NULL, cmocka_unit_test(tasks_keep_messages_private),
      cmocka_unit_test(every_task_once),       cmocka_unit_test(nested_calls_run_inline),
      cmocka_unit_test(concurrent_callers),    cmocka_unit_test(jobs_after_idle),
      cmocka_unit_test(pool_for_covers_range), cmocka_unit_test(split_arithmetic))
