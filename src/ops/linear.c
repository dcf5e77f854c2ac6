/* Fronts of the linear family: GEMM, nn.Linear (GEMM + bias), the bias, the
 * tanh of the decoder's combining layer, and their backward (the linear
 * layer's backward is three GEMMs plus bias_grad). */
#include <math.h>

#include "core/error.h"
#include "ops/ops.h"
#include "ops/ops_check.h"

#define BE(ctx) ((ctx)->be)
#define OPS(ctx) ((ctx)->be->ops)

static size_t sz(long long v) { return (size_t)v; }

seqcl_status sq_gemm_paths(seqcl_ctx *ctx, int force, size_t *side) {
  *side = 0;
  SQ_CHK(sq_chk_ctx(ctx, "sq_gemm_paths"));
  sq_backend *be = ctx->be;
  if (!be->ops->gemm_paths) return SEQCL_OK;
  return be->ops->gemm_paths(be, force, side);
}

seqcl_status sq_gemm(seqcl_ctx *ctx, int ta, int tb, int M, int N, int K, float alpha, sq_ref A,
                     int lda, size_t sa, sq_ref B, int ldb, size_t sb, float beta, sq_ref C, int ldc,
                     size_t sc, int batch) {
  static const char op[] = "sq_gemm";
  SQ_CHK_DIMS(ctx, op, {"M", M}, {"N", N}, {"K", K}, {"batch", batch});
  /* Stored shapes: A is [M,K] ([K,M] when ta), B is [K,N] ([N,K] when tb). */
  int a_rows = ta ? K : M, a_cols = ta ? M : K;
  int b_rows = tb ? N : K, b_cols = tb ? K : N;
  SQ_CHK(sq_chk_ld(ctx, op, "lda", lda, a_cols));
  SQ_CHK(sq_chk_ld(ctx, op, "ldb", ldb, b_cols));
  SQ_CHK(sq_chk_ld(ctx, op, "ldc", ldc, N));
  size_t nb = sz(batch) - 1;
  size_t ea = sq_add_sat(sq_mul_sat(nb, sa), sq_span2(sz(a_rows), sz(lda), sz(a_cols)));
  size_t eb = sq_add_sat(sq_mul_sat(nb, sb), sq_span2(sz(b_rows), sz(ldb), sz(b_cols)));
  size_t ec = sq_add_sat(sq_mul_sat(nb, sc), sq_span2(sz(M), sz(ldc), sz(N)));
  SQ_CHK(sq_chk_ref(ctx, op, "A", A, ea, 1));
  SQ_CHK(sq_chk_ref(ctx, op, "B", B, eb, 1));
  SQ_CHK(sq_chk_ref(ctx, op, "C", C, ec, 1));
  return OPS(ctx)->gemm(BE(ctx), ta != 0, tb != 0, M, N, K, alpha, A, lda, sa, B, ldb, sb, beta, C,
                        ldc, sc, batch);
}

seqcl_status sq_linear(seqcl_ctx *ctx, int rows, int in, int out, sq_ref x, int ldx, sq_ref W,
                       sq_ref b, sq_ref y, int ldy) {
  static const char op[] = "sq_linear";
  SQ_CHK_DIMS(ctx, op, {"rows", rows}, {"in", in}, {"out", out});
  SQ_CHK(sq_chk_ld(ctx, op, "ldx", ldx, in));
  SQ_CHK(sq_chk_ld(ctx, op, "ldy", ldy, out));
  SQ_CHK(sq_chk_ref(ctx, op, "x", x, sq_span2(sz(rows), sz(ldx), sz(in)), 1));
  SQ_CHK(sq_chk_ref(ctx, op, "W", W, sq_mul_sat(sz(out), sz(in)), 1));
  SQ_CHK(sq_chk_ref(ctx, op, "b", b, sz(out), 0));
  SQ_CHK(sq_chk_ref(ctx, op, "y", y, sq_span2(sz(rows), sz(ldy), sz(out)), 1));
  SQ_TRY(OPS(ctx)->gemm(BE(ctx), 0, 1, rows, out, in, 1.0f, x, ldx, 0, W, in, 0, 0.0f, y, ldy, 0,
                        1));
  if (b.buf) SQ_TRY(OPS(ctx)->add_bias(BE(ctx), rows, out, y, ldy, b));
  return SEQCL_OK;
}

seqcl_status sq_add_bias(seqcl_ctx *ctx, int rows, int cols, sq_ref y, int ld, sq_ref bias) {
  static const char op[] = "sq_add_bias";
  SQ_CHK_DIMS(ctx, op, {"rows", rows}, {"cols", cols});
  SQ_CHK(sq_chk_mat(ctx, op, "y", y, "ld", rows, ld, cols, 1));
  SQ_CHK(sq_chk_ref(ctx, op, "bias", bias, sz(cols), 1));
  return OPS(ctx)->add_bias(BE(ctx), rows, cols, y, ld, bias);
}

seqcl_status sq_tanh_inplace(seqcl_ctx *ctx, size_t count, sq_ref x) {
  sq_backend *be = BE(ctx);
  if (!be->ops->tanh_inplace)
    return sq_fail(ctx, SEQCL_ERR_UNSUPPORTED, "tanh_inplace: not available on backend %s",
                   be->ops->name);
  return be->ops->tanh_inplace(be, count, x);
}

seqcl_status sq_bias_grad(seqcl_ctx *ctx, int rows, int cols, sq_ref dy, int ld, sq_ref db) {
  SQ_TRAIN_SLOT(ctx, bias_grad);
  return OPS(ctx)->bias_grad(ctx->be, rows, cols, dy, ld, db);
}

seqcl_status sq_tanh_bwd(seqcl_ctx *ctx, size_t count, sq_ref y, sq_ref dy, sq_ref dx) {
  SQ_TRAIN_SLOT(ctx, tanh_bwd);
  return OPS(ctx)->tanh_bwd(ctx->be, count, y, dy, dx);
}

seqcl_status sq_linear_bwd(seqcl_ctx *ctx, int rows, int in, int out, sq_ref x, int ldx, sq_ref W,
                           sq_ref dy, int lddy, sq_ref dx, int lddx, float beta_dx, sq_ref dW,
                           sq_ref db) {
  /* dx [rows, in] = dy [rows, out] W [out, in] */
  if (dx.buf)
    SQ_TRY(sq_gemm(ctx, 0, 0, rows, in, out, 1.0f, dy, lddy, 0, W, in, 0, beta_dx, dx, lddx, 0, 1));
  /* dW [out, in] += dy^T [out, rows] x [rows, in] */
  SQ_TRY(sq_gemm(ctx, 1, 0, out, in, rows, 1.0f, dy, lddy, 0, x, ldx, 0, 1.0f, dW, in, 0, 1));
  if (db.buf) SQ_TRY(sq_bias_grad(ctx, rows, out, dy, lddy, db));
  return SEQCL_OK;
}
