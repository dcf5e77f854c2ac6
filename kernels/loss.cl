/* The loss family: log-softmax and the cross-entropy loss over the
 * vocabulary, one work-group per row whose size is a power of two chosen by
 * the host (any V works), and (training section) the loss's backward.
 *
 * OpenCL C 1.2. Every buffer argument is followed by an int offset counted in
 * 4-byte elements; absent optional buffers arrive as a dummy buffer plus a
 * has_* flag. Global sizes are rounded up to the work-group size, so every
 * kernel checks its bounds. */

#ifndef SQ_TRAIN

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

#else /* SQ_TRAIN */

/* ---- training: built with train_prelude.cl in front (acc_t, wg_sum, no
 * contraction; how the kernels stay deterministic) ---- */

static float wg_max(__local acc_t *red, float x) {
  const int lid = get_local_id(0);
  red[lid] = x;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int s = get_local_size(0) / 2; s > 0; s >>= 1) {
    if (lid < s) red[lid] = fmax(red[lid], red[lid + s]);
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  const float r = (float)red[0];
  barrier(CLK_LOCAL_MEM_FENCE);
  return r;
}

/* dx[n, :] = scale * (softmax(x[n, :]) - onehot(labels[n])), 0 for ignored
 * rows. One work-group per row; work-item lid owns v = lid + k * wg, and
 * writes, rescales and corrects only its own positions. */
__kernel void ce_bwd(int N, int V, __global const float *x, int x_off,
                     __global const int *labels, int labels_off, float scale,
                     __global float *dx, int dx_off, __local acc_t *red) {
  const int n = get_group_id(0);
  const int lid = get_local_id(0);
  const int wg = get_local_size(0);
  if (n >= N) return; /* uniform over the work-group */
  __global const float *row = x + x_off + (size_t)n * V;
  __global float *d = dx + dx_off + (size_t)n * V;
  const int label = labels[labels_off + n];
  if (label < 0) { /* uniform too: the whole group returns */
    for (int v = lid; v < V; v += wg) d[v] = 0.0f;
    return;
  }
  float m = -INFINITY;
  for (int v = lid; v < V; v += wg) m = fmax(m, row[v]);
  m = wg_max(red, m);
  acc_t sum = 0;
  for (int v = lid; v < V; v += wg) {
    const float e = exp(row[v] - m);
    d[v] = e;
    sum += e;
  }
  sum = wg_sum(red, sum);
  const float inv = (float)((acc_t)scale / sum);
  for (int v = lid; v < V; v += wg) {
    float y = d[v] * inv;
    if (v == label) y -= scale;
    d[v] = y;
  }
}

#endif /* SQ_TRAIN */
