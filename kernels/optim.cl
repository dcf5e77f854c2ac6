/* Backward kernels for training (the slots of src/train/grad.h): loss and
 * bias gradients, tanh, the GRU step with kept gates and its backward, the
 * attention forward that keeps tanh activations and its backward, embedding
 * gradients, the squared norm, scaling and Adam.
 *
 * OpenCL C 1.2. Every buffer argument is followed by an int offset counted in
 * 4-byte elements; absent optional buffers arrive as a dummy buffer plus a
 * has_* flag. Global sizes are rounded up to the work-group size, so every
 * kernel checks its bounds.
 *
 * Determinism: no atomics. A value that sums over many rows is owned by one
 * work-item that adds the terms in a fixed order (bias_grad, the attention
 * energy gradients, embedding_bwd), or is reduced by a fixed tree inside one
 * work-group (cross-entropy, sum_squares). Where the host adds terms straight
 * into the output one after another, the kernels do the same, starting from
 * the output's old value, so the rounding matches the host's step for step.
 *
 * SQ_FP64 (set by the host when the device has cl_khr_fp64) makes the row and
 * norm reductions accumulate in double, as the host does; without it they
 * accumulate in float. */

#ifdef SQ_FP64
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
typedef double acc_t;
#else
typedef float acc_t;
#endif

/* The host computes a * b + c with two roundings; so do the kernels. */
#pragma OPENCL FP_CONTRACT OFF

#define SCORE_ADDITIVE 0

static float sigmoid_f(float x) { return 1.0f / (1.0f + exp(-x)); }

/* Tree reductions over the work-group (its size a power of two, as the host
 * launches them). red holds get_local_size(0) values; the trailing barrier
 * lets the caller reuse it right away. */
static acc_t wg_sum(__local acc_t *red, acc_t x) {
  const int lid = get_local_id(0);
  red[lid] = x;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int s = get_local_size(0) / 2; s > 0; s >>= 1) {
    if (lid < s) red[lid] += red[lid + s];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  const acc_t r = red[0];
  barrier(CLK_LOCAL_MEM_FENCE);
  return r;
}

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

/* Row n's time index and activity at `step`, as the host slots define them:
 * len = lens[n] (or step + 1 without lens); active iff step < len; the time
 * index is len - 1 - step for the reverse direction, else step. */
static int gru_time(__global const int *lens, int has_lens, int n, int step, int reverse,
                    int *t) {
  const int len = has_lens ? lens[n] : step + 1;
  if (step >= len) return 0;
  *t = reverse ? len - 1 - step : step;
  return 1;
}

/* Backward of one GRU step (sq_gru_bwd_args). global (>= H, N); work-item
 * (i, n) owns column i of row n in dh, dgi and dgh, so nothing is shared.
 * Inactive rows get dgh = 0 and keep dh; their dgi slot is left alone. */
__kernel void gru_bwd(int N, int H,
                      __global const float *gi, int gi_off, int gi_sn, int gi_st,
                      __global const float *gh, int gh_off, int ld_gh,
                      __global const float *b_ih, int b_ih_off, int has_b_ih,
                      __global const float *b_hh, int b_hh_off, int has_b_hh,
                      __global const float *h_prev, int hp_off,
                      __global float *dh, int dh_off,
                      __global const float *dout, int dout_off, int dout_sn, int dout_st,
                      int has_dout,
                      __global float *dgi, int dgi_off,
                      __global float *dgh, int dgh_off, int ld_dgh,
                      __global const int *lens, int lens_off, int has_lens,
                      int step, int reverse,
                      __global const float *sv, int sv_off, int sv_sn, int sv_st, int has_sv) {
  const int i = get_global_id(0);
  const int n = get_global_id(1);
  if (i >= H || n >= N) return;
  __global float *dgh_row = dgh + dgh_off + (size_t)n * ld_dgh;
  int t = 0;
  if (!gru_time(lens + lens_off, has_lens, n, step, reverse, &t)) {
    dgh_row[i] = 0.0f;
    dgh_row[H + i] = 0.0f;
    dgh_row[2 * H + i] = 0.0f;
    return;
  }
  float r, z, nn, hn;
  if (has_sv) {
    __global const float *s = sv + sv_off + (size_t)n * sv_sn + (size_t)t * sv_st;
    r = s[i];
    z = s[H + i];
    nn = s[2 * H + i];
    hn = s[3 * H + i];
  } else {
    __global const float *x = gi + gi_off + (size_t)n * gi_sn + (size_t)t * gi_st;
    __global const float *g = gh + gh_off + (size_t)n * ld_gh;
    float ar = x[i] + g[i], az = x[H + i] + g[H + i], xn = x[2 * H + i];
    hn = g[2 * H + i];
    if (has_b_ih) {
      ar += b_ih[b_ih_off + i];
      az += b_ih[b_ih_off + H + i];
      xn += b_ih[b_ih_off + 2 * H + i];
    }
    if (has_b_hh) {
      ar += b_hh[b_hh_off + i];
      az += b_hh[b_hh_off + H + i];
      hn += b_hh[b_hh_off + 2 * H + i];
    }
    r = sigmoid_f(ar);
    z = sigmoid_f(az);
    nn = tanh(xn + r * hn);
  }
  __global float *dhp = dh + dh_off + (size_t)n * H + i;
  float d = dhp[0];
  if (has_dout) d += dout[dout_off + (size_t)n * dout_sn + (size_t)t * dout_st + i];
  const float hprev = h_prev[hp_off + (size_t)n * H + i];
  const float dan = d * (1.0f - z) * (1.0f - nn * nn);
  const float daz = d * (hprev - nn) * z * (1.0f - z);
  const float dar = dan * hn * r * (1.0f - r);
  __global float *dx = dgi + dgi_off + (size_t)n * gi_sn + (size_t)t * gi_st;
  dx[i] = dar;
  dx[H + i] = daz;
  dx[2 * H + i] = dan;
  dgh_row[i] = dar;
  dgh_row[H + i] = daz;
  dgh_row[2 * H + i] = dan * r;
  dhp[0] = d * z;
}

/* Position j of row n takes part in the attention iff j < min(lens[n], S)
 * and the mask (when given) does not exclude it. */
static int attn_valid(int n, int j, int S, __global const int *lens,
                      __global const int *mask, int has_mask) {
  const int len = lens[n] < S ? lens[n] : S;
  if (j >= len) return 0;
  return !has_mask || mask[(size_t)n * S + j] != 0;
}

/* u[n, j, k] = tanh(pkeys[n, j, k] + qp[n, k]) at valid positions (the
 * expression attention.cl's score evaluates); others are left alone.
 * global (>= A, S, N). */
__kernel void attn_keep_u(int N, int S, int A,
                          __global const float *qp, int qp_off, int ld_qp,
                          __global const float *pkeys, int pk_off,
                          __global const int *lens, int lens_off,
                          __global const int *mask, int mask_off, int has_mask,
                          __global float *u, int u_off) {
  const int k = get_global_id(0);
  const int j = get_global_id(1);
  const int n = get_global_id(2);
  if (k >= A || j >= S || n >= N) return;
  if (!attn_valid(n, j, S, lens + lens_off, mask + mask_off, has_mask)) return;
  const size_t at = ((size_t)n * S + j) * A + k;
  u[u_off + at] = tanh(pkeys[pk_off + at] + qp[qp_off + (size_t)n * ld_qp + k]);
}

/* de[n, j] = scale * alpha_j (dalpha_j - sum_k alpha_k dalpha_k) with
 * dalpha_j = dc . keys[n, j]; 0 at invalid positions. One work-item per row
 * (global >= N): a row is S dot products of length He, small next to the
 * other attention kernels, and the row sum then needs no barrier at all. */
__kernel void attn_bwd_de(int N, int S, int He,
                          __global const float *alpha, int alpha_off,
                          __global const float *dc, int dc_off, int ld_dc,
                          __global const float *keys, int keys_off,
                          __global const int *lens, int lens_off,
                          __global const int *mask, int mask_off, int has_mask,
                          float scale, __global float *de, int de_off) {
  const int n = get_global_id(0);
  if (n >= N) return;
  lens += lens_off;
  mask += mask_off;
  __global const float *al = alpha + alpha_off + (size_t)n * S;
  __global const float *c = dc + dc_off + (size_t)n * ld_dc;
  __global const float *kr = keys + keys_off + (size_t)n * S * He;
  __global float *out = de + de_off + (size_t)n * S;
  acc_t sdot = 0;
  for (int j = 0; j < S; ++j) {
    float s = 0.0f;
    if (attn_valid(n, j, S, lens, mask, has_mask)) {
      __global const float *h = kr + (size_t)j * He;
      for (int k = 0; k < He; ++k) s += c[k] * h[k];
      sdot += (acc_t)al[j] * s;
    }
    out[j] = s; /* dalpha for now */
  }
  const float sd = (float)sdot;
  for (int j = 0; j < S; ++j) {
    float e = 0.0f;
    if (attn_valid(n, j, S, lens, mask, has_mask)) e = al[j] * (out[j] - sd) * scale;
    out[j] = e;
  }
}

/* dkeys[n, j, d] += alpha_j dc[d] (+ de_j qp[d] for dot-type scores) at valid
 * positions. global (>= He, S, N); each work-item owns one element. */
__kernel void attn_bwd_keys(int N, int S, int He,
                            __global const float *alpha, int alpha_off,
                            __global const float *dc, int dc_off, int ld_dc,
                            __global const float *qp, int qp_off, int ld_qp, int dot_score,
                            __global const float *de, int de_off,
                            __global const int *lens, int lens_off,
                            __global const int *mask, int mask_off, int has_mask,
                            __global float *dkeys, int dk_off) {
  const int d = get_global_id(0);
  const int j = get_global_id(1);
  const int n = get_global_id(2);
  if (d >= He || j >= S || n >= N) return;
  if (!attn_valid(n, j, S, lens + lens_off, mask + mask_off, has_mask)) return;
  __global float *p = dkeys + dk_off + ((size_t)n * S + j) * He + d;
  float acc = p[0];
  acc += alpha[alpha_off + (size_t)n * S + j] * dc[dc_off + (size_t)n * ld_dc + d];
  if (dot_score) acc += de[de_off + (size_t)n * S + j] * qp[qp_off + (size_t)n * ld_qp + d];
  p[0] = acc;
}

/* Dot-type scores: dqp[n, d] += sum over valid j of de_j keys[n, j, d], in
 * order of j. global (>= He, N). */
__kernel void attn_bwd_dqp(int N, int S, int He,
                           __global const float *de, int de_off,
                           __global const float *keys, int keys_off,
                           __global const int *lens, int lens_off,
                           __global const int *mask, int mask_off, int has_mask,
                           __global float *dqp, int dqp_off, int ld_dqp) {
  const int d = get_global_id(0);
  const int n = get_global_id(1);
  if (d >= He || n >= N) return;
  lens += lens_off;
  mask += mask_off;
  __global float *p = dqp + dqp_off + (size_t)n * ld_dqp + d;
  __global const float *kr = keys + keys_off + (size_t)n * S * He + d;
  float acc = p[0];
  for (int j = 0; j < S; ++j)
    if (attn_valid(n, j, S, lens, mask, has_mask))
      acc += de[de_off + (size_t)n * S + j] * kr[(size_t)j * He];
  p[0] = acc;
}

/* tanh activation of the additive score at (n, j, k): kept, or recomputed. */
static float additive_u(int n, int j, int k, int S, int A, __global const float *u, int has_u,
                        __global const float *pkeys, __global const float *qp, int ld_qp) {
  const size_t at = ((size_t)n * S + j) * A + k;
  if (has_u) return u[at];
  return tanh(pkeys[at] + qp[(size_t)n * ld_qp + k]);
}

/* Additive scores: du = de_j v[k] (1 - u^2); dpkeys[n, j, k] += du and
 * dqp[n, k] += sum over valid j of du, in order of j. global (>= A, N). */
__kernel void attn_bwd_additive(int N, int S, int A,
                                __global const float *qp, int qp_off, int ld_qp,
                                __global const float *pkeys, int pk_off,
                                __global const float *u, int u_off, int has_u,
                                __global const float *v, int v_off,
                                __global const float *de, int de_off,
                                __global const int *lens, int lens_off,
                                __global const int *mask, int mask_off, int has_mask,
                                __global float *dpkeys, int dpk_off,
                                __global float *dqp, int dqp_off, int ld_dqp) {
  const int k = get_global_id(0);
  const int n = get_global_id(1);
  if (k >= A || n >= N) return;
  lens += lens_off;
  mask += mask_off;
  const float vk = v[v_off + k];
  __global float *p = dqp + dqp_off + (size_t)n * ld_dqp + k;
  float acc = p[0];
  for (int j = 0; j < S; ++j) {
    if (!attn_valid(n, j, S, lens, mask, has_mask)) continue;
    const float uu = additive_u(n, j, k, S, A, u + u_off, has_u, pkeys + pk_off, qp + qp_off, ld_qp);
    const float du = de[de_off + (size_t)n * S + j] * vk * (1.0f - uu * uu);
    dpkeys[dpk_off + ((size_t)n * S + j) * A + k] += du;
    acc += du;
  }
  p[0] = acc;
}

/* Additive scores: dv[k] += sum over rows n and valid j of de u (k < A) and
 * dbv[0] += sum of de (work-item A, when has_dbv), in the host's order (n,
 * then j). global (>= A + 1). */
__kernel void attn_bwd_energy(int N, int S, int A,
                              __global const float *qp, int qp_off, int ld_qp,
                              __global const float *pkeys, int pk_off,
                              __global const float *u, int u_off, int has_u,
                              __global const float *de, int de_off,
                              __global const int *lens, int lens_off,
                              __global const int *mask, int mask_off, int has_mask,
                              __global float *dv, int dv_off,
                              __global float *dbv, int dbv_off, int has_dbv) {
  const int k = get_global_id(0);
  if (k > A || (k == A && !has_dbv)) return;
  lens += lens_off;
  mask += mask_off;
  __global float *p = k < A ? dv + dv_off + k : dbv + dbv_off;
  float acc = p[0];
  for (int n = 0; n < N; ++n)
    for (int j = 0; j < S; ++j) {
      if (!attn_valid(n, j, S, lens, mask, has_mask)) continue;
      const float e = de[de_off + (size_t)n * S + j];
      if (k < A)
        acc += e * additive_u(n, j, k, S, A, u + u_off, has_u, pkeys + pk_off, qp + qp_off, ld_qp);
      else
        acc += e;
    }
  p[0] = acc;
}

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

/* ---- GPU forms of attn_bwd_de and attn_bwd_energy ----
 * The two kernels above run a row (attn_bwd_de) or all N S positions
 * (attn_bwd_energy) on one work-item each, which suits a CPU core; these
 * spread the same sums over work-groups, in a fixed order, so that every run
 * gives the same bits. */

/* attn_bwd_de with a work-group per row: BWD_SL lanes along H_e per position
 * (dalpha_j's key row read in coalesced runs), wg / BWD_SL positions at once.
 * Work-item i < wg / BWD_SL adds the lane partial sums of positions
 * j = i, i + wg / BWD_SL, ... in lane order, keeps dalpha_j in de and its own
 * part of sum_j alpha_j dalpha_j in order of j; a tree adds the parts; the
 * same work-item then turns its own positions into de_j. lane_sums holds wg
 * floats, red wg acc_t. */
#define BWD_SL 16
__kernel void attn_bwd_de_wg(int N, int S, int He,
                             __global const float *alpha, int alpha_off,
                             __global const float *dc, int dc_off, int ld_dc,
                             __global const float *keys, int keys_off,
                             __global const int *lens, int lens_off,
                             __global const int *mask, int mask_off, int has_mask,
                             float scale, __global float *de, int de_off,
                             __local float *lane_sums, __local acc_t *red) {
  const int n = get_group_id(0); /* < N: the grid has exactly N groups */
  const int lid = get_local_id(0), wg = get_local_size(0);
  const int sl = wg < BWD_SL ? wg : BWD_SL, np = wg / sl;
  /* a mask and a shift (sl is a power of two): the pair lid % sl, lid / sl
   * compiles to an instruction (freeze) that Oclgrind 21.10 cannot simulate */
  int shift = 0;
  while ((1 << shift) < sl) ++shift;
  const int lane = lid & (sl - 1), slot = lid >> shift;
  (void)N;
  lens += lens_off;
  mask += mask_off;
  __global const float *al = alpha + alpha_off + (size_t)n * S;
  __global const float *c = dc + dc_off + (size_t)n * ld_dc;
  __global const float *kr = keys + keys_off + (size_t)n * S * He;
  __global float *out = de + de_off + (size_t)n * S;
  acc_t sdot = 0;
  for (int j0 = 0; j0 < S; j0 += np) {
    const int j = j0 + slot;
    float s = 0.0f;
    if (j < S && attn_valid(n, j, S, lens, mask, has_mask)) {
      __global const float *h = kr + (size_t)j * He;
      for (int k = lane; k < He; k += sl) s += c[k] * h[k];
    }
    lane_sums[lid] = s;
    barrier(CLK_LOCAL_MEM_FENCE);
    const int jj = j0 + lid;
    if (lid < np && jj < S) {
      float t = 0.0f;
      for (int l = 0; l < sl; ++l) t += lane_sums[lid * sl + l];
      if (attn_valid(n, jj, S, lens, mask, has_mask)) sdot += (acc_t)al[jj] * t;
      out[jj] = t; /* dalpha for now (0 at invalid positions) */
    }
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  const float sd = (float)wg_sum(red, sdot);
  if (lid < np)
    for (int j = lid; j < S; j += np) {
      float e = 0.0f;
      if (attn_valid(n, j, S, lens, mask, has_mask)) e = al[j] * (out[j] - sd) * scale;
      out[j] = e;
    }
}

/* attn_bwd_energy in two passes. Pass 1: work-item (k, ch) adds, in order,
 * the terms of the BWD_ROWS positions r = n S + j of chunk ch (k < A: de u_k;
 * k = A: de, when has_dbv) into part[ch (A + 1) + k]; global (>= A + 1,
 * chunks). Pass 2 (attn_bwd_energy_sum): work-item k adds its chunks' sums
 * in chunk order to dv[k] (dbv). Neighbouring work-items read neighbouring
 * k of u. */
#define BWD_ROWS 64
__kernel void attn_bwd_energy_part(int N, int S, int A,
                                   __global const float *qp, int qp_off, int ld_qp,
                                   __global const float *pkeys, int pk_off,
                                   __global const float *u, int u_off, int has_u,
                                   __global const float *de, int de_off,
                                   __global const int *lens, int lens_off,
                                   __global const int *mask, int mask_off, int has_mask,
                                   int has_dbv, __global float *part) {
  const int k = get_global_id(0);
  const int ch = get_global_id(1);
  if (k > A || (k == A && !has_dbv)) return;
  lens += lens_off;
  mask += mask_off;
  const int r0 = ch * BWD_ROWS, r1 = min(r0 + BWD_ROWS, N * S);
  int n = r0 / S, j = r0 - n * S;
  float acc = 0.0f;
  for (int r = r0; r < r1; ++r) {
    if (attn_valid(n, j, S, lens, mask, has_mask)) {
      const float e = de[de_off + r];
      if (k < A)
        acc += e * additive_u(n, j, k, S, A, u + u_off, has_u, pkeys + pk_off, qp + qp_off, ld_qp);
      else
        acc += e;
    }
    if (++j == S) {
      j = 0;
      ++n;
    }
  }
  part[(size_t)ch * (A + 1) + k] = acc;
}

__kernel void attn_bwd_energy_sum(int A, int chunks, __global const float *part,
                                  __global float *dv, int dv_off,
                                  __global float *dbv, int dbv_off, int has_dbv) {
  const int k = get_global_id(0);
  if (k > A || (k == A && !has_dbv)) return;
  __global float *p = k < A ? dv + dv_off + k : dbv + dbv_off;
  float acc = p[0];
  for (int ch = 0; ch < chunks; ++ch) acc += part[(size_t)ch * (A + 1) + k];
  p[0] = acc;
}
