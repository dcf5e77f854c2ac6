/* Host products over row-major operands read where they lie, with no packing
 * (gemm_direct.c): the backward's C = alpha A B + beta C (dX = dY W) and
 * C = alpha A^T B + beta C (dW = dY^T X). Only when sq_gemm_nt_available()
 * (AVX-512F). With beta = 0, C is not read. */
#ifndef SQ_BACKEND_HOST_GEMM_DIRECT_H
#define SQ_BACKEND_HOST_GEMM_DIRECT_H

/* C[M, N] = alpha A[M, K] B[K, N] + beta C. Each element is one float sum of
 * fused products in k order. */
void sq_gemm_nn(int M, int N, int K, float alpha, const float *a, int lda, const float *b,
                int ldb, float beta, float *c, int ldc);

/* C[M, N] = alpha A^T B + beta C with A [K, M] and B [K, N]. Each element is
 * a float sum of fused products in k order within chunks of SQ_GEMM_TN_KC
 * k, the chunks added to C in order (alpha times each chunk's sum): the bits
 * do not depend on how C is split. */
#define SQ_GEMM_TN_KC 256
void sq_gemm_tn(int M, int N, int K, float alpha, const float *a, int lda, const float *b,
                int ldb, float beta, float *c, int ldc);

#endif
