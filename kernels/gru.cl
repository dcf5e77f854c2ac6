/* GRU gate kernel: one launch per time step computes r, z, n and the state
 * update for every row, in PyTorch's reset-after form (torch.nn.GRU):
 *   r = s(gi_r + b_ir + gh_r + b_hr), z = s(gi_z + b_iz + gh_z + b_hz)
 *   n = tanh(gi_n + b_in + r * (gh_n + b_hn)), h' = (1 - z) * n + z * h
 * gi = W_ih x and gh = W_hh h come from GEMMs without bias; gate blocks are
 * ordered r, z, n along the 3H axis.
 *
 * OpenCL C 1.2. Every buffer argument is followed by an int element offset;
 * absent optional buffers arrive as a dummy buffer plus a has_* flag. The
 * host checks that every buffer's element count fits in an int. */

#ifndef SQ_TRAIN

static float sigmoid(float x) {
  /* exp(-x) may overflow to inf for x < -88; 1 / inf = 0 is the right limit. */
  return 1.0f / (1.0f + exp(-x));
}

/* The gates of one hidden unit i of a row, the expressions of the header.
 * x, g: the row's gi (at its time step) and gh; hp, op, sp: the row's h, out
 * and saved gates. */
static void gate_unit(int i, int H, __global const float *x, __global const float *g,
                      __global const float *b_ih, int has_b_ih, __global const float *b_hh,
                      int has_b_hh, __global float *hp, __global float *op, int has_out,
                      __global float *sp, int has_sv) {
  float xr = x[i], xz = x[H + i], xn = x[2 * H + i];
  float hr = g[i], hz = g[H + i], hn = g[2 * H + i];
  if (has_b_ih) {
    xr += b_ih[i];
    xz += b_ih[H + i];
    xn += b_ih[2 * H + i];
  }
  if (has_b_hh) {
    hr += b_hh[i];
    hz += b_hh[H + i];
    hn += b_hh[2 * H + i];
  }
  const float r = sigmoid(xr + hr);
  const float z = sigmoid(xz + hz);
  const float nn = tanh(xn + r * hn);
  /* (1 - z) n + z h, written as PyTorch's CPU and CUDA kernels do. */
  const float hnew = nn + z * (hp[i] - nn);
  hp[i] = hnew;
  if (has_out) op[i] = hnew;
  if (has_sv) {
    sp[i] = r;
    sp[H + i] = z;
    sp[2 * H + i] = nn;
    sp[3 * H + i] = hn;
  }
}

#ifndef GRU_VEC
#define GRU_VEC 1 /* hidden units per work-item: 1, or 16 on CPU-type devices */
#endif

#if GRU_VEC == 16
/* 16-lane exp, sigmoid and tanh: Cephes' expf and tanhf (the host path's
 * formulas; exp within 1 ulp, tanh within 1.5 ulp, sigmoid 2.5 ulp), written
 * out because PoCL's vector exp and tanh do not vectorise. */
static float16 exp16(float16 x) {
  x = clamp(x, -87.0f, 88.0f); /* only 1 / (1 + exp) and e / (1 + e) use it */
  const float16 fn = floor(x * 1.44269504088896341f + 0.5f);
  float16 r = x - fn * 0.693359375f;
  r = r - fn * -2.12194440e-4f;
  float16 p = (float16)(1.9875691500e-4f);
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r * r + r + 1.0f;
  return p * as_float16((convert_int16(fn) + 127) << 23);
}

static float16 sigmoid16(float16 x) { return 1.0f / (1.0f + exp16(-x)); }

/* an odd polynomial below |x| = 0.625, else 1 - 2e / (1 + e), e = exp(-2|x|) */
static float16 tanh16(float16 x) {
  const float16 ax = fabs(x);
  const float16 z = x * x;
  float16 p = (float16)(-5.70498872745e-3f);
  p = p * z + 2.06390887954e-2f;
  p = p * z - 5.37397155531e-2f;
  p = p * z + 1.33314422036e-1f;
  p = p * z - 3.33332819422e-1f;
  const float16 e = exp16(-2.0f * fmin(ax, 10.0f));
  return select(copysign(1.0f - 2.0f * e / (1.0f + e), x), p * z * x + x, ax < 0.625f);
}

/* gate_unit for units i .. i+15, in float16. */
static void gate_unit16(int i, int H, __global const float *x, __global const float *g,
                        __global const float *b_ih, int has_b_ih, __global const float *b_hh,
                        int has_b_hh, __global float *hp, __global float *op, int has_out,
                        __global float *sp, int has_sv) {
  float16 xr = vload16(0, x + i), xz = vload16(0, x + H + i), xn = vload16(0, x + 2 * H + i);
  float16 hr = vload16(0, g + i), hz = vload16(0, g + H + i), hn = vload16(0, g + 2 * H + i);
  if (has_b_ih) {
    xr += vload16(0, b_ih + i);
    xz += vload16(0, b_ih + H + i);
    xn += vload16(0, b_ih + 2 * H + i);
  }
  if (has_b_hh) {
    hr += vload16(0, b_hh + i);
    hz += vload16(0, b_hh + H + i);
    hn += vload16(0, b_hh + 2 * H + i);
  }
  const float16 r = sigmoid16(xr + hr);
  const float16 z = sigmoid16(xz + hz);
  const float16 nn = tanh16(xn + r * hn);
  const float16 hnew = nn + z * (vload16(0, hp + i) - nn);
  vstore16(hnew, 0, hp + i);
  if (has_out) vstore16(hnew, 0, op + i);
  if (has_sv) {
    vstore16(r, 0, sp + i);
    vstore16(z, 0, sp + H + i);
    vstore16(nn, 0, sp + 2 * H + i);
    vstore16(hn, 0, sp + 3 * H + i);
  }
}
#endif

/* global (>= H / GRU_VEC, N): work-item (c, n) owns h[n, i] for the GRU_VEC
 * units from i = c GRU_VEC (fewer at the end of the row). Row n is active iff lens is
 * absent or step < lens[n]; its time index is step, or lens[n] - 1 - step for
 * the reverse direction of a packed sequence. Inactive rows are untouched.
 * The update is in place: each work-item reads its own h element before it
 * writes it, and gh was computed from h beforehand, so no other work-item
 * depends on the old value. Training (has_sv) also keeps r, z, n and
 * W_hn h + b_hn of every active row in sv [4H] at sv + n*sv_sn + t*sv_st, for
 * the backward pass (gru_bwd, this file's training section). */
__kernel void gru_gates(int N, int H,
                        __global const float *gi, int gi_off, int gi_sn, int gi_st,
                        __global const float *gh, int gh_off, int ld_gh,
                        __global const float *b_ih, int b_ih_off, int has_b_ih,
                        __global const float *b_hh, int b_hh_off, int has_b_hh,
                        __global float *h, int h_off,
                        __global float *out, int out_off, int out_sn, int out_st, int has_out,
                        __global const int *lens, int lens_off, int has_lens,
                        int step, int reverse,
                        __global float *sv, int sv_off, int sv_sn, int sv_st, int has_sv) {
  const int i0 = get_global_id(0) * GRU_VEC;
  const int n = get_global_id(1);
  if (i0 >= H || n >= N) return;

  int t = step;
  if (has_lens) {
    const int len = lens[lens_off + n];
    if (step >= len) return;
    if (reverse) t = len - 1 - step;
  }

  __global const float *x = gi + gi_off + (size_t)n * gi_sn + (size_t)t * gi_st;
  __global const float *g = gh + gh_off + (size_t)n * ld_gh;
  __global float *hp = h + h_off + (size_t)n * H;
  __global float *op = out + out_off + (size_t)n * out_sn + (size_t)t * out_st;
  __global float *sp = sv + sv_off + (size_t)n * sv_sn + (size_t)t * sv_st;
  b_ih += b_ih_off;
  b_hh += b_hh_off;
#if GRU_VEC == 16
  if (i0 + 16 <= H) {
    gate_unit16(i0, H, x, g, b_ih, has_b_ih, b_hh, has_b_hh, hp, op, has_out, sp, has_sv);
    return;
  }
#endif
  const int i1 = min(i0 + GRU_VEC, H);
  for (int i = i0; i < i1; ++i)
    gate_unit(i, H, x, g, b_ih, has_b_ih, b_hh, has_b_hh, hp, op, has_out, sp, has_sv);
}

#else /* SQ_TRAIN */

/* ---- training: built with train_prelude.cl in front (acc_t, wg_sum, no
 * contraction; how the kernels stay deterministic) ---- */

#define SCORE_ADDITIVE 0

static float sigmoid_f(float x) { return 1.0f / (1.0f + exp(-x)); }

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

#endif /* SQ_TRAIN */
