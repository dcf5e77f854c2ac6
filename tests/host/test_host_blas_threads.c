/* OpenBLAS's own threads once the host path has sized its pool
 * (src/backend/host/threads.c): the pthread build of OpenBLAS starts its
 * workers when it is loaded and they spin for a tenth of a second, so the
 * host path stops them when it sets OpenBLAS to one thread. Run with
 * SEQCL_THREADS=1 (meson.build), so that afterwards the process must have
 * exactly one thread; OpenBLAS must still compute a product correctly, and
 * must not start its workers again for it. Where OpenBLAS started no
 * workers (one core, or its serial build) the count before says so. */
#include <dirent.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cblas.h>
#include <cmocka.h>

#include "../common/test_main.h"
#include "backend/host/host_threads.h"

/* the threads of this process: the entries of /proc/self/task */
static int thread_count(void) {
  DIR *d = opendir("/proc/self/task");
  if (!d) return -1;
  int n = 0;
  for (struct dirent *e; (e = readdir(d)) != NULL;)
    if (e->d_name[0] != '.') n++;
  closedir(d);
  return n;
}

static void blas_workers_stopped(void **state) {
  (void)state;
#ifndef OPENBLAS_VERSION
  skip(); /* another BLAS: no thread pool of OpenBLAS's to stop */
#else
  const int before = thread_count();
  if (before < 0) skip(); /* no /proc */
  print_message("threads before sizing the pool: %d (OpenBLAS %s)\n", before, OPENBLAS_VERSION);
  assert_int_equal(sq_host_threads(), 1);
  assert_int_equal(thread_count(), 1);

  /* a product afterwards, large enough that OpenBLAS would split it */
  enum { N = 96 };
  static float a[N * N], b[N * N], c[N * N];
  uint32_t x = 12345u;
  for (int i = 0; i < N * N; i++) {
    x = x * 1664525u + 1013904223u;
    a[i] = (float)(x >> 8) / 16777216.0f - 0.5f;
    x = x * 1664525u + 1013904223u;
    b[i] = (float)(x >> 8) / 16777216.0f - 0.5f;
  }
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, N, N, N, 1.0f, a, N, b, N, 0.0f, c, N);
  for (int i = 0; i < N; i += 7)
    for (int j = 0; j < N; j += 5) {
      double ref = 0.0;
      for (int k = 0; k < N; k++) ref += (double)a[i * N + k] * b[k * N + j];
      /* N products of terms below 0.25 in float32: within N * 2^-24 * 0.25 */
      assert_true(fabs(c[i * N + j] - ref) <= 1e-5);
    }
  assert_int_equal(thread_count(), 1);
#endif
}

SQ_TEST_MAIN(NULL, NULL, cmocka_unit_test(blas_workers_stopped))
