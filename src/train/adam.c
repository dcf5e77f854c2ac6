/* torch.optim.Adam (no weight decay, no amsgrad): the bias corrections are
 * computed here in double, exactly as torch's single-tensor path does:
 *   step_size = lr / (1 - b1^t);  denom = sqrt(v) / sqrt(1 - b2^t) + eps. */
#include <math.h>

#include "ops/ops.h"
#include "train/optim.h"

seqcl_status sq_adam_create(seqcl_ctx *ctx, size_t count, float lr, sq_adam *a) {
  a->lr = lr;
  a->beta1 = 0.9f;
  a->beta2 = 0.999f;
  a->eps = 1e-8f;
  a->step = 0;
  a->count = count;
  a->state = NULL;
  SQ_TRY(sq_buf_alloc(ctx, 2 * count * sizeof(float), &a->state));
  return sq_fill(ctx, sq_at(a->state, 0), 2 * count, 0.0f);
}

void sq_adam_free(sq_adam *a) {
  if (!a) return;
  sq_buf_free(a->state);
  a->state = NULL;
}

seqcl_status sq_adam_step(seqcl_ctx *ctx, sq_adam *a, sq_ref params, sq_ref grads) {
  a->step++;
  double bc1 = 1.0 - pow((double)a->beta1, (double)a->step);
  double bc2 = 1.0 - pow((double)a->beta2, (double)a->step);
  float step_size = (float)(a->lr / bc1);
  float bc2_sqrt = (float)sqrt(bc2);
  return sq_adam_update(ctx, a->count, params, grads, sq_at(a->state, 0), sq_at(a->state, a->count),
                      a->beta1, a->beta2, a->eps, step_size, bc2_sqrt);
}
