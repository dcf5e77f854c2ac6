/* Adam (torch.optim.Adam semantics) and global-norm gradient clipping
 * (torch.nn.utils.clip_grad_norm_) over the flat parameter buffer. */
#ifndef SQ_TRAIN_OPTIM_H
#define SQ_TRAIN_OPTIM_H

#include "backend/backend.h"
#include "core/ctx.h"

typedef struct sq_adam {
  float lr, beta1, beta2, eps;
  long step;
  size_t count;
  sq_buf *state; /* m then v, count floats each */
} sq_adam;

/* PyTorch defaults: betas (0.9, 0.999), eps 1e-8, no weight decay. */
seqcl_status sq_adam_create(seqcl_ctx *ctx, size_t count, float lr, sq_adam *out);
void sq_adam_free(sq_adam *a);
seqcl_status sq_adam_step(seqcl_ctx *ctx, sq_adam *a, sq_ref params, sq_ref grads);

/* Scales grads so that their global L2 norm is at most max_norm (0: no
 * clipping; the norm is still computed when norm_out is given). scratch holds
 * one float. *norm_out gets the norm before clipping. */
seqcl_status sq_clip_grad_norm(seqcl_ctx *ctx, size_t count, sq_ref grads, float max_norm,
                               sq_ref scratch, float *norm_out);

#endif
