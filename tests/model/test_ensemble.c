/* seqcl_ensemble_decode on the host path and every OpenCL device:
 *  - against tests/golden/ensemble (PyTorch, float64: make_ensemble_golden.py),
 *    ensembles of the first two and of all three members, greedy, beam 3 and
 *    beam 3 with length penalty 1: the same ids on every line, and the beam
 *    scores within 1e-4 x max(1, |score|) (SPEC §5's relative bound; a score
 *    sums at most 10 log-probabilities of float32 logits);
 *  - an ensemble of one is seqcl_model_decode bit for bit, and a model
 *    twice gives that model's own outputs (a mixture of one distribution);
 *  - the refusals: no model, too many, a NULL member, a member of other
 *    vocabulary sizes, alignments; a member whose logits overflow fails the
 *    run with SEQCL_ERR_NON_FINITE naming the model and the line;
 *  - the mixture itself (sq_ensemble_combine) against a long double
 *    log-sum-exp, tokens whose probability underflows double in every model
 *    included (their log-probabilities stay finite). */
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
#include "../harden/harden_util.h"
#include "model/seq2seq.h"
#include "model/tokens.h"
#include "test_devices.h"

#include <seqcl/seqcl.h>

#define DIR GOLDEN_DIR "/ensemble"
#define MAX_STEPS 10 /* ensemble.json's max_steps */

static int read_scores(const char *path, double *out, int cap) {
  FILE *f = fopen(path, "r");
  if (!f) fail_msg("cannot open %s", path);
  int n = 0;
  while (n < cap && fscanf(f, "%lf", &out[n]) == 1) n++;
  fclose(f);
  return n;
}

/* The member folders named in members.txt. */
static int read_members(char names[][256], int cap) {
  FILE *f = fopen(DIR "/members.txt", "r");
  if (!f) fail_msg("cannot open " DIR "/members.txt");
  int n = 0;
  char buf[200];
  while (n < cap && fscanf(f, "%199s", buf) == 1) snprintf(names[n++], 256, GOLDEN_DIR "/%s", buf);
  fclose(f);
  return n;
}

static void expect(seqcl_status got, seqcl_status want, const char *w1, const char *w2) {
  const char *msg = seqcl_last_message();
  if (got != want || (w1 && !strstr(msg, w1)) || (w2 && !strstr(msg, w2)))
    fail_msg("got %s '%s'; want %s naming '%s' and '%s'", seqcl_status_name(got), msg,
             seqcl_status_name(want), w1 ? w1 : "", w2 ? w2 : "");
}

static seqcl_decode_result *decode(seqcl_model **ms, int count, const seqcl_seqs *src, int beam,
                                   double lp) {
  seqcl_decode_options o;
  seqcl_decode_options_init(&o);
  o.max_steps = MAX_STEPS;
  o.beam = beam;
  o.length_penalty = lp;
  seqcl_decode_result *r = NULL;
  seqcl_status st = seqcl_ensemble_decode(ms, count, src, &o, &r);
  if (st != SEQCL_OK) fail_msg("ensemble of %d, beam %d: %s", count, beam, seqcl_last_message());
  return r;
}

/* r's lines against the golden file of the ensemble of `count`, kind `kind`. */
static void expect_golden(const seqcl_decode_result *r, int count, const char *kind,
                          const char *device) {
  char path[512];
  snprintf(path, sizeof path, DIR "/%d_%s.txt", count, kind);
  lines want;
  read_lines(path, &want);
  assert_int_equal(r->count, want.n);
  for (size_t i = 0; i < want.n; i++) {
    const size_t len = want.off[i + 1] - want.off[i];
    const size_t got = r->offsets[i + 1] - r->offsets[i];
    if (got != len || memcmp(r->ids + r->offsets[i], want.ids + want.off[i], len * sizeof(int32_t)))
      fail_msg("%s: ensemble of %d, %s, line %zu: output differs from PyTorch's", device, count,
               kind, i + 1);
  }
  if (!strcmp(kind, "greedy")) return;
  snprintf(path, sizeof path, DIR "/%d_%s_scores.txt", count, kind);
  double score[TEST_LINES_MAX];
  assert_int_equal(read_scores(path, score, TEST_LINES_MAX), (int)want.n);
  for (size_t i = 0; i < want.n; i++) {
    const double tol = 1e-4 * fmax(1.0, fabs(score[i]));
    if (fabs(r->scores[i] - score[i]) > tol)
      fail_msg("%s: ensemble of %d, %s, line %zu: score %.9f, PyTorch %.9f", device, count, kind,
               i + 1, r->scores[i], score[i]);
  }
}

static void same_result(const seqcl_decode_result *a, const seqcl_decode_result *b, int beam,
                        const char *what) {
  assert_int_equal(a->count, b->count);
  for (size_t i = 0; i < a->count; i++) {
    const size_t la = a->offsets[i + 1] - a->offsets[i], lb = b->offsets[i + 1] - b->offsets[i];
    if (la != lb || memcmp(a->ids + a->offsets[i], b->ids + b->offsets[i], la * sizeof(int32_t)))
      fail_msg("%s, beam %d: line %zu differs", what, beam, i + 1);
    assert_int_equal(a->steps[i], b->steps[i]);
  }
}

static void on_device(const seqcl_device_info *d) {
  char names[3][256];
  assert_int_equal(read_members(names, 3), 3);
  seqcl_ctx *ctx = NULL;
  assert_int_equal(seqcl_ctx_open_info(d, &ctx), SEQCL_OK);
  seqcl_model *ms[3] = {NULL, NULL, NULL};
  for (int j = 0; j < 3; j++) assert_int_equal(seqcl_model_load(ctx, names[j], &ms[j]), SEQCL_OK);
  lines src;
  read_lines(DIR "/src.txt", &src);
  const seqcl_seqs s = lines_view(&src);

  for (int count = 2; count <= 3; count++) {
    const struct {
      const char *kind;
      int beam;
      double lp;
    } runs[] = {{"greedy", 1, 0.0}, {"beam3", 3, 0.0}, {"beam3_lp", 3, 1.0}};
    for (size_t k = 0; k < sizeof runs / sizeof runs[0]; k++) {
      seqcl_decode_result *r = decode(ms, count, &s, runs[k].beam, runs[k].lp);
      expect_golden(r, count, runs[k].kind, d->name);
      seqcl_decode_result_free(r);
    }
  }

  for (int beam = 1; beam <= 3; beam += 2) {
    /* one model: seqcl_model_decode itself, the scores bit for bit */
    seqcl_decode_options o;
    seqcl_decode_options_init(&o);
    o.max_steps = MAX_STEPS;
    o.beam = beam;
    seqcl_decode_result *single = NULL;
    assert_int_equal(seqcl_model_decode(ms[1], &s, &o, &single), SEQCL_OK);
    seqcl_decode_result *one = decode(&ms[1], 1, &s, beam, 0.0);
    same_result(single, one, beam, "an ensemble of one");
    for (size_t i = 0; i < s.count && beam > 1; i++)
      assert_memory_equal(&single->scores[i], &one->scores[i], sizeof(double));
    /* the same model twice: its own distribution, so its own outputs */
    seqcl_model *twice[2] = {ms[1], ms[1]};
    seqcl_decode_result *two = decode(twice, 2, &s, beam, 0.0);
    same_result(single, two, beam, "a model twice");
    for (size_t i = 0; i < s.count && beam > 1; i++)
      assert_true(fabs(single->scores[i] - two->scores[i]) <= 1e-4 * fmax(1.0, fabs(single->scores[i])));
    seqcl_decode_result_free(single);
    seqcl_decode_result_free(one);
    seqcl_decode_result_free(two);
  }

  /* refusals, each before any work, leaving no result */
  seqcl_decode_result *r = (seqcl_decode_result *)1;
  expect(seqcl_ensemble_decode(ms, 0, &s, NULL, &r), SEQCL_ERR_INVALID_ARGUMENT, "0 models", NULL);
  assert_null(r);
  seqcl_model *many[SEQCL_ENSEMBLE_MAX + 1];
  for (int j = 0; j <= SEQCL_ENSEMBLE_MAX; j++) many[j] = ms[0];
  expect(seqcl_ensemble_decode(many, SEQCL_ENSEMBLE_MAX + 1, &s, NULL, &r),
         SEQCL_ERR_INVALID_ARGUMENT, "17 models", NULL);
  seqcl_model *hole[2] = {ms[0], NULL};
  expect(seqcl_ensemble_decode(hole, 2, &s, NULL, &r), SEQCL_ERR_INVALID_ARGUMENT, "model 2",
         "NULL");
  seqcl_decode_options o;
  seqcl_decode_options_init(&o);
  o.want_alignments = 1;
  expect(seqcl_ensemble_decode(ms, 2, &s, &o, &r), SEQCL_ERR_INVALID_ARGUMENT, "alignments",
         "ensemble");
  seqcl_model *other = NULL; /* vocabularies 9 / 13 */
  assert_int_equal(seqcl_model_load(ctx, GOLDEN_DIR "/bi1_dot_bridge_state", &other), SEQCL_OK);
  seqcl_model *mixed[2] = {ms[0], other};
  expect(seqcl_ensemble_decode(mixed, 2, &s, NULL, &r), SEQCL_ERR_INVALID_ARGUMENT, "model 2",
         "tgt_vocab_size 13 / 12");
  assert_null(r);
  seqcl_model_free(other);
  for (int j = 0; j < 3; j++) seqcl_model_free(ms[j]);
  seqcl_ctx_close(ctx);
}

static void test_ensemble_golden(void **state) {
  (void)state;
  for (size_t k = 0; k < device_count; k++) on_device(&devices[k]);
}

/* A finite member whose logits overflow (every output weight 3e38) beside a
 * sound one: greedy and beam fail with SEQCL_ERR_NON_FINITE naming model 2
 * and line 1, and return no result. */
static void test_ensemble_non_finite(void **state) {
  (void)state;
  char root[64];
  assert_int_equal(hu_mkdtemp(root, sizeof root, "ensemble"), 0);
  char good[128], bad[128];
  snprintf(good, sizeof good, "%s/good", root);
  snprintf(bad, sizeof bad, "%s/overflow", root);
  assert_int_equal(hu_make_model_dir(good, NULL, 5, NULL, 0, 0.0f), 0);
  assert_int_equal(hu_make_model_dir(bad, NULL, 6, "decoder.output.weight", HU_ALL, 3e38f), 0);
  sq_seqs keep = {0};
  assert_int_equal(sq_tokens_parse(hu_src_text, strlen(hu_src_text), "input", 7, NULL, &keep),
                   SEQCL_OK);
  const seqcl_seqs src = {keep.count, keep.ids, keep.offsets};
  for (size_t k = 0; k < device_count; k++) {
    seqcl_ctx *ctx = NULL;
    assert_int_equal(seqcl_ctx_open_info(&devices[k], &ctx), SEQCL_OK);
    seqcl_model *ms[2] = {NULL, NULL};
    assert_int_equal(seqcl_model_load(ctx, good, &ms[0]), SEQCL_OK);
    assert_int_equal(seqcl_model_load(ctx, bad, &ms[1]), SEQCL_OK);
    for (int beam = 1; beam <= 2; beam++) {
      seqcl_decode_options o;
      seqcl_decode_options_init(&o);
      o.beam = beam;
      seqcl_decode_result *r = (seqcl_decode_result *)1;
      expect(seqcl_ensemble_decode(ms, 2, &src, &o, &r), SEQCL_ERR_NON_FINITE, "model 2",
             "line 1,");
      assert_null(r);
    }
    seqcl_model_free(ms[0]);
    seqcl_model_free(ms[1]);
    seqcl_ctx_close(ctx);
  }
  sq_seqs_free(&keep);
  hu_rmtree(root);
}

/* Rows of logits spanning 2000 nats (every model's probability of some
 * tokens below double's smallest), seeded values elsewhere: each output
 * within 1e-6 x max(1, |ref|) of log((1/M) sum_j softmax_j) in long double,
 * computed shifted by the largest term. */
static void test_mixture(void **state) {
  (void)state;
  enum { M = 3, R = 4, V = 37 };
  seqcl_ctx *ctx = NULL;
  assert_int_equal(seqcl_ctx_open("cpu", &ctx), SEQCL_OK);
  float z[M][R * V], out[R * V], scratch[M * R * V];
  double work[M * V];
  sq_buf *bufs[M];
  uint64_t rng = 2024;
  for (int j = 0; j < M; j++) {
    for (int i = 0; i < R * V; i++) {
      rng = rng * 6364136223846793005ULL + 1442695040888963407ULL;
      z[j][i] = (float)((double)(rng >> 11) / 9007199254740992.0 * 8.0 - 4.0);
    }
    for (int r = 0; r < R; r++) z[j][r * V + 5] = -800.0f - 300.0f * (float)j - 50.0f * (float)r;
    z[j][V + 7] = 1000.0f; /* row 1: one token far ahead in every model */
    assert_int_equal(sq_buf_alloc(ctx, sizeof z[j], &bufs[j]), SEQCL_OK);
    assert_int_equal(sq_write(ctx, sq_at(bufs[j], 0), z[j], sizeof z[j]), SEQCL_OK);
  }
  assert_int_equal(sq_ensemble_combine(ctx, M, bufs, R, V, scratch, work, out, 0, 1, 0), SEQCL_OK);
  for (int r = 0; r < R; r++) {
    long double lse[M];
    for (int j = 0; j < M; j++) {
      long double top = -INFINITY, s = 0;
      for (int v = 0; v < V; v++) top = fmaxl(top, z[j][r * V + v]);
      for (int v = 0; v < V; v++) s += expl(z[j][r * V + v] - top);
      lse[j] = top + logl(s);
    }
    for (int v = 0; v < V; v++) {
      long double top = -INFINITY, s = 0;
      for (int j = 0; j < M; j++) top = fmaxl(top, z[j][r * V + v] - lse[j]);
      for (int j = 0; j < M; j++) s += expl(z[j][r * V + v] - lse[j] - top);
      const double want = (double)(top + logl(s) - logl(M)), got = out[r * V + v];
      if (!isfinite(got) || fabs(got - want) > 1e-6 * fmax(1.0, fabs(want)))
        fail_msg("row %d, id %d: %.9g, want %.9g", r, v, got, want);
    }
  }
  for (int j = 0; j < M; j++) sq_buf_free(bufs[j]);
  seqcl_ctx_close(ctx);
}

SQ_TEST_MAIN(test_devices_setup, test_devices_teardown, cmocka_unit_test(test_ensemble_golden),
             cmocka_unit_test(test_ensemble_non_finite), cmocka_unit_test(test_mixture))
