/* Op list entries of the optimiser's slots: sum of squares, scale and Adam.
 *
 * Every output that a training slot accumulates into (+=) or updates in
 * place starts from random values (inputs named *0), so a kernel that
 * overwrites instead of accumulating fails. */
#include <stdlib.h>
#include <string.h>

#include "check/opdefs.h"
#include "check/ops_all.h"

/* -------------------------------------------------- grad.sum_squares ---- */
/* Shape key: n. out = sum x^2 (positive terms: relative bound). */
static seqcl_status ssq_gen(sq_case *c, sq_rng *r) {
  SQ_DIM(c, n, "n", 1, 1, 1 << 26);
  SQ_NEED(sq_gen_f(c, r, "x", (size_t)n, 1.0f));
  SQ_NEED(sq_case_out(c, "out", 1, 0) >= 0);
  return SEQCL_OK;
}

static seqcl_status ssq_run(sq_arena *a, const sq_case *c) {
  sq_ref x = sq_arena_in_named(a, c, "x"), out = sq_arena_out(a, "out", 1, NULL);
  SQ_TRY(a->st);
  SQ_TRY(sq_sum_squares(a->ctx, (size_t)SH("n", 1), x, out));
  return sq_finish_fetch(a, c, &out);
}

static void ssq_tol(const sq_case *c, int k, double *const *ref, double *tol) {
  tol[0] = sq_dot_factor(SH("n", 1) + 1) * fabs(ref[k][0]);
}

static const char *const ssq_shapes[] = {"n=1", "n=7", "n=37", "n=1000", "n=300007", "n=1048583", NULL};
static const char *const ssq_quick[] = {"n=37", NULL};

const sq_op sq_op_grad_sum_squares = {
    "grad.sum_squares",
    "2(n+3)u |sum|: an n-term sum of positive float products in any order (devices without "
    "fp64 accumulate in float) and the final rounding",
    ssq_shapes, ssq_quick, 0, ssq_gen, ssq_run, ssq_tol, NULL};

/* -------------------------------------------------------- grad.scale ---- */
/* Shape keys: n, s (the factor, default 0.37). x *= s in place. */
static seqcl_status scale_gen(sq_case *c, sq_rng *r) {
  SQ_DIM(c, n, "n", 1, 1, 1 << 26);
  SQ_NEED(sq_gen_f(c, r, "x0", (size_t)n, 1.0f));
  SQ_NEED(sq_case_out(c, "x", (size_t)n, 0) >= 0);
  return SEQCL_OK;
}

static seqcl_status scale_run(sq_arena *a, const sq_case *c) {
  size_t n = (size_t)SH("n", 1);
  sq_ref x = sq_arena_out(a, "x", n, sq_case_inf(c, "x0"));
  SQ_TRY(a->st);
  SQ_TRY(sq_scale(a->ctx, n, x, (float)sq_shape_get(&c->shape, "s", 0.37)));
  return sq_finish_fetch(a, c, &x);
}

static void scale_tol(const sq_case *c, int k, double *const *ref, double *tol) {
  for (size_t i = 0; i < c->out[k].n; i++) tol[i] = SQ_U * fabs(ref[k][i]);
}

static const char *const scale_shapes[] = {"n=1", "n=7", "n=37,s=-3.5", "n=1000,s=1e-3",
                                           "n=65537", NULL};
static const char *const scale_quick[] = {"n=37,s=-3.5", NULL};

const sq_op sq_op_grad_scale = {"grad.scale", "u |x s|: one correctly rounded product",
                                scale_shapes, scale_quick, 0, scale_gen, scale_run, scale_tol,
                                NULL};

/* --------------------------------------------------------- grad.adam ---- */
/* Shape keys: n, t (the step number, default 3). torch.optim.Adam with lr 1e-3,
 * betas (0.9, 0.999), eps 1e-8; p, m, v updated in place from random values
 * (v > 0). The bias corrections are computed here as training computes them. */
typedef struct adam_hp {
  float b1, b2, eps, step_size, bc2_sqrt;
} adam_hp;

static adam_hp adam_params(const sq_case *c) {
  adam_hp h = {0.9f, 0.999f, 1e-8f, 0, 0};
  int t = SH("t", 3);
  h.step_size = (float)(1e-3 / (1.0 - pow(h.b1, t)));
  h.bc2_sqrt = (float)sqrt(1.0 - pow(h.b2, t));
  return h;
}

void sq_grad_adam_params(const sq_case *c, float *b1, float *b2, float *eps, float *step_size,
                         float *bc2_sqrt);
void sq_grad_adam_params(const sq_case *c, float *b1, float *b2, float *eps, float *step_size,
                         float *bc2_sqrt) {
  adam_hp h = adam_params(c);
  *b1 = h.b1, *b2 = h.b2, *eps = h.eps, *step_size = h.step_size, *bc2_sqrt = h.bc2_sqrt;
}

static seqcl_status adam_gen(sq_case *c, sq_rng *r) {
  SQ_DIM(c, n, "n", 1, 1, 1 << 26);
  SQ_DIM(c, t, "t", 3, 1, 1000000);
  (void)t;
  SQ_NEED(sq_gen_f(c, r, "p0", (size_t)n, 1.0f));
  SQ_NEED(sq_gen_f(c, r, "g", (size_t)n, 1.0f));
  SQ_NEED(sq_gen_f(c, r, "m0", (size_t)n, 0.5f));
  float *v0 = sq_gen_f(c, r, "v0", (size_t)n, 0.5f);
  SQ_NEED(v0);
  for (int i = 0; i < n; i++) v0[i] = fabsf(v0[i]);
  SQ_NEED(sq_case_out(c, "p", (size_t)n, 0) >= 0);
  SQ_NEED(sq_case_out(c, "m", (size_t)n, 0) >= 0);
  SQ_NEED(sq_case_out(c, "v", (size_t)n, 0) >= 0);
  return SEQCL_OK;
}

static seqcl_status adam_run(sq_arena *a, const sq_case *c) {
  size_t n = (size_t)SH("n", 1);
  adam_hp h = adam_params(c);
  sq_ref g = sq_arena_in_named(a, c, "g");
  sq_ref p = sq_arena_out(a, "p", n, sq_case_inf(c, "p0"));
  sq_ref m = sq_arena_out(a, "m", n, sq_case_inf(c, "m0"));
  sq_ref v = sq_arena_out(a, "v", n, sq_case_inf(c, "v0"));
  SQ_TRY(a->st);
  SQ_TRY(sq_adam_update(a->ctx, n, p, g, m, v, h.b1, h.b2, h.eps, h.step_size, h.bc2_sqrt));
  return sq_finish_fetch(a, c, (sq_ref[]){p, m, v});
}

/* m and v: the roundings of the products and the sum (3 eps, 4 eps with g^2) on
 * the terms' magnitudes; p: m's and v's errors carried through the update
 * (relative e_m / |m| + e_v / (2 v) + the roundings of sqrt, /, +, *) and the
 * final subtraction. */
static void adam_tol(const sq_case *c, int k, double *const *ref, double *tol) {
  adam_hp h = adam_params(c);
  const float *g = sq_case_inf(c, "g"), *m0 = sq_case_inf(c, "m0"), *v0 = sq_case_inf(c, "v0");
  for (size_t i = 0; i < c->out[k].n; i++) {
    double em = 3 * SQ_EPS * (fabs(h.b1 * m0[i]) + fabs((1.0 - h.b1) * g[i]));
    double ev = 4 * SQ_EPS * (fabs(h.b2 * v0[i]) + fabs((1.0 - h.b2) * g[i] * g[i]));
    if (k == 1) {
      tol[i] = em;
    } else if (k == 2) {
      tol[i] = ev;
    } else {
      double m = fabs(ref[1][i]), v = fabs(ref[2][i]);
      double den = sqrt(v) / h.bc2_sqrt + h.eps;
      double upd = h.step_size * m / den;
      tol[i] = h.step_size * (em + m * (ev / (2 * v) + 8 * SQ_EPS)) / den +
               2 * SQ_EPS * (fabs(ref[0][i]) + upd);
    }
  }
}

static const char *const adam_shapes[] = {"n=1", "n=7,t=1", "n=37", "n=1000,t=100", "n=65537",
                                          NULL};
static const char *const adam_quick[] = {"n=37", NULL};

const sq_op sq_op_grad_adam = {
    "grad.adam",
    "m: 3 eps (|b1 m0| + |(1-b1) g|); v: 4 eps (|b2 v0| + |(1-b2) g^2|); p: those errors "
    "carried through step m / (sqrt(v)/bc2 + eps) plus 8 eps for its roundings and 2 eps for "
    "the subtraction; p, m, v start random",
    adam_shapes, adam_quick, 0, adam_gen, adam_run, adam_tol, NULL};
