/* The decoder-step GEMM in its GPU form: C = alpha A B^T + beta C with A
 * [M, K] (M = batch rows, 1..64), B [N, K] a row-major weight (nn.Linear's
 * layout) and C [M, N], as gemm_small_nt in gemv.cl computes it.
 *
 * gemm_small_nt gives one work-item a whole K-long row of B: right for a CPU
 * core, but on a GPU neighbouring work-items then read addresses K floats
 * apart, so no load coalesces, and N = 512 columns fill a few compute units
 * at most. Here LK lanes share a column: lane l reads the float4 at k = 4 l,
 * 4 (l + LK), ... so the LK lanes of a column read 16 LK consecutive bytes
 * per step, and a work-group holds CPG columns. Each lane keeps RM row sums
 * (its k slice against RM rows of A, which stay in cache: M <= 64); a
 * local-memory tree adds the LK partial sums of each row in a fixed order
 * (the same on every run), log2(LK) additions deep.
 *
 * Work-group (LK, CPG, 1); global (LK ceil(M / RM), ceil(N / CPG) CPG, batch):
 * the group index along dimension 0 is the row block. (Not batch and row
 * block folded into one dimension: the division that unfolds them compiles
 * to an instruction, freeze, that Oclgrind 21.10 cannot simulate.) Every buffer argument is followed by its
 * element offset (ocl.h convention). With beta == 0, C is never read. */
#ifndef LK
#define LK 32 /* lanes along K per column; a power of two, >= RM */
#endif
#ifndef CPG
#define CPG 4 /* columns per work-group */
#endif
/* Built with gemm_rows.cl in front: RM (default 4), EACH and GEMM_ROW_SUMS. */

/* Every work-item reaches every barrier: columns past N compute column N - 1
 * and rows past M read row M - 1 (both always valid) and are never stored, so
 * there is no early return (PoCL 3.1 corrupts memory on a return ahead of a
 * barrier). */
__kernel __attribute__((reqd_work_group_size(LK, CPG, 1)))
void gemm_lanes_nt(int M, int N, int K, float alpha,
                   __global const float *A, int a_off, int lda, int sa,
                   __global const float *B, int b_off, int ldb, int sb, float beta,
                   __global float *C, int c_off, int ldc, int sc) {
  __local float part[CPG * RM * LK];
  const int l = get_local_id(0);
  const int col = get_local_id(1);
  const int j = get_global_id(1);
  const int b = get_global_id(2);
  const int m0 = get_group_id(0) * RM;
  __global const float *brow = B + b_off + (size_t)b * sb + (size_t)min(j, N - 1) * ldb;
  __global const float *a0 = A + a_off + (size_t)b * sa;
  GEMM_ROW_SUMS(l, LK)
  __local float *mine = part + col * RM * LK;
#define PUT(r) mine[(r) * LK + l] = s##r;
  EACH(PUT)
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int s = LK / 2; s > 0; s >>= 1) {
    if (l < s) {
#define FOLD(r) mine[(r) * LK + l] += mine[(r) * LK + l + s];
      EACH(FOLD)
    }
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  /* lane r < RM stores row m0 + r of column j */
  if (l < RM && j < N && m0 + l < M) {
    __global float *cr = C + c_off + (size_t)b * sc + (size_t)(m0 + l) * ldc + j;
    float v = alpha * mine[l * LK];
    if (beta != 0.0f) v = mad(beta, *cr, v);
    *cr = v;
  }
}
