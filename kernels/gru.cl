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

static float sigmoid(float x) {
  /* exp(-x) may overflow to inf for x < -88; 1 / inf = 0 is the right limit. */
  return 1.0f / (1.0f + exp(-x));
}

/* global (>= H, N): work-item (i, n) owns h[n, i]. Row n is active iff lens is
 * absent or step < lens[n]; its time index is step, or lens[n] - 1 - step for
 * the reverse direction of a packed sequence. Inactive rows are untouched.
 * The update is in place: each work-item reads its own h element before it
 * writes it, and gh was computed from h beforehand, so no other work-item
 * depends on the old value. Training (has_sv) also keeps r, z, n and
 * W_hn h + b_hn of every active row in sv [4H] at sv + n*sv_sn + t*sv_st, for
 * the backward pass (grad.cl's gru_bwd). */
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
  const int i = get_global_id(0);
  const int n = get_global_id(1);
  if (i >= H || n >= N) return;

  int t = step;
  if (has_lens) {
    const int len = lens[lens_off + n];
    if (step >= len) return;
    if (reverse) t = len - 1 - step;
  }

  __global const float *x = gi + gi_off + (size_t)n * gi_sn + (size_t)t * gi_st;
  __global const float *g = gh + gh_off + (size_t)n * ld_gh;
  float xr = x[i], xz = x[H + i], xn = x[2 * H + i];
  float hr = g[i], hz = g[H + i], hn = g[2 * H + i];
  if (has_b_ih) {
    b_ih += b_ih_off;
    xr += b_ih[i];
    xz += b_ih[H + i];
    xn += b_ih[2 * H + i];
  }
  if (has_b_hh) {
    b_hh += b_hh_off;
    hr += b_hh[i];
    hz += b_hh[H + i];
    hn += b_hh[2 * H + i];
  }

  const float r = sigmoid(xr + hr);
  const float z = sigmoid(xz + hz);
  const float nn = tanh(xn + r * hn);
  __global float *hp = h + h_off + (size_t)n * H + i;
  /* (1 - z) n + z h, written as PyTorch's CPU and CUDA kernels do. */
  const float hnew = nn + z * (hp[0] - nn);
  hp[0] = hnew;
  if (has_out) out[out_off + (size_t)n * out_sn + (size_t)t * out_st + i] = hnew;
  if (has_sv) {
    __global float *s = sv + sv_off + (size_t)n * sv_sn + (size_t)t * sv_st;
    s[i] = r;
    s[H + i] = z;
    s[2 * H + i] = nn;
    s[3 * H + i] = hn;
  }
}
