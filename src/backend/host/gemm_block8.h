/* The 8 x 32 block every large host product runs (gemm_nt.c's packed
 * weights, gemm_direct.c's products over operands read in place): 8 rows of
 * C x 32 columns (two vectors of 16; `two` = 0: one), 16 accumulators; per k
 * two loads of B, eight broadcasts of A and sixteen fused multiply-adds, so
 * each element of C is one float sum of fused products in k order, whatever
 * the blocking around it.
 *
 * rows (a constant, 1 to 8, at least mr) computes rows 0 .. rows - 1 only
 * (a product's last rows, or a product of few rows, at their own cost). Where A and B are read (all the flags constants, so each use
 * compiles its own loop; full = 1 says mr = 8):
 *   at = 0: row i of the block is a + i lda, its k-th element a[i lda + k];
 *   at = 1: A is stored transposed ([K, M]): the element is a[k lda + i];
 *   direct = 0: B is a pair of packed panels (p0, p1: 16 floats per k,
 *     64-byte aligned, zero past the edge);
 *   direct = 1: B is read in place, row k at p0 + k bstep (p1 = p0 + 16),
 *     columns past the edge masked off (m0, m1) so nothing past them is read.
 * Rows past mr read row 0 again (computed, never stored); columns past the
 * edge are masked off in the stores. beta = 0 does not read C. */
#ifndef SQ_BACKEND_HOST_GEMM_BLOCK8_H
#define SQ_BACKEND_HOST_GEMM_BLOCK8_H

#include <immintrin.h>
#include <stddef.h>

#define B8_TARGET __attribute__((target("avx512f")))

#define B8_ROW(i, v)                                         \
  if (i < rows) {                                            \
    const __m512 x = _mm512_set1_ps(v);                      \
    c##i##0 = _mm512_fmadd_ps(x, y0, c##i##0);               \
    if (two) c##i##1 = _mm512_fmadd_ps(x, y1, c##i##1);      \
  }
#define B8_ROWS(e0, e1, e2, e3, e4, e5, e6, e7)                                        \
  {                                                                                     \
    B8_ROW(0, e0) B8_ROW(1, e1) B8_ROW(2, e2) B8_ROW(3, e3) B8_ROW(4, e4) B8_ROW(5, e5) \
    B8_ROW(6, e6) B8_ROW(7, e7)                                                         \
  }
#define B8_STORE(i)                                                              \
  if (mr > i) {                                                                  \
    float *ci = c + (size_t)(i) * (size_t)ldc;                                   \
    __m512 v0 = _mm512_mul_ps(va, c##i##0), v1 = _mm512_mul_ps(va, c##i##1);     \
    if (beta != 0.0f) {                                                          \
      v0 = _mm512_fmadd_ps(vb, _mm512_maskz_loadu_ps(m0, ci), v0);               \
      if (two) v1 = _mm512_fmadd_ps(vb, _mm512_maskz_loadu_ps(m1, ci + 16), v1); \
    }                                                                            \
    _mm512_mask_storeu_ps(ci, m0, v0);                                           \
    if (two) _mm512_mask_storeu_ps(ci + 16, m1, v1);                             \
  }
static inline __attribute__((always_inline)) B8_TARGET void sq_block8(
    const int rows, const int two, const int at, const int direct, const int full, int mr, int K,
    const float *a, int lda,
    const float *p0, const float *p1, size_t bstep, __mmask16 m0, __mmask16 m1, float alpha,
    float beta, float *c, int ldc) {
  /* at = 0: one pointer per row; at = 1: rows are neighbouring elements */
  const size_t rs = at ? 1 : (size_t)lda;
  const float *a0 = a, *a1 = a + (mr > 1 ? rs : 0), *a2 = a + (mr > 2 ? 2 * rs : 0);
  const float *a3 = a + (mr > 3 ? 3 * rs : 0), *a4 = a + (mr > 4 ? 4 * rs : 0);
  const float *a5 = a + (mr > 5 ? 5 * rs : 0), *a6 = a + (mr > 6 ? 6 * rs : 0);
  const float *a7 = a + (mr > 7 ? 7 * rs : 0);
  /* at = 1: the eight elements of row k, the missing rows read as row 0's */
  int off[8];
  for (int i = 0; i < 8; i++) off[i] = i < mr ? i : 0;
  const __m512 z = _mm512_setzero_ps();
  __m512 c00 = z, c01 = z, c10 = z, c11 = z, c20 = z, c21 = z, c30 = z, c31 = z;
  __m512 c40 = z, c41 = z, c50 = z, c51 = z, c60 = z, c61 = z, c70 = z, c71 = z;
  for (int k = 0; k < K; k++) {
    const __m512 y0 = direct ? _mm512_maskz_loadu_ps(m0, p0 + bstep * (size_t)k)
                             : _mm512_load_ps(p0 + 16 * (size_t)k);
    const __m512 y1 = !two ? z
                      : direct ? _mm512_maskz_loadu_ps(m1, p1 + bstep * (size_t)k)
                               : _mm512_load_ps(p1 + 16 * (size_t)k);
    if (at) {
      /* row k of the transposed A: the block's eight neighbouring elements */
      const float *ak = a + (size_t)k * (size_t)lda;
      if (full) /* mr == 8 */
        B8_ROWS(ak[0], ak[1], ak[2], ak[3], ak[4], ak[5], ak[6], ak[7])
      else
        B8_ROWS(ak[off[0]], ak[off[1]], ak[off[2]], ak[off[3]], ak[off[4]], ak[off[5]],
                ak[off[6]], ak[off[7]])
    } else {
      B8_ROWS(a0[k], a1[k], a2[k], a3[k], a4[k], a5[k], a6[k], a7[k])
    }
  }
  (void)a0, (void)a1, (void)a2, (void)a3, (void)a4, (void)a5, (void)a6, (void)a7, (void)off;
  const __m512 va = _mm512_set1_ps(alpha), vb = _mm512_set1_ps(beta);
  B8_STORE(0) B8_STORE(1) B8_STORE(2) B8_STORE(3) B8_STORE(4) B8_STORE(5) B8_STORE(6) B8_STORE(7)
}
#undef B8_ROW
#undef B8_ROWS
#undef B8_STORE

static inline __mmask16 sq_lanes16(int n) {
  return n >= 16 ? (__mmask16)0xffff : n > 0 ? (__mmask16)((1u << n) - 1u) : (__mmask16)0;
}

#endif
