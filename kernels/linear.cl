/* The linear family: the bias of a linear layer, the tanh of the decoder's
 * combining layer, and (training section) their backward. The GEMM itself
 * is CLBlast's or gemm_small.cl's.
 *
 * OpenCL C 1.2. Every buffer argument is followed by an int offset counted in
 * 4-byte elements; absent optional buffers arrive as a dummy buffer plus a
 * has_* flag. Global sizes are rounded up to the work-group size, so every
 * kernel checks its bounds. */

#ifndef SQ_TRAIN

/* y[r, c] += bias[c]; global (>= cols, rows). A 2-D range rather than a
 * flattened one with i / cols and i % cols: LLVM turns that division pair into
 * a `freeze` instruction, which Oclgrind's uninitialised-value checker cannot
 * simulate. */
__kernel void add_bias(__global float *y, int y_off, int rows, int cols, int ld,
                       __global const float *bias, int b_off) {
  size_t c = get_global_id(0), r = get_global_id(1);
  if (c >= (size_t)cols || r >= (size_t)rows) return;
  y[y_off + r * (size_t)ld + c] += bias[b_off + c];
}

/* x[i] = tanh(x[i]) */
__kernel void tanh_inplace(int count, __global float *x, int x_off) {
  int i = get_global_id(0);
  if (i >= count) return;
  x[x_off + i] = tanh(x[x_off + i]);
}

#else /* SQ_TRAIN */

/* ---- training: built with train_prelude.cl in front (acc_t, wg_sum, no
 * contraction; how the kernels stay deterministic) ---- */

/* db[c] += sum over r of dy[r * ld + c]; one work-item per column adds the
 * rows in order (neighbouring work-items read neighbouring columns). */
__kernel void bias_grad(int rows, int cols, __global const float *dy, int dy_off, int ld,
                        __global float *db, int db_off) {
  const int c = get_global_id(0);
  if (c >= cols) return;
  dy += dy_off + c;
  float acc = db[db_off + c];
  for (int r = 0; r < rows; ++r) acc += dy[(size_t)r * ld];
  db[db_off + c] = acc;
}

/* dx = dy * (1 - y^2) */
__kernel void tanh_bwd(int count, __global const float *y, int y_off,
                       __global const float *dy, int dy_off, __global float *dx, int dx_off) {
  const int i = get_global_id(0);
  if (i >= count) return;
  const float t = y[y_off + i];
  dx[dx_off + i] = dy[dy_off + i] * (1.0f - t * t);
}

#endif /* SQ_TRAIN */
