/* Fronts of the beam family (backend.h, "Beam search slots"): the shape
 * checks every backend relies on, then the backend's implementation;
 * SEQCL_ERR_UNSUPPORTED where a backend has none. */
#include "core/error.h"
#include "ops/ops.h"

static seqcl_status check_k(seqcl_ctx *ctx, const char *what, int K) {
  if (K < 1 || K > SQ_BEAM_MAX_K)
    return sq_fail(ctx, SEQCL_ERR_UNSUPPORTED, "%s: beam size %d is not in [1, %d]", what, K,
                   SQ_BEAM_MAX_K);
  return SEQCL_OK;
}

static seqcl_status need(seqcl_ctx *ctx, const char *what, sq_backend *be, const void *slot) {
  if (!slot)
    return sq_fail(ctx, SEQCL_ERR_UNSUPPORTED, "%s: not available on backend %s", what,
                   be->ops->name);
  return SEQCL_OK;
}

seqcl_status sq_beam_topk(seqcl_ctx *ctx, int N, int V, sq_ref x, int ld, int K, sq_ref vals,
                          sq_ref ids) {
  sq_backend *be = sq_be(ctx);
  SQ_TRY(need(ctx, "beam_topk", be, (const void *)be->ops->beam_topk));
  SQ_TRY(check_k(ctx, "beam_topk", K));
  if (N < 1 || V < 1 || ld < V)
    return sq_fail(ctx, SEQCL_ERR_SHAPE, "beam_topk: N = %d, V = %d, ld = %d", N, V, ld);
  return be->ops->beam_topk(be, N, V, x, ld, K, vals, ids);
}

seqcl_status sq_beam_select(seqcl_ctx *ctx, const sq_beam_args *a) {
  sq_backend *be = sq_be(ctx);
  SQ_TRY(need(ctx, "beam_select", be, (const void *)be->ops->beam_select));
  SQ_TRY(check_k(ctx, "beam_select", a->K));
  if (a->n < 1 || a->step < 0 || a->step >= a->max_steps)
    return sq_fail(ctx, SEQCL_ERR_SHAPE, "beam_select: n = %d, step %d of %d", a->n, a->step,
                   a->max_steps);
  return be->ops->beam_select(be, a);
}

seqcl_status sq_gather_rows(seqcl_ctx *ctx, int N, int D, sq_ref src, sq_ref idx, sq_ref dst) {
  sq_backend *be = sq_be(ctx);
  SQ_TRY(need(ctx, "gather_rows", be, (const void *)be->ops->gather_rows));
  if (N < 1 || D < 1 || src.buf == dst.buf)
    return sq_fail(ctx, SEQCL_ERR_SHAPE, "gather_rows: N = %d, D = %d%s", N, D,
                   src.buf == dst.buf ? ", source and destination share a buffer" : "");
  return be->ops->gather_rows(be, N, D, src, idx, dst);
}
