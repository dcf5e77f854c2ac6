/* The backward's products on the host, read in place (gemm_direct.h).
 *
 * Why not OpenBLAS: it packs its operands in every call. The backward of a
 * training step multiplies each decoder step's gradient by the recurrent and
 * input weights ([rows, 3H] x [3H, H], rows <= the batch): OpenBLAS packed
 * the whole weight matrix for a product of at most 64 rows, 7 % of a G2P step
 * in packing alone. Here B's rows are read where they lie (two vectors of 16
 * columns per k, the hardware prefetcher following the row stride) and A is
 * broadcast, in the 8 x 32 blocks of gemm_block8.h that the forward's packed
 * weights run.
 *
 * C = A B: row chunks of A sized to stay in L2 outside (as in the packed
 * product), 32-column strips of B inside them, blocks of 8 rows innermost (the
 * strip, K x 128 bytes, stays in L2 meanwhile).
 * C = A^T B (weight gradients: A and B are [K, *] with K the step's rows,
 * often 1 000 and more): chunks of SQ_GEMM_TN_KC k outside, so a block's
 * share of A (kc x 32 bytes) sits in L1 while it passes every strip of B's
 * chunk (kc x N x 4 bytes, L2). */
#include "backend/host/gemm_direct.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <stddef.h>

#include "backend/host/gemm_block8.h"

static B8_TARGET void nn_f32(int M, int N, int K, float alpha, const float *a, int lda,
                             const float *b, int ldb, float beta, float *c, int ldc) {
  int chunk = K > 0 ? (int)((size_t)(512 * 1024 / sizeof(float)) / (size_t)K) / 8 * 8 : M;
  if (chunk < 8) chunk = 8;
  for (int i0 = 0; i0 < M; i0 += chunk) {
    const int i1 = M - i0 < chunk ? M : i0 + chunk;
    for (int j = 0; j < N; j += 32) {
      const __mmask16 m0 = sq_lanes16(N - j), m1 = sq_lanes16(N - j - 16);
      const float *bj = b + j;
      for (int i = i0; i < i1; i += 8) {
        const int mr = i1 - i < 8 ? i1 - i : 8;
        const float *ai = a + (size_t)i * (size_t)lda;
        float *ci = c + (size_t)i * (size_t)ldc + j;
        if (N - j > 16)
          sq_block8(8, 1, 0, 1, 0, mr, K, ai, lda, bj, bj + 16, (size_t)ldb, m0, m1, alpha, beta, ci,
                    ldc);
        else
          sq_block8(8, 0, 0, 1, 0, mr, K, ai, lda, bj, bj, (size_t)ldb, m0, 0, alpha, beta, ci, ldc);
      }
    }
  }
}

/* One chunk of k for rows i..i+mr of C, every strip of columns. */
static inline __attribute__((always_inline)) B8_TARGET void tn_rows(const int full, int mr,
                                                                    int N, int kc, float alpha,
                                                                    const float *a, int lda,
                                                                    const float *b, int ldb,
                                                                    float beta, float *c, int ldc) {
  for (int j = 0; j < N; j += 32) {
    const __mmask16 m0 = sq_lanes16(N - j), m1 = sq_lanes16(N - j - 16);
    if (N - j > 16)
      sq_block8(8, 1, 1, 1, full, mr, kc, a, lda, b + j, b + j + 16, (size_t)ldb, m0, m1, alpha,
                beta, c + j, ldc);
    else
      sq_block8(8, 0, 1, 1, full, mr, kc, a, lda, b + j, b + j, (size_t)ldb, m0, 0, alpha, beta,
                c + j, ldc);
  }
}

static B8_TARGET void tn_f32(int M, int N, int K, float alpha, const float *a, int lda,
                             const float *b, int ldb, float beta, float *c, int ldc) {
  /* K = 0 still makes one pass: C = beta C */
  for (int k0 = 0; k0 < K || k0 == 0; k0 += SQ_GEMM_TN_KC) {
    const int kc = K - k0 < SQ_GEMM_TN_KC ? K - k0 : SQ_GEMM_TN_KC;
    const float bk = k0 == 0 ? beta : 1.0f;
    const float *ak = a + (size_t)k0 * (size_t)lda, *bk0 = b + (size_t)k0 * (size_t)ldb;
    for (int i = 0; i < M; i += 8) {
      float *ci = c + (size_t)i * (size_t)ldc;
      if (M - i >= 8)
        tn_rows(1, 8, N, kc, alpha, ak + i, lda, bk0, ldb, bk, ci, ldc);
      else
        tn_rows(0, M - i, N, kc, alpha, ak + i, lda, bk0, ldb, bk, ci, ldc);
    }
    if (K == 0) break;
  }
}

void sq_gemm_nn(int M, int N, int K, float alpha, const float *a, int lda, const float *b,
                int ldb, float beta, float *c, int ldc) {
  nn_f32(M, N, K, alpha, a, lda, b, ldb, beta, c, ldc);
}

void sq_gemm_tn(int M, int N, int K, float alpha, const float *a, int lda, const float *b,
                int ldb, float beta, float *c, int ldc) {
  tn_f32(M, N, K, alpha, a, lda, b, ldb, beta, c, ldc);
}

#else

void sq_gemm_nn(int M, int N, int K, float alpha, const float *a, int lda, const float *b,
                int ldb, float beta, float *c, int ldc) {
  (void)M, (void)N, (void)K, (void)alpha, (void)a, (void)lda, (void)b, (void)ldb, (void)beta;
  (void)c, (void)ldc;
}

void sq_gemm_tn(int M, int N, int K, float alpha, const float *a, int lda, const float *b,
                int ldb, float beta, float *c, int ldc) {
  (void)M, (void)N, (void)K, (void)alpha, (void)a, (void)lda, (void)b, (void)ldb, (void)beta;
  (void)c, (void)ldc;
}

#endif
