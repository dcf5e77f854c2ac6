/* Decoding bookkeeping kept on the device so the greedy loop never waits for
 * the host: the EOS freeze of finished rows, and an in-place tanh. */

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

__kernel void tanh_inplace(int count, __global float *x, int x_off) {
  int i = get_global_id(0);
  if (i >= count) return;
  x[x_off + i] = tanh(x[x_off + i]);
}
