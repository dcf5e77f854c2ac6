/* The host's own product for the nn.Linear layout (gemm_nt.c):
 * C[M, N] = alpha * A[M, K] B[N, K]^T + beta * C, all row-major. */
#ifndef SQ_BACKEND_HOST_GEMM_NT_H
#define SQ_BACKEND_HOST_GEMM_NT_H

#include <stdint.h>

/* Whether this CPU runs the own kernel, i.e. has AVX-512F (detected once;
 * the other AVX-512 loops of the host path ask here too). */
int sq_gemm_nt_available(void);

/* The product; only when sq_gemm_nt_available(). With beta = 0, C is not
 * read (it may hold anything). */
void sq_gemm_nt(int M, int N, int K, float alpha, const float *a, int lda, const float *b,
                int ldb, float beta, float *c, int ldc);

/* The same product with B held as 16-bit values (width: core/halfwidth.h's
 * SQ_HALF_BF16 or SQ_HALF_F16), widened exactly on load: the bits sq_gemm_nt
 * gives for a float32 B of the same values. */
void sq_gemm_nt_half(int M, int N, int K, float alpha, const float *a, int lda,
                     const uint16_t *b, int ldb, int width, float beta, float *c, int ldc);

#endif
