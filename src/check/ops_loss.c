/* Op list entries: embedding, argmax, log_softmax, cross_entropy. */
#include <stdlib.h>
#include <string.h>

#include "check/opdefs.h"
#include "check/ops_all.h"

/* ---------------------------------------------------------- embedding ---- */
/* Shape keys: N D V, pad (extra row stride of the output). A copy: exact. */
static seqcl_status embed_gen(sq_case *c, sq_rng *r) {
  SQ_DIM(c, N, "N", 1, 1, SQ_MAXDIM);
  SQ_DIM(c, D, "D", 1, 1, SQ_MAXDIM);
  SQ_DIM(c, V, "V", 1, 1, SQ_MAXDIM);
  SQ_DIM(c, pad, "pad", 0, 0, 4096);
  (void)pad;
  SQ_NEED(sq_gen_f(c, r, "table", (size_t)V * D, 1.0f));
  int32_t *ids = sq_case_i(c, "ids", (size_t)N);
  SQ_NEED(ids);
  for (int n = 0; n < N; n++) ids[n] = sq_rng_int(r, 0, V - 1);
  ids[0] = V - 1; /* the last row of the table */
  if (N > 1) ids[N - 1] = 0;
  SQ_NEED(sq_case_out(c, "out", (size_t)N * D, 0) >= 0);
  return SEQCL_OK;
}

static seqcl_status embed_run_in(sq_arena *a, const sq_case *c, double *const *got, char *fault,
                                 size_t cap) {
  int N = sq_shape_int(&c->shape, "N", 1), D = sq_shape_int(&c->shape, "D", 1);
  int V = sq_shape_int(&c->shape, "V", 1), pad = sq_shape_int(&c->shape, "pad", 0);
  sq_ref ids = sq_arena_in_named(a, c, "ids"), table = sq_arena_in_named(a, c, "table");
  sq_ref out = sq_arena_out2d(a, "out", (size_t)N, (size_t)D, (size_t)D + pad, NULL);
  SQ_TRY(a->st);
  SQ_TRY(sq_embedding(a->ctx, N, D, V, ids, sq_case_ini(c, "ids"), table, out, D + pad));
  SQ_TRY(sq_finish_run(a, fault, cap));
  return sq_arena_fetch(a, out, c->out[0].n, 0, got[0]);
}

static seqcl_status embed_run(seqcl_ctx *ctx, const sq_case *c, double *const *got, char *fault,
                              size_t cap) {
  sq_arena a;
  sq_arena_init(&a, ctx);
  seqcl_status st = embed_run_in(&a, c, got, fault, cap);
  sq_arena_release(&a);
  return st;
}

static void exact_tol(const sq_case *c, int k, double *const *ref, double *tol) {
  (void)ref;
  memset(tol, 0, c->out[k].n * sizeof *tol);
}

static const char *const embed_shapes[] = {"N=1,D=1,V=1", "N=7,D=13,V=37", "N=61,D=32,V=5,pad=3",
                                           "N=256,D=512,V=1000", NULL};
static const char *const embed_quick[] = {"N=7,D=13,V=37", NULL};

const sq_op sq_op_embedding = {"embedding", "exact: a copy of table rows", embed_shapes,
                               embed_quick, 0, embed_gen, embed_run, exact_tol, NULL};

/* ------------------------------------------------------------- argmax ---- */
/* Shape keys: N V, pad (extra row stride), bias (default 0), ties (1: force
 * ties of the row maximum, which must resolve to the lowest index). */
static seqcl_status argmax_gen(sq_case *c, sq_rng *r) {
  SQ_DIM(c, N, "N", 1, 1, SQ_MAXDIM);
  SQ_DIM(c, V, "V", 1, 1, SQ_MAXDIM);
  SQ_DIM(c, pad, "pad", 0, 0, 4096);
  int ld = V + pad, ties = sq_shape_int(&c->shape, "ties", 0) && V > 1;
  float *x = sq_gen_f(c, r, "x", (size_t)N * ld, 1.0f);
  float *b = sq_shape_int(&c->shape, "bias", 0) ? sq_gen_f(c, r, "bias", (size_t)V, 1.0f) : NULL;
  SQ_NEED(x && (b || !sq_shape_int(&c->shape, "bias", 0)));
  /* Tie columns: with a bias they are shared by every row and get equal bias
   * values, so that x + bias ties exactly in float32. */
  int tie[3] = {0, 0, 0};
  for (int k = 0; k < 3; k++) tie[k] = sq_rng_int(r, 0, V - 1);
  if (b && ties)
    for (int k = 1; k < 3; k++) b[tie[k]] = b[tie[0]];
  for (int n = 0; n < N; n++) {
    float *row = x + (size_t)n * ld;
    if (ties && n % 3 != 2) {
      if (!b)
        for (int k = 0; k < 3; k++) tie[k] = sq_rng_int(r, 0, V - 1);
      for (int k = 0; k < 3; k++) row[tie[k]] = 4.0f; /* above every other x + bias */
    } else if (n % 3 == 2) {
      row[V - 1] = 4.0f; /* the maximum in the last column */
    }
    if (ties && !b && n == 0)
      for (int v = 0; v < V; v++) row[v] = 0.5f; /* a constant row: index 0 */
  }
  SQ_NEED(sq_case_out(c, "ids", (size_t)N, 1) >= 0);
  return SEQCL_OK;
}

static seqcl_status argmax_run_in(sq_arena *a, const sq_case *c, double *const *got, char *fault,
                                  size_t cap) {
  int N = sq_shape_int(&c->shape, "N", 1), V = sq_shape_int(&c->shape, "V", 1);
  int pad = sq_shape_int(&c->shape, "pad", 0);
  sq_ref x = sq_arena_in_named(a, c, "x"), b = sq_arena_in_named(a, c, "bias");
  sq_ref ids = sq_arena_out(a, "ids", (size_t)N, NULL);
  SQ_TRY(a->st);
  SQ_TRY(sq_argmax(a->ctx, N, V, x, V + pad, b, ids));
  SQ_TRY(sq_finish_run(a, fault, cap));
  return sq_arena_fetch(a, ids, c->out[0].n, 1, got[0]);
}

static seqcl_status argmax_run(seqcl_ctx *ctx, const sq_case *c, double *const *got, char *fault,
                               size_t cap) {
  sq_arena a;
  sq_arena_init(&a, ctx);
  seqcl_status st = argmax_run_in(&a, c, got, fault, cap);
  sq_arena_release(&a);
  return st;
}

static const char *const argmax_shapes[] = {"N=1,V=1",          "N=3,V=7,ties=1",
                                            "N=5,V=37,bias=1,ties=1", "N=4,V=61,pad=3",
                                            "N=7,V=1000,ties=1", "N=2,V=4099,bias=1",
                                            "N=64,V=33,ties=1,bias=1", NULL};
static const char *const argmax_quick[] = {"N=5,V=37,bias=1,ties=1", NULL};

const sq_op sq_op_argmax = {
    "argmax",
    "exact: the index of the largest float32 x + bias, the lowest one on a tie (SPEC §1)",
    argmax_shapes, argmax_quick, 0, argmax_gen, argmax_run, exact_tol, NULL};

/* ------------------------------------------------ log_softmax, cross_entropy ---- */
/* Shape keys: N V, scale (input range, default 4), big (row 0 near +1e4, row 1
 * a mix of +-1e4). */
static seqcl_status logits_gen(sq_case *c, sq_rng *r, int N, int V) {
  float *x = sq_gen_f(c, r, "x", (size_t)N * V, (float)sq_shape_get(&c->shape, "scale", 4.0));
  SQ_NEED(x);
  if (sq_shape_int(&c->shape, "big", 0)) {
    for (int v = 0; v < V; v++) x[v] += 1e4f;
    if (N > 1)
      for (int v = 0; v < V; v++) x[V + v] += sq_rng_int(r, 0, 1) ? 1e4f : -1e4f;
  }
  return SEQCL_OK;
}

/* The bound of y_j = (x_j - max) - log Z: the rounding of x_j - max, Z's relative
 * error (exp and a tree sum, as for softmax) which becomes an absolute error of
 * log Z, and the final subtraction. */
static double log_softmax_tol1(const float *x, int V, int j, double ref) {
  double mx = -INFINITY, dmax = 0;
  for (int v = 0; v < V; v++)
    if (x[v] > mx) mx = x[v];
  for (int v = 0; v < V; v++)
    if (mx - x[v] < 104 && mx - x[v] > dmax) dmax = mx - x[v];
  return (10 + 2 * sq_ceil_log2(V)) * SQ_EPS + SQ_U * (2 * (mx - x[j]) + dmax) +
         2 * SQ_EPS * fabs(ref);
}

static seqcl_status lsm_gen(sq_case *c, sq_rng *r) {
  SQ_DIM(c, N, "N", 1, 1, SQ_MAXDIM);
  SQ_DIM(c, V, "V", 1, 1, SQ_MAXDIM);
  SQ_TRY(logits_gen(c, r, N, V));
  SQ_NEED(sq_case_out(c, "y", (size_t)N * V, 0) >= 0);
  return SEQCL_OK;
}

static seqcl_status lsm_run_in(sq_arena *a, const sq_case *c, double *const *got, char *fault,
                               size_t cap) {
  int N = sq_shape_int(&c->shape, "N", 1), V = sq_shape_int(&c->shape, "V", 1);
  sq_ref x = sq_arena_in_named(a, c, "x"), y = sq_arena_out(a, "y", (size_t)N * V, NULL);
  SQ_TRY(a->st);
  SQ_TRY(sq_log_softmax(a->ctx, N, V, x, y));
  SQ_TRY(sq_finish_run(a, fault, cap));
  return sq_arena_fetch(a, y, c->out[0].n, 0, got[0]);
}

static seqcl_status lsm_run(seqcl_ctx *ctx, const sq_case *c, double *const *got, char *fault,
                            size_t cap) {
  sq_arena a;
  sq_arena_init(&a, ctx);
  seqcl_status st = lsm_run_in(&a, c, got, fault, cap);
  sq_arena_release(&a);
  return st;
}

static void lsm_tol(const sq_case *c, int k, double *const *ref, double *tol) {
  int N = sq_shape_int(&c->shape, "N", 1), V = sq_shape_int(&c->shape, "V", 1);
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
  SQ_DIM(c, N, "N", 1, 1, SQ_MAXDIM);
  SQ_DIM(c, V, "V", 1, 1, SQ_MAXDIM);
  SQ_TRY(logits_gen(c, r, N, V));
  int32_t *labels = sq_case_i(c, "labels", (size_t)N);
  SQ_NEED(labels);
  int none = sq_shape_int(&c->shape, "noval", 0);
  for (int n = 0; n < N; n++) {
    labels[n] = sq_rng_int(r, 0, V - 1);
    /* about a third of the rows ignored, with PyTorch's -100 and with -1 */
    if (none || (n % 3 == 1)) labels[n] = n % 2 ? -100 : -1;
  }
  if (!none) labels[0] = V - 1;
  SQ_NEED(sq_case_out(c, "loss", 1, 0) >= 0);
  return SEQCL_OK;
}

static seqcl_status ce_run_in(sq_arena *a, const sq_case *c, double *const *got, char *fault,
                              size_t cap) {
  int N = sq_shape_int(&c->shape, "N", 1), V = sq_shape_int(&c->shape, "V", 1);
  sq_ref x = sq_arena_in_named(a, c, "x"), labels = sq_arena_in_named(a, c, "labels");
  sq_ref loss = sq_arena_out(a, "loss", 1, NULL);
  SQ_TRY(a->st);
  SQ_TRY(sq_cross_entropy(a->ctx, N, V, x, labels, sq_case_ini(c, "labels"), loss));
  SQ_TRY(sq_finish_run(a, fault, cap));
  return sq_arena_fetch(a, loss, 1, 0, got[0]);
}

static seqcl_status ce_run(seqcl_ctx *ctx, const sq_case *c, double *const *got, char *fault,
                           size_t cap) {
  sq_arena a;
  sq_arena_init(&a, ctx);
  seqcl_status st = ce_run_in(&a, c, got, fault, cap);
  sq_arena_release(&a);
  return st;
}

static void ce_tol(const sq_case *c, int k, double *const *ref, double *tol) {
  int N = sq_shape_int(&c->shape, "N", 1), V = sq_shape_int(&c->shape, "V", 1);
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
