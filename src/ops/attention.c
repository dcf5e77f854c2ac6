/* The op fronts: validate, then call the context's backend table. Every check
 * names the op and the argument (see ops_check.h for which status each
 * failure gets). The GRU fronts live in gru.c. */
#include <math.h>

#include "core/error.h"
#include "ops/ops.h"
#include "ops/ops_check.h"

#define BE(ctx) ((ctx)->be)
#define OPS(ctx) ((ctx)->be->ops)

static size_t sz(long long v) { return (size_t)v; }

/* ---- memory ---- */

seqcl_status sq_buf_alloc(seqcl_ctx *ctx, size_t bytes, sq_buf **out) {
  static const char op[] = "sq_buf_alloc";
  if (!out) return sq_fail(ctx, SEQCL_ERR_INVALID_ARGUMENT, "%s: out is NULL", op);
  *out = NULL;
  SQ_CHK(sq_chk_ctx(ctx, op));
  if (bytes == 0) return sq_fail(ctx, SEQCL_ERR_INVALID_ARGUMENT, "%s: bytes is 0", op);
  return OPS(ctx)->buf_alloc(BE(ctx), bytes, out);
}

void sq_buf_free(sq_buf *buf) {
  if (buf) buf->be->ops->buf_free(buf->be, buf);
}

seqcl_status sq_write(seqcl_ctx *ctx, sq_ref dst, const void *src, size_t bytes) {
  static const char op[] = "sq_write";
  SQ_CHK(sq_chk_ctx(ctx, op));
  if (!src && bytes) return sq_fail(ctx, SEQCL_ERR_INVALID_ARGUMENT, "%s: src is NULL", op);
  SQ_CHK(sq_chk_bytes(ctx, op, "dst", dst, bytes));
  if (!bytes) return SEQCL_OK;
  return OPS(ctx)->write(BE(ctx), dst, src, bytes);
}

seqcl_status sq_read(seqcl_ctx *ctx, sq_ref src, void *dst, size_t bytes) {
  static const char op[] = "sq_read";
  SQ_CHK(sq_chk_ctx(ctx, op));
  if (!dst && bytes) return sq_fail(ctx, SEQCL_ERR_INVALID_ARGUMENT, "%s: dst is NULL", op);
  SQ_CHK(sq_chk_bytes(ctx, op, "src", src, bytes));
  if (!bytes) return SEQCL_OK;
  return OPS(ctx)->read(BE(ctx), src, dst, bytes);
}

seqcl_status sq_copy(seqcl_ctx *ctx, sq_ref dst, sq_ref src, size_t count) {
  static const char op[] = "sq_copy";
  SQ_CHK(sq_chk_ctx(ctx, op));
  SQ_CHK(sq_chk_ref(ctx, op, "dst", dst, count, 1));
  SQ_CHK(sq_chk_ref(ctx, op, "src", src, count, 1));
  /* OpenCL forbids overlapping copies (CL_MEM_COPY_OVERLAP): refuse them everywhere. */
  if (dst.buf == src.buf && dst.off < src.off + count && src.off < dst.off + count &&
      dst.off != src.off)
    return sq_fail(ctx, SEQCL_ERR_INVALID_ARGUMENT,
                   "%s: dst [%zu, +%zu) and src [%zu, +%zu) overlap in one buffer", op, dst.off,
                   count, src.off, count);
  if (!count || (dst.off == src.off && dst.buf == src.buf)) return SEQCL_OK;
  return OPS(ctx)->copy(BE(ctx), dst, src, count);
}

seqcl_status sq_fill(seqcl_ctx *ctx, sq_ref dst, size_t count, float value) {
  static const char op[] = "sq_fill";
  SQ_CHK(sq_chk_ctx(ctx, op));
  SQ_CHK(sq_chk_ref(ctx, op, "dst", dst, count, 1));
  if (!count) return SEQCL_OK;
  return OPS(ctx)->fill(BE(ctx), dst, count, value);
}

seqcl_status sq_fill_i32(seqcl_ctx *ctx, sq_ref dst, size_t count, int32_t value) {
  static const char op[] = "sq_fill_i32";
  SQ_CHK(sq_chk_ctx(ctx, op));
  SQ_CHK(sq_chk_ref(ctx, op, "dst", dst, count, 1));
  if (!count) return SEQCL_OK;
  return OPS(ctx)->fill_i32(BE(ctx), dst, count, value);
}

seqcl_status sq_finish(seqcl_ctx *ctx) {
  SQ_CHK(sq_chk_ctx(ctx, "sq_finish"));
  return OPS(ctx)->finish(BE(ctx));
}

/* ---- dense ---- */

seqcl_status sq_gemm(seqcl_ctx *ctx, int ta, int tb, int M, int N, int K, float alpha, sq_ref A,
                     int lda, size_t sa, sq_ref B, int ldb, size_t sb, float beta, sq_ref C, int ldc,
                     size_t sc, int batch) {
  static const char op[] = "sq_gemm";
  SQ_CHK(sq_chk_ctx(ctx, op));
  SQ_CHK(sq_chk_dim(ctx, op, "M", M));
  SQ_CHK(sq_chk_dim(ctx, op, "N", N));
  SQ_CHK(sq_chk_dim(ctx, op, "K", K));
  SQ_CHK(sq_chk_dim(ctx, op, "batch", batch));
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
  SQ_CHK(sq_chk_ctx(ctx, op));
  SQ_CHK(sq_chk_dim(ctx, op, "rows", rows));
  SQ_CHK(sq_chk_dim(ctx, op, "in", in));
  SQ_CHK(sq_chk_dim(ctx, op, "out", out));
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
  SQ_CHK(sq_chk_ctx(ctx, op));
  SQ_CHK(sq_chk_dim(ctx, op, "rows", rows));
  SQ_CHK(sq_chk_dim(ctx, op, "cols", cols));
  SQ_CHK(sq_chk_ld(ctx, op, "ld", ld, cols));
  SQ_CHK(sq_chk_ref(ctx, op, "y", y, sq_span2(sz(rows), sz(ld), sz(cols)), 1));
  SQ_CHK(sq_chk_ref(ctx, op, "bias", bias, sz(cols), 1));
  return OPS(ctx)->add_bias(BE(ctx), rows, cols, y, ld, bias);
}

/* ---- attention ---- */

static seqcl_status chk_attn(seqcl_ctx *ctx, const char *op, const sq_attn_args *a,
                             const int32_t *lens_host, const int32_t *mask_host) {
  SQ_CHK(sq_chk_ctx(ctx, op));
  if (!a) return sq_fail(ctx, SEQCL_ERR_INVALID_ARGUMENT, "%s: args is NULL", op);
  if (a->kind < SQ_SCORE_ADDITIVE || a->kind > SQ_SCORE_SCALED_DOT)
    return sq_fail(ctx, SEQCL_ERR_INVALID_ARGUMENT, "%s: unknown score kind %d", op, (int)a->kind);
  const int additive = a->kind == SQ_SCORE_ADDITIVE;
  SQ_CHK(sq_chk_dim(ctx, op, "N", a->N));
  SQ_CHK(sq_chk_dim(ctx, op, "S", a->S));
  SQ_CHK(sq_chk_dim(ctx, op, "He", a->He));
  if (additive) SQ_CHK(sq_chk_dim(ctx, op, "A", a->A));
  if (!isfinite(a->scale))
    return sq_fail(ctx, SEQCL_ERR_INVALID_ARGUMENT, "%s: scale is not finite", op);
  const size_t N = sz(a->N), S = sz(a->S), He = sz(a->He);
  const int qdim = additive ? a->A : a->He;
  SQ_CHK(sq_chk_ld(ctx, op, "ld_qp", a->ld_qp, qdim));
  SQ_CHK(sq_chk_ref(ctx, op, "qp", a->qp, sq_span2(N, sz(a->ld_qp), sz(qdim)), 1));
  SQ_CHK(sq_chk_ref(ctx, op, "keys", a->keys, sq_mul_sat(sq_mul_sat(N, S), He), 1));
  if (additive) {
    SQ_CHK(sq_chk_ref(ctx, op, "pkeys", a->pkeys, sq_mul_sat(sq_mul_sat(N, S), sz(a->A)), 1));
    SQ_CHK(sq_chk_ref(ctx, op, "v", a->v, sz(a->A), 1));
    SQ_CHK(sq_chk_ref(ctx, op, "bv", a->bv, 1, 0));
  }
  SQ_CHK(sq_chk_ref(ctx, op, "lens", a->lens, N, 1));
  SQ_CHK(sq_chk_lens(ctx, op, lens_host, a->N, a->S));
  return sq_chk_mask(ctx, op, a->mask, mask_host, lens_host, a->N, a->S);
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
  SQ_CHK(sq_chk_ctx(ctx, op));
  SQ_CHK(sq_chk_dim(ctx, op, "N", N));
  SQ_CHK(sq_chk_dim(ctx, op, "S", S));
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
  SQ_CHK(sq_chk_ctx(ctx, op));
  SQ_CHK(sq_chk_dim(ctx, op, "N", N));
  SQ_CHK(sq_chk_dim(ctx, op, "S", S));
  SQ_CHK(sq_chk_dim(ctx, op, "He", He));
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
  SQ_CHK(sq_chk_ld(ctx, op, "ld_c", ld_c, a->He));
  SQ_CHK(sq_chk_ref(ctx, op, "c", c, sq_span2(sz(a->N), sz(ld_c), sz(a->He)), 1));
  SQ_CHK(sq_chk_ref(ctx, op, "alpha", alpha, sq_mul_sat(sz(a->N), sz(a->S)), 0));
  return OPS(ctx)->attn_fused(BE(ctx), a, c, ld_c, alpha);
}

/* ---- GRU step ---- */

seqcl_status sq_gru_gates(seqcl_ctx *ctx, const sq_gru_args *g, const int32_t *lens_host) {
  static const char op[] = "sq_gru_gates";
  SQ_CHK(sq_chk_ctx(ctx, op));
  if (!g) return sq_fail(ctx, SEQCL_ERR_INVALID_ARGUMENT, "%s: args is NULL", op);
  SQ_CHK(sq_chk_dim(ctx, op, "N", g->N));
  SQ_CHK(sq_chk_dim(ctx, op, "H", g->H));
  if (g->step < 0)
    return sq_fail(ctx, SEQCL_ERR_INVALID_ARGUMENT, "%s: step = %d is negative", op, g->step);
  if (!g->lens.buf != !lens_host)
    return sq_fail(ctx, SEQCL_ERR_INVALID_ARGUMENT,
                   "%s: lens and lens_host must be given together (lens %s, lens_host %s)", op,
                   g->lens.buf ? "given" : "absent", lens_host ? "given" : "absent");
  if (g->reverse && !lens_host)
    return sq_fail(ctx, SEQCL_ERR_INVALID_ARGUMENT,
                   "%s: the reverse direction needs lens (its time index is lens[n] - 1 - step)",
                   op);
  const size_t N = sz(g->N), H = sz(g->H), H3 = 3 * H;
  SQ_CHK(sq_chk_ld(ctx, op, "ld_gh", g->ld_gh, (long long)H3));
  if (lens_host) {
    SQ_CHK(sq_chk_ref(ctx, op, "lens", g->lens, N, 1));
    SQ_CHK(sq_chk_lens(ctx, op, lens_host, g->N, 0));
  }
  /* The furthest element of gi and out any active row touches at this step. */
  size_t gi_end = 0, out_end = 0;
  for (size_t n = 0; n < N; n++) {
    if (lens_host && g->step >= lens_host[n]) continue;
    size_t t = sz(g->step);
    if (lens_host && g->reverse) t = sz(lens_host[n] - 1 - g->step);
    size_t gi_at = sq_add_sat(sq_mul_sat(n, g->gi_sn), sq_mul_sat(t, g->gi_st));
    size_t out_at = sq_add_sat(sq_mul_sat(n, g->out_sn), sq_mul_sat(t, g->out_st));
    if (sq_add_sat(gi_at, H3) > gi_end) gi_end = sq_add_sat(gi_at, H3);
    if (sq_add_sat(out_at, H) > out_end) out_end = sq_add_sat(out_at, H);
  }
  SQ_CHK(sq_chk_ref(ctx, op, "gi", g->gi, gi_end, 1));
  SQ_CHK(sq_chk_ref(ctx, op, "gh", g->gh, sq_span2(N, sz(g->ld_gh), H3), 1));
  SQ_CHK(sq_chk_ref(ctx, op, "b_ih", g->b_ih, H3, 0));
  SQ_CHK(sq_chk_ref(ctx, op, "b_hh", g->b_hh, H3, 0));
  SQ_CHK(sq_chk_ref(ctx, op, "h", g->h, sq_mul_sat(N, H), 1));
  SQ_CHK(sq_chk_ref(ctx, op, "out", g->out, out_end, 0));
  if (!gi_end) return SEQCL_OK; /* every row has finished: nothing to do */
  return OPS(ctx)->gru_gates(BE(ctx), g);
}

/* ---- rows ---- */

seqcl_status sq_embedding(seqcl_ctx *ctx, int N, int D, int V, sq_ref ids, const int32_t *ids_host,
                          sq_ref table, sq_ref out, int ld_out) {
  static const char op[] = "sq_embedding";
  SQ_CHK(sq_chk_ctx(ctx, op));
  SQ_CHK(sq_chk_dim(ctx, op, "N", N));
  SQ_CHK(sq_chk_dim(ctx, op, "D", D));
  SQ_CHK(sq_chk_dim(ctx, op, "V", V));
  SQ_CHK(sq_chk_ld(ctx, op, "ld_out", ld_out, D));
  SQ_CHK(sq_chk_ref(ctx, op, "ids", ids, sz(N), 1));
  SQ_CHK(sq_chk_ref(ctx, op, "table", table, sq_mul_sat(sz(V), sz(D)), 1));
  SQ_CHK(sq_chk_ref(ctx, op, "out", out, sq_span2(sz(N), sz(ld_out), sz(D)), 1));
  if (!ids_host)
    return sq_fail(ctx, SEQCL_ERR_INVALID_ARGUMENT, "%s: ids_host (the host copy of ids) is required",
                   op);
  for (int n = 0; n < N; n++)
    if (ids_host[n] < 0 || ids_host[n] >= V)
      return sq_fail(ctx, SEQCL_ERR_INVALID_ARGUMENT, "%s: ids[%d] = %d is outside [0, %d)", op, n,
                     (int)ids_host[n], V);
  return OPS(ctx)->embedding(BE(ctx), N, D, ids, table, out, ld_out);
}

seqcl_status sq_argmax(seqcl_ctx *ctx, int N, int V, sq_ref x, int ld, sq_ref bias, sq_ref ids) {
  static const char op[] = "sq_argmax";
  SQ_CHK(sq_chk_ctx(ctx, op));
  SQ_CHK(sq_chk_dim(ctx, op, "N", N));
  SQ_CHK(sq_chk_dim(ctx, op, "V", V));
  SQ_CHK(sq_chk_ld(ctx, op, "ld", ld, V));
  SQ_CHK(sq_chk_ref(ctx, op, "x", x, sq_span2(sz(N), sz(ld), sz(V)), 1));
  SQ_CHK(sq_chk_ref(ctx, op, "bias", bias, sz(V), 0));
  SQ_CHK(sq_chk_ref(ctx, op, "ids", ids, sz(N), 1));
  return OPS(ctx)->argmax(BE(ctx), N, V, x, ld, bias, ids);
}

seqcl_status sq_log_softmax(seqcl_ctx *ctx, int N, int V, sq_ref x, sq_ref y) {
  static const char op[] = "sq_log_softmax";
  SQ_CHK(sq_chk_ctx(ctx, op));
  SQ_CHK(sq_chk_dim(ctx, op, "N", N));
  SQ_CHK(sq_chk_dim(ctx, op, "V", V));
  size_t NV = sq_mul_sat(sz(N), sz(V));
  SQ_CHK(sq_chk_ref(ctx, op, "x", x, NV, 1));
  SQ_CHK(sq_chk_ref(ctx, op, "y", y, NV, 1));
  return OPS(ctx)->log_softmax(BE(ctx), N, V, x, y);
}

seqcl_status sq_cross_entropy(seqcl_ctx *ctx, int N, int V, sq_ref x, sq_ref labels,
                              const int32_t *labels_host, sq_ref loss) {
  static const char op[] = "sq_cross_entropy";
  SQ_CHK(sq_chk_ctx(ctx, op));
  SQ_CHK(sq_chk_dim(ctx, op, "N", N));
  SQ_CHK(sq_chk_dim(ctx, op, "V", V));
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
