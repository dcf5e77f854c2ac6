/* The product's kernels for one type of B (gemm_nt.c includes this file once
 * per type): NT_FN(name) names the functions, NT_BTYPE is B's element type and
 * NT_LOAD_B(p, k, m) widens 16 elements of B at p + k (the first lanes of mask
 * m; the others 0) to a float vector. A is always float32, and so is every
 * operation after the load: a 16-bit B gives the bits float32 B of the same
 * values would give. */

/* A 4 x 4 block of C at rows a0..a3, columns b0..b3. Rows or columns past
 * the edge of C point at row 0 again (computed, never stored): mr x nr of the
 * block are stored. */
static NT_TARGET void NT_FN(block4x4)(int mr, int nr, int K, const float *a0, const float *a1,
                                      const float *a2, const float *a3, const NT_BTYPE *b0,
                                      const NT_BTYPE *b1, const NT_BTYPE *b2,
                                      const NT_BTYPE *b3, float alpha, float beta, float *c,
                                      int ldc) {
  const __m512 z = _mm512_setzero_ps();
  __m512 c00 = z, c01 = z, c02 = z, c03 = z, c10 = z, c11 = z, c12 = z, c13 = z;
  __m512 c20 = z, c21 = z, c22 = z, c23 = z, c30 = z, c31 = z, c32 = z, c33 = z;
  int k = 0;
  for (; k + 16 <= K; k += 16) NT_STEP((__mmask16)0xffff);
  /* the last K % 16 lanes; masked-off lanes load 0 and read nothing */
  if (k < K) NT_STEP((__mmask16)((1u << (K - k)) - 1u));
  store_row(fold4(c00, c01, c02, c03), nr, alpha, beta, c);
  if (mr > 1) store_row(fold4(c10, c11, c12, c13), nr, alpha, beta, c + ldc);
  if (mr > 2) store_row(fold4(c20, c21, c22, c23), nr, alpha, beta, c + 2 * (size_t)ldc);
  if (mr > 3) store_row(fold4(c30, c31, c32, c33), nr, alpha, beta, c + 3 * (size_t)ldc);
}

/* One row of A against eight rows of B (M = 1, decoding at batch 1): a 4 x 4
 * block would load four copies of the row; this one loads it once per eight
 * products. Columns past nr point at row 0 again and are not stored. */
static NT_TARGET void NT_FN(row1x8)(int nr, int K, const float *a, const NT_BTYPE *const b[8],
                                    float alpha, float beta, float *c) {
  const __m512 z = _mm512_setzero_ps();
  __m512 s0 = z, s1 = z, s2 = z, s3 = z, s4 = z, s5 = z, s6 = z, s7 = z;
  for (int k = 0; k < K; k += 16) {
    const __mmask16 m = K - k >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (K - k)) - 1u);
    const __m512 x = _mm512_maskz_loadu_ps(m, a + k);
    s0 = _mm512_fmadd_ps(x, NT_LOAD_B(b[0], k, m), s0);
    s1 = _mm512_fmadd_ps(x, NT_LOAD_B(b[1], k, m), s1);
    s2 = _mm512_fmadd_ps(x, NT_LOAD_B(b[2], k, m), s2);
    s3 = _mm512_fmadd_ps(x, NT_LOAD_B(b[3], k, m), s3);
    s4 = _mm512_fmadd_ps(x, NT_LOAD_B(b[4], k, m), s4);
    s5 = _mm512_fmadd_ps(x, NT_LOAD_B(b[5], k, m), s5);
    s6 = _mm512_fmadd_ps(x, NT_LOAD_B(b[6], k, m), s6);
    s7 = _mm512_fmadd_ps(x, NT_LOAD_B(b[7], k, m), s7);
  }
  store_row(fold4(s0, s1, s2, s3), nr < 4 ? nr : 4, alpha, beta, c);
  if (nr > 4) store_row(fold4(s4, s5, s6, s7), nr - 4, alpha, beta, c + 4);
}

NT_TARGET
static void NT_FN(gemm)(int M, int N, int K, float alpha, const float *a, int lda,
                        const NT_BTYPE *b, int ldb, float beta, float *c, int ldc) {
  if (M == 1) {
    for (int j = 0; j < N; j += 8) {
      const int nr = N - j < 8 ? N - j : 8;
      const NT_BTYPE *bj[8];
      for (int t = 0; t < 8; t++) bj[t] = b + (size_t)(j + (t < nr ? t : 0)) * (size_t)ldb;
      NT_FN(row1x8)(nr, K, a, bj, alpha, beta, c + j);
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
      const float *ai[4];
      for (int t = 0; t < 4; t++) ai[t] = a + (size_t)(i + (t < mr ? t : 0)) * (size_t)lda;
      NT_FN(block4x4)(mr, nr, K, ai[0], ai[1], ai[2], ai[3], bj[0], bj[1], bj[2], bj[3], alpha,
                      beta, c + (size_t)i * (size_t)ldc + j, ldc);
    }
  }
}

