/* Text lines through a vocabulary (text.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/fileio.h"
#include "core/grow.h"
#include "model/text.h"

static int is_space(unsigned char c) { return c == ' ' || c == '\t' || c == '\v' || c == '\f'; }

typedef struct reader {
  const char *name;
  size_t lineno;
  const sq_vocab *vocab;
  long vocab_size, unk_id;
  size_t unknown;
  int32_t *ids;
  size_t n, cap;
} reader;

static seqcl_status push(reader *r, const char *tok, size_t len) {
  long id = sq_vocab_lookup(r->vocab, tok, len);
  if (id < 0 && r->unk_id >= 0) {
    r->unknown++;
    id = r->unk_id;
  }
  if (id < 0)
    return sq_fail(NULL, SEQCL_ERR_BAD_TOKENS, "%s:%zu: unknown token '%.*s' (not in the vocabulary)",
                   r->name, r->lineno, (int)(len > 40 ? 40 : len), tok);
  if (r->vocab_size > 0 && id >= r->vocab_size)
    return sq_fail(NULL, SEQCL_ERR_BAD_TOKENS,
                   "%s:%zu: token '%.*s' has id %ld, out of range for the model (vocab size %ld)",
                   r->name, r->lineno, (int)(len > 40 ? 40 : len), tok, id, r->vocab_size);
  int32_t *p = sq_grow(r->ids, &r->cap, r->n, sizeof *p, 256);
  if (!p) return sq_fail(NULL, SEQCL_ERR_OUT_OF_MEMORY, "%s: out of host memory", r->name);
  r->ids = p;
  r->ids[r->n++] = (int32_t)id;
  return SEQCL_OK;
}

/* One line without its end: its tokens pushed. */
static seqcl_status read_line(reader *r, const char *s, size_t len, sq_split split) {
  size_t word = SIZE_MAX;
  for (size_t i = 0; i <= len;) {
    if (i == len || is_space((unsigned char)s[i])) {
      if (split == SQ_SPLIT_WORDS && word != SIZE_MAX) SQ_TRY(push(r, s + word, i - word));
      word = SIZE_MAX;
      if (i == len) break;
      if (split == SQ_SPLIT_CHARS) SQ_TRY(push(r, SQ_TOK_SPACE, strlen(SQ_TOK_SPACE)));
      i++;
      continue;
    }
    size_t u = sq_utf8_len((const unsigned char *)s + i, len - i);
    if (s[i] == '\0' || u == 0)
      return sq_fail(NULL, SEQCL_ERR_BAD_TOKENS, "%s:%zu: %s at byte %zu of the line", r->name,
                     r->lineno, s[i] ? "invalid UTF-8" : "a NUL byte", i + 1);
    if (split == SQ_SPLIT_CHARS)
      SQ_TRY(push(r, s + i, u));
    else if (word == SIZE_MAX)
      word = i;
    i += u;
  }
  return SEQCL_OK;
}

seqcl_status sq_text_parse(const char *text, size_t len, const char *name, sq_split split,
                           const sq_vocab *vocab, long vocab_size, long unk_id, unsigned flags,
                           size_t *unknown, sq_seqs *out) {
  if (!out || !vocab || (len && !text))
    return sq_fail(NULL, SEQCL_ERR_INVALID_ARGUMENT, "sq_text_parse: NULL argument");
  memset(out, 0, sizeof *out);
  if (len == 0) return sq_fail(NULL, SEQCL_ERR_BAD_TOKENS, "%s: empty file (no lines)", name);
  size_t lines = 1;
  for (size_t i = 0; i + 1 < len; i++) lines += text[i] == '\n';
  size_t *offsets = malloc((lines + 1) * sizeof *offsets);
  if (!offsets) return sq_fail(NULL, SEQCL_ERR_OUT_OF_MEMORY, "%s: out of host memory", name);
  reader r = {name, 0, vocab, vocab_size, unk_id, 0, NULL, 0, 0};
  seqcl_status st = SEQCL_OK;
  sq_lines lr = {text, len, 0};
  size_t pos, stop, count = 0;
  offsets[0] = 0;
  while (st == SEQCL_OK && sq_lines_next(&lr, &pos, &stop)) {
    r.lineno++;
    size_t before = r.n;
    st = read_line(&r, text + pos, stop - pos, split);
    if (st == SEQCL_OK && r.n == before && !(flags & SQ_TOKENS_EMPTY_OK))
      st = sq_fail(NULL, SEQCL_ERR_BAD_TOKENS, "%s:%zu: %s line (every line needs at least one token)",
                   name, r.lineno, stop == pos ? "empty" : "whitespace-only");
    offsets[++count] = r.n;
  }
  if (st != SEQCL_OK) {
    free(offsets);
    free(r.ids);
    return st;
  }
  if (unknown) *unknown = r.unknown;
  out->count = count;
  out->ids = r.ids ? r.ids : malloc(sizeof *out->ids);
  out->offsets = offsets;
  if (!out->ids) {
    sq_seqs_free(out);
    return sq_fail(NULL, SEQCL_ERR_OUT_OF_MEMORY, "%s: out of host memory", name);
  }
  return SEQCL_OK;
}

seqcl_status sq_text_read(const char *path, sq_split split, const sq_vocab *vocab, long vocab_size,
                          long unk_id, unsigned flags, size_t *unknown, sq_seqs *out) {
  if (!path || !out) return sq_fail(NULL, SEQCL_ERR_INVALID_ARGUMENT, "sq_text_read: NULL argument");
  memset(out, 0, sizeof *out);
  sq_text_in in;
  SQ_TRY(sq_text_in_read(path, &in));
  seqcl_status st = sq_text_parse(in.text, in.len, in.name, split, vocab, vocab_size, unk_id, flags,
                                  unknown, out);
  free(in.text);
  return st;
}

int sq_text_write_line(FILE *f, const int32_t *ids, size_t n, const sq_vocab *vocab, sq_split split) {
  if (!f || !vocab || (n && !ids)) {
    sq_fail(NULL, SEQCL_ERR_INVALID_ARGUMENT, "sq_text_write_line: NULL argument");
    return -1;
  }
  for (size_t i = 0; i < n; i++) {
    if (ids[i] < 0 || (size_t)ids[i] >= vocab->count) {
      sq_fail(NULL, SEQCL_ERR_BAD_TOKENS, "id %ld has no token in the vocabulary (it has %zu)",
              (long)ids[i], vocab->count);
      return -1;
    }
    const char *w = vocab->words[ids[i]];
    if (split == SQ_SPLIT_CHARS && !strcmp(w, SQ_TOK_SPACE)) w = " ";
    if ((split == SQ_SPLIT_WORDS && i && fputc(' ', f) == EOF) || fputs(w, f) == EOF) goto write_error;
  }
  if (fputc('\n', f) == EOF) goto write_error;
  return 0;
write_error:
  sq_fail(NULL, SEQCL_ERR_IO, "writing a text line failed: %s", strerror(errno));
  return -1;
}

static int split_word(const char *s, size_t n, sq_split *out) {
  if (n == 5 && !strncmp(s, "chars", 5)) *out = SQ_SPLIT_CHARS;
  else if (n == 5 && !strncmp(s, "words", 5)) *out = SQ_SPLIT_WORDS;
  else return -1;
  return 0;
}

int sq_text_split_parse(const char *spec, sq_split split[2]) {
  if (!spec) return -1;
  const char *comma = strchr(spec, ',');
  if (!comma) {
    if (split_word(spec, strlen(spec), &split[0])) return -1;
    split[1] = split[0];
    return 0;
  }
  return split_word(spec, (size_t)(comma - spec), &split[0]) ||
                 split_word(comma + 1, strlen(comma + 1), &split[1])
             ? -1
             : 0;
}

seqcl_status sq_seqs_wrap(sq_seqs *s, int32_t bos, int32_t eos) {
  const size_t n = s->count, total = s->offsets[n] + 2 * n;
  int32_t *ids = malloc(total * sizeof *ids);
  if (!ids) return sq_fail(NULL, SEQCL_ERR_OUT_OF_MEMORY, "text lines: out of host memory");
  size_t at = 0;
  for (size_t i = 0; i < n; i++) {
    const size_t b = s->offsets[i], len = sq_seq_len(s, i);
    s->offsets[i] = at;
    ids[at++] = bos;
    memcpy(ids + at, s->ids + b, len * sizeof *ids);
    at += len;
    ids[at++] = eos;
  }
  s->offsets[n] = at;
  free(s->ids);
  s->ids = ids;
  return SEQCL_OK;
}
