/* Beam search slots on the host backend (backend.h, "Beam search slots"). The
 * arithmetic is float32, in the same order as kernels/beam.cl where the order
 * matters; the candidate pick is the kernel's own text (kernels/beam_pick.h),
 * so both backends rank candidates alike. */
#include <math.h>
#include <string.h>

#include "backend/host/host.h"
#include "backend/host/host_math.h"
#include "backend/host/pool.h"
#include "beam_pick.h" /* kernels/: the candidate pick kernels/beam.cl shares */

/* Is (v, i) ranked ahead of (bv, bi)? Higher value first, NaN below every
 * number, lower index on ties; an empty slot (bi < 0) loses to anything. */
static int topk_better(float v, int i, float bv, int bi) {
  if (bi < 0) return 1;
  if (isnan(v)) return isnan(bv) && i < bi;
  if (isnan(bv)) return 1;
  return v > bv || (v == bv && i < bi);
}

typedef struct topk_job {
  int V, ld, K;
  const float *x;
  float *vals;
  int32_t *ids;
} topk_job;

SQ_IGNORE_PSABI /* static code only: no ABI is exposed */

/* Logits [v, v + n) offered to the K slots in order of index. Once the slots
 * hold numbers, a value below the K-th is out at one compare (a NaN fails `<`
 * and takes the full test, which ranks it last). */
static void topk_offer(const float *row, int v, int n, int K, float *bv, int *bi, int *full) {
  for (int e = v + n; v < e; v++) {
    if (*full && row[v] < bv[K - 1]) continue;
    if (!topk_better(row[v], v, bv[K - 1], bi[K - 1])) continue;
    int pos = K - 1;
    while (pos > 0 && topk_better(row[v], v, bv[pos - 1], bi[pos - 1])) {
      bv[pos] = bv[pos - 1];
      bi[pos] = bi[pos - 1];
      pos--;
    }
    bv[pos] = row[v];
    bi[pos] = v;
    *full = bi[K - 1] >= 0 && !isnan(bv[K - 1]);
  }
}

/* The passes over a row per width (host_beam_hot.h): 16 lanes with AVX-512,
 * two 8-lane halves with AVX2, four 4-lane quarters otherwise. */
#define SQ_HOT_TEMPLATE "backend/host/host_beam_hot.h"
#include "backend/host/host_widths.h"

/* Rows [lo, hi): each its K best (value, index) by topk_better, then the
 * values less the row's log-sum-exp. */
static void topk_rows(void *arg, int lo, int hi) {
  const topk_job *j = arg;
  const int V = j->V, K = j->K;
  for (int r = lo; r < hi; r++) {
    const float *row = j->x + (size_t)r * j->ld;
    float bv[SQ_BEAM_MAX_K];
    int bi[SQ_BEAM_MAX_K];
    for (int i = 0; i < K; i++) {
      bv[i] = -INFINITY;
      bi[i] = -1;
    }
    /* a NaN logit makes the maximum NaN (as beam.cl), so every value of the
     * row is NaN and the decoder reports it */
    float least;
    const float mx = SQ_HOT_PICK(row_max)(row, V, K, &least);
    SQ_HOT_PICK(row_topk)(row, V, K, least, bv, bi);
    const float lse = SQ_HOT_PICK(row_lse)(row, V, mx);
    for (int i = 0; i < K; i++) {
      j->vals[(size_t)r * K + i] = bi[i] >= 0 ? bv[i] - lse : -INFINITY;
      j->ids[(size_t)r * K + i] = bi[i];
    }
  }
}

seqcl_status sq_host_beam_topk(sq_backend *be, int N, int V, sq_ref x, int ld, int K,
                               sq_ref vals, sq_ref ids) {
  topk_job j = {V, ld, K, sq_host_f32(x), sq_host_f32(vals), sq_host_i32(ids)};
  /* an exp and a few compares per logit: rows split across the host threads */
  sq_pool_for(be, N, 20.0 * N * V, topk_rows, &j);
  return SEQCL_OK;
}

static void select_sentence(const sq_beam_args *a, int s) {
  const int K = a->K, R = a->n * K, t = a->step;
  const float *vals = sq_host_f32(a->vals);
  const int32_t *toks = sq_host_i32(a->tok);
  float *cum = sq_host_f32(a->cum);
  int32_t *live = sq_host_i32(a->live), *ids = sq_host_i32(a->ids);
  int32_t *parent = sq_host_i32(a->parent);
  int32_t *tok_hist = sq_host_i32(a->tok_hist) + (size_t)t * R;
  int32_t *par_hist = sq_host_i32(a->par_hist) + (size_t)t * R;
  float *fin_lp = sq_host_f32(a->fin_lp) + (size_t)s * K;
  int32_t *fin_step = sq_host_i32(a->fin_step) + (size_t)s * K;
  int32_t *fin_par = sq_host_i32(a->fin_par) + (size_t)s * K;
  int32_t *fin_count = sq_host_i32(a->fin_count), *done = sq_host_i32(a->done);
  const int row0 = s * K;
  if (done[s]) {
    for (int i = 0; i < K; i++) parent[row0 + i] = row0 + i;
    return;
  }
  int f = fin_count[s], nl = 0;
  const int keep = K - f;
  float ncum[SQ_BEAM_MAX_K];
  int ntok[SQ_BEAM_MAX_K], npar[SQ_BEAM_MAX_K];
  /* the previous pick; the next one is the best candidate ranked after it */
  float ps = 0.0f;
  int ptok = -1, pk = -1;
  for (int c = 0; c < keep; c++) {
    float bs;
    int btok, bk;
    if (!beam_pick(K, row0, live, toks, cum, vals, ps, ptok, pk, &bs, &btok, &bk)) break;
    ps = bs;
    ptok = btok;
    pk = bk;
    if (btok == a->eos) {
      fin_lp[f] = bs;
      fin_step[f] = t;
      fin_par[f] = row0 + bk;
      f++;
    } else {
      ncum[nl] = bs;
      ntok[nl] = btok;
      npar[nl] = row0 + bk;
      nl++;
    }
  }
  fin_count[s] = f;
  const int d = f >= K || nl == 0 || t + 1 >= a->max_steps;
  for (int i = 0; i < K; i++) {
    const int r = row0 + i;
    if (i < nl) {
      tok_hist[r] = ntok[i];
      par_hist[r] = npar[i];
      cum[r] = ncum[i];
      live[r] = 1;
      ids[r] = d ? a->eos : ntok[i];
      parent[r] = npar[i];
    } else {
      live[r] = 0;
      ids[r] = a->eos;
      parent[r] = r;
    }
  }
  done[s] = d;
}

seqcl_status sq_host_beam_select(sq_backend *be, const sq_beam_args *a) {
  (void)be;
  for (int s = 0; s < a->n; s++) select_sentence(a, s);
  return SEQCL_OK;
}

seqcl_status sq_host_gather_rows(sq_backend *be, int N, int D, sq_ref src, sq_ref idx,
                                 sq_ref dst) {
  (void)be;
  const float *in = sq_host_f32(src);
  const int32_t *ix = sq_host_i32(idx);
  float *out = sq_host_f32(dst);
  for (int r = 0; r < N; r++) {
    const int from = ix[r] >= 0 && ix[r] < N ? ix[r] : r;
    memcpy(out + (size_t)r * D, in + (size_t)from * D, (size_t)D * sizeof(float));
  }
  return SEQCL_OK;
}
