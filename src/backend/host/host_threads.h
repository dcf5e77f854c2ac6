/* Thread count of the host path (threads.c): SEQCL_THREADS (default: what
 * OpenBLAS would use) for large products, one thread for small ones. */
#ifndef SQ_BACKEND_HOST_THREADS_H
#define SQ_BACKEND_HOST_THREADS_H

/* The configured thread count (SEQCL_THREADS, read once; an invalid value is
 * ignored). */
int sq_host_threads(void);
/* Tells OpenBLAS how many threads the next product of this size may use. */
void sq_host_threads_for_gemm(int M, int N, int K, int batch);

#endif
