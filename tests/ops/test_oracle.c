/* The yardstick itself: the oracle against the hand-computed cases of seed 000
 * and simple identities, and the checking machinery against deliberately
 * broken operations (a check that cannot fail proves nothing). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../common/test_main.h"
#include "check/arena.h"
#include "check/oplist.h"
#include "oracle.h"

#define CLOSE(a, b, tol) assert_true(fabs((a) - (b)) <= (tol))

/* ---- seed 000 (DESIGN.md §3) ---- */
static const double h3[] = {1, 0, 0, 2, 2, 2};

static void oracle_seed000_softmax_context(void **state) {
  (void)state;
  double e[6] = {0, log(2.0), log(3.0), 0, log(2.0), log(3.0)}, a[6], c[4];
  double keys[12];
  memcpy(keys, h3, sizeof h3);
  memcpy(keys + 6, h3, sizeof h3);
  int32_t lens[2] = {3, 2};
  oracle_masked_softmax(2, 3, e, lens, NULL, a);
  oracle_context(2, 3, 2, a, keys, c);
  CLOSE(a[0], 1.0 / 6, 1e-15);
  CLOSE(a[1], 2.0 / 6, 1e-15);
  CLOSE(a[2], 3.0 / 6, 1e-15);
  CLOSE(c[0], 7.0 / 6, 1e-15);
  CLOSE(c[1], 5.0 / 3, 1e-15);
  CLOSE(a[3], 1.0 / 3, 1e-15);
  CLOSE(a[4], 2.0 / 3, 1e-15);
  assert_true(a[5] == 0.0);
  CLOSE(c[2], 1.0 / 3, 1e-15);
  CLOSE(c[3], 4.0 / 3, 1e-15);
  /* the same masking expressed as a mask instead of a length */
  int32_t full[2] = {3, 3}, mask[6] = {1, 1, 1, 1, 1, 0};
  double b[6];
  oracle_masked_softmax(2, 3, e, full, mask, b);
  for (int i = 0; i < 6; i++) CLOSE(a[i], b[i], 1e-15);
}

static void oracle_seed000_dot_query(void **state) {
  (void)state; /* the query the op list uses for the fused dot case */
  double x = 0.5 * log(1.5), y = 0.5 * (log(2.0) + x), q[2] = {x, y}, e[3], a[3];
  oracle_attn_scores(SQ_SCORE_DOT, 1, 3, 2, 2, 0, h3, q, NULL, NULL, NULL, NULL, NULL, NULL, e);
  CLOSE(e[1] - e[0], log(2.0), 1e-15);
  CLOSE(e[2] - e[0], log(3.0), 1e-15);
  int32_t len = 3;
  oracle_masked_softmax(1, 3, e, &len, NULL, a);
  CLOSE(a[0], 1.0 / 6, 1e-15);
  CLOSE(a[2], 0.5, 1e-15);
}

/* ---- identities ---- */
static void oracle_gemm_identities(void **state) {
  (void)state;
  double A[6] = {1, 2, 3, 4, 5, 6}, B[6] = {7, 8, 9, 10, 11, 12}, C[4], Ct[4], I3[9] = {0};
  for (int i = 0; i < 3; i++) I3[4 * i] = 1;
  oracle_gemm(0, 0, 2, 2, 3, 1, A, 3, B, 2, 0, C, 2); /* [2,3] x [3,2] */
  assert_true(C[0] == 58 && C[1] == 64 && C[2] == 139 && C[3] == 154);
  oracle_gemm(1, 1, 2, 2, 3, 1, B, 2, A, 3, 0, Ct, 2); /* B^T A^T = (AB)^T */
  assert_true(Ct[0] == 58 && Ct[1] == 139 && Ct[2] == 64 && Ct[3] == 154);
  double D[6];
  oracle_gemm(0, 0, 2, 3, 3, 1, A, 3, I3, 3, 0, D, 3);
  for (int i = 0; i < 6; i++) assert_true(D[i] == A[i]);
  double E[4] = {1, 1, 1, 1};
  oracle_gemm(0, 0, 2, 2, 3, 2, A, 3, B, 2, -1, E, 2);
  assert_true(E[0] == 115 && E[3] == 307);
}

static void oracle_softmax_identities(void **state) {
  (void)state;
  double x[5] = {0.3, -1.2, 2.5, 1e-3, 0.7}, xs[5], y[5], ys[5], l[5];
  int32_t len = 5;
  for (int i = 0; i < 5; i++) xs[i] = x[i] + 1e4;
  oracle_masked_softmax(1, 5, x, &len, NULL, y);
  oracle_masked_softmax(1, 5, xs, &len, NULL, ys); /* shift invariance */
  oracle_log_softmax(1, 5, x, l);
  double sum = 0;
  for (int i = 0; i < 5; i++) {
    sum += y[i];
    CLOSE(y[i], ys[i], 1e-12);
    CLOSE(l[i], log(y[i]), 1e-14);
  }
  CLOSE(sum, 1.0, 1e-15);
  double u[12] = {0};
  int32_t labels[3] = {2, -100, 11};
  CLOSE(oracle_cross_entropy(1, 12, u, labels), log(12.0), 1e-14);
  labels[0] = -1;
  labels[2] = -1;
  assert_true(oracle_cross_entropy(3, 4, u, labels) == 0.0);
}

static void oracle_score_identities(void **state) {
  (void)state;
  double keys[2 * 3 * 4], q[2 * 4], I4[16] = {0}, e_dot[6], e_gen[6], e_sc[6];
  for (int i = 0; i < 24; i++) keys[i] = sin(i + 1.0);
  for (int i = 0; i < 8; i++) q[i] = cos(i + 1.0);
  for (int i = 0; i < 4; i++) I4[5 * i] = 1;
  oracle_attn_scores(SQ_SCORE_DOT, 2, 3, 4, 4, 0, keys, q, NULL, NULL, NULL, NULL, NULL, NULL, e_dot);
  oracle_attn_scores(SQ_SCORE_GENERAL, 2, 3, 4, 4, 0, keys, q, NULL, NULL, I4, NULL, NULL, NULL, e_gen);
  oracle_attn_scores(SQ_SCORE_SCALED_DOT, 2, 3, 4, 4, 0, keys, q, NULL, NULL, NULL, NULL, NULL, NULL, e_sc);
  for (int i = 0; i < 6; i++) {
    CLOSE(e_dot[i], e_gen[i], 1e-15);
    CLOSE(e_sc[i], e_dot[i] / 2, 1e-15);
  }
  /* additive with A = 1, v = 1: tanh of the summed projections, plus b_v */
  double Wk[4] = {0.1, -0.2, 0.3, 0.4}, Wq[4] = {0.5, 0.1, -0.1, 0.2}, v = 1, bv = 0.25, e[6];
  oracle_attn_scores(SQ_SCORE_ADDITIVE, 2, 3, 4, 4, 1, keys, q, Wk, NULL, Wq, NULL, &v, &bv, e);
  double u = 0;
  for (int i = 0; i < 4; i++) u += Wk[i] * keys[4 + i] + Wq[i] * q[i];
  CLOSE(e[1], tanh(u) + 0.25, 1e-15);
}

static void oracle_gru_identities(void **state) {
  (void)state;
  enum { H = 3, In = 2 };
  double Wi[3 * H * In], Wh[3 * H * H], bi[3 * H] = {0}, bh[3 * H] = {0};
  for (int i = 0; i < 3 * H * In; i++) Wi[i] = 0.1 * sin(i + 0.5);
  for (int i = 0; i < 3 * H * H; i++) Wh[i] = 0.1 * cos(i + 0.5);
  double x[4 * In], h[H] = {0.2, -0.4, 0.6}, h2[H];
  for (int i = 0; i < 4 * In; i++) x[i] = sin(3.0 * i);
  /* z saturated at 1: the state is kept */
  for (int i = 0; i < H; i++) bi[H + i] = 60;
  memcpy(h2, h, sizeof h);
  oracle_gru_cell(1, In, H, x, In, Wi, Wh, bi, bh, h2);
  for (int i = 0; i < H; i++) CLOSE(h2[i], h[i], 1e-15);
  /* z saturated at 0 and r at 0: h' = tanh(W_in x) */
  for (int i = 0; i < H; i++) bi[H + i] = -60, bi[i] = -60;
  memcpy(h2, h, sizeof h);
  oracle_gru_cell(1, In, H, x, In, Wi, Wh, bi, bh, h2);
  for (int i = 0; i < H; i++) {
    double s = 0;
    for (int p = 0; p < In; p++) s += Wi[(2 * H + i) * In + p] * x[p];
    CLOSE(h2[i], tanh(s), 1e-12);
  }
  /* a layer over one step is one cell; the reverse direction over a row equals
   * the forward direction over that row reversed in time */
  memset(bi, 0, sizeof bi);
  double hl[H], hc[H], out[4 * H] = {0};
  memcpy(hl, h, sizeof h);
  memcpy(hc, h, sizeof h);
  oracle_gru_layer(1, 1, In, H, x, Wi, Wh, bi, bh, NULL, 0, hl, out, H, 0);
  oracle_gru_cell(1, In, H, x, In, Wi, Wh, bi, bh, hc);
  for (int i = 0; i < H; i++) CLOSE(hl[i], hc[i], 1e-15);
  int32_t len = 3;
  double xr[4 * In], hf[H] = {0}, hr[H] = {0}, of[4 * H] = {0}, orv[4 * H] = {0};
  for (int t = 0; t < 3; t++) memcpy(xr + t * In, x + (2 - t) * In, In * sizeof(double));
  oracle_gru_layer(1, 4, In, H, x, Wi, Wh, bi, bh, &len, 1, hr, orv, H, 0);
  oracle_gru_layer(1, 4, In, H, xr, Wi, Wh, bi, bh, &len, 0, hf, of, H, 0);
  for (int i = 0; i < H; i++) CLOSE(hr[i], hf[i], 1e-15);
  for (int t = 0; t < 3; t++)
    for (int i = 0; i < H; i++) CLOSE(orv[t * H + i], of[(2 - t) * H + i], 1e-15);
  for (int i = 0; i < H; i++) assert_true(orv[3 * H + i] == 0.0); /* past the length */
}

static void oracle_argmax_ties(void **state) {
  (void)state;
  float x[8] = {0.5f, 2.0f, -1.0f, 2.0f, 1, 1, 1, 1}, b[4] = {0, 0, 0, 0};
  double ids[2];
  oracle_argmax(2, 4, x, 4, b, ids);
  assert_true(ids[0] == 1 && ids[1] == 0);
}

/* ---- the machinery can fail ---- */
enum { BROKEN_NONE, BROKEN_GUARD_AFTER, BROKEN_GUARD_BEFORE, BROKEN_NAN, BROKEN_ZEROS,
       BROKEN_OFF, BROKEN_INPUT };
static int broken_mode;

static seqcl_status broken_gen(sq_case *c, sq_rng *r) {
  float *x = sq_case_f(c, "x", 16);
  if (!x) return SEQCL_ERR_OUT_OF_MEMORY;
  for (int i = 0; i < 16; i++) x[i] = sq_rng_unit(r);
  sq_case_out(c, "y", 16, 0);
  return SEQCL_OK;
}

static seqcl_status broken_run(sq_arena *a, const sq_case *c) {
  seqcl_ctx *ctx = a->ctx; /* the runner's arena, which it releases */
  sq_ref x = sq_arena_in_named(a, c, "x"), y = sq_arena_out(a, "y", 16, NULL);
  seqcl_status st = a->st;
  float v[16];
  memcpy(v, sq_case_inf(c, "x"), sizeof v);
  if (broken_mode == BROKEN_NAN) v[3] = NAN;
  if (broken_mode == BROKEN_ZEROS) memset(v, 0, sizeof v);
  if (broken_mode == BROKEN_OFF) v[5] += 1e-3f;
  float one = 1;
  if (st == SEQCL_OK) st = sq_write(ctx, y, v, sizeof v);
  if (st == SEQCL_OK && broken_mode == BROKEN_GUARD_AFTER) st = sq_write(ctx, sq_ref_add(y, 16), &one, 4);
  if (st == SEQCL_OK && broken_mode == BROKEN_GUARD_BEFORE)
    st = sq_write(ctx, sq_at(y.buf, y.off - 1), &one, 4);
  if (st == SEQCL_OK && broken_mode == BROKEN_INPUT) st = sq_write(ctx, sq_ref_add(x, 2), &one, 4);
  if (st == SEQCL_OK) st = sq_arena_verify(a, a->fault, a->fault_cap);
  if (st == SEQCL_OK) st = sq_arena_fetch(a, y, 16, 0, a->got[0]);
  return st;
}

static void broken_tol(const sq_case *c, int k, double *const *ref, double *tol) {
  (void)ref;
  for (size_t e = 0; e < c->out[k].n; e++) tol[e] = 1e-6;
}

static seqcl_status identity_ref(void *user, const sq_case *c, double *const *ref) {
  (void)user;
  for (int i = 0; i < 16; i++) ref[0][i] = sq_case_inf(c, "x")[i];
  return SEQCL_OK;
}

static const char *const broken_shapes[] = {"N=16", NULL};
static const sq_op broken_op = {"broken", "1e-6", broken_shapes, broken_shapes, 0,
                                broken_gen, broken_run, broken_tol, NULL};

static void check_catches_broken_ops(void **state) {
  (void)state;
  seqcl_ctx *host = NULL;
  assert_int_equal(seqcl_ctx_open("cpu", &host), SEQCL_OK);
  sq_reference ref = {identity_ref, NULL, 0, "identity"};
  static const struct {
    int mode;
    const char *needle;
  } cases[] = {{BROKEN_GUARD_AFTER, "after"}, {BROKEN_GUARD_BEFORE, "before"},
               {BROKEN_NAN, "non-finite"},    {BROKEN_ZEROS, "mistrusted"},
               {BROKEN_OFF, "tolerance"},     {BROKEN_INPUT, "into input"}};
  sq_case_result r;
  broken_mode = BROKEN_NONE;
  assert_int_equal(sq_check_case(host, &broken_op, "N=16", 3, &ref, &r), SEQCL_OK);
  assert_int_equal(r.verdict, SQ_PASS);
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    broken_mode = cases[i].mode;
    assert_int_equal(sq_check_case(host, &broken_op, "N=16", 3, &ref, &r), SEQCL_OK);
    printf("  broken mode %d: %s\n", cases[i].mode, r.message);
    assert_int_equal(r.verdict, SQ_FAIL);
    assert_non_null(strstr(r.message, cases[i].needle));
  }
  seqcl_ctx_close(host);
}

static void shapes_and_seeds(void **state) {
  (void)state;
  sq_shape s;
  assert_int_equal(sq_shape_parse("N=3,S=7,alpha=-0.5", &s), 0);
  assert_int_equal(sq_shape_int(&s, "S", 0), 7);
  assert_true(sq_shape_get(&s, "alpha", 0) == -0.5);
  const char *bad[] = {"N", "N=", "=3", "N=3,", "N=3,N=4", "N=3;S=4", "N=x", "N=nan"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
    assert_int_equal(sq_shape_parse(bad[i], &s), -1);
  sq_case a, b, c;
  const sq_op *gemm = sq_op_find("gemm");
  assert_non_null(gemm);
  assert_int_equal(sq_case_make(gemm, "M=3,N=4,K=5", 7, &a), SEQCL_OK);
  assert_int_equal(sq_case_make(gemm, "M=3,N=4,K=5", 7, &b), SEQCL_OK);
  assert_int_equal(sq_case_make(gemm, "M=3,N=4,K=5", 8, &c), SEQCL_OK);
  assert_memory_equal(a.in[0].f, b.in[0].f, a.in[0].n * 4);
  assert_true(memcmp(a.in[0].f, c.in[0].f, a.in[0].n * 4) != 0);
  for (size_t i = 0; i < a.in[0].n; i++) assert_true(a.in[0].f[i] != 0 && fabsf(a.in[0].f[i]) <= 1);
  sq_case_free(&a);
  sq_case_free(&b);
  sq_case_free(&c);
  assert_int_equal(sq_case_make(gemm, "M=0,N=4,K=5", 7, &a), SEQCL_ERR_INVALID_ARGUMENT);
  assert_int_equal(sq_case_make(gemm, "M=3;N=4", 7, &a), SEQCL_ERR_INVALID_ARGUMENT);
}

/* The list covers the shapes the issue asks for: N = 1, S = 1, primes, and a
 * large attention case (S >= 256, H >= 512); every entry states a tolerance. */
static void op_list_coverage(void **state) {
  (void)state;
  size_t n;
  const sq_op *const *ops = sq_op_list(&n);
  int large = 0;
  sq_reference oracle = oracle_as_reference();
  for (size_t i = 0; i < n; i++) {
    assert_true(ops[i]->tolerance && strlen(ops[i]->tolerance) > 4);
    assert_non_null(ops[i]->shapes[0]);
    assert_non_null(ops[i]->quick[0]);
    for (size_t k = 0; ops[i]->shapes[k]; k++) {
      sq_shape s;
      assert_int_equal(sq_shape_parse(ops[i]->shapes[k], &s), 0);
      if (sq_shape_int(&s, "S", 0) >= 256 && sq_shape_int(&s, "He", 0) >= 512) large = 1;
    }
    /* the oracle knows every entry (the hand case carries its own values) */
    sq_case c;
    assert_int_equal(sq_case_make(ops[i], ops[i]->quick[0], 0, &c), SEQCL_OK);
    double *ref[SQ_CASE_MAX_OUT];
    for (int k = 0; k < c.n_out; k++) ref[k] = calloc(c.out[k].n, sizeof(double));
    if (!c.expect[0]) assert_int_equal(oracle.fn(NULL, &c, ref), SEQCL_OK);
    for (int k = 0; k < c.n_out; k++) free(ref[k]);
    sq_case_free(&c);
  }
  assert_true(large);
  assert_non_null(sq_op_find("attn_seed000"));
  assert_true(sq_op_matches(sq_op_find("attn_fused.dot"), "attn_fused"));
  assert_false(sq_op_matches(sq_op_find("attn_fused.dot"), "attn_f"));
}

SQ_TEST_MAIN(NULL, NULL,
      cmocka_unit_test(oracle_seed000_softmax_context),
      cmocka_unit_test(oracle_seed000_dot_query),
      cmocka_unit_test(oracle_gemm_identities),
      cmocka_unit_test(oracle_softmax_identities),
      cmocka_unit_test(oracle_score_identities),
      cmocka_unit_test(oracle_gru_identities),
      cmocka_unit_test(oracle_argmax_ties),
      cmocka_unit_test(check_catches_broken_ops),
      cmocka_unit_test(shapes_and_seeds),
      cmocka_unit_test(op_list_coverage))
