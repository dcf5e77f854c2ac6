/* Fronts of the gru family: one gate step, the training step that keeps its
 * gates and its backward, and the cell and layer built from the backend
 * table only (gemm + gru_gates), so they run
 * unchanged on every backend. The layer follows cuDNN and Marian: the
 * input-side product of all time steps is one GEMM, and each step costs one
 * recurrent GEMM plus one fused gate launch. */
#include <limits.h>

#include "core/error.h"
#include "ops/ops.h"
#include "ops/ops_check.h"

static size_t sz(long long v) { return (size_t)v; }

#define BE(ctx) ((ctx)->be)
#define OPS(ctx) ((ctx)->be->ops)

seqcl_status sq_gru_gates(seqcl_ctx *ctx, const sq_gru_args *g, const int32_t *lens_host) {
  static const char op[] = "sq_gru_gates";
  SQ_CHK(sq_chk_ctx(ctx, op));
  if (!g) return sq_fail(ctx, SEQCL_ERR_INVALID_ARGUMENT, "%s: args is NULL", op);
  SQ_CHK_DIMS(ctx, op, {"N", g->N}, {"H", g->H});
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

/* Two element ranges [a, a+na) and [b, b+nb) in one buffer share an element. */
static int overlap(sq_ref a, size_t na, sq_ref b, size_t nb) {
  return a.buf && a.buf == b.buf && na && nb && a.off < b.off + nb && b.off < a.off + na;
}

static seqcl_status chk_no_overlap(seqcl_ctx *ctx, const char *op, sq_ref ws, size_t nws,
                                   const char *name, sq_ref r, size_t nr) {
  if (overlap(ws, nws, r, nr))
    return sq_fail(ctx, SEQCL_ERR_INVALID_ARGUMENT, "%s: ws overlaps %s in the same buffer", op,
                   name);
  return SEQCL_OK;
}

static seqcl_status chk_weights(seqcl_ctx *ctx, const char *op, int In, int H, sq_ref W_ih,
                                sq_ref W_hh, sq_ref b_ih, sq_ref b_hh) {
  const size_t H3 = 3 * sz(H);
  SQ_CHK(sq_chk_ref(ctx, op, "W_ih", W_ih, sq_mul_sat(H3, sz(In)), 1));
  SQ_CHK(sq_chk_ref(ctx, op, "W_hh", W_hh, sq_mul_sat(H3, sz(H)), 1));
  SQ_CHK(sq_chk_ref(ctx, op, "b_ih", b_ih, H3, 0));
  SQ_CHK(sq_chk_ref(ctx, op, "b_hh", b_hh, H3, 0));
  return SEQCL_OK;
}

seqcl_status sq_gru_cell(seqcl_ctx *ctx, int N, int In, int H, sq_ref x, int ldx, sq_ref W_ih,
                         sq_ref W_hh, sq_ref b_ih, sq_ref b_hh, sq_ref h, sq_ref ws) {
  static const char op[] = "sq_gru_cell";
  SQ_CHK_DIMS(ctx, op, {"N", N}, {"In", In}, {"H", H});
  if (H > INT_MAX / 3)
    return sq_fail(ctx, SEQCL_ERR_SHAPE, "%s: H = %d is too large (3H overflows int)", op, H);
  SQ_CHK(sq_chk_ld(ctx, op, "ldx", ldx, In));
  const size_t H3 = 3 * sz(H), NH = sq_mul_sat(sz(N), sz(H));
  const size_t nx = sq_span2(sz(N), sz(ldx), sz(In)), nws = sq_mul_sat(NH, 6);
  SQ_CHK(sq_chk_ref(ctx, op, "x", x, nx, 1));
  SQ_CHK(chk_weights(ctx, op, In, H, W_ih, W_hh, b_ih, b_hh));
  SQ_CHK(sq_chk_ref(ctx, op, "h", h, NH, 1));
  SQ_CHK(sq_chk_ref(ctx, op, "ws", ws, nws, 1));
  SQ_CHK(chk_no_overlap(ctx, op, ws, nws, "x", x, nx));
  SQ_CHK(chk_no_overlap(ctx, op, ws, nws, "h", h, NH));

  sq_backend *be = ctx->be;
  const int h3 = 3 * H;
  sq_ref gi = ws, gh = sq_ref_add(ws, sq_mul_sat(NH, 3));
  SQ_TRY(be->ops->gemm(be, 0, 1, N, h3, In, 1.0f, x, ldx, 0, W_ih, In, 0, 0.0f, gi, h3, 0, 1));
  SQ_TRY(be->ops->gemm(be, 0, 1, N, h3, H, 1.0f, h, H, 0, W_hh, H, 0, 0.0f, gh, h3, 0, 1));
  sq_gru_args g = {.N = N, .H = H, .gi = gi, .gi_sn = H3, .gi_st = 0, .gh = gh, .ld_gh = h3,
                   .b_ih = b_ih, .b_hh = b_hh, .h = h, .out = sq_none(), .lens = sq_none(),
                   .step = 0, .reverse = 0};
  return be->ops->gru_gates(be, &g);
}

seqcl_status sq_gru_layer(seqcl_ctx *ctx, int N, int T, int In, int H, sq_ref x, sq_ref W_ih,
                          sq_ref W_hh, sq_ref b_ih, sq_ref b_hh, sq_ref lens,
                          const int32_t *lens_host, int reverse, sq_ref h, sq_ref out,
                          int out_width, int out_col, sq_ref ws) {
  static const char op[] = "sq_gru_layer";
  SQ_CHK_DIMS(ctx, op, {"N", N}, {"T", T}, {"In", In}, {"H", H});
  if (H > INT_MAX / 3 || (long long)N * T > INT_MAX)
    return sq_fail(ctx, SEQCL_ERR_SHAPE, "%s: N = %d, T = %d, H = %d overflow int GEMM sizes", op,
                   N, T, H);
  const size_t NT = sz(N) * sz(T), H3 = 3 * sz(H), NH = sq_mul_sat(sz(N), sz(H));
  const size_t nx = sq_mul_sat(NT, sz(In));
  const size_t nws = sq_add_sat(sq_mul_sat(NT, H3), sq_mul_sat(sz(N), H3));
  SQ_CHK(sq_chk_ref(ctx, op, "x", x, nx, 1));
  SQ_CHK(chk_weights(ctx, op, In, H, W_ih, W_hh, b_ih, b_hh));
  if (!lens.buf != !lens_host)
    return sq_fail(ctx, SEQCL_ERR_INVALID_ARGUMENT,
                   "%s: lens and lens_host must be given together (lens %s, lens_host %s)", op,
                   lens.buf ? "given" : "absent", lens_host ? "given" : "absent");
  if (lens_host) {
    SQ_CHK(sq_chk_ref(ctx, op, "lens", lens, sz(N), 1));
    SQ_CHK(sq_chk_lens(ctx, op, lens_host, N, T));
  }
  SQ_CHK(sq_chk_ref(ctx, op, "h", h, NH, 1));
  size_t nout = 0;
  if (out.buf) {
    if (out_col < 0 || out_width < 1 || (long long)out_col + H > out_width)
      return sq_fail(ctx, SEQCL_ERR_SHAPE,
                     "%s: columns [%d, %d + H) with H = %d do not fit out_width = %d", op, out_col,
                     out_col, H, out_width);
    nout = sq_mul_sat(NT, sz(out_width));
    SQ_CHK(sq_chk_ref(ctx, op, "out", out, nout, 1));
  }
  SQ_CHK(sq_chk_ref(ctx, op, "ws", ws, nws, 1));
  SQ_CHK(chk_no_overlap(ctx, op, ws, nws, "x", x, nx));
  SQ_CHK(chk_no_overlap(ctx, op, ws, nws, "h", h, NH));
  SQ_CHK(chk_no_overlap(ctx, op, ws, nws, "out", out, nout));

  sq_backend *be = ctx->be;
  const int h3 = 3 * H;
  sq_ref gi = ws, gh = sq_ref_add(ws, NT * H3);
  /* gi[n, t, :] = W_ih x[n, t, :] for every step at once. */
  SQ_TRY(be->ops->gemm(be, 0, 1, N * T, h3, In, 1.0f, x, In, 0, W_ih, In, 0, 0.0f, gi, h3, 0, 1));
  int steps = T;
  if (lens_host) {
    steps = 0;
    for (int n = 0; n < N; n++) steps = lens_host[n] > steps ? lens_host[n] : steps;
  }
  const sq_ref out_at = out.buf ? sq_ref_add(out, sz(out_col)) : sq_none();
  for (int s = 0; s < steps; s++) {
    SQ_TRY(be->ops->gemm(be, 0, 1, N, h3, H, 1.0f, h, H, 0, W_hh, H, 0, 0.0f, gh, h3, 0, 1));
    sq_gru_args g = {.N = N, .H = H, .gi = gi, .gi_sn = sz(T) * H3, .gi_st = H3, .gh = gh,
                     .ld_gh = h3, .b_ih = b_ih, .b_hh = b_hh, .h = h, .out = out_at,
                     .out_sn = sz(T) * sz(out_width), .out_st = sz(out_width), .lens = lens,
                     .step = s, .reverse = reverse != 0};
    if (!lens_host) {
      /* Every row runs all T steps: point the refs at this step's time index
       * and let the gates read index 0 (the gates slot takes its reverse time
       * index from lens). */
      size_t t = reverse ? sz(T - 1 - s) : sz(s);
      g.gi = sq_ref_add(gi, t * H3);
      g.gi_st = 0;
      if (out.buf) g.out = sq_ref_add(out_at, t * sz(out_width));
      g.out_st = 0;
      g.step = 0;
      g.reverse = 0;
    }
    SQ_TRY(be->ops->gru_gates(be, &g));
  }
  return SEQCL_OK;
}

seqcl_status sq_gru_fwd(seqcl_ctx *ctx, const sq_gru_args *g, sq_ref saved, size_t sv_sn,
                        size_t sv_st) {
  SQ_TRAIN_SLOT(ctx, gru_fwd);
  return OPS(ctx)->gru_fwd(ctx->be, g, saved, sv_sn, sv_st);
}

seqcl_status sq_gru_gates_bwd(seqcl_ctx *ctx, const sq_gru_bwd_args *g) {
  SQ_TRAIN_SLOT(ctx, gru_gates_bwd);
  return OPS(ctx)->gru_gates_bwd(ctx->be, g);
}
