/* The host backend's slots (through the fronts) against hand-computed cases and
 * double-precision references: attention for every score kind, masked softmax,
 * context, the fused pass, argmax, log-softmax, cross-entropy, embedding.
 * eps = 2^-23. Tolerances are stated next to each comparison. */
#include "../common/test_main.h"
#include "backend/host/gemm_nt.h"
#include "backend/host/host.h"
#include "backend/host/host_math.h"
#include "backend/host/host_vmath.h"
#include "core/fault.h"
#include "host_test.h"
#include "oracle.h"

#define EPS (1.0 / 8388608.0)

static void check_close(const char *what, size_t i, double got, double want, double tol) {
  if (!(fabs(got - want) <= tol))
    fail_msg("%s[%zu] = %.9g, want %.9g (|d| = %.3g > tol %.3g)", what, i, got, want,
             fabs(got - want), tol);
}

/* DESIGN.md seed 000: energies [0, ln2, ln3] over h = [1,0],[0,2],[2,2] give
 * weights [1/6, 2/6, 3/6] and context [7/6, 5/3]; with the third position masked
 * [1/3, 2/3, 0] and [1/3, 4/3]. Row 1 masks position 2 through the mask, row 2
 * through its length. Tolerance: 4 eps relative (double-summed softmax). */
static void hand_case_seed_000(void **state) {
  seqcl_ctx *ctx = *state;
  const float e[9] = {0.0f, (float)log(2.0), (float)log(3.0), 0.0f, (float)log(2.0),
                      (float)log(3.0), 0.0f, (float)log(2.0), (float)log(3.0)};
  const float h[18] = {1, 0, 0, 2, 2, 2, 1, 0, 0, 2, 2, 2, 1, 0, 0, 2, 2, 2};
  const int32_t lens[3] = {3, 3, 2}, mask[9] = {1, 1, 1, 1, 1, 0, 1, 1, 1};
  sq_buf *be = th_buf(ctx, 9, e), *bh = th_buf(ctx, 18, h), *bl = th_buf(ctx, 3, lens);
  sq_buf *bm = th_buf(ctx, 9, mask), *ba = th_buf(ctx, 9, NULL), *bc = th_buf(ctx, 6, NULL);
  TH_OK(sq_masked_softmax(ctx, 3, 3, sq_at(be, 0), sq_at(bl, 0), lens, sq_at(bm, 0), mask,
                          sq_at(ba, 0)));
  TH_OK(sq_context(ctx, 3, 3, 2, sq_at(ba, 0), sq_at(bh, 0), sq_at(bc, 0), 2));
  float a[9], c[6];
  TH_OK(sq_read(ctx, sq_at(ba, 0), a, sizeof a));
  TH_OK(sq_read(ctx, sq_at(bc, 0), c, sizeof c));
  const double wa[9] = {1. / 6, 2. / 6, 3. / 6, 1. / 3, 2. / 3, 0, 1. / 3, 2. / 3, 0};
  const double wc[6] = {7. / 6, 5. / 3, 1. / 3, 4. / 3, 1. / 3, 4. / 3};
  for (size_t i = 0; i < 9; i++) check_close("alpha", i, a[i], wa[i], 4 * EPS * wa[i]);
  assert_true(a[5] == 0.0f && a[8] == 0.0f); /* exactly 0 where invalid */
  for (size_t i = 0; i < 6; i++) check_close("context", i, c[i], wc[i], 8 * EPS * wc[i]);
  sq_buf *all[] = {be, bh, bl, bm, ba, bc};
  for (size_t i = 0; i < 6; i++) sq_buf_free(all[i]);
}

/* Logits far beyond +-88 stay finite, rows sum to 1, invalid entries are 0. */
static void softmax_extreme_logits(void **state) {
  seqcl_ctx *ctx = *state;
  const float x[8] = {100.0f, -100.0f, 1e30f, 3e38f, -3e38f, 89.0f, 88.5f, 5.0f};
  const int32_t lens[2] = {4, 3};
  sq_buf *bx = th_buf(ctx, 8, x), *bl = th_buf(ctx, 2, lens), *by = th_buf(ctx, 8, NULL);
  TH_OK(sq_masked_softmax(ctx, 2, 4, sq_at(bx, 0), sq_at(bl, 0), lens, sq_none(), NULL,
                          sq_at(by, 0)));
  float y[8];
  TH_OK(sq_read(ctx, sq_at(by, 0), y, sizeof y));
  for (int i = 0; i < 8; i++) assert_true(isfinite(y[i]));
  assert_true(y[3] == 1.0f && y[0] == 0.0f && y[1] == 0.0f && y[2] == 0.0f);
  assert_true(y[7] == 0.0f); /* row 1, position 3 >= len */
  double w = 1.0 / (1.0 + exp(-0.5)); /* row 1: softmax of [-3e38, 89, 88.5] */
  check_close("y", 5, y[5], w, 4 * EPS);
  check_close("y", 6, y[6], 1.0 - w, 4 * EPS);
  assert_true(y[4] == 0.0f);
  sq_buf_free(bx);
  sq_buf_free(bl);
  sq_buf_free(by);
}

/* Attention for every score kind: scores vs a double reference, then the fused
 * pass vs the double softmax + context. N = 3, S = 7, He = 10, A = 6. */
static void attention_all_kinds(void **state) {
  seqcl_ctx *ctx = *state;
  enum { N = 3, S = 7, He = 10, A = 6 };
  th_rng r = th_seed(42);
  float q[N * He], keys[N * S * He], pk[N * S * A], qa[N * A], v[A], bv[1];
  th_fill(&r, q, N * He, 1);
  th_fill(&r, keys, N * S * He, 1);
  th_fill(&r, pk, N * S * A, 1);
  th_fill(&r, qa, N * A, 1);
  th_fill(&r, v, A, 1);
  th_fill(&r, bv, 1, 1);
  const int32_t lens[N] = {7, 1, 4}, mask[N * S] = {1, 0, 1, 1, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1,
                                                     0, 0, 1, 1, 1, 1, 1};
  /* NaN in the keys past row 2's length must not reach its context. */
  for (int j = 4; j < S; j++) keys[(2 * S + j) * He] = NAN;
  sq_buf *bq = th_buf(ctx, N * He, q), *bk = th_buf(ctx, N * S * He, keys);
  sq_buf *bpk = th_buf(ctx, N * S * A, pk), *bqa = th_buf(ctx, N * A, qa);
  sq_buf *bvv = th_buf(ctx, A, v), *bbv = th_buf(ctx, 1, bv), *bl = th_buf(ctx, N, lens);
  sq_buf *bm = th_buf(ctx, N * S, mask), *bs = th_buf(ctx, N * S, NULL);
  sq_buf *bc = th_buf(ctx, N * (He + 3), NULL), *ba = th_buf(ctx, N * S, NULL);
  for (int kind = 0; kind < 4; kind++) {
    for (int masked = 0; masked < 2; masked++) {
      sq_attn_args a = {.kind = (sq_score)kind, .N = N, .S = S, .He = He, .A = A};
      a.qp = kind == SQ_SCORE_ADDITIVE ? sq_at(bqa, 0) : sq_at(bq, 0);
      a.ld_qp = kind == SQ_SCORE_ADDITIVE ? A : He;
      a.keys = sq_at(bk, 0);
      a.pkeys = sq_at(bpk, 0);
      a.v = sq_at(bvv, 0);
      a.bv = sq_at(bbv, 0);
      a.scale = kind == SQ_SCORE_SCALED_DOT ? 1.0f / sqrtf((float)He) : 1.0f;
      a.lens = sq_at(bl, 0);
      a.mask = masked ? sq_at(bm, 0) : sq_none();
      const int32_t *mh = masked ? mask : NULL;
      TH_OK(sq_attn_scores(ctx, &a, lens, mh, sq_at(bs, 0)));
      TH_OK(sq_attn_fused(ctx, &a, lens, mh, sq_at(bc, 0), He + 3, sq_at(ba, 0)));
      float sc[N * S], al[N * S], cx[N * (He + 3)];
      TH_OK(sq_read(ctx, sq_at(bs, 0), sc, sizeof sc));
      TH_OK(sq_read(ctx, sq_at(ba, 0), al, sizeof al));
      TH_OK(sq_read(ctx, sq_at(bc, 0), cx, sizeof cx));
      for (int n = 0; n < N; n++) {
        double e[S], mag[S], mx = -INFINITY, sum = 0;
        for (int j = 0; j < lens[n]; j++) {
          double acc = 0, m = 0;
          if (kind == SQ_SCORE_ADDITIVE) {
            for (int k = 0; k < A; k++) {
              double p = (double)pk[(n * S + j) * A + k] + qa[n * A + k];
              acc += v[k] * tanh(p);
              m += fabs(v[k]) * (fabs(p) + 1);
            }
            acc += bv[0];
            m += fabs(bv[0]);
          } else {
            for (int k = 0; k < He; k++) {
              acc += (double)keys[(n * S + j) * He + k] * q[n * He + k];
              m += fabs((double)keys[(n * S + j) * He + k] * q[n * He + k]);
            }
            acc *= a.scale;
            m *= a.scale;
          }
          e[j] = acc;
          mag[j] = m;
          /* dot-type: 2 K 2^-24 sum|a||b|; additive: 4 eps sum|v|(|p| + 1) */
          double tol = kind == SQ_SCORE_ADDITIVE ? 4 * EPS * m : 2.0 * He * EPS / 2 * m + 1e-30;
          check_close("scores", (size_t)(n * S + j), sc[n * S + j], e[j], tol);
          if ((!masked || mask[n * S + j]) && e[j] > mx) mx = e[j];
        }
        for (int j = 0; j < lens[n]; j++)
          if (!masked || mask[n * S + j]) sum += exp(e[j] - mx);
        double ctxv[He];
        for (int k = 0; k < He; k++) ctxv[k] = 0;
        for (int j = 0; j < S; j++) {
          int valid = j < lens[n] && (!masked || mask[n * S + j]);
          double w = valid ? exp(e[j] - mx) / sum : 0.0;
          if (!valid) {
            if (al[n * S + j] != 0.0f) fail_msg("alpha[%d,%d] = %g at an invalid position", n, j, al[n * S + j]);
            continue;
          }
          /* The float score error (<= 2 K eps-ish of its magnitude) moves alpha
           * by alpha * that; plus the softmax's own few eps. */
          check_close("alpha", (size_t)(n * S + j), al[n * S + j], w, w * (2 * mag[j] * He * EPS + 16 * EPS) + 1e-9);
          for (int k = 0; k < He; k++) ctxv[k] += w * keys[(n * S + j) * He + k];
        }
        for (int k = 0; k < He; k++) {
          if (!isfinite(cx[n * (He + 3) + k])) fail_msg("context[%d,%d] is not finite", n, k);
          check_close("context", (size_t)(n * (He + 3) + k), cx[n * (He + 3) + k], ctxv[k], 2e-6);
        }
      }
    }
  }
  sq_buf *all[] = {bq, bk, bpk, bqa, bvv, bbv, bl, bm, bs, bc, ba};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) sq_buf_free(all[i]);
}

/* The host argmax's sixteen lanes against the oracle's plain scan (the first
 * NaN, else the first index of the maximum) at widths around the lane count,
 * with and without a bias, on rows of ties across lanes, -inf, NaN, -0 and
 * +0. */
static void argmax_lanes_against_plain(void **state) {
  seqcl_ctx *ctx = *state;
  enum { ROWS = 10, VMAX = 1001 };
  const int widths[] = {1, 2, 15, 16, 17, 31, 33, 64, 257, 1000, VMAX};
  th_rng r = th_seed(29);
  float *x = malloc(sizeof(float) * ROWS * VMAX), *bias = malloc(sizeof(float) * VMAX);
  assert_non_null(x);
  assert_non_null(bias);
  for (size_t w = 0; w < sizeof widths / sizeof widths[0]; w++) {
    const int V = widths[w];
    th_fill(&r, x, (size_t)ROWS * V, 3);
    th_fill(&r, bias, V, 1);
    float *row = x;
    /* 0: a tie where the lower index sits in the later lane (15 in lane 15,
     * 16 in lane 0), or across the halves of a short row */
    if (V >= 32)
      row[15] = row[16] = 9.0f;
    else
      row[V - 1] = row[V / 2] = 9.0f;
    row = x + V;
    /* 1: all equal; 2: all -inf; 3: -inf but the last */
    for (int v = 0; v < V; v++) row[v] = 0.5f, row[V + v] = row[2 * V + v] = -INFINITY;
    row[3 * V - 1] = -1e30f;
    /* 4: NaN at 0; 5: NaN in the last place; 6: two NaN after the maximum */
    x[4 * V] = NAN;
    x[6 * V - 1] = NAN;
    x[6 * V + 0] = 50.0f;
    x[6 * V + V / 3] = x[6 * V + 2 * V / 3] = NAN;
    /* 7: -0 before +0 above negatives; 8: the maximum at 0; 9 as drawn */
    for (int v = 0; v < V; v++) x[7 * V + v] = -1.0f - th_unit(&r) * th_unit(&r);
    x[7 * V + V / 2] = -0.0f;
    x[7 * V + V - 1] = 0.0f;
    x[8 * V] = 40.0f;
    sq_buf *bx = th_buf(ctx, (size_t)ROWS * V, x), *bb = th_buf(ctx, V, bias);
    sq_buf *bi = th_buf(ctx, ROWS, NULL);
    for (int with_bias = 0; with_bias < 2; with_bias++) {
      TH_OK(sq_argmax(ctx, ROWS, V, sq_at(bx, 0), V, with_bias ? sq_at(bb, 0) : sq_none(),
                      sq_at(bi, 0)));
      int32_t ids[ROWS];
      TH_OK(sq_read(ctx, sq_at(bi, 0), ids, sizeof ids));
      double want_ids[ROWS];
      oracle_argmax(ROWS, V, x, V, with_bias ? bias : NULL, want_ids);
      for (int n = 0; n < ROWS; n++) {
        const int want = (int)want_ids[n];
        if (ids[n] != want)
          fail_msg("V %d row %d bias %d: argmax %d, want %d", V, n, with_bias, ids[n], want);
      }
    }
    sq_buf_free(bx);
    sq_buf_free(bb);
    sq_buf_free(bi);
  }
  free(x);
  free(bias);
}

static void rows_argmax_logsoftmax_ce_embedding(void **state) {
  seqcl_ctx *ctx = *state;
  enum { N = 4, V = 9, D = 5 };
  th_rng r = th_seed(7);
  float x[N * V], bias[V], table[V * D];
  th_fill(&r, x, N * V, 3);
  th_fill(&r, bias, V, 1);
  th_fill(&r, table, V * D, 1);
  /* row 3: a tie between 2 and 6 (lowest index wins) once the bias is added */
  for (int v = 0; v < V; v++) x[3 * V + v] = -5.0f;
  x[3 * V + 2] = x[3 * V + 6] = 1.0f;
  bias[2] = bias[6] = 0.25f;
  sq_buf *bx = th_buf(ctx, N * V, x), *bb = th_buf(ctx, V, bias), *bi = th_buf(ctx, N, NULL);
  TH_OK(sq_argmax(ctx, N, V, sq_at(bx, 0), V, sq_at(bb, 0), sq_at(bi, 0)));
  int32_t ids[N];
  TH_OK(sq_read(ctx, sq_at(bi, 0), ids, sizeof ids));
  for (int n = 0; n < N; n++) {
    int best = 0;
    for (int v = 1; v < V; v++)
      if (x[n * V + v] + bias[v] > x[n * V + best] + bias[best]) best = v;
    assert_int_equal(ids[n], best);
  }
  assert_int_equal(ids[3], 2);

  /* log_softmax in place; tolerance 4 eps (|x| + |lse|): one rounding of x - lse */
  sq_buf *by = th_buf(ctx, N * V, x);
  TH_OK(sq_log_softmax(ctx, N, V, sq_at(by, 0), sq_at(by, 0)));
  float y[N * V];
  TH_OK(sq_read(ctx, sq_at(by, 0), y, sizeof y));
  double lse[N];
  for (int n = 0; n < N; n++) {
    double mx = x[n * V], s = 0;
    for (int v = 1; v < V; v++) mx = fmax(mx, x[n * V + v]);
    for (int v = 0; v < V; v++) s += exp(x[n * V + v] - mx);
    lse[n] = mx + log(s);
    for (int v = 0; v < V; v++)
      check_close("log_softmax", (size_t)(n * V + v), y[n * V + v], x[n * V + v] - lse[n],
                  4 * EPS * (fabs(x[n * V + v]) + fabs(lse[n])));
  }

  /* cross-entropy: mean over labels >= 0; all ignored gives 0 */
  const int32_t labels[N] = {3, -1, 0, 8}, none[N] = {-1, -1, -1, -100};
  sq_buf *bl = th_buf(ctx, N, labels), *bn = th_buf(ctx, N, none), *bloss = th_buf(ctx, 1, NULL);
  TH_OK(sq_cross_entropy(ctx, N, V, sq_at(bx, 0), sq_at(bl, 0), labels, sq_at(bloss, 0)));
  float loss;
  TH_OK(sq_read(ctx, sq_at(bloss, 0), &loss, 4));
  double want = ((lse[0] - x[3]) + (lse[2] - x[2 * V]) + (lse[3] - x[3 * V + 8])) / 3;
  check_close("loss", 0, loss, want, 8 * EPS * (fabs(want) + 1));
  TH_OK(sq_cross_entropy(ctx, N, V, sq_at(bx, 0), sq_at(bn, 0), none, sq_at(bloss, 0)));
  TH_OK(sq_read(ctx, sq_at(bloss, 0), &loss, 4));
  assert_true(loss == 0.0f);

  /* embedding gathers rows exactly, into a strided output */
  const int32_t eids[3] = {8, 0, 8};
  sq_buf *bt = th_buf(ctx, V * D, table), *be = th_buf(ctx, 3, eids), *bo = th_buf(ctx, 3 * 7, NULL);
  TH_OK(sq_fill(ctx, sq_at(bo, 0), 21, -2.0f));
  TH_OK(sq_embedding(ctx, 3, D, V, sq_at(be, 0), eids, sq_at(bt, 0), sq_at(bo, 0), 7));
  float o[21];
  TH_OK(sq_read(ctx, sq_at(bo, 0), o, sizeof o));
  for (int n = 0; n < 3; n++) {
    for (int d = 0; d < D; d++) assert_true(o[n * 7 + d] == table[eids[n] * D + d]);
    assert_true(o[n * 7 + 5] == -2.0f && o[n * 7 + 6] == -2.0f);
  }
  sq_buf *all[] = {bx, bb, bi, by, bl, bn, bloss, bt, be, bo};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) sq_buf_free(all[i]);
}

/* Is (v, i) ranked ahead of (bv, bi) in beam_topk's order: higher first, NaN
 * below every number, lower id on ties, an empty slot (bi < 0) last. */
static int ranked_ahead(float v, int i, float bv, int bi) {
  if (bi < 0) return 1;
  if (isnan(v) != isnan(bv)) return !isnan(v);
  return (!isnan(v) && v > bv) || ((isnan(v) || v == bv) && i < bi);
}

/* beam_topk's ids against a plain insertion over every logit, on rows made to
 * stress its shortcuts: values from a handful of levels (ties at the K-th
 * place, across blocks of 16 and with the lanes' maxima), -inf runs, NaN in
 * some rows, increasing rows (each logit a new best), V around the block
 * width. Ids exact; values (rows without NaN) within the log-softmax
 * tolerance of ops_beam.c's entry, 64 eps (|x| + |lse|) here. */
static void beam_topk_against_insertion(void **state) {
  seqcl_ctx *ctx = *state;
  static const int Vs[] = {1, 5, 15, 16, 17, 33, 47, 256, 1000, 1031};
  static const int Ks[] = {1, 2, 5, 16};
  th_rng r = th_seed(29);
  for (size_t vi = 0; vi < sizeof Vs / sizeof Vs[0]; vi++)
    for (size_t ki = 0; ki < sizeof Ks / sizeof Ks[0]; ki++) {
      enum { N = 12 };
      const int V = Vs[vi], K = Ks[ki];
      float *x = malloc((size_t)N * V * sizeof *x);
      assert_non_null(x);
      for (int n = 0; n < N; n++)
        for (int v = 0; v < V; v++) {
          float *xv = &x[(size_t)n * V + v];
          const uint32_t u = th_u32(&r);
          switch (n % 6) {
          case 0: *xv = (float)(u % 4); break;                 /* ties everywhere */
          case 1: *xv = u % 3 ? -INFINITY : (float)(u % 5); break;
          case 2: *xv = (float)v * 0.5f; break;                /* increasing */
          case 3: *xv = -(float)v; break;                      /* decreasing */
          case 4: *xv = u % 97 == 0 ? NAN : 4.0f * th_unit(&r); break;
          default: *xv = 4.0f * th_unit(&r); break;
          }
        }
      sq_buf *bx = th_buf(ctx, (size_t)N * V, x), *bv = th_buf(ctx, (size_t)N * K, NULL);
      sq_buf *bi = th_buf(ctx, (size_t)N * K, NULL);
      TH_OK(sq_beam_topk(ctx, N, V, sq_at(bx, 0), V, K, sq_at(bv, 0), sq_at(bi, 0)));
      float vals[N * 16];
      int32_t ids[N * 16];
      TH_OK(sq_read(ctx, sq_at(bv, 0), vals, (size_t)N * K * sizeof(float)));
      TH_OK(sq_read(ctx, sq_at(bi, 0), ids, (size_t)N * K * sizeof(int32_t)));
      for (int n = 0; n < N; n++) {
        const float *row = x + (size_t)n * V;
        float wv[16];
        int wi[16];
        for (int k = 0; k < K; k++) wi[k] = -1, wv[k] = -INFINITY;
        for (int v = 0; v < V; v++) {
          if (!ranked_ahead(row[v], v, wv[K - 1], wi[K - 1])) continue;
          int pos = K - 1;
          for (; pos > 0 && ranked_ahead(row[v], v, wv[pos - 1], wi[pos - 1]); pos--)
            wv[pos] = wv[pos - 1], wi[pos] = wi[pos - 1];
          wv[pos] = row[v];
          wi[pos] = v;
        }
        double mx = -INFINITY, sum = 0.0;
        int has_nan = 0;
        for (int v = 0; v < V; v++) has_nan |= isnan(row[v]), mx = fmax(mx, row[v]);
        for (int v = 0; v < V; v++) sum += exp(row[v] - mx);
        const double lse = mx + log(sum);
        for (int k = 0; k < K; k++) {
          if (ids[n * K + k] != wi[k])
            fail_msg("V %d K %d row %d slot %d: id %d, want %d", V, K, n, k, ids[n * K + k],
                     wi[k]);
          if (has_nan || wi[k] < 0 || row[wi[k]] == -INFINITY) continue;
          check_close("beam_topk value", (size_t)(n * K + k), vals[n * K + k], row[wi[k]] - lse,
                      64 * EPS * (fabs(row[wi[k]]) + fabs(lse)));
        }
      }
      sq_buf_free(bx);
      sq_buf_free(bv);
      sq_buf_free(bi);
      free(x);
    }
}

/* Integer-filled GEMM (K max|a| max|b| <= 2^24) is exact, for every transpose
 * combination and with strided batches. */
static void gemm_integer_exact(void **state) {
  seqcl_ctx *ctx = *state;
  enum { M = 5, N = 7, K = 11, B = 3 };
  th_rng r = th_seed(3);
  float a[B * M * K], b[B * K * N], c[B * M * N];
  for (int i = 0; i < B * M * K; i++) a[i] = (float)((int)(th_u32(&r) % 17) - 8);
  for (int i = 0; i < B * K * N; i++) b[i] = (float)((int)(th_u32(&r) % 17) - 8);
  sq_buf *ba = th_buf(ctx, B * M * K, a), *bb = th_buf(ctx, B * K * N, b);
  sq_buf *bc = th_buf(ctx, B * M * N, NULL);
  for (int ta = 0; ta < 2; ta++)
    for (int tb = 0; tb < 2; tb++) {
      TH_OK(sq_gemm(ctx, ta, tb, M, N, K, 1.0f, sq_at(ba, 0), ta ? M : K, M * K, sq_at(bb, 0),
                    tb ? K : N, K * N, 0.0f, sq_at(bc, 0), N, M * N, B));
      TH_OK(sq_read(ctx, sq_at(bc, 0), c, sizeof c));
      for (int bi = 0; bi < B; bi++)
        for (int i = 0; i < M; i++)
          for (int j = 0; j < N; j++) {
            double s = 0;
            for (int k = 0; k < K; k++) {
              float av = ta ? a[bi * M * K + k * M + i] : a[bi * M * K + i * K + k];
              float bv = tb ? b[bi * K * N + j * K + k] : b[bi * K * N + k * N + j];
              s += (double)av * bv;
            }
            if (c[bi * M * N + i * N + j] != (float)s)
              fail_msg("gemm ta=%d tb=%d batch %d C[%d,%d] = %g, want %g", ta, tb, bi, i, j,
                       c[bi * M * N + i * N + j], s);
          }
    }
  sq_buf_free(ba);
  sq_buf_free(bb);
  sq_buf_free(bc);
}

/* The own kernel's shapes give each element the same bits whatever M: a
 * product of M rows (1 to 13: the batch-1 kernel, blocks of 4 rows and every
 * remainder) equals, row by row and bit for bit, the same rows multiplied
 * one at a time, and each element is within the K-term dot-product bound of
 * double. N odd (the batch-1 kernel's second row missing at the end, a block
 * of fewer than 4 columns), K with a tail past whole 16- and 64-wide passes;
 * beta = 1 over a C already holding values. Without AVX-512 OpenBLAS runs,
 * which promises no such thing: the test is skipped. */
static void gemm_own_rows_bitwise(void **state) {
  seqcl_ctx *ctx = *state;
  if (!sq_gemm_nt_available()) skip();
  enum { MMAX = 13, N = 37, KMAX = 200 };
  static const int Ks[] = {7, 83, KMAX};
  th_rng r = th_seed(29);
  for (size_t ki = 0; ki < sizeof Ks / sizeof Ks[0]; ki++) {
    const int K = Ks[ki];
    static float a[MMAX * KMAX], b[N * KMAX], c0[MMAX * N], c[MMAX * N], row[N];
    th_fill(&r, a, (size_t)MMAX * K, 1.0f);
    th_fill(&r, b, (size_t)N * K, 1.0f);
    th_fill(&r, c0, (size_t)MMAX * N, 1.0f);
    sq_buf *ba = th_buf(ctx, MMAX * K, a), *bb = th_buf(ctx, N * K, b);
    sq_buf *bc = th_buf(ctx, MMAX * N, NULL), *br = th_buf(ctx, N, NULL);
    for (int M = 1; M <= MMAX; M++) {
      TH_OK(sq_write(ctx, sq_at(bc, 0), c0, sizeof c0));
      TH_OK(sq_gemm(ctx, 0, 1, M, N, K, 0.75f, sq_at(ba, 0), K, 0, sq_at(bb, 0), K, 0, 1.0f,
                    sq_at(bc, 0), N, 0, 1));
      TH_OK(sq_read(ctx, sq_at(bc, 0), c, sizeof(float) * (size_t)M * N));
      for (int i = 0; i < M; i++) {
        TH_OK(sq_write(ctx, sq_at(br, 0), c0 + (size_t)i * N, sizeof row));
        TH_OK(sq_gemm(ctx, 0, 1, 1, N, K, 0.75f, sq_at(ba, (size_t)i * K), K, 0, sq_at(bb, 0), K,
                      0, 1.0f, sq_at(br, 0), N, 0, 1));
        TH_OK(sq_read(ctx, sq_at(br, 0), row, sizeof row));
        for (int j = 0; j < N; j++) {
          const float got = c[(size_t)i * N + j];
          if (memcmp(&got, &row[j], sizeof got))
            fail_msg("K %d: C[%d,%d] of %d rows = %.9g, alone %.9g", K, i, j, M, got, row[j]);
          double s = 0, sa = 0;
          for (int k = 0; k < K; k++) {
            s += (double)a[i * K + k] * b[j * K + k];
            sa += fabs((double)a[i * K + k] * b[j * K + k]);
          }
          const double want = 0.75 * s + c0[(size_t)i * N + j];
          if (fabs(got - want) > (K + 2) * 0x1p-24 * (0.75 * sa + fabs(c0[(size_t)i * N + j])))
            fail_msg("K %d: C[%d,%d] of %d rows = %.9g, double %.9g", K, i, j, M, got, want);
        }
      }
    }
    sq_buf_free(ba);
    sq_buf_free(bb);
    sq_buf_free(bc);
    sq_buf_free(br);
  }
}

/* Products over weights read B packed at every row count (host_linear.c),
 * and the panels promise more than the own kernel: each element is one
 * float sum of fused multiply-adds in k order, then alpha times it plus
 * beta C (one more fused multiply-add). Checked bit for bit against that
 * sum written out with fmaf, for M 1 to 13 (one row over four panels at a
 * time and 1-3 at the end; 8-row blocks and every remainder), N 5, 37 and
 * 75 (one, three and five panels, the last partial), K 1, 2, 7, 83 and 200,
 * B with a row stride beyond K at an offset, beta 0 (C holds NaN: not
 * read) and 1. Each row of A alone gives the same bits. */
static void gemm_packed_rows_bitwise(void **state) {
  seqcl_ctx *ctx = *state;
  if (!sq_gemm_nt_available()) skip();
  enum { MMAX = 13, NMAX = 75, KMAX = 200, OFF = 3 };
  static const int Ns[] = {5, 37, NMAX}, Ks[] = {1, 2, 7, 83, KMAX};
  th_rng r = th_seed(31);
  static float a[MMAX * KMAX], b[OFF + NMAX * (KMAX + 4)], c0[MMAX * NMAX], c[MMAX * NMAX];
  sq_ctx_set_ablated(ctx, 0);
  for (size_t ni = 0; ni < sizeof Ns / sizeof Ns[0]; ni++)
    for (size_t ki = 0; ki < sizeof Ks / sizeof Ks[0]; ki++) {
      const int N = Ns[ni], K = Ks[ki], ldb = K + (int)(ki % 2) * 4;
      th_fill(&r, a, (size_t)MMAX * K, 1.0f);
      th_fill(&r, b, OFF + (size_t)N * ldb, 1.0f);
      th_fill(&r, c0, (size_t)MMAX * N, 1.0f);
      sq_buf *ba = th_buf(ctx, MMAX * K, a), *bb = th_buf(ctx, OFF + N * ldb, b);
      sq_buf *bc = th_buf(ctx, MMAX * N, NULL);
      sq_buf_freeze(ctx, bb);
      for (int M = 1; M <= MMAX; M++)
        for (int beta = 0; beta < 2; beta++) {
          if (beta) {
            TH_OK(sq_write(ctx, sq_at(bc, 0), c0, sizeof(float) * (size_t)M * N));
          } else {
            TH_OK(sq_fill(ctx, sq_at(bc, 0), (size_t)M * N, NAN));
          }
          TH_OK(sq_gemm(ctx, 0, 1, M, N, K, -0.75f, sq_at(ba, 0), K, 0, sq_at(bb, OFF), ldb, 0,
                        (float)beta, sq_at(bc, 0), N, 0, 1));
          TH_OK(sq_read(ctx, sq_at(bc, 0), c, sizeof(float) * (size_t)M * N));
          assert_non_null(bb->packed);
          for (int i = 0; i < M; i++)
            for (int j = 0; j < N; j++) {
              float s = 0.0f;
              for (int k = 0; k < K; k++) s = fmaf(a[i * K + k], b[OFF + j * ldb + k], s);
              float want = -0.75f * s;
              if (beta) want = fmaf(1.0f, c0[i * N + j], want);
              const float got = c[i * N + j];
              if (memcmp(&got, &want, sizeof got))
                fail_msg("M %d N %d K %d beta %d: C[%d,%d] = %.9g, the k-order sum %.9g", M, N, K,
                         beta, i, j, (double)got, (double)want);
            }
        }
      sq_buf_free(ba);
      sq_buf_free(bb);
      sq_buf_free(bc);
    }
}

/* The packed copies of one buffer's matrices share chunks of memory
 * (host_packed.c): four matrices whose panels (N padded to 16) outgrow the
 * weights range take two chunks, the first holding three copies one after the
 * other. Each product, made as its copy is packed and again once all four
 * exist (so a later copy written over an earlier one would show), gives the
 * k-order fused sum bit for bit (as gemm_packed_rows_bitwise), at 3 and 9 rows. */
static void gemm_packed_copies_share_chunks(void **state) {
  seqcl_ctx *ctx = *state;
  if (!sq_gemm_nt_available()) skip();
  enum { MATS = 4, MMAX = 9, KMAX = 200, NMAX = 75 };
  static const int Ns[MATS] = {37, 75, 5, 50}, Ks[MATS] = {83, 7, 200, 64};
  size_t at[MATS + 1] = {0};
  for (int m = 0; m < MATS; m++) at[m + 1] = at[m] + (size_t)Ns[m] * Ks[m];
  static float w[37 * 83 + 75 * 7 + 5 * 200 + 50 * 64], a[MMAX * KMAX], c[MMAX * NMAX];
  th_rng r = th_seed(41);
  th_fill(&r, w, at[MATS], 1.0f);
  th_fill(&r, a, (size_t)MMAX * KMAX, 1.0f);
  sq_buf *bw = th_buf(ctx, (int)at[MATS], w), *ba = th_buf(ctx, MMAX * KMAX, a);
  sq_buf *bc = th_buf(ctx, MMAX * NMAX, NULL);
  sq_ctx_set_ablated(ctx, 0);
  sq_buf_freeze(ctx, bw);
  for (int round = 0; round < 2; round++)
    for (int m = 0; m < MATS; m++)
      for (int M = 3; M <= MMAX; M += 6) {
        const int N = Ns[m], K = Ks[m];
        TH_OK(sq_gemm(ctx, 0, 1, M, N, K, 1.0f, sq_at(ba, 0), K, 0, sq_at(bw, at[m]), K, 0, 0.0f,
                      sq_at(bc, 0), N, 0, 1));
        TH_OK(sq_read(ctx, sq_at(bc, 0), c, sizeof(float) * (size_t)M * N));
        for (int i = 0; i < M; i++)
          for (int j = 0; j < N; j++) {
            float s = 0.0f;
            for (int k = 0; k < K; k++) s = fmaf(a[i * K + k], w[at[m] + (size_t)j * K + k], s);
            if (memcmp(&c[i * N + j], &s, sizeof s))
              fail_msg("round %d matrix %d M %d: C[%d,%d] = %.9g, the k-order sum %.9g", round, m,
                       M, i, j, (double)c[i * N + j], (double)s);
          }
      }
  assert_int_equal(sq_host_packed_fresh(bw), MATS);
  assert_int_equal(sq_host_packed_chunks(bw), 2);
  sq_buf_free(bw);
  sq_buf_free(ba);
  sq_buf_free(bc);
}

/* Products over weights (a buffer's weights range: a model's, training's
 * parameters) with more rows than the own kernel takes read B packed once
 * (host_packed.c). Checked, for a whole frozen buffer and for a range: the
 * copy is made, the product agrees with double within the K-term dot-product
 * bound of the gemm check, a write beside B keeps the copy, a write over B
 * drops it, an Adam step over the range packs it again at once, and the next
 * product sees the new values, B reaching outside the range is not packed, and a failed
 * allocation is an error. Shapes: N not a multiple of the 16-column panels, M
 * not of the 8-row blocks, B with a row stride beyond K, B at an offset, alpha
 * and beta. */
static void gemm_frozen_packed(void **state) {
  seqcl_ctx *ctx = *state;
  enum { M = 67, N = 83, K = 45, LDB = 47, OFF = 5 };
  th_rng r = th_seed(11);
  static float a[M * K], b[OFF + N * LDB], c0[M * N], c[M * N], gr[N * LDB];
  th_fill(&r, a, M * K, 1.0f);
  th_fill(&r, b, OFF + N * LDB, 1.0f);
  th_fill(&r, c0, M * N, 1.0f);
  th_fill(&r, gr, N * LDB, 1.0f);
  sq_buf *ba = th_buf(ctx, M * K, a), *bb = th_buf(ctx, OFF + N * LDB, b);
  sq_buf *bc = th_buf(ctx, M * N, c0), *bg = th_buf(ctx, N * LDB, gr);
  sq_buf *bm = th_buf(ctx, 2 * N * LDB, NULL);
  TH_OK(sq_fill(ctx, sq_at(bm, 0), 2 * N * LDB, 0.0f));
  sq_ctx_set_ablated(ctx, 0);
  for (int round = 0; round < 3; round++) {
    if (round == 0) sq_buf_freeze(ctx, bb);                  /* a loaded model's weights */
    if (round == 1) sq_freeze(ctx, sq_at(bb, OFF), N * LDB); /* training's parameters */
    TH_OK(sq_write(ctx, sq_at(bc, 0), c0, sizeof c0));
    TH_OK(sq_gemm(ctx, 0, 1, M, N, K, -0.75f, sq_at(ba, 0), K, 0, sq_at(bb, OFF), LDB, 0, 0.5f,
                  sq_at(bc, 0), N, 0, 1));
    TH_OK(sq_read(ctx, sq_at(bc, 0), c, sizeof c));
    if (!bb->packed) skip(); /* no AVX-512F: OpenBLAS packs as before */
    for (int i = 0; i < M; i++)
      for (int j = 0; j < N; j++) {
        double s = 0, m = 0;
        for (int k = 0; k < K; k++) {
          s += (double)a[i * K + k] * b[OFF + j * LDB + k];
          m += fabs((double)a[i * K + k] * b[OFF + j * LDB + k]);
        }
        const double tol = 2.0 * (K + 2) * 0x1p-24 * (0.75 * m + 0.5 * fabs(c0[i * N + j]));
        if (fabs(c[i * N + j] - (-0.75 * s + 0.5 * c0[i * N + j])) > tol)
          fail_msg("round %d C[%d,%d] = %.9g, want %.9g (tolerance %.3g)", round, i, j,
                   c[i * N + j], -0.75 * s + 0.5 * c0[i * N + j], tol);
      }
    if (round == 0) {
      /* a write beside B keeps the copy; one over B drops it */
      TH_OK(sq_write(ctx, sq_at(bb, 0), b, OFF * sizeof(float)));
      assert_int_equal(sq_host_packed_fresh(bb), 1);
      for (int i = 0; i < OFF + N * LDB; i++) b[i] = -b[i] * 0.5f;
      TH_OK(sq_write(ctx, sq_at(bb, 0), b, sizeof b));
      assert_int_equal(sq_host_packed_fresh(bb), 0);
    } else if (round == 1) {
      /* an Adam step over the range changes B and drops the copy */
      TH_OK(sq_adam_update(ctx, N * LDB, sq_at(bb, OFF), sq_at(bg, 0), sq_at(bm, 0),
                           sq_at(bm, N * LDB), 0.9f, 0.999f, 1e-8f, 0.05f, 1.0f));
      assert_int_equal(sq_host_packed_fresh(bb), 1); /* packed again at once */
      TH_OK(sq_read(ctx, sq_at(bb, 0), b, sizeof b));
    }
  }
  /* B reaching outside the weights range is read as any other matrix */
  sq_freeze(ctx, sq_at(bb, OFF + 1), N * LDB - 1);
  assert_null(bb->packed);
  TH_OK(sq_gemm(ctx, 0, 1, M, N, K, 1.0f, sq_at(ba, 0), K, 0, sq_at(bb, OFF), LDB, 0, 0.0f,
                sq_at(bc, 0), N, 0, 1));
  assert_null(bb->packed);
  sq_buf_freeze(ctx, bb);
#ifdef SEQCL_FAULT_INJECTION
  /* a packed copy that cannot be allocated fails the product, naming it */
  sq_fault_arm(SQ_FAULT_ALLOC, 1);
  TH_EXPECT_ERR(sq_gemm(ctx, 0, 1, M, N, K, 1.0f, sq_at(ba, 0), K, 0, sq_at(bb, OFF), LDB, 0, 0.0f,
                        sq_at(bc, 0), N, 0, 1),
                SEQCL_ERR_OUT_OF_MEMORY, "packed copy of a 83 x 45 weight");
  sq_fault_arm(SQ_FAULT_ALLOC, 0);
#endif
  sq_buf_free(ba);
  sq_buf_free(bb);
  sq_buf_free(bc);
  sq_buf_free(bg);
  sq_buf_free(bm);
}

/* C = A B with B [K, N] a weight (training's dX = dY W): read through
 * panels of W's columns (sq_gemm_pack_kn) with the same bits as the direct
 * product over the same values in a buffer that is not frozen (both sum each
 * element's fused products in k order), within the dot-product bound of
 * double; an Adam step packs the copies again at once and the next
 * products read the new values. N is not a multiple of the panels (the
 * column split across two threads starts inside B), B has a row stride
 * beyond N and an offset. */
static void gemm_frozen_packed_kn(void **state) {
  seqcl_ctx *ctx = *state;
  enum { M = 61, N = 83, K = 1000, LDB = 90, OFF = 3 }; /* K: the refresh splits */
  th_rng r = th_seed(12);
  static float a[M * K], b[OFF + K * LDB], direct[M * N], c[M * N], gr[K * LDB];
  th_fill(&r, a, M * K, 1.0f);
  th_fill(&r, b, OFF + K * LDB, 1.0f);
  th_fill(&r, gr, K * LDB, 1.0f);
  sq_buf *ba = th_buf(ctx, M * K, a), *bb = th_buf(ctx, OFF + K * LDB, b);
  sq_buf *bplain = th_buf(ctx, OFF + K * LDB, b); /* never frozen: read in place */
  sq_buf *bc = th_buf(ctx, M * N, NULL), *bg = th_buf(ctx, K * LDB, gr);
  sq_buf *bm = th_buf(ctx, 2 * K * LDB, NULL);
  TH_OK(sq_fill(ctx, sq_at(bm, 0), 2 * K * LDB, 0.0f));
  sq_ctx_set_ablated(ctx, 0);
  sq_freeze(ctx, sq_at(bb, OFF), K * LDB);
  /* three copies of column ranges of B (3 + 2 + 6 panels, listed newest
   * first): the refresh after Adam packs their 11 panels across the pool in
   * one job, which with two threads splits inside the last copy (K makes the
   * work large enough to split) */
  static const int col0[3] = {0, 17, 40}, cols[3] = {N, 20, 33};
  for (int round = 0; round < 2; round++) {
    for (int v = 0; v < 3; v++) {
      const int n = cols[v], off = OFF + col0[v];
      TH_OK(sq_gemm(ctx, 0, 0, M, n, K, 1.0f, sq_at(ba, 0), K, 0, sq_at(bplain, off), LDB, 0,
                    0.0f, sq_at(bc, 0), n, 0, 1));
      TH_OK(sq_read(ctx, sq_at(bc, 0), direct, sizeof(float) * M * n));
      assert_null(bplain->packed);
      TH_OK(sq_gemm(ctx, 0, 0, M, n, K, 1.0f, sq_at(ba, 0), K, 0, sq_at(bb, off), LDB, 0, 0.0f,
                    sq_at(bc, 0), n, 0, 1));
      TH_OK(sq_read(ctx, sq_at(bc, 0), c, sizeof(float) * M * n));
      if (!bb->packed) skip(); /* no AVX-512F */
      for (int i = 0; i < M; i++)
        for (int j = 0; j < n; j++) {
          double s = 0, m = 0;
          for (int k = 0; k < K; k++) {
            s += (double)a[i * K + k] * b[off + k * LDB + j];
            m += fabs((double)a[i * K + k] * b[off + k * LDB + j]);
          }
          if (fabs(c[i * n + j] - s) > 2.0 * (K + 2) * 0x1p-24 * m)
            fail_msg("round %d copy %d C[%d,%d] = %.9g, want %.9g", round, v, i, j, c[i * n + j],
                     s);
          if (memcmp(&c[i * n + j], &direct[i * n + j], sizeof(float)))
            fail_msg("round %d copy %d C[%d,%d]: packed %.9g, direct %.9g", round, v, i, j,
                     c[i * n + j], direct[i * n + j]);
        }
    }
    if (round == 0) { /* an Adam step over B */
      TH_OK(sq_adam_update(ctx, K * LDB, sq_at(bb, OFF), sq_at(bg, 0), sq_at(bm, 0),
                           sq_at(bm, K * LDB), 0.9f, 0.999f, 1e-8f, 0.05f, 1.0f));
      assert_int_equal(sq_host_packed_fresh(bb), 3);
      TH_OK(sq_read(ctx, sq_at(bb, 0), b, sizeof b));
      TH_OK(sq_write(ctx, sq_at(bplain, 0), b, sizeof b));
    }
  }
  sq_buf_free(ba);
  sq_buf_free(bb);
  sq_buf_free(bplain);
  sq_buf_free(bc);
  sq_buf_free(bg);
  sq_buf_free(bm);
}

/* The vector exp / tanh / sigmoid of the host backend against double over
 * [-20, 20]: within 2, 3 and 4 ulp of the correctly rounded value (measured
 * on this grid: exp 0.92 with two roundings per multiply-add, 1.00 fused, and
 * 1.02 at worst over every float; tanh 1.3 and sigmoid 2.0 either way); far outside, tanh is exactly +-1 and sigmoid stays
 * finite; NaN goes through (so the non-finite checks downstream see it).
 * Both builds are measured: the 4-lane baseline compiled here, and the
 * clone this CPU runs in the hot loops (sq_host_vmath16). */
static double ulps(float got, double want) {
  float w = (float)want;
  double spacing = (double)nextafterf(fabsf(w), INFINITY) - fabsf(w);
  return fabs((double)got - want) / spacing;
}

enum { MATH_N = 40000, MATH_EDGE = 8 };

static void baseline_math(sq_vmath_fn fn, int n, const float *x, float *y) {
  for (int i = 0; i < n; i += SQ_VW) {
    const int w = n - i < SQ_VW ? n - i : SQ_VW;
    const sq_vf v = sq_v_load(x + i, w);
    sq_v_store(y + i, fn == SQ_VMATH_EXP ? sq_v_exp(v) : fn == SQ_VMATH_TANH ? sq_v_tanh(v)
                                                                                : sq_v_sigmoid(v),
               w);
  }
}

static void check_math(const char *name, void (*eval)(sq_vmath_fn, int, const float *, float *)) {
  static float x[MATH_N], y[3][MATH_N];
  for (int i = 0; i < MATH_N; i++) x[i] = (float)(i - MATH_N / 2) * 1e-3f + 1.7e-4f;
  for (int f = 0; f < 3; f++) eval((sq_vmath_fn)f, MATH_N, x, y[f]);
  double worst[3] = {0, 0, 0};
  for (int i = 0; i < MATH_N; i++) {
    const double xd = x[i], u[3] = {ulps(y[0][i], exp(xd)), ulps(y[1][i], tanh(xd)),
                                    ulps(y[2][i], 1.0 / (1.0 + exp(-xd)))};
    for (int f = 0; f < 3; f++) worst[f] = u[f] > worst[f] ? u[f] : worst[f];
  }
  print_message("%s vector math worst ulp over [-20, 20]: exp %.2f, tanh %.2f, sigmoid %.2f\n",
                name, worst[0], worst[1], worst[2]);
  assert_true(worst[0] <= 2.0);
  assert_true(worst[1] <= 3.0);
  assert_true(worst[2] <= 4.0);
  /* far outside the range, and NaN; an odd count leaves a short last vector */
  const float edge[MATH_EDGE] = {1e30f, -1e30f, 95.0f, -95.0f, NAN, 0.5f, -NAN, 2.0f};
  float e[MATH_EDGE], t[MATH_EDGE], sg[MATH_EDGE];
  eval(SQ_VMATH_EXP, MATH_EDGE - 1, edge, e);
  eval(SQ_VMATH_TANH, MATH_EDGE - 1, edge, t);
  eval(SQ_VMATH_SIGMOID, MATH_EDGE - 1, edge, sg);
  assert_true(t[0] == 1.0f && t[1] == -1.0f && t[2] == 1.0f && t[3] == -1.0f);
  assert_true(sg[0] == 1.0f && sg[2] == 1.0f && sg[1] >= 0.0f && sg[1] < 1e-37f && sg[3] < 1e-37f);
  assert_true(isnan(e[4]) && isnan(e[6]) && isnan(t[4]) && isnan(t[6]) && isnan(sg[4]));
  assert_true(isfinite(e[5]) && isfinite(t[5]) && isfinite(sg[5]));
}

static void vector_math_accuracy(void **state) {
  (void)state;
  check_math("baseline", baseline_math);
  check_math("hot-loop clone", sq_host_vmath16);
}

/* The squared norm over small integers is exact in double and in the float
 * result (sums below 2^24): a chunk of the split summed twice or left out shows
 * (the op list's any-order bound is 12% of the sum at a million terms). Sizes
 * around one chunk, one short of a full one, and a count whose chunks are
 * larger than the smallest. */
static void sum_squares_exact(void **state) {
  seqcl_ctx *ctx = *state;
  const size_t sizes[] = {1, 9, 4095, 4096, 4097, 300007, 1048583};
  for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
    const size_t n = sizes[k];
    float *x = malloc(n * sizeof *x);
    assert_non_null(x);
    double want = 0.0;
    for (size_t i = 0; i < n; i++) {
      x[i] = (float)((int)(i % 7) - 3); /* squares 9, 4, 1, 0, 1, 4, 9 */
      want += (double)x[i] * x[i];
    }
    sq_buf *bx = th_buf(ctx, n, x), *bo = th_buf(ctx, 1, NULL);
    TH_OK(sq_sum_squares(ctx, n, sq_at(bx, 0), sq_at(bo, 0)));
    float got;
    TH_OK(sq_read(ctx, sq_at(bo, 0), &got, sizeof got));
    if ((double)got != want) fail_msg("sum_squares(n = %zu) = %.9g, want %.9g", n, got, want);
    sq_buf_free(bx);
    sq_buf_free(bo);
    free(x);
  }
}

SQ_TEST_MAIN(th_setup_ctx, th_teardown_ctx,
      cmocka_unit_test(hand_case_seed_000),
      cmocka_unit_test(softmax_extreme_logits),
      cmocka_unit_test(attention_all_kinds),
      cmocka_unit_test(rows_argmax_logsoftmax_ce_embedding),
      cmocka_unit_test(argmax_lanes_against_plain),
      cmocka_unit_test(beam_topk_against_insertion),
      cmocka_unit_test(gemm_integer_exact),
      cmocka_unit_test(gemm_own_rows_bitwise),
      cmocka_unit_test(gemm_packed_rows_bitwise),
      cmocka_unit_test(gemm_packed_copies_share_chunks),
      cmocka_unit_test(gemm_frozen_packed),
      cmocka_unit_test(gemm_frozen_packed_kn),
      cmocka_unit_test(vector_math_accuracy),
      cmocka_unit_test(sum_squares_exact))
