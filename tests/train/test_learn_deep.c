/* A deep model learns, and dropout is reproducible, on the host and every
 * OpenCL device with a backward table:
 *  - a 2-layer bidirectional encoder with the [s; c] output and dropout 0.2
 *    reaches 100% greedy exact match on the reversal task of length 8
 *    in 600 steps with the task's defaults (the README's example; larger
 *    learning rates get there in fewer steps on one device but are noisy
 *    enough that rounding differences between devices decide the last few
 *    samples);
 *  - a short run with dropout repeated on one device gives bitwise the same
 *    model (the masks are keyed by seed and step, not drawn from a state),
 *    and other devices give the host's loss to rounding, since they draw the
 *    same masks; without dropout the loss differs (the masks did apply);
 *  - the fixed-context model (attention.score "none", seed 000 §01: c = the
 *    top encoder layer's final state at every step) learns to reverse 3
 *    digits, which one context vector of 64 numbers can carry: >= 95% greedy
 *    exact match in 300 Adam steps with the task's other defaults (measured:
 *    100% on the host and PoCL, loss 0.06). An untrained model scores ~0.1%,
 *    and a gradient that missed the context path would leave the decoder blind
 *    to the source (at best 1/1000). Its saved model has no alignments. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include <seqcl/seqcl.h>
#include <seqcl/train.h>

#include "../common/test_main.h"
#include "../common/test_tmpdir.h"
#include "test_devices.h"

#include "core/ctx.h"
#include "backend/backend.h"

static char dir[256];

static int setup(void **state) {
  snprintf(dir, sizeof dir, "/tmp/seqcl-test-learn-deep-XXXXXX");
  if (!mkdtemp(dir)) return -1;
  return test_devices_setup(state);
}

static int teardown(void **state) {
  int rc = test_remove_tree(dir);
  return test_devices_teardown(state) || rc;
}

static void deep_options(seqcl_train_options *o, int steps) {
  seqcl_train_options_default(o);
  o->length = 8;
  o->bidirectional = 1;
  o->num_layers = 2;
  o->output = "state_context";
  o->dropout = 0.2;
  o->steps = steps;
}

/* Opens dev; NULL (after a note) when its backend cannot train. */
static seqcl_ctx *open_trainable(const seqcl_device_info *dev) {
  seqcl_ctx *ctx = NULL;
  if (seqcl_ctx_open_info(dev, &ctx) != SEQCL_OK)
    fail_msg("%s: %s", dev->selector, seqcl_last_message());
  if (!ctx->be->ops->attn_bwd) {
    printf("  %-10s skipped: the backend has no backward table\n", dev->selector);
    seqcl_ctx_close(ctx);
    return NULL;
  }
  return ctx;
}

/* Trains on the reversal task and prints the result line. */
static void train_and_report(seqcl_ctx *ctx, const char *sel, const seqcl_train_options *o,
                             seqcl_train_result *r) {
  if (seqcl_train_reverse(ctx, o, r) != SEQCL_OK) fail_msg("%s: %s", sel, seqcl_last_message());
  printf("  %-10s %d steps in %.1f s, final loss %.4f, exact match %d/%d\n", sel, o->steps,
         r->train_seconds, (double)r->final_loss, r->correct, r->evaluated);
}

static void test_deep_model_learns(void **state) {
  (void)state;
  int ran = 0;
  for (size_t d = 0; d < device_count; d++) {
    seqcl_ctx *ctx = open_trainable(&devices[d]);
    if (!ctx) continue;
    seqcl_train_options o;
    deep_options(&o, 600);
    seqcl_train_result r;
    train_and_report(ctx, devices[d].selector, &o, &r);
    seqcl_ctx_close(ctx);
    assert_int_equal(r.correct, r.evaluated);
    ran++;
  }
  assert_true(ran > 0);
}

/* Whether two files hold the same bytes. */
static int same_file(const char *a, const char *b) {
  FILE *fa = fopen(a, "rb"), *fb = fopen(b, "rb");
  if (!fa || !fb) fail_msg("cannot open %s or %s", a, b);
  int same = 1, ca, cb;
  do {
    ca = fgetc(fa), cb = fgetc(fb);
    same &= ca == cb;
  } while (same && ca != EOF);
  fclose(fa);
  fclose(fb);
  return same;
}

static float short_run(seqcl_ctx *ctx, double dropout, const char *save) {
  seqcl_train_options o;
  deep_options(&o, 12);
  o.batch_size = 16;
  o.dropout = dropout;
  o.seed = 3;
  o.save_dir = save;
  seqcl_train_result r;
  if (seqcl_train_reverse(ctx, &o, &r) != SEQCL_OK) fail_msg("%s", seqcl_last_message());
  return r.final_loss;
}

static void test_dropout_is_reproducible(void **state) {
  (void)state;
  float host_loss = NAN;
  for (size_t d = 0; d < device_count; d++) {
    seqcl_ctx *ctx = open_trainable(&devices[d]);
    if (!ctx) continue;
    char a[400], b[400];
    snprintf(a, sizeof a, "%s/a%zu", dir, d);
    snprintf(b, sizeof b, "%s/b%zu", dir, d);
    float la = short_run(ctx, 0.2, a), lb = short_run(ctx, 0.2, b);
    float plain = short_run(ctx, 0.0, NULL);
    seqcl_ctx_close(ctx);
    printf("  %-10s loss after 12 steps %.7f (again %.7f; without dropout %.7f)\n",
           devices[d].selector, (double)la, (double)lb, (double)plain);
    strcat(a, "/model.safetensors");
    strcat(b, "/model.safetensors");
    if (!same_file(a, b)) fail_msg("%s: the same run gave different weights", devices[d].selector);
    assert_true(memcmp(&la, &lb, sizeof la) == 0);
    assert_true(fabsf(plain - la) > 1e-3f * la);
    if (isnan(host_loss))
      host_loss = la;
    else if (!(fabsf(la - host_loss) <= 1e-4f * host_loss))
      fail_msg("%s: loss %.7f after 12 steps, the host's %.7f", devices[d].selector, (double)la,
               (double)host_loss);
  }
  assert_false(isnan(host_loss));
}

/* The saved model loads with score "none" and refuses alignments. */
static void check_saved(seqcl_ctx *ctx, const char *save) {
  seqcl_model *m = NULL;
  if (seqcl_model_load(ctx, save, &m) != SEQCL_OK) fail_msg("%s", seqcl_last_message());
  seqcl_model_config c;
  assert_int_equal(seqcl_model_get_config(m, &c), SEQCL_OK);
  assert_int_equal(c.score, SEQCL_SCORE_NONE);
  const int32_t ids[] = {3, 1, 4};
  const size_t off[] = {0, 3};
  seqcl_seqs src = {1, ids, off};
  seqcl_decode_options o;
  seqcl_decode_options_init(&o);
  o.want_alignments = 1;
  seqcl_decode_result *r = NULL;
  assert_int_equal(seqcl_model_decode(m, &src, &o, &r), SEQCL_ERR_INVALID_ARGUMENT);
  o.want_alignments = 0;
  assert_int_equal(seqcl_model_decode(m, &src, &o, &r), SEQCL_OK);
  /* the reversal, with the task's ids: digits 0-9 */
  assert_int_equal(r->offsets[1], 3);
  printf("    decodes 3 1 4 as %d %d %d\n", r->ids[0], r->ids[1], r->ids[2]);
  seqcl_decode_result_free(r);
  seqcl_model_free(m);
}

static void test_fixed_context_learns(void **state) {
  (void)state;
  char save[400];
  int ran = 0;
  for (size_t d = 0; d < device_count; d++) {
    snprintf(save, sizeof save, "%s/fixed%zu", dir, d);
    seqcl_ctx *ctx = open_trainable(&devices[d]);
    if (!ctx) continue;
    seqcl_train_options o;
    seqcl_train_options_init(&o);
    o.score = "none";
    o.length = 3;
    o.steps = 300;
    o.save_dir = save;
    seqcl_train_result r;
    train_and_report(ctx, devices[d].selector, &o, &r);
    assert_int_equal(r.evaluated, 256);
    assert_true(r.correct >= 243); /* 95% */
    assert_true(r.final_loss < 0.25f);
    check_saved(ctx, save);
    seqcl_ctx_close(ctx);
    ran++;
  }
  assert_true(ran > 0);
}

SQ_TEST_MAIN(setup, teardown,
      cmocka_unit_test(test_dropout_is_reproducible),
      cmocka_unit_test(test_deep_model_learns),
      cmocka_unit_test(test_fixed_context_learns))
