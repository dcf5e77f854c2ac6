/* The dropout front: the key of a mask, and argument checks before the
 * backend's slot. */
#include "ops/ops.h"
#include "ops/ops_check.h"

void sq_dropout_key(sq_dropout_args *a, double p, uint64_t seed, uint64_t step, uint32_t tensor) {
  /* p * 2^32 is exact in double for every p a user can type; floor keeps
   * P(drop) = threshold / 2^32 within 2^-32 of p */
  double t = p * 4294967296.0;
  a->threshold = t <= 0.0 ? 0u : t >= 4294967295.0 ? 4294967295u : (uint32_t)t;
  a->scale = (float)(1.0 / (1.0 - p));
  a->key[0] = (uint32_t)seed, a->key[1] = (uint32_t)(seed >> 32);
  a->ctr[0] = tensor, a->ctr[1] = (uint32_t)step, a->ctr[2] = (uint32_t)(step >> 32);
}

seqcl_status sq_dropout(seqcl_ctx *ctx, const sq_dropout_args *a) {
  static const char op[] = "sq_dropout";
  SQ_CHK(sq_chk_ctx(ctx, op));
  if (!a) return sq_fail(ctx, SEQCL_ERR_INVALID_ARGUMENT, "%s: args is NULL", op);
  SQ_CHK_DIMS(ctx, op, {"rows", a->rows}, {"cols", a->cols});
  SQ_CHK(sq_chk_ld(ctx, op, "ldx", a->ldx, a->cols));
  SQ_CHK(sq_chk_ld(ctx, op, "ldy", a->ldy, a->cols));
  const size_t rows = (size_t)a->rows, cols = (size_t)a->cols;
  SQ_CHK(sq_chk_ref(ctx, op, "x", a->x, sq_span2(rows, (size_t)a->ldx, cols), 1));
  SQ_CHK(sq_chk_ref(ctx, op, "y", a->y, sq_span2(rows, (size_t)a->ldy, cols), 1));
  /* the counter's first word numbers groups of four elements */
  if (rows * cols > ((size_t)1 << 34))
    return sq_fail(ctx, SEQCL_ERR_INVALID_ARGUMENT, "%s: %zu x %zu elements exceed 2^34", op,
                   rows, cols);
  /* in place, or not overlapping at all: a kernel reads and writes each
   * element once, so a shifted overlap would read written values */
  if (a->x.buf == a->y.buf && !(a->x.off == a->y.off && a->ldx == a->ldy)) {
    size_t xe = a->x.off + sq_span2(rows, (size_t)a->ldx, cols);
    size_t ye = a->y.off + sq_span2(rows, (size_t)a->ldy, cols);
    if (a->x.off < ye && a->y.off < xe)
      return sq_fail(ctx, SEQCL_ERR_INVALID_ARGUMENT,
                     "%s: x and y overlap without being the same tensor", op);
  }
  if (!ctx->be->ops->dropout)
    return sq_fail(ctx, SEQCL_ERR_UNSUPPORTED, "%s: the %s backend has no dropout slot", op,
                   ctx->be->ops->name);
  return ctx->be->ops->dropout(ctx->be, a);
}
