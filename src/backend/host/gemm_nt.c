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
 * With more rows (beyond own_max_rows() in host_linear.c) a product over a
 * frozen buffer's weights reads B packed once into panels of 16 columns
 * (sq_gemm_nt_panels): blocks of 8 rows x 32 columns (gemm_block8.h, shared
 * with the backward's products of gemm_direct.c) broadcast A and load B in
 * the order they use it, with no lane folding; each element is one float
 * sum of fused products in k order (the bits OpenBLAS's kernels give where
 * they do not split K).
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

/* ---- the one-row product over paired bfloat16 (sq_gemm_nt_pairs) ---- */

/* Both vectors of k a paired block holds: lo = elements 0..15 (the low
 * halves, shifted up), hi = 16..31 (the high halves, masked). Row r's block
 * of a group's 32-k step is at p + 32 r. */
#define PAIR_LO(w) _mm512_castsi512_ps(_mm512_slli_epi32((w), 16))
#define PAIR_HI(w) _mm512_castsi512_ps(_mm512_and_si512((w), _mm512_set1_epi32((int)0xffff0000u)))
#define PAIR_FMA(r, x0, x1)                                                         \
  do {                                                                             \
    const __m512i w = _mm512_load_si512((const void *)(p + 32 * (r)));             \
    s##r = _mm512_fmadd_ps((x0), PAIR_LO(w), s##r);                                \
    s##r = _mm512_fmadd_ps((x1), PAIR_HI(w), s##r);                                \
  } while (0)
#define PAIR_LO_ONLY(r, x0) \
  s##r = _mm512_fmadd_ps((x0), PAIR_LO(_mm512_load_si512((const void *)(p + 32 * (r)))), s##r)
/* The group's eight rows, written out (named accumulators stay in registers) */
#define PAIR_FMA8(x0, x1)                                                               \
  do {                                                                                 \
    PAIR_FMA(0, x0, x1); PAIR_FMA(1, x0, x1); PAIR_FMA(2, x0, x1); PAIR_FMA(3, x0, x1); \
    PAIR_FMA(4, x0, x1); PAIR_FMA(5, x0, x1); PAIR_FMA(6, x0, x1); PAIR_FMA(7, x0, x1); \
  } while (0)
#define PAIR_LO8(x0)                                                                     \
  do {                                                                                  \
    PAIR_LO_ONLY(0, x0); PAIR_LO_ONLY(1, x0); PAIR_LO_ONLY(2, x0); PAIR_LO_ONLY(3, x0);  \
    PAIR_LO_ONLY(4, x0); PAIR_LO_ONLY(5, x0); PAIR_LO_ONLY(6, x0); PAIR_LO_ONLY(7, x0);  \
  } while (0)

/* One group of eight rows of B, one accumulator each: eight independent
 * chains of multiply-adds (two rows' chains wait on the multiply-add
 * latency), reading the group front to back as one stream. Each accumulator
 * adds its k in order, lo then hi of each block, and a last block of
 * K % 32 <= 16 elements is its lo half alone: the multiply-adds row1x2 does
 * over float32, so the bits are the same. The first nr rows are stored (the
 * others are the group's zero padding). */
static NT_TARGET void pairs_row1x8(int nr, int K, const float *a, const uint16_t *p, float alpha,
                                   float beta, float *c) {
  __m512 s0 = _mm512_setzero_ps(), s1 = s0, s2 = s0, s3 = s0, s4 = s0, s5 = s0, s6 = s0, s7 = s0;
  int k = 0;
  for (; k + 32 <= K; k += 32, p += 8 * 32) {
    const __m512 x0 = _mm512_loadu_ps(a + k), x1 = _mm512_loadu_ps(a + k + 16);
    PAIR_FMA8(x0, x1);
  }
  if (k < K) {
    const int left = K - k;
    const __m512 x0 = _mm512_maskz_loadu_ps(sq_lanes16(left), a + k);
    if (left > 16) {
      const __m512 x1 = _mm512_maskz_loadu_ps(sq_lanes16(left - 16), a + k + 16);
      PAIR_FMA8(x0, x1);
    } else {
      PAIR_LO8(x0);
    }
  }
  store_row(fold4(s0, s1, s2, s3), nr < 4 ? nr : 4, alpha, beta, c);
  if (nr > 4) store_row(fold4(s4, s5, s6, s7), nr - 4, alpha, beta, c + 4);
}

/* Groups of eight rows of B outside, every row of A inside them: a group
 * stays in L1 while A streams past, so B is read from memory once. */
void sq_gemm_nt_pairs(int M, int N, int K, float alpha, const float *a, int lda,
                      const uint16_t *pairs, int n0, float beta, float *c, int ldc) {
  const size_t group = 8 * (size_t)sq_gemm_pairs_row(K);
  const uint16_t *first = pairs + (size_t)(n0 / 8) * group;
  for (int j = 0; j < N; j += 8) {
    const int nr = N - j < 8 ? N - j : 8;
    const uint16_t *p = first + (size_t)(j / 8) * group;
    for (int i = 0; i < M; i++)
      pairs_row1x8(nr, K, a + (size_t)i * (size_t)lda, p, alpha, beta,
                   c + (size_t)i * (size_t)ldc + j);
  }
}

/* ---- the packed-weight product (sq_gemm_nt_panels) ---- */

/* 8 rows of A x 32 columns (two panels; one past N - 16 columns): the
 * blocks of gemm_block8.h over packed B; the last 1-4 rows of a product in
 * the 4-row block. */
static NT_TARGET void panel8x32(int mr, int K, const float *a, int lda, const float *p0,
                                const float *p1, __mmask16 m0, __mmask16 m1, float alpha,
                                float beta, float *c, int ldc) {
  if (mr <= 4)
    sq_block8(4, 1, 0, 0, 0, mr, K, a, lda, p0, p1, 16, m0, m1, alpha, beta, c, ldc);
  else
    sq_block8(8, 1, 0, 0, 0, mr, K, a, lda, p0, p1, 16, m0, m1, alpha, beta, c, ldc);
}
static NT_TARGET void panel8x16(int mr, int K, const float *a, int lda, const float *p0,
                                __mmask16 m0, float alpha, float beta, float *c, int ldc) {
  if (mr <= 4)
    sq_block8(4, 0, 0, 0, 0, mr, K, a, lda, p0, p0, 16, m0, 0, alpha, beta, c, ldc);
  else
    sq_block8(8, 0, 0, 0, 0, mr, K, a, lda, p0, p0, 16, m0, 0, alpha, beta, c, ldc);
}

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
 * meanwhile). With decode's few rows the chunk is all of A. */
static NT_TARGET void panels_f32(int M, int N, int K, float alpha, const float *a, int lda,
                                 const float *panels, int n0, float beta, float *c, int ldc) {
  const size_t panel = (size_t)K * 16;
  const float *first = panels + (size_t)(n0 / 16) * panel;
  int chunk = (int)((chunk_bytes() / sizeof(float)) / (size_t)K) / 8 * 8;
  if (chunk < 8) chunk = 8;
  for (int i0 = 0; i0 < M; i0 += chunk) {
    const int i1 = M - i0 < chunk ? M : i0 + chunk;
    for (int j = 0; j < N; j += 32) {
      const float *p0 = first + (size_t)(j / 16) * panel;
      const __mmask16 m0 = sq_lanes16(N - j), m1 = sq_lanes16(N - j - 16);
      for (int i = i0; i < i1; i += 8) {
        const int mr = i1 - i < 8 ? i1 - i : 8;
        const float *ai = a + (size_t)i * (size_t)lda;
        float *ci = c + (size_t)i * (size_t)ldc + j;
        if (N - j > 16)
          panel8x32(mr, K, ai, lda, p0, p0 + panel, m0, m1, alpha, beta, ci, ldc);
        else /* one panel left */
          panel8x16(mr, K, ai, lda, p0, m0, alpha, beta, ci, ldc);
      }
    }
  }
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
  panels_f32(M, N, K, alpha, a, lda, panels, n0, beta, c, ldc);
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

void sq_gemm_nt_pairs(int M, int N, int K, float alpha, const float *a, int lda,
                      const uint16_t *pairs, int n0, float beta, float *c, int ldc) {
  (void)M, (void)N, (void)K, (void)alpha, (void)a, (void)lda, (void)pairs, (void)n0;
  (void)beta, (void)c, (void)ldc;
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

int sq_gemm_pairs_row(int K) { return (K + 31) / 32 * 32; }

size_t sq_gemm_pairs_words(int N, int K) {
  return (size_t)((N + 7) / 8) * 8 * (size_t)sq_gemm_pairs_row(K);
}

void sq_gemm_pack_pairs(int N, int K, const float *b, int ldb, uint16_t *pairs) {
  const int row = sq_gemm_pairs_row(K);
  for (int n = 0; n < (N + 7) / 8 * 8; n++) {
    /* group n / 8, then block by block, row n % 8's 32 words in each */
    uint16_t *out = pairs + (size_t)(n / 8) * 8 * (size_t)row + (size_t)(n % 8) * 32;
    for (int k0 = 0; k0 < row; k0 += 32, out += 8 * 32) {
      uint16_t w[32] = {0}; /* elements k0 .. k0 + 31 of row n; 0 past K or N */
      if (n < N && k0 < K)
        sq_halfwidth_bits_n(b + (size_t)n * (size_t)ldb + k0, w,
                            (size_t)(K - k0 < 32 ? K - k0 : 32), SQ_HALF_BF16);
      for (int j = 0; j < 16; j++) {
        out[2 * j] = w[j];
        out[2 * j + 1] = w[16 + j];
      }
    }
  }
}
