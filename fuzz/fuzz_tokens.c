/* Fuzz target: the token-file reader (sq_tokens_parse), with decimal ids and
 * with a small fixed vocabulary.
 *
 * Input: byte 0 picks the mode (bit 0: words through the vocabulary; bits 1-3:
 * the vocab_size limit), the rest is the file. On success it checks the layout
 * (offsets start at 0, strictly increase since no line is empty, end at the id
 * count; one sequence per line), every id against the limit, every sequence
 * against an independent split of its line, and that writing the sequences
 * back and reading them again gives the same ids. On failure *out is zeroed
 * and the message names the file. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fuzz_check.h"
#include "model/tokens.h"

#define NAME "fuzz.tok"

/* Words with bytes the tokenizer must not confuse: digits, non-ASCII, '\r'
 * inside a word is impossible (whitespace) but '\x7f' and '#' are fine. */
static const char *const WORDS[] = {"<s>", "</s>", "<pad>", "the", "cat", "sat", "on",   "mat",
                                    "a",   "0",    "17",    "-1",  "+",   "caf\xc3\xa9", "x\x7fy",
                                    "#",   "\xff", "the.",  "THE", "\\n"};
#define NWORDS (sizeof WORDS / sizeof WORDS[0])

/* The vocabulary goes through the real reader, from a temporary file. */
static sq_vocab *fixed_vocab(void) {
  static sq_vocab *vocab;
  if (vocab) return vocab;
  char path[] = "/tmp/seqcl-fuzz-vocab-XXXXXX";
  int fd = mkstemp(path);
  FUZZ_CHECK(fd >= 0);
  FILE *f = fdopen(fd, "w");
  FUZZ_CHECK(f != NULL);
  for (size_t i = 0; i < NWORDS; i++) fprintf(f, "%s\n", WORDS[i]);
  FUZZ_CHECK(fclose(f) == 0);
  seqcl_status st = sq_vocab_read(path, &vocab);
  unlink(path);
  FUZZ_CHECK(st == SEQCL_OK && vocab && vocab->count == NWORDS);
  for (size_t i = 0; i < NWORDS; i++)
    FUZZ_CHECK(sq_vocab_lookup(vocab, WORDS[i], strlen(WORDS[i])) == (long)i);
  return vocab;
}

/* vocab_size values: none, tiny, the vocabulary's, and the edges of int32. */
static const long LIMITS[8] = {0, 1, 2, 10, NWORDS, 2147483647L, 2147483648L, 1L << 40};

static int is_sep(unsigned char c) { return c == ' ' || c == '\t' || c == '\v' || c == '\f'; }

/* Independent check of one line against the sequence parsed from it. */
static void check_line(const char *s, size_t len, const int32_t *ids, size_t n,
                       const sq_vocab *vocab) {
  size_t k = 0, i = 0;
  while (i < len) {
    while (i < len && is_sep((unsigned char)s[i])) i++;
    if (i == len) break;
    size_t start = i;
    while (i < len && !is_sep((unsigned char)s[i])) i++;
    FUZZ_CHECK(k < n);
    size_t tl = i - start;
    if (vocab) {
      const char *w = vocab->words[ids[k]];
      FUZZ_CHECK(strlen(w) == tl && memcmp(w, s + start, tl) == 0);
    } else {
      unsigned long long v = 0;
      for (size_t j = start; j < i; j++) {
        FUZZ_CHECK(s[j] >= '0' && s[j] <= '9');
        if (v <= 0xffffffffull) v = v * 10 + (unsigned)(s[j] - '0');
      }
      FUZZ_CHECK(v == (unsigned long long)ids[k]);
    }
    k++;
  }
  FUZZ_CHECK(k == n && n > 0);
}

static void check_success(const char *text, size_t len, long limit, const sq_vocab *vocab,
                          const sq_seqs *s) {
  FUZZ_CHECK(s->count >= 1 && s->offsets != NULL && s->ids != NULL);
  FUZZ_CHECK(s->offsets[0] == 0);
  for (size_t i = 0; i < s->count; i++) FUZZ_CHECK(s->offsets[i] < s->offsets[i + 1]);
  size_t total = s->offsets[s->count];
  for (size_t i = 0; i < total; i++) {
    FUZZ_CHECK(s->ids[i] >= 0);
    if (limit > 0) FUZZ_CHECK(s->ids[i] < limit);
    if (vocab) FUZZ_CHECK((size_t)s->ids[i] < vocab->count);
  }
  /* One sequence per line; a final newline ends the last line rather than
   * starting an empty one. */
  size_t pos = 0, line = 0;
  while (pos < len) {
    const char *nl = memchr(text + pos, '\n', len - pos);
    size_t end = nl ? (size_t)(nl - text) : len;
    size_t stop = end;
    if (stop > pos && text[stop - 1] == '\r') stop--;
    FUZZ_CHECK(line < s->count);
    check_line(text + pos, stop - pos, s->ids + s->offsets[line], sq_seq_len(s, line), vocab);
    line++;
    pos = end + 1;
  }
  FUZZ_CHECK(line == s->count);
}

/* Writes every sequence with sq_tokens_write_line and reads the text back. */
static void check_round_trip(long limit, const sq_vocab *vocab, const sq_seqs *s) {
  char *buf = NULL;
  size_t blen = 0;
  FILE *mem = open_memstream(&buf, &blen);
  if (!mem) return;
  for (size_t i = 0; i < s->count; i++)
    FUZZ_CHECK(sq_tokens_write_line(mem, s->ids + s->offsets[i], sq_seq_len(s, i), vocab) == 0);
  FUZZ_CHECK(fclose(mem) == 0);
  sq_seqs again;
  seqcl_status st = sq_tokens_parse(buf, blen, NAME, limit, vocab, &again);
  if (st != SEQCL_ERR_OUT_OF_MEMORY) {
    FUZZ_CHECK(st == SEQCL_OK);
    FUZZ_CHECK(again.count == s->count);
    FUZZ_CHECK(memcmp(again.offsets, s->offsets, (s->count + 1) * sizeof *s->offsets) == 0);
    FUZZ_CHECK(memcmp(again.ids, s->ids, s->offsets[s->count] * sizeof *s->ids) == 0);
  }
  sq_seqs_free(&again);
  free(buf);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1) return 0;
  const sq_vocab *vocab = (data[0] & 1) ? fixed_vocab() : NULL;
  long limit = LIMITS[(data[0] >> 1) & 7];
  const char *text = (const char *)data + 1;
  size_t len = size - 1;

  sq_seqs s;
  memset(&s, 0xa5, sizeof s);
  seqcl_status st = sq_tokens_parse(text, len, NAME, limit, vocab, &s);
  if (st != SEQCL_OK) {
    FUZZ_CHECK(st == SEQCL_ERR_BAD_TOKENS || st == SEQCL_ERR_OUT_OF_MEMORY);
    FUZZ_CHECK(s.count == 0 && s.ids == NULL && s.offsets == NULL);
    const char *msg = seqcl_last_message();
    FUZZ_CHECK(msg != NULL && strncmp(msg, NAME ":", strlen(NAME ":")) == 0);
    return 0;
  }
  check_success(text, len, limit, vocab, &s);
  check_round_trip(limit, vocab, &s);
  sq_seqs_free(&s);
  FUZZ_CHECK(s.count == 0 && s.ids == NULL && s.offsets == NULL);
  return 0;
}
