/* Fronts of the greedy decode family: argmax, the EOS bookkeeping of a
 * greedy step, and the two fused where the backend has argmax_greedy. */
#include "core/error.h"
#include "ops/ops.h"
#include "ops/ops_check.h"

#define BE(ctx) ((ctx)->be)
#define OPS(ctx) ((ctx)->be->ops)

static size_t sz(long long v) { return (size_t)v; }

seqcl_status sq_argmax(seqcl_ctx *ctx, int N, int V, sq_ref x, int ld, sq_ref bias, sq_ref ids) {
  static const char op[] = "sq_argmax";
  SQ_CHK_DIMS(ctx, op, {"N", N}, {"V", V});
  SQ_CHK(sq_chk_mat(ctx, op, "x", x, "ld", N, ld, V, 1));
  SQ_CHK(sq_chk_ref(ctx, op, "bias", bias, sz(V), 0));
  SQ_CHK(sq_chk_ref(ctx, op, "ids", ids, sz(N), 1));
  return OPS(ctx)->argmax(BE(ctx), N, V, x, ld, bias, ids);
}

seqcl_status sq_greedy_update(seqcl_ctx *ctx, int N, sq_ref ids, sq_ref finished, int eos,
                              sq_ref hist) {
  sq_backend *be = BE(ctx);
  if (!be->ops->greedy_update)
    return sq_fail(ctx, SEQCL_ERR_UNSUPPORTED, "greedy_update: not available on backend %s",
                   be->ops->name);
  return be->ops->greedy_update(be, N, ids, finished, eos, hist);
}

seqcl_status sq_argmax_greedy(seqcl_ctx *ctx, int N, int V, sq_ref x, int ld, sq_ref bias,
                              sq_ref ids, sq_ref finished, int eos, sq_ref hist) {
  sq_backend *be = BE(ctx);
  if (be->ops->argmax_greedy && !(sq_ablated(ctx) & SQ_ABL_FUSED_GREEDY)) {
    /* the argmax front's checks, once: the fused slot skips the front */
    if (N < 1 || V < 1 || ld < V)
      return sq_fail(ctx, SEQCL_ERR_SHAPE, "argmax_greedy: N = %d, V = %d, ld = %d", N, V, ld);
    return be->ops->argmax_greedy(be, N, V, x, ld, bias, ids, finished, eos, hist);
  }
  SQ_TRY(sq_argmax(ctx, N, V, x, ld, bias, ids));
  return sq_greedy_update(ctx, N, ids, finished, eos, hist);
}
