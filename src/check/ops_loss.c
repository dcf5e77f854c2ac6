/* Op list entries of the loss family: log_softmax, cross_entropy and the
 * loss's backward (grad.cross_entropy).
 *
 * Every output that a training slot accumulates into (+=) or updates in
 * place starts from random values (inputs named *0), so a kernel that
 * overwrites instead of accumulating fails. */
#include <stdlib.h>
#include <string.h>

#include "check/opdefs.h"
#include "check/ops_all.h"

/* ------------------------------------------------ log_softmax, cross_entropy ---- */
/* Shape keys: N V, scale (input range, default 4), big (row 0 near +1e4, row 1
 * a mix of +-1e4: sq_gen_logits). Checks N and V and draws the logits x. */
static seqcl_status logits_gen(sq_case *c, sq_rng *r, float scale) {
  SQ_DIM(c, N, "N", 1, 1, SQ_MAXDIM);
  SQ_DIM(c, V, "V", 1, 1, SQ_MAXDIM);
  SQ_NEED(sq_gen_logits(c, r, "x", N, V, scale));
  return SEQCL_OK;
}

static float logits_scale(const sq_case *c) {
  return (float)sq_shape_get(&c->shape, "scale", 4.0);
}

/* Labels [N] in [0, V): about a third of the rows ignored, with PyTorch's
 * -100 and with -1, and every row with noval=1; else row 0 the last class. */
static int32_t *labels_gen(sq_case *c, sq_rng *r, int N, int V) {
  int32_t *labels = sq_case_i(c, "labels", (size_t)N);
  if (!labels) return NULL;
  int none = SH("noval", 0);
  for (int n = 0; n < N; n++) {
    labels[n] = sq_rng_int(r, 0, V - 1);
    if (none || n % 3 == 1) labels[n] = n % 2 ? -100 : -1;
  }
  if (!none) labels[0] = V - 1;
  return labels;
}

/* The inputs of the loss and of its backward: the logits and the labels. */
static seqcl_status loss_inputs_gen(sq_case *c, sq_rng *r, float scale) {
  SQ_TRY(logits_gen(c, r, scale));
  SQ_NEED(labels_gen(c, r, SH("N", 1), SH("V", 1)));
  return SEQCL_OK;
}

/* The bound of y_j = (x_j - max) - log Z: the rounding of x_j - max, Z's relative
 * error (exp and a tree sum, as for softmax) which becomes an absolute error of
 * log Z, and the final subtraction. */
static double log_softmax_tol1(const float *x, int V, int j, double ref) {
  double mx, dmax;
  sq_row_spread(x, V, &mx, &dmax);
  return sq_log_sum_abs(V) + SQ_U * (2 * (mx - x[j]) + dmax) +
         2 * SQ_EPS * fabs(ref);
}

static seqcl_status lsm_gen(sq_case *c, sq_rng *r) {
  SQ_TRY(logits_gen(c, r, logits_scale(c)));
  SQ_NEED(sq_case_out(c, "y", (size_t)SH("N", 1) * SH("V", 1), 0) >= 0);
  return SEQCL_OK;
}

static seqcl_status lsm_run(sq_arena *a, const sq_case *c) {
  int N = SH("N", 1), V = SH("V", 1);
  sq_ref x = sq_arena_in_named(a, c, "x"), y = sq_arena_out(a, "y", (size_t)N * V, NULL);
  SQ_TRY(a->st);
  SQ_TRY(sq_log_softmax(a->ctx, N, V, x, y));
  return sq_finish_fetch(a, c, &y);
}

static void lsm_tol(const sq_case *c, int k, double *const *ref, double *tol) {
  int N = SH("N", 1), V = SH("V", 1);
  const float *x = sq_case_inf(c, "x");
  for (int n = 0; n < N; n++)
    for (int j = 0; j < V; j++) {
      size_t e = (size_t)n * V + j;
      tol[e] = log_softmax_tol1(x + (size_t)n * V, V, j, ref[k][e]);
    }
}

static const char *const lsm_shapes[] = {"N=1,V=1", "N=3,V=7", "N=5,V=37,scale=20",
                                         "N=4,V=61,big=1", "N=2,V=1000", "N=3,V=4099", NULL};
static const char *const lsm_quick[] = {"N=4,V=61,big=1", NULL};

#define LSM_TOL                                                                               \
  "absolute (10 + 2 ceil(log2 V)) eps + u (2 |x_j - max| + max_k |x_k - max|) + 2 eps |y_j|: "  \
  "the rounding of x - max, the relative error of the sum of exponentials (a tree sum's "     \
  "bound) as an absolute error of log Z, and the final subtraction"

const sq_op sq_op_log_softmax = {"log_softmax", LSM_TOL, lsm_shapes, lsm_quick, 0, lsm_gen,
                                 lsm_run, lsm_tol, NULL};

/* Shape keys as log_softmax, plus noval=1 (every row ignored: the loss is 0). */
static seqcl_status ce_gen(sq_case *c, sq_rng *r) {
  SQ_TRY(loss_inputs_gen(c, r, logits_scale(c)));
  SQ_NEED(sq_case_out(c, "loss", 1, 0) >= 0);
  return SEQCL_OK;
}

static seqcl_status ce_run(sq_arena *a, const sq_case *c) {
  int N = SH("N", 1), V = SH("V", 1);
  sq_ref x = sq_arena_in_named(a, c, "x"), labels = sq_arena_in_named(a, c, "labels");
  sq_ref loss = sq_arena_out(a, "loss", 1, NULL);
  SQ_TRY(a->st);
  SQ_TRY(sq_cross_entropy(a->ctx, N, V, x, labels, sq_case_ini(c, "labels"), loss));
  return sq_finish_fetch(a, c, &loss);
}

static void ce_tol(const sq_case *c, int k, double *const *ref, double *tol) {
  int N = SH("N", 1), V = SH("V", 1);
  const float *x = sq_case_inf(c, "x");
  const int32_t *labels = sq_case_ini(c, "labels");
  double sum = 0;
  int valid = 0;
  for (int n = 0; n < N; n++)
    if (labels[n] >= 0) {
      const float *row = x + (size_t)n * V;
      double mx = -INFINITY, z = 0;
      for (int v = 0; v < V; v++) mx = row[v] > mx ? row[v] : mx;
      for (int v = 0; v < V; v++) z += exp(row[v] - mx);
      double y = row[labels[n]] - mx - log(z);
      sum += log_softmax_tol1(row, V, labels[n], y);
      valid++;
    }
  /* the mean of the rows' bounds, plus the mean's own sum and division */
  tol[0] = valid ? sum / valid + sq_dot_factor(valid) * fabs(ref[k][0]) : 0;
}

static const char *const ce_shapes[] = {"N=1,V=1",        "N=1,V=7",    "N=7,V=13",
                                        "N=37,V=61,big=1", "N=5,V=1000", "N=64,V=33,noval=1",
                                        "N=200,V=512",
                                        /* the GPU form's mean: more rows than its 256
                                         * work-items; then all of them ignored */
                                        "N=1031,V=9", "N=600,V=5,noval=1", NULL};
static const char *const ce_quick[] = {"N=7,V=13", NULL};

const sq_op sq_op_cross_entropy = {
    "cross_entropy",
    "the mean of the rows' log_softmax bounds + 2(n+2)u |loss| for the mean over n valid rows; "
    "rows labelled -1 or -100 ignored; no valid row gives exactly 0",
    ce_shapes, ce_quick, 0, ce_gen, ce_run, ce_tol, NULL};

/* ------------------------------------------------- grad.cross_entropy ---- */
/* Shape keys: N V, big (row 0 near +1e4, row 1 a mix of +-1e4), noval (every
 * row ignored). The scale is 1 / (number of valid rows), as training passes it. */
float sq_grad_ce_scale(const sq_case *c);
float sq_grad_ce_scale(const sq_case *c) {
  const int32_t *labels = sq_case_ini(c, "labels");
  int valid = 0;
  for (int n = 0; n < SH("N", 1); n++) valid += labels[n] >= 0;
  return valid ? 1.0f / (float)valid : 1.0f;
}

static seqcl_status gce_gen(sq_case *c, sq_rng *r) {
  SQ_TRY(loss_inputs_gen(c, r, 4.0f)); /* no scale key: the range is fixed */
  SQ_NEED(sq_case_out(c, "dx", (size_t)SH("N", 1) * SH("V", 1), 0) >= 0);
  return SEQCL_OK;
}

static seqcl_status gce_run(sq_arena *a, const sq_case *c) {
  int N = SH("N", 1), V = SH("V", 1);
  sq_ref x = sq_arena_in_named(a, c, "x"), labels = sq_arena_in_named(a, c, "labels");
  sq_ref dx = sq_arena_out(a, "dx", (size_t)N * V, NULL);
  SQ_TRY(a->st);
  SQ_TRY(sq_cross_entropy_bwd(a->ctx, N, V, x, labels, sq_grad_ce_scale(c), dx));
  return sq_finish_fetch(a, c, &dx);
}

/* softmax_j's relative error: the rounding of x_j - max carried through exp
 * (u |x_j - max|), the sum's terms likewise (u max|x_k - max|), exp's 3 ulp, a
 * tree sum and the scaling; ignored rows must be exactly 0. */
static void gce_tol(const sq_case *c, int k, double *const *ref, double *tol) {
  int N = SH("N", 1), V = SH("V", 1);
  const float *x = sq_case_inf(c, "x");
  const int32_t *labels = sq_case_ini(c, "labels");
  double scale = sq_grad_ce_scale(c);
  for (int n = 0; n < N; n++) {
    const float *row = x + (size_t)n * V;
    double mx, dmax;
    sq_row_spread(row, V, &mx, &dmax);
    for (int v = 0; v < V; v++) {
      size_t e = (size_t)n * V + v;
      if (labels[n] < 0) {
        tol[e] = 0;
        continue;
      }
      double p = fabs(ref[k][e] / scale + (v == labels[n]));
      tol[e] = scale * p * (sq_log_sum_abs(V) + SQ_U * (mx - row[v] + dmax)) +
               2 * SQ_EPS * fabs(ref[k][e]);
    }
  }
}

static const char *const gce_shapes[] = {"N=1,V=1",         "N=1,V=7",    "N=7,V=13",
                                        "N=37,V=61,big=1", "N=5,V=1000", "N=13,V=33,noval=1",
                                        "N=200,V=517",     NULL};
static const char *const gce_quick[] = {"N=7,V=13", NULL};

const sq_op sq_op_grad_cross_entropy = {
    "grad.cross_entropy",
    "scale p_j ((10 + 2 ceil(log2 V)) eps + u (|x_j - max| + max_k |x_k - max|)) + 2 eps |dx_j|: "
    "the softmax's relative error (rounded differences through exp, a tree sum, the scaling) "
    "and the one-hot subtraction; ignored rows (-1, -100) exactly 0",
    gce_shapes, gce_quick, 0, gce_gen, gce_run, gce_tol, NULL};
