/* The metrics of model/metrics.h: hand-worked cases, then the corpora of
 * metric_fixtures.txt whose BLEU NLTK computed (tools/make_metric_fixtures.py). */
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
#include "model/metrics.h"
#include "model/wordtab.h"

static void add(sq_metrics *m, const int32_t *h, size_t nh, const int32_t *r, size_t nr) {
  assert_int_equal(sq_metrics_add(m, h, nh, r, nr), SEQCL_OK);
}

static void assert_near(double got, double want, double tol, const char *what) {
  if (!(fabs(got - want) <= tol)) fail_msg("%s: got %.10f, want %.10f", what, got, want);
}

/* Exact match and edit rate by hand: one substitution, one deletion, one
 * insertion against 3 + 4 + 2 reference tokens. */
static void test_exact_and_ter(void **state) {
  (void)state;
  sq_metrics m;
  sq_metrics_init(&m);
  const int32_t r1[] = {1, 2, 3}, h1[] = {1, 9, 3};
  const int32_t r2[] = {4, 5, 6, 7}, h2[] = {4, 5, 7};
  const int32_t r3[] = {8, 9}, h3[] = {8, 9, 9};
  const int32_t r4[] = {5}, h4[] = {5};
  add(&m, h1, 3, r1, 3);
  add(&m, h2, 3, r2, 4);
  add(&m, h3, 3, r3, 2);
  add(&m, h4, 1, r4, 1);
  assert_int_equal(m.lines, 4);
  assert_int_equal(m.exact, 1);
  assert_int_equal(m.edits, 3);
  assert_near(sq_metrics_exact(&m), 25.0, 1e-12, "exact");
  assert_near(sq_metrics_ter(&m), 300.0 / 10.0, 1e-12, "ter");
  sq_metrics_free(&m);
}

/* Edit distance is symmetric in the usual sense and counts a whole empty side. */
static void test_edit_extremes(void **state) {
  (void)state;
  sq_metrics m;
  sq_metrics_init(&m);
  const int32_t r[] = {1, 2, 3, 4};
  add(&m, NULL, 0, r, 4); /* empty output: 4 deletions */
  assert_int_equal(m.edits, 4);
  add(&m, r, 4, NULL, 0); /* empty reference: 4 insertions, exact never */
  assert_int_equal(m.edits, 8);
  add(&m, NULL, 0, NULL, 0); /* both empty: an exact match */
  assert_int_equal(m.exact, 1);
  const int32_t a[] = {1, 2, 3, 4, 5, 6}, b[] = {6, 5, 4, 3, 2, 1};
  add(&m, a, 6, b, 6);
  assert_int_equal(m.edits, 8 + 6);
  sq_metrics_free(&m);
  sq_metrics_init(&m);
  assert_true(isnan(sq_metrics_ter(&m)));
  assert_near(sq_metrics_exact(&m), 0.0, 0.0, "exact of nothing");
  assert_near(sq_metrics_bleu(&m), 0.0, 0.0, "bleu of nothing");
}

/* BLEU by hand: hypothesis 1 2 3 4 5 6 against 1 2 3 4 5 7 8: p1 = 5/6,
 * p2 = 4/5, p3 = 3/4, p4 = 2/3, c = 6 < r = 7, BP = exp(1 - 7/6). */
static void test_bleu_hand(void **state) {
  (void)state;
  sq_metrics m;
  sq_metrics_init(&m);
  const int32_t h[] = {1, 2, 3, 4, 5, 6}, r[] = {1, 2, 3, 4, 5, 7, 8};
  add(&m, h, 6, r, 7);
  double want = 100.0 * exp(1.0 - 7.0 / 6.0) * pow(5.0 / 6 * 4.0 / 5 * 3.0 / 4 * 2.0 / 3, 0.25);
  assert_near(sq_metrics_bleu(&m), want, 1e-9, "bleu");
  /* a clipped count: 7 7 7 7 against 7 7 x x matches 2 unigrams, not 4 */
  sq_metrics_free(&m);
  sq_metrics_init(&m);
  const int32_t h2[] = {7, 7, 7, 7}, r2[] = {7, 7, 1, 2};
  add(&m, h2, 4, r2, 4);
  assert_int_equal(m.match[0], 2);
  assert_int_equal(m.match[1], 1);
  assert_int_equal(m.match[3], 0);
  assert_near(sq_metrics_bleu(&m), 0.0, 0.0, "bleu with no 4-gram match");
  sq_metrics_free(&m);
}

/* Every corpus of the NLTK fixtures, to 1e-6 (the issue asks for 0.01). */
static void test_nltk_fixtures(void **state) {
  (void)state;
  FILE *f = fopen(FIXTURES, "r");
  if (!f) fail_msg("cannot open %s", FIXTURES);
  char line[4096], name[128];
  double bleu, ter, exact;
  int cases = 0;
  sq_metrics m;
  while (fgets(line, sizeof line, f)) {
    if (line[0] == '#') continue;
    assert_int_equal(sscanf(line, "case %127s %lf %lf %lf", name, &bleu, &ter, &exact), 4);
    sq_metrics_init(&m);
    while (fgets(line, sizeof line, f) && strncmp(line, "end", 3) != 0) {
      int32_t side[2][64];
      size_t n[2] = {0, 0};
      int s = 0;
      for (char *p = line; *p && *p != '\n';) {
        if (*p == ' ') {
          p++;
        } else if (*p == '|') {
          s = 1;
          p++;
        } else {
          assert_true(n[s] < 64);
          side[s][n[s]++] = (int32_t)strtol(p, &p, 10);
        }
      }
      add(&m, side[0], n[0], side[1], n[1]);
    }
    assert_near(sq_metrics_bleu(&m), bleu, 1e-6, name);
    assert_near(sq_metrics_ter(&m), ter, 1e-6, name);
    assert_near(sq_metrics_exact(&m), exact, 1e-6, name);
    sq_metrics_free(&m);
    cases++;
  }
  fclose(f);
  assert_true(cases >= 18);
}

/* The token table: ids in order of first appearance, counts, growth past
 * its first table size. */
static void test_wordtab(void **state) {
  (void)state;
  sq_wordtab t = {0};
  int32_t id = -1;
  assert_int_equal(sq_wordtab_add(&t, "ab", 2, &id), SEQCL_OK);
  assert_int_equal(id, 0);
  assert_int_equal(sq_wordtab_add(&t, "abc", 2, &id), SEQCL_OK); /* "ab" again */
  assert_int_equal(id, 0);
  assert_int_equal(t.counts[0], 2);
  char w[16];
  for (int i = 0; i < 1000; i++) {
    snprintf(w, sizeof w, "w%d", i);
    assert_int_equal(sq_wordtab_add(&t, w, strlen(w), &id), SEQCL_OK);
    assert_int_equal(id, i + 1);
  }
  assert_int_equal(sq_wordtab_add(&t, "w500", 4, &id), SEQCL_OK);
  assert_int_equal(id, 501);
  assert_string_equal(t.words[501], "w500");
  sq_wordtab_free(&t);
  assert_int_equal(t.count, 0);
}

SQ_TEST_MAIN(NULL, NULL,
      cmocka_unit_test(test_exact_and_ter), cmocka_unit_test(test_edit_extremes),
      cmocka_unit_test(test_bleu_hand),     cmocka_unit_test(test_nltk_fixtures),
      cmocka_unit_test(test_wordtab))
