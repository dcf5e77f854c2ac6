/* Global-norm clipping like torch.nn.utils.clip_grad_norm_: norm = ||g||_2 over
 * every parameter; when max_norm / (norm + 1e-6) < 1 every gradient is scaled
 * by that factor. */
#include <math.h>

#include "ops/ops.h"
#include "train/optim.h"

seqcl_status sq_clip_grad_norm(seqcl_ctx *ctx, size_t count, sq_ref grads, float max_norm,
                               sq_ref scratch, float *norm_out) {
  if (max_norm <= 0.0f && !norm_out) return SEQCL_OK;
  float sumsq = 0.0f;
  SQ_TRY(sq_sum_squares(ctx, count, grads, scratch));
  SQ_TRY(sq_read(ctx, scratch, &sumsq, sizeof sumsq));
  float norm = sqrtf(sumsq);
  if (norm_out) *norm_out = norm;
  if (!isfinite(norm))
    return sq_fail(ctx, SEQCL_ERR_NON_FINITE, "training: the gradient norm is %g", (double)norm);
  if (max_norm <= 0.0f) return SEQCL_OK;
  float coef = max_norm / (norm + 1e-6f);
  if (coef < 1.0f) SQ_TRY(sq_scale(ctx, count, grads, coef));
  return SEQCL_OK;
}
