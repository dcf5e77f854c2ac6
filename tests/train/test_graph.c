/* The whole training graph (BPTT through decoder steps, attention, both encoder
 * directions with variable lengths, stacked layers, the [s; c] output, the
 * bridge and the "final" initial state, the fixed context of score "none",
 * embeddings with a pad row)
 * against central finite differences of its own float32 loss on the host.
 *
 * Float differences with h = 1e-2: truncation ~h^2 |f'''| ~ 1e-4 and rounding
 * ~1e-7 * |loss| / h ~ 2e-5, so |analytic - fd| <= 2e-3 + 2e-2 |fd| separates a
 * correct gradient from a wiring error (a missing path is off by O(|g|)). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../common/test_main.h"
#include "core/ctx.h"
#include "ops/ops.h"
#include "train/tmodel.h"

enum { N = 3, S = 4, T = 3 };

static void run_case(sq_score score, int bidir, sq_init init, int layers, sq_output output) {
  seqcl_ctx *ctx = NULL;
  assert_int_equal(seqcl_ctx_open("cpu", &ctx), SEQCL_OK);
  sq_config c = {.src_vocab = 6, .tgt_vocab = 7, .embed_dim = 3, .bos_id = 5, .eos_id = 6,
                 .pad_id = 0, .enc_hidden = 4, .enc_layers = layers, .bidirectional = bidir,
                 .dec_hidden = bidir ? 8 : 4, .init = init, .score = score,
                 .attn_dim = score == SQ_SCORE_ADDITIVE ? 5 : 0, .output = output};
  sq_tlayout L;
  assert_int_equal(sq_tlayout_make(ctx, &c, &L), SEQCL_OK);
  sq_graph *g = NULL;
  assert_int_equal(sq_graph_create(ctx, &L, N, S, T, &g), SEQCL_OK);
  float *p = malloc(L.total * sizeof(float)), *gr = malloc(L.total * sizeof(float));
  sq_tlayout_init(&L, 7, p);
  int32_t src[N * S] = {1, 2, 3, 4, 0, 5, 0, 0, 3, 3, 1, 0};
  int32_t lens[N] = {4, 2, 3};
  int32_t tgt[N * (T + 1)] = {5, 1, 2, 6, 5, 4, 6, -1, 5, 0, 3, 6};
  assert_int_equal(sq_graph_set_batch(g, N, src, lens, tgt), SEQCL_OK);
  sq_ref P = sq_graph_params(g), G = sq_graph_grads(g);
  assert_int_equal(sq_write(ctx, P, p, L.total * sizeof(float)), SEQCL_OK);
  assert_int_equal(sq_fill(ctx, G, L.total, 0.0f), SEQCL_OK);
  float loss;
  assert_int_equal(sq_graph_forward(g, &loss), SEQCL_OK);
  assert_int_equal(sq_graph_backward(g), SEQCL_OK);
  assert_int_equal(sq_read(ctx, G, gr, L.total * sizeof(float)), SEQCL_OK);
  const double h = 1e-2;
  int checked = 0;
  for (int i = 0; i < L.nparams; i++) {
    const sq_tparam *t = &L.p[i];
    double maxg = 0;
    for (size_t k = 0; k < t->count; k++) { /* every element of small tensors, else a stride */
      if (t->count > 40 && k % (t->count / 40 + 1)) continue;
      /* the pad row is frozen by design (padding_idx), whatever its true derivative */
      if (strstr(t->name, "embedding") && k < (size_t)c.embed_dim) continue;
      size_t at = t->off + k;
      float keep = p[at];
      float lp, lm;
      p[at] = keep + (float)h;
      assert_int_equal(sq_write(ctx, sq_ref_add(P, at), &p[at], 4), SEQCL_OK);
      assert_int_equal(sq_graph_forward(g, &lp), SEQCL_OK);
      p[at] = keep - (float)h;
      assert_int_equal(sq_write(ctx, sq_ref_add(P, at), &p[at], 4), SEQCL_OK);
      assert_int_equal(sq_graph_forward(g, &lm), SEQCL_OK);
      p[at] = keep;
      assert_int_equal(sq_write(ctx, sq_ref_add(P, at), &p[at], 4), SEQCL_OK);
      double fd = ((double)lp - (double)lm) / (2 * h);
      maxg = fmax(maxg, fabs(gr[at]));
      if (!(fabs(gr[at] - fd) <= 2e-3 + 2e-2 * fabs(fd)))
        fail_msg("%s[%zu]: analytic %.6g, finite differences %.6g", t->name, k, (double)gr[at], fd);
      checked++;
    }
    /* the pad row (id 0) of each embedding gets no gradient */
    if (strstr(t->name, "embedding"))
      for (int d = 0; d < c.embed_dim; d++) assert_true(gr[t->off + d] == 0.0f);
    (void)maxg;
  }
  assert_true(checked > 100);
  free(p);
  free(gr);
  sq_graph_free(g);
  seqcl_ctx_close(ctx);
}

static void test_additive_bidir_bridge(void **s) {
  (void)s;
  run_case(SQ_SCORE_ADDITIVE, 1, SQ_INIT_BRIDGE, 1, SQ_OUTPUT_STATE);
}
static void test_general_bidir_zeros(void **s) {
  (void)s;
  run_case(SQ_SCORE_GENERAL, 1, SQ_INIT_ZEROS, 1, SQ_OUTPUT_STATE);
}
static void test_dot_bridge(void **s) {
  (void)s;
  run_case(SQ_SCORE_DOT, 0, SQ_INIT_BRIDGE, 1, SQ_OUTPUT_STATE);
}
static void test_scaled_dot_zeros(void **s) {
  (void)s;
  run_case(SQ_SCORE_SCALED_DOT, 0, SQ_INIT_ZEROS, 1, SQ_OUTPUT_STATE);
}

static void test_additive_bi3_bridge_ctx(void **s) {
  (void)s;
  run_case(SQ_SCORE_ADDITIVE, 1, SQ_INIT_BRIDGE, 3, SQ_OUTPUT_STATE_CONTEXT);
}
static void test_dot_uni2_zeros_ctx(void **s) {
  (void)s;
  run_case(SQ_SCORE_DOT, 0, SQ_INIT_ZEROS, 2, SQ_OUTPUT_STATE_CONTEXT);
}

/* init "final": s0 is the encoder's final state, so ds_0 flows straight into
 * both directions' last steps (bidirectional: H_d = 2H interleaves them). */
static void test_additive_bi2_final(void **s) {
  (void)s;
  run_case(SQ_SCORE_ADDITIVE, 1, SQ_INIT_FINAL, 2, SQ_OUTPUT_STATE);
}
static void test_general_uni_final_ctx(void **s) {
  (void)s;
  run_case(SQ_SCORE_GENERAL, 0, SQ_INIT_FINAL, 1, SQ_OUTPUT_STATE_CONTEXT);
}

/* score "none": the fixed context is the top layer's final state at every
 * step, so dL/dc of all steps flows into both directions' last steps (alone,
 * next to the bridge's or the "final" init's path, and with [s; c]). */
static void test_none_uni_zeros(void **s) {
  (void)s;
  run_case(SQ_SCORE_NONE, 0, SQ_INIT_ZEROS, 1, SQ_OUTPUT_STATE);
}
static void test_none_bi2_bridge_ctx(void **s) {
  (void)s;
  run_case(SQ_SCORE_NONE, 1, SQ_INIT_BRIDGE, 2, SQ_OUTPUT_STATE_CONTEXT);
}
static void test_none_bi_final_ctx(void **s) {
  (void)s;
  run_case(SQ_SCORE_NONE, 1, SQ_INIT_FINAL, 1, SQ_OUTPUT_STATE_CONTEXT);
}
static void test_none_uni3_final(void **s) {
  (void)s;
  run_case(SQ_SCORE_NONE, 0, SQ_INIT_FINAL, 3, SQ_OUTPUT_STATE);
}

/* The host's gradients do not depend on its thread count: a step (dropout on)
 * at shapes where the slots split their rows and products across the pool and
 * the two encoder directions run as tasks (two threads), bit for bit against
 * one thread. Skips nothing: on a one-core machine both runs use one thread. */
static sq_config threads_config(void) {
  sq_config c = {.src_vocab = 30, .tgt_vocab = 42, .embed_dim = 16, .bos_id = 1, .eos_id = 2,
                 .pad_id = 0, .enc_hidden = 48, .enc_layers = 2, .bidirectional = 1,
                 .dec_hidden = 96, .init = SQ_INIT_BRIDGE, .score = SQ_SCORE_ADDITIVE,
                 .attn_dim = 64, .output = SQ_OUTPUT_STATE_CONTEXT};
  return c;
}

/* The shared batch of the tests below: 64 lines of lengths 1..7 with 1..6
 * labels; order 1 puts the lines with the most labels first (as file training
 * does), so the decoder's row prefix shrinks step by step; the graph has a
 * source position and two steps more than any line needs (an empty block of
 * the encoder's packing, decoder steps with no row at all). */
enum { BN = 64, BS = 7, BT = 6, BS_ROOM = BS + 1, BT_ROOM = BT + 2 };

static void shared_batch(int order, int32_t *src, int32_t *lens, int32_t *tgt) {
  for (int r = 0; r < BN; r++) {
    /* order 1: line n = the r-th by label count, longest first */
    int n = r;
    if (order) {
      int seen = 0;
      for (int tl = BT; tl >= 1 && seen <= r; tl--)
        for (int m = 0; m < BN && seen <= r; m++)
          if (1 + (m * 3) % BT == tl && seen++ == r) n = m;
    }
    lens[r] = 1 + (n * 5) % BS;
    for (int j = 0; j < BS_ROOM; j++)
      src[r * BS_ROOM + j] = j < lens[r] ? 3 + (n * 7 + j * 3) % 27 : 0;
    const int tl = 1 + (n * 3) % BT; /* labels, then EOS, then nothing */
    tgt[r * (BT_ROOM + 1)] = 1;
    for (int t = 1; t <= BT_ROOM; t++)
      tgt[r * (BT_ROOM + 1) + t] = t < tl ? 3 + (n + 5 * t) % 39 : t == tl ? 2 : -1;
  }
}

/* Loss and gradients of one step over the shared batch in `order`; with
 * `before`, the same graph first runs a step over the batch in the other
 * order, so that whatever the skipped rows left behind is there. */
static void grads_of(int threads, int order, int before, double dropout, float *loss, float *gr,
                     size_t total) {
  seqcl_ctx *ctx = NULL;
  assert_int_equal(seqcl_ctx_open("cpu", &ctx), SEQCL_OK);
  ctx->settings.threads = threads; /* a context may only use fewer than the pool has */
  const sq_config c = threads_config();
  sq_tlayout L;
  assert_int_equal(sq_tlayout_make(ctx, &c, &L), SEQCL_OK);
  assert_int_equal(L.total, total);
  sq_graph *g = NULL;
  assert_int_equal(sq_graph_create(ctx, &L, BN, BS_ROOM, BT_ROOM, &g), SEQCL_OK);
  float *p = malloc(L.total * sizeof(float));
  assert_non_null(p);
  sq_tlayout_init(&L, 11, p);
  int32_t src[BN * BS_ROOM], lens[BN], tgt[BN * (BT_ROOM + 1)];
  sq_ref P = sq_graph_params(g), G = sq_graph_grads(g);
  assert_int_equal(sq_write(ctx, P, p, L.total * sizeof(float)), SEQCL_OK);
  for (int pass = before ? 0 : 1; pass < 2; pass++) {
    shared_batch(pass ? order : !order, src, lens, tgt);
    assert_int_equal(sq_graph_set_batch(g, BN, src, lens, tgt), SEQCL_OK);
    assert_int_equal(sq_graph_set_dropout(g, dropout, 9, 3), SEQCL_OK);
    assert_int_equal(sq_fill(ctx, G, L.total, 0.0f), SEQCL_OK);
    assert_int_equal(sq_graph_forward(g, loss), SEQCL_OK);
    assert_int_equal(sq_graph_backward(g), SEQCL_OK);
  }
  assert_int_equal(sq_read(ctx, G, gr, L.total * sizeof(float)), SEQCL_OK);
  free(p);
  sq_graph_free(g);
  seqcl_ctx_close(ctx);
}

static sq_tlayout threads_layout(void) {
  seqcl_ctx *ctx = NULL;
  assert_int_equal(seqcl_ctx_open("cpu", &ctx), SEQCL_OK);
  const sq_config c = threads_config();
  sq_tlayout L;
  assert_int_equal(sq_tlayout_make(ctx, &c, &L), SEQCL_OK);
  seqcl_ctx_close(ctx);
  return L;
}

static void test_threads_same_bits(void **s) {
  (void)s;
  const size_t total = threads_layout().total;
  float *g1 = malloc(total * sizeof(float)), *g2 = malloc(total * sizeof(float));
  assert_true(g1 && g2);
  float l1, l2;
  grads_of(1, 0, 0, 0.2, &l1, g1, total);
  grads_of(2, 0, 0, 0.2, &l2, g2, total);
  assert_true(memcmp(&l1, &l2, sizeof l1) == 0);
  if (memcmp(g1, g2, total * sizeof(float)) != 0)
    fail_msg("gradients differ between 1 and 2 threads");
  free(g1);
  free(g2);
}

/* The decoder runs each step only over the prefix of rows that still have
 * labels (and no row in the steps past every line's end). The same lines in
 * an order where that prefix shrinks to a few rows, and in one where it stays
 * nearly whole, give the same loss and gradients to rounding (float sums in
 * another order: 1e-5 of the tensor's largest gradient); and the shrinking
 * run is bit for bit the same when the graph's buffers hold another batch's
 * values first (nothing skipped is read). */
static void test_row_prefix_same_gradients(void **s) {
  (void)s;
  const size_t total = threads_layout().total;
  float *ga = malloc(total * sizeof(float)), *gb = malloc(total * sizeof(float));
  float *gc = malloc(total * sizeof(float));
  assert_true(ga && gb && gc);
  float la, lb, lc;
  grads_of(1, 0, 0, 0.0, &la, ga, total);
  grads_of(1, 1, 0, 0.0, &lb, gb, total);
  grads_of(1, 1, 1, 0.0, &lc, gc, total);
  assert_true(fabsf(la - lb) <= 1e-6f * fabsf(la));
  const sq_tlayout L = threads_layout();
  for (int i = 0; i < L.nparams; i++) {
    const sq_tparam *t = &L.p[i];
    double big = 0;
    for (size_t k = 0; k < t->count; k++) big = fmax(big, fabs(ga[t->off + k]));
    assert_true(big > 0); /* every tensor gets a gradient from this batch */
    for (size_t k = 0; k < t->count; k++)
      if (!(fabs(ga[t->off + k] - gb[t->off + k]) <= 1e-5 * big))
        fail_msg("%s[%zu]: %.8g in the drawn order, %.8g longest first", t->name, k,
                 (double)ga[t->off + k], (double)gb[t->off + k]);
  }
  assert_true(memcmp(&lb, &lc, sizeof lb) == 0);
  if (memcmp(gb, gc, total * sizeof(float)) != 0)
    fail_msg("a graph that ran another batch first gave other gradients");
  free(ga);
  free(gb);
  free(gc);
}

SQ_TEST_MAIN(NULL, NULL,
      cmocka_unit_test(test_additive_bidir_bridge),
      cmocka_unit_test(test_general_bidir_zeros),
      cmocka_unit_test(test_dot_bridge),
      cmocka_unit_test(test_scaled_dot_zeros),
      cmocka_unit_test(test_additive_bi3_bridge_ctx),
      cmocka_unit_test(test_dot_uni2_zeros_ctx),
      cmocka_unit_test(test_additive_bi2_final),
      cmocka_unit_test(test_general_uni_final_ctx),
      cmocka_unit_test(test_none_uni_zeros),
      cmocka_unit_test(test_none_bi2_bridge_ctx),
      cmocka_unit_test(test_none_bi_final_ctx),
      cmocka_unit_test(test_none_uni3_final),
      cmocka_unit_test(test_threads_same_bits),
      cmocka_unit_test(test_row_prefix_same_gradients))
