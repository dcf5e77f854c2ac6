/* Timings of single operations through the backend table (bench.h). */
#include <stdlib.h>
#include <string.h>

#include "bench/bench.h"
#include "core/ctx.h"
#include "core/error.h"
#include "ops/ops.h"

enum { MAX_REPS = 64 };

void sq_bench_counters(seqcl_ctx *ctx, sq_bench_counts *out) {
  memset(out, 0, sizeof *out);
  if (ctx->be->ops->counters) ctx->be->ops->counters(ctx->be, out);
}

/* Fills a buffer with small nonzero values (never zeros, never NaN). */
static seqcl_status fill_random(seqcl_ctx *ctx, sq_buf *b, size_t count, unsigned seed) {
  float *v = malloc((count ? count : 1) * sizeof(float));
  if (!v) return sq_fail(ctx, SEQCL_ERR_OUT_OF_MEMORY, "bench: out of host memory");
  uint32_t s = 2463534242u ^ seed;
  for (size_t i = 0; i < count; i++) {
    s ^= s << 13;
    s ^= s >> 17;
    s ^= s << 5;
    v[i] = ((float)(s >> 8) / 16777216.0f) * 1.8f - 0.9f + 0.05f;
  }
  seqcl_status st = sq_write(ctx, sq_at(b, 0), v, count * sizeof(float));
  free(v);
  return st;
}

/* The op under test, called `inner` times per repetition. */
typedef seqcl_status (*op_fn)(seqcl_ctx *ctx, void *arg);

/* A repetition lasts at least this long: a 4 MB copy takes about 40 us, and
 * two of them per repetition made the batch-1 grid's bandwidth ceiling move
 * between 110 and 205 GB/s from one point to the next (the same model's
 * weights). The calls per repetition never exceed MAX_INNER. */
#define MIN_REP_SECONDS 2e-3
enum { MAX_INNER = 4096 };

static seqcl_status time_op(seqcl_ctx *ctx, op_fn fn, void *arg, int inner, int reps,
                            double *seconds) {
  if (reps < 1) reps = 1;
  if (reps > MAX_REPS) reps = MAX_REPS;
  double t[MAX_REPS];
  SQ_TRY(fn(ctx, arg)); /* warm-up: builds programs, tunes nothing */
  SQ_TRY(sq_finish(ctx));
  const double t0 = sq_bench_now();
  SQ_TRY(fn(ctx, arg)); /* one call's time sizes the repetitions */
  SQ_TRY(sq_finish(ctx));
  const double one = sq_bench_now() - t0;
  while (inner < MAX_INNER && one * inner < MIN_REP_SECONDS) inner *= 2;
  for (int r = 0; r < reps; r++) {
    double t0 = sq_bench_now();
    for (int i = 0; i < inner; i++) SQ_TRY(fn(ctx, arg));
    SQ_TRY(sq_finish(ctx));
    t[r] = (sq_bench_now() - t0) / inner;
  }
  *seconds = sq_bench_median(t, reps);
  return SEQCL_OK;
}

/* ---- copy ---- */
typedef struct copy_arg {
  sq_buf *src, *dst;
  size_t bytes;
} copy_arg;

static seqcl_status copy_op(seqcl_ctx *ctx, void *p) {
  copy_arg *a = p;
  sq_backend *be = ctx->be;
  /* the backend's own streaming kernel where it has one; else its copy slot
   * (the host's: split across the host threads, as its kernels are) */
  if (be->ops->stream_copy)
    return be->ops->stream_copy(be, sq_at(a->dst, 0), sq_at(a->src, 0), a->bytes / 4);
  return sq_copy(ctx, sq_at(a->dst, 0), sq_at(a->src, 0), a->bytes / 4);
}

seqcl_status sq_bench_copy(seqcl_ctx *ctx, size_t bytes, int reps, double *gbps) {
  *gbps = 0;
  bytes = bytes / 16 * 16;
  copy_arg a = {NULL, NULL, bytes};
  double s = 0;
  seqcl_status st = sq_buf_alloc(ctx, bytes, &a.src);
  if (st == SEQCL_OK) st = sq_buf_alloc(ctx, bytes, &a.dst);
  if (st == SEQCL_OK) st = fill_random(ctx, a.src, bytes / 4, 1);
  if (st == SEQCL_OK) st = sq_fill(ctx, sq_at(a.dst, 0), bytes / 4, 0.0f);
  if (st == SEQCL_OK) st = time_op(ctx, copy_op, &a, 2, reps, &s);
  if (st == SEQCL_OK) *gbps = 2.0 * (double)bytes / s / 1e9;
  sq_buf_free(a.src);
  sq_buf_free(a.dst);
  return st;
}

/* ---- GEMM ---- */
typedef struct gemm_arg {
  int M, N, K;
  sq_buf *A, *B, *C;
} gemm_arg;

static seqcl_status gemm_op(seqcl_ctx *ctx, void *p) {
  gemm_arg *g = p;
  return sq_gemm(ctx, 0, 1, g->M, g->N, g->K, 1.0f, sq_at(g->A, 0), g->K, 0, sq_at(g->B, 0), g->K,
                 0, 0.0f, sq_at(g->C, 0), g->N, 0, 1);
}

seqcl_status sq_bench_gemm(seqcl_ctx *ctx, int M, int N, int K, int reps, double *gflops,
                           double *seconds) {
  *gflops = *seconds = 0;
  gemm_arg g = {M, N, K, NULL, NULL, NULL};
  const double flops = 2.0 * M * N * K;
  int inner = flops > 1e9 ? 1 : flops > 1e7 ? 4 : 32;
  seqcl_status st = sq_buf_alloc(ctx, (size_t)M * K * 4, &g.A);
  if (st == SEQCL_OK) st = sq_buf_alloc(ctx, (size_t)N * K * 4, &g.B);
  if (st == SEQCL_OK) st = sq_buf_alloc(ctx, (size_t)M * N * 4, &g.C);
  if (st == SEQCL_OK) st = fill_random(ctx, g.A, (size_t)M * K, 2);
  if (st == SEQCL_OK) st = fill_random(ctx, g.B, (size_t)N * K, 3);
  /* B as a model's weights are (frozen: the host may keep it packed) */
  if (st == SEQCL_OK) sq_buf_freeze(ctx, g.B);
  if (st == SEQCL_OK) st = time_op(ctx, gemm_op, &g, inner, reps, seconds);
  if (st == SEQCL_OK) *gflops = flops / *seconds / 1e9;
  sq_buf_free(g.A);
  sq_buf_free(g.B);
  sq_buf_free(g.C);
  return st;
}

/* ---- fused attention ---- */
typedef struct attn_arg {
  sq_attn_args a;
  int32_t *lens_host;
  sq_buf *c;
} attn_arg;

static seqcl_status attn_op(seqcl_ctx *ctx, void *p) {
  attn_arg *t = p;
  return sq_attn_fused(ctx, &t->a, t->lens_host, NULL, sq_at(t->c, 0), t->a.He, sq_none());
}

seqcl_status sq_bench_attention(seqcl_ctx *ctx, sq_score kind, int N, int S, int He, int reps,
                                double *gbps, double *seconds) {
  *gbps = *seconds = 0;
  const int additive = kind == SQ_SCORE_ADDITIVE, A = He;
  const size_t NS = (size_t)N * S;
  sq_buf *keys = NULL, *pkeys = NULL, *qp = NULL, *v = NULL, *lens = NULL, *c = NULL;
  attn_arg t;
  memset(&t, 0, sizeof t);
  t.lens_host = malloc((size_t)N * sizeof(int32_t));
  seqcl_status st = t.lens_host ? SEQCL_OK
                                : sq_fail(ctx, SEQCL_ERR_OUT_OF_MEMORY, "bench: out of memory");
  for (int i = 0; st == SEQCL_OK && i < N; i++) t.lens_host[i] = S; /* every position valid */
  if (st == SEQCL_OK) st = sq_buf_alloc(ctx, NS * He * 4, &keys);
  if (st == SEQCL_OK && additive) st = sq_buf_alloc(ctx, NS * A * 4, &pkeys);
  if (st == SEQCL_OK) st = sq_buf_alloc(ctx, (size_t)N * (additive ? A : He) * 4, &qp);
  if (st == SEQCL_OK) st = sq_buf_alloc(ctx, (size_t)A * 4, &v);
  if (st == SEQCL_OK) st = sq_buf_alloc(ctx, (size_t)N * 4, &lens);
  if (st == SEQCL_OK) st = sq_buf_alloc(ctx, (size_t)N * He * 4, &c);
  if (st == SEQCL_OK) st = fill_random(ctx, keys, NS * He, 4);
  if (st == SEQCL_OK && additive) st = fill_random(ctx, pkeys, NS * A, 5);
  if (st == SEQCL_OK) st = fill_random(ctx, qp, (size_t)N * (additive ? A : He), 6);
  if (st == SEQCL_OK) st = fill_random(ctx, v, (size_t)A, 7);
  if (st == SEQCL_OK) st = sq_write(ctx, sq_at(lens, 0), t.lens_host, (size_t)N * 4);
  if (st == SEQCL_OK) {
    t.a.kind = kind;
    t.a.N = N;
    t.a.S = S;
    t.a.He = He;
    t.a.A = additive ? A : 0;
    t.a.qp = sq_at(qp, 0);
    t.a.ld_qp = additive ? A : He;
    t.a.keys = sq_at(keys, 0);
    t.a.pkeys = additive ? sq_at(pkeys, 0) : sq_none();
    t.a.v = additive ? sq_at(v, 0) : sq_none();
    t.a.bv = sq_none();
    t.a.scale = 1.0f;
    t.a.lens = sq_at(lens, 0);
    t.a.mask = sq_none();
    t.c = c;
    st = time_op(ctx, attn_op, &t, 2, reps, seconds);
  }
  if (st == SEQCL_OK) {
    double bytes = 4.0 * ((double)NS * He + (additive ? (double)NS * A : 0.0) + 2.0 * N * He);
    *gbps = bytes / *seconds / 1e9;
  }
  free(t.lens_host);
  sq_buf_free(keys);
  sq_buf_free(pkeys);
  sq_buf_free(qp);
  sq_buf_free(v);
  sq_buf_free(lens);
  sq_buf_free(c);
  return st;
}

/* ---- GRU gates ---- */
typedef struct gates_arg {
  sq_gru_args g;
} gates_arg;

static seqcl_status gates_op(seqcl_ctx *ctx, void *p) {
  gates_arg *t = p;
  return sq_gru_gates(ctx, &t->g, NULL);
}

seqcl_status sq_bench_gates(seqcl_ctx *ctx, int N, int H, int reps, double *gbps,
                            double *seconds) {
  *gbps = *seconds = 0;
  const size_t NH = (size_t)N * H;
  sq_buf *gi = NULL, *gh = NULL, *b = NULL, *h = NULL;
  seqcl_status st = sq_buf_alloc(ctx, 3 * NH * 4, &gi);
  if (st == SEQCL_OK) st = sq_buf_alloc(ctx, 3 * NH * 4, &gh);
  if (st == SEQCL_OK) st = sq_buf_alloc(ctx, 6 * (size_t)H * 4, &b);
  if (st == SEQCL_OK) st = sq_buf_alloc(ctx, NH * 4, &h);
  if (st == SEQCL_OK) st = fill_random(ctx, gi, 3 * NH, 8);
  if (st == SEQCL_OK) st = fill_random(ctx, gh, 3 * NH, 9);
  if (st == SEQCL_OK) st = fill_random(ctx, b, 6 * (size_t)H, 10);
  if (st == SEQCL_OK) st = fill_random(ctx, h, NH, 11);
  if (st == SEQCL_OK) {
    gates_arg t = {{.N = N, .H = H, .gi = sq_at(gi, 0), .gi_sn = 3 * (size_t)H, .gi_st = 0,
                    .gh = sq_at(gh, 0), .ld_gh = 3 * H, .b_ih = sq_at(b, 0),
                    .b_hh = sq_at(b, 3 * (size_t)H), .h = sq_at(h, 0), .out = sq_none(),
                    .lens = sq_none(), .step = 0, .reverse = 0}};
    st = time_op(ctx, gates_op, &t, 4, reps, seconds);
  }
  if (st == SEQCL_OK) *gbps = 4.0 * (8.0 * NH) / *seconds / 1e9; /* gi, gh: 3H; h in, h out */
  sq_buf_free(gi);
  sq_buf_free(gh);
  sq_buf_free(b);
  sq_buf_free(h);
  return st;
}
