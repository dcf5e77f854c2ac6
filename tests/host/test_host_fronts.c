/* Every validation error path of the op fronts (src/ops): exact status and a
 * message that names the op and the argument, plus one valid call per front
 * so that the checks are not stricter than the contract. */
#include "../common/test_main.h"
#include "host_test.h"

enum { BIG = 4096 };

typedef struct fx {
  seqcl_ctx *ctx;
  sq_buf *big;   /* BIG floats of random data */
  sq_buf *small; /* 8 floats */
  sq_buf *ints;  /* BIG int32 (lens, ids, masks: all 1) */
} fx;

static int setup(void **state) {
  fx *f = calloc(1, sizeof *f);
  f->ctx = th_open();
  static float data[BIG];
  static int32_t ones[BIG];
  th_rng r = th_seed(1);
  th_fill(&r, data, BIG, 1.0f);
  for (int i = 0; i < BIG; i++) ones[i] = 1;
  f->big = th_buf(f->ctx, BIG, data);
  f->small = th_buf(f->ctx, 8, data);
  f->ints = th_buf(f->ctx, BIG, ones);
  *state = f;
  return 0;
}

static int teardown(void **state) {
  fx *f = *state;
  sq_buf_free(f->big);
  sq_buf_free(f->small);
  sq_buf_free(f->ints);
  seqcl_ctx_close(f->ctx);
  free(f);
  return 0;
}

#define F fx *f = *state; seqcl_ctx *ctx = f->ctx; (void)ctx
#define BIGR(off) sq_at(f->big, (off))
#define SMALL sq_at(f->small, 0)
#define INTS(off) sq_at(f->ints, (off))

static void memory_errors(void **state) {
  F;
  sq_buf *b = (sq_buf *)&b; /* must be reset to NULL on failure */
  float host[16] = {1};
  TH_EXPECT_ERR(sq_buf_alloc(ctx, 16, NULL), SEQCL_ERR_INVALID_ARGUMENT, "sq_buf_alloc: out is NULL");
  TH_EXPECT_ERR(sq_buf_alloc(NULL, 16, &b), SEQCL_ERR_INVALID_ARGUMENT, "sq_buf_alloc: ctx is NULL");
  assert_null(b);
  b = (sq_buf *)&b;
  TH_EXPECT_ERR(sq_buf_alloc(ctx, 0, &b), SEQCL_ERR_INVALID_ARGUMENT, "sq_buf_alloc: bytes is 0");
  assert_null(b);
  TH_EXPECT_ERR(sq_buf_alloc(ctx, SIZE_MAX - 64, &b), SEQCL_ERR_OUT_OF_MEMORY, "bytes");
  assert_null(b);

  TH_EXPECT_ERR(sq_write(ctx, SMALL, NULL, 4), SEQCL_ERR_INVALID_ARGUMENT, "sq_write: src is NULL");
  TH_EXPECT_ERR(sq_write(ctx, sq_none(), host, 4), SEQCL_ERR_INVALID_ARGUMENT,
                "sq_write: dst is required");
  TH_EXPECT_ERR(sq_write(ctx, sq_at(f->small, 2), host, 28), SEQCL_ERR_SHAPE,
                "sq_write: dst needs 28 bytes from offset 2 but its buffer holds 32 bytes");
  TH_EXPECT_ERR(sq_write(ctx, sq_at(f->small, 9), host, 0), SEQCL_ERR_SHAPE, "sq_write: dst");
  TH_EXPECT_ERR(sq_read(ctx, SMALL, NULL, 4), SEQCL_ERR_INVALID_ARGUMENT, "sq_read: dst is NULL");
  TH_EXPECT_ERR(sq_read(ctx, SMALL, host, 36), SEQCL_ERR_SHAPE, "sq_read: src needs 36 bytes");
  TH_EXPECT_ERR(sq_copy(ctx, sq_at(f->small, 0), sq_at(f->small, 2), 4), SEQCL_ERR_INVALID_ARGUMENT,
                "sq_copy: dst [0, +4) and src [2, +4) overlap");
  TH_EXPECT_ERR(sq_copy(ctx, SMALL, sq_at(f->big, BIG - 2), 4), SEQCL_ERR_SHAPE,
                "sq_copy: src needs 4 elements from offset 4094");
  TH_EXPECT_ERR(sq_copy(ctx, sq_at(f->small, 6), BIGR(0), 4), SEQCL_ERR_SHAPE, "sq_copy: dst needs 4");
  TH_EXPECT_ERR(sq_fill(ctx, SMALL, 9, 1.0f), SEQCL_ERR_SHAPE, "sq_fill: dst needs 9 elements");
  TH_EXPECT_ERR(sq_fill_i32(ctx, sq_none(), 1, 1), SEQCL_ERR_INVALID_ARGUMENT,
                "sq_fill_i32: dst is required");
  TH_EXPECT_ERR(sq_finish(NULL), SEQCL_ERR_INVALID_ARGUMENT, "sq_finish: ctx is NULL");

  /* A buffer of another context is refused by name. */
  seqcl_ctx *other = th_open();
  sq_buf *ob = th_buf(other, 8, NULL);
  TH_EXPECT_ERR(sq_fill(ctx, sq_at(ob, 0), 8, 0.0f), SEQCL_ERR_INVALID_ARGUMENT,
                "sq_fill: dst is a buffer of another context");
  sq_buf_free(ob);
  seqcl_ctx_close(other);

  /* The failure is also the context's message. */
  TH_EXPECT_ERR(sq_fill(ctx, SMALL, 9, 1.0f), SEQCL_ERR_SHAPE, "sq_fill");
  assert_non_null(strstr(seqcl_ctx_message(ctx), "sq_fill: dst needs 9 elements"));

  /* Valid calls, the host side of each: round trip, copy, fill. */
  float back[8];
  TH_OK(sq_write(ctx, sq_at(f->small, 4), host, 16));
  TH_OK(sq_copy(ctx, sq_at(f->small, 0), sq_at(f->small, 4), 4));
  TH_OK(sq_read(ctx, SMALL, back, 32));
  assert_true(back[0] == 1.0f && back[4] == 1.0f && back[1] == 0.0f);
  TH_OK(sq_fill(ctx, SMALL, 8, 2.5f));
  TH_OK(sq_read(ctx, SMALL, back, 32));
  for (int i = 0; i < 8; i++) assert_true(back[i] == 2.5f);
  TH_OK(sq_write(ctx, sq_at(f->small, 8), host, 0)); /* empty write at the end */
  TH_OK(sq_finish(ctx));
  sq_buf_free(NULL);
}

static void gemm_errors(void **state) {
  F;
  sq_ref A = BIGR(0);
  TH_EXPECT_ERR(sq_gemm(ctx, 0, 0, 0, 2, 2, 1, A, 2, 0, A, 2, 0, 0, A, 2, 0, 1), SEQCL_ERR_SHAPE,
                "sq_gemm: M = 0, must be at least 1");
  TH_EXPECT_ERR(sq_gemm(ctx, 0, 0, 2, -1, 2, 1, A, 2, 0, A, 2, 0, 0, A, 2, 0, 1), SEQCL_ERR_SHAPE,
                "sq_gemm: N = -1");
  TH_EXPECT_ERR(sq_gemm(ctx, 0, 0, 2, 2, 0, 1, A, 2, 0, A, 2, 0, 0, A, 2, 0, 1), SEQCL_ERR_SHAPE,
                "sq_gemm: K = 0");
  TH_EXPECT_ERR(sq_gemm(ctx, 0, 0, 2, 2, 2, 1, A, 2, 0, A, 2, 0, 0, A, 2, 0, 0), SEQCL_ERR_SHAPE,
                "sq_gemm: batch = 0");
  /* A [3,5]: lda >= 5; transposed A [5,3]: lda >= 3 */
  TH_EXPECT_ERR(sq_gemm(ctx, 0, 0, 3, 2, 5, 1, A, 4, 0, A, 2, 0, 0, A, 2, 0, 1), SEQCL_ERR_SHAPE,
                "sq_gemm: lda = 4 is smaller than the row width 5");
  TH_OK(sq_gemm(ctx, 1, 0, 3, 2, 5, 1, A, 3, 0, sq_at(f->big, 100), 2, 0, 0, sq_at(f->big, 200),
                2, 0, 1));
  TH_EXPECT_ERR(sq_gemm(ctx, 0, 1, 3, 4, 5, 1, A, 5, 0, A, 4, 0, 0, A, 4, 0, 1), SEQCL_ERR_SHAPE,
                "sq_gemm: ldb = 4 is smaller than the row width 5");
  TH_EXPECT_ERR(sq_gemm(ctx, 0, 0, 3, 4, 5, 1, A, 5, 0, A, 4, 0, 0, A, 3, 0, 1), SEQCL_ERR_SHAPE,
                "sq_gemm: ldc = 3 is smaller than the row width 4");
  TH_EXPECT_ERR(sq_gemm(ctx, 0, 0, 2, 2, 2, 1, sq_at(f->small, 4), 4, 0, A, 2, 0, 0, A, 2, 0, 1),
                SEQCL_ERR_SHAPE, "sq_gemm: A needs 6 elements from offset 4 but its buffer holds 32 bytes");
  TH_EXPECT_ERR(sq_gemm(ctx, 0, 0, 2, 2, 2, 1, A, 2, 0, SMALL, 2, 5, 0, A, 2, 0, 2), SEQCL_ERR_SHAPE,
                "sq_gemm: B needs 9 elements");
  TH_EXPECT_ERR(sq_gemm(ctx, 0, 0, 2, 2, 2, 1, A, 2, 0, A, 2, 0, 0, sq_none(), 2, 0, 1),
                SEQCL_ERR_INVALID_ARGUMENT, "sq_gemm: C is required");
  TH_EXPECT_ERR(sq_gemm(ctx, 0, 0, 2, 2, 2, 1, A, 2, 0, A, 2, 0, 0, sq_at(f->big, BIG - 3), 2, 0, 1),
                SEQCL_ERR_SHAPE, "sq_gemm: C needs 4 elements from offset 4093");
  TH_EXPECT_ERR(sq_gemm(ctx, 0, 0, 2, 2, 2, 1, A, 2, 0, A, 2, 0, 0, A, 2, (size_t)1 << 62, 5),
                SEQCL_ERR_SHAPE, "sq_gemm: C needs");

  TH_EXPECT_ERR(sq_linear(ctx, 0, 2, 2, A, 2, A, sq_none(), A, 2), SEQCL_ERR_SHAPE,
                "sq_linear: rows = 0");
  TH_EXPECT_ERR(sq_linear(ctx, 2, 3, 2, A, 2, A, sq_none(), A, 2), SEQCL_ERR_SHAPE,
                "sq_linear: ldx = 2 is smaller than the row width 3");
  TH_EXPECT_ERR(sq_linear(ctx, 2, 3, 4, A, 3, A, sq_none(), A, 3), SEQCL_ERR_SHAPE,
                "sq_linear: ldy = 3 is smaller than the row width 4");
  TH_EXPECT_ERR(sq_linear(ctx, 2, 3, 4, A, 3, SMALL, sq_none(), A, 4), SEQCL_ERR_SHAPE,
                "sq_linear: W needs 12 elements");
  TH_EXPECT_ERR(sq_linear(ctx, 2, 3, 4, A, 3, A, sq_at(f->small, 6), A, 4), SEQCL_ERR_SHAPE,
                "sq_linear: b needs 4 elements from offset 6");
  TH_EXPECT_ERR(sq_linear(ctx, 2, 3, 4, sq_none(), 3, A, sq_none(), A, 4),
                SEQCL_ERR_INVALID_ARGUMENT, "sq_linear: x is required");

  TH_EXPECT_ERR(sq_add_bias(ctx, 2, 3, A, 3, sq_none()), SEQCL_ERR_INVALID_ARGUMENT,
                "sq_add_bias: bias is required");
  TH_EXPECT_ERR(sq_add_bias(ctx, 2, 3, A, 2, A), SEQCL_ERR_SHAPE, "sq_add_bias: ld = 2");
  TH_EXPECT_ERR(sq_add_bias(ctx, 2, 0, A, 2, A), SEQCL_ERR_SHAPE, "sq_add_bias: cols = 0");
  TH_EXPECT_ERR(sq_add_bias(ctx, 3, 3, sq_at(f->small, 0), 3, A), SEQCL_ERR_SHAPE,
                "sq_add_bias: y needs 9 elements");

  /* linear = x W^T + b against a hand-computed case. */
  float x[2 * 3] = {1, 2, 3, -1, 0.5f, 2}, W[2 * 3] = {1, 0, -1, 2, 1, 0.25f}, b[2] = {0.5f, -1};
  float y[2 * 4];
  sq_buf *bx = th_buf(ctx, 6, x), *bW = th_buf(ctx, 6, W), *bb = th_buf(ctx, 2, b);
  sq_buf *by = th_buf(ctx, 8, NULL);
  TH_OK(sq_fill(ctx, sq_at(by, 0), 8, 7.0f));
  TH_OK(sq_linear(ctx, 2, 3, 2, sq_at(bx, 0), 3, sq_at(bW, 0), sq_at(bb, 0), sq_at(by, 0), 4));
  TH_OK(sq_read(ctx, sq_at(by, 0), y, sizeof y));
  assert_true(y[0] == 1 - 3 + 0.5f && y[1] == 2 + 2 + 0.75f - 1);
  assert_true(y[4] == -1 - 2 + 0.5f && y[5] == -2 + 0.5f + 0.5f - 1);
  assert_true(y[2] == 7.0f && y[3] == 7.0f && y[6] == 7.0f && y[7] == 7.0f); /* ldy padding */
  sq_buf_free(bx);
  sq_buf_free(bW);
  sq_buf_free(bb);
  sq_buf_free(by);
}

/* A valid additive argument set: N = 2, S = 3, He = 4, A = 5. */
static sq_attn_args additive(fx *f) {
  sq_attn_args a = {.kind = SQ_SCORE_ADDITIVE, .N = 2, .S = 3, .He = 4, .A = 5};
  a.qp = sq_at(f->big, 0);
  a.ld_qp = 5;
  a.keys = sq_at(f->big, 100);
  a.pkeys = sq_at(f->big, 200);
  a.v = sq_at(f->big, 300);
  a.bv = sq_at(f->big, 310);
  a.scale = 1.0f;
  a.lens = sq_at(f->ints, 0);
  a.mask = sq_none();
  return a;
}

static void attention_errors(void **state) {
  F;
  const int32_t lens_ok[2] = {3, 2}, lens_zero[2] = {3, 0}, lens_long[2] = {4, 1},
                lens_neg[2] = {-1, 1};
  const int32_t mask_ok[6] = {1, 0, 1, 0, 1, 1}, mask_empty[6] = {1, 1, 1, 0, 0, 1};
  sq_ref sc = sq_at(f->big, 1000);
  sq_attn_args a = additive(f);
  TH_OK(sq_attn_scores(ctx, &a, lens_ok, NULL, sc));
  TH_EXPECT_ERR(sq_attn_scores(ctx, NULL, lens_ok, NULL, sc), SEQCL_ERR_INVALID_ARGUMENT,
                "sq_attn_scores: args is NULL");
  /* each case: the valid set additive(f) with one field changed */
#define SCORES_ERR(field, value, status, needle)                                             \
  TH_EXPECT_ERR_CHANGED(a, additive(f), field, value, sq_attn_scores(ctx, &a, lens_ok, NULL, sc), \
                        status, needle)
  SCORES_ERR(kind, (sq_score)7, SEQCL_ERR_INVALID_ARGUMENT, "sq_attn_scores: unknown score kind 7");
  SCORES_ERR(S, 0, SEQCL_ERR_SHAPE, "sq_attn_scores: S = 0");
  SCORES_ERR(A, 0, SEQCL_ERR_SHAPE, "sq_attn_scores: A = 0");
  SCORES_ERR(scale, NAN, SEQCL_ERR_INVALID_ARGUMENT, "sq_attn_scores: scale is not finite");
  SCORES_ERR(ld_qp, 4, SEQCL_ERR_SHAPE,
             "sq_attn_scores: ld_qp = 4 is smaller than the row width 5");
  SCORES_ERR(pkeys, sq_none(), SEQCL_ERR_INVALID_ARGUMENT, "sq_attn_scores: pkeys is required");
  SCORES_ERR(v, sq_none(), SEQCL_ERR_INVALID_ARGUMENT, "sq_attn_scores: v is required");
  SCORES_ERR(bv, sq_at(f->big, BIG), SEQCL_ERR_SHAPE,
             "sq_attn_scores: bv needs 1 elements from offset 4096");
  SCORES_ERR(keys, sq_at(f->big, BIG - 20), SEQCL_ERR_SHAPE,
             "sq_attn_scores: keys needs 24 elements");
  SCORES_ERR(lens, sq_none(), SEQCL_ERR_INVALID_ARGUMENT, "sq_attn_scores: lens is required");
#undef SCORES_ERR
  a = additive(f);
  TH_EXPECT_ERR(sq_attn_scores(ctx, &a, NULL, NULL, sc), SEQCL_ERR_INVALID_ARGUMENT,
                "sq_attn_scores: lens_host");
  TH_EXPECT_ERR(sq_attn_scores(ctx, &a, lens_zero, NULL, sc), SEQCL_ERR_EMPTY_SEQUENCE,
                "sq_attn_scores: sequence 1 is empty (lens[1] = 0)");
  TH_EXPECT_ERR(sq_attn_scores(ctx, &a, lens_long, NULL, sc), SEQCL_ERR_SHAPE,
                "sq_attn_scores: lens[0] = 4 exceeds the padded length 3");
  TH_EXPECT_ERR(sq_attn_scores(ctx, &a, lens_neg, NULL, sc), SEQCL_ERR_INVALID_ARGUMENT,
                "sq_attn_scores: lens[0] = -1 is negative");
  TH_EXPECT_ERR(sq_attn_scores(ctx, &a, lens_ok, mask_ok, sc), SEQCL_ERR_INVALID_ARGUMENT,
                "sq_attn_scores: mask_host is given without mask");
  a.mask = sq_at(f->ints, 0);
  TH_EXPECT_ERR(sq_attn_scores(ctx, &a, lens_ok, NULL, sc), SEQCL_ERR_INVALID_ARGUMENT,
                "sq_attn_scores: mask is given without mask_host");
  TH_EXPECT_ERR(sq_attn_scores(ctx, &a, lens_ok, mask_empty, sc), SEQCL_ERR_EMPTY_SEQUENCE,
                "sq_attn_scores: mask row 1 has no valid position among its first 2");
  TH_OK(sq_attn_scores(ctx, &a, lens_ok, mask_ok, sc));
  a.mask = sq_at(f->ints, BIG - 5);
  TH_EXPECT_ERR(sq_attn_scores(ctx, &a, lens_ok, mask_ok, sc), SEQCL_ERR_SHAPE,
                "sq_attn_scores: mask needs 6 elements");
  a = additive(f);
  TH_EXPECT_ERR(sq_attn_scores(ctx, &a, lens_ok, NULL, sq_at(f->small, 3)), SEQCL_ERR_SHAPE,
                "sq_attn_scores: scores needs 6 elements from offset 3");

  /* Dot-type kinds read qp [N, He] and need neither pkeys nor v. */
  sq_attn_args d = {.kind = SQ_SCORE_DOT, .N = 2, .S = 3, .He = 4, .qp = sq_at(f->big, 0),
                    .ld_qp = 4, .keys = sq_at(f->big, 100), .scale = 1.0f,
                    .lens = sq_at(f->ints, 0)};
  TH_OK(sq_attn_scores(ctx, &d, lens_ok, NULL, sc));
  d.ld_qp = 3;
  TH_EXPECT_ERR(sq_attn_scores(ctx, &d, lens_ok, NULL, sc), SEQCL_ERR_SHAPE,
                "sq_attn_scores: ld_qp = 3 is smaller than the row width 4");

  /* masked_softmax */
  sq_ref x = sq_at(f->big, 0), y = sq_at(f->big, 50), L = sq_at(f->ints, 0);
  TH_OK(sq_masked_softmax(ctx, 2, 3, x, L, lens_ok, sq_none(), NULL, y));
  TH_EXPECT_ERR(sq_masked_softmax(ctx, 2, 0, x, L, lens_ok, sq_none(), NULL, y), SEQCL_ERR_SHAPE,
                "sq_masked_softmax: S = 0");
  TH_EXPECT_ERR(sq_masked_softmax(ctx, 2, 3, sq_at(f->small, 4), L, lens_ok, sq_none(), NULL, y),
                SEQCL_ERR_SHAPE, "sq_masked_softmax: x needs 6 elements from offset 4");
  TH_EXPECT_ERR(sq_masked_softmax(ctx, 2, 3, x, L, lens_ok, sq_none(), NULL, sq_none()),
                SEQCL_ERR_INVALID_ARGUMENT, "sq_masked_softmax: y is required");
  TH_EXPECT_ERR(sq_masked_softmax(ctx, 2, 3, x, sq_none(), lens_ok, sq_none(), NULL, y),
                SEQCL_ERR_INVALID_ARGUMENT, "sq_masked_softmax: lens is required");
  TH_EXPECT_ERR(sq_masked_softmax(ctx, 2, 3, x, L, lens_zero, sq_none(), NULL, y),
                SEQCL_ERR_EMPTY_SEQUENCE, "sq_masked_softmax: sequence 1 is empty");
  TH_EXPECT_ERR(sq_masked_softmax(ctx, 2, 3, x, L, lens_long, sq_none(), NULL, y), SEQCL_ERR_SHAPE,
                "sq_masked_softmax: lens[0] = 4 exceeds");
  TH_EXPECT_ERR(sq_masked_softmax(ctx, 2, 3, x, L, lens_ok, INTS(0), mask_empty, y),
                SEQCL_ERR_EMPTY_SEQUENCE, "sq_masked_softmax: mask row 1 has no valid position");

  /* context */
  sq_ref al = sq_at(f->big, 0), keys = sq_at(f->big, 100), c = sq_at(f->big, 2000);
  TH_OK(sq_context(ctx, 2, 3, 4, al, keys, c, 4));
  TH_EXPECT_ERR(sq_context(ctx, 2, 3, 0, al, keys, c, 4), SEQCL_ERR_SHAPE, "sq_context: He = 0");
  TH_EXPECT_ERR(sq_context(ctx, 2, 3, 4, al, keys, c, 3), SEQCL_ERR_SHAPE,
                "sq_context: ld_c = 3 is smaller than the row width 4");
  TH_EXPECT_ERR(sq_context(ctx, 2, 3, 4, sq_at(f->small, 4), keys, c, 4), SEQCL_ERR_SHAPE,
                "sq_context: alpha needs 6 elements from offset 4");
  TH_EXPECT_ERR(sq_context(ctx, 2, 3, 4, al, SMALL, c, 4), SEQCL_ERR_SHAPE,
                "sq_context: keys needs 24 elements");
  TH_EXPECT_ERR(sq_context(ctx, 2, 3, 4, al, keys, sq_at(f->small, 1), 4), SEQCL_ERR_SHAPE,
                "sq_context: c needs 8 elements from offset 1");

  /* attn_fused: the attention checks plus c and the optional alpha. */
  a = additive(f);
  TH_OK(sq_attn_fused(ctx, &a, lens_ok, NULL, c, 4, sq_none()));
  TH_OK(sq_attn_fused(ctx, &a, lens_ok, NULL, c, 6, sq_at(f->big, 3000)));
  TH_EXPECT_ERR(sq_attn_fused(ctx, &a, lens_zero, NULL, c, 4, sq_none()), SEQCL_ERR_EMPTY_SEQUENCE,
                "sq_attn_fused: sequence 1 is empty");
  TH_EXPECT_ERR(sq_attn_fused(ctx, &a, lens_ok, NULL, c, 2, sq_none()), SEQCL_ERR_SHAPE,
                "sq_attn_fused: ld_c = 2");
  TH_EXPECT_ERR(sq_attn_fused(ctx, &a, lens_ok, NULL, sq_none(), 4, sq_none()),
                SEQCL_ERR_INVALID_ARGUMENT, "sq_attn_fused: c is required");
  TH_EXPECT_ERR(sq_attn_fused(ctx, &a, lens_ok, NULL, c, 4, sq_at(f->small, 4)), SEQCL_ERR_SHAPE,
                "sq_attn_fused: alpha needs 6 elements from offset 4");

  /* group: rows per source; the sources' lengths (and keys, mask) number
   * N / group, and group must divide N */
  const int32_t lens_one[1] = {3}, lens_one_long[1] = {5};
  a = additive(f);
  a.group = 2;
  TH_OK(sq_attn_fused(ctx, &a, lens_one, NULL, c, 4, sq_at(f->big, 3000)));
  TH_OK(sq_attn_scores(ctx, &a, lens_one, NULL, sc));
  TH_EXPECT_ERR(sq_attn_fused(ctx, &a, lens_one_long, NULL, c, 4, sq_none()), SEQCL_ERR_SHAPE,
                "sq_attn_fused: lens[0] = 5 exceeds the padded length 3");
  a.group = 3;
  TH_EXPECT_ERR(sq_attn_fused(ctx, &a, lens_ok, NULL, c, 4, sq_none()),
                SEQCL_ERR_INVALID_ARGUMENT,
                "sq_attn_fused: group 3 does not divide the 2 rows into sources");
  a.group = -1;
  TH_EXPECT_ERR(sq_attn_scores(ctx, &a, lens_ok, NULL, sc), SEQCL_ERR_INVALID_ARGUMENT,
                "sq_attn_scores: group -1 does not divide");
  a = additive(f);
  a.group = 2;
  TH_EXPECT_ERR(sq_attn_fwd(ctx, &a, sq_none(), c, 4, sq_at(f->big, 3000)),
                SEQCL_ERR_UNSUPPORTED, "sq_attn_fwd: group 2: training attends one source per row");
}

/* A valid gates argument set: N = 2, H = 3, gi [N, T = 4, 3H], lens {4, 2}. */
static sq_gru_args gates(fx *f) {
  sq_gru_args g = {.N = 2, .H = 3};
  g.gi = sq_at(f->big, 0);
  g.gi_sn = 4 * 9;
  g.gi_st = 9;
  g.gh = sq_at(f->big, 100);
  g.ld_gh = 9;
  g.b_ih = sq_at(f->big, 200);
  g.b_hh = sq_at(f->big, 220);
  g.h = sq_at(f->big, 240);
  g.out = sq_at(f->big, 300);
  g.out_sn = 4 * 6;
  g.out_st = 6;
  g.lens = sq_at(f->ints, 0);
  g.step = 1;
  return g;
}

/* The arguments of one sq_gru_layer call, in its order. */
typedef struct layer_call {
  int N, T, In, H;
  sq_ref x, Wih, Whh, bih, bhh, lens;
  const int32_t *lens_host;
  int reverse;
  sq_ref h, out;
  int out_width, col;
  sq_ref ws;
} layer_call;

static seqcl_status run_layer(seqcl_ctx *ctx, const layer_call *c) {
  return sq_gru_layer(ctx, c->N, c->T, c->In, c->H, c->x, c->Wih, c->Whh, c->bih, c->bhh, c->lens,
                      c->lens_host, c->reverse, c->h, c->out, c->out_width, c->col, c->ws);
}

static void gru_errors(void **state) {
  F;
  const int32_t lens[2] = {4, 2}, lens_zero[2] = {0, 2};
  sq_gru_args g = gates(f);
  TH_OK(sq_gru_gates(ctx, &g, lens));
  g.reverse = 1;
  TH_OK(sq_gru_gates(ctx, &g, lens));
  TH_EXPECT_ERR(sq_gru_gates(ctx, NULL, lens), SEQCL_ERR_INVALID_ARGUMENT,
                "sq_gru_gates: args is NULL");
  g = gates(f);
  g.H = 0;
  TH_EXPECT_ERR(sq_gru_gates(ctx, &g, lens), SEQCL_ERR_SHAPE, "sq_gru_gates: H = 0");
  g = gates(f);
  g.step = -1;
  TH_EXPECT_ERR(sq_gru_gates(ctx, &g, lens), SEQCL_ERR_INVALID_ARGUMENT,
                "sq_gru_gates: step = -1 is negative");
  g = gates(f);
  TH_EXPECT_ERR(sq_gru_gates(ctx, &g, NULL), SEQCL_ERR_INVALID_ARGUMENT,
                "sq_gru_gates: lens and lens_host must be given together (lens given, lens_host absent)");
  g = gates(f);
  g.lens = sq_none();
  g.reverse = 1;
  TH_EXPECT_ERR(sq_gru_gates(ctx, &g, NULL), SEQCL_ERR_INVALID_ARGUMENT,
                "sq_gru_gates: the reverse direction needs lens");
  g = gates(f);
  g.ld_gh = 8;
  TH_EXPECT_ERR(sq_gru_gates(ctx, &g, lens), SEQCL_ERR_SHAPE,
                "sq_gru_gates: ld_gh = 8 is smaller than the row width 9");
  g = gates(f);
  TH_EXPECT_ERR(sq_gru_gates(ctx, &g, lens_zero), SEQCL_ERR_EMPTY_SEQUENCE,
                "sq_gru_gates: sequence 0 is empty (lens[0] = 0)");
  /* gi: row 0 at t = 1 reaches 36 + 9 + 9 = 54 floats; row 1 is at t = 1 as well. */
  g.gi = sq_at(f->big, BIG - 50);
  TH_EXPECT_ERR(sq_gru_gates(ctx, &g, lens), SEQCL_ERR_SHAPE,
                "sq_gru_gates: gi needs 54 elements from offset 4046");
  g = gates(f);
  g.gh = sq_at(f->small, 0);
  TH_EXPECT_ERR(sq_gru_gates(ctx, &g, lens), SEQCL_ERR_SHAPE, "sq_gru_gates: gh needs 18 elements");
  g = gates(f);
  g.b_hh = sq_at(f->small, 0);
  TH_EXPECT_ERR(sq_gru_gates(ctx, &g, lens), SEQCL_ERR_SHAPE, "sq_gru_gates: b_hh needs 9 elements");
  g = gates(f);
  g.h = sq_none();
  TH_EXPECT_ERR(sq_gru_gates(ctx, &g, lens), SEQCL_ERR_INVALID_ARGUMENT,
                "sq_gru_gates: h is required");
  g = gates(f);
  g.out = sq_at(f->big, BIG - 20);
  TH_EXPECT_ERR(sq_gru_gates(ctx, &g, lens), SEQCL_ERR_SHAPE,
                "sq_gru_gates: out needs 33 elements from offset 4076");
  /* At step 4 every row has finished: nothing is touched, even past gi's end. */
  g = gates(f);
  g.step = 4;
  TH_OK(sq_gru_gates(ctx, &g, lens));

  /* cell: N = 2, In = 3, H = 4 */
  sq_ref x = sq_at(f->big, 0), Wih = sq_at(f->big, 100), Whh = sq_at(f->big, 200);
  sq_ref bih = sq_at(f->big, 300), bhh = sq_at(f->big, 320), h = sq_at(f->big, 400);
  sq_ref ws = sq_at(f->big, 500);
  TH_OK(sq_gru_cell(ctx, 2, 3, 4, x, 3, Wih, Whh, bih, bhh, h, ws));
  TH_OK(sq_gru_cell(ctx, 2, 3, 4, x, 5, Wih, Whh, sq_none(), sq_none(), h, ws));
  TH_EXPECT_ERR(sq_gru_cell(ctx, 2, 0, 4, x, 3, Wih, Whh, bih, bhh, h, ws), SEQCL_ERR_SHAPE,
                "sq_gru_cell: In = 0");
  TH_EXPECT_ERR(sq_gru_cell(ctx, 2, 3, 4, x, 2, Wih, Whh, bih, bhh, h, ws), SEQCL_ERR_SHAPE,
                "sq_gru_cell: ldx = 2 is smaller than the row width 3");
  TH_EXPECT_ERR(sq_gru_cell(ctx, 2, 3, 4, x, 3, SMALL, Whh, bih, bhh, h, ws), SEQCL_ERR_SHAPE,
                "sq_gru_cell: W_ih needs 36 elements");
  TH_EXPECT_ERR(sq_gru_cell(ctx, 2, 3, 4, x, 3, Wih, sq_none(), bih, bhh, h, ws),
                SEQCL_ERR_INVALID_ARGUMENT, "sq_gru_cell: W_hh is required");
  TH_EXPECT_ERR(sq_gru_cell(ctx, 2, 3, 4, x, 3, Wih, Whh, SMALL, bhh, h, ws), SEQCL_ERR_SHAPE,
                "sq_gru_cell: b_ih needs 12 elements");
  TH_EXPECT_ERR(sq_gru_cell(ctx, 2, 3, 4, x, 3, Wih, Whh, bih, bhh, sq_at(f->small, 1), ws),
                SEQCL_ERR_SHAPE, "sq_gru_cell: h needs 8 elements from offset 1");
  TH_EXPECT_ERR(sq_gru_cell(ctx, 2, 3, 4, x, 3, Wih, Whh, bih, bhh, h, sq_at(f->big, BIG - 40)),
                SEQCL_ERR_SHAPE, "sq_gru_cell: ws needs 48 elements");
  TH_EXPECT_ERR(sq_gru_cell(ctx, 2, 3, 4, x, 3, Wih, Whh, bih, bhh, h, sq_at(f->big, 380)),
                SEQCL_ERR_INVALID_ARGUMENT, "sq_gru_cell: ws overlaps h");
  TH_EXPECT_ERR(sq_gru_cell(ctx, 2, 3, 4, x, 3, Wih, Whh, bih, bhh, h, sq_at(f->big, 0)),
                SEQCL_ERR_INVALID_ARGUMENT, "sq_gru_cell: ws overlaps x");

  /* layer: N = 2, T = 3, In = 2, H = 2, out [N, T, 4]; each case changes
   * one argument of the valid call `base` */
  const int32_t L[2] = {3, 1}, Lz[2] = {3, 0}, Ll[2] = {4, 1};
  const layer_call base = {2, 3, 2, 2, x, Wih, Whh, bih, bhh, sq_at(f->ints, 0), L, 0, h,
                           sq_at(f->big, 600), 4, 0, sq_at(f->big, 1000)};
#define LAYER_ERR(field, value, status, needle)                                              \
  TH_EXPECT_ERR_CHANGED(c, base, field, value, run_layer(ctx, &c), status, needle)
  layer_call c = base;
  TH_OK(run_layer(ctx, &c));
  c.reverse = 1, c.col = 2;
  TH_OK(run_layer(ctx, &c));
  c = base;
  c.lens = sq_none(), c.lens_host = NULL, c.reverse = 1, c.out = sq_none(), c.out_width = 0;
  TH_OK(run_layer(ctx, &c));
  LAYER_ERR(T, 0, SEQCL_ERR_SHAPE, "sq_gru_layer: T = 0");
  LAYER_ERR(x, SMALL, SEQCL_ERR_SHAPE, "sq_gru_layer: x needs 12 elements");
  LAYER_ERR(Whh, SMALL, SEQCL_ERR_SHAPE, "sq_gru_layer: W_hh needs 12 elements");
  LAYER_ERR(lens_host, NULL, SEQCL_ERR_INVALID_ARGUMENT,
            "sq_gru_layer: lens and lens_host must be given together");
  LAYER_ERR(lens_host, Lz, SEQCL_ERR_EMPTY_SEQUENCE, "sq_gru_layer: sequence 1 is empty (lens[1] = 0)");
  LAYER_ERR(lens_host, Ll, SEQCL_ERR_SHAPE, "sq_gru_layer: lens[0] = 4 exceeds the padded length 3");
  LAYER_ERR(h, sq_none(), SEQCL_ERR_INVALID_ARGUMENT, "sq_gru_layer: h is required");
  LAYER_ERR(col, 3, SEQCL_ERR_SHAPE,
            "sq_gru_layer: columns [3, 3 + H) with H = 2 do not fit out_width = 4");
  LAYER_ERR(col, -1, SEQCL_ERR_SHAPE, "sq_gru_layer: columns [-1");
  LAYER_ERR(out, sq_at(f->big, BIG - 20), SEQCL_ERR_SHAPE, "sq_gru_layer: out needs 24 elements");
  LAYER_ERR(ws, sq_at(f->big, BIG - 40), SEQCL_ERR_SHAPE, "sq_gru_layer: ws needs 48 elements");
  LAYER_ERR(ws, sq_at(f->big, 590), SEQCL_ERR_INVALID_ARGUMENT, "sq_gru_layer: ws overlaps out");
#undef LAYER_ERR
}

static void row_errors(void **state) {
  F;
  const int32_t ids_ok[3] = {0, 4, 2}, ids_big[3] = {0, 5, 2}, ids_neg[3] = {0, 1, -1};
  sq_ref ids = sq_at(f->ints, 0), table = sq_at(f->big, 0), out = sq_at(f->big, 100);
  TH_OK(sq_embedding(ctx, 3, 4, 5, ids, ids_ok, table, out, 4));
  TH_EXPECT_ERR(sq_embedding(ctx, 3, 4, 0, ids, ids_ok, table, out, 4), SEQCL_ERR_SHAPE,
                "sq_embedding: V = 0");
  TH_EXPECT_ERR(sq_embedding(ctx, 3, 4, 5, ids, ids_ok, table, out, 3), SEQCL_ERR_SHAPE,
                "sq_embedding: ld_out = 3");
  TH_EXPECT_ERR(sq_embedding(ctx, 3, 4, 5, ids, NULL, table, out, 4), SEQCL_ERR_INVALID_ARGUMENT,
                "sq_embedding: ids_host");
  TH_EXPECT_ERR(sq_embedding(ctx, 3, 4, 5, ids, ids_big, table, out, 4), SEQCL_ERR_INVALID_ARGUMENT,
                "sq_embedding: ids[1] = 5 is outside [0, 5)");
  TH_EXPECT_ERR(sq_embedding(ctx, 3, 4, 5, ids, ids_neg, table, out, 4), SEQCL_ERR_INVALID_ARGUMENT,
                "sq_embedding: ids[2] = -1 is outside [0, 5)");
  TH_EXPECT_ERR(sq_embedding(ctx, 3, 4, 5, ids, ids_ok, SMALL, out, 4), SEQCL_ERR_SHAPE,
                "sq_embedding: table needs 20 elements");
  TH_EXPECT_ERR(sq_embedding(ctx, 3, 4, 5, sq_none(), ids_ok, table, out, 4),
                SEQCL_ERR_INVALID_ARGUMENT, "sq_embedding: ids is required");
  /* ids the device wrote (the decoding loops): shapes and buffers checked, the
   * ids themselves not (they have no host copy) */
  TH_OK(sq_write(ctx, ids, ids_ok, sizeof ids_ok));
  TH_OK(sq_embedding_device_ids(ctx, 3, 4, 5, ids, table, out, 4));
  TH_EXPECT_ERR(sq_embedding_device_ids(ctx, 3, 4, 5, ids, table, out, 3), SEQCL_ERR_SHAPE,
                "sq_embedding_device_ids: ld_out = 3");
  TH_EXPECT_ERR(sq_embedding_device_ids(ctx, 3, 4, 5, ids, SMALL, out, 4), SEQCL_ERR_SHAPE,
                "sq_embedding_device_ids: table needs 20 elements");
  TH_EXPECT_ERR(sq_embedding_device_ids(ctx, 3, 4, 5, sq_none(), table, out, 4),
                SEQCL_ERR_INVALID_ARGUMENT, "sq_embedding_device_ids: ids is required");

  sq_ref x = sq_at(f->big, 0);
  TH_OK(sq_argmax(ctx, 3, 5, x, 7, sq_at(f->big, 50), ids));
  TH_EXPECT_ERR(sq_argmax(ctx, 0, 5, x, 5, sq_none(), ids), SEQCL_ERR_SHAPE, "sq_argmax: N = 0");
  TH_EXPECT_ERR(sq_argmax(ctx, 3, 5, x, 4, sq_none(), ids), SEQCL_ERR_SHAPE,
                "sq_argmax: ld = 4 is smaller than the row width 5");
  TH_EXPECT_ERR(sq_argmax(ctx, 3, 5, sq_at(f->big, BIG - 10), 5, sq_none(), ids), SEQCL_ERR_SHAPE,
                "sq_argmax: x needs 15 elements");
  TH_EXPECT_ERR(sq_argmax(ctx, 3, 9, x, 9, SMALL, ids), SEQCL_ERR_SHAPE,
                "sq_argmax: bias needs 9 elements");
  TH_EXPECT_ERR(sq_argmax(ctx, 3, 5, x, 5, sq_none(), sq_none()), SEQCL_ERR_INVALID_ARGUMENT,
                "sq_argmax: ids is required");

  TH_OK(sq_log_softmax(ctx, 3, 5, x, sq_at(f->big, 100)));
  TH_EXPECT_ERR(sq_log_softmax(ctx, 3, 0, x, x), SEQCL_ERR_SHAPE, "sq_log_softmax: V = 0");
  TH_EXPECT_ERR(sq_log_softmax(ctx, 3, 5, x, sq_none()), SEQCL_ERR_INVALID_ARGUMENT,
                "sq_log_softmax: y is required");
  TH_EXPECT_ERR(sq_log_softmax(ctx, 3, 5, SMALL, x), SEQCL_ERR_SHAPE,
                "sq_log_softmax: x needs 15 elements");

  const int32_t lab_ok[3] = {4, -1, 0}, lab_big[3] = {0, 5, 1};
  sq_ref loss = sq_at(f->big, 200);
  TH_OK(sq_cross_entropy(ctx, 3, 5, x, ids, lab_ok, loss));
  TH_EXPECT_ERR(sq_cross_entropy(ctx, 3, 5, x, ids, NULL, loss), SEQCL_ERR_INVALID_ARGUMENT,
                "sq_cross_entropy: labels_host");
  TH_EXPECT_ERR(sq_cross_entropy(ctx, 3, 5, x, ids, lab_big, loss), SEQCL_ERR_INVALID_ARGUMENT,
                "sq_cross_entropy: labels[1] = 5 is not below V = 5");
  TH_EXPECT_ERR(sq_cross_entropy(ctx, 3, 5, x, sq_at(f->ints, BIG - 1), lab_ok, loss),
                SEQCL_ERR_SHAPE, "sq_cross_entropy: labels needs 3 elements");
  TH_EXPECT_ERR(sq_cross_entropy(ctx, 3, 5, x, ids, lab_ok, sq_none()), SEQCL_ERR_INVALID_ARGUMENT,
                "sq_cross_entropy: loss is required");
  TH_EXPECT_ERR(sq_cross_entropy(ctx, -3, 5, x, ids, lab_ok, loss), SEQCL_ERR_SHAPE,
                "sq_cross_entropy: N = -3");
}

SQ_TEST_MAIN(NULL, NULL,
      cmocka_unit_test_setup_teardown(memory_errors, setup, teardown),
      cmocka_unit_test_setup_teardown(gemm_errors, setup, teardown),
      cmocka_unit_test_setup_teardown(attention_errors, setup, teardown),
      cmocka_unit_test_setup_teardown(gru_errors, setup, teardown),
      cmocka_unit_test_setup_teardown(row_errors, setup, teardown))
