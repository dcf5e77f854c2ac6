/* Thread count of the host path: SEQCL_THREADS, applied to OpenBLAS.
 *
 * OpenBLAS's default (one thread per core) loses badly on the decode-step
 * shapes ([N, H] x [H, 3H] with N = 1..64): waking its pool costs more than
 * the product itself, several times more on a loaded machine. So products
 * below SQ_THREADS_MIN_FLOPS run on one thread, and only the large hoisted
 * GEMMs (the encoder's input projection over every time step, the key
 * projection, training's batched products) get the configured count.
 *
 * OpenBLAS's thread count is process-wide, and changing it while another
 * thread's product runs on the pool is not safe. Contexts on different
 * threads may run host products at the same time, so setting the count and
 * running the product form one critical section (sq_host_blas_begin/end). */
#include <pthread.h>
#include <stdlib.h>

#include <cblas.h>

#include "backend/host/host_threads.h"
#include "bench/ablate.h"

/* Below this many multiply-adds a second thread did not pay on the loaded
 * 2-core machine: the decode-step products (at batch 64, H 256: 12-17 M each)
 * ran faster on one thread (`seqcl bench --ablate`, row small_gemm_1_thread). */
#define SQ_THREADS_MIN_FLOPS (32.0 * 1024 * 1024)

static pthread_once_t config_once = PTHREAD_ONCE_INIT;
static int configured = 1; /* written once under config_once */
static pthread_mutex_t blas_lock = PTHREAD_MUTEX_INITIALIZER;
static int current = 0; /* what OpenBLAS was last told (0: unknown); under blas_lock */

static void read_config(void) {
  int n = 1;
  const char *env = getenv("SEQCL_THREADS");
  if (env && *env) {
    char *end = NULL;
    long v = strtol(env, &end, 10);
    if (end && *end == '\0' && v >= 1 && v <= 256) n = (int)v;
  } else {
#ifdef OPENBLAS_VERSION
    /* unset: as many threads as OpenBLAS would use, for the large products */
    n = openblas_get_num_threads();
    if (n < 1) n = 1;
#endif
  }
  configured = n;
}

int sq_host_threads(void) {
  pthread_once(&config_once, read_config);
  return configured;
}

void sq_host_blas_begin(int M, int N, int K, int batch) {
  const double macs = (double)M * N * K * (batch > 0 ? batch : 1);
  const int small = macs < SQ_THREADS_MIN_FLOPS && !(sq_ablated() & SQ_ABL_THREADS);
  const int n = small ? 1 : sq_host_threads();
  pthread_mutex_lock(&blas_lock);
  if (n != current) {
#ifdef OPENBLAS_VERSION
    openblas_set_num_threads(n);
#endif
    current = n;
  }
}

void sq_host_blas_end(void) { pthread_mutex_unlock(&blas_lock); }
