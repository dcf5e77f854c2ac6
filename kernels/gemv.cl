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
/* Built with gemm_rows.cl in front: RM (default 4), EACH and GEMM_ROW_SUMS. */

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
  GEMM_ROW_SUMS(0, 1)
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
