/* Fronts of the attention family: raw scores, masked softmax, context, the
 * fused step, and training's forward (keeping the additive activations) and
 * backward. Every check names the op and the argument (see ops_check.h for
 * which status each failure gets). */
#include <math.h>

#include "core/error.h"
#include "ops/ops.h"
#include "ops/ops_check.h"

#define BE(ctx) ((ctx)->be)
#define OPS(ctx) ((ctx)->be->ops)

static size_t sz(long long v) { return (size_t)v; }

static seqcl_status chk_attn(seqcl_ctx *ctx, const char *op, const sq_attn_args *a,
                             const int32_t *lens_host, const int32_t *mask_host) {
  SQ_CHK(sq_chk_ctx(ctx, op));
  if (!a) return sq_fail(ctx, SEQCL_ERR_INVALID_ARGUMENT, "%s: args is NULL", op);
  if (a->kind < SQ_SCORE_ADDITIVE || a->kind > SQ_SCORE_SCALED_DOT)
    return sq_fail(ctx, SEQCL_ERR_INVALID_ARGUMENT, "%s: unknown score kind %d", op, (int)a->kind);
  const int additive = a->kind == SQ_SCORE_ADDITIVE;
  SQ_CHK_DIMS(ctx, op, {"N", a->N}, {"S", a->S}, {"He", a->He});
  if (additive) SQ_CHK(sq_chk_dim(ctx, op, "A", a->A));
  if (!isfinite(a->scale))
    return sq_fail(ctx, SEQCL_ERR_INVALID_ARGUMENT, "%s: scale is not finite", op);
  if (a->group < 0 || a->N % sq_attn_group(a))
    return sq_fail(ctx, SEQCL_ERR_INVALID_ARGUMENT,
                   "%s: group %d does not divide the %d rows into sources", op, a->group, a->N);
  /* keys, pkeys, lens and mask: one per source, n_src of them */
  const int n_src = a->N / sq_attn_group(a);
  const size_t N = sz(n_src), S = sz(a->S), He = sz(a->He);
  const int qdim = additive ? a->A : a->He;
  SQ_CHK(sq_chk_mat(ctx, op, "qp", a->qp, "ld_qp", a->N, a->ld_qp, qdim, 1));
  SQ_CHK(sq_chk_ref(ctx, op, "keys", a->keys, sq_mul_sat(sq_mul_sat(N, S), He), 1));
  if (additive) {
    SQ_CHK(sq_chk_ref(ctx, op, "pkeys", a->pkeys, sq_mul_sat(sq_mul_sat(N, S), sz(a->A)), 1));
    SQ_CHK(sq_chk_ref(ctx, op, "v", a->v, sz(a->A), 1));
    SQ_CHK(sq_chk_ref(ctx, op, "bv", a->bv, 1, 0));
  }
  SQ_CHK(sq_chk_ref(ctx, op, "lens", a->lens, N, 1));
  SQ_CHK(sq_chk_lens(ctx, op, lens_host, n_src, a->S));
  return sq_chk_mask(ctx, op, a->mask, mask_host, lens_host, n_src, a->S);
}

/* The training slots read keys row by row. */
static seqcl_status chk_one_source_per_row(seqcl_ctx *ctx, const char *op, const sq_attn_args *a) {
  if (a && sq_attn_group(a) != 1)
    return sq_fail(ctx, SEQCL_ERR_UNSUPPORTED, "%s: group %d: training attends one source per row",
                   op, a->group);
  return SEQCL_OK;
}

seqcl_status sq_attn_scores(seqcl_ctx *ctx, const sq_attn_args *a, const int32_t *lens_host,
                            const int32_t *mask_host, sq_ref scores) {
  static const char op[] = "sq_attn_scores";
  SQ_CHK(chk_attn(ctx, op, a, lens_host, mask_host));
  SQ_CHK(sq_chk_ref(ctx, op, "scores", scores, sq_mul_sat(sz(a->N), sz(a->S)), 1));
  return OPS(ctx)->attn_scores(BE(ctx), a, scores);
}

seqcl_status sq_masked_softmax(seqcl_ctx *ctx, int N, int S, sq_ref x, sq_ref lens,
                               const int32_t *lens_host, sq_ref mask, const int32_t *mask_host,
                               sq_ref y) {
  static const char op[] = "sq_masked_softmax";
  SQ_CHK_DIMS(ctx, op, {"N", N}, {"S", S});
  size_t NS = sq_mul_sat(sz(N), sz(S));
  SQ_CHK(sq_chk_ref(ctx, op, "x", x, NS, 1));
  SQ_CHK(sq_chk_ref(ctx, op, "y", y, NS, 1));
  SQ_CHK(sq_chk_ref(ctx, op, "lens", lens, sz(N), 1));
  SQ_CHK(sq_chk_lens(ctx, op, lens_host, N, S));
  SQ_CHK(sq_chk_mask(ctx, op, mask, mask_host, lens_host, N, S));
  return OPS(ctx)->masked_softmax(BE(ctx), N, S, x, lens, mask, y);
}

seqcl_status sq_context(seqcl_ctx *ctx, int N, int S, int He, sq_ref alpha, sq_ref keys, sq_ref c,
                        int ld_c) {
  static const char op[] = "sq_context";
  SQ_CHK_DIMS(ctx, op, {"N", N}, {"S", S}, {"He", He});
  SQ_CHK(sq_chk_ld(ctx, op, "ld_c", ld_c, He));
  SQ_CHK(sq_chk_ref(ctx, op, "alpha", alpha, sq_mul_sat(sz(N), sz(S)), 1));
  SQ_CHK(sq_chk_ref(ctx, op, "keys", keys, sq_mul_sat(sq_mul_sat(sz(N), sz(S)), sz(He)), 1));
  SQ_CHK(sq_chk_ref(ctx, op, "c", c, sq_span2(sz(N), sz(ld_c), sz(He)), 1));
  return OPS(ctx)->context(BE(ctx), N, S, He, alpha, keys, c, ld_c);
}

seqcl_status sq_attn_fused(seqcl_ctx *ctx, const sq_attn_args *a, const int32_t *lens_host,
                           const int32_t *mask_host, sq_ref c, int ld_c, sq_ref alpha) {
  static const char op[] = "sq_attn_fused";
  SQ_CHK(chk_attn(ctx, op, a, lens_host, mask_host));
  SQ_CHK(sq_chk_mat(ctx, op, "c", c, "ld_c", a->N, ld_c, a->He, 1));
  SQ_CHK(sq_chk_ref(ctx, op, "alpha", alpha, sq_mul_sat(sz(a->N), sz(a->S)), 0));
  return OPS(ctx)->attn_fused(BE(ctx), a, c, ld_c, alpha);
}

seqcl_status sq_attn_fwd(seqcl_ctx *ctx, const sq_attn_args *a, sq_ref u, sq_ref c, int ld_c,
                         sq_ref alpha) {
  SQ_TRAIN_SLOT(ctx, attn_fwd);
  SQ_CHK(chk_one_source_per_row(ctx, "sq_attn_fwd", a));
  return OPS(ctx)->attn_fwd(ctx->be, a, u, c, ld_c, alpha);
}

seqcl_status sq_attn_bwd(seqcl_ctx *ctx, const sq_attn_args *a, sq_ref alpha, sq_ref u, sq_ref dc,
                         int ld_dc, sq_ref dqp, int ld_dqp, sq_ref dkeys, sq_ref dpkeys,
                         sq_ref dv, sq_ref dbv) {
  SQ_TRAIN_SLOT(ctx, attn_bwd);
  SQ_CHK(chk_one_source_per_row(ctx, "sq_attn_bwd", a));
  return OPS(ctx)->attn_bwd(ctx->be, a, alpha, u, dc, ld_dc, dqp, ld_dqp, dkeys, dpkeys, dv, dbv);
}
