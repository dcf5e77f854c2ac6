/* Op list entries of the greedy decode family: argmax, and argmax_greedy, the
 * fused tail of a greedy decoder step (argmax with the output bias, then the
 * EOS bookkeeping of greedy_update). */
#include <math.h>
#include <stdlib.h>

#include "check/opdefs.h"
#include "check/ops_all.h"
#include "ops/ops.h"

/* ------------------------------------------------------------- argmax ---- */
/* Shape keys: N V, pad (extra row stride), bias (default 0), ties (1: force
 * ties of the row maximum, which must resolve to the lowest index). */
static seqcl_status argmax_gen(sq_case *c, sq_rng *r) {
  SQ_DIM(c, N, "N", 1, 1, SQ_MAXDIM);
  SQ_DIM(c, V, "V", 1, 1, SQ_MAXDIM);
  SQ_DIM(c, pad, "pad", 0, 0, 4096);
  int ld = V + pad, ties = SH("ties", 0) && V > 1;
  float *x = sq_gen_f(c, r, "x", (size_t)N * ld, 1.0f);
  float *b = SH("bias", 0) ? sq_gen_f(c, r, "bias", (size_t)V, 1.0f) : NULL;
  SQ_NEED(x && (b || !SH("bias", 0)));
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

static seqcl_status argmax_run(sq_arena *a, const sq_case *c) {
  int N = SH("N", 1), V = SH("V", 1), pad = SH("pad", 0);
  sq_ref x = sq_arena_in_named(a, c, "x"), b = sq_arena_in_named(a, c, "bias");
  sq_ref ids = sq_arena_out(a, "ids", (size_t)N, NULL);
  SQ_TRY(a->st);
  SQ_TRY(sq_argmax(a->ctx, N, V, x, V + pad, b, ids));
  return sq_finish_fetch(a, c, &ids);
}

static const char *const argmax_shapes[] = {"N=1,V=1",          "N=3,V=7,ties=1",
                                            "N=5,V=37,bias=1,ties=1", "N=4,V=61,pad=3",
                                            "N=7,V=1000,ties=1", "N=2,V=4099,bias=1",
                                            "N=64,V=33,ties=1,bias=1", NULL};
static const char *const argmax_quick[] = {"N=5,V=37,bias=1,ties=1", NULL};

const sq_op sq_op_argmax = {
    "argmax",
    "exact: the index of the largest float32 x + bias, the lowest one on a tie (SPEC §1)",
    argmax_shapes, argmax_quick, 0, argmax_gen, argmax_run, sq_tol_exact, NULL};

/* Shape keys: N V, pad (extra row stride), bias (default 1), hist (default 1).
 * Every third row has finished already (it must stay at EOS whatever its
 * logits say); in another third the maximum sits on EOS (it finishes now). */
static seqcl_status greedy_gen(sq_case *c, sq_rng *r) {
  SQ_DIM(c, N, "N", 1, 1, SQ_MAXDIM);
  SQ_DIM(c, V, "V", 2, 2, SQ_MAXDIM);
  SQ_DIM(c, pad, "pad", 0, 0, 4096);
  const int ld = V + pad, eos = V / 2;
  float *x = sq_gen_f(c, r, "x", (size_t)N * ld, 1.0f);
  SQ_NEED(x);
  if (SH("bias", 1)) SQ_NEED(sq_gen_f(c, r, "bias", (size_t)V, 1.0f));
  int32_t *fin = sq_case_i(c, "fin", (size_t)N);
  SQ_NEED(fin);
  for (int n = 0; n < N; n++) {
    fin[n] = n % 3 == 1;
    if (n % 3 == 2) x[(size_t)n * ld + eos] = 8.0f; /* above every other x + bias */
  }
  SQ_NEED(sq_case_out(c, "ids", (size_t)N, 1) >= 0);
  SQ_NEED(sq_case_out(c, "finished", (size_t)N, 1) >= 0);
  SQ_NEED(sq_case_out(c, "hist", (size_t)N, 1) >= 0);
  return SEQCL_OK;
}

static seqcl_status greedy_run(sq_arena *a, const sq_case *c) {
  int N = SH("N", 1), V = SH("V", 2), pad = SH("pad", 0), with_hist = SH("hist", 1);
  sq_ref x = sq_arena_in_named(a, c, "x"), b = sq_arena_in_named(a, c, "bias");
  sq_ref ids = sq_arena_out(a, "ids", (size_t)N, NULL);
  sq_ref fin = sq_arena_out(a, "finished", (size_t)N, sq_case_ini(c, "fin"));
  sq_ref hist = sq_arena_out(a, "hist", (size_t)N, NULL);
  SQ_TRY(a->st);
  SQ_TRY(sq_argmax_greedy(a->ctx, N, V, x, V + pad, b, ids, fin, V / 2,
                          with_hist ? hist : sq_none()));
  SQ_TRY(sq_finish_fetch(a, c, (sq_ref[]){ids, fin, hist}));
  /* absent: the sentinels must survive; compare them as they are on both sides */
  if (!with_hist)
    for (int n = 0; n < N; n++) a->got[2][n] = 0.0;
  return SEQCL_OK;
}

static void greedy_tol(const sq_case *c, int k, double *const *ref, double *tol) {
  (void)ref;
  for (size_t i = 0; i < c->out[k].n; i++) tol[i] = 0.0;
}

static const char *const greedy_shapes[] = {"N=1,V=2",          "N=3,V=7",
                                            "N=7,V=1000",       "N=64,V=33,pad=3",
                                            "N=5,V=4099,bias=0", "N=6,V=61,hist=0", NULL};
static const char *const greedy_quick[] = {"N=7,V=37,pad=1", NULL};

const sq_op sq_op_argmax_greedy = {
    "argmax_greedy",
    "exact: ids, finished flags and history equal argmax then greedy_update (finished rows "
    "stay at EOS; the lowest index wins a tie)",
    greedy_shapes, greedy_quick, 0, greedy_gen, greedy_run, greedy_tol, NULL};
