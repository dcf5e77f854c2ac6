/* Host implementation of the backward slots (grad.h): plain float32 loops, the
 * row loops of the GRU and attention forward and the GRU backward split across
 * the host pool; the heavy lifting of training is in the GEMMs the graph
 * issues around them. */
#include <limits.h>
#include <math.h>
#include <string.h>

#include "backend/host/pool.h"
#include "train/grad.h"

static inline float *fp(sq_ref r) { return (float *)r.buf->ptr + r.off; }
static inline const int32_t *ip(sq_ref r) { return (const int32_t *)r.buf->ptr + r.off; }
static inline float sigmoidf(float x) { return 1.0f / (1.0f + expf(-x)); }

/* tanh through expf: glibc's tanhf goes through expm1f and dominated a training
 * step (over half its time). Near 0 the identity 1 - 2/(e^2x + 1) cancels, so
 * a short odd series takes over there (its truncation below 1e-10 at |x| 0.1);
 * elsewhere the error is a few float ulps of 1, i.e. absolute ~2e-7, which is
 * far inside what gradients of a float32 model resolve. */
static inline float fast_tanhf(float x) {
  if (fabsf(x) < 0.1f) {
    float x2 = x * x;
    return x * (1.0f + x2 * (-1.0f / 3 + x2 * (2.0f / 15 + x2 * (-17.0f / 315))));
  }
  return 1.0f - 2.0f / (expf(2.0f * x) + 1.0f);
}

static seqcl_status h_cross_entropy_bwd(sq_backend *be, int N, int V, sq_ref xr, sq_ref lr,
                                        float scale, sq_ref dxr) {
  (void)be;
  const float *x = fp(xr);
  const int32_t *labels = ip(lr);
  float *dx = fp(dxr);
  for (int n = 0; n < N; n++) {
    const float *row = x + (size_t)n * V;
    float *d = dx + (size_t)n * V;
    if (labels[n] < 0) {
      memset(d, 0, sizeof(float) * (size_t)V);
      continue;
    }
    float mx = row[0];
    for (int v = 1; v < V; v++) mx = row[v] > mx ? row[v] : mx;
    double sum = 0.0;
    for (int v = 0; v < V; v++) {
      d[v] = expf(row[v] - mx);
      sum += d[v];
    }
    float inv = (float)(scale / sum);
    for (int v = 0; v < V; v++) d[v] *= inv;
    d[labels[n]] -= scale;
  }
  return SEQCL_OK;
}

static seqcl_status h_bias_grad(sq_backend *be, int rows, int cols, sq_ref dyr, int ld,
                                sq_ref dbr) {
  (void)be;
  const float *dy = fp(dyr);
  float *db = fp(dbr);
  for (int r = 0; r < rows; r++) {
    const float *row = dy + (size_t)r * ld;
    for (int c = 0; c < cols; c++) db[c] += row[c];
  }
  return SEQCL_OK;
}

static seqcl_status h_tanh_bwd(sq_backend *be, size_t count, sq_ref yr, sq_ref dyr, sq_ref dxr) {
  (void)be;
  const float *y = fp(yr), *dy = fp(dyr);
  float *dx = fp(dxr);
  for (size_t i = 0; i < count; i++) dx[i] = dy[i] * (1.0f - y[i] * y[i]);
  return SEQCL_OK;
}

static void gru_gates_bwd_rows(void *arg, int lo, int hi) {
  const sq_gru_bwd_args *g = arg;
  const int H = g->H;
  const float *bih = g->b_ih.buf ? fp(g->b_ih) : NULL;
  const float *bhh = g->b_hh.buf ? fp(g->b_hh) : NULL;
  const int32_t *lens = g->lens.buf ? ip(g->lens) : NULL;
  for (int n = lo; n < hi; n++) {
    int len = lens ? lens[n] : g->step + 1;
    float *dgh = fp(g->dgh) + (size_t)n * g->ld_dgh;
    if (g->step >= len) {
      /* Inactive: the state passed through unchanged, so dh stays and the gates
       * get no gradient. dgi has no slot for this row at this step (t >= len is
       * padding); the caller zeroes dgi once so padding stays 0. */
      memset(dgh, 0, sizeof(float) * 3 * (size_t)H);
      continue;
    }
    int t = g->reverse ? len - 1 - g->step : g->step;
    const float *gi = fp(g->gi) + (size_t)n * g->gi_sn + (size_t)t * g->gi_st;
    const float *gh = fp(g->gh) + (size_t)n * g->ld_gh;
    const float *hp = fp(g->h_prev) + (size_t)n * H;
    float *dh = fp(g->dh) + (size_t)n * H;
    float *dgi = fp(g->dgi) + (size_t)n * g->gi_sn + (size_t)t * g->gi_st;
    const float *dout =
        g->dout.buf ? fp(g->dout) + (size_t)n * g->dout_sn + (size_t)t * g->dout_st : NULL;
    const float *sv =
        g->saved.buf ? fp(g->saved) + (size_t)n * g->sv_sn + (size_t)t * g->sv_st : NULL;
    for (int k = 0; k < H; k++) {
      float r, z, nn, hn;
      if (sv) {
        r = sv[k], z = sv[H + k], nn = sv[2 * H + k], hn = sv[3 * H + k];
      } else {
        float ar = gi[k] + gh[k] + (bih ? bih[k] : 0.f) + (bhh ? bhh[k] : 0.f);
        float az = gi[H + k] + gh[H + k] + (bih ? bih[H + k] : 0.f) + (bhh ? bhh[H + k] : 0.f);
        hn = gh[2 * H + k] + (bhh ? bhh[2 * H + k] : 0.f);
        r = sigmoidf(ar), z = sigmoidf(az);
        nn = fast_tanhf(gi[2 * H + k] + (bih ? bih[2 * H + k] : 0.f) + r * hn);
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

static seqcl_status h_gru_gates_bwd(sq_backend *be, const sq_gru_bwd_args *g) {
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
  const float *bih = g->b_ih.buf ? fp(g->b_ih) : NULL;
  const float *bhh = g->b_hh.buf ? fp(g->b_hh) : NULL;
  const int32_t *lens = g->lens.buf ? ip(g->lens) : NULL;
  for (int n = lo; n < hi; n++) {
    int len = lens ? lens[n] : g->step + 1;
    if (g->step >= len) continue;
    int t = g->reverse ? len - 1 - g->step : g->step;
    const float *gi = fp(g->gi) + (size_t)n * g->gi_sn + (size_t)t * g->gi_st;
    const float *gh = fp(g->gh) + (size_t)n * g->ld_gh;
    float *h = fp(g->h) + (size_t)n * H;
    float *out = g->out.buf ? fp(g->out) + (size_t)n * g->out_sn + (size_t)t * g->out_st : NULL;
    float *sv = savedr.buf ? fp(savedr) + (size_t)n * sv_sn + (size_t)t * sv_st : NULL;
    for (int k = 0; k < H; k++) {
      float r = sigmoidf(gi[k] + gh[k] + (bih ? bih[k] : 0.f) + (bhh ? bhh[k] : 0.f));
      float z = sigmoidf(gi[H + k] + gh[H + k] + (bih ? bih[H + k] : 0.f) + (bhh ? bhh[H + k] : 0.f));
      float hn = gh[2 * H + k] + (bhh ? bhh[2 * H + k] : 0.f);
      float nn = fast_tanhf(gi[2 * H + k] + (bih ? bih[2 * H + k] : 0.f) + r * hn);
      float hv = (1.f - z) * nn + z * h[k];
      h[k] = hv;
      if (out) out[k] = hv;
      if (sv) sv[k] = r, sv[H + k] = z, sv[2 * H + k] = nn, sv[3 * H + k] = hn;
    }
  }
}

static seqcl_status h_gru_fwd(sq_backend *be, const sq_gru_args *g, sq_ref savedr, size_t sv_sn,
                              size_t sv_st) {
  (void)be;
  gru_fwd_job job = {g, savedr, sv_sn, sv_st};
  sq_pool_for(be, g->N, 100.0 * g->N * g->H, gru_fwd_rows, &job);
  return SEQCL_OK;
}

typedef struct attn_fwd_job {
  const sq_attn_args *a;
  sq_ref u, c, alpha;
  int ld_c;
} attn_fwd_job;

static void attn_fwd_rows(void *arg, int lo, int hi) {
  const attn_fwd_job *job = arg;
  const sq_attn_args *a = job->a;
  const sq_ref ur = job->u, cr = job->c, alphar = job->alpha;
  const int ld_c = job->ld_c;
  const int S = a->S, He = a->He, A = a->A;
  const int additive = a->kind == SQ_SCORE_ADDITIVE;
  const int32_t *lens = ip(a->lens);
  const int32_t *mask = a->mask.buf ? ip(a->mask) : NULL;
  const float *v = additive ? fp(a->v) : NULL;
  const float bv = additive && a->bv.buf ? fp(a->bv)[0] : 0.0f;
  for (int n = lo; n < hi; n++) {
    const float *qp = fp(a->qp) + (size_t)n * a->ld_qp;
    const float *keys = fp(a->keys) + (size_t)n * S * He;
    float *al = fp(alphar) + (size_t)n * S;
    float *c = fp(cr) + (size_t)n * ld_c;
    int len = lens[n] < S ? lens[n] : S;
    float mx = -INFINITY;
    for (int j = 0; j < S; j++) {
      if (j >= len || (mask && !mask[(size_t)n * S + j])) {
        al[j] = -INFINITY;
        continue;
      }
      float e = 0.0f;
      if (additive) {
        const float *pk = fp(a->pkeys) + ((size_t)n * S + j) * A;
        float *u = ur.buf ? fp(ur) + ((size_t)n * S + j) * A : NULL;
        for (int k = 0; k < A; k++) {
          float t = fast_tanhf(pk[k] + qp[k]);
          if (u) u[k] = t;
          e += v[k] * t;
        }
        e += bv;
      } else {
        const float *h = keys + (size_t)j * He;
        for (int k = 0; k < He; k++) e += h[k] * qp[k];
      }
      al[j] = e * a->scale;
      mx = al[j] > mx ? al[j] : mx;
    }
    double sum = 0.0;
    for (int j = 0; j < S; j++) {
      al[j] = al[j] == -INFINITY ? 0.0f : expf(al[j] - mx);
      sum += al[j];
    }
    float inv = (float)(1.0 / sum);
    for (int k = 0; k < He; k++) c[k] = 0.0f;
    for (int j = 0; j < S; j++) {
      al[j] *= inv;
      if (al[j] == 0.0f) continue;
      const float *h = keys + (size_t)j * He;
      for (int k = 0; k < He; k++) c[k] += al[j] * h[k];
    }
  }
}

static seqcl_status h_attn_fwd(sq_backend *be, const sq_attn_args *a, sq_ref ur, sq_ref cr,
                               int ld_c, sq_ref alphar) {
  (void)be;
  attn_fwd_job job = {a, ur, cr, alphar, ld_c};
  const double per_pos = a->kind == SQ_SCORE_ADDITIVE ? 20.0 * a->A + a->He : 2.0 * a->He;
  sq_pool_for(be, a->N, (double)a->N * a->S * per_pos, attn_fwd_rows, &job);
  return SEQCL_OK;
}

static seqcl_status h_attn_bwd(sq_backend *be, const sq_attn_args *a, sq_ref alphar, sq_ref ur,
                               sq_ref dcr, int ld_dc, sq_ref dqpr, int ld_dqp, sq_ref dkeysr, sq_ref dpkeysr,
                               sq_ref dvr, sq_ref dbvr) {
  (void)be;
  const int S = a->S, He = a->He, A = a->A;
  const int additive = a->kind == SQ_SCORE_ADDITIVE;
  const int32_t *lens = ip(a->lens);
  const int32_t *mask = a->mask.buf ? ip(a->mask) : NULL;
  /* dalpha for the first 4096 positions is kept; longer rows recompute the rest. */
  float dalpha[4096];
  float *dv = additive ? fp(dvr) : NULL;
  float *dbv = additive && dbvr.buf ? fp(dbvr) : NULL;
  const float *v = additive ? fp(a->v) : NULL;
  for (int n = 0; n < a->N; n++) {
    const float *al = fp(alphar) + (size_t)n * S;
    const float *dc = fp(dcr) + (size_t)n * ld_dc;
    const float *qp = fp(a->qp) + (size_t)n * a->ld_qp;
    float *dqp = fp(dqpr) + (size_t)n * ld_dqp;
    const float *keys = fp(a->keys) + (size_t)n * S * He;
    float *dkeys = fp(dkeysr) + (size_t)n * S * He;
    int len = lens[n] < S ? lens[n] : S;
    /* dalpha_j = dc . h_j; de_j = alpha_j (dalpha_j - sum_k alpha_k dalpha_k) */
    double sdot = 0.0;
    for (int j = 0; j < len; j++) {
      if (mask && !mask[(size_t)n * S + j]) continue;
      const float *h = keys + (size_t)j * He;
      float s = 0.f;
      for (int k = 0; k < He; k++) s += dc[k] * h[k];
      if (j < 4096) dalpha[j] = s;
      sdot += (double)al[j] * s;
    }
    for (int j = 0; j < len; j++) {
      if (mask && !mask[(size_t)n * S + j]) continue;
      const float *h = keys + (size_t)j * He;
      float *dh = dkeys + (size_t)j * He;
      float daj;
      if (j < 4096) {
        daj = dalpha[j];
      } else {
        daj = 0.f;
        for (int k = 0; k < He; k++) daj += dc[k] * h[k];
      }
      float aj = al[j];
      float de = aj * (daj - (float)sdot) * a->scale;
      for (int k = 0; k < He; k++) dh[k] += aj * dc[k];
      if (!additive) {
        for (int k = 0; k < He; k++) {
          dqp[k] += de * h[k];
          dh[k] += de * qp[k];
        }
      } else {
        const float *pk = fp(a->pkeys) + ((size_t)n * S + j) * A;
        float *dpk = fp(dpkeysr) + ((size_t)n * S + j) * A;
        const float *us = ur.buf ? fp(ur) + ((size_t)n * S + j) * A : NULL;
        for (int k = 0; k < A; k++) {
          float u = us ? us[k] : fast_tanhf(pk[k] + qp[k]);
          float du = de * v[k] * (1.f - u * u);
          dpk[k] += du;
          dqp[k] += du;
          dv[k] += de * u;
        }
        if (dbv) dbv[0] += de;
      }
    }
  }
  return SEQCL_OK;
}

static seqcl_status h_embedding_bwd(sq_backend *be, int N, int D, sq_ref idsr, sq_ref dyr,
                                    int ld_dy, int pad_id, sq_ref dtr) {
  (void)be;
  const int32_t *ids = ip(idsr);
  const float *dy = fp(dyr);
  float *dt = fp(dtr);
  for (int n = 0; n < N; n++) {
    if (ids[n] == pad_id) continue;
    float *row = dt + (size_t)ids[n] * D;
    const float *src = dy + (size_t)n * ld_dy;
    for (int k = 0; k < D; k++) row[k] += src[k];
  }
  return SEQCL_OK;
}

static seqcl_status h_sum_squares(sq_backend *be, size_t count, sq_ref xr, sq_ref out) {
  (void)be;
  const float *x = fp(xr);
  double s = 0.0;
  for (size_t i = 0; i < count; i++) s += (double)x[i] * x[i];
  fp(out)[0] = (float)s;
  return SEQCL_OK;
}

static seqcl_status h_scale(sq_backend *be, size_t count, sq_ref xr, float s) {
  (void)be;
  float *x = fp(xr);
  for (size_t i = 0; i < count; i++) x[i] *= s;
  return SEQCL_OK;
}

typedef struct adam_job {
  float *p, *m, *v;
  const float *g;
  float b1, b2, eps, step_size, bc2_sqrt;
} adam_job;

static void adam_range(void *arg, int lo, int hi) {
  const adam_job *j = arg;
  float *p = j->p, *m = j->m, *v = j->v;
  const float *g = j->g;
  const float b1 = j->b1, b2 = j->b2;
  for (int i = lo; i < hi; i++) {
    m[i] = b1 * m[i] + (1.f - b1) * g[i];
    v[i] = b2 * v[i] + (1.f - b2) * g[i] * g[i];
    p[i] -= j->step_size * m[i] / (sqrtf(v[i]) / j->bc2_sqrt + j->eps);
  }
}

static seqcl_status h_adam(sq_backend *be, size_t count, sq_ref pr, sq_ref gr, sq_ref mr,
                           sq_ref vr, float b1, float b2, float eps, float step_size,
                           float bc2_sqrt) {
  (void)be;
  adam_job j = {fp(pr), fp(mr), fp(vr), fp(gr), b1, b2, eps, step_size, bc2_sqrt};
  /* elementwise: any split gives the same bits */
  for (size_t at = 0; at < count;) {
    const int n = count - at > (size_t)INT_MAX ? INT_MAX : (int)(count - at);
    adam_job part = j;
    part.p += at, part.m += at, part.v += at, part.g += at;
    sq_pool_for(be, n, 20.0 * n, adam_range, &part);
    at += (size_t)n;
  }
  return SEQCL_OK;
}

static const struct sq_grad_ops host_grad_ops = {
    .cross_entropy_bwd = h_cross_entropy_bwd,
    .bias_grad = h_bias_grad,
    .tanh_bwd = h_tanh_bwd,
    .gru_gates_bwd = h_gru_gates_bwd,
    .attn_fwd = h_attn_fwd,
    .gru_fwd = h_gru_fwd,
    .attn_bwd = h_attn_bwd,
    .embedding_bwd = h_embedding_bwd,
    .sum_squares = h_sum_squares,
    .scale = h_scale,
    .adam = h_adam,
};

const struct sq_grad_ops *sq_host_grad_ops(void) { return &host_grad_ops; }
