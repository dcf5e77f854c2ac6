/* The batch streams and the learning-rate schedule (src/train/batches.c,
 * schedule.c): every line once per epoch, batch limits (lines, padded tokens),
 * length-sorted batches, the same stream from a restored position, the step
 * count of --epochs; warm-up, decay on a plateau, the floor, patience, and
 * which metric direction counts as better. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../common/test_main.h"
#include "train/batches.h"
#include "train/schedule.h"

enum { N = 1000 };
static int32_t src_len[N], tgt_len[N];

static void lengths(void) {
  sq_trng r;
  sq_trng_seed(&r, 7);
  /* targets about as long as their sources, as in G2P or translation */
  for (int i = 0; i < N; i++) {
    src_len[i] = 1 + sq_trng_below(&r, 30);
    tgt_len[i] = src_len[i] + sq_trng_below(&r, 5) - 2;
    if (tgt_len[i] < 1) tgt_len[i] = 1;
  }
}

static void make(sq_batcher *b, int B, int window, long tokens) {
  memset(b, 0, sizeof *b);
  b->n = N, b->B = B, b->window = window, b->tokens = tokens;
  b->src_len = src_len, b->tgt_len = tgt_len;
  assert_int_equal(sq_batcher_init(b, 3), SEQCL_OK);
}

/* One epoch of batches: each line exactly once, within the limits; returns
 * the padding fraction (padded cells not holding a token). */
static double one_epoch(sq_batcher *b, long *nbatches) {
  static int seen[N];
  memset(seen, 0, sizeof seen);
  long idx[256], total = 0, cells = 0, used = 0;
  *nbatches = 0;
  const long epoch = b->epoch + 1;
  while (total < N) {
    int rows = sq_batcher_next(b, idx);
    assert_true(rows >= 1 && rows <= b->B);
    assert_int_equal(b->epoch, epoch);
    int32_t S = 0, T = 0;
    for (int r = 0; r < rows; r++) {
      assert_true(idx[r] >= 0 && idx[r] < N);
      assert_int_equal(seen[idx[r]]++, 0);
      if (src_len[idx[r]] > S) S = src_len[idx[r]];
      if (tgt_len[idx[r]] > T) T = tgt_len[idx[r]];
      used += src_len[idx[r]] + tgt_len[idx[r]];
    }
    if (b->tokens) assert_true((long)rows * (S + T) <= b->tokens);
    cells += (long)rows * (S + T);
    total += rows;
    ++*nbatches;
  }
  assert_int_equal(total, N);
  return 1.0 - (double)used / (double)cells;
}

static void test_bucketed_epochs(void **state) {
  (void)state;
  lengths();
  sq_batcher plain, bucket, tok;
  make(&plain, 40, 0, 0);
  make(&bucket, 40, 5, 0);
  make(&tok, 64, 5, 900);
  long n1, n2, n3;
  /* plain: 1000 lines in batches of 40 are 25 whole batches an epoch */
  double pad_plain = one_epoch(&plain, &n1);
  assert_int_equal(n1, 25);
  double pad_bucket = one_epoch(&bucket, &n2);
  double pad_tok = one_epoch(&tok, &n3);
  /* windows of 200 lines: exactly 5 batches each */
  assert_int_equal(n2, 25);
  /* sorting within windows removes most of the padding */
  assert_true(pad_bucket < 0.5 * pad_plain);
  assert_true(pad_tok < 0.5 * pad_plain);
  /* a second epoch also holds every line once, in other batches */
  one_epoch(&bucket, &n2);
  one_epoch(&tok, &n3);
  assert_int_equal(sq_batcher_steps_for(&plain, 3, 2.5), (long)ceil(2.5 * N / 40));
  assert_int_equal(sq_batcher_steps_for(&bucket, 3, 2.0), 50);
  sq_batcher_free(&plain);
  sq_batcher_free(&bucket);
  sq_batcher_free(&tok);
}

static void test_restore(void **state) {
  (void)state;
  lengths();
  for (int w = 0; w <= 5; w += 5) {
    sq_batcher a, b;
    make(&a, 48, w, w ? 1000 : 0);
    long idx[64], jdx[64];
    for (int k = 0; k < 37; k++) sq_batcher_next(&a, idx); /* into epoch 2 */
    uint64_t rng[4];
    memcpy(rng, a.epoch_rng.s, sizeof rng);
    make(&b, 48, w, w ? 1000 : 0);
    sq_batcher_restore(&b, rng, a.epoch, a.cursor);
    for (int k = 0; k < 60; k++) {
      int ra = sq_batcher_next(&a, idx), rb = sq_batcher_next(&b, jdx);
      assert_int_equal(ra, rb);
      assert_memory_equal(idx, jdx, sizeof(long) * (size_t)ra);
    }
    sq_batcher_free(&a);
    sq_batcher_free(&b);
  }
}

static void test_schedule(void **state) {
  (void)state;
  sq_schedule s = {.lr = 1e-2, .warmup = 4, .decay = 0.5, .decay_patience = 2, .min_lr = 2e-3,
                   .patience = 4, .metric = SQ_METRIC_TER};
  sq_schedule_start(&s);
  assert_true(fabs(sq_schedule_lr(&s, 0) - 2.5e-3) < 1e-15);
  assert_true(fabs(sq_schedule_lr(&s, 3) - 1e-2) < 1e-15);
  assert_true(sq_schedule_lr(&s, 100) == 1e-2);
  assert_int_equal(sq_schedule_validated(&s, 10, 3.0, 0.0, 50.0), SQ_SCHED_IMPROVED);
  assert_int_equal(sq_schedule_validated(&s, 20, 1.0, 0.0, 40.0), SQ_SCHED_IMPROVED);
  assert_int_equal(s.best_step, 20);
  /* a lower loss does not count: the metric is ter */
  assert_int_equal(sq_schedule_validated(&s, 30, 0.5, 0.0, 41.0), 0);
  assert_int_equal(sq_schedule_validated(&s, 40, 0.5, 0.0, 40.0), SQ_SCHED_DECAYED);
  assert_true(sq_schedule_lr(&s, 100) == 5e-3);
  assert_int_equal(sq_schedule_validated(&s, 50, 0.5, 0.0, 45.0), 0);
  assert_int_equal(sq_schedule_validated(&s, 60, 0.5, 0.0, 45.0), SQ_SCHED_DECAYED | SQ_SCHED_STOP);
  assert_true(fabs(sq_schedule_lr(&s, 100) - 2.5e-3) < 1e-15);
  assert_int_equal(s.best_step, 20);
  /* the next decay would be 1.25e-3: the floor holds it at min_lr */
  sq_schedule_validated(&s, 70, 0.5, 0.0, 45.0);
  assert_int_equal(sq_schedule_validated(&s, 80, 0.5, 0.0, 45.0) & SQ_SCHED_DECAYED, SQ_SCHED_DECAYED);
  assert_true(sq_schedule_lr(&s, 100) == 2e-3);
  /* exact match: higher is better */
  sq_schedule e = {.lr = 1, .metric = SQ_METRIC_EXACT, .decay_patience = 1};
  sq_schedule_start(&e);
  assert_int_equal(sq_schedule_validated(&e, 1, 1, 10.0, 0), SQ_SCHED_IMPROVED);
  assert_int_equal(sq_schedule_validated(&e, 2, 1, 5.0, 0), 0);
  assert_int_equal(sq_schedule_validated(&e, 3, 1, 12.0, 0), SQ_SCHED_IMPROVED);
  sq_metric m;
  assert_int_equal(sq_metric_parse("exact", &m), 0);
  assert_int_equal(m, SQ_METRIC_EXACT);
  assert_int_equal(sq_metric_parse("wer", &m), -1);
}

SQ_TEST_MAIN(NULL, NULL,
      cmocka_unit_test(test_bucketed_epochs),
      cmocka_unit_test(test_restore),
      cmocka_unit_test(test_schedule))
