/* Text lines through a vocabulary (model/text.h): characters as UTF-8 code
 * points with <space>, words, unknown tokens, and the written form. */
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
#include "model/text.h"

static sq_vocab *vocab_of(const char *lines) {
  char path[] = "/tmp/seqcl-test-text-XXXXXX";
  int fd = mkstemp(path);
  assert_true(fd >= 0);
  assert_int_equal(write(fd, lines, strlen(lines)), (ssize_t)strlen(lines));
  close(fd);
  sq_vocab *v = NULL;
  assert_int_equal(sq_vocab_read(path, &v), SEQCL_OK);
  unlink(path);
  return v;
}

static void expect_ids(const sq_seqs *s, size_t line, const int32_t *want, size_t n) {
  assert_int_equal(sq_seq_len(s, line), n);
  for (size_t i = 0; i < n; i++) assert_int_equal(s->ids[s->offsets[line] + i], want[i]);
}

/* The n ids written back by sq_text_write_line as one line: want. */
static void expect_written(const int32_t *ids, size_t n, const sq_vocab *v, sq_split split,
                           const char *want) {
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  assert_non_null(f);
  assert_int_equal(sq_text_write_line(f, ids, n, v, split), 0);
  fclose(f);
  assert_string_equal(buf, want);
  free(buf);
}

/* ids: <unk> 0, <s> 1, </s> 2, <space> 3, a 4, é 5, 日 6 */
static const char CHARS[] = "<unk>\n<s>\n</s>\n<space>\na\n\xc3\xa9\n\xe6\x97\xa5\n";

static void test_chars(void **state) {
  (void)state;
  sq_vocab *v = vocab_of(CHARS);
  const char text[] = "a\xc3\xa9 \xe6\x97\xa5\r\n\xc3\xa9\xc3\xa9";
  sq_seqs s;
  assert_int_equal(sq_text_parse(text, strlen(text), "t", SQ_SPLIT_CHARS, v, 7, -1, 0, NULL, &s),
                   SEQCL_OK);
  assert_int_equal(s.count, 2);
  expect_ids(&s, 0, (const int32_t[]){4, 5, 3, 6}, 4);
  expect_ids(&s, 1, (const int32_t[]){5, 5}, 2);
  /* written back: no separators, <space> as a space */
  expect_written(s.ids, 4, v, SQ_SPLIT_CHARS, "a\xc3\xa9 \xe6\x97\xa5\n");
  sq_seqs_free(&s);
  sq_vocab_free(v);
}

static void test_unknown(void **state) {
  (void)state;
  sq_vocab *v = vocab_of(CHARS);
  const char text[] = "ab\nxa\n";
  sq_seqs s;
  assert_int_equal(sq_text_parse(text, strlen(text), "t.txt", SQ_SPLIT_CHARS, v, 7, -1, 0, NULL, &s),
                   SEQCL_ERR_BAD_TOKENS);
  assert_non_null(strstr(seqcl_last_message(), "t.txt:1"));
  assert_non_null(strstr(seqcl_last_message(), "'b'"));
  size_t unknown = 0;
  assert_int_equal(sq_text_parse(text, strlen(text), "t.txt", SQ_SPLIT_CHARS, v, 7, 0, 0, &unknown, &s),
                   SEQCL_OK);
  assert_int_equal(unknown, 2);
  expect_ids(&s, 1, (const int32_t[]){0, 4}, 2);
  sq_seqs_free(&s);
  /* invalid UTF-8 (a lone continuation byte), an id past the model's vocabulary */
  assert_int_equal(sq_text_parse("a\n\x80", 3, "u.txt", SQ_SPLIT_CHARS, v, 7, 0, 0, NULL, &s),
                   SEQCL_ERR_BAD_TOKENS);
  assert_non_null(strstr(seqcl_last_message(), "u.txt:2"));
  assert_non_null(strstr(seqcl_last_message(), "UTF-8"));
  assert_int_equal(sq_text_parse("\xe6\x97\xa5", 3, "r.txt", SQ_SPLIT_CHARS, v, 6, -1, 0, NULL, &s),
                   SEQCL_ERR_BAD_TOKENS);
  assert_non_null(strstr(seqcl_last_message(), "out of range"));
  /* empty lines: an error unless allowed */
  assert_int_equal(sq_text_parse("a\n\na\n", 5, "e.txt", SQ_SPLIT_CHARS, v, 7, -1, 0, NULL, &s),
                   SEQCL_ERR_BAD_TOKENS);
  assert_non_null(strstr(seqcl_last_message(), "e.txt:2"));
  assert_int_equal(sq_text_parse("a\n\na\n", 5, "e.txt", SQ_SPLIT_CHARS, v, 7, -1, SQ_TOKENS_EMPTY_OK,
                                 NULL, &s),
                   SEQCL_OK);
  assert_int_equal(s.count, 3);
  assert_int_equal(sq_seq_len(&s, 1), 0);
  sq_seqs_free(&s);
  sq_vocab_free(v);
}

static void test_words(void **state) {
  (void)state;
  sq_vocab *v = vocab_of("<unk>\n<s>\n</s>\nHH\nAH0\nL\n");
  const char text[] = "  HH\tAH0  L \n";
  sq_seqs s;
  assert_int_equal(sq_text_parse(text, strlen(text), "w", SQ_SPLIT_WORDS, v, 0, -1, 0, NULL, &s),
                   SEQCL_OK);
  expect_ids(&s, 0, (const int32_t[]){3, 4, 5}, 3);
  expect_written(s.ids, 3, v, SQ_SPLIT_WORDS, "HH AH0 L\n");
  sq_seqs_free(&s);
  sq_vocab_free(v);
}

SQ_TEST_MAIN(NULL, NULL,
      cmocka_unit_test(test_chars),
      cmocka_unit_test(test_unknown),
      cmocka_unit_test(test_words))
