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

/* The K best of a row, given a bound `least` no higher than its K-th best number:
 * only the logits not below max(least, the K-th best so far) go through
 * topk_offer, in index order (a NaN fails `<` and is offered too); a block of
 * 16 all below it is passed over with one vector compare. Every logit passed
 * over is below the K best numbers, or ties the K-th with a higher index, so
 * topk_offer would turn it away: the result is the one-by-one scan's exactly. */
SQ_HOT_CLONES
static void row_topk(const float *row, int V, int K, float least, float *bv, int *bi) {
  int full = 0, v = 0;
  for (; v + SQ_VW16 <= V; v += SQ_VW16) {
    const float t = full && bv[K - 1] > least ? bv[K - 1] : least;
    sq_vf16 x;
    memcpy(&x, row + v, sizeof x);
    const sq_vi16 below = x < t;
    int all = -1;
    for (int i = 0; i < SQ_VW16; i++) all &= below[i];
    if (all) continue;
    for (int i = 0; i < SQ_VW16; i++)
      if (!below[i]) topk_offer(row, v + i, 1, K, bv, bi, &full);
  }
  for (; v < V; v++)
    if (!(row[v] < least)) topk_offer(row, v, 1, K, bv, bi, &full);
}

/* The row's maximum, NaN when any logit is NaN (as beam.cl): sixteen lanes'
 * maxima, then across the lanes. The maximum of the same values in any order
 * is the same number (a tie of -0 and +0 only changes the sign of a zero
 * maximum, which the log-sum-exp below does not see). *least gets the K-th
 * largest of the lanes' maxima over the full blocks (K <= 16 lanes): K
 * different logits are at least that large, all of them numbers, so each of
 * the row's K best numbers is too; -inf when the row has no full block. */
SQ_HOT_CLONES
static float row_max(const float *row, int V, int K, float *least) {
  sq_vf16 m = (sq_vf16){0} - INFINITY;
  sq_vi16 nan = {0};
  int v = 0;
  for (; v + SQ_VW16 <= V; v += SQ_VW16) {
    sq_vf16 x;
    memcpy(&x, row + v, sizeof x);
    m = sq_v16_select(x > m, x, m);
    nan |= x != x;
  }
  float lanes[SQ_VW16], mx = -INFINITY;
  int any_nan = 0;
  for (int i = 0; i < SQ_VW16; i++) {
    mx = m[i] > mx ? m[i] : mx;
    any_nan |= nan[i] != 0;
    /* insertion, largest first: sixteen numbers (-inf where no block) */
    int pos = i;
    while (pos > 0 && lanes[pos - 1] < m[i]) {
      lanes[pos] = lanes[pos - 1];
      pos--;
    }
    lanes[pos] = m[i];
  }
  *least = lanes[K - 1];
  for (; v < V; v++) {
    mx = row[v] > mx ? row[v] : mx;
    any_nan |= row[v] != row[v];
  }
  return any_nan ? NAN : mx;
}

/* log sum_v exp(x_v - mx) + mx with the 16-lane exp of host_math.h: sixteen
 * partial sums, folded in lane order (the same bits at any thread count).
 * A NaN maximum (a NaN logit) gives NaN, as beam.cl. */
SQ_HOT_CLONES
static float row_lse(const float *row, int V, float mx) {
  sq_vf16 acc = {0};
  int v = 0;
  for (; v + SQ_VW16 <= V; v += SQ_VW16) {
    sq_vf16 x;
    memcpy(&x, row + v, sizeof x);
    acc += sq_v16_exp(x - mx);
  }
  if (v < V) {
    sq_vf16 x = {0};
    memcpy(&x, row + v, (size_t)(V - v) * sizeof(float));
    const sq_vf16 t = sq_v16_exp(x - mx);
    for (int i = 0; i < V - v; i++) acc[i] += t[i];
  }
  float sum = 0.0f;
  for (int i = 0; i < SQ_VW16; i++) sum += acc[i];
  return isnan(mx) ? mx : mx + logf(sum);
}

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
    const float mx = row_max(row, V, K, &least);
    row_topk(row, V, K, least, bv, bi);
    const float lse = row_lse(row, V, mx);
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
