/* The embedding family: the row gather and (training section) its backward.
 *
 * OpenCL C 1.2. Every buffer argument is followed by an int offset counted in
 * 4-byte elements; absent optional buffers arrive as a dummy buffer plus a
 * has_* flag. Global sizes are rounded up to the work-group size, so every
 * kernel checks its bounds. */

#ifndef SQ_TRAIN

/* out[n, d] = table[ids[n], d]; global (>= D, N), 2-D rather than a flattened
 * range with i / D and i % D: LLVM turns that division pair into a `freeze`
 * instruction, which Oclgrind's uninitialised-value checker cannot simulate. */
__kernel void embedding(__global const int *ids, int ids_off, __global const float *table,
                        int t_off, __global float *out, int o_off, int N, int D, int ld_out) {
  size_t d = get_global_id(0), n = get_global_id(1);
  if (d >= (size_t)D || n >= (size_t)N) return;
  size_t row = (size_t)ids[ids_off + n];
  out[o_off + n * (size_t)ld_out + d] = table[t_off + row * (size_t)D + d];
}

#else /* SQ_TRAIN */

/* ---- training: built with train_prelude.cl in front (acc_t, wg_sum, no
 * contraction; how the kernels stay deterministic) ---- */

/* dtable[ids[n], k] += dy[n * ld_dy + k] for ids[n] != pad_id, rows in order
 * n = 0, 1, ... global (>= D, buckets): work-item (k, b) owns column k of the
 * table rows whose id % buckets == b, and scans every id in order, so each
 * element receives its terms in the contract's order and no two work-items
 * touch the same element. */
__kernel void embedding_bwd(int N, int D, __global const int *ids, int ids_off,
                            __global const float *dy, int dy_off, int ld_dy, int pad_id,
                            __global float *dt, int dt_off, int buckets) {
  const int k = get_global_id(0);
  const int b = get_global_id(1);
  if (k >= D || b >= buckets) return;
  ids += ids_off;
  for (int n = 0; n < N; ++n) {
    const int id = ids[n];
    if (id == pad_id || id % buckets != b) continue;
    dt[dt_off + (size_t)id * D + k] += dy[dy_off + (size_t)n * ld_dy + k];
  }
}

#endif /* SQ_TRAIN */
