/* Token files, vocabularies, token line output and safe output files (SPEC §4):
 * every rule checked with its exact status and a message naming file and line. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "../common/test_main.h"
#include "../harden/harden_util.h"

#include "model/tokens.h"

static void write_text(const char *path, const char *text, size_t len) {
  FILE *f = fopen(path, "wb");
  assert_non_null(f);
  assert_int_equal(fwrite(text, 1, len, f), len);
  fclose(f);
}

/* Checks s against the expected sequences, given as a -1 separated list. */
static void expect_seqs(const sq_seqs *s, const int32_t *want, size_t nwant) {
  size_t line = 0, k = 0;
  for (size_t i = 0; i < nwant; i++) {
    if (want[i] == -1) {
      assert_int_equal(sq_seq_len(s, line), k);
      line++;
      k = 0;
    } else {
      assert_true(line < s->count);
      assert_int_equal(s->ids[s->offsets[line] + k], want[i]);
      k++;
    }
  }
  assert_int_equal(s->count, line);
}

static void parse_ok(const char *text, size_t len, long vocab_size, const sq_vocab *v,
                     const int32_t *want, size_t nwant) {
  sq_seqs s;
  seqcl_status st = sq_tokens_parse(text, len, "t.txt", vocab_size, v, &s);
  if (st != SEQCL_OK) fail_msg("'%.*s': %s: %s", (int)len, text, seqcl_status_name(st), seqcl_last_message());
  expect_seqs(&s, want, nwant);
  sq_seqs_free(&s);
  assert_null(s.ids);
  assert_int_equal(s.count, 0);
}

#define W(...) (const int32_t[]){__VA_ARGS__}, sizeof((const int32_t[]){__VA_ARGS__}) / sizeof(int32_t)
#define TXT(s) s, sizeof(s) - 1

static void test_valid_ids(void **state) {
  (void)state;
  parse_ok(TXT("1 2 3\n4 5\n"), 12, NULL, W(1, 2, 3, -1, 4, 5, -1));
  parse_ok(TXT("007 0 00\n"), 12, NULL, W(7, 0, 0, -1));
  parse_ok(TXT("1 2\r\n3\r\n"), 12, NULL, W(1, 2, -1, 3, -1));           /* CRLF */
  parse_ok(TXT("1 2\n3"), 12, NULL, W(1, 2, -1, 3, -1));                 /* no final newline */
  parse_ok(TXT("1 2\r\n3\r"), 12, NULL, W(1, 2, -1, 3, -1));             /* CRLF, no final LF */
  parse_ok(TXT("  1\t 2  \t\n\t11\n"), 12, NULL, W(1, 2, -1, 11, -1));   /* spaces and tabs */
  parse_ok(TXT("11"), 12, NULL, W(11, -1));
  parse_ok(TXT("2147483647\n"), 0, NULL, W(2147483647, -1));            /* no vocabulary bound */
  parse_ok(TXT("0000000000000000000000000000005\n"), 12, NULL, W(5, -1)); /* long but small */
}

typedef struct bad_case {
  const char *text;
  size_t len;
  long vocab_size;
  const char *message;
} bad_case;

static const bad_case BAD[] = {
    {TXT(""), 12, "t.txt: empty file (no lines)"},
    {TXT("\n"), 12, "t.txt:1: empty line (every line needs at least one token)"},
    {TXT("1\n\n2\n"), 12, "t.txt:2: empty line"},
    {TXT("1\r\n\r\n"), 12, "t.txt:2: empty line"},
    {TXT("1\n  \t \n"), 12, "t.txt:2: whitespace-only line"},
    {TXT("1\n2\n \r\n"), 12, "t.txt:3: whitespace-only line"},
    {TXT("-1\n"), 12, "t.txt:1: token '-1' has a sign; ids are unsigned decimal numbers"},
    {TXT("2 +3\n"), 12, "t.txt:1: token '+3' has a sign"},
    {TXT("2 3-\n"), 12, "t.txt:1: token '3-' is not a decimal id (character '-' at byte 2)"},
    {TXT("1 2 x\n"), 12, "t.txt:1: token 'x' is not a decimal id (character 'x' at byte 1)"},
    {TXT("1,2\n"), 12, "t.txt:1: token '1,2' is not a decimal id (character ',' at byte 2)"},
    {TXT("3.0\n"), 12, "token '3.0' is not a decimal id (character '.' at byte 2)"},
    {TXT("0x1\n"), 12, "token '0x1' is not a decimal id"},
    {TXT("1e3\n"), 12, "token '1e3' is not a decimal id"},
    {TXT("\xff\xfe 1\n"), 12, "t.txt:1: token '\\xff\\xfe' is not a decimal id (character '\\xff' at byte 1)"},
    {TXT("\xef\xbc\x93\n"), 12, "token '\\xef\\xbc\\x93' is not a decimal id"}, /* fullwidth 3 */
    {TXT("1\r2\n"), 12, "t.txt:1: token '1\\x0d2' is not a decimal id (character '\\x0d' at byte 2)"},
    {TXT("1\0 2\n"), 12, "t.txt:1: token '1\\x00' is not a decimal id"},
    {TXT("12\n"), 12, "t.txt:1: id 12 is out of range (the vocabulary has 12 ids: 0..11)"},
    {TXT("1 2\n3 4 99\n"), 50, "t.txt:2: id 99 is out of range (the vocabulary has 50 ids: 0..49)"},
    {TXT("5\n123456789012345678901234567890\n"), 12, "t.txt:2: id 123456789012345678901234567890 is out of range"},
    {TXT("99999999999999999999999999999999999999999999999999\n"), 12,
     "id 9999999999999999999999999999999999999999... is out of range"},
    {TXT("2147483648\n"), 0, "t.txt:1: id 2147483648 is out of range (above 2147483647)"},
    {TXT("1\r\n2\r\nx\r\n"), 12, "t.txt:3: token 'x'"},
    {TXT("1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\n\n"), 12, "t.txt:12: empty line"},
};

static void test_bad_catalogue(void **state) {
  (void)state;
  for (size_t i = 0; i < sizeof BAD / sizeof BAD[0]; i++) {
    const bad_case *b = &BAD[i];
    sq_seqs s;
    memset(&s, 0x5a, sizeof s);
    seqcl_status st = sq_tokens_parse(b->text, b->len, "t.txt", b->vocab_size, NULL, &s);
    const char *msg = seqcl_last_message();
    if (st != SEQCL_ERR_BAD_TOKENS || !strstr(msg, b->message))
      fail_msg("case %zu: status %s, message '%s'; expected SEQCL_ERR_BAD_TOKENS and '%s'", i,
               seqcl_status_name(st), msg, b->message);
    assert_int_equal(s.count, 0);
    assert_null(s.ids);
    assert_null(s.offsets);
  }
  printf("token bad-input cases: %zu\n", sizeof BAD / sizeof BAD[0]);
}

static sq_vocab *vocab_from(const char *text, size_t len, seqcl_status want, const char *message) {
  char path[128];
  snprintf(path, sizeof path, "%s/v.txt", hu_tmpdir);
  write_text(path, text, len);
  sq_vocab *v = (sq_vocab *)1;
  seqcl_status st = sq_vocab_read(path, &v);
  if (st != want || (message && !strstr(seqcl_last_message(), message)))
    fail_msg("vocab '%.*s': %s '%s'; expected %s '%s'", (int)len, text, seqcl_status_name(st),
             seqcl_last_message(), seqcl_status_name(want), message ? message : "");
  if (want != SEQCL_OK) assert_null(v);
  unlink(path);
  return v;
}

static void test_vocab(void **state) {
  (void)state;
  sq_vocab *v = vocab_from(TXT("<s>\n</s>\nhello\nworld\n"), SEQCL_OK, NULL);
  assert_int_equal(v->count, 4);
  assert_string_equal(v->words[2], "hello");
  assert_int_equal(sq_vocab_lookup(v, "world", 5), 3);
  assert_int_equal(sq_vocab_lookup(v, "worlds", 6), -1);
  assert_int_equal(sq_vocab_lookup(v, "worl", 4), -1);
  assert_int_equal(sq_vocab_lookup(v, "<s>", 3), 0);
  sq_vocab_free(v);

  v = vocab_from(TXT("a\r\nb\r\nc"), SEQCL_OK, NULL); /* CRLF, no final newline */
  assert_int_equal(v->count, 3);
  assert_string_equal(v->words[1], "b");
  assert_string_equal(v->words[2], "c");
  sq_vocab_free(v);

  /* Many words: the hash table grows past collisions. */
  char big[40000];
  size_t at = 0;
  for (int i = 0; i < 3000; i++) at += (size_t)snprintf(big + at, sizeof big - at, "w%d\n", i);
  v = vocab_from(big, at, SEQCL_OK, NULL);
  assert_int_equal(v->count, 3000);
  for (int i = 0; i < 3000; i += 7) {
    char w[16];
    int n = snprintf(w, sizeof w, "w%d", i);
    assert_int_equal(sq_vocab_lookup(v, w, (size_t)n), i);
  }
  sq_vocab_free(v);

  char want[160];
  snprintf(want, sizeof want, "%s/v.txt:2: empty line", hu_tmpdir);
  vocab_from(TXT("a\n\nb\n"), SEQCL_ERR_BAD_TOKENS, want);
  vocab_from(TXT("a\r\n\r\nb\r\n"), SEQCL_ERR_BAD_TOKENS, "v.txt:2: empty line");
  vocab_from(TXT("a\nb\na\n"), SEQCL_ERR_BAD_TOKENS, "v.txt:3: duplicate token 'a' (already on line 1)");
  vocab_from(TXT("a b\n"), SEQCL_ERR_BAD_TOKENS, "v.txt:1: the token contains whitespace (at byte 2 of the line)");
  vocab_from(TXT("a\nb\t\n"), SEQCL_ERR_BAD_TOKENS, "v.txt:2: the token contains whitespace");
  vocab_from(TXT("a\n b\n"), SEQCL_ERR_BAD_TOKENS, "v.txt:2: the token contains whitespace (at byte 1");
  vocab_from(TXT("a\rb\n"), SEQCL_ERR_BAD_TOKENS, "v.txt:1: the token contains whitespace");
  vocab_from(TXT("a\nb\0c\n"), SEQCL_ERR_BAD_TOKENS, "v.txt:2: the token contains a NUL byte");
  vocab_from(TXT(""), SEQCL_ERR_BAD_TOKENS, "v.txt: empty vocabulary file");
  vocab_from(TXT("\n"), SEQCL_ERR_BAD_TOKENS, "v.txt:1: empty line");

  sq_vocab *none = (sq_vocab *)1;
  char path[128];
  snprintf(path, sizeof path, "%s/missing.txt", hu_tmpdir);
  assert_int_equal(sq_vocab_read(path, &none), SEQCL_ERR_IO);
  assert_null(none);
  assert_non_null(strstr(seqcl_last_message(), path));
  sq_vocab_free(NULL);
}

static void test_words(void **state) {
  (void)state;
  sq_vocab *v = vocab_from(TXT("<s>\n</s>\nhello\nworld\n"), SEQCL_OK, NULL);
  parse_ok(TXT("hello world\r\n<s>  hello\n</s>"), 4, v, W(2, 3, -1, 0, 2, -1, 1, -1));
  /* Digits are words too when a vocabulary is given. */
  sq_seqs s;
  assert_int_equal(sq_tokens_parse(TXT("hello there\n"), "t.txt", 4, v, &s), SEQCL_ERR_BAD_TOKENS);
  assert_non_null(strstr(seqcl_last_message(), "t.txt:1: unknown word 'there' (not in the vocabulary)"));
  assert_int_equal(sq_tokens_parse(TXT("hello\n2\n"), "t.txt", 4, v, &s), SEQCL_ERR_BAD_TOKENS);
  assert_non_null(strstr(seqcl_last_message(), "t.txt:2: unknown word '2'"));
  assert_int_equal(sq_tokens_parse(TXT("hello\n\n"), "t.txt", 4, v, &s), SEQCL_ERR_BAD_TOKENS);
  assert_non_null(strstr(seqcl_last_message(), "t.txt:2: empty line"));
  assert_int_equal(sq_tokens_parse(TXT("hell\xc3\xb6\n"), "t.txt", 4, v, &s), SEQCL_ERR_BAD_TOKENS);
  assert_non_null(strstr(seqcl_last_message(), "unknown word 'hell\\xc3\\xb6'"));
  /* A vocabulary larger than the model's: ids past the model are errors. */
  assert_int_equal(sq_tokens_parse(TXT("hello world\n"), "t.txt", 3, v, &s), SEQCL_ERR_BAD_TOKENS);
  assert_non_null(strstr(seqcl_last_message(),
                         "t.txt:1: word 'world' has id 3, out of range for the model (vocab size 3)"));

  /* Writing lines back as words. */
  FILE *f = tmpfile();
  const int32_t ids[3] = {2, 3, 1};
  assert_int_equal(sq_tokens_write_line(f, ids, 3, v), 0);
  assert_int_equal(sq_tokens_write_line(f, ids, 0, v), 0);
  const int32_t bad[1] = {4};
  assert_int_equal(sq_tokens_write_line(f, bad, 1, v), -1);
  assert_non_null(strstr(seqcl_last_message(), "id 4 has no word in the vocabulary (it has 4 words)"));
  rewind(f);
  char buf[64] = {0};
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  assert_string_equal(buf, "hello world </s>\n\n"); /* the failed line wrote nothing past its end */
  assert_int_equal(n, 18);
  sq_vocab_free(v);
}

/* Seeded random sequences written with sq_tokens_write_line and parsed back. */
static void test_write_parse_round_trip(void **state) {
  (void)state;
  uint64_t rng = 7;
  FILE *f = tmpfile();
  enum { LINES = 2000 };
  int32_t *all = malloc(LINES * 40 * sizeof *all);
  size_t lens[LINES], total = 0;
  for (int l = 0; l < LINES; l++) {
    rng = rng * 6364136223846793005ull + 1442695040888963407ull;
    lens[l] = 1 + (size_t)(rng >> 40) % 40;
    for (size_t k = 0; k < lens[l]; k++) {
      rng = rng * 6364136223846793005ull + 1442695040888963407ull;
      all[total + k] = (int32_t)((rng >> 33) % 30000);
    }
    assert_int_equal(sq_tokens_write_line(f, all + total, lens[l], NULL), 0);
    total += lens[l];
  }
  long size = ftell(f);
  rewind(f);
  char *text = malloc((size_t)size);
  assert_int_equal(fread(text, 1, (size_t)size, f), (size_t)size);
  fclose(f);
  sq_seqs s;
  assert_int_equal(sq_tokens_parse(text, (size_t)size, "t.txt", 30000, NULL, &s), SEQCL_OK);
  assert_int_equal(s.count, LINES);
  assert_int_equal(s.offsets[LINES], total);
  for (int l = 0; l < LINES; l++) assert_int_equal(sq_seq_len(&s, (size_t)l), lens[l]);
  assert_memory_equal(s.ids, all, total * sizeof *all);
  sq_seqs_free(&s);
  /* With the bound equal to the largest id, its first occurrence is reported. */
  int32_t max = 0;
  for (size_t i = 0; i < total; i++)
    if (all[i] > max) max = all[i];
  size_t first = 0;
  while (all[first] != max) first++;
  size_t line = 0, acc = 0;
  while (acc + lens[line] <= first) acc += lens[line++];
  assert_int_equal(sq_tokens_parse(text, (size_t)size, "t.txt", max, NULL, &s), SEQCL_ERR_BAD_TOKENS);
  char want[96];
  snprintf(want, sizeof want, "t.txt:%zu: id %d is out of range", line + 1, (int)max);
  assert_non_null(strstr(seqcl_last_message(), want));
  free(text);
  free(all);
}

static void test_read_files(void **state) {
  (void)state;
  char path[128];
  snprintf(path, sizeof path, "%s/src.txt", hu_tmpdir);
  write_text(path, TXT("3 4 5\r\n6"));
  sq_seqs s;
  assert_int_equal(sq_tokens_read(path, 10, NULL, &s), SEQCL_OK);
  expect_seqs(&s, W(3, 4, 5, -1, 6, -1));
  sq_seqs_free(&s);
  /* Messages carry the path. */
  write_text(path, TXT("3 4 5\n6 x\n"));
  assert_int_equal(sq_tokens_read(path, 10, NULL, &s), SEQCL_ERR_BAD_TOKENS);
  char want[200];
  snprintf(want, sizeof want, "%s:2: token 'x'", path);
  assert_non_null(strstr(seqcl_last_message(), want));
  write_text(path, TXT(""));
  assert_int_equal(sq_tokens_read(path, 10, NULL, &s), SEQCL_ERR_BAD_TOKENS);
  snprintf(want, sizeof want, "%s: empty file", path);
  assert_non_null(strstr(seqcl_last_message(), want));
  unlink(path);
  assert_int_equal(sq_tokens_read(path, 10, NULL, &s), SEQCL_ERR_IO);
  snprintf(want, sizeof want, "%s: cannot open: No such file or directory", path);
  assert_non_null(strstr(seqcl_last_message(), want));
  assert_int_equal(sq_tokens_read(hu_tmpdir, 10, NULL, &s), SEQCL_ERR_IO);
  assert_non_null(strstr(seqcl_last_message(), hu_tmpdir));
}

static void test_outfile(void **state) {
  (void)state;
  char path[128];
  snprintf(path, sizeof path, "%s/out.txt", hu_tmpdir);
  mode_t old_mask = umask(022);

  /* Commit: the content appears at path, with the usual mode, and nothing else. */
  sq_outfile o;
  assert_int_equal(sq_outfile_open(path, &o), SEQCL_OK);
  assert_non_null(o.tmp);
  assert_int_equal(hu_count_entries(hu_tmpdir), 1);
  assert_int_not_equal(access(path, F_OK), 0); /* not there before commit */
  const int32_t ids[2] = {4, 2};
  assert_int_equal(sq_tokens_write_line(o.f, ids, 2, NULL), 0);
  assert_int_equal(sq_outfile_commit(&o), SEQCL_OK);
  assert_null(o.f);
  struct stat sb;
  assert_int_equal(stat(path, &sb), 0);
  assert_int_equal(sb.st_mode & 0777, 0644);
  assert_int_equal(hu_count_entries(hu_tmpdir), 1);
  char buf[16] = {0};
  FILE *f = fopen(path, "rb");
  assert_int_equal(fread(buf, 1, sizeof buf - 1, f), 4);
  fclose(f);
  assert_string_equal(buf, "4 2\n");

  /* Abort: the temporary file goes, and the previous content stays. */
  assert_int_equal(sq_outfile_open(path, &o), SEQCL_OK);
  fputs("partial", o.f);
  sq_outfile_abort(&o);
  assert_int_equal(hu_count_entries(hu_tmpdir), 1);
  f = fopen(path, "rb");
  memset(buf, 0, sizeof buf);
  assert_int_equal(fread(buf, 1, sizeof buf - 1, f), 4);
  fclose(f);
  unlink(path);
  sq_outfile_abort(NULL);

  /* A missing folder: an error naming the path, nothing created. */
  char missing[160];
  snprintf(missing, sizeof missing, "%s/no/out.txt", hu_tmpdir);
  assert_int_equal(sq_outfile_open(missing, &o), SEQCL_ERR_IO);
  assert_null(o.f);
  assert_non_null(strstr(seqcl_last_message(), missing));
  assert_int_equal(hu_count_entries(hu_tmpdir), 0);

  /* A folder is refused when it is opened, before anything is written. */
  char sub[160], inner[200];
  snprintf(sub, sizeof sub, "%s/dir", hu_tmpdir);
  mkdir(sub, 0700);
  snprintf(inner, sizeof inner, "%s/x", sub);
  write_text(inner, "x", 1);
  assert_int_equal(sq_outfile_open(sub, &o), SEQCL_ERR_IO);
  assert_null(o.f);
  assert_non_null(strstr(seqcl_last_message(), sub));
  assert_non_null(strstr(seqcl_last_message(), "folder"));
  assert_int_equal(hu_count_entries(hu_tmpdir), 1);
  unlink(inner);
  rmdir(sub);

  /* "-" is standard output: no file, commit only flushes. */
  assert_int_equal(sq_outfile_open("-", &o), SEQCL_OK);
  assert_ptr_equal(o.f, stdout);
  assert_int_equal(sq_outfile_commit(&o), SEQCL_OK);
  umask(old_mask);
}

SQ_TEST_MAIN(NULL, NULL,
      cmocka_unit_test(test_valid_ids),
      cmocka_unit_test(test_bad_catalogue),
      cmocka_unit_test_setup_teardown(test_vocab, hu_setup_tmpdir, hu_teardown_tmpdir),
      cmocka_unit_test_setup_teardown(test_words, hu_setup_tmpdir, hu_teardown_tmpdir),
      cmocka_unit_test(test_write_parse_round_trip),
      cmocka_unit_test_setup_teardown(test_read_files, hu_setup_tmpdir, hu_teardown_tmpdir),
      cmocka_unit_test_setup_teardown(test_outfile, hu_setup_tmpdir, hu_teardown_tmpdir))
