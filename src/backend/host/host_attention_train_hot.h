/* The rows of training's attention, forward and backward, written once over
 * HOT_VF (HOT_W float lanes) and included by host_attention_train.c once per
 * width (host_widths.h): each function is HOT_NAME(f), compiled with
 * HOT_ATTR. The inner loops keep
 * sixteen logical lanes (HOT_G: 16 / HOT_W vectors), so every lane runs the
 * same operations at every width and the lanes are folded in the same order:
 * the same bits. */
#define HOT_NV (16 / HOT_W)
#define HOT_G HOT_NAME(lanes16)

typedef struct HOT_G {
  HOT_VF v[HOT_NV];
} HOT_G;

/* Lanes [0, n) of p (n <= 16), the rest 0; a full vector is one load. */
static inline __attribute__((always_inline)) HOT_G HOT_NAME(ld)(const float *p, int n) {
  HOT_G g;
  for (int u = 0; u < HOT_NV; u++) {
    const int m = n - u * HOT_W;
    g.v[u] = (HOT_VF){0};
    if (m >= HOT_W)
      memcpy(&g.v[u], p + u * HOT_W, sizeof g.v[u]);
    else
      for (int i = 0; i < m; i++) g.v[u][i] = p[u * HOT_W + i];
  }
  return g;
}

static inline __attribute__((always_inline)) void HOT_NAME(st)(float *p, HOT_G g, int n) {
  for (int u = 0; u < HOT_NV; u++) {
    const int m = n - u * HOT_W;
    if (m >= HOT_W)
      memcpy(p + u * HOT_W, &g.v[u], sizeof g.v[u]);
    else
      for (int i = 0; i < m; i++) p[u * HOT_W + i] = g.v[u][i];
  }
}

static inline __attribute__((always_inline)) float HOT_NAME(lanes_sum)(const HOT_VF s[HOT_NV]) {
  float h = 0.0f;
  for (int u = 0; u < HOT_NV; u++)
    for (int l = 0; l < HOT_W; l++) h += s[u][l];
  return h;
}

/* sum_a v_a u_a with u = tanh(pk + q), u kept when wanted (the decoder's
 * additive_energies' per-lane operations). */
static inline __attribute__((always_inline)) float HOT_NAME(additive_energy)(
    int A, const float *pk, const float *q, const float *v, float *u) {
  HOT_VF s[HOT_NV];
  for (int i = 0; i < HOT_NV; i++) s[i] = (HOT_VF){0};
  for (int k = 0; k < A; k += 16) {
    const int w = width(k, A);
    const HOT_G p = HOT_NAME(ld)(pk + k, w), qq = HOT_NAME(ld)(q + k, w);
    const HOT_G vv = HOT_NAME(ld)(v + k, w);
    HOT_G t;
    for (int i = 0; i < HOT_NV; i++) t.v[i] = HOT_FN(tanh)(p.v[i] + qq.v[i]);
    if (u) HOT_NAME(st)(u + k, t, w);
    for (int i = 0; i < HOT_NV; i++) s[i] += vv.v[i] * t.v[i];
  }
  return HOT_NAME(lanes_sum)(s);
}

static inline __attribute__((always_inline)) float HOT_NAME(dot)(int n, const float *a,
                                                                 const float *b) {
  HOT_VF s[HOT_NV];
  for (int i = 0; i < HOT_NV; i++) s[i] = (HOT_VF){0};
  for (int k = 0; k < n; k += 16) {
    const int w = width(k, n);
    const HOT_G x = HOT_NAME(ld)(a + k, w), y = HOT_NAME(ld)(b + k, w);
    for (int i = 0; i < HOT_NV; i++) s[i] += x.v[i] * y.v[i];
  }
  return HOT_NAME(lanes_sum)(s);
}

/* y += w x over n */
static inline __attribute__((always_inline)) void HOT_NAME(axpy)(int n, float w, const float *x,
                                                                 float *y) {
  for (int k = 0; k < n; k += 16) {
    const int l = width(k, n);
    HOT_G yy = HOT_NAME(ld)(y + k, l);
    const HOT_G xx = HOT_NAME(ld)(x + k, l);
    for (int i = 0; i < HOT_NV; i++) yy.v[i] = yy.v[i] + w * xx.v[i];
    HOT_NAME(st)(y + k, yy, l);
  }
}

HOT_ATTR static void HOT_NAME(attn_fwd_row)(const attn_fwd_job *job, int n) {
  const sq_attn_args *a = job->a;
  const int S = a->S, He = a->He, A = a->A;
  const int additive = a->kind == SQ_SCORE_ADDITIVE;
  const int32_t *mask = sq_host_i32_opt(a->mask);
  const float *qp = sq_host_f32(a->qp) + (size_t)n * a->ld_qp;
  const float *keys = sq_host_f32(a->keys) + (size_t)n * S * He;
  float *al = sq_host_f32(job->alpha) + (size_t)n * S;
  float *c = sq_host_f32(job->c) + (size_t)n * job->ld_c;
  const int lens_n = sq_host_i32(a->lens)[n], len = lens_n < S ? lens_n : S;
  float mx = -INFINITY;
  for (int j = 0; j < S; j++) {
    if (j >= len || !valid_at(mask, n, S, j)) {
      al[j] = -INFINITY;
      continue;
    }
    float e;
    if (additive) {
      const size_t at = ((size_t)n * S + j) * A;
      e = HOT_NAME(additive_energy)(A, sq_host_f32(a->pkeys) + at, qp, sq_host_f32(a->v),
                                    job->u.buf ? sq_host_f32(job->u) + at : NULL);
      e = (e + (a->bv.buf ? sq_host_f32(a->bv)[0] : 0.0f)) * a->scale;
    } else {
      e = HOT_NAME(dot)(He, keys + (size_t)j * He, qp) * a->scale;
    }
    al[j] = e;
    mx = max_score(mx, e);
  }
  double sum = 0.0;
  if (!no_softmax(mx, 1.0))
    for (int j = 0; j < S; j++) {
      al[j] = al[j] == -INFINITY ? 0.0f : expf(al[j] - mx);
      sum += al[j];
    }
  if (no_softmax(mx, sum)) { /* as the inference path: NaN weights and context */
    nan_row(S, len, mask ? mask + (size_t)n * S : NULL, al);
    for (int k = 0; k < He; k++) c[k] = NAN;
    return;
  }
  const float inv = (float)(1.0 / sum);
  memset(c, 0, sizeof(float) * (size_t)He);
  for (int j = 0; j < S; j++) {
    al[j] *= inv;
    if (al[j] != 0.0f) HOT_NAME(axpy)(He, al[j], keys + (size_t)j * He, c);
  }
}

HOT_ATTR static void HOT_NAME(attn_bwd_row)(const attn_bwd_job *job, int n) {
  const sq_attn_args *a = job->a;
  const int S = a->S, He = a->He, A = a->A;
  const int additive = a->kind == SQ_SCORE_ADDITIVE;
  const int32_t *mask = sq_host_i32_opt(a->mask);
  const float *al = sq_host_f32(job->alpha) + (size_t)n * S;
  const float *dc = sq_host_f32(job->dc) + (size_t)n * job->ld_dc;
  const float *qp = sq_host_f32(a->qp) + (size_t)n * a->ld_qp;
  float *dqp = sq_host_f32(job->dqp) + (size_t)n * job->ld_dqp;
  const float *keys = sq_host_f32(a->keys) + (size_t)n * S * He;
  float *dkeys = sq_host_f32(job->dkeys) + (size_t)n * S * He;
  const int lens_n = sq_host_i32(a->lens)[n], len = lens_n < S ? lens_n : S;
  float dalpha[DALPHA_KEPT];
  /* dalpha_j = dc . h_j; de_j = alpha_j (dalpha_j - sum_k alpha_k dalpha_k) */
  double sdot = 0.0;
  for (int j = 0; j < len; j++) {
    if (!valid_at(mask, n, S, j)) continue;
    const float s = HOT_NAME(dot)(He, dc, keys + (size_t)j * He);
    if (j < DALPHA_KEPT) dalpha[j] = s;
    sdot += (double)al[j] * s;
  }
  float *dv = additive ? job->dv_rows + (size_t)n * (A + 1) : NULL;
  for (int j = 0; j < len; j++) {
    if (!valid_at(mask, n, S, j)) continue;
    const float *h = keys + (size_t)j * He;
    float *dh = dkeys + (size_t)j * He;
    const float daj = j < DALPHA_KEPT ? dalpha[j] : HOT_NAME(dot)(He, dc, h);
    const float aj = al[j];
    const float de = aj * (daj - (float)sdot) * a->scale;
    HOT_NAME(axpy)(He, aj, dc, dh);
    if (!additive) {
      HOT_NAME(axpy)(He, de, h, dqp);
      HOT_NAME(axpy)(He, de, qp, dh);
      continue;
    }
    const size_t at = ((size_t)n * S + j) * A;
    const float *pk = sq_host_f32(a->pkeys) + at;
    const float *us = job->u.buf ? sq_host_f32(job->u) + at : NULL;
    const float *v = sq_host_f32(a->v);
    float *dpk = sq_host_f32(job->dpkeys) + at;
    for (int k = 0; k < A; k += 16) {
      const int w = width(k, A);
      HOT_G u;
      if (us) {
        u = HOT_NAME(ld)(us + k, w);
      } else {
        const HOT_G p = HOT_NAME(ld)(pk + k, w), q = HOT_NAME(ld)(qp + k, w);
        for (int i = 0; i < HOT_NV; i++) u.v[i] = HOT_FN(tanh)(p.v[i] + q.v[i]);
      }
      const HOT_G vv = HOT_NAME(ld)(v + k, w);
      HOT_G du, t;
      for (int i = 0; i < HOT_NV; i++) {
        du.v[i] = de * vv.v[i] * (1.0f - u.v[i] * u.v[i]);
        SQ_HOT_ROUNDED(du.v[i]); /* never fused into the adds below, at any width */
      }
      t = HOT_NAME(ld)(dpk + k, w);
      for (int i = 0; i < HOT_NV; i++) t.v[i] = t.v[i] + du.v[i];
      HOT_NAME(st)(dpk + k, t, w);
      t = HOT_NAME(ld)(dqp + k, w);
      for (int i = 0; i < HOT_NV; i++) t.v[i] = t.v[i] + du.v[i];
      HOT_NAME(st)(dqp + k, t, w);
      t = HOT_NAME(ld)(dv + k, w);
      for (int i = 0; i < HOT_NV; i++) {
        HOT_VF prod = de * u.v[i];
        SQ_HOT_ROUNDED(prod); /* rounded, then added: the same at every width */
        t.v[i] = t.v[i] + prod;
      }
      HOT_NAME(st)(dv + k, t, w);
    }
    dv[A] += de;
  }
}

#undef HOT_G
#undef HOT_NV
