/* config.json parsing: a valid file, round trips through sq_config_to_json, and
 * a catalogue of bad inputs, each checked for its exact status and message. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "../common/test_main.h"
#include "model/config.h"

static const char BASE[] =
    "{\n"
    "  \"format\": \"seqcl.seq2seq\", \"version\": 1,\n"
    "  \"src_vocab_size\": 12, \"tgt_vocab_size\": 13, \"embed_dim\": 32,\n"
    "  \"bos_id\": 10, \"eos_id\": 11, \"pad_id\": null,\n"
    "  \"encoder\":   {\"hidden_size\": 64, \"num_layers\": 1, \"bidirectional\": false},\n"
    "  \"decoder\":   {\"hidden_size\": 64, \"init\": \"zeros\"},\n"
    "  \"attention\": {\"score\": \"additive\", \"dim\": 48},\n"
    "  \"output\": \"state\"\n"
    "}\n";

/* BASE with up to two substitutions applied (each must match, so a typo in a
 * test case cannot silently leave the file valid). */
static char *edit(const char *from1, const char *to1, const char *from2, const char *to2) {
  char *s = strdup(BASE);
  const char *from[2] = {from1, from2}, *to[2] = {to1, to2};
  for (int k = 0; k < 2; k++) {
    if (!from[k]) continue;
    char *at = strstr(s, from[k]);
    if (!at) fail_msg("test bug: '%s' not found in the base config", from[k]);
    size_t n = strlen(s), nf = strlen(from[k]), nt = strlen(to[k]);
    char *r = malloc(n - nf + nt + 1);
    size_t pre = (size_t)(at - s);
    memcpy(r, s, pre);
    memcpy(r + pre, to[k], nt);
    memcpy(r + pre + nt, at + nf, n - pre - nf + 1);
    free(s);
    s = r;
  }
  return s;
}

static seqcl_status parse_text(const char *text, sq_config *c) {
  return sq_config_parse(text, strlen(text), "m/config.json", c);
}

static void test_valid(void **state) {
  (void)state;
  sq_config c;
  assert_int_equal(parse_text(BASE, &c), SEQCL_OK);
  assert_int_equal(c.src_vocab, 12);
  assert_int_equal(c.tgt_vocab, 13);
  assert_int_equal(c.embed_dim, 32);
  assert_int_equal(c.bos_id, 10);
  assert_int_equal(c.eos_id, 11);
  assert_int_equal(c.pad_id, -1);
  assert_int_equal(c.enc_hidden, 64);
  assert_int_equal(c.enc_layers, 1);
  assert_int_equal(c.bidirectional, 0);
  assert_int_equal(c.dec_hidden, 64);
  assert_int_equal(c.init, SQ_INIT_ZEROS);
  assert_int_equal(c.score, SQ_SCORE_ADDITIVE);
  assert_int_equal(c.attn_dim, 48);
  assert_int_equal(c.output, SQ_OUTPUT_STATE);
  assert_int_equal(sq_config_enc_width(&c), 64);
}

static void test_valid_variants(void **state) {
  (void)state;
  sq_config c;
  /* Bidirectional H = 32 gives H_e = 64 = H_d, so dot products are allowed. */
  char *t = edit("\"hidden_size\": 64, \"num_layers\": 1, \"bidirectional\": false",
                 "\"hidden_size\": 32, \"num_layers\": 2, \"bidirectional\": true",
                 "{\"score\": \"additive\", \"dim\": 48}", "{\"score\": \"scaled_dot\"}");
  assert_int_equal(parse_text(t, &c), SEQCL_OK);
  assert_int_equal(c.bidirectional, 1);
  assert_int_equal(c.enc_layers, 2);
  assert_int_equal(sq_config_enc_width(&c), 64);
  assert_int_equal(c.score, SQ_SCORE_SCALED_DOT);
  assert_int_equal(c.attn_dim, 0);
  free(t);

  t = edit("\"init\": \"zeros\"", "\"init\": \"bridge\"", "\"output\": \"state\"",
           "\"output\": \"state_context\"");
  assert_int_equal(parse_text(t, &c), SEQCL_OK);
  assert_int_equal(c.init, SQ_INIT_BRIDGE);
  assert_int_equal(c.output, SQ_OUTPUT_STATE_CONTEXT);
  free(t);

  /* "final": s_0 = the encoder's final state, H_e = H_d = 64 */
  t = edit("\"init\": \"zeros\"", "\"init\": \"final\"", NULL, NULL);
  assert_int_equal(parse_text(t, &c), SEQCL_OK);
  assert_int_equal(c.init, SQ_INIT_FINAL);
  free(t);

  t = edit("\"pad_id\": null", "\"pad_id\": 0", "{\"score\": \"additive\", \"dim\": 48}",
           "{\"score\": \"general\"}");
  assert_int_equal(parse_text(t, &c), SEQCL_OK);
  assert_int_equal(c.pad_id, 0);
  assert_int_equal(c.score, SQ_SCORE_GENERAL);
  free(t);

  /* "none" (a fixed context): no dimension and no H_e = H_d rule (here H_e 64,
   * H_d 48); a "dim" is still checked, then ignored. */
  t = edit("{\"score\": \"additive\", \"dim\": 48}", "{\"score\": \"none\", \"dim\": 7}",
           "\"hidden_size\": 64, \"init\"", "\"hidden_size\": 48, \"init\"");
  assert_int_equal(parse_text(t, &c), SEQCL_OK);
  assert_int_equal(c.score, SQ_SCORE_NONE);
  assert_int_equal(c.attn_dim, 0);
  assert_int_equal(c.dec_hidden, 48);
  free(t);

  /* An absent pad_id means null. */
  t = edit("\"pad_id\": null,", "", NULL, NULL);
  assert_int_equal(parse_text(t, &c), SEQCL_OK);
  assert_int_equal(c.pad_id, -1);
  free(t);
}

/* Runs f with stderr redirected into a buffer. */
static void capture_stderr(char *buf, size_t cap, void (*f)(void *), void *arg) {
  fflush(stderr);
  FILE *tmp = tmpfile();
  assert_non_null(tmp);
  int saved = dup(fileno(stderr));
  dup2(fileno(tmp), fileno(stderr));
  f(arg);
  fflush(stderr);
  dup2(saved, fileno(stderr));
  close(saved);
  rewind(tmp);
  size_t n = fread(buf, 1, cap - 1, tmp);
  buf[n] = '\0';
  fclose(tmp);
}

typedef struct parse_job {
  const char *text;
  sq_config c;
  seqcl_status st;
} parse_job;

static void run_parse(void *arg) {
  parse_job *j = arg;
  j->st = parse_text(j->text, &j->c);
}

static void test_unknown_keys_warn(void **state) {
  (void)state;
  char *t = edit("\"output\": \"state\"", "\"output\": \"state\", \"dropout\": 0.1",
                 "\"init\": \"zeros\"", "\"init\": \"zeros\", \"layers\": {\"a\": 1}");
  parse_job j = {t, {0}, SEQCL_ERR_INTERNAL};
  char err[1024];
  capture_stderr(err, sizeof err, run_parse, &j);
  assert_int_equal(j.st, SEQCL_OK);
  assert_int_equal(j.c.attn_dim, 48);
  if (!strstr(err, "m/config.json: unknown key 'dropout' ignored") ||
      !strstr(err, "m/config.json: unknown key 'decoder.layers' ignored"))
    fail_msg("warnings were: %s", err);
  free(t);

  /* A misspelt key: the warning points at it, next to the error for the real key. */
  t = edit("{\"hidden_size\": 64, \"num_layers\"", "{\"hiden_size\": 64, \"num_layers\"", NULL, NULL);
  j.text = t;
  capture_stderr(err, sizeof err, run_parse, &j);
  assert_int_equal(j.st, SEQCL_ERR_BAD_MODEL);
  assert_non_null(strstr(seqcl_last_message(), "required key 'encoder.hidden_size'"));
  if (!strstr(err, "m/config.json: unknown key 'encoder.hiden_size' ignored")) fail_msg("warnings were: %s", err);
  free(t);

  /* A valid file prints nothing. */
  j.text = BASE;
  capture_stderr(err, sizeof err, run_parse, &j);
  assert_int_equal(j.st, SEQCL_OK);
  assert_string_equal(err, "");
}

typedef struct bad_case {
  const char *from, *to; /* substitution in BASE; from NULL: to is the whole text */
  const char *from2, *to2;
  const char *message;   /* expected substring of seqcl_last_message() */
} bad_case;

static const bad_case BAD[] = {
    {"\"version\": 1", "\"version\": 2", 0, 0, "version must be 1 (the only version this seqcl reads), got 2"},
    {"\"version\": 1", "\"version\": \"1\"", 0, 0, "version must be 1"},
    {"\"version\": 1", "\"version\": 1.0", 0, 0, "version must be 1"},
    {"\"version\": 1,", "", 0, 0, "required key 'version'"},
    {"\"seqcl.seq2seq\"", "\"seqcl.other\"", 0, 0, "format must be \"seqcl.seq2seq\", got \"seqcl.other\""},
    {"\"format\": \"seqcl.seq2seq\",", "", 0, 0, "required key 'format'"},
    {"\"src_vocab_size\": 12", "\"src_vocab_size\": 0", 0, 0, "src_vocab_size must be a positive integer"},
    {"\"tgt_vocab_size\": 13", "\"tgt_vocab_size\": -3", 0, 0, "tgt_vocab_size must be a positive integer (at most 16777216), got -3"},
    {"\"src_vocab_size\": 12", "\"src_vocab_size\": 16777217", 0, 0, "src_vocab_size must be a positive integer (at most 16777216), got 16777217"},
    {"\"src_vocab_size\": 12,", "", 0, 0, "required key 'src_vocab_size'"},
    {"\"embed_dim\": 32", "\"embed_dim\": 32.0", 0, 0, "embed_dim must be a positive integer (at most 65536), got 32.0"},
    {"\"embed_dim\": 32", "\"embed_dim\": \"32\"", 0, 0, "embed_dim must be a positive integer"},
    {"\"embed_dim\": 32", "\"embed_dim\": 4294967328", 0, 0, "embed_dim must be a positive integer (at most 65536), got 4294967328"},
    {"\"embed_dim\": 32", "\"embed_dim\": 99999999999999999999999", 0, 0, "not valid JSON"},
    {"\"embed_dim\": 32", "\"embed_dim\": null", 0, 0, "embed_dim must be a positive integer"},
    {"\"hidden_size\": 64, \"num_layers\"", "\"hidden_size\": 0, \"num_layers\"", 0, 0, "encoder.hidden_size must be a positive integer (at most 65536), got 0"},
    {"\"hidden_size\": 64, \"num_layers\"", "\"num_layers\"", 0, 0, "required key 'encoder.hidden_size'"},
    {"\"num_layers\": 1", "\"num_layers\": 0", 0, 0, "encoder.num_layers must be a positive integer (at most 256), got 0"},
    {"\"bidirectional\": false", "\"bidirectional\": \"yes\"", 0, 0, "encoder.bidirectional must be true or false, got \"yes\""},
    {"\"bidirectional\": false", "\"bidirectional\": 1", 0, 0, "encoder.bidirectional must be true or false, got 1"},
    {", \"bidirectional\": false", "", 0, 0, "required key 'encoder.bidirectional'"},
    {"{\"hidden_size\": 64, \"init\"", "{\"hidden_size\": -64, \"init\"", 0, 0, "decoder.hidden_size must be a positive integer"},
    {"{\"hidden_size\": 64, \"init\"", "{\"init\"", 0, 0, "required key 'decoder.hidden_size'"},
    {"\"init\": \"zeros\"", "\"init\": \"random\"", 0, 0, "decoder.init must be one of \"zeros\", \"bridge\", \"final\", got \"random\""},
    {"\"init\": \"zeros\"", "\"init\": \"final\"", "\"bidirectional\": false", "\"bidirectional\": true",
     "decoder.init \"final\" needs the encoder output width H_e (128 = 2 x encoder.hidden_size) to equal decoder.hidden_size (64)"},
    {", \"init\": \"zeros\"", "", 0, 0, "required key 'decoder.init'"},
    {"\"score\": \"additive\"", "\"score\": \"cosine\"", 0, 0, "attention.score must be one of \"additive\", \"general\", \"dot\", \"scaled_dot\", \"none\", got \"cosine\""},
    {"\"score\": \"additive\"", "\"score\": 2", 0, 0, "attention.score must be one of"},
    {"\"score\": \"additive\", ", "", 0, 0, "required key 'attention.score'"},
    {"{\"score\": \"additive\", \"dim\": 48}", "{\"score\": \"additive\"}", 0, 0, "required key 'attention.dim'"},
    {"\"dim\": 48", "\"dim\": 0", 0, 0, "attention.dim must be a positive integer (at most 65536), got 0"},
    {"{\"score\": \"additive\", \"dim\": 48}", "{\"score\": \"general\", \"dim\": \"wide\"}", 0, 0, "attention.dim must be a positive integer"},
    {"\"bos_id\": 10", "\"bos_id\": 13", 0, 0, "bos_id must be an integer in [0, tgt_vocab_size = 13), got 13"},
    {"\"bos_id\": 10", "\"bos_id\": null", 0, 0, "bos_id must be an integer in [0, tgt_vocab_size = 13)"},
    {"\"eos_id\": 11", "\"eos_id\": -1", 0, 0, "eos_id must be an integer in [0, tgt_vocab_size = 13), got -1"},
    {"\"eos_id\": 11,", "", 0, 0, "required key 'eos_id'"},
    {"\"pad_id\": null", "\"pad_id\": 13", 0, 0, "pad_id must be null or an integer in [0, tgt_vocab_size = 13), got 13"},
    {"\"pad_id\": null", "\"pad_id\": \"none\"", 0, 0, "pad_id must be null or an integer"},
    {"\"pad_id\": null", "\"pad_id\": false", 0, 0, "pad_id must be null or an integer"},
    {"{\"score\": \"additive\", \"dim\": 48}", "{\"score\": \"dot\"}", "{\"hidden_size\": 64, \"init\"", "{\"hidden_size\": 32, \"init\"",
     "attention.score \"dot\" needs the encoder output width H_e (64 = encoder.hidden_size) to equal decoder.hidden_size (32)"},
    {"{\"score\": \"additive\", \"dim\": 48}", "{\"score\": \"scaled_dot\"}", "\"bidirectional\": false", "\"bidirectional\": true",
     "attention.score \"scaled_dot\" needs the encoder output width H_e (128 = 2 x encoder.hidden_size) to equal decoder.hidden_size (64)"},
    {"\"output\": \"state\"", "\"output\": \"logits\"", 0, 0, "output must be one of \"state\", \"state_context\", got \"logits\""},
    {",\n  \"output\": \"state\"", "", 0, 0, "required key 'output'"},
    {"\"embed_dim\": 32,", "\"embed_dim\": 32, \"embed_dim\": 32,", 0, 0, "duplicate object key"},
    {"\"num_layers\": 1,", "\"num_layers\": 1, \"num_layers\": 2,", 0, 0, "duplicate object key"},
    {"\"encoder\":   {\"hidden_size\": 64, \"num_layers\": 1, \"bidirectional\": false}", "\"encoder\": [64, 1, false]", 0, 0,
     "encoder must be an object, got [64,1,false]"},
    {"\"encoder\":   {\"hidden_size\": 64, \"num_layers\": 1, \"bidirectional\": false},", "", 0, 0, "required key 'encoder'"},
    {"\"attention\": {\"score\": \"additive\", \"dim\": 48}", "\"attention\": null", 0, 0, "attention must be an object, got null"},
    {NULL, "{", 0, 0, "m/config.json: not valid JSON (line 1"},
    {NULL, "", 0, 0, "m/config.json: not valid JSON"},
    {NULL, "model: seq2seq\n", 0, 0, "not valid JSON"},
    {NULL, "[1, 2]", 0, 0, "the top level must be a JSON object, got [1,2]"},
    {"}\n", "} trailing", 0, 0, "not valid JSON"},
};

static void test_bad_catalogue(void **state) {
  (void)state;
  for (size_t i = 0; i < sizeof BAD / sizeof BAD[0]; i++) {
    const bad_case *b = &BAD[i];
    char *t = b->from ? edit(b->from, b->to, b->from2, b->to2) : strdup(b->to);
    sq_config c;
    memset(&c, 0x5a, sizeof c);
    seqcl_status st = parse_text(t, &c);
    const char *msg = seqcl_last_message();
    if (st != SEQCL_ERR_BAD_MODEL || !strstr(msg, b->message) || !strstr(msg, "m/config.json: "))
      fail_msg("case %zu: status %s, message '%s'; expected SEQCL_ERR_BAD_MODEL and '%s'", i,
               seqcl_status_name(st), msg, b->message);
    /* A failed parse leaves a zeroed config, not half-filled fields. */
    sq_config zero;
    memset(&zero, 0, sizeof zero);
    assert_memory_equal(&c, &zero, sizeof c);
    free(t);
  }
  printf("config bad-input cases: %zu\n", sizeof BAD / sizeof BAD[0]);
}

static void test_round_trip(void **state) {
  (void)state;
  sq_config configs[5] = {
      /* the last four: src_unk_id, tgt_unk_id and whether each is set */
      {12, 13, 32, 10, 11, -1, 64, 1, 0, 64, SQ_INIT_ZEROS, SQ_SCORE_ADDITIVE, 48, SQ_OUTPUT_STATE,
       0, 0, 0, 0},
      {7, 9, 5, 0, 8, 3, 16, 3, 1, 32, SQ_INIT_BRIDGE, SQ_SCORE_DOT, 0, SQ_OUTPUT_STATE_CONTEXT,
       6, 0, 1, 1},
      {100, 200, 8, 1, 2, 0, 4, 2, 0, 6, SQ_INIT_ZEROS, SQ_SCORE_GENERAL, 0, SQ_OUTPUT_STATE,
       0, 199, 0, 1},
      {9, 9, 4, 1, 2, -1, 5, 2, 1, 10, SQ_INIT_FINAL, SQ_SCORE_ADDITIVE, 6, SQ_OUTPUT_STATE,
       0, 0, 0, 0},
      {9, 8, 5, 7, 6, -1, 6, 2, 1, 7, SQ_INIT_BRIDGE, SQ_SCORE_NONE, 0, SQ_OUTPUT_STATE_CONTEXT,
       0, 0, 0, 0},
  };
  for (int i = 0; i < 5; i++) {
    char *text = NULL;
    assert_int_equal(sq_config_to_json(&configs[i], &text), SEQCL_OK);
    sq_config back;
    parse_job j = {text, {0}, SEQCL_ERR_INTERNAL};
    char err[256];
    capture_stderr(err, sizeof err, run_parse, &j); /* no unknown-key warnings */
    assert_int_equal(j.st, SEQCL_OK);
    assert_string_equal(err, "");
    back = j.c;
    assert_memory_equal(&back, &configs[i], sizeof back);
    free(text);
  }
  sq_config bad = configs[0];
  bad.score = (sq_score)9;
  char *text = (char *)1;
  assert_int_equal(sq_config_to_json(&bad, &text), SEQCL_ERR_INVALID_ARGUMENT);
  assert_null(text);
}

static void test_load_file(void **state) {
  (void)state;
  char dir[] = "/tmp/seqcl-config-XXXXXX";
  assert_non_null(mkdtemp(dir));
  char path[256];
  snprintf(path, sizeof path, "%s/config.json", dir);
  sq_config c;
  /* Missing file: an I/O error naming the path. */
  assert_int_equal(sq_config_load(path, &c), SEQCL_ERR_IO);
  assert_non_null(strstr(seqcl_last_message(), path));
  FILE *f = fopen(path, "wb");
  assert_non_null(f);
  fputs(BASE, f);
  fclose(f);
  assert_int_equal(sq_config_load(path, &c), SEQCL_OK);
  assert_int_equal(c.attn_dim, 48);
  /* A bad file's error names the path given. */
  f = fopen(path, "wb");
  fputs("{\"format\": \"seqcl.seq2seq\", \"version\": 3}", f);
  fclose(f);
  assert_int_equal(sq_config_load(path, &c), SEQCL_ERR_BAD_MODEL);
  char want[300];
  snprintf(want, sizeof want, "%s: version must be 1", path);
  assert_non_null(strstr(seqcl_last_message(), want));
  unlink(path);
  rmdir(dir);
}

SQ_TEST_MAIN(NULL, NULL,
      cmocka_unit_test(test_valid),          cmocka_unit_test(test_valid_variants),
      cmocka_unit_test(test_unknown_keys_warn), cmocka_unit_test(test_bad_catalogue),
      cmocka_unit_test(test_round_trip),     cmocka_unit_test(test_load_file))
