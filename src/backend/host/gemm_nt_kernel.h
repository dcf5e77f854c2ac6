/* The product's kernels for one type of B (gemm_nt.c includes this file once
 * per type): NT_FN(name) names the functions, NT_BTYPE is B's element type and
 * NT_LOAD_B(p, k, m) widens 16 elements of B at p + k (the first lanes of mask
 * m; the others 0) to a float vector. A is always float32, and so is every
 * operation after the load: a 16-bit B gives the bits float32 B of the same
 * values would give. */

/* An R x 4 block of C at rows a0..a(R-1), columns b0..b3 (R = 1 to 4, a
 * constant: the block of 4 rows, and the last rows of a product whose M is not
 * a multiple of 4, without the multiply-adds of rows that are not there).
 * Columns past the edge of C point at row 0 again (computed, never stored):
 * R x nr of the block are stored. Each element's sum is the same whatever R. */
static inline __attribute__((always_inline)) NT_TARGET void NT_FN(block_rx4)(
    const int R, int nr, int K, const float *a0, const float *a1, const float *a2,
    const float *a3, const NT_BTYPE *b0, const NT_BTYPE *b1, const NT_BTYPE *b2,
    const NT_BTYPE *b3, float alpha, float beta, float *c, int ldc) {
  const __m512 z = _mm512_setzero_ps();
  __m512 c00 = z, c01 = z, c02 = z, c03 = z, c10 = z, c11 = z, c12 = z, c13 = z;
  __m512 c20 = z, c21 = z, c22 = z, c23 = z, c30 = z, c31 = z, c32 = z, c33 = z;
  int k = 0;
  for (; k + 16 <= K; k += 16) NT_STEP((__mmask16)0xffff, R);
  /* the last K % 16 lanes; masked-off lanes load 0 and read nothing */
  if (k < K) NT_STEP((__mmask16)((1u << (K - k)) - 1u), R);
  store_row(fold4(c00, c01, c02, c03), nr, alpha, beta, c);
  if (R > 1) store_row(fold4(c10, c11, c12, c13), nr, alpha, beta, c + ldc);
  if (R > 2) store_row(fold4(c20, c21, c22, c23), nr, alpha, beta, c + 2 * (size_t)ldc);
  if (R > 3) store_row(fold4(c30, c31, c32, c33), nr, alpha, beta, c + 3 * (size_t)ldc);
}

/* Rows i .. i+mr-1 of A (mr = 1 to 4) against the four rows of B at bj. */
static NT_TARGET void NT_FN(block4)(int mr, int nr, int K, const float *ai, int lda,
                                    const NT_BTYPE *const bj[4], float alpha, float beta,
                                    float *c, int ldc) {
  const float *a1 = ai + lda, *a2 = a1 + lda, *a3 = a2 + lda;
#define NT_BLOCK(R)                                                                          \
  NT_FN(block_rx4)(R, nr, K, ai, a1, a2, a3, bj[0], bj[1], bj[2], bj[3], alpha, beta, c, ldc)
  switch (mr) {
  case 1: NT_BLOCK(1); break;
  case 2: NT_BLOCK(2); break;
  case 3: NT_BLOCK(3); break;
  default: NT_BLOCK(4); break;
  }
#undef NT_BLOCK
}

/* One row of A against two rows of B (M = 1, decoding at batch 1), four
 * vectors of k per pass. Two rows rather than more: each pair of rows is one
 * run of memory read front to back, which the hardware prefetches well,
 * where eight rows 1 KB apart read 64 bytes of each at a time were eight
 * short streams (a Zen 4 core read 3-60 % more weight bytes per second this
 * way at most shapes, bench/gemm_batch1.c). Each accumulator still adds its k
 * in order, 16 lanes apart, and fold4 folds it with the tree block_rx4 uses:
 * the bits of the other shapes. A second row past nr is row 0 again and is
 * not stored. */
static NT_TARGET void NT_FN(row1x2)(int nr, int K, const float *a, const NT_BTYPE *b0,
                                    const NT_BTYPE *b1, float alpha, float beta, float *c) {
  const __mmask16 all = (__mmask16)0xffff;
  __m512 s0 = _mm512_setzero_ps(), s1 = s0;
  int k = 0;
  for (; k + 64 <= K; k += 64) {
    const __m512 x0 = _mm512_loadu_ps(a + k), x1 = _mm512_loadu_ps(a + k + 16);
    const __m512 x2 = _mm512_loadu_ps(a + k + 32), x3 = _mm512_loadu_ps(a + k + 48);
    s0 = _mm512_fmadd_ps(x0, NT_LOAD_B(b0, k, all), s0);
    s1 = _mm512_fmadd_ps(x0, NT_LOAD_B(b1, k, all), s1);
    s0 = _mm512_fmadd_ps(x1, NT_LOAD_B(b0, k + 16, all), s0);
    s1 = _mm512_fmadd_ps(x1, NT_LOAD_B(b1, k + 16, all), s1);
    s0 = _mm512_fmadd_ps(x2, NT_LOAD_B(b0, k + 32, all), s0);
    s1 = _mm512_fmadd_ps(x2, NT_LOAD_B(b1, k + 32, all), s1);
    s0 = _mm512_fmadd_ps(x3, NT_LOAD_B(b0, k + 48, all), s0);
    s1 = _mm512_fmadd_ps(x3, NT_LOAD_B(b1, k + 48, all), s1);
  }
  for (; k < K; k += 16) {
    const __mmask16 m = K - k >= 16 ? all : (__mmask16)((1u << (K - k)) - 1u);
    const __m512 x = _mm512_maskz_loadu_ps(m, a + k);
    s0 = _mm512_fmadd_ps(x, NT_LOAD_B(b0, k, m), s0);
    s1 = _mm512_fmadd_ps(x, NT_LOAD_B(b1, k, m), s1);
  }
  store_row(fold4(s0, s1, s0, s1), nr, alpha, beta, c);
}

NT_TARGET
static void NT_FN(gemm)(int M, int N, int K, float alpha, const float *a, int lda,
                        const NT_BTYPE *b, int ldb, float beta, float *c, int ldc) {
  if (M == 1) {
    for (int j = 0; j < N; j += 2) {
      const NT_BTYPE *b0 = b + (size_t)j * (size_t)ldb;
      const int nr = N - j < 2 ? 1 : 2;
      NT_FN(row1x2)(nr, K, a, b0, nr > 1 ? b0 + ldb : b0, alpha, beta, c + j);
    }
    return;
  }
  /* Columns outside, rows inside: the four rows of B stay in L1 while every
   * row block of A streams past them, so B (the weights, the large operand)
   * is read from memory once. */
  for (int j = 0; j < N; j += 4) {
    const int nr = N - j < 4 ? N - j : 4;
    const NT_BTYPE *bj[4];
    for (int t = 0; t < 4; t++) bj[t] = b + (size_t)(j + (t < nr ? t : 0)) * (size_t)ldb;
    for (int i = 0; i < M; i += 4) {
      const int mr = M - i < 4 ? M - i : 4;
      NT_FN(block4)(mr, nr, K, a + (size_t)i * (size_t)lda, lda, bj, alpha, beta,
                    c + (size_t)i * (size_t)ldc + j, ldc);
    }
  }
}

