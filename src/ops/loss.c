/* Fronts of the loss family: log-softmax, the cross-entropy loss and its
 * backward. */
#include "core/error.h"
#include "ops/ops.h"
#include "ops/ops_check.h"

#define BE(ctx) ((ctx)->be)
#define OPS(ctx) ((ctx)->be->ops)

static size_t sz(long long v) { return (size_t)v; }

seqcl_status sq_log_softmax(seqcl_ctx *ctx, int N, int V, sq_ref x, sq_ref y) {
  static const char op[] = "sq_log_softmax";
  SQ_CHK_DIMS(ctx, op, {"N", N}, {"V", V});
  size_t NV = sq_mul_sat(sz(N), sz(V));
  SQ_CHK(sq_chk_ref(ctx, op, "x", x, NV, 1));
  SQ_CHK(sq_chk_ref(ctx, op, "y", y, NV, 1));
  return OPS(ctx)->log_softmax(BE(ctx), N, V, x, y);
}

seqcl_status sq_cross_entropy(seqcl_ctx *ctx, int N, int V, sq_ref x, sq_ref labels,
                              const int32_t *labels_host, sq_ref loss) {
  static const char op[] = "sq_cross_entropy";
  SQ_CHK_DIMS(ctx, op, {"N", N}, {"V", V});
  SQ_CHK(sq_chk_ref(ctx, op, "x", x, sq_mul_sat(sz(N), sz(V)), 1));
  SQ_CHK(sq_chk_ref(ctx, op, "labels", labels, sz(N), 1));
  SQ_CHK(sq_chk_ref(ctx, op, "loss", loss, 1, 1));
  if (!labels_host)
    return sq_fail(ctx, SEQCL_ERR_INVALID_ARGUMENT,
                   "%s: labels_host (the host copy of labels) is required", op);
  for (int n = 0; n < N; n++)
    if (labels_host[n] >= V)
      return sq_fail(ctx, SEQCL_ERR_INVALID_ARGUMENT,
                     "%s: labels[%d] = %d is not below V = %d (negative labels are ignored)", op,
                     n, (int)labels_host[n], V);
  return OPS(ctx)->cross_entropy(BE(ctx), N, V, x, labels, loss);
}

seqcl_status sq_cross_entropy_bwd(seqcl_ctx *ctx, int N, int V, sq_ref x, sq_ref labels,
                                  float scale, sq_ref dx) {
  SQ_TRAIN_SLOT(ctx, cross_entropy_bwd);
  return OPS(ctx)->cross_entropy_bwd(ctx->be, N, V, x, labels, scale, dx);
}
