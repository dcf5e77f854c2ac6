/* What the two small-GEMM files (gemv.cl, gemm_lanes.cl) start with: the row
 * block and its dot products against one row of B. src/backend/opencl/
 * program.c compiles each of them with this file in front (the program cache
 * keys on both texts).
 *
 * A block is RM rows of A, held as separate variables (no private arrays:
 * simple for every compiler and for Oclgrind's shadow memory); EACH(X)
 * expands X(r) for r < RM. */
#ifndef RM
#define RM 4
#endif

#if RM == 1
#define EACH(X) X(0)
#elif RM == 2
#define EACH(X) X(0) X(1)
#elif RM == 4
#define EACH(X) X(0) X(1) X(2) X(3)
#elif RM == 8
#define EACH(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7)
#else
#error "RM must be 1, 2, 4 or 8"
#endif

/* Declares s0 .. s(RM-1): row m0 + r of A (from a0, row stride lda) dotted
 * with brow over k = first, first + step, ...: float4 loads up to K rounded
 * down to a multiple of 4 (k = 4 first, stepping 4 step), then the last
 * K % 4 values one at a time (k = K4 + first, stepping step). gemv.cl's
 * work-item takes the whole row (0, 1), a lane of gemm_lanes.cl its slice
 * (lane, LK). Rows past M read row M - 1 instead (always valid) and are never
 * stored, so the loop body stays branch-free. Uses the kernel's M, K, lda,
 * m0, a0 and brow. */
#define GEMM_ROW_DECL(r)                                                 \
  __global const float *ar##r = a0 + (size_t)min(m0 + r, M - 1) * lda; \
  float4 acc##r = (float4)(0.0f);
#define GEMM_ROW_STEP4(r) acc##r += vload4(0, ar##r + k) * bv;
/* dot() rather than .x + .y + ...: Oclgrind 21.10 crashes on extracting the
 * lanes of a private float4 under its uninitialised-value checker. */
#define GEMM_ROW_REDUCE(r) float s##r = dot(acc##r, (float4)(1.0f));
#define GEMM_ROW_STEP1(r) s##r = mad(ar##r[k], bk, s##r);
#define GEMM_ROW_SUMS(first, step)                                   \
  EACH(GEMM_ROW_DECL)                                                \
  const int K4 = K & ~3;                                             \
  for (int k = 4 * (first); k < K4; k += 4 * (step)) {               \
    const float4 bv = vload4(0, brow + k);                           \
    EACH(GEMM_ROW_STEP4)                                             \
  }                                                                  \
  EACH(GEMM_ROW_REDUCE)                                              \
  for (int k = K4 + (first); k < K; k += (step)) {                   \
    const float bk = brow[k];                                        \
    EACH(GEMM_ROW_STEP1)                                             \
  }
