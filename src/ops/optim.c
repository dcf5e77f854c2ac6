/* Fronts of the backward slots: find the slot in the context's backend table
 * (SEQCL_ERR_UNSUPPORTED naming the backend when it has none), then call it. */
#include <string.h>

#include "train/grad.h"

#include "ops/ops.h"

static seqcl_status missing(seqcl_ctx *ctx, const char *slot) {
  return sq_fail(ctx, SEQCL_ERR_UNSUPPORTED, "training: the %s backend has no %s backward slot",
                 ctx->be->ops->name, slot);
}

const struct sq_grad_ops *sq_grad_table(const sq_backend *be) {
  if (be->ops->grad) return be->ops->grad;
  if (be->ops->kind == SQ_BACKEND_HOST) return sq_host_grad_ops();
  return NULL;
}

#define GRAD_SLOT(ctx, slot)                                                              \
  const struct sq_grad_ops *g_ = sq_grad_table((ctx)->be);                                \
  if (!g_ || !g_->slot) return missing((ctx), #slot)

seqcl_status sq_grad_cross_entropy(seqcl_ctx *ctx, int N, int V, sq_ref x, sq_ref labels,
                                   float scale, sq_ref dx) {
  GRAD_SLOT(ctx, cross_entropy_bwd);
  return g_->cross_entropy_bwd(ctx->be, N, V, x, labels, scale, dx);
}

seqcl_status sq_grad_bias(seqcl_ctx *ctx, int rows, int cols, sq_ref dy, int ld, sq_ref db) {
  GRAD_SLOT(ctx, bias_grad);
  return g_->bias_grad(ctx->be, rows, cols, dy, ld, db);
}

seqcl_status sq_grad_tanh(seqcl_ctx *ctx, size_t count, sq_ref y, sq_ref dy, sq_ref dx) {
  GRAD_SLOT(ctx, tanh_bwd);
  return g_->tanh_bwd(ctx->be, count, y, dy, dx);
}

seqcl_status sq_grad_gru_gates(seqcl_ctx *ctx, const sq_gru_bwd_args *g) {
  GRAD_SLOT(ctx, gru_gates_bwd);
  return g_->gru_gates_bwd(ctx->be, g);
}

seqcl_status sq_grad_gru_fwd(seqcl_ctx *ctx, const sq_gru_args *g, sq_ref saved, size_t sv_sn,
                             size_t sv_st) {
  GRAD_SLOT(ctx, gru_fwd);
  return g_->gru_fwd(ctx->be, g, saved, sv_sn, sv_st);
}

seqcl_status sq_grad_attn_fwd(seqcl_ctx *ctx, const sq_attn_args *a, sq_ref u, sq_ref c, int ld_c,
                              sq_ref alpha) {
  GRAD_SLOT(ctx, attn_fwd);
  return g_->attn_fwd(ctx->be, a, u, c, ld_c, alpha);
}

seqcl_status sq_grad_attn(seqcl_ctx *ctx, const sq_attn_args *a, sq_ref alpha, sq_ref u, sq_ref dc,
                          int ld_dc, sq_ref dqp, int ld_dqp, sq_ref dkeys, sq_ref dpkeys,
                          sq_ref dv, sq_ref dbv) {
  GRAD_SLOT(ctx, attn_bwd);
  return g_->attn_bwd(ctx->be, a, alpha, u, dc, ld_dc, dqp, ld_dqp, dkeys, dpkeys, dv, dbv);
}

seqcl_status sq_grad_embedding(seqcl_ctx *ctx, int N, int D, sq_ref ids, sq_ref dy, int ld_dy,
                               int pad_id, sq_ref dtable) {
  GRAD_SLOT(ctx, embedding_bwd);
  return g_->embedding_bwd(ctx->be, N, D, ids, dy, ld_dy, pad_id, dtable);
}

seqcl_status sq_grad_sum_squares(seqcl_ctx *ctx, size_t count, sq_ref x, sq_ref out) {
  GRAD_SLOT(ctx, sum_squares);
  return g_->sum_squares(ctx->be, count, x, out);
}

seqcl_status sq_grad_scale(seqcl_ctx *ctx, size_t count, sq_ref x, float s) {
  GRAD_SLOT(ctx, scale);
  return g_->scale(ctx->be, count, x, s);
}

seqcl_status sq_grad_adam(seqcl_ctx *ctx, size_t count, sq_ref p, sq_ref g, sq_ref m, sq_ref v,
                          float b1, float b2, float eps, float step_size, float bc2_sqrt) {
  GRAD_SLOT(ctx, adam);
  return g_->adam(ctx->be, count, p, g, m, v, b1, b2, eps, step_size, bc2_sqrt);
}

seqcl_status sq_linear_bwd(seqcl_ctx *ctx, int rows, int in, int out, sq_ref x, int ldx, sq_ref W,
                           sq_ref dy, int lddy, sq_ref dx, int lddx, float beta_dx, sq_ref dW,
                           sq_ref db) {
  /* dx [rows, in] = dy [rows, out] W [out, in] */
  if (dx.buf)
    SQ_TRY(sq_gemm(ctx, 0, 0, rows, in, out, 1.0f, dy, lddy, 0, W, in, 0, beta_dx, dx, lddx, 0, 1));
  /* dW [out, in] += dy^T [out, rows] x [rows, in] */
  SQ_TRY(sq_gemm(ctx, 1, 0, out, in, rows, 1.0f, dy, lddy, 0, x, ldx, 0, 1.0f, dW, in, 0, 1));
  if (db.buf) SQ_TRY(sq_grad_bias(ctx, rows, out, dy, lddy, db));
  return SEQCL_OK;
}
