/* Attention entropy and the masked-attention invariants (model/attn_stats.h)
 * on hand-worked weights: seed 000's example [1/6, 2/6, 3/6], a uniform row,
 * a one-position source, padding that leaks, a sum off by more than the
 * tolerance, and a NaN. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "../common/test_main.h"
#include "model/attn_stats.h"

static void assert_near(double got, double want, double tol, const char *what) {
  if (!(fabs(got - want) <= tol)) fail_msg("%s: got %.10f, want %.10f", what, got, want);
}

/* Two steps over a source of 3 with one padding column (cols 4): the seed's
 * weights and a uniform row. H = -(1/6 ln 1/6 + 1/3 ln 1/3 + 1/2 ln 1/2) and
 * ln 3; the means are over the two steps. */
static void test_entropy(void **state) {
  (void)state;
  const float a[2][4] = {{1.0f / 6, 2.0f / 6, 3.0f / 6, 0.0f}, {1.0f / 3, 1.0f / 3, 1.0f / 3, 0.0f}};
  sq_attn_stats s;
  sq_attn_stats_init(&s);
  sq_attn_stats_add(&s, &a[0][0], 2, 3, 4, 4, 0);
  const double h1 = -(log(1.0 / 6) / 6 + log(1.0 / 3) / 3 + log(0.5) / 2), h2 = log(3.0);
  assert_int_equal(s.steps, 2);
  assert_near(sq_attn_stats_mean_entropy(&s), (h1 + h2) / 2, 1e-6, "mean entropy");
  assert_near(sq_attn_stats_mean_entropy_norm(&s), (h1 / log(3.0) + 1.0) / 2, 1e-6, "normalised");
  assert_true(sq_attn_stats_pass(&s));
  assert_true(s.worst_sum < 1e-6);
  assert_true(s.worst_pad == 0.0);
}

/* A one-position source: weight 1, entropy 0 and normalised entropy 0 (ln 1 = 0
 * must not divide). */
static void test_length_one(void **state) {
  (void)state;
  const float a[3] = {1.0f, 0.0f, 0.0f};
  sq_attn_stats s;
  sq_attn_stats_init(&s);
  sq_attn_stats_add(&s, a, 1, 1, 3, 3, 0);
  assert_true(sq_attn_stats_mean_entropy(&s) == 0.0);
  assert_true(sq_attn_stats_mean_entropy_norm(&s) == 0.0);
  assert_true(sq_attn_stats_pass(&s));
}

/* Each invariant fails on its own: weight at a padding position (the worst
 * value reported), a row summing to 1 + 1e-4 (line and step recorded), a NaN. */
static void test_failures(void **state) {
  (void)state;
  const float pad[2] = {0.75f, 0.25f}; /* len 1: 0.25 sits on padding */
  sq_attn_stats s;
  sq_attn_stats_init(&s);
  sq_attn_stats_add(&s, pad, 1, 1, 2, 2, 0);
  assert_false(sq_attn_stats_pass(&s));
  assert_near(s.worst_pad, 0.25, 0.0, "worst padding weight");

  const float ok[2] = {0.5f, 0.5f}, off[2] = {0.5f, 0.5001f};
  sq_attn_stats_init(&s);
  sq_attn_stats_add(&s, ok, 1, 2, 2, 2, 0);
  assert_true(sq_attn_stats_pass(&s));
  sq_attn_stats_add(&s, off, 1, 2, 2, 2, 7);
  assert_false(sq_attn_stats_pass(&s));
  assert_near(s.worst_sum, 1e-4, 1e-7, "worst sum error");
  assert_int_equal(s.worst_sum_line, 7);
  assert_int_equal(s.worst_sum_step, 0);

  const float bad[2] = {NAN, 1.0f};
  sq_attn_stats_init(&s);
  sq_attn_stats_add(&s, bad, 1, 2, 2, 2, 0);
  assert_int_equal(s.nonfinite, 1);
  assert_false(sq_attn_stats_pass(&s));
}

SQ_TEST_MAIN(NULL, NULL,
      cmocka_unit_test(test_entropy),
      cmocka_unit_test(test_length_one),
      cmocka_unit_test(test_failures))
