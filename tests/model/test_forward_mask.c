/* seqcl_model_forward_masked (a source position hidden from the attention) on
 * the host path and every OpenCL device, against a direct computation: with a
 * unidirectional encoder and a zero initial decoder state, the encoder's
 * outputs before position j do not depend on the tokens from j on, so hiding
 * each line's last position must give what a forward pass over the line
 * without its last token gives. Also: a mask that keeps everything is the
 * unmasked forward bit for bit, a hidden middle position gets weight exactly 0
 * and changes the logits, and a line with every position hidden is refused.
 *
 * Tolerance: SPEC §5's 1e-4 x max |ref| (the two runs pad to different S, so
 * the softmax and GEMM sums may round differently). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../common/test_lines.h"
#include "../common/test_main.h"
#include "test_devices.h"

#include <seqcl/seqcl.h>

#define MODEL GOLDEN_DIR "/uni1_additive_zeros_state"

static double max_abs(const float *x, size_t n) {
  double m = 0;
  for (size_t i = 0; i < n; i++)
    if (fabs(x[i]) > m) m = fabs(x[i]);
  return m;
}

static void on_device(const seqcl_device_info *d) {
  seqcl_ctx *ctx = NULL;
  seqcl_model *m = NULL;
  assert_int_equal(seqcl_ctx_open_info(d, &ctx), SEQCL_OK);
  assert_int_equal(seqcl_model_load(ctx, MODEL, &m), SEQCL_OK);
  lines src, tgt, cut;
  read_lines(MODEL "/src.txt", &src);
  read_lines(MODEL "/tgt.txt", &tgt);
  seqcl_seqs s = lines_view(&src), t = lines_view(&tgt);
  uint8_t keep[TEST_LINES_TOKENS];

  /* keeping everything is the plain forward pass, bit for bit */
  seqcl_forward_result *plain = NULL, *r = NULL;
  assert_int_equal(seqcl_model_forward(m, &s, &t, 0, &plain), SEQCL_OK);
  memset(keep, 1, sizeof keep);
  assert_int_equal(seqcl_model_forward_masked(m, &s, keep, &t, 0, &r), SEQCL_OK);
  const size_t nl = plain->N * plain->T * plain->V, na = plain->N * plain->T * plain->S;
  assert_memory_equal(r->logits, plain->logits, nl * sizeof(float));
  assert_memory_equal(r->alignments, plain->alignments, na * sizeof(float));
  seqcl_forward_result_free(r);

  /* the last position hidden = the line without its last token (lines of one
   * token keep it) */
  cut.n = src.n;
  cut.off[0] = 0;
  for (size_t i = 0, k = 0; i < src.n; i++) {
    const size_t len = src.off[i + 1] - src.off[i], kept = len > 1 ? len - 1 : len;
    for (size_t j = 0; j < len; j++) keep[src.off[i] + j] = j < kept;
    for (size_t j = 0; j < kept; j++) cut.ids[k++] = src.ids[src.off[i] + j];
    cut.off[i + 1] = k;
  }
  seqcl_seqs c = lines_view(&cut);
  seqcl_forward_result *ref = NULL;
  assert_int_equal(seqcl_model_forward(m, &c, &t, 0, &ref), SEQCL_OK);
  assert_int_equal(seqcl_model_forward_masked(m, &s, keep, &t, 2, &r), SEQCL_OK);
  const double lt = 1e-4 * max_abs(ref->logits, nl);
  for (size_t i = 0; i < r->N; i++) {
    const size_t len = src.off[i + 1] - src.off[i], kept = cut.off[i + 1] - cut.off[i];
    for (int st = 0; st < r->steps[i]; st++) {
      const float *a = r->logits + (i * r->T + st) * r->V, *b = ref->logits + (i * r->T + st) * r->V;
      for (int v = 0; v < r->V; v++)
        if (!(fabs(a[v] - b[v]) <= lt))
          fail_msg("%s: line %zu step %d logit %d: masked %g, cut %g", d->selector, i + 1, st + 1,
                   v, (double)a[v], (double)b[v]);
      const float *wa = r->alignments + (i * r->T + st) * r->S;
      const float *wb = ref->alignments + (i * ref->T + st) * ref->S;
      for (size_t j = 0; j < kept; j++)
        if (!(fabs(wa[j] - wb[j]) <= 1e-4))
          fail_msg("%s: line %zu step %d weight %zu: masked %g, cut %g", d->selector, i + 1, st + 1,
                   j + 1, (double)wa[j], (double)wb[j]);
      for (size_t j = kept; j < (size_t)r->S; j++)
        if (wa[j] != 0.0f)
          fail_msg("%s: line %zu step %d: hidden/padding position %zu has weight %g (len %zu)",
                   d->selector, i + 1, st + 1, j + 1, (double)wa[j], len);
    }
  }
  seqcl_forward_result_free(r);
  seqcl_forward_result_free(ref);

  /* a middle position of line 1 (4 tokens) hidden: weight 0 there, rows sum to
   * 1, and the logits move (the mask reaches the context) */
  memset(keep, 1, sizeof keep);
  keep[1] = 0;
  assert_int_equal(seqcl_model_forward_masked(m, &s, keep, &t, 0, &r), SEQCL_OK);
  double moved = 0;
  for (int st = 0; st < r->steps[0]; st++) {
    const float *w = r->alignments + (size_t)st * r->S;
    double sum = 0;
    for (int j = 0; j < 4; j++) sum += w[j];
    assert_true(w[1] == 0.0f);
    assert_true(fabs(sum - 1.0) < 1e-5);
    for (int v = 0; v < r->V; v++)
      moved = fmax(moved, fabs(r->logits[(size_t)st * r->V + v] - plain->logits[(size_t)st * r->V + v]));
  }
  if (!(moved > 1e-3)) fail_msg("%s: hiding position 2 moved no logit (%g)", d->selector, moved);
  seqcl_forward_result_free(r);

  /* line 2 (one token) with its only position hidden: refused, naming it */
  memset(keep, 1, sizeof keep);
  keep[src.off[1]] = 0;
  assert_int_equal(seqcl_model_forward_masked(m, &s, keep, &t, 0, &r), SEQCL_ERR_EMPTY_SEQUENCE);
  assert_null(r);
  assert_non_null(strstr(seqcl_last_message(), "line 2"));

  seqcl_forward_result_free(plain);
  seqcl_model_free(m);
  seqcl_ctx_close(ctx);
}

static void test_forward_mask(void **state) {
  (void)state;
  for (size_t i = 0; i < device_count; i++) {
    print_message("  %s: %s\n", devices[i].selector, devices[i].name);
    on_device(&devices[i]);
  }
}

SQ_TEST_MAIN(test_devices_setup, test_devices_teardown, cmocka_unit_test(test_forward_mask))
