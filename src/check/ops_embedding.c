/* Op list entries of the embedding family: the row gather and its backward
 * (grad.embedding).
 *
 * Every output that a training slot accumulates into (+=) or updates in
 * place starts from random values (inputs named *0), so a kernel that
 * overwrites instead of accumulating fails. */
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

static seqcl_status embed_run(sq_arena *a, const sq_case *c) {
  int N = SH("N", 1), D = SH("D", 1), V = SH("V", 1), pad = SH("pad", 0);
  sq_ref ids = sq_arena_in_named(a, c, "ids"), table = sq_arena_in_named(a, c, "table");
  sq_ref out = sq_arena_out2d(a, "out", (size_t)N, (size_t)D, (size_t)D + pad, NULL);
  SQ_TRY(a->st);
  SQ_TRY(sq_embedding(a->ctx, N, D, V, ids, sq_case_ini(c, "ids"), table, out, D + pad));
  return sq_finish_fetch(a, c, &out);
}

static const char *const embed_shapes[] = {"N=1,D=1,V=1", "N=7,D=13,V=37", "N=61,D=32,V=5,pad=3",
                                           "N=256,D=512,V=1000", NULL};
static const char *const embed_quick[] = {"N=7,D=13,V=37", NULL};

const sq_op sq_op_embedding = {"embedding", "exact: a copy of table rows", embed_shapes,
                               embed_quick, 0, embed_gen, embed_run, sq_tol_exact, NULL};

/* ---------------------------------------------------- grad.embedding ---- */
/* Shape keys: N D V, pad (extra row stride of dy), pid (the padding id, -1:
 * none). Repeated ids accumulate; the padding row gets nothing. */
static seqcl_status emb_gen(sq_case *c, sq_rng *r) {
  SQ_DIM(c, N, "N", 1, 1, SQ_MAXDIM);
  SQ_DIM(c, D, "D", 1, 1, SQ_MAXDIM);
  SQ_DIM(c, V, "V", 1, 1, SQ_MAXDIM);
  SQ_DIM(c, pad, "pad", 0, 0, 4096);
  SQ_DIM(c, pid, "pid", -1, -1, V - 1);
  int32_t *ids = sq_case_i(c, "ids", (size_t)N);
  SQ_NEED(ids);
  for (int n = 0; n < N; n++) ids[n] = sq_rng_int(r, 0, V - 1);
  ids[0] = V - 1;
  if (N > 2) ids[N - 1] = ids[1]; /* a repeated id */
  if (pid >= 0)
    for (int n = 1; n < N; n += 3) ids[n] = pid;
  SQ_NEED(sq_gen_f(c, r, "dy", (size_t)N * (D + pad), 1.0f));
  SQ_NEED(sq_gen_f(c, r, "dtable0", (size_t)V * D, 1.0f));
  SQ_NEED(sq_case_out(c, "dtable", (size_t)V * D, 0) >= 0);
  return SEQCL_OK;
}

static seqcl_status emb_run(sq_arena *a, const sq_case *c) {
  int N = SH("N", 1), D = SH("D", 1), V = SH("V", 1), pad = SH("pad", 0);
  sq_ref ids = sq_arena_in_named(a, c, "ids"), dy = sq_arena_in_named(a, c, "dy");
  sq_ref dt = sq_arena_out(a, "dtable", (size_t)V * D, sq_case_inf(c, "dtable0"));
  SQ_TRY(a->st);
  SQ_TRY(sq_embedding_bwd(a->ctx, N, D, ids, dy, D + pad, SH("pid", -1), dt));
  return sq_finish_fetch(a, c, &dt);
}

static void emb_tol(const sq_case *c, int k, double *const *ref, double *tol) {
  (void)k, (void)ref;
  int N = SH("N", 1), D = SH("D", 1), V = SH("V", 1), ld = D + SH("pad", 0), pid = SH("pid", -1);
  const int32_t *ids = sq_case_ini(c, "ids");
  const float *dy = sq_case_inf(c, "dy"), *dt0 = sq_case_inf(c, "dtable0");
  for (int v = 0; v < V; v++)
    for (int d = 0; d < D; d++) {
      double m = fabs(dt0[(size_t)v * D + d]);
      int hits = 0;
      for (int n = 0; n < N; n++)
        if (ids[n] == v && v != pid) hits++, m += fabs(dy[(size_t)n * ld + d]);
      tol[(size_t)v * D + d] = hits ? sq_dot_factor(hits) * m : 0;
    }
}

static const char *const emb_shapes[] = {"N=1,D=1,V=1",       "N=7,D=13,V=5,pid=0",
                                         "N=37,D=61,V=7,pad=3", "N=13,D=37,V=1000,pid=999",
                                         "N=256,D=100,V=61,pid=3", NULL};
static const char *const emb_quick[] = {"N=7,D=13,V=5,pid=0", NULL};

const sq_op sq_op_grad_embedding = {
    "grad.embedding",
    "2(h+2)u (|dtable0| + sum |dy|) over the h rows adding into an element (any order); rows "
    "no id hits and the padding row exactly unchanged",
    emb_shapes, emb_quick, 0, emb_gen, emb_run, emb_tol, NULL};
