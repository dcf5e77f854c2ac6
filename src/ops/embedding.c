/* Fronts of the embedding family: the row gather and its backward. */
#include "core/error.h"
#include "ops/ops.h"
#include "ops/ops_check.h"

#define BE(ctx) ((ctx)->be)
#define OPS(ctx) ((ctx)->be->ops)

static size_t sz(long long v) { return (size_t)v; }

static seqcl_status chk_embedding(seqcl_ctx *ctx, const char *op, int N, int D, int V,
                                  sq_ref ids, sq_ref table, sq_ref out, int ld_out) {
  SQ_CHK_DIMS(ctx, op, {"N", N}, {"D", D}, {"V", V});
  SQ_CHK(sq_chk_ld(ctx, op, "ld_out", ld_out, D));
  SQ_CHK(sq_chk_ref(ctx, op, "ids", ids, sz(N), 1));
  SQ_CHK(sq_chk_ref(ctx, op, "table", table, sq_mul_sat(sz(V), sz(D)), 1));
  return sq_chk_ref(ctx, op, "out", out, sq_span2(sz(N), sz(ld_out), sz(D)), 1);
}

seqcl_status sq_embedding(seqcl_ctx *ctx, int N, int D, int V, sq_ref ids, const int32_t *ids_host,
                          sq_ref table, sq_ref out, int ld_out) {
  static const char op[] = "sq_embedding";
  SQ_CHK(chk_embedding(ctx, op, N, D, V, ids, table, out, ld_out));
  if (!ids_host)
    return sq_fail(ctx, SEQCL_ERR_INVALID_ARGUMENT, "%s: ids_host (the host copy of ids) is required",
                   op);
  for (int n = 0; n < N; n++)
    if (ids_host[n] < 0 || ids_host[n] >= V)
      return sq_fail(ctx, SEQCL_ERR_INVALID_ARGUMENT, "%s: ids[%d] = %d is outside [0, %d)", op, n,
                     (int)ids_host[n], V);
  return OPS(ctx)->embedding(BE(ctx), N, D, ids, table, out, ld_out);
}

seqcl_status sq_embedding_device_ids(seqcl_ctx *ctx, int N, int D, int V, sq_ref ids, sq_ref table,
                                     sq_ref out, int ld_out) {
  SQ_CHK(chk_embedding(ctx, "sq_embedding_device_ids", N, D, V, ids, table, out, ld_out));
  return OPS(ctx)->embedding(BE(ctx), N, D, ids, table, out, ld_out);
}

seqcl_status sq_embedding_bwd(seqcl_ctx *ctx, int N, int D, sq_ref ids, sq_ref dy, int ld_dy,
                              int pad_id, sq_ref dtable) {
  SQ_TRAIN_SLOT(ctx, embedding_bwd);
  return OPS(ctx)->embedding_bwd(ctx->be, N, D, ids, dy, ld_dy, pad_id, dtable);
}
