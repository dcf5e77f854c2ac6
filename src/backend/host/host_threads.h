/* Thread count of the host path (threads.c). */
#ifndef SQ_BACKEND_HOST_THREADS_H
#define SQ_BACKEND_HOST_THREADS_H

/* The configured thread count: SEQCL_THREADS (1..64; an invalid value is
 * ignored), else one per core. The first call also sets OpenBLAS to one
 * thread: the host slots split products across seqcl's pool (pool.c). */
int sq_host_threads(void);

#endif
