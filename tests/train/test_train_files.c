/* Training from token files on the host: resuming a checkpoint continues bit for
 * bit (2k steps == k steps, resume, k more; also through a stop requested by the
 * progress callback, as Ctrl-C does; with dropout), the run learns, and bad
 * inputs are clear errors. Ragged lines (1..6 tokens) exercise padding and masking. */
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
#include "model/safetensors.h"
#include "train/tmodel.h"

static char dir[256];

static char *at(const char *name) {
  static char buf[8][512];
  static int k;
  k = (k + 1) % 8;
  snprintf(buf[k], sizeof buf[k], "%s/%s", dir, name);
  return buf[k];
}

static void write_text(const char *name, const char *text) {
  FILE *f = fopen(at(name), "w");
  assert_non_null(f);
  fputs(text, f);
  fclose(f);
}

static const char *config_text(int layers, const char *output) {
  static char buf[1024];
  snprintf(buf, sizeof buf,
           "{\"format\":\"seqcl.seq2seq\",\"version\":1,\"src_vocab_size\":10,"
           "\"tgt_vocab_size\":12,\"embed_dim\":6,\"bos_id\":10,\"eos_id\":11,\"pad_id\":null,"
           "\"encoder\":{\"hidden_size\":8,\"num_layers\":%d,\"bidirectional\":true},"
           "\"decoder\":{\"hidden_size\":10,\"init\":\"bridge\"},"
           "\"attention\":{\"score\":\"additive\",\"dim\":7},\"output\":\"%s\"}\n",
           layers, output);
  return buf;
}

static int setup(void **state) {
  (void)state;
  snprintf(dir, sizeof dir, "/tmp/seqcl-test-train-files-XXXXXX");
  if (!mkdtemp(dir)) return -1;
  /* 37 ragged lines: not a multiple of the batch, so batches straddle epochs */
  FILE *s = fopen(at("train.src"), "w"), *t = fopen(at("train.tgt"), "w");
  sq_trng r;
  sq_trng_seed(&r, 3);
  for (int i = 0; i < 37; i++) {
    int n = 1 + sq_trng_below(&r, 6), ids[8];
    fprintf(t, "10");
    for (int j = 0; j < n; j++) {
      ids[j] = sq_trng_below(&r, 10);
      fprintf(s, "%s%d", j ? " " : "", ids[j]);
    }
    for (int j = n - 1; j >= 0; j--) fprintf(t, " %d", ids[j]);
    fprintf(s, "\n");
    fprintf(t, " 11\n");
  }
  fclose(s);
  fclose(t);
  write_text("config.json", config_text(1, "state"));
  write_text("valid.src", "1 2 3\n4\n5 6 7 8 9\n");
  write_text("valid.tgt", "10 3 2 1 11\n10 4 11\n10 9 8 7 6 5 11\n");
  return 0;
}

static int teardown(void **state) {
  (void)state;
  return test_remove_tree(dir);
}

static void base_options(seqcl_train_files_options *o, const char *save, int steps) {
  seqcl_train_files_options_init(o);
  o->src_path = at("train.src");
  o->tgt_path = at("train.tgt");
  o->config_path = at("config.json");
  o->save_dir = at(save);
  o->steps = steps;
  o->batch_size = 8;
  o->lr = 1e-2;
  o->clip = 1.0;
  o->seed = 5;
  o->dropout = 0.1; /* masks keyed by step: a resumed run draws the same ones */
}

/* base_options resuming from the folder resume: the config comes from its
 * checkpoint. */
static void resume_options(seqcl_train_files_options *o, const char *save, const char *resume,
                           int steps) {
  base_options(o, save, steps);
  o->config_path = NULL;
  o->resume_dir = at(resume);
}

static seqcl_status train(seqcl_train_files_options *o, seqcl_train_files_result *r) {
  seqcl_ctx *ctx = NULL;
  assert_int_equal(seqcl_ctx_open("cpu", &ctx), SEQCL_OK);
  seqcl_status st = seqcl_train_files(ctx, o, r);
  seqcl_ctx_close(ctx);
  return st;
}

/* Every tensor of two safetensors files is bitwise equal. */
static void assert_same_file(const char *a, const char *b) {
  sq_st_file *fa = NULL, *fb = NULL;
  assert_int_equal(sq_st_read(a, 0, &fa), SEQCL_OK);
  assert_int_equal(sq_st_read(b, 0, &fb), SEQCL_OK);
  assert_int_equal(fa->count, fb->count);
  for (size_t i = 0; i < fa->count; i++) {
    const sq_st_tensor *tb = sq_st_find(fb, fa->tensors[i].name);
    assert_non_null(tb);
    size_t bytes = fa->tensors[i].end - fa->tensors[i].begin;
    assert_int_equal(bytes, tb->end - tb->begin);
    if (memcmp(fa->data + fa->tensors[i].begin, fb->data + tb->begin, bytes))
      fail_msg("%s differs between %s and %s", fa->tensors[i].name, a, b);
  }
  sq_st_free(fa);
  sq_st_free(fb);
}

static int stop_at;
static int stop_callback(void *user, const seqcl_train_event *e) {
  (void)user;
  return e->step == stop_at;
}

static void test_resume_is_bit_exact(void **state) {
  (void)state;
  const int k = 9;
  seqcl_train_files_options o;
  seqcl_train_files_result r;
  /* A: 2k steps in one run, validating every 4 steps (validation must not
   * disturb the training state) */
  base_options(&o, "A", 2 * k);
  o.valid_src_path = at("valid.src");
  o.valid_tgt_path = at("valid.tgt");
  o.valid_every = 4;
  assert_int_equal(train(&o, &r), SEQCL_OK);
  assert_int_equal(r.steps_done, 2 * k);
  assert_true(r.validated);
  assert_int_equal(r.valid_count, 3);
  /* B: k steps, then resume to 2k (hyperparameters come from the checkpoint) */
  base_options(&o, "B", k);
  assert_int_equal(train(&o, &r), SEQCL_OK);
  resume_options(&o, "B", "B", 2 * k);
  o.batch_size = 0, o.lr = 0, o.clip = -1, o.seed = -1;
  assert_int_equal(train(&o, &r), SEQCL_OK);
  assert_int_equal(r.start_step, k);
  assert_int_equal(r.steps_done, 2 * k);
  assert_same_file(at("A/model.safetensors"), at("B/model.safetensors"));
  assert_same_file(at("A/checkpoint/optimizer.safetensors"),
                   at("B/checkpoint/optimizer.safetensors"));
  /* C: a periodic checkpoint at 4, a stop requested after step 7 (what Ctrl-C
   * does): saved and SEQCL_ERR_CANCELLED; then resume from the folder */
  base_options(&o, "C", 2 * k);
  o.checkpoint_every = 4;
  stop_at = 7;
  o.progress = stop_callback;
  assert_int_equal(train(&o, &r), SEQCL_ERR_CANCELLED);
  assert_int_equal(r.steps_done, 7);
  assert_int_equal(access(at("C/model.safetensors"), R_OK), 0);
  resume_options(&o, "C", "C/checkpoint", 2 * k);
  assert_int_equal(train(&o, &r), SEQCL_OK); /* explicit values equal to the checkpoint's */
  assert_int_equal(r.start_step, 7);
  assert_same_file(at("A/model.safetensors"), at("C/model.safetensors"));
  /* no temporary folder is left behind */
  assert_int_not_equal(system("ls -a /tmp/seqcl-test-train-files-*/C | grep -q checkpoint\\."), 0);
}

static void test_learns(void **state) {
  (void)state;
  seqcl_train_files_options o;
  seqcl_train_files_result r0, r;
  base_options(&o, "L", 1);
  assert_int_equal(train(&o, &r0), SEQCL_OK);
  base_options(&o, "L", 150);
  o.overwrite = 1; /* L holds the first run's model: replaced whole */
  assert_int_equal(train(&o, &r), SEQCL_OK);
  assert_true(r.final_loss < 0.5f * r0.final_loss);
  /* a stacked encoder with the [s; c] output trains from files too, and its
   * saved model is what `decode` loads */
  write_text("deep.json", config_text(2, "state_context"));
  base_options(&o, "D", 1);
  o.config_path = at("deep.json");
  assert_int_equal(train(&o, &r0), SEQCL_OK);
  base_options(&o, "D", 150);
  o.config_path = at("deep.json");
  o.overwrite = 1;
  assert_int_equal(train(&o, &r), SEQCL_OK);
  assert_true(r.final_loss < 0.5f * r0.final_loss);
  seqcl_model *m = NULL;
  seqcl_ctx *ctx = NULL;
  assert_int_equal(seqcl_ctx_open("cpu", &ctx), SEQCL_OK);
  assert_int_equal(seqcl_model_load(ctx, at("D"), &m), SEQCL_OK);
  seqcl_model_free(m);
  seqcl_ctx_close(ctx);
}

static void expect_error(seqcl_train_files_options *o, seqcl_status want, const char *text) {
  seqcl_train_files_result r;
  seqcl_status st = train(o, &r);
  if (st != want || !strstr(seqcl_last_message(), text))
    fail_msg("got %s '%s', wanted %s containing '%s'", seqcl_status_str(st),
             seqcl_last_message(), seqcl_status_str(want), text);
}

/* Rewrites the safetensors file at path with element index of tensor name set
 * to NaN (every tensor back as F32). */
static void poison(const char *path, const char *name, size_t index) {
  sq_st_file *f = NULL;
  assert_int_equal(sq_st_read(path, 0, &f), SEQCL_OK);
  sq_st_out *t = calloc(f->count, sizeof *t);
  float **vals = calloc(f->count, sizeof *vals);
  assert_non_null(t);
  assert_non_null(vals);
  int found = 0;
  for (size_t i = 0; i < f->count; i++) {
    const sq_st_tensor *in = &f->tensors[i];
    vals[i] = malloc((in->nelem ? in->nelem : 1) * sizeof(float));
    assert_non_null(vals[i]);
    sq_st_to_f32(f, in, vals[i]);
    if (!strcmp(in->name, name)) {
      vals[i][index] = NAN;
      found = 1;
    }
    t[i].name = in->name;
    t[i].ndim = in->ndim;
    memcpy(t[i].shape, in->shape, sizeof t[i].shape);
    t[i].data = vals[i];
  }
  assert_true(found);
  assert_int_equal(sq_st_write(path, t, f->count), SEQCL_OK);
  for (size_t i = 0; i < f->count; i++) free(vals[i]);
  free(vals);
  free(t);
  sq_st_free(f);
}

static void test_errors(void **state) {
  (void)state;
  seqcl_train_files_options o;
  write_text("five_layers.json", config_text(5, "state"));
  base_options(&o, "E", 2);
  o.config_path = at("five_layers.json");
  expect_error(&o, SEQCL_ERR_INVALID_ARGUMENT, "encoder.num_layers 1..4");
  base_options(&o, "E", 2);
  o.tgt_path = at("valid.tgt");
  expect_error(&o, SEQCL_ERR_INVALID_ARGUMENT, "has 37 lines");
  write_text("nobos.tgt", "10 3 2 1 11\n3 4 11\n10 9 8 7 6 5 11\n");
  base_options(&o, "E", 2);
  o.src_path = at("valid.src");
  o.tgt_path = at("nobos.tgt");
  expect_error(&o, SEQCL_ERR_BAD_TOKENS, "nobos.tgt:2:");
  write_text("range.src", "1 2 3\n4 10\n5\n");
  o.src_path = at("range.src");
  o.tgt_path = at("valid.tgt");
  expect_error(&o, SEQCL_ERR_BAD_TOKENS, "range.src:2:");
  /* resuming with a different batch size, or on other data */
  base_options(&o, "R", 3);
  assert_int_equal(train(&o, &(seqcl_train_files_result){0}), SEQCL_OK);
  resume_options(&o, "R", "R", 6);
  o.batch_size = 4;
  expect_error(&o, SEQCL_ERR_INVALID_ARGUMENT, "--batch-size 4 differs");
  resume_options(&o, "R", "R", 6);
  o.src_path = at("valid.src");
  o.tgt_path = at("valid.tgt");
  expect_error(&o, SEQCL_ERR_INVALID_ARGUMENT, "differs from the checkpoint's");
  /* a NaN in the checkpoint's Adam moments or weights, or in an --init model:
   * a malformed file naming the tensor and the index, before any step */
  poison(at("R/checkpoint/optimizer.safetensors"), "exp_avg_sq.decoder.rnn.weight_hh", 7);
  resume_options(&o, "R", "R", 6);
  expect_error(&o, SEQCL_ERR_BAD_MODEL, "'exp_avg_sq.decoder.rnn.weight_hh': element");
  expect_error(&o, SEQCL_ERR_BAD_MODEL, "(flat index 7) is NaN");
  poison(at("R/model.safetensors"), "encoder.embedding.weight", 3);
  base_options(&o, "I", 2);
  o.config_path = NULL;
  o.init_dir = at("R");
  expect_error(&o, SEQCL_ERR_BAD_MODEL, "'encoder.embedding.weight': element [0, 3]");
  assert_int_not_equal(access(at("I"), F_OK), 0); /* nothing saved */
  /* the recorded files, changed since: the fingerprint tells */
  resume_options(&o, "R", "R", 6);
  o.src_path = o.tgt_path = NULL;
  write_text("train.src", "1 2\n");
  expect_error(&o, SEQCL_ERR_INVALID_ARGUMENT, "train.src");
}

SQ_TEST_MAIN(setup, teardown,
      cmocka_unit_test(test_resume_is_bit_exact),
      cmocka_unit_test(test_learns),
      cmocka_unit_test(test_errors))
