/* Small kernels of the OpenCL backend: fills, bias, embedding lookup, and the
 * row reductions over the vocabulary (argmax, log_softmax, cross-entropy).
 * Every buffer argument is followed by its offset in elements (OpenCL 1.2 has no
 * pointer offsets for cl_mem). Global sizes are rounded up to the work-group
 * size, so every kernel checks its bounds. Row reductions use one work-group per
 * row whose size is a power of two chosen by the host (any V works). */

/* x[off + i] = v for i < n; floats and int32 share this through their bits. */
__kernel void fill_u32(__global uint *x, int off, int n, uint v) {
  size_t i = get_global_id(0);
  if (i < (size_t)n) x[off + i] = v;
}

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

/* out[n, d] = table[ids[n], d]; global (>= D, N), 2-D for the reason above. */
__kernel void embedding(__global const int *ids, int ids_off, __global const float *table,
                        int t_off, __global float *out, int o_off, int N, int D, int ld_out) {
  size_t d = get_global_id(0), n = get_global_id(1);
  if (d >= (size_t)D || n >= (size_t)N) return;
  size_t row = (size_t)ids[ids_off + n];
  out[o_off + n * (size_t)ld_out + d] = table[t_off + row * (size_t)D + d];
}

/* ---- work-group reductions (local size a power of two) ---- */
static float wg_max(__local float *s, float v) {
  int lid = get_local_id(0);
  s[lid] = v;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int h = get_local_size(0) / 2; h > 0; h >>= 1) {
    if (lid < h) s[lid] = fmax(s[lid], s[lid + h]);
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  float r = s[0];
  barrier(CLK_LOCAL_MEM_FENCE);
  return r;
}

static float wg_sum(__local float *s, float v) {
  int lid = get_local_id(0);
  s[lid] = v;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int h = get_local_size(0) / 2; h > 0; h >>= 1) {
    if (lid < h) s[lid] += s[lid + h];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  float r = s[0];
  barrier(CLK_LOCAL_MEM_FENCE);
  return r;
}

/* max_v x[v] and log(sum_v exp(x[v] - max)) of one row, by the whole group. */
static void row_logsumexp(__global const float *x, int V, __local float *s, float *m_out,
                          float *lse_out) {
  int lid = get_local_id(0), wg = get_local_size(0);
  float m = -INFINITY;
  for (int v = lid; v < V; v += wg) m = fmax(m, x[v]);
  m = wg_max(s, m);
  float sum = 0.0f;
  for (int v = lid; v < V; v += wg) sum += exp(x[v] - m);
  sum = wg_sum(s, sum);
  *m_out = m;
  *lse_out = log(sum);
}

/* NaN counts as the largest value (as torch.argmax); ties go to the lower index. */
static int better(float v, int i, float best, int bi) {
  if (isnan(v)) return !isnan(best) || i < bi;
  if (isnan(best)) return 0;
  return v > best || (v == best && i < bi);
}

/* ids[n] = argmax_v (x[n, v] + bias[v]); one group per row. */
__kernel void argmax(__global const float *x, int x_off, int ld, int V, __global const float *bias,
                     int b_off, int has_bias, __global int *ids, int ids_off,
                     __local float *sv, __local int *si) {
  int n = get_group_id(0), lid = get_local_id(0), wg = get_local_size(0);
  __global const float *row = x + x_off + (size_t)n * (size_t)ld;
  float best = -INFINITY;
  int bi = 0x7fffffff;
  for (int v = lid; v < V; v += wg) {
    float val = row[v] + (has_bias ? bias[b_off + v] : 0.0f);
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
  if (lid == 0) ids[ids_off + n] = si[0] < V ? si[0] : 0;
}

/* y[n, :] = x[n, :] - max - log(sum exp(x[n, :] - max)); one group per row. */
__kernel void log_softmax(__global const float *x, int x_off, __global float *y, int y_off, int V,
                          __local float *s) {
  int n = get_group_id(0), lid = get_local_id(0), wg = get_local_size(0);
  __global const float *row = x + x_off + (size_t)n * (size_t)V;
  __global float *out = y + y_off + (size_t)n * (size_t)V;
  float m, lse;
  row_logsumexp(row, V, s, &m, &lse);
  for (int v = lid; v < V; v += wg) out[v] = (row[v] - m) - lse;
}

/* loss[0] = mean over rows with labels[n] >= 0 of -log_softmax(x[n])[labels[n]]
 * (0 when none). One work-group walks every row so the sum is deterministic;
 * the running total is compensated (Kahan) so the mean of many rows stays
 * within a few ulp. */
__kernel void cross_entropy(__global const float *x, int x_off, __global const int *labels,
                            int l_off, __global float *loss, int loss_off, int N, int V,
                            __local float *s) {
  int lid = get_local_id(0);
  float total = 0.0f, comp = 0.0f;
  int count = 0;
  for (int n = 0; n < N; n++) {
    int label = labels[l_off + n];
    if (label < 0) continue; /* uniform across the group: every item reads the same label */
    __global const float *row = x + x_off + (size_t)n * (size_t)V;
    float m, lse;
    row_logsumexp(row, V, s, &m, &lse);
    float term = lse - (row[label] - m);
    float yk = term - comp;
    float t = total + yk;
    comp = (t - total) - yk;
    total = t;
    count++;
  }
  if (lid == 0) loss[loss_off] = count > 0 ? total / (float)count : 0.0f;
}

/* The GPU form of cross_entropy (CPU-type devices keep the one above): a
 * work-group per row instead of one for all rows, then one group for the
 * mean. ce_rows writes part[2n] = the row's term and part[2n + 1] = 1 for a
 * row with a label, 0 and 0 for an ignored one. ce_mean adds them by a fixed
 * tree (work-item i sums rows i, i + wg, ... in order, then the tree), so the
 * loss is the same on every run; the tree's log2 depth replaces the
 * compensated running total (the tolerance bounds the sum in any order). */
__kernel void ce_rows(__global const float *x, int x_off, __global const int *labels, int l_off,
                      __global float *part, int p_off, int V, __local float *s) {
  int n = get_group_id(0), lid = get_local_id(0);
  int label = labels[l_off + n];
  float term = 0.0f;
  if (label >= 0) { /* uniform across the group: every item reads the same label */
    __global const float *row = x + x_off + (size_t)n * (size_t)V;
    float m, lse;
    row_logsumexp(row, V, s, &m, &lse);
    term = lse - (row[label] - m);
  }
  if (lid == 0) {
    part[p_off + 2 * n] = term;
    part[p_off + 2 * n + 1] = label >= 0 ? 1.0f : 0.0f;
  }
}

__kernel void ce_mean(__global const float *part, int p_off, int N, __global float *loss,
                      int loss_off, __local float *s) {
  int lid = get_local_id(0), wg = get_local_size(0);
  float total = 0.0f, count = 0.0f;
  for (int n = lid; n < N; n += wg) {
    total += part[p_off + 2 * n];
    count += part[p_off + 2 * n + 1];
  }
  total = wg_sum(s, total);
  count = wg_sum(s, count); /* exact: whole numbers below 2^24 */
  if (lid == 0) loss[loss_off] = count > 0.0f ? total / count : 0.0f;
}
