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
 * A product over a frozen buffer's weights (a loaded model's, training's
 * parameters) reads B packed once into panels of 16 columns instead
 * (sq_gemm_nt_panels), at any row count: blocks of up to 8 rows x 32
 * columns (gemm_block8.h, shared with the backward's products of
 * gemm_direct.c) broadcast A and load B in the order they use it, with no
 * lane folding, and one row of A runs over four panels at a time (four
 * chains of multiply-adds); each element is one float sum of fused products
 * in k order (the bits OpenBLAS's kernels give where they do not split K).
 * Weights held at a reduced precision are packed as 16-bit panels, two k
 * per 32-bit word, and widened exactly as they are loaded: the same sums
 * over half the bytes.
 *
 * Only built for x86-64 with GCC or Clang, and used only when the CPU has
 * AVX-512F; elsewhere (or under `seqcl bench --ablate`) OpenBLAS runs. */
#include "backend/host/gemm_nt.h"

#include "core/halfwidth.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#include <stdatomic.h>
#include <stdint.h>
#include <unistd.h>

#include "backend/host/gemm_block8.h"

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

/* Row i of the block: alpha * sums (+ beta * C), the first nr columns. */
static inline __attribute__((always_inline)) NT_TARGET void store_row(__m128 sums, int nr,
                                                                     float alpha, float beta,
                                                                     float *ci) {
  float s[4];
  _mm_storeu_ps(s, sums);
  for (int j = 0; j < nr; j++) ci[j] = beta == 0.0f ? alpha * s[j] : alpha * s[j] + beta * ci[j];
}

#define NT_LOAD_A(p, m) _mm512_maskz_loadu_ps((m), (p) + k)
/* One step of the block over 16 (or, masked, fewer) k: R (1 to 4, a constant
 * where it is used) loads of A, four of B (NT_LOAD_B: the type being
 * compiled), 4 R fused multiply-adds. Written out: at -O2 the compiler keeps
 * named accumulators in registers, an array of them on the stack. */
#define NT_ROW(i)                                         \
  c##i##0 = _mm512_fmadd_ps(x##i, y0, c##i##0);           \
  c##i##1 = _mm512_fmadd_ps(x##i, y1, c##i##1);           \
  c##i##2 = _mm512_fmadd_ps(x##i, y2, c##i##2);           \
  c##i##3 = _mm512_fmadd_ps(x##i, y3, c##i##3)
#define NT_STEP(m, R)                                                                    \
  do {                                                                                   \
    const __m512 x0 = NT_LOAD_A(a0, m);                                                  \
    const __m512 x1 = (R) > 1 ? NT_LOAD_A(a1, m) : x0, x2 = (R) > 2 ? NT_LOAD_A(a2, m) : x0, \
                 x3 = (R) > 3 ? NT_LOAD_A(a3, m) : x0;                                   \
    const __m512 y0 = NT_LOAD_B(b0, k, m), y1 = NT_LOAD_B(b1, k, m),                     \
                 y2 = NT_LOAD_B(b2, k, m), y3 = NT_LOAD_B(b3, k, m);                     \
    NT_ROW(0);                                                                           \
    if ((R) > 1) { NT_ROW(1); }                                                          \
    if ((R) > 2) { NT_ROW(2); }                                                          \
    if ((R) > 3) { NT_ROW(3); }                                                          \
  } while (0)


/* The last K % 16 elements of a 16-bit row, zero-padded to 16: AVX-512F has no
 * masked 16-bit load (that is AVX-512BW), so the tail goes through a copy. */
static inline __attribute__((always_inline)) NT_TARGET __m256i load16_tail(const uint16_t *p,
                                                                           __mmask16 m) {
  uint16_t t[16] = {0};
  for (int i = 0; i < 16; i++)
    if (m >> i & 1) t[i] = p[i];
  return _mm256_loadu_si256((const __m256i *)t);
}
static inline __attribute__((always_inline)) NT_TARGET __m256i load16(const uint16_t *p,
                                                                      __mmask16 m) {
  return m == (__mmask16)0xffff ? _mm256_loadu_si256((const __m256i *)p) : load16_tail(p, m);
}

/* float32 B */
#define NT_FN(name) name##_f32
#define NT_BTYPE float
#define NT_LOAD_B(p, k, m) _mm512_maskz_loadu_ps((m), (p) + (k))
#include "backend/host/gemm_nt_kernel.h"
#undef NT_FN
#undef NT_BTYPE
#undef NT_LOAD_B

/* bfloat16 B: the top half of a float32, widened by a shift */
#define NT_FN(name) name##_bf16
#define NT_BTYPE uint16_t
#define NT_LOAD_B(p, k, m) \
  _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(load16((p) + (k), (m))), 16))
#include "backend/host/gemm_nt_kernel.h"
#undef NT_FN
#undef NT_BTYPE
#undef NT_LOAD_B

/* binary16 B: widened by vcvtph2ps (exact) */
#define NT_FN(name) name##_f16
#define NT_BTYPE uint16_t
#define NT_LOAD_B(p, k, m) _mm512_cvtph_ps(load16((p) + (k), (m)))
#include "backend/host/gemm_nt_kernel.h"
#undef NT_FN
#undef NT_BTYPE
#undef NT_LOAD_B

void sq_gemm_nt(int M, int N, int K, float alpha, const float *a, int lda, const float *b,
                int ldb, float beta, float *c, int ldc) {
  gemm_f32(M, N, K, alpha, a, lda, b, ldb, beta, c, ldc);
}

void sq_gemm_nt_half(int M, int N, int K, float alpha, const float *a, int lda,
                     const uint16_t *b, int ldb, int width, float beta, float *c, int ldc) {
  if (width == SQ_HALF_F16)
    gemm_f16(M, N, K, alpha, a, lda, b, ldb, beta, c, ldc);
  else
    gemm_bf16(M, N, K, alpha, a, lda, b, ldb, beta, c, ldc);
}

/* ---- the packed-weight product (sq_gemm_nt_panels) ---- */

/* mr rows of A (1 to 8) x 32 columns (two panels; one past N - 16
 * columns): the blocks of gemm_block8.h over packed B, compiled once per
 * row count so that a block of fewer than eight rows (a product's last, or
 * all of a product of 2-7 rows: beam search's K rows at batch 1) does only
 * its own rows' multiply-adds. Which rows run does not change any element's
 * sum. */
#define PANEL_ROW(r, two, p1, m1) \
  sq_block8(r, two, 0, 0, 0, mr, K, a, lda, p0, p1, 16, m0, m1, alpha, beta, c, ldc)
#define PANEL_ROWS(two, p1, m1)                       \
  switch (mr) {                                       \
  case 1: PANEL_ROW(1, two, p1, m1); break;           \
  case 2: PANEL_ROW(2, two, p1, m1); break;           \
  case 3: PANEL_ROW(3, two, p1, m1); break;           \
  case 4: PANEL_ROW(4, two, p1, m1); break;           \
  case 5: PANEL_ROW(5, two, p1, m1); break;           \
  case 6: PANEL_ROW(6, two, p1, m1); break;           \
  case 7: PANEL_ROW(7, two, p1, m1); break;           \
  default: PANEL_ROW(8, two, p1, m1); break;          \
  }
static NT_TARGET void panel8x32(int mr, int K, const float *a, int lda, const float *p0,
                                const float *p1, __mmask16 m0, __mmask16 m1, float alpha,
                                float beta, float *c, int ldc) {
  PANEL_ROWS(1, p1, m1)
}
static NT_TARGET void panel8x16(int mr, int K, const float *a, int lda, const float *p0,
                                __mmask16 m0, float alpha, float beta, float *c, int ldc) {
  PANEL_ROWS(0, p0, 0)
}
#undef PANEL_ROWS
#undef PANEL_ROW

/* ---- the 16-bit panels (sq_gemm_nt_half_panels) ----
 *
 * A pair of k of a panel is one 512-bit load (gemm_nt.h gives the layout).
 * bfloat16 widens by a shift (k) and an AND (k + 1) of each 32-bit word,
 * binary16 by vcvtph2ps of each 256-bit half, loaded on its own (extracting
 * the upper half from one 512-bit load made a one-row product 14 % slower).
 * Both are exact, so each vector is the float32 panel's row k (or k + 1). */
static inline __attribute__((always_inline)) NT_TARGET __m512 half_lo(const uint32_t *q,
                                                                     int width) {
  if (width == SQ_HALF_F16) return _mm512_cvtph_ps(_mm256_load_si256((const __m256i *)q));
  return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_load_si512((const void *)q), 16));
}
static inline __attribute__((always_inline)) NT_TARGET __m512 half_hi(const uint32_t *q,
                                                                     int width) {
  if (width == SQ_HALF_F16) return _mm512_cvtph_ps(_mm256_load_si256((const __m256i *)(q + 8)));
  return _mm512_castsi512_ps(
      _mm512_and_si512(_mm512_load_si512((const void *)q), _mm512_set1_epi32((int)0xffff0000u)));
}

/* alpha * s (+ beta * C), the lanes of m: gemm_block8.h's store. */
static inline __attribute__((always_inline)) NT_TARGET void store16(__m512 s, __mmask16 m,
                                                                   float alpha, float beta,
                                                                   float *ci) {
  __m512 v = _mm512_mul_ps(_mm512_set1_ps(alpha), s);
  if (beta != 0.0f) v = _mm512_fmadd_ps(_mm512_set1_ps(beta), _mm512_maskz_loadu_ps(m, ci), v);
  _mm512_mask_storeu_ps(ci, m, v);
}

/* rows (1 to 8, a constant) rows of A x two 16-bit panels (q0, q1: their
 * first pair; `two` = 0: q0 alone), 16 accumulators: per pair of k two
 * loads of B, sixteen broadcasts of A and 32 multiply-adds, k before k + 1,
 * and an odd K's last k from its pair's low half alone. Each element is the
 * float32 panels' sum (gemm_block8.h), k by k. */
#define HB_ROW(i, kk, y0, y1)                                                     \
  if (i < rows) {                                                                 \
    const __m512 x = _mm512_set1_ps(a##i[kk]);                                    \
    c##i##0 = _mm512_fmadd_ps(x, y0, c##i##0);                                    \
    if (two) c##i##1 = _mm512_fmadd_ps(x, y1, c##i##1);                           \
  }
#define HB_ROWS(kk, y0, y1)                                                       \
  {                                                                               \
    HB_ROW(0, kk, y0, y1) HB_ROW(1, kk, y0, y1) HB_ROW(2, kk, y0, y1)             \
    HB_ROW(3, kk, y0, y1) HB_ROW(4, kk, y0, y1) HB_ROW(5, kk, y0, y1)             \
    HB_ROW(6, kk, y0, y1) HB_ROW(7, kk, y0, y1)                                   \
  }
#define HB_STORE(i)                                                               \
  if (mr > i) {                                                                   \
    store16(c##i##0, m0, alpha, beta, c + (size_t)(i) * (size_t)ldc);             \
    if (two) store16(c##i##1, m1, alpha, beta, c + (size_t)(i) * (size_t)ldc + 16); \
  }
static inline __attribute__((always_inline)) NT_TARGET void half_block(
    const int rows, const int two, const int width, int mr, int K, const float *a, int lda,
    const uint32_t *q0, const uint32_t *q1, __mmask16 m0, __mmask16 m1, float alpha, float beta,
    float *c, int ldc) {
  const size_t rs = (size_t)lda;
  const float *a0 = a, *a1 = a + (mr > 1 ? rs : 0), *a2 = a + (mr > 2 ? 2 * rs : 0);
  const float *a3 = a + (mr > 3 ? 3 * rs : 0), *a4 = a + (mr > 4 ? 4 * rs : 0);
  const float *a5 = a + (mr > 5 ? 5 * rs : 0), *a6 = a + (mr > 6 ? 6 * rs : 0);
  const float *a7 = a + (mr > 7 ? 7 * rs : 0);
  const __m512 z = _mm512_setzero_ps();
  __m512 c00 = z, c01 = z, c10 = z, c11 = z, c20 = z, c21 = z, c30 = z, c31 = z;
  __m512 c40 = z, c41 = z, c50 = z, c51 = z, c60 = z, c61 = z, c70 = z, c71 = z;
  int k = 0;
  for (; k + 2 <= K; k += 2, q0 += 16, q1 += 16) {
    const __m512 y0 = half_lo(q0, width), y1 = two ? half_lo(q1, width) : y0;
    HB_ROWS(k, y0, y1)
    const __m512 z0 = half_hi(q0, width), z1 = two ? half_hi(q1, width) : z0;
    HB_ROWS(k + 1, z0, z1)
  }
  if (k < K) {
    const __m512 y0 = half_lo(q0, width), y1 = two ? half_lo(q1, width) : y0;
    HB_ROWS(k, y0, y1)
  }
  (void)a0, (void)a1, (void)a2, (void)a3, (void)a4, (void)a5, (void)a6, (void)a7;
  HB_STORE(0) HB_STORE(1) HB_STORE(2) HB_STORE(3) HB_STORE(4) HB_STORE(5) HB_STORE(6) HB_STORE(7)
}
#undef HB_ROW
#undef HB_ROWS
#undef HB_STORE

#define HALF_ROW(r, two, width) \
  half_block(r, two, width, mr, K, a, lda, q0, q1, m0, m1, alpha, beta, c, ldc)
#define HALF_ROWS(two, width)                         \
  switch (mr) {                                       \
  case 1: HALF_ROW(1, two, width); break;             \
  case 2: HALF_ROW(2, two, width); break;             \
  case 3: HALF_ROW(3, two, width); break;             \
  case 4: HALF_ROW(4, two, width); break;             \
  case 5: HALF_ROW(5, two, width); break;             \
  case 6: HALF_ROW(6, two, width); break;             \
  case 7: HALF_ROW(7, two, width); break;             \
  default: HALF_ROW(8, two, width); break;            \
  }
static NT_TARGET void half8x32(int width, int mr, int K, const float *a, int lda,
                               const uint32_t *q0, const uint32_t *q1, __mmask16 m0,
                               __mmask16 m1, float alpha, float beta, float *c, int ldc) {
  if (width == SQ_HALF_F16) { HALF_ROWS(1, SQ_HALF_F16) } else { HALF_ROWS(1, SQ_HALF_BF16) }
}
static NT_TARGET void half8x16(int width, int mr, int K, const float *a, int lda,
                               const uint32_t *q0, __mmask16 m0, float alpha, float beta,
                               float *c, int ldc) {
  const uint32_t *q1 = q0;
  const __mmask16 m1 = 0;
  if (width == SQ_HALF_F16) { HALF_ROWS(0, SQ_HALF_F16) } else { HALF_ROWS(0, SQ_HALF_BF16) }
}
#undef HALF_ROWS
#undef HALF_ROW

/* ---- one row of A over four panels at a time ----
 *
 * With one row the 8 x 32 blocks have two chains of multiply-adds, which
 * wait on its latency; four panels (64 columns) give four chains over four
 * streams of B, np (1 to 4, a constant) of them at a product's end. The
 * same sums, k by k, as the blocks. width: SQ_HALF_NONE for float32 panels
 * (p: floats, `panel` of them per panel), else 16-bit ones (p: words).
 * ROW1_FMA evaluates y (which loads from panel j) only when panel j exists. */
#define ROW1_FMA(j, x, y) \
  if (j < np) s##j = _mm512_fmadd_ps((x), (y), s##j)
static inline __attribute__((always_inline)) NT_TARGET void row1_panels(
    const int np, const int width, int K, const float *a, const void *p, size_t panel,
    __mmask16 mlast, float alpha, float beta, float *c) {
  __m512 s0 = _mm512_setzero_ps(), s1 = s0, s2 = s0, s3 = s0;
  if (width == SQ_HALF_NONE) {
    const float *f = p;
    for (int k = 0; k < K; k++, f += 16) {
      const __m512 x = _mm512_set1_ps(a[k]);
      ROW1_FMA(0, x, _mm512_load_ps(f));
      ROW1_FMA(1, x, _mm512_load_ps(f + panel));
      ROW1_FMA(2, x, _mm512_load_ps(f + 2 * panel));
      ROW1_FMA(3, x, _mm512_load_ps(f + 3 * panel));
    }
  } else {
    const uint32_t *q = p;
#define ROW1_PAIR(half, kk)                                      \
  {                                                              \
    const __m512 x0 = _mm512_set1_ps(a[kk]);                     \
    ROW1_FMA(0, x0, half_lo(q, width));                          \
    ROW1_FMA(1, x0, half_lo(q + panel, width));                  \
    ROW1_FMA(2, x0, half_lo(q + 2 * panel, width));              \
    ROW1_FMA(3, x0, half_lo(q + 3 * panel, width));              \
    if (half) {                                                  \
      const __m512 x1 = _mm512_set1_ps(a[kk + 1]);               \
      ROW1_FMA(0, x1, half_hi(q, width));                        \
      ROW1_FMA(1, x1, half_hi(q + panel, width));                \
      ROW1_FMA(2, x1, half_hi(q + 2 * panel, width));            \
      ROW1_FMA(3, x1, half_hi(q + 3 * panel, width));            \
    }                                                            \
  }
    int k = 0;
    for (; k + 2 <= K; k += 2, q += 16) ROW1_PAIR(1, k)
    if (k < K) ROW1_PAIR(0, k) /* an odd K's last k: its pair's low half */
#undef ROW1_PAIR
  }
  store16(s0, np == 1 ? mlast : 0xffff, alpha, beta, c);
  if (np > 1) store16(s1, np == 2 ? mlast : 0xffff, alpha, beta, c + 16);
  if (np > 2) store16(s2, np == 3 ? mlast : 0xffff, alpha, beta, c + 32);
  if (np > 3) store16(s3, mlast, alpha, beta, c + 48);
}
#undef ROW1_FMA

#define ROW1_NP(width)                                                                 \
  switch (np) {                                                                        \
  case 1: row1_panels(1, width, K, a, p, panel, mlast, alpha, beta, c); break;         \
  case 2: row1_panels(2, width, K, a, p, panel, mlast, alpha, beta, c); break;         \
  case 3: row1_panels(3, width, K, a, p, panel, mlast, alpha, beta, c); break;         \
  default: row1_panels(4, width, K, a, p, panel, mlast, alpha, beta, c); break;        \
  }
static NT_TARGET void row1x64(int width, int np, int K, const float *a, const void *p,
                              size_t panel, __mmask16 mlast, float alpha, float beta,
                              float *c) {
  if (width == SQ_HALF_NONE) {
    ROW1_NP(SQ_HALF_NONE)
  } else if (width == SQ_HALF_F16) {
    ROW1_NP(SQ_HALF_F16)
  } else {
    ROW1_NP(SQ_HALF_BF16)
  }
}
#undef ROW1_NP

/* The bytes of A a row chunk of the packed product holds: half of L2 (the
 * pair of panels streaming past it takes 2 x K x 64 bytes more), at most
 * 512 KB, 256 KB where the size is not known. Every chunk streams all of B
 * from L3 again, so a larger chunk reads B fewer times: at [64, 1536] x
 * [1536, 768] with B from L3, 128 KB chunks (16 rows) ran at 155 GFLOP/s and
 * 512 KB ones (all 64 rows) at 202 on one Zen 5 core (1 MB L2). Asked once. */
static size_t chunk_bytes(void) {
  static atomic_long known = -1; /* a race only repeats the same answer */
  long k = atomic_load(&known);
  if (k < 0) {
    const long l2 = sysconf(_SC_LEVEL2_CACHE_SIZE);
    k = l2 > 0 ? l2 / 2 : 256 * 1024;
    if (k > 512 * 1024) k = 512 * 1024;
    if (k < 64 * 1024) k = 64 * 1024;
    atomic_store(&known, k);
  }
  return (size_t)k;
}

/* Row chunks of A outside (chunk_bytes() of them, so the chunk stays in L2
 * while every panel passes it), pairs of panels inside them, row blocks of
 * 8 innermost (the two panels, 2 x K x 64 bytes, stay in L1 or L2
 * meanwhile). With decode's few rows the chunk is all of A; one row runs
 * row1x64 instead. width: as row1x64's; a panel is `panel` floats or words
 * from the panel before it. */
static NT_TARGET void panels_product(int width, int M, int N, int K, float alpha, const float *a,
                                     int lda, const void *panels, int n0, float beta, float *c,
                                     int ldc) {
  const size_t panel = width == SQ_HALF_NONE ? (size_t)K * 16 : (size_t)(K + 1) / 2 * 16;
  const size_t bytes = width == SQ_HALF_NONE ? sizeof(float) : sizeof(uint32_t);
  const char *first = (const char *)panels + (size_t)(n0 / 16) * panel * bytes;
#define PANEL_AT(j) ((const void *)(first + (size_t)((j) / 16) * panel * bytes))
  if (M == 1) {
    for (int j = 0; j < N; j += 64) {
      const int np = (N - j + 15) / 16 < 4 ? (N - j + 15) / 16 : 4;
      row1x64(width, np, K, a, PANEL_AT(j), panel, sq_lanes16(N - j - 16 * (np - 1)), alpha,
              beta, c + j);
    }
    return;
  }
  int chunk = (int)((chunk_bytes() / sizeof(float)) / (size_t)K) / 8 * 8;
  if (chunk < 8) chunk = 8;
  for (int i0 = 0; i0 < M; i0 += chunk) {
    const int i1 = M - i0 < chunk ? M : i0 + chunk;
    for (int j = 0; j < N; j += 32) {
      const void *p0 = PANEL_AT(j), *p1 = PANEL_AT(j + 16);
      const __mmask16 m0 = sq_lanes16(N - j), m1 = sq_lanes16(N - j - 16);
      for (int i = i0; i < i1; i += 8) {
        const int mr = i1 - i < 8 ? i1 - i : 8;
        const float *ai = a + (size_t)i * (size_t)lda;
        float *ci = c + (size_t)i * (size_t)ldc + j;
        if (width == SQ_HALF_NONE && N - j > 16)
          panel8x32(mr, K, ai, lda, p0, p1, m0, m1, alpha, beta, ci, ldc);
        else if (width == SQ_HALF_NONE) /* one panel left */
          panel8x16(mr, K, ai, lda, p0, m0, alpha, beta, ci, ldc);
        else if (N - j > 16)
          half8x32(width, mr, K, ai, lda, p0, p1, m0, m1, alpha, beta, ci, ldc);
        else
          half8x16(width, mr, K, ai, lda, p0, m0, alpha, beta, ci, ldc);
      }
    }
  }
#undef PANEL_AT
}

/* One gather per k of a panel: the 16 rows' k-th elements (rows past N: 0). */
static NT_TARGET void pack_avx512(int N, int K, const float *b, int ldb, float *panels) {
  const __m512i rows = _mm512_mullo_epi32(
      _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15), _mm512_set1_epi32(ldb));
  for (int p = 0; p < (N + 15) / 16; p++) {
    const __mmask16 m = sq_lanes16(N - 16 * p);
    const float *bp = b + (size_t)p * 16 * (size_t)ldb;
    float *out = panels + (size_t)p * (size_t)K * 16;
    for (int k = 0; k < K; k++)
      _mm512_store_ps(out + 16 * (size_t)k,
                      _mm512_mask_i32gather_ps(_mm512_setzero_ps(), m, rows, bp + k, 4));
  }
}

/* Panels of B's columns for C = A B (B [K, N]): each k a masked copy of 16. */
static NT_TARGET void pack_kn_avx512(int K, int N, const float *b, int ldb, float *panels) {
  for (int p = 0; p < (N + 15) / 16; p++) {
    const __mmask16 m = sq_lanes16(N - 16 * p);
    const float *bp = b + (size_t)p * 16;
    float *out = panels + (size_t)p * (size_t)K * 16;
    for (int k = 0; k < K; k++)
      _mm512_store_ps(out + 16 * (size_t)k, _mm512_maskz_loadu_ps(m, bp + (size_t)k * (size_t)ldb));
  }
}

void sq_gemm_nt_panels(int M, int N, int K, float alpha, const float *a, int lda,
                       const float *panels, int n0, float beta, float *c, int ldc) {
  panels_product(SQ_HALF_NONE, M, N, K, alpha, a, lda, panels, n0, beta, c, ldc);
}

void sq_gemm_nt_half_panels(int M, int N, int K, float alpha, const float *a, int lda,
                            const uint32_t *panels, int n0, int width, float beta, float *c,
                            int ldc) {
  panels_product(width == SQ_HALF_F16 ? SQ_HALF_F16 : SQ_HALF_BF16, M, N, K, alpha, a, lda,
                 panels, n0, beta, c, ldc);
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

void sq_gemm_nt_panels(int M, int N, int K, float alpha, const float *a, int lda,
                       const float *panels, int n0, float beta, float *c, int ldc) {
  (void)M, (void)N, (void)K, (void)alpha, (void)a, (void)lda, (void)panels, (void)n0;
  (void)beta, (void)c, (void)ldc;
}

void sq_gemm_nt(int M, int N, int K, float alpha, const float *a, int lda, const float *b,
                int ldb, float beta, float *c, int ldc) {
  (void)M, (void)N, (void)K, (void)alpha, (void)a, (void)lda, (void)b, (void)ldb, (void)beta;
  (void)c, (void)ldc;
}

void sq_gemm_nt_half(int M, int N, int K, float alpha, const float *a, int lda,
                     const uint16_t *b, int ldb, int width, float beta, float *c, int ldc) {
  (void)M, (void)N, (void)K, (void)alpha, (void)a, (void)lda, (void)b, (void)ldb, (void)width;
  (void)beta, (void)c, (void)ldc;
}

void sq_gemm_nt_half_panels(int M, int N, int K, float alpha, const float *a, int lda,
                            const uint32_t *panels, int n0, int width, float beta, float *c,
                            int ldc) {
  (void)M, (void)N, (void)K, (void)alpha, (void)a, (void)lda, (void)panels, (void)n0;
  (void)width, (void)beta, (void)c, (void)ldc;
}

#endif

size_t sq_gemm_panels_floats(int N, int K) { return (size_t)((N + 15) / 16) * 16 * (size_t)K; }

/* The panels in plain C: B's element (n, k) at b[n ns + k ks]. */
static void pack_scalar(int N, int K, const float *b, size_t ns, size_t ks, float *panels) {
  for (int p = 0; p < (N + 15) / 16; p++)
    for (int k = 0; k < K; k++)
      for (int j = 0; j < 16; j++) {
        const int n = p * 16 + j;
        panels[((size_t)p * K + k) * 16 + j] = n < N ? b[(size_t)n * ns + (size_t)k * ks] : 0.0f;
      }
}

void sq_gemm_pack_kn(int K, int N, const float *b, int ldb, float *panels) {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  if (sq_gemm_nt_available()) {
    pack_kn_avx512(K, N, b, ldb, panels);
    return;
  }
#endif
  pack_scalar(N, K, b, 1, (size_t)ldb, panels);
}

void sq_gemm_pack(int N, int K, const float *b, int ldb, float *panels) {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  /* 16 rows x ldb must index within int32 for the gather */
  if (sq_gemm_nt_available() && (long long)ldb * 15 + K < (1LL << 31)) {
    pack_avx512(N, K, b, ldb, panels);
    return;
  }
#endif
  pack_scalar(N, K, b, (size_t)ldb, 1, panels);
}

size_t sq_gemm_half_panels_words(int N, int K) {
  return (size_t)((N + 15) / 16) * 16 * (size_t)((K + 1) / 2);
}

void sq_gemm_pack_half_panels(int N, int K, const float *b, int ldb, int width,
                              uint32_t *panels) {
  const int pairs = (K + 1) / 2;
  enum { PIECE = 512 }; /* elements of a row converted at a time (even) */
  uint16_t w[PIECE];
  for (int n = 0; n < (N + 15) / 16 * 16; n++) {
    /* row n is column n % 16 of every pair of panel n / 16: bfloat16 in word
     * n % 16 (k in its low half, k + 1 in its high half), binary16 in
     * halves n % 16 (k) and 16 + n % 16 (k + 1) */
    uint16_t *out = (uint16_t *)(panels + (size_t)(n / 16) * 16 * (size_t)pairs);
    const size_t lo = width == SQ_HALF_F16 ? (size_t)(n % 16) : 2 * (size_t)(n % 16);
    const size_t hi = width == SQ_HALF_F16 ? lo + 16 : lo + 1;
    for (int k0 = 0; k0 < 2 * pairs; k0 += PIECE) {
      const int cnt = K - k0 < PIECE ? K - k0 : PIECE; /* at most 0 past N */
      if (n < N && cnt > 0)
        sq_halfwidth_bits_n(b + (size_t)n * (size_t)ldb + k0, w, (size_t)cnt, (sq_halfwidth)width);
      for (int i = 0; i < PIECE && k0 + i < 2 * pairs; i += 2) { /* zeros past K and N */
        uint16_t *pair = out + 32 * (size_t)((k0 + i) / 2);
        pair[lo] = n < N && i < cnt ? w[i] : 0;
        pair[hi] = n < N && i + 1 < cnt ? w[i + 1] : 0;
      }
    }
  }
}
