/* The host's own product for the nn.Linear layout, C = alpha A B^T + beta C,
 * with A [M, K] and B [N, K] both read along K: the shape of every decode-step
 * product ([batch, H] x W^T) and the encoder's.
 *
 * Why not OpenBLAS here: OpenBLAS 0.3.21 does not know recent AVX-512 CPUs
 * (AMD family 26 runs its Haswell AVX2 kernels), and it packs all of W before
 * every product, which at batch 64 is the cost of the product itself spread
 * over few rows. This kernel reads A and B where they lie: each 4 x 4 block of
 * C keeps 16 AVX-512 accumulators of 16 lanes along K (4 loads of A, 4 of B,
 * 16 fused multiply-adds per 16 k), then folds each accumulator's lanes in a
 * fixed tree. Rounding: each element of C is 16 float partial sums over
 * ceil(K / 16) fused products each, then a 4-level tree: inside the K-term
 * float dot product bound the GEMM tolerance allows.
 *
 * Only built for x86-64 with GCC or Clang, and used only when the CPU has
 * AVX-512F; elsewhere (or under `seqcl bench --ablate`) OpenBLAS runs. */
#include "backend/host/gemm_nt.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#include <stdatomic.h>
#include <stdint.h>

#define NT_TARGET __attribute__((target("avx512f")))

/* The 16-lane sums of four accumulators, as one vector [sum a, b, c, d]. */
static inline __attribute__((always_inline)) NT_TARGET __m128 fold4(__m512 a, __m512 b, __m512 c,
                                                                   __m512 d) {
  /* 256-bit halves: blocks [a0+a2, a1+a3, b0+b2, b1+b3], the same for c, d */
  __m512 ab = _mm512_add_ps(_mm512_shuffle_f32x4(a, b, _MM_SHUFFLE(1, 0, 1, 0)),
                            _mm512_shuffle_f32x4(a, b, _MM_SHUFFLE(3, 2, 3, 2)));
  __m512 cd = _mm512_add_ps(_mm512_shuffle_f32x4(c, d, _MM_SHUFFLE(1, 0, 1, 0)),
                            _mm512_shuffle_f32x4(c, d, _MM_SHUFFLE(3, 2, 3, 2)));
  /* 128-bit blocks: [a, b, c, d], four partial sums each */
  __m512 s = _mm512_add_ps(_mm512_shuffle_f32x4(ab, cd, _MM_SHUFFLE(2, 0, 2, 0)),
                           _mm512_shuffle_f32x4(ab, cd, _MM_SHUFFLE(3, 1, 3, 1)));
  __m128 t0 = _mm512_extractf32x4_ps(s, 0), t1 = _mm512_extractf32x4_ps(s, 1);
  __m128 t2 = _mm512_extractf32x4_ps(s, 2), t3 = _mm512_extractf32x4_ps(s, 3);
  return _mm_hadd_ps(_mm_hadd_ps(t0, t1), _mm_hadd_ps(t2, t3));
}

/* One step of the block over 16 (or, masked, fewer) k: four loads of A, four
 * of B, sixteen fused multiply-adds. Written out: at -O2 the compiler keeps
 * named accumulators in registers, an array of them on the stack. */
#define NT_LOAD(p, m) _mm512_maskz_loadu_ps((m), (p) + k)
#define NT_ROW(i)                                         \
  c##i##0 = _mm512_fmadd_ps(x##i, y0, c##i##0);           \
  c##i##1 = _mm512_fmadd_ps(x##i, y1, c##i##1);           \
  c##i##2 = _mm512_fmadd_ps(x##i, y2, c##i##2);           \
  c##i##3 = _mm512_fmadd_ps(x##i, y3, c##i##3)
#define NT_STEP(m)                                                                  \
  do {                                                                              \
    const __m512 x0 = NT_LOAD(a0, m), x1 = NT_LOAD(a1, m), x2 = NT_LOAD(a2, m),     \
                 x3 = NT_LOAD(a3, m);                                               \
    const __m512 y0 = NT_LOAD(b0, m), y1 = NT_LOAD(b1, m), y2 = NT_LOAD(b2, m),     \
                 y3 = NT_LOAD(b3, m);                                               \
    NT_ROW(0);                                                                      \
    NT_ROW(1);                                                                      \
    NT_ROW(2);                                                                      \
    NT_ROW(3);                                                                      \
  } while (0)

/* Row i of the block: alpha * sums (+ beta * C), the first nr columns. */
static inline __attribute__((always_inline)) NT_TARGET void store_row(__m128 sums, int nr,
                                                                     float alpha, float beta,
                                                                     float *ci) {
  float s[4];
  _mm_storeu_ps(s, sums);
  for (int j = 0; j < nr; j++) ci[j] = beta == 0.0f ? alpha * s[j] : alpha * s[j] + beta * ci[j];
}

/* A 4 x 4 block of C at rows a0..a3, columns b0..b3. Rows or columns past
 * the edge of C point at row 0 again (computed, never stored): mr x nr of the
 * block are stored. */
static NT_TARGET void block4x4(int mr, int nr, int K, const float *a0, const float *a1,
                               const float *a2, const float *a3, const float *b0, const float *b1,
                               const float *b2, const float *b3, float alpha, float beta,
                               float *c, int ldc) {
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
static NT_TARGET void row1x8(int nr, int K, const float *a, const float *const b[8], float alpha,
                             float beta, float *c) {
  const __m512 z = _mm512_setzero_ps();
  __m512 s0 = z, s1 = z, s2 = z, s3 = z, s4 = z, s5 = z, s6 = z, s7 = z;
  for (int k = 0; k < K; k += 16) {
    const __mmask16 m = K - k >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (K - k)) - 1u);
    const __m512 x = _mm512_maskz_loadu_ps(m, a + k);
    s0 = _mm512_fmadd_ps(x, _mm512_maskz_loadu_ps(m, b[0] + k), s0);
    s1 = _mm512_fmadd_ps(x, _mm512_maskz_loadu_ps(m, b[1] + k), s1);
    s2 = _mm512_fmadd_ps(x, _mm512_maskz_loadu_ps(m, b[2] + k), s2);
    s3 = _mm512_fmadd_ps(x, _mm512_maskz_loadu_ps(m, b[3] + k), s3);
    s4 = _mm512_fmadd_ps(x, _mm512_maskz_loadu_ps(m, b[4] + k), s4);
    s5 = _mm512_fmadd_ps(x, _mm512_maskz_loadu_ps(m, b[5] + k), s5);
    s6 = _mm512_fmadd_ps(x, _mm512_maskz_loadu_ps(m, b[6] + k), s6);
    s7 = _mm512_fmadd_ps(x, _mm512_maskz_loadu_ps(m, b[7] + k), s7);
  }
  store_row(fold4(s0, s1, s2, s3), nr < 4 ? nr : 4, alpha, beta, c);
  if (nr > 4) store_row(fold4(s4, s5, s6, s7), nr - 4, alpha, beta, c + 4);
}

NT_TARGET
void sq_gemm_nt(int M, int N, int K, float alpha, const float *a, int lda, const float *b,
                int ldb, float beta, float *c, int ldc) {
  if (M == 1) {
    for (int j = 0; j < N; j += 8) {
      const int nr = N - j < 8 ? N - j : 8;
      const float *bj[8];
      for (int t = 0; t < 8; t++) bj[t] = b + (size_t)(j + (t < nr ? t : 0)) * (size_t)ldb;
      row1x8(nr, K, a, bj, alpha, beta, c + j);
    }
    return;
  }
  /* Columns outside, rows inside: the four rows of B stay in L1 while every
   * row block of A streams past them, so B (the weights, the large operand)
   * is read from memory once. */
  for (int j = 0; j < N; j += 4) {
    const int nr = N - j < 4 ? N - j : 4;
    const float *bj[4];
    for (int t = 0; t < 4; t++) bj[t] = b + (size_t)(j + (t < nr ? t : 0)) * (size_t)ldb;
    for (int i = 0; i < M; i += 4) {
      const int mr = M - i < 4 ? M - i : 4;
      const float *ai[4];
      for (int t = 0; t < 4; t++) ai[t] = a + (size_t)(i + (t < mr ? t : 0)) * (size_t)lda;
      block4x4(mr, nr, K, ai[0], ai[1], ai[2], ai[3], bj[0], bj[1], bj[2], bj[3], alpha, beta,
               c + (size_t)i * (size_t)ldc + j, ldc);
    }
  }
}

int sq_gemm_nt_available(void) {
  static atomic_int known = -1; /* a race only repeats the same answer */
  int k = atomic_load(&known);
  if (k < 0) {
    __builtin_cpu_init();
    k = __builtin_cpu_supports("avx512f") ? 1 : 0;
    atomic_store(&known, k);
  }
  return k;
}

#else

int sq_gemm_nt_available(void) { return 0; }

void sq_gemm_nt(int M, int N, int K, float alpha, const float *a, int lda, const float *b,
                int ldb, float beta, float *c, int ldc) {
  (void)M, (void)N, (void)K, (void)alpha, (void)a, (void)lda, (void)b, (void)ldb, (void)beta;
  (void)c, (void)ldc;
}

#endif
