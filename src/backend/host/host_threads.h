/* Thread count of the host path (threads.c): SEQCL_THREADS (default: what
 * OpenBLAS would use) for large products, one thread for small ones. */
#ifndef SQ_BACKEND_HOST_THREADS_H
#define SQ_BACKEND_HOST_THREADS_H

/* The configured thread count (SEQCL_THREADS, read once; an invalid value is
 * ignored). */
int sq_host_threads(void);
/* Brackets every BLAS product of the host backend: begin picks the thread
 * count for a product of this size and holds the process-wide BLAS lock,
 * end releases it. */
void sq_host_blas_begin(int M, int N, int K, int batch);
void sq_host_blas_end(void);

#endif
