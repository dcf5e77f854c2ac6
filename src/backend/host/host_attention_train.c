/* Attention of training on the host: the forward pass that keeps its
 * activations (attn_fwd) and the backward (attn_bwd), rows split across the
 * host pool. The inner loops run 16 lanes at a time (compiled once per
 * instruction set, SQ_HOT_CLONES), with the vector tanh of host_math.h, so the
 * additive energies and the u they keep are the same bits as decoding's
 * (host_attention.c, additive_energies: one float partial sum per lane, the
 * lanes added in order). Accumulation:
 *  - dot-type energies and dalpha_j = dc . h_j: 16 float partial sums, then
 *    the lanes in order (inside the He-term dot product bound);
 *  - the softmax denominator and sum_j alpha_j dalpha_j in double;
 *  - dv and dbv (shared by every row) are summed per row into a buffer of
 *    their own, then the rows are added in row order after the split, so the
 *    bits do not depend on how many threads ran. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend/host/host.h"
#include "backend/host/host_math.h"
#include "backend/host/host_softmax.h"
#include "backend/host/pool.h"
#include "core/error.h"

SQ_IGNORE_PSABI /* static code only: no ABI is exposed */
#define EW SQ_VW16
typedef sq_vf16 ew_vf;

/* Lanes [0, n) of p (n <= EW), the rest 0; a full vector is one load. */
static inline __attribute__((always_inline)) ew_vf ld(const float *p, int n) {
  ew_vf v = {0};
  if (n == EW)
    memcpy(&v, p, sizeof v);
  else
    for (int i = 0; i < n; i++) v[i] = p[i];
  return v;
}
static inline __attribute__((always_inline)) void st(float *p, ew_vf v, int n) {
  if (n == EW)
    memcpy(p, &v, sizeof v);
  else
    for (int i = 0; i < n; i++) p[i] = v[i];
}
static inline __attribute__((always_inline)) float lanes_sum(ew_vf s) {
  float h = 0.0f;
  for (int l = 0; l < EW; l++) h += s[l];
  return h;
}
static inline __attribute__((always_inline)) int width(int k, int n) {
  return n - k < EW ? n - k : EW;
}

/* sum_a v_a u_a with u = tanh(pk + q), u kept when wanted (additive_energies'
 * per-lane operations). */
static inline __attribute__((always_inline)) float additive_energy(int A, const float *pk,
                                                                   const float *q, const float *v,
                                                                   float *u) {
  ew_vf s = {0};
  for (int k = 0; k < A; k += EW) {
    const int w = width(k, A);
    ew_vf t = sq_v16_tanh(ld(pk + k, w) + ld(q + k, w));
    if (u) st(u + k, t, w);
    s += ld(v + k, w) * t;
  }
  return lanes_sum(s);
}

static inline __attribute__((always_inline)) float dot(int n, const float *a, const float *b) {
  ew_vf s = {0};
  for (int k = 0; k < n; k += EW) {
    const int w = width(k, n);
    s += ld(a + k, w) * ld(b + k, w);
  }
  return lanes_sum(s);
}

/* y += w x over n */
static inline __attribute__((always_inline)) void axpy(int n, float w, const float *x, float *y) {
  for (int k = 0; k < n; k += EW) {
    const int l = width(k, n);
    st(y + k, ld(y + k, l) + w * ld(x + k, l), l);
  }
}

/* ---- forward ---- */

typedef struct attn_fwd_job {
  const sq_attn_args *a;
  sq_ref u, c, alpha;
  int ld_c;
} attn_fwd_job;

static int valid_at(const int32_t *mask, int n, int S, int j) {
  return !mask || mask[(size_t)n * S + j];
}

SQ_HOT_CLONES
static void attn_fwd_row(const attn_fwd_job *job, int n) {
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
      e = additive_energy(A, sq_host_f32(a->pkeys) + at, qp, sq_host_f32(a->v),
                          job->u.buf ? sq_host_f32(job->u) + at : NULL);
      e = (e + (a->bv.buf ? sq_host_f32(a->bv)[0] : 0.0f)) * a->scale;
    } else {
      e = dot(He, keys + (size_t)j * He, qp) * a->scale;
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
    if (al[j] != 0.0f) axpy(He, al[j], keys + (size_t)j * He, c);
  }
}

static void attn_fwd_rows(void *arg, int lo, int hi) {
  for (int n = lo; n < hi; n++) attn_fwd_row(arg, n);
}

seqcl_status sq_host_attn_fwd(sq_backend *be, const sq_attn_args *a, sq_ref ur, sq_ref cr,
                              int ld_c, sq_ref alphar) {
  attn_fwd_job job = {a, ur, cr, alphar, ld_c};
  const double per_pos = a->kind == SQ_SCORE_ADDITIVE ? 20.0 * a->A + a->He : 2.0 * a->He;
  sq_pool_for(be, a->N, (double)a->N * a->S * per_pos, attn_fwd_rows, &job);
  return SEQCL_OK;
}

/* ---- backward ---- */

typedef struct attn_bwd_job {
  const sq_attn_args *a;
  sq_ref alpha, u, dc, dqp, dkeys, dpkeys;
  int ld_dc, ld_dqp;
  float *dv_rows; /* additive: [N, A + 1], row n's share of dv and then of dbv */
} attn_bwd_job;

/* dalpha for the first DALPHA_KEPT positions of a row is kept; longer rows
 * compute the rest again. */
enum { DALPHA_KEPT = 1024 };

SQ_HOT_CLONES
static void attn_bwd_row(const attn_bwd_job *job, int n) {
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
    const float s = dot(He, dc, keys + (size_t)j * He);
    if (j < DALPHA_KEPT) dalpha[j] = s;
    sdot += (double)al[j] * s;
  }
  float *dv = additive ? job->dv_rows + (size_t)n * (A + 1) : NULL;
  for (int j = 0; j < len; j++) {
    if (!valid_at(mask, n, S, j)) continue;
    const float *h = keys + (size_t)j * He;
    float *dh = dkeys + (size_t)j * He;
    const float daj = j < DALPHA_KEPT ? dalpha[j] : dot(He, dc, h);
    const float aj = al[j];
    const float de = aj * (daj - (float)sdot) * a->scale;
    axpy(He, aj, dc, dh);
    if (!additive) {
      axpy(He, de, h, dqp);
      axpy(He, de, qp, dh);
      continue;
    }
    const size_t at = ((size_t)n * S + j) * A;
    const float *pk = sq_host_f32(a->pkeys) + at;
    const float *us = job->u.buf ? sq_host_f32(job->u) + at : NULL;
    const float *v = sq_host_f32(a->v);
    float *dpk = sq_host_f32(job->dpkeys) + at;
    for (int k = 0; k < A; k += EW) {
      const int w = width(k, A);
      const ew_vf u = us ? ld(us + k, w) : sq_v16_tanh(ld(pk + k, w) + ld(qp + k, w));
      const ew_vf du = de * ld(v + k, w) * (1.0f - u * u);
      st(dpk + k, ld(dpk + k, w) + du, w);
      st(dqp + k, ld(dqp + k, w) + du, w);
      st(dv + k, ld(dv + k, w) + de * u, w);
    }
    dv[A] += de;
  }
}

static void attn_bwd_rows(void *arg, int lo, int hi) {
  for (int n = lo; n < hi; n++) attn_bwd_row(arg, n);
}

seqcl_status sq_host_attn_bwd(sq_backend *be, const sq_attn_args *a, sq_ref alphar, sq_ref ur,
                              sq_ref dcr, int ld_dc, sq_ref dqpr, int ld_dqp, sq_ref dkeysr,
                              sq_ref dpkeysr, sq_ref dvr, sq_ref dbvr) {
  const int N = a->N, A = a->A, additive = a->kind == SQ_SCORE_ADDITIVE;
  attn_bwd_job job = {.a = a, .alpha = alphar, .u = ur, .dc = dcr, .dqp = dqpr, .dkeys = dkeysr,
                      .dpkeys = dpkeysr, .ld_dc = ld_dc, .ld_dqp = ld_dqp};
  if (additive && !(job.dv_rows = calloc((size_t)N * (size_t)(A + 1), sizeof(float))))
    return sq_fail(be->ctx, SEQCL_ERR_OUT_OF_MEMORY,
                   "attn_bwd (host): no memory for the per-row energy gradients of %d rows", N);
  const double per_pos = 4.0 * a->He + (additive ? 30.0 * A : 2.0 * a->He);
  sq_pool_for(be, N, (double)N * a->S * per_pos, attn_bwd_rows, &job);
  if (!additive) return SEQCL_OK;
  float *dv = sq_host_f32(dvr), *dbv = sq_host_f32_opt(dbvr);
  for (int n = 0; n < N; n++) {
    const float *row = job.dv_rows + (size_t)n * (A + 1);
    for (int k = 0; k < A; k++) dv[k] += row[k];
    if (dbv) dbv[0] += row[A];
  }
  free(job.dv_rows);
  return SEQCL_OK;
}
