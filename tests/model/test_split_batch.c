/* Decoding a batch as parts on the host's threads (model/decode.c): run with
 * SEQCL_THREADS=3 (meson.build), so the host's tasks run three at a time on
 * any machine. Greedy decoding with alignments, beam search with n-best lists,
 * alignments and a length penalty, and an ensemble's greedy decoding, over
 * 41 lines of 1 to 9 ids in batches that split into 3 parts, into 2 (rows
 * too few for 3), and not at all (fewer than 16 rows), for four model shapes: every
 * result the same, byte for byte, as the batch decoded whole
 * (SQ_ABL_SPLIT_BATCH), and the parts counted; a model with a large output
 * layer decoded whole. An allocation failing inside
 * a part fails the decode with that part's message, and the next decode is
 * whole and right. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../common/test_main.h"
#include "../common/test_results.h"
#include "../harden/harden_util.h"
#include "core/ctx.h"
#include "core/fault.h"
#include "model/seq2seq.h"
#include "ops/ops.h"

enum { LINES = 41, MAXLEN = 9 };

static int32_t ids[LINES * MAXLEN];
static size_t offsets[LINES + 1];

static seqcl_seqs lines(int src_vocab) {
  uint64_t s = 99;
  offsets[0] = 0;
  for (int i = 0; i < LINES; i++) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    const size_t len = 1 + (size_t)(s >> 33) % MAXLEN;
    for (size_t k = 0; k < len; k++) {
      s = s * 6364136223846793005ull + 1442695040888963407ull;
      ids[offsets[i] + k] = (int32_t)((s >> 33) % (uint64_t)src_vocab);
    }
    offsets[i + 1] = offsets[i] + len;
  }
  return (seqcl_seqs){LINES, ids, offsets};
}

/* Decodes src with opts split and whole; the split run must have made
 * `batches` split batches of `parts` parts in all. */
static void split_and_whole(seqcl_model *const *ms, int M, const seqcl_seqs *src,
                            const seqcl_decode_options *o, const char *what,
                            unsigned long long batches, unsigned long long parts) {
  seqcl_ctx *ctx = ms[0]->ctx;
  seqcl_decode_result *r[2] = {NULL, NULL};
  for (int whole = 0; whole < 2; whole++) {
    sq_ctx_set_ablated(ctx, whole ? SQ_ABL_SPLIT_BATCH : 0);
    const unsigned long long b0 = ctx->split_batches, p0 = ctx->split_parts;
    const seqcl_status st = M > 1 ? seqcl_ensemble_decode(ms, M, src, o, &r[whole])
                                  : seqcl_model_decode(ms[0], src, o, &r[whole]);
    if (st != SEQCL_OK)
      fail_msg("%s (%s): %s", what, whole ? "whole" : "split", seqcl_last_message());
    const unsigned long long nb = ctx->split_batches - b0, np = ctx->split_parts - p0;
    if (whole ? nb != 0 : (nb != batches || np != parts))
      fail_msg("%s (%s): %llu split batches of %llu parts in all, want %llu of %llu", what,
               whole ? "whole" : "split", nb, np, whole ? 0ull : batches, whole ? 0ull : parts);
  }
  sq_ctx_set_ablated(ctx, 0);
  print_message("  %s\n", what);
  tr_expect_same(r[0], r[1], o->want_alignments);
  seqcl_decode_result_free(r[0]);
  seqcl_decode_result_free(r[1]);
}

/* A temporary folder with c's model (seed), a host context and the model loaded. */
static seqcl_model *open_model(const sq_config *c, uint64_t seed, char dir[96]) {
  assert_int_equal(hu_mkdtemp(dir, 96, "split"), 0);
  assert_int_equal(hu_write_model(dir, c, seed, NULL, 0, 0.0f), 0);
  seqcl_ctx *ctx = NULL;
  assert_int_equal(seqcl_ctx_open("cpu", &ctx), SEQCL_OK);
  seqcl_model *m = NULL;
  if (seqcl_model_load(ctx, dir, &m) != SEQCL_OK) fail_msg("load: %s", seqcl_last_message());
  return m;
}

/* Frees the model, closes its context, removes its folder. */
static void close_model(seqcl_model *m, const char *dir) {
  seqcl_ctx *ctx = m->ctx;
  seqcl_model_free(m);
  seqcl_ctx_close(ctx);
  hu_rmtree(dir);
}

static void configure(sq_config *c, int shape) {
  hu_tiny_config(c);
  switch (shape) {
  case 1: /* general score, 2 layers one-way, output over [s ; c] */
    c->score = SQ_SCORE_GENERAL;
    c->bidirectional = 0;
    c->enc_layers = 2;
    c->output = SQ_OUTPUT_STATE_CONTEXT;
    break;
  case 2: c->score = SQ_SCORE_DOT; c->enc_hidden = 4; break; /* He 8 = H_d */
  case 3: c->score = SQ_SCORE_NONE; c->output = SQ_OUTPUT_STATE_CONTEXT; break;
  default: break;
  }
}

static void parts_equal_whole(void **state) {
  (void)state;
  for (int shape = 0; shape < 4; shape++) {
    sq_config c;
    configure(&c, shape);
    char dir[2][96];
    seqcl_ctx *ctx = NULL;
    assert_int_equal(seqcl_ctx_open("cpu", &ctx), SEQCL_OK);
    assert_int_equal(sq_task_threads(ctx), 3);
    seqcl_model *ms[2] = {NULL, NULL};
    for (int j = 0; j < 2; j++) {
      assert_int_equal(hu_mkdtemp(dir[j], sizeof dir[j], "split"), 0);
      const uint64_t seed = 5 + (uint64_t)(10 * shape + j);
      assert_int_equal(hu_write_model(dir[j], &c, seed, NULL, 0, 0.0f), 0);
      if (seqcl_model_load(ctx, dir[j], &ms[j]) != SEQCL_OK)
        fail_msg("shape %d: load: %s", shape, seqcl_last_message());
    }
    print_message("shape %d\n", shape);
    const seqcl_seqs src = lines(c.src_vocab);
    const int align = c.score != SQ_SCORE_NONE;
    seqcl_decode_options o;
    seqcl_decode_options_init(&o);
    o.max_steps = 12;
    o.want_alignments = align;
    o.batch_size = LINES; /* one batch, 3 parts */
    split_and_whole(ms, 1, &src, &o, "greedy, one batch of 41", 1, 3);
    o.batch_size = 24; /* 24 rows (3 parts of 8), then 17 (2 parts: 8 rows a part at least) */
    split_and_whole(ms, 1, &src, &o, "greedy, batches of 24", 2, 5);
    o.batch_size = 17; /* 17 rows (2 parts), 17, then 7 (whole) */
    split_and_whole(ms, 1, &src, &o, "greedy, batches of 17", 2, 4);
    o.want_alignments = 0;
    split_and_whole(ms, 2, &src, &o, "ensemble greedy, batches of 17", 2, 4);
    o.want_alignments = align;
    o.beam = 3;
    o.nbest = 3;
    o.length_penalty = 1.0;
    o.batch_size = 13; /* 39 rows (3 parts) x 3, then 2 lines: 6 rows (whole) */
    split_and_whole(ms, 1, &src, &o, "beam 3, n-best 3, batches of 13", 3, 9);
    for (int j = 0; j < 2; j++) {
      seqcl_model_free(ms[j]);
      hu_rmtree(dir[j]);
    }
    seqcl_ctx_close(ctx);
  }
}

/* A model whose output layer is over 4 MiB (V 140 000 x H_d 8 floats) is not
 * split: each part would read all of it (model/decode.c). */
static void large_output_whole(void **state) {
  (void)state;
  sq_config c;
  configure(&c, 0);
  c.tgt_vocab = 140000;
  c.bos_id = 139998;
  c.eos_id = 139999;
  char dir[96];
  seqcl_model *m = open_model(&c, 4, dir);
  const seqcl_seqs src = lines(c.src_vocab);
  seqcl_decode_options o;
  seqcl_decode_options_init(&o);
  o.max_steps = 4;
  o.batch_size = LINES;
  split_and_whole(&m, 1, &src, &o, "V 140 000: one batch of 41, whole", 0, 0);
  close_model(m, dir);
}

#ifdef SEQCL_FAULT_INJECTION
/* The 1st to 60th allocation after the load fails: each decode that hits it
 * fails with SEQCL_ERR_OUT_OF_MEMORY and a message, and the decode after it
 * (nothing armed) gives the first decode's result. */
static void part_failure(void **state) {
  (void)state;
  sq_config c;
  configure(&c, 0);
  char dir[96];
  seqcl_model *m = open_model(&c, 3, dir);
  seqcl_ctx *ctx = m->ctx;
  const seqcl_seqs src = lines(c.src_vocab);
  seqcl_decode_options o;
  seqcl_decode_options_init(&o);
  o.max_steps = 12;
  o.want_alignments = 1;
  o.batch_size = LINES;
  seqcl_decode_result *ref = NULL;
  assert_int_equal(seqcl_model_decode(m, &src, &o, &ref), SEQCL_OK);
  int failed = 0;
  for (unsigned n = 1; n <= 60; n++) {
    const unsigned long long b0 = ctx->split_batches;
    sq_fault_arm(SQ_FAULT_ALLOC, n);
    seqcl_decode_result *r = (seqcl_decode_result *)1;
    const seqcl_status st = seqcl_model_decode(m, &src, &o, &r);
    const int hit = sq_fault_pending(SQ_FAULT_ALLOC) == 0;
    sq_fault_arm(SQ_FAULT_ALLOC, 0);
    assert_int_equal(ctx->split_batches - b0, 1);
    if (hit) {
      if (st != SEQCL_ERR_OUT_OF_MEMORY || !seqcl_last_message()[0])
        fail_msg("allocation %u failed: status %s, message '%s'", n, seqcl_status_name(st),
                 seqcl_last_message());
      assert_null(r);
      failed++;
    } else {
      assert_int_equal(st, SEQCL_OK);
      seqcl_decode_result_free(r);
    }
    seqcl_decode_result *again = NULL;
    assert_int_equal(seqcl_model_decode(m, &src, &o, &again), SEQCL_OK);
    tr_expect_same(ref, again, 1);
    seqcl_decode_result_free(again);
  }
  assert_true(failed >= 10);
  seqcl_decode_result_free(ref);
  close_model(m, dir);
}
#define PART_FAILURE_TEST cmocka_unit_test(part_failure),
#else
#define PART_FAILURE_TEST
#endif

SQ_TEST_MAIN(NULL, NULL, cmocka_unit_test(parts_equal_whole), cmocka_unit_test(large_output_whole),
             PART_FAILURE_TEST)
