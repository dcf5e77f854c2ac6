/* Thread count of the host path: SEQCL_THREADS, else one per core as OpenBLAS
 * counts them (OPENBLAS_NUM_THREADS caps it).
 *
 * The host slots split their work across seqcl's own pool (pool.c), products
 * included, so OpenBLAS itself runs single-threaded: its pool does not pay on
 * the decode-step shapes, and two pools on the same cores would fight. The
 * setting is process-wide, unlike the other settings (core/settings.h): one
 * pool of threads serves every context, and threads cannot be added to it
 * later, so it is sized once, before the first product. A value outside
 * 1..64 never gets here: opening a context rejects it (sq_settings_from_env);
 * a context's own SEQCL_THREADS can only use fewer threads (pool.c).
 *
 * Setting OpenBLAS to one thread is not enough on its own: its pthread build
 * starts its workers when the library is loaded, and each spins on
 * sched_yield for about 2^28 cycles (0.1 s) before it sleeps. On a two-core
 * machine that spinner takes a core from seqcl's pool for the first tenth of
 * a second of every process: a 64-line decode took 0.10 s instead of 0.07 s,
 * with 0.09 s of system time. So once OpenBLAS is at one thread, its idle
 * workers are stopped with the call OpenBLAS itself makes before a fork; a
 * later multi-threaded call there would start them again. The symbol is not
 * in cblas.h and is absent from the serial and OpenMP builds, hence weak. */
#include <pthread.h>
#include <stdlib.h>

#include <cblas.h>

#include "backend/host/host_threads.h"
#include "core/settings.h"

#ifdef OPENBLAS_VERSION
extern int blas_thread_shutdown_(void) __attribute__((weak));
#endif

static pthread_once_t config_once = PTHREAD_ONCE_INIT;
static int configured = 1; /* written once under config_once */

static void read_config(void) {
  int n = 1;
#ifdef OPENBLAS_VERSION
  /* what OpenBLAS would use: one per core, or OPENBLAS_NUM_THREADS */
  n = openblas_get_num_threads();
  if (n < 1) n = 1;
#endif
  const int env = sq_threads_env(NULL); /* an invalid value fails at the context */
  if (env > 0) n = env;
  configured = n;
#ifdef OPENBLAS_VERSION
  openblas_set_num_threads(1);
  if (blas_thread_shutdown_) blas_thread_shutdown_();
#endif
}

int sq_host_threads(void) {
  pthread_once(&config_once, read_config);
  return configured;
}
