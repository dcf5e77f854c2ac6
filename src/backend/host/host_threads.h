/* Thread count of the host path (threads.c). */
#ifndef SQ_BACKEND_HOST_THREADS_H
#define SQ_BACKEND_HOST_THREADS_H

/* The pool's thread count, process-wide: SEQCL_THREADS at the first call
 * (1..64; contexts refuse to open with any other value, so one is ignored
 * here), else one per core. The first call also sets OpenBLAS to one
 * thread: the host slots split products across seqcl's pool (pool.c). */
int sq_host_threads(void);

#endif
