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

static void grads_at_threads(int threads, float *loss, float *gr, size_t total) {
  enum { BN = 64, BS = 7, BT = 6 };
  seqcl_ctx *ctx = NULL;
  assert_int_equal(seqcl_ctx_open("cpu", &ctx), SEQCL_OK);
  ctx->settings.threads = threads; /* a context may only use fewer than the pool has */
  const sq_config c = threads_config();
  sq_tlayout L;
  assert_int_equal(sq_tlayout_make(ctx, &c, &L), SEQCL_OK);
  assert_int_equal(L.total, total);
  sq_graph *g = NULL;
  assert_int_equal(sq_graph_create(ctx, &L, BN, BS, BT, &g), SEQCL_OK);
  float *p = malloc(L.total * sizeof(float));
  assert_non_null(p);
  sq_tlayout_init(&L, 11, p);
  int32_t src[BN * BS], lens[BN], tgt[BN * (BT + 1)];
  for (int n = 0; n < BN; n++) {
    lens[n] = 1 + (n * 5) % BS;
    for (int j = 0; j < BS; j++) src[n * BS + j] = j < lens[n] ? 3 + (n * 7 + j * 3) % 27 : 0;
    const int tl = 1 + (n * 3) % BT; /* labels, then EOS, then nothing */
    tgt[n * (BT + 1)] = 1;
    for (int t = 1; t <= BT; t++)
      tgt[n * (BT + 1) + t] = t < tl ? 3 + (n + 5 * t) % 39 : t == tl ? 2 : -1;
  }
  assert_int_equal(sq_graph_set_batch(g, BN, src, lens, tgt), SEQCL_OK);
  assert_int_equal(sq_graph_set_dropout(g, 0.2, 9, 3), SEQCL_OK);
  sq_ref P = sq_graph_params(g), G = sq_graph_grads(g);
  assert_int_equal(sq_write(ctx, P, p, L.total * sizeof(float)), SEQCL_OK);
  assert_int_equal(sq_fill(ctx, G, L.total, 0.0f), SEQCL_OK);
  assert_int_equal(sq_graph_forward(g, loss), SEQCL_OK);
  assert_int_equal(sq_graph_backward(g), SEQCL_OK);
  assert_int_equal(sq_read(ctx, G, gr, L.total * sizeof(float)), SEQCL_OK);
  free(p);
  sq_graph_free(g);
  seqcl_ctx_close(ctx);
}

static void test_threads_same_bits(void **s) {
  (void)s;
  seqcl_ctx *ctx = NULL;
  assert_int_equal(seqcl_ctx_open("cpu", &ctx), SEQCL_OK);
  const sq_config c = threads_config();
  sq_tlayout L;
  assert_int_equal(sq_tlayout_make(ctx, &c, &L), SEQCL_OK);
  seqcl_ctx_close(ctx);
  float *g1 = malloc(L.total * sizeof(float)), *g2 = malloc(L.total * sizeof(float));
  assert_true(g1 && g2);
  float l1, l2;
  grads_at_threads(1, &l1, g1, L.total);
  grads_at_threads(2, &l2, g2, L.total);
  assert_true(memcmp(&l1, &l2, sizeof l1) == 0);
  for (int i = 0; i < L.nparams; i++)
    if (memcmp(g1 + L.p[i].off, g2 + L.p[i].off, L.p[i].count * sizeof(float)) != 0)
      fail_msg("%s: gradients differ between 1 and 2 threads", L.p[i].name);
  free(g1);
  free(g2);
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
      cmocka_unit_test(test_threads_same_bits))
