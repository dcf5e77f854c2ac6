/* One GRU time step on the host (PyTorch's reset-after form, gates r, z, n).
 * Pointwise only: the two GEMMs that produce gi and gh ran before. The gates
 * run 16 lanes at a time (then 4, then the rest) with the vector sigmoid/tanh
 * of host_math.h, and rows are split across the host pool. */
#include <string.h>

#include "backend/host/host.h"
#include "backend/host/host_math.h"
#include "backend/host/pool.h"

SQ_IGNORE_PSABI /* static code only: no ABI is exposed */

/* Lanes [j, j + w) of h' for one row (w <= SQ_VW); inlined with w = SQ_VW for
 * full vectors (always inlined: a call with a run-time w would copy lane by
 * lane). h is updated in place, out (optional) receives a copy; absent
 * biases load as zeros. */
static inline __attribute__((always_inline)) void gates_chunk(int H, int j, int w, const float *gi, const float *gh,
                               const float *bi, const float *bh, float *h, float *out) {
  const int wi = bi ? w : 0, wh = bh ? w : 0;
  const float *bi0 = bi ? bi + j : NULL, *bh0 = bh ? bh + j : NULL;
  sq_vf r = sq_v_sigmoid(sq_v_load(gi + j, w) + sq_v_load(bi0, wi) + sq_v_load(gh + j, w) +
                         sq_v_load(bh0, wh));
  sq_vf z = sq_v_sigmoid(sq_v_load(gi + H + j, w) + sq_v_load(bi ? bi0 + H : NULL, wi) +
                         sq_v_load(gh + H + j, w) + sq_v_load(bh ? bh0 + H : NULL, wh));
  sq_vf n = sq_v_tanh(sq_v_load(gi + 2 * H + j, w) + sq_v_load(bi ? bi0 + 2 * H : NULL, wi) +
                      r * (sq_v_load(gh + 2 * H + j, w) + sq_v_load(bh ? bh0 + 2 * H : NULL, wh)));
  /* (1 - z) n + z h, written as PyTorch's CPU and CUDA kernels do. */
  sq_vf hn = n + z * (sq_v_load(h + j, w) - n);
  sq_v_store(h + j, hn, w);
  if (out) sq_v_store(out + j, hn, w);
}

static inline __attribute__((always_inline)) sq_vf16 load16(const float *p) {
  sq_vf16 v;
  memcpy(&v, p, sizeof v);
  return v;
}
/* zeros for an absent bias */
static inline __attribute__((always_inline)) sq_vf16 load16_opt(const float *p) {
  return p ? load16(p) : (sq_vf16){0};
}

/* Sixteen lanes of h' for one row, the same operations per lane as
 * gates_chunk (the same bits). */
static inline __attribute__((always_inline)) void gates_chunk16(int H, int j, const float *gi,
                                                                const float *gh, const float *bi,
                                                                const float *bh, float *h,
                                                                float *out) {
  const float *b0 = bi ? bi + j : NULL, *c0 = bh ? bh + j : NULL;
  /* the sums in gates_chunk's order */
  sq_vf16 r = sq_v16_sigmoid(load16(gi + j) + load16_opt(b0) + load16(gh + j) + load16_opt(c0));
  sq_vf16 z = sq_v16_sigmoid(load16(gi + H + j) + load16_opt(b0 ? b0 + H : NULL) +
                             load16(gh + H + j) + load16_opt(c0 ? c0 + H : NULL));
  sq_vf16 n = sq_v16_tanh(load16(gi + 2 * H + j) + load16_opt(b0 ? b0 + 2 * H : NULL) +
                          r * (load16(gh + 2 * H + j) + load16_opt(c0 ? c0 + 2 * H : NULL)));
  sq_vf16 hj = load16(h + j);
  sq_vf16 hn = n + z * (hj - n);
  memcpy(h + j, &hn, sizeof hn);
  if (out) memcpy(out + j, &hn, sizeof hn);
}

SQ_HOT_CLONES
static void gates_row(int H, const float *gi, const float *gh, const float *bi, const float *bh,
                      float *h, float *out) {
  int j = 0;
  for (; j + SQ_VW16 <= H; j += SQ_VW16) gates_chunk16(H, j, gi, gh, bi, bh, h, out);
  for (; j + SQ_VW <= H; j += SQ_VW) gates_chunk(H, j, SQ_VW, gi, gh, bi, bh, h, out);
  if (j < H) gates_chunk(H, j, H - j, gi, gh, bi, bh, h, out);
}

/* Rows [lo, hi); a GRU cell costs about 100 multiply-add equivalents per
 * hidden unit (two sigmoids and a tanh). */
static void gates_rows(void *arg, int lo, int hi) {
  const sq_gru_args *g = arg;
  const int H = g->H;
  const int32_t *lens = sq_host_i32_opt(g->lens);
  const float *gi = sq_host_f32(g->gi);
  const float *gh = sq_host_f32(g->gh);
  const float *bi = sq_host_f32_opt(g->b_ih);
  const float *bh = sq_host_f32_opt(g->b_hh);
  float *h = sq_host_f32(g->h);
  float *out = sq_host_f32_opt(g->out);
  for (int n = lo; n < hi; n++) {
    if (lens && g->step >= lens[n]) continue; /* this row has finished */
    /* Without lens every row is active and its time index is the step itself
     * (the fronts require lens for the reverse direction). */
    size_t t = (size_t)g->step;
    if (lens && g->reverse) t = (size_t)(lens[n] - 1 - g->step);
    gates_row(H, gi + (size_t)n * g->gi_sn + t * g->gi_st, gh + (size_t)n * (size_t)g->ld_gh, bi,
              bh, h + (size_t)n * (size_t)H,
              out ? out + (size_t)n * g->out_sn + t * g->out_st : NULL);
  }
}

seqcl_status sq_host_gru_gates(sq_backend *be, const sq_gru_args *g) {
  (void)be;
  sq_pool_for(be, g->N, 100.0 * g->N * g->H, gates_rows, (void *)g);
  return SEQCL_OK;
}

/* ---- training: the forward pass that keeps its activations, and the backward ---- */

static void gru_gates_bwd_rows(void *arg, int lo, int hi) {
  const sq_gru_bwd_args *g = arg;
  const int H = g->H;
  const float *bih = g->b_ih.buf ? sq_host_f32(g->b_ih) : NULL;
  const float *bhh = g->b_hh.buf ? sq_host_f32(g->b_hh) : NULL;
  const int32_t *lens = g->lens.buf ? sq_host_i32(g->lens) : NULL;
  for (int n = lo; n < hi; n++) {
    int len = lens ? lens[n] : g->step + 1;
    float *dgh = sq_host_f32(g->dgh) + (size_t)n * g->ld_dgh;
    if (g->step >= len) {
      /* Inactive: the state passed through unchanged, so dh stays and the gates
       * get no gradient. dgi has no slot for this row at this step (t >= len is
       * padding); the caller zeroes dgi once so padding stays 0. */
      memset(dgh, 0, sizeof(float) * 3 * (size_t)H);
      continue;
    }
    int t = g->reverse ? len - 1 - g->step : g->step;
    const float *gi = sq_host_f32(g->gi) + (size_t)n * g->gi_sn + (size_t)t * g->gi_st;
    const float *gh = sq_host_f32(g->gh) + (size_t)n * g->ld_gh;
    const float *hp = sq_host_f32(g->h_prev) + (size_t)n * H;
    float *dh = sq_host_f32(g->dh) + (size_t)n * H;
    float *dgi = sq_host_f32(g->dgi) + (size_t)n * g->gi_sn + (size_t)t * g->gi_st;
    const float *dout =
        g->dout.buf ? sq_host_f32(g->dout) + (size_t)n * g->dout_sn + (size_t)t * g->dout_st : NULL;
    const float *sv =
        g->saved.buf ? sq_host_f32(g->saved) + (size_t)n * g->sv_sn + (size_t)t * g->sv_st : NULL;
    for (int k = 0; k < H; k++) {
      float r, z, nn, hn;
      if (sv) {
        r = sv[k], z = sv[H + k], nn = sv[2 * H + k], hn = sv[3 * H + k];
      } else {
        float ar = gi[k] + gh[k] + (bih ? bih[k] : 0.f) + (bhh ? bhh[k] : 0.f);
        float az = gi[H + k] + gh[H + k] + (bih ? bih[H + k] : 0.f) + (bhh ? bhh[H + k] : 0.f);
        hn = gh[2 * H + k] + (bhh ? bhh[2 * H + k] : 0.f);
        r = sq_host_sigmoidf(ar), z = sq_host_sigmoidf(az);
        nn = sq_host_fast_tanhf(gi[2 * H + k] + (bih ? bih[2 * H + k] : 0.f) + r * hn);
      }
      float d = dh[k] + (dout ? dout[k] : 0.f);
      float dan = d * (1.f - z) * (1.f - nn * nn);
      float daz = d * (hp[k] - nn) * z * (1.f - z);
      float dar = dan * hn * r * (1.f - r);
      dgi[k] = dar;
      dgi[H + k] = daz;
      dgi[2 * H + k] = dan;
      dgh[k] = dar;
      dgh[H + k] = daz;
      dgh[2 * H + k] = dan * r;
      dh[k] = d * z;
    }
  }
}

seqcl_status sq_host_gru_gates_bwd(sq_backend *be, const sq_gru_bwd_args *g) {
  (void)be;
  sq_pool_for(be, g->N, 60.0 * g->N * g->H, gru_gates_bwd_rows, (void *)g);
  return SEQCL_OK;
}

typedef struct gru_fwd_job {
  const sq_gru_args *g;
  sq_ref saved;
  size_t sv_sn, sv_st;
} gru_fwd_job;

static void gru_fwd_rows(void *arg, int lo, int hi) {
  const gru_fwd_job *job = arg;
  const sq_gru_args *g = job->g;
  const sq_ref savedr = job->saved;
  const size_t sv_sn = job->sv_sn, sv_st = job->sv_st;
  const int H = g->H;
  const float *bih = g->b_ih.buf ? sq_host_f32(g->b_ih) : NULL;
  const float *bhh = g->b_hh.buf ? sq_host_f32(g->b_hh) : NULL;
  const int32_t *lens = g->lens.buf ? sq_host_i32(g->lens) : NULL;
  for (int n = lo; n < hi; n++) {
    int len = lens ? lens[n] : g->step + 1;
    if (g->step >= len) continue;
    int t = g->reverse ? len - 1 - g->step : g->step;
    const float *gi = sq_host_f32(g->gi) + (size_t)n * g->gi_sn + (size_t)t * g->gi_st;
    const float *gh = sq_host_f32(g->gh) + (size_t)n * g->ld_gh;
    float *h = sq_host_f32(g->h) + (size_t)n * H;
    float *out = g->out.buf ? sq_host_f32(g->out) + (size_t)n * g->out_sn + (size_t)t * g->out_st : NULL;
    float *sv = savedr.buf ? sq_host_f32(savedr) + (size_t)n * sv_sn + (size_t)t * sv_st : NULL;
    for (int k = 0; k < H; k++) {
      float r = sq_host_sigmoidf(gi[k] + gh[k] + (bih ? bih[k] : 0.f) + (bhh ? bhh[k] : 0.f));
      float z = sq_host_sigmoidf(gi[H + k] + gh[H + k] + (bih ? bih[H + k] : 0.f) + (bhh ? bhh[H + k] : 0.f));
      float hn = gh[2 * H + k] + (bhh ? bhh[2 * H + k] : 0.f);
      float nn = sq_host_fast_tanhf(gi[2 * H + k] + (bih ? bih[2 * H + k] : 0.f) + r * hn);
      float hv = (1.f - z) * nn + z * h[k];
      h[k] = hv;
      if (out) out[k] = hv;
      if (sv) sv[k] = r, sv[H + k] = z, sv[2 * H + k] = nn, sv[3 * H + k] = hn;
    }
  }
}

seqcl_status sq_host_gru_fwd(sq_backend *be, const sq_gru_args *g, sq_ref savedr, size_t sv_sn,
                              size_t sv_st) {
  (void)be;
  gru_fwd_job job = {g, savedr, sv_sn, sv_st};
  sq_pool_for(be, g->N, 100.0 * g->N * g->H, gru_fwd_rows, &job);
  return SEQCL_OK;
}

