/* Fronts of the optimiser's slots: the squared norm (gradient clipping),
 * scaling and the Adam step. */
#include "core/error.h"
#include "ops/ops.h"
#include "ops/ops_check.h"

#define BE(ctx) ((ctx)->be)
#define OPS(ctx) ((ctx)->be->ops)

seqcl_status sq_sum_squares(seqcl_ctx *ctx, size_t count, sq_ref x, sq_ref out) {
  SQ_TRAIN_SLOT(ctx, sum_squares);
  return OPS(ctx)->sum_squares(ctx->be, count, x, out);
}

seqcl_status sq_scale(seqcl_ctx *ctx, size_t count, sq_ref x, float s) {
  SQ_TRAIN_SLOT(ctx, scale);
  return OPS(ctx)->scale(ctx->be, count, x, s);
}

seqcl_status sq_adam_update(seqcl_ctx *ctx, size_t count, sq_ref p, sq_ref g, sq_ref m, sq_ref v,
                            float b1, float b2, float eps, float step_size, float bc2_sqrt) {
  SQ_TRAIN_SLOT(ctx, adam);
  return OPS(ctx)->adam(ctx->be, count, p, g, m, v, b1, b2, eps, step_size, bc2_sqrt);
}
