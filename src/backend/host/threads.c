/* Thread count of the host path: SEQCL_THREADS, applied to OpenBLAS.
 *
 * OpenBLAS's default (one thread per core) loses badly on the decode-step
 * shapes ([N, H] x [H, 3H] with N = 1..64): waking its pool costs more than
 * the product itself, several times more on a loaded machine. So products
 * below SQ_THREADS_MIN_FLOPS run on one thread, and only the large hoisted
 * GEMMs (the encoder's input projection over every time step, the key
 * projection, training's batched products) get the configured count. */
#include <stdlib.h>

#include <cblas.h>

#include "backend/host/host_threads.h"
#include "bench/ablate.h"

/* Below this many multiply-adds a second thread did not pay on the loaded
 * 2-core machine: the decode-step products (at batch 64, H 256: 12-17 M each)
 * ran faster on one thread (`seqcl bench --ablate`, row small_gemm_1_thread). */
#define SQ_THREADS_MIN_FLOPS (32.0 * 1024 * 1024)

static int configured = 0; /* 0: not read yet */
static int current = 0;    /* what OpenBLAS was last told; 0: unknown */

int sq_host_threads(void) {
  if (configured) return configured;
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
  return n;
}

static void set_threads(int n) {
  if (n == current) return;
#ifdef OPENBLAS_VERSION
  openblas_set_num_threads(n);
#endif
  current = n;
}

void sq_host_threads_for_gemm(int M, int N, int K, int batch) {
  const double macs = (double)M * N * K * (batch > 0 ? batch : 1);
  const int small = macs < SQ_THREADS_MIN_FLOPS && !(sq_ablated() & SQ_ABL_THREADS);
  set_threads(small ? 1 : sq_host_threads());
}
