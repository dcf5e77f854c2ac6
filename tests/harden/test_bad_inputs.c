/* The bad-input catalogue's remaining cases (the rest lives in tests/model/
 * test_config.c, test_safetensors.c, test_tokens.c, test_model.c, tests/device/
 * test_selector.c and tests/host/test_host_fronts.c). Each case asserts the
 * exact status and that seqcl_last_message() names the problem. Models run on
 * the host path where the checks under test sit above the backend, and on
 * every device where the answer must not depend on the device. */
#define _POSIX_C_SOURCE 200809L
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

#include "../common/test_main.h"
#include "harden_util.h"
#include "model/config.h"
#include "model/safetensors.h"
#include "model/tokens.h"

static char root[256];
static seqcl_ctx *host;

/* Asserts a status and that the message contains every word given. */
static void expect(seqcl_status got, seqcl_status want, const char *w1, const char *w2) {
  const char *msg = seqcl_last_message();
  if (got != want || (w1 && !strstr(msg, w1)) || (w2 && !strstr(msg, w2)))
    fail_msg("got %s '%s'; want %s naming '%s' and '%s'", seqcl_status_name(got), msg,
             seqcl_status_name(want), w1 ? w1 : "", w2 ? w2 : "");
}

/* A model folder under root with one weight set to value (or none when name is NULL). */
static const char *model_dir(const char *tag, const char *tensor, size_t index, float value) {
  static char dir[8][320];
  static int k;
  k = (k + 1) % 8;
  snprintf(dir[k], sizeof dir[k], "%s/%s", root, tag);
  assert_int_equal(hu_make_model_dir(dir[k], NULL, 5, tensor, index, value), 0);
  return dir[k];
}

static seqcl_seqs parse(const char *text, long vocab, sq_seqs *keep) {
  assert_int_equal(sq_tokens_parse(text, strlen(text), "input", vocab, NULL, keep), SEQCL_OK);
  seqcl_seqs v = {keep->count, keep->ids, keep->offsets};
  return v;
}

/* ---- non-finite weights: a malformed model, on every device, before the device sees it ---- */

/* NaN, +inf and -inf in every tensor of the model (every weight group: the
 * embeddings, both GRUs, the bridge, attention, the output layer), on every
 * device: the load fails with SEQCL_ERR_BAD_MODEL naming the tensor and the
 * flat index. Before the load-time check the host caught some of these as
 * non-finite logits (naming no tensor) and PoCL decoded them with status OK. */
static void test_non_finite_weights(void **state) {
  (void)state;
  sq_config c;
  hu_tiny_config(&c);
  char names[32][80];
  size_t sizes[32];
  const int nt = hu_tensor_names(&c, names, sizes, 32);
  assert_true(nt >= 20);
  size_t ndev = 0;
  seqcl_device_info *devs = hu_devices(&ndev);
  static const float values[] = {NAN, INFINITY, -INFINITY};
  static const char *shown[] = {"NaN", "+inf", "-inf"};
  int checked = 0;
  for (size_t d = 0; d < ndev; d++) {
    seqcl_ctx *ctx = NULL;
    if (seqcl_ctx_open_info(&devs[d], &ctx) != SEQCL_OK) continue; /* refused device: not ours */
    for (int i = 0; i < nt; i++) {
      /* the last element: the flat index then names a position past row 0 */
      const size_t index = sizes[i] - 1;
      const int v = (int)((size_t)i % 3);
      char tag[64];
      snprintf(tag, sizeof tag, "nf-%zu-%d", d, i);
      const char *dir = model_dir(tag, names[i], index, values[v]);
      seqcl_model *m = (seqcl_model *)1;
      char want[64];
      snprintf(want, sizeof want, "flat index %zu) is %s", index, shown[v]);
      expect(seqcl_model_load(ctx, dir, &m), SEQCL_ERR_BAD_MODEL, names[i], want);
      assert_null(m);
      checked++;
    }
    seqcl_ctx_close(ctx);
  }
  seqcl_devices_free(devs);
  assert_true(checked >= nt);
}

/* F16 and BF16 tensors are checked on their bits as stored: an F16 infinity
 * (0x7c00), an F16 NaN (0x7e00), a BF16 NaN (0x7fc0) and a BF16 -inf (0xff80). */
static void test_non_finite_half(void **state) {
  (void)state;
  static const struct {
    const char *dtype;
    uint16_t bits;
    const char *shown;
  } cases[] = {{"F16", 0x7c00, "+inf"}, {"F16", 0x7e00, "NaN"}, {"BF16", 0x7fc0, "NaN"},
               {"BF16", 0xff80, "-inf"}};
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    char header[128];
    const int hl = snprintf(header, sizeof header,
                            "{\"w\":{\"dtype\":\"%s\",\"shape\":[2,3],\"data_offsets\":[0,12]}}",
                            cases[k].dtype);
    unsigned char bytes[256] = {0};
    for (int i = 0; i < 8; i++) bytes[i] = (unsigned char)((uint64_t)hl >> (8 * i));
    memcpy(bytes + 8, header, (size_t)hl);
    unsigned char *data = bytes + 8 + hl;
    for (int i = 0; i < 6; i++) data[2 * i + 1] = 0x3c; /* 1.0 in F16, 0.0117 in BF16 */
    data[2 * 4] = (unsigned char)cases[k].bits;       /* element [1, 1] */
    data[2 * 4 + 1] = (unsigned char)(cases[k].bits >> 8);
    sq_st_file *f = NULL;
    if (sq_st_parse(bytes, 8 + (size_t)hl + 12, "half.safetensors", 0, &f) != SEQCL_OK)
      fail_msg("%s", seqcl_last_message());
    assert_int_equal(sq_st_first_non_finite(f, &f->tensors[0]), 4);
    char want[64];
    snprintf(want, sizeof want, "[1, 1] (flat index 4) is %s", cases[k].shown);
    expect(sq_st_check_finite(f, &f->tensors[0]), SEQCL_ERR_BAD_MODEL, "'w'", want);
    sq_st_free(f);
  }
}

/* A finite model whose run overflows: on every device forward, greedy and beam
 * decoding fail with SEQCL_ERR_NON_FINITE naming the line (forward's message
 * holds fwd_word, beam's beam_word) and leave no result behind. */
static void expect_non_finite_runs(const seqcl_device_info *devs, size_t ndev, const char *dir,
                                   const char *fwd_word, const char *beam_word) {
  sq_seqs s = {0}, t = {0};
  seqcl_seqs src = parse(hu_src_text, 7, &s), tgt = parse(hu_tgt_text, 9, &t);
  for (size_t d = 0; d < ndev; d++) {
    seqcl_ctx *ctx = NULL;
    if (seqcl_ctx_open_info(&devs[d], &ctx) != SEQCL_OK) continue;
    seqcl_model *m = NULL;
    assert_int_equal(seqcl_model_load(ctx, dir, &m), SEQCL_OK); /* finite: loads */
    seqcl_forward_result *r = (seqcl_forward_result *)1;
    expect(seqcl_model_forward(m, &src, &tgt, 0, &r), SEQCL_ERR_NON_FINITE, fwd_word, "step");
    assert_null(r);
    seqcl_decode_options o;
    seqcl_decode_options_init(&o);
    seqcl_decode_result *res = (seqcl_decode_result *)1;
    expect(seqcl_model_decode(m, &src, &o, &res), SEQCL_ERR_NON_FINITE, "greedy decoding: logits",
           "line 1");
    assert_null(res);
    o.beam = 2;
    res = (seqcl_decode_result *)1;
    expect(seqcl_model_decode(m, &src, &o, &res), SEQCL_ERR_NON_FINITE, "line 1", beam_word);
    assert_null(res);
    seqcl_model_free(m);
    seqcl_ctx_close(ctx);
  }
  sq_seqs_free(&s);
  sq_seqs_free(&t);
}

/* Finite weights whose products overflow (every output weight 3e38): the
 * non-finite logits are a runtime failure, SEQCL_ERR_NON_FINITE, naming the
 * line, the step and the tensor, on every device and through every path
 * (teacher forcing, greedy on the device, beam search). */
static void test_overflow_at_run_time(void **state) {
  (void)state;
  size_t ndev = 0;
  seqcl_device_info *devs = hu_devices(&ndev);
  const char *dir = model_dir("overflow", "decoder.output.weight", HU_ALL, 3e38f);
  expect_non_finite_runs(devs, ndev, dir, "logits of line", "logits");
  seqcl_devices_free(devs);
}

/* Finite attention weights whose products overflow in the scores (the
 * general score's query projection all 3e38): the query is then infinite and
 * every score of a line is inf - inf = NaN. Such a line's context is NaN, so
 * the run fails with SEQCL_ERR_NON_FINITE naming the line, on every device
 * and through every path. Before the softmax's maximum saw NaN, a line of
 * NaN scores became a zero context and decoded "successfully" everywhere. */
static void test_attention_overflow(void **state) {
  (void)state;
  size_t ndev = 0;
  seqcl_device_info *devs = hu_devices(&ndev);
  static char dir[320];
  snprintf(dir, sizeof dir, "%s/attn-overflow", root);
  sq_config c;
  hu_tiny_config(&c);
  c.score = SQ_SCORE_GENERAL;
  assert_int_equal(hu_make_model_dir(dir, &c, 5, "decoder.attention.query.weight", HU_ALL, 3e38f), 0);
  expect_non_finite_runs(devs, ndev, dir, "of line 1", "not finite");
  seqcl_devices_free(devs);
}

/* ---- token files ---- */

/* A line of a million ids parses exactly, and a model decodes it (a few steps). */
static void test_huge_line(void **state) {
  (void)state;
  const size_t n = 1000000;
  char *text = malloc(2 * n + 2);
  assert_non_null(text);
  for (size_t i = 0; i < n; i++) {
    text[2 * i] = (char)('0' + (i % 7));
    text[2 * i + 1] = i + 1 < n ? ' ' : '\n';
  }
  text[2 * n] = '\0';
  sq_seqs s = {0};
  assert_int_equal(sq_tokens_parse(text, 2 * n, "huge", 7, NULL, &s), SEQCL_OK);
  assert_int_equal(s.count, 1);
  assert_int_equal(sq_seq_len(&s, 0), n);
  assert_int_equal(s.ids[n - 1], (int32_t)((n - 1) % 7));
  free(text);
  seqcl_model *m = NULL;
  assert_int_equal(seqcl_model_load(host, model_dir("huge", NULL, 0, 0), &m), SEQCL_OK);
  seqcl_seqs src = {s.count, s.ids, s.offsets};
  seqcl_decode_options o;
  seqcl_decode_options_init(&o);
  o.max_steps = 2;
  seqcl_decode_result *d = NULL;
  assert_int_equal(seqcl_model_decode(m, &src, &o, &d), SEQCL_OK);
  assert_int_equal(d->count, 1);
  assert_true(d->steps[0] >= 1 && d->steps[0] <= 2);
  seqcl_decode_result_free(d);
  seqcl_model_free(m);
  sq_seqs_free(&s);
}

static void test_token_file_errors(void **state) {
  (void)state;
  static const struct {
    const char *text, *w1, *w2;
  } cases[] = {
      {"1 2\n3 7\n", "input:2", "7"},           /* id = vocab */
      {"1 2\n99999999999\n", "input:2", NULL},  /* beyond int32 */
      {"1 \xff 2\n", "input:1", NULL},          /* non-UTF-8 byte */
      {"1 2\n\xc3\xa9\n", "input:2", NULL},     /* UTF-8, not a digit */
      {"1 2\n\n3\n", "input:2", NULL},          /* empty line */
      {"1 2\n \t \n", "input:2", NULL},         /* whitespace-only line */
      {"", "input", NULL},                      /* empty file */
      {"1 -2\n", "input:1", NULL},              /* sign */
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    sq_seqs s = {0};
    expect(sq_tokens_parse(cases[i].text, strlen(cases[i].text), "input", 7, NULL, &s),
           SEQCL_ERR_BAD_TOKENS, cases[i].w1, cases[i].w2);
    assert_null(s.ids);
  }
}

/* Ids handed to the library directly are checked against the model's vocabularies. */
static void test_ids_out_of_range(void **state) {
  (void)state;
  seqcl_model *m = NULL;
  assert_int_equal(seqcl_model_load(host, model_dir("range", NULL, 0, 0), &m), SEQCL_OK);
  int32_t ids[] = {1, 7, 2};
  size_t off[] = {0, 3};
  seqcl_seqs src = {1, ids, off};
  seqcl_decode_result *d = NULL;
  expect(seqcl_model_decode(m, &src, NULL, &d), SEQCL_ERR_INVALID_ARGUMENT, "source line 1",
         "id 7");
  ids[1] = -1;
  expect(seqcl_model_decode(m, &src, NULL, &d), SEQCL_ERR_INVALID_ARGUMENT, "token 2", "id -1");
  ids[1] = 3;
  int32_t tids[] = {7, 9};
  size_t toff[] = {0, 2};
  seqcl_seqs tgt = {1, tids, toff};
  seqcl_forward_result *r = NULL;
  expect(seqcl_model_forward(m, &src, &tgt, 0, &r), SEQCL_ERR_INVALID_ARGUMENT, "target line 1",
         "id 9");
  size_t empty[] = {0, 0};
  seqcl_seqs none = {1, ids, empty};
  expect(seqcl_model_decode(m, &none, NULL, &d), SEQCL_ERR_EMPTY_SEQUENCE, "source line 1", NULL);
  assert_null(d);
  assert_null(r);
  seqcl_model_free(m);
}

/* ---- model folders ---- */

static void test_model_dir_missing_files(void **state) {
  (void)state;
  seqcl_model *m = (seqcl_model *)1;
  const char *dir = model_dir("nocfg", NULL, 0, 0);
  assert_int_equal(unlink(hu_join(dir, "config.json")), 0);
  expect(seqcl_model_load(host, dir, &m), SEQCL_ERR_IO, "config.json", NULL);
  assert_null(m);
  dir = model_dir("noweights", NULL, 0, 0);
  assert_int_equal(unlink(hu_join(dir, "model.safetensors")), 0);
  expect(seqcl_model_load(host, dir, &m), SEQCL_ERR_IO, "model.safetensors", NULL);
  assert_null(m);
  expect(seqcl_model_load(host, hu_join(root, "no-such-folder"), &m), SEQCL_ERR_IO, "no-such-folder",
         NULL);
  assert_null(m);
}

static void test_config_bos_out_of_vocab(void **state) {
  (void)state;
  sq_config c;
  hu_tiny_config(&c);
  char *json = NULL;
  c.bos_id = c.tgt_vocab; /* to_json writes it as is; the reader refuses it */
  assert_int_equal(sq_config_to_json(&c, &json), SEQCL_OK);
  sq_config back;
  expect(sq_config_parse(json, strlen(json), "config.json", &back), SEQCL_ERR_BAD_MODEL, "bos_id",
         "config.json");
  free(json);
  /* the same through a model folder */
  const char *dir = model_dir("bos", NULL, 0, 0);
  c.bos_id = 9;
  assert_int_equal(sq_config_to_json(&c, &json), SEQCL_OK);
  hu_write_text(dir, "config.json", json);
  free(json);
  seqcl_model *m = (seqcl_model *)1;
  expect(seqcl_model_load(host, dir, &m), SEQCL_ERR_BAD_MODEL, "bos_id", NULL);
  assert_null(m);
}

static void test_config_not_utf8(void **state) {
  (void)state;
  static const char text[] = "{\"format\":\"seqcl.seq2seq\xff\",\"version\":1}";
  sq_config c;
  expect(sq_config_parse(text, sizeof text - 1, "config.json", &c), SEQCL_ERR_BAD_MODEL,
         "config.json", NULL);
}

static int setup(void **state) {
  (void)state;
  if (hu_mkdtemp(root, sizeof root, "bad")) return -1;
  return seqcl_ctx_open("cpu", &host) == SEQCL_OK ? 0 : -1;
}

static int teardown(void **state) {
  (void)state;
  seqcl_ctx_close(host);
  hu_rmtree(root);
  return 0;
}

SQ_TEST_MAIN(setup, teardown,
      cmocka_unit_test(test_non_finite_weights),
      cmocka_unit_test(test_non_finite_half),
      cmocka_unit_test(test_overflow_at_run_time),
      cmocka_unit_test(test_attention_overflow),
      cmocka_unit_test(test_huge_line),
      cmocka_unit_test(test_token_file_errors),
      cmocka_unit_test(test_ids_out_of_range),
      cmocka_unit_test(test_model_dir_missing_files),
      cmocka_unit_test(test_config_bos_out_of_vocab),
      cmocka_unit_test(test_config_not_utf8))
