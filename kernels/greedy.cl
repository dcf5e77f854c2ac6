/* The tail of a greedy decoder step in one launch: the argmax of the logits
 * (plus the output bias) and the EOS bookkeeping of greedy_update (decode.cl).
 * One work-group per row; the local size is a power of two chosen by the host.
 * Same results as argmax (misc.cl) followed by greedy_update:
 *   id = finished[n] ? eos : argmax; ids[n] = id; hist[n] = id (when has_hist);
 *   finished[n] = id == eos.
 * Every buffer argument is followed by its element offset (ocl.h convention).
 * No work-item returns early: every one reaches every barrier. */

/* NaN counts as the largest value (as torch.argmax); ties go to the lower index. */
static int greedy_better(float v, int i, float best, int bi) {
  if (isnan(v)) return !isnan(best) || i < bi;
  if (isnan(best)) return 0;
  return v > best || (v == best && i < bi);
}

__kernel void argmax_greedy(__global const float *x, int x_off, int ld, int V,
                            __global const float *bias, int b_off, int has_bias,
                            __global int *ids, int ids_off, __global int *fin, int fin_off,
                            int eos, __global int *hist, int hist_off, int has_hist,
                            __local float *sv, __local int *si) {
  const int n = get_group_id(0), lid = get_local_id(0), wg = get_local_size(0);
  __global const float *row = x + x_off + (size_t)n * (size_t)ld;
  float best = -INFINITY;
  int bi = 0x7fffffff;
  for (int v = lid; v < V; v += wg) {
    const float val = row[v] + (has_bias ? bias[b_off + v] : 0.0f);
    if (greedy_better(val, v, best, bi)) {
      best = val;
      bi = v;
    }
  }
  sv[lid] = best;
  si[lid] = bi;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int h = wg / 2; h > 0; h >>= 1) {
    if (lid < h && greedy_better(sv[lid + h], si[lid + h], sv[lid], si[lid])) {
      sv[lid] = sv[lid + h];
      si[lid] = si[lid + h];
    }
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (lid == 0) {
    const int arg = si[0] < V ? si[0] : 0;
    const int id = fin[fin_off + n] ? eos : arg;
    ids[ids_off + n] = id;
    if (has_hist) hist[hist_off + n] = id;
    fin[fin_off + n] = id == eos;
  }
}
