/* Op list entry: beam_topk, each row's K best tokens and their log-softmax
 * values (the first launch of a device beam-search step, after the decoder). */
#include <math.h>
#include <stdlib.h>

#include "check/opdefs.h"
#include "check/ops_all.h"
#include "ops/ops.h"

/* Shape keys: N V K, pad (extra row stride). Inputs in [-4, 4]; in every row
 * positions 0 and V - 1 share the value 6 (the two best, a tie the lower id
 * must win), and in odd rows position V / 2 repeats position 1 (a tie further
 * down). K > V leaves entries with id -1 and value -inf. */
static seqcl_status topk_gen(sq_case *c, sq_rng *r) {
  SQ_DIM(c, N, "N", 1, 1, SQ_MAXDIM);
  SQ_DIM(c, V, "V", 1, 1, SQ_MAXDIM);
  SQ_DIM(c, K, "K", 1, 1, SQ_BEAM_MAX_K);
  SQ_DIM(c, pad, "pad", 0, 0, 4096);
  const int ld = V + pad;
  float *x = sq_gen_f(c, r, "x", (size_t)N * ld, 4.0f);
  SQ_NEED(x);
  for (int n = 0; n < N; n++) {
    float *row = x + (size_t)n * ld;
    row[0] = row[V - 1] = 6.0f;
    if (n % 2 && V > 2) row[V / 2] = row[1];
  }
  SQ_NEED(sq_case_out(c, "vals", (size_t)N * K, 0) >= 0);
  SQ_NEED(sq_case_out(c, "ids", (size_t)N * K, 1) >= 0);
  return SEQCL_OK;
}

static seqcl_status topk_run(sq_arena *a, const sq_case *c) {
  int N = SH("N", 1), V = SH("V", 1), K = SH("K", 1), pad = SH("pad", 0);
  sq_ref x = sq_arena_in_named(a, c, "x");
  sq_ref vals = sq_arena_out(a, "vals", (size_t)N * K, NULL);
  sq_ref ids = sq_arena_out(a, "ids", (size_t)N * K, NULL);
  SQ_TRY(a->st);
  SQ_TRY(sq_beam_topk(a->ctx, N, V, x, V + pad, K, vals, ids));
  return sq_finish_fetch(a, c, (sq_ref[]){vals, ids});
}

/* vals: log_softmax's bound (ops_loss.c): the rounding of x - max, the relative
 * error of the sum of exponentials (a tree sum) as an absolute error of log Z,
 * and the final subtraction. ids: exact. */
static void topk_tol(const sq_case *c, int k, double *const *ref, double *tol) {
  const int N = SH("N", 1), V = SH("V", 1), K = SH("K", 1), ld = V + SH("pad", 0);
  const float *x = sq_case_inf(c, "x");
  for (int n = 0; n < N; n++) {
    double mx, dmax;
    sq_row_spread(x + (size_t)n * ld, V, &mx, &dmax);
    for (int i = 0; i < K; i++) {
      const size_t e = (size_t)n * K + i;
      if (k == 1 || !isfinite(ref[k][e])) {
        tol[e] = 0.0;
        continue;
      }
      /* y_j <= x_j - max <= 0, so |x_j - max| <= |y_j| */
      tol[e] = sq_log_sum_abs(V) + SQ_U * (2 * fabs(ref[k][e]) + dmax) +
               2 * SQ_EPS * fabs(ref[k][e]);
    }
  }
}

static const char *const topk_shapes[] = {"N=1,V=1,K=1",  "N=3,V=7,K=3",        "N=4,V=2,K=4",
                                          "N=8,V=61,K=16", "N=5,V=1000,K=5,pad=3", "N=3,V=4099,K=8",
                                          /* the GPU form's tree of 64 lists: most lists
                                           * empty, one list longer than the rest, K = 1 */
                                          "N=2,V=3,K=16", "N=3,V=65,K=16", "N=2,V=1031,K=1",
                                          NULL};
static const char *const topk_quick[] = {"N=4,V=37,K=4,pad=1", NULL};

const sq_op sq_op_beam_topk = {
    "beam_topk",
    "ids exact (ranked by the logits, lower id on ties, -1 past V); values as log_softmax: "
    "absolute (10 + 2 ceil(log2 V)) eps + u (2 |y| + max_k |x_k - max|) + 2 eps |y|",
    topk_shapes, topk_quick, 0, topk_gen, topk_run, topk_tol, NULL};
