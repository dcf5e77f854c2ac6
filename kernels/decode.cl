/* The greedy decode family, kept on the device so the greedy loop never
 * waits for the host: the argmax of the logits (plus the output bias), the
 * EOS bookkeeping of a greedy step (greedy_update), and both in one launch
 * (argmax_greedy: the same results as argmax followed by greedy_update).
 * Row kernels run one work-group per row, its size a power of two chosen by
 * the host; no work-item of theirs returns early, so every one reaches every
 * barrier.
 *
 * OpenCL C 1.2. Every buffer argument is followed by an int offset counted in
 * 4-byte elements; absent optional buffers arrive as a dummy buffer plus a
 * has_* flag. Global sizes are rounded up to the work-group size, so every
 * kernel checks its bounds. */

/* NaN counts as the largest value (as torch.argmax); ties go to the lower index. */
static int better(float v, int i, float best, int bi) {
  if (isnan(v)) return !isnan(best) || i < bi;
  if (isnan(best)) return 0;
  return v > best || (v == best && i < bi);
}

/* argmax_v (row[v] + bias[v]) of one row by the whole work-group, the same
 * value in every work-item (sv, si: wg entries each; a caller that reused
 * them would need a barrier first). */
static int row_argmax(__global const float *row, int V, __global const float *bias,
                      int has_bias, __local float *sv, __local int *si) {
  const int lid = get_local_id(0), wg = get_local_size(0);
  float best = -INFINITY;
  int bi = 0x7fffffff;
  for (int v = lid; v < V; v += wg) {
    const float val = row[v] + (has_bias ? bias[v] : 0.0f);
    if (better(val, v, best, bi)) {
      best = val;
      bi = v;
    }
  }
  sv[lid] = best;
  si[lid] = bi;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int h = wg / 2; h > 0; h >>= 1) {
    if (lid < h && better(sv[lid + h], si[lid + h], sv[lid], si[lid])) {
      sv[lid] = sv[lid + h];
      si[lid] = si[lid + h];
    }
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  return si[0] < V ? si[0] : 0;
}

/* ids[n] = argmax_v (x[n, v] + bias[v]); one group per row. */
__kernel void argmax(__global const float *x, int x_off, int ld, int V, __global const float *bias,
                     int b_off, int has_bias, __global int *ids, int ids_off,
                     __local float *sv, __local int *si) {
  const int n = get_group_id(0);
  const int arg = row_argmax(x + x_off + (size_t)n * (size_t)ld, V, bias + b_off, has_bias, sv, si);
  if (get_local_id(0) == 0) ids[ids_off + n] = arg;
}

/* id = finished ? eos : ids[n]; ids[n] = id; hist[n] = id (when has_hist);
 * finished[n] = id == eos. */
__kernel void greedy_update(int N, __global int *ids, int ids_off, __global int *fin, int fin_off,
                            int eos, __global int *hist, int hist_off, int has_hist) {
  int n = get_global_id(0);
  if (n >= N) return;
  int v = fin[fin_off + n] ? eos : ids[ids_off + n];
  ids[ids_off + n] = v;
  if (has_hist) hist[hist_off + n] = v;
  fin[fin_off + n] = v == eos;
}

/* argmax then greedy_update for row n = group id:
 *   id = finished[n] ? eos : argmax; ids[n] = id; hist[n] = id (when has_hist);
 *   finished[n] = id == eos. */
__kernel void argmax_greedy(__global const float *x, int x_off, int ld, int V,
                            __global const float *bias, int b_off, int has_bias,
                            __global int *ids, int ids_off, __global int *fin, int fin_off,
                            int eos, __global int *hist, int hist_off, int has_hist,
                            __local float *sv, __local int *si) {
  const int n = get_group_id(0);
  const int arg = row_argmax(x + x_off + (size_t)n * (size_t)ld, V, bias + b_off, has_bias, sv, si);
  if (get_local_id(0) == 0) {
    const int id = fin[fin_off + n] ? eos : arg;
    ids[ids_off + n] = id;
    if (has_hist) hist[hist_off + n] = id;
    fin[fin_off + n] = id == eos;
  }
}
