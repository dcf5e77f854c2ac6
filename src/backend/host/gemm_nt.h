/* The host's own product for the nn.Linear layout (gemm_nt.c):
 * C[M, N] = alpha * A[M, K] B[N, K]^T + beta * C, all row-major. */
#ifndef SQ_BACKEND_HOST_GEMM_NT_H
#define SQ_BACKEND_HOST_GEMM_NT_H

#include <stddef.h>
#include <stdint.h>

#include "core/halfwidth.h"

/* Whether this CPU runs the own kernel, i.e. has AVX-512F (detected once;
 * the other AVX-512 loops of the host path ask here too). */
int sq_gemm_nt_available(void);

/* The product; only when sq_gemm_nt_available(). With beta = 0, C is not
 * read (it may hold anything). */
void sq_gemm_nt(int M, int N, int K, float alpha, const float *a, int lda, const float *b,
                int ldb, float beta, float *c, int ldc);

/* The same product with B held as 16-bit values (width: core/halfwidth.h's
 * SQ_HALF_BF16 or SQ_HALF_F16), widened exactly on load: the bits sq_gemm_nt
 * gives for a float32 B of the same values. A binary16 B is laid out as its
 * float32 one; a bfloat16 B is paired (sq_bf16_pair_index), and b and ldb
 * must then start every row on a block (sq_gemm_nt_half_fits). */
void sq_gemm_nt_half(int M, int N, int K, float alpha, const float *a, int lda,
                     const uint16_t *b, int ldb, int width, float beta, float *c, int ldc);

/* The paired bfloat16 layout: in each block of SQ_BF16_PAIR_BLOCK elements
 * (counted from the start of the buffer), element j < 16 is stored at 2j and
 * element 16 + j at 2j + 1, so that 32-bit word j holds both (gemm_nt.c says
 * why). A copy in this layout is rounded up to whole blocks. */
#define SQ_BF16_PAIR_BLOCK 32
static inline size_t sq_bf16_pair_index(size_t i) {
  const size_t j = i % SQ_BF16_PAIR_BLOCK, half = SQ_BF16_PAIR_BLOCK / 2;
  return i - j + (j < half ? 2 * j : 2 * (j - half) + 1);
}

/* Whether sq_gemm_nt_half can read a B of this width whose first element is
 * at element offset off of its buffer, rows ldb apart and batch items sb
 * apart: always for binary16; for bfloat16 when every row starts a block. */
static inline int sq_gemm_nt_half_fits(int width, size_t off, int ldb, size_t sb, int batch) {
  if (width != SQ_HALF_BF16) return 1;
  return off % SQ_BF16_PAIR_BLOCK == 0 && ldb % SQ_BF16_PAIR_BLOCK == 0 &&
         (batch <= 1 || sb % SQ_BF16_PAIR_BLOCK == 0);
}

#endif
