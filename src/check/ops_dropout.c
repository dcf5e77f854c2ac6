/* Op list entry: dropout. Its backward is the same op on dy (the mask is
 * drawn again from the same key), so this one entry covers both directions.
 * Shape keys: R C, px / py (extra row stride of x / y), inplace (y is x),
 * p (default 0.3), seed and step (the key; step above 2^32 uses the counter's
 * high word). */
#include <math.h>
#include <stdlib.h>

#include "check/opdefs.h"
#include "check/ops_all.h"

#define DROP_TENSOR 3 /* any stream: the graph's between-layer one */

static seqcl_status drop_gen(sq_case *c, sq_rng *r) {
  SQ_DIM(c, R, "R", 1, 1, SQ_MAXDIM);
  SQ_DIM(c, C, "C", 1, 1, SQ_MAXDIM);
  SQ_DIM(c, px, "px", 0, 0, 4096);
  SQ_DIM(c, py, "py", 0, 0, 4096);
  double p = sq_shape_get(&c->shape, "p", 0.3);
  if (!(p >= 0 && p < 1))
    return sq_fail(NULL, SEQCL_ERR_INVALID_ARGUMENT, "dropout: p %g is outside [0, 1)", p);
  SQ_NEED(sq_gen_f(c, r, "x", (size_t)R * (C + px), 1.0f));
  (void)py;
  SQ_NEED(sq_case_out(c, "y", (size_t)R * C, 0) >= 0);
  return SEQCL_OK;
}

static seqcl_status drop_run(sq_arena *a, const sq_case *c) {
  const int R = SH("R", 1), C = SH("C", 1), px = SH("px", 0), py = SH("py", 0);
  const int inplace = SH("inplace", 0);
  sq_dropout_args d = {.rows = R, .cols = C, .ldx = C + px, .ldy = inplace ? C + px : C + py};
  if (inplace) {
    d.x = d.y = sq_arena_out2d(a, "y", (size_t)R, (size_t)C, (size_t)(C + px),
                               sq_case_inf(c, "x"));
  } else {
    d.x = sq_arena_in_named(a, c, "x");
    d.y = sq_arena_out2d(a, "y", (size_t)R, (size_t)C, (size_t)(C + py), NULL);
  }
  SQ_TRY(a->st);
  sq_dropout_key(&d, sq_shape_get(&c->shape, "p", 0.3),
                 (uint64_t)sq_shape_get(&c->shape, "seed", 12345),
                 (uint64_t)sq_shape_get(&c->shape, "step", 7), DROP_TENSOR);
  SQ_TRY(sq_dropout(a->ctx, &d));
  return sq_finish_fetch(a, c, &d.y);
}

static void drop_tol(const sq_case *c, int k, double *const *ref, double *tol) {
  for (size_t i = 0; i < c->out[k].n; i++) tol[i] = SQ_U * fabs(ref[k][i]);
}

static const char *const drop_shapes[] = {
    "R=1,C=1", "R=7,C=13,px=3,py=5", "R=33,C=130,inplace=1,px=2", "R=64,C=64,p=0",
    "R=300,C=257,p=0.5,seed=8589934593,step=4294967301", "R=5,C=1000,p=0.9", NULL};
static const char *const drop_quick[] = {"R=7,C=13,px=3,py=5", NULL};

const sq_op sq_op_dropout = {
    "dropout",
    "u |x s|: the mask is integer arithmetic (exactly the reference's), then one correctly "
    "rounded product",
    drop_shapes, drop_quick, 0, drop_gen, drop_run, drop_tol, NULL};
