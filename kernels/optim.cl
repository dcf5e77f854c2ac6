/* The optimiser's kernels (training only, so one program): the squared norm
 * in two passes (partial sums per group, then one group adds them), scaling
 * and the Adam step.
 *
 * OpenCL C 1.2. Every buffer argument is followed by an int offset counted in
 * 4-byte elements; absent optional buffers arrive as a dummy buffer plus a
 * has_* flag. Global sizes are rounded up to the work-group size, so every
 * kernel checks its bounds. Built with train_prelude.cl in front (acc_t,
 * wg_sum, no contraction). */

/* First pass of sum_squares: group g writes the sum of x^2 over the
 * elements i = g * wg + lid + m * (groups * wg) to partial[g]. */
__kernel void sumsq_partial(int count, __global const float *x, int x_off,
                            __global acc_t *partial, __local acc_t *red) {
  const int stride = get_global_size(0);
  acc_t acc = 0;
  for (int i = get_global_id(0); i < count; i += stride) {
    const acc_t t = x[x_off + i];
    acc += t * t;
  }
  acc = wg_sum(red, acc);
  if (get_local_id(0) == 0) partial[get_group_id(0)] = acc;
}

/* Second pass: one work-group adds the partial sums; out[0] = the total. */
__kernel void sumsq_final(int groups, __global const acc_t *partial,
                          __global float *out, int out_off, __local acc_t *red) {
  acc_t acc = 0;
  for (int i = get_local_id(0); i < groups; i += get_local_size(0)) acc += partial[i];
  acc = wg_sum(red, acc);
  if (get_local_id(0) == 0) out[out_off] = (float)acc;
}

/* x[i] *= s */
__kernel void scale_inplace(int count, __global float *x, int x_off, float s) {
  const int i = get_global_id(0);
  if (i < count) x[x_off + i] *= s;
}

/* torch.optim.Adam, bias corrections folded into step_size and bc2_sqrt by
 * the host: m = b1 m + (1-b1) g; v = b2 v + (1-b2) g^2;
 * p -= step_size * m / (sqrt(v) / bc2_sqrt + eps). */
__kernel void adam_step(int count, __global float *p, int p_off, __global const float *g,
                        int g_off, __global float *m, int m_off, __global float *v, int v_off,
                        float b1, float b2, float eps, float step_size, float bc2_sqrt) {
  const int i = get_global_id(0);
  if (i >= count) return;
  const float gi = g[g_off + i];
  const float mi = b1 * m[m_off + i] + (1.0f - b1) * gi;
  const float vi = b2 * v[v_off + i] + (1.0f - b2) * gi * gi;
  m[m_off + i] = mi;
  v[v_off + i] = vi;
  p[p_off + i] -= step_size * mi / (sqrt(vi) / bc2_sqrt + eps);
}
