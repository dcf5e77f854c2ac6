/* Fuzz target: vocabulary files (sq_vocab_parse: one token per line, id = line
 * number - 1).
 *
 * On success: one word per line (a final newline ends the last line, CRLF is
 * one line end), every word non-empty without whitespace or NUL, all distinct,
 * each found again by sq_vocab_lookup under its own id; and a token file of
 * every word in order reads back, through the vocabulary, as ids 0..n-1 and is
 * written out as the same words. On failure: *out NULL, the message names the
 * file (and the line). */
#include <stdlib.h>
#include <string.h>

#include "fuzz_check.h"
#include "model/tokens.h"

#define NAME "fuzz.vocab"

FUZZ_NO_COVERAGE static size_t count_lines(const uint8_t *d, size_t n) {
  size_t lines = 0;
  for (size_t i = 0; i < n; i++) lines += d[i] == '\n';
  return lines + (n > 0 && d[n - 1] != '\n');
}

static void check_words(const sq_vocab *v) {
  for (size_t i = 0; i < v->count; i++) {
    const char *w = v->words[i];
    FUZZ_CHECK(w != NULL && w[0] != '\0');
    FUZZ_CHECK(strpbrk(w, " \t\r\n\v\f") == NULL);
    FUZZ_CHECK(sq_vocab_lookup(v, w, strlen(w)) == (long)i);
  }
}

static void check_round_trip(const sq_vocab *v) {
  size_t total = 1;
  for (size_t i = 0; i < v->count; i++) total += strlen(v->words[i]) + 1;
  char *line = malloc(total);
  if (!line) return;
  size_t at = 0;
  for (size_t i = 0; i < v->count; i++) {
    size_t n = strlen(v->words[i]);
    memcpy(line + at, v->words[i], n);
    at += n;
    line[at++] = i + 1 < v->count ? ' ' : '\n';
  }
  sq_seqs s = {0};
  seqcl_status st = sq_tokens_parse(line, at, "fuzz.tokens", (long)v->count, v, &s);
  FUZZ_CHECK(st == SEQCL_OK);
  FUZZ_CHECK(s.count == 1 && s.offsets[1] == v->count);
  for (size_t i = 0; i < v->count; i++) FUZZ_CHECK(s.ids[i] == (int32_t)i);
  char *out = NULL;
  size_t out_len = 0;
  FILE *f = open_memstream(&out, &out_len);
  if (f) {
    FUZZ_CHECK(sq_tokens_write_line(f, s.ids, v->count, v) == 0);
    fclose(f);
    FUZZ_CHECK(out_len == at && memcmp(out, line, at) == 0);
  }
  free(out);
  sq_seqs_free(&s);
  free(line);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  sq_vocab *v = (sq_vocab *)1;
  seqcl_status st = sq_vocab_parse((const char *)data, size, NAME, &v);
  if (st != SEQCL_OK) {
    FUZZ_CHECK(v == NULL);
    FUZZ_CHECK(st == SEQCL_ERR_BAD_TOKENS || st == SEQCL_ERR_OUT_OF_MEMORY);
    FUZZ_CHECK(strncmp(seqcl_last_message(), NAME, strlen(NAME)) == 0);
    return 0;
  }
  FUZZ_CHECK(v != NULL);
  FUZZ_CHECK(v->count == count_lines(data, size));
  check_words(v);
  check_round_trip(v);
  sq_vocab_free(v);
  return 0;
}
