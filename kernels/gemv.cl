/* Small GEMMs for the decoder-step shapes: C = alpha A B^T + beta C with A
 * [M, K] (M = batch rows, 1..64), B [N, K] a row-major weight (nn.Linear's
 * layout) and C [M, N]. CLBlast's tuned kernels target large tiles; at M = 1..64
 * on a CPU device its padding and tile overheads dominate, while this product is
 * bound by reading B once.
 *
 * One work-item computes RM rows of one output column j: it streams row j of B
 * once (4 floats at a time) against RM rows of A, so B is read ceil(M / RM)
 * times in all. Dimension 0 is the column, 1 the row block, 2 the batch.
 * Every buffer argument is followed by its element offset (ocl.h convention).
 * With beta == 0, C is never read (it may hold anything, NaN included). */
#ifndef RM
#define RM 4
#endif

/* Row r of the block as separate variables (no private arrays: simple for
 * every compiler and for Oclgrind's shadow memory). EACH(X) expands X(r) for
 * r < RM. */
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

__kernel void gemm_small_nt(int M, int N, int K, float alpha,
                            __global const float *A, int a_off, int lda, int sa,
                            __global const float *B, int b_off, int ldb, int sb, float beta,
                            __global float *C, int c_off, int ldc, int sc) {
  const int j = get_global_id(0);
  const int m0 = get_global_id(1) * RM;
  const int b = get_global_id(2);
  if (j >= N || m0 >= M) return;
  __global const float *brow = B + b_off + (size_t)b * sb + (size_t)j * ldb;
  __global const float *a0 = A + a_off + (size_t)b * sa;
  /* Rows past M read row M - 1 instead (always valid) and are never stored:
   * the loop body stays branch-free. */
#define DECL(r)                                                     \
  __global const float *ar##r = a0 + (size_t)min(m0 + r, M - 1) * lda; \
  float4 acc##r = (float4)(0.0f);
  EACH(DECL)
  int k = 0;
  for (; k + 4 <= K; k += 4) {
    const float4 bv = vload4(0, brow + k);
#define STEP4(r) acc##r += vload4(0, ar##r + k) * bv;
    EACH(STEP4)
  }
/* dot() rather than .x + .y + ...: Oclgrind 21.10 crashes on extracting the
 * lanes of a private float4 under its uninitialised-value checker. */
#define REDUCE(r) float s##r = dot(acc##r, (float4)(1.0f));
  EACH(REDUCE)
  for (; k < K; k++) {
    const float bk = brow[k];
#define STEP1(r) s##r = mad(ar##r[k], bk, s##r);
    EACH(STEP1)
  }
  __global float *c0 = C + c_off + (size_t)b * sc + j;
#define STORE(r)                                                     \
  if (m0 + r < M) {                                                  \
    __global float *cr = c0 + (size_t)(m0 + r) * ldc;                \
    float v = alpha * s##r;                                          \
    if (beta != 0.0f) v = mad(beta, *cr, v);                         \
    *cr = v;                                                         \
  }
  EACH(STORE)
}
