/* Token files (SPEC §4): one sequence per line, whitespace-separated decimal
 * ids, or words when a vocabulary is given. Every rule violation names the file,
 * the line and the offending token. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/fileio.h"
#include "core/grow.h"
#include "model/tokens.h"

/* Separators inside a line. A CR is one only right before the line's end (CRLF);
 * anywhere else it is an "other character", so old Mac files are not silently
 * read as one long line. */
static int is_separator(unsigned char c) { return c == ' ' || c == '\t' || c == '\v' || c == '\f'; }

/* Quotes a token for a message: at most ~40 bytes, non-printable bytes as \xNN. */
static void quote(const char *s, size_t len, char *buf, size_t cap) {
  size_t at = 0;
  size_t shown = len > 40 ? 40 : len;
  for (size_t i = 0; i < shown && at + 5 < cap; i++) {
    unsigned char c = (unsigned char)s[i];
    if (c >= 0x20 && c < 0x7f && c != '\\') {
      buf[at++] = (char)c;
    } else {
      at += (size_t)snprintf(buf + at, cap - at, "\\x%02x", c);
    }
  }
  if (shown < len && at + 4 < cap) {
    memcpy(buf + at, "...", 3);
    at += 3;
  }
  buf[at < cap ? at : cap - 1] = '\0';
}

typedef struct builder {
  int32_t *ids;
  size_t nids, cap_ids;
  size_t *offsets;
  size_t noff, cap_off;
} builder;

static int push_id(builder *b, int32_t id) {
  int32_t *p = sq_grow(b->ids, &b->cap_ids, b->nids, sizeof *p, 256);
  if (!p) return -1;
  b->ids = p;
  b->ids[b->nids++] = id;
  return 0;
}

static int push_offset(builder *b, size_t off) {
  size_t *p = sq_grow(b->offsets, &b->cap_off, b->noff, sizeof *p, 64);
  if (!p) return -1;
  b->offsets = p;
  b->offsets[b->noff++] = off;
  return 0;
}

typedef struct line_ctx {
  const char *name;
  size_t lineno;
  long vocab_size;
  const sq_vocab *vocab;
  unsigned flags;
  long unk_id;     /* -1: an unknown word is an error */
  size_t *unknown; /* words mapped to unk_id */
} line_ctx;

/* Parses a decimal id: digits only, leading zeros allowed; values are clamped
 * while accumulating so huge numbers cannot overflow. */
static seqcl_status parse_id(const line_ctx *lc, const char *tok, size_t len, int32_t *out) {
  char q[200];
  /* Ids are int32: a vocab_size beyond INT32_MAX must not let larger values through. */
  int bounded = lc->vocab_size > 0 && lc->vocab_size <= (long)INT32_MAX;
  long long limit = bounded ? lc->vocab_size : (long long)INT32_MAX + 1;
  long long value = 0;
  for (size_t i = 0; i < len; i++) {
    unsigned char c = (unsigned char)tok[i];
    if (c < '0' || c > '9') {
      quote(tok, len, q, sizeof q);
      if ((c == '-' || c == '+') && i == 0)
        return sq_fail(NULL, SEQCL_ERR_BAD_TOKENS,
                       "%s:%zu: token '%s' has a sign; ids are unsigned decimal numbers", lc->name,
                       lc->lineno, q);
      char ch[8];
      quote((const char *)&tok[i], 1, ch, sizeof ch);
      return sq_fail(NULL, SEQCL_ERR_BAD_TOKENS,
                     "%s:%zu: token '%s' is not a decimal id (character '%s' at byte %zu)", lc->name,
                     lc->lineno, q, ch, i + 1);
    }
    if (value < limit) value = value * 10 + (c - '0');
  }
  if (value >= limit) {
    quote(tok, len, q, sizeof q);
    if (bounded)
      return sq_fail(NULL, SEQCL_ERR_BAD_TOKENS,
                     "%s:%zu: id %s is out of range (the vocabulary has %ld ids: 0..%ld)", lc->name,
                     lc->lineno, q, lc->vocab_size, lc->vocab_size - 1);
    return sq_fail(NULL, SEQCL_ERR_BAD_TOKENS, "%s:%zu: id %s is out of range (above %ld)", lc->name,
                   lc->lineno, q, (long)INT32_MAX);
  }
  *out = (int32_t)value;
  return SEQCL_OK;
}

static seqcl_status parse_word(const line_ctx *lc, const char *tok, size_t len, int32_t *out) {
  char q[200];
  long id = sq_vocab_lookup(lc->vocab, tok, len);
  if (id < 0 && lc->unk_id >= 0) {
    (*lc->unknown)++;
    id = lc->unk_id;
  }
  if (id < 0) {
    quote(tok, len, q, sizeof q);
    return sq_fail(NULL, SEQCL_ERR_BAD_TOKENS, "%s:%zu: unknown word '%s' (not in the vocabulary)",
                   lc->name, lc->lineno, q);
  }
  if (lc->vocab_size > 0 && id >= lc->vocab_size) {
    quote(tok, len, q, sizeof q);
    return sq_fail(NULL, SEQCL_ERR_BAD_TOKENS,
                   "%s:%zu: word '%s' has id %ld, out of range for the model (vocab size %ld)",
                   lc->name, lc->lineno, q, id, lc->vocab_size);
  }
  *out = (int32_t)id;
  return SEQCL_OK;
}

/* One line, without its '\n' (a CR right before it already removed). */
static seqcl_status parse_line(const line_ctx *lc, const char *s, size_t len, builder *b) {
  size_t before = b->nids;
  size_t i = 0;
  while (i < len) {
    while (i < len && is_separator((unsigned char)s[i])) i++;
    if (i == len) break;
    size_t start = i;
    while (i < len && !is_separator((unsigned char)s[i])) i++;
    int32_t id = 0;
    SQ_TRY(lc->vocab ? parse_word(lc, s + start, i - start, &id)
                     : parse_id(lc, s + start, i - start, &id));
    if (push_id(b, id) != 0)
      return sq_fail(NULL, SEQCL_ERR_OUT_OF_MEMORY, "%s: out of host memory", lc->name);
  }
  if (b->nids == before && !(lc->flags & SQ_TOKENS_EMPTY_OK))
    return sq_fail(NULL, SEQCL_ERR_BAD_TOKENS, "%s:%zu: %s line (every line needs at least one token)",
                   lc->name, lc->lineno, len == 0 ? "empty" : "whitespace-only");
  return SEQCL_OK;
}

void sq_seqs_free(sq_seqs *s) {
  if (!s) return;
  free(s->ids);
  free(s->offsets);
  memset(s, 0, sizeof *s);
}

seqcl_status sq_tokens_parse(const char *text, size_t len, const char *name, long vocab_size,
                             const sq_vocab *vocab, sq_seqs *out) {
  return sq_tokens_parse_flags(text, len, name, vocab_size, vocab, 0, -1, NULL, out);
}

seqcl_status sq_tokens_parse_flags(const char *text, size_t len, const char *name, long vocab_size,
                                   const sq_vocab *vocab, unsigned flags, long unk_id,
                                   size_t *unknown, sq_seqs *out) {
  if (!out) return sq_fail(NULL, SEQCL_ERR_INVALID_ARGUMENT, "sq_tokens_parse: out is NULL");
  memset(out, 0, sizeof *out);
  if (!name) name = "tokens";
  if (!text && len) return sq_fail(NULL, SEQCL_ERR_INVALID_ARGUMENT, "sq_tokens_parse: text is NULL");
  if (len == 0) return sq_fail(NULL, SEQCL_ERR_BAD_TOKENS, "%s: empty file (no lines)", name);

  builder b = {0};
  size_t unknown_here = 0;
  line_ctx lc = {name, 0, vocab_size, vocab, flags, unk_id, &unknown_here};
  seqcl_status st = SEQCL_OK;
  if (push_offset(&b, 0) != 0) st = sq_fail(NULL, SEQCL_ERR_OUT_OF_MEMORY, "%s: out of host memory", name);
  sq_lines lr = {text, len, 0};
  size_t pos, stop;
  while (st == SEQCL_OK && sq_lines_next(&lr, &pos, &stop)) {
    lc.lineno++;
    st = parse_line(&lc, text + pos, stop - pos, &b);
    if (st == SEQCL_OK && push_offset(&b, b.nids) != 0)
      st = sq_fail(NULL, SEQCL_ERR_OUT_OF_MEMORY, "%s: out of host memory", name);
  }
  if (st != SEQCL_OK) {
    free(b.ids);
    free(b.offsets);
    return st;
  }
  if (unknown) *unknown = unknown_here;
  out->count = b.noff - 1;
  out->ids = b.ids;
  out->offsets = b.offsets;
  return SEQCL_OK;
}

seqcl_status sq_tokens_read(const char *path, long vocab_size, const sq_vocab *vocab,
                            sq_seqs *out) {
  return sq_tokens_read_flags(path, vocab_size, vocab, 0, -1, NULL, out);
}

seqcl_status sq_tokens_read_flags(const char *path, long vocab_size, const sq_vocab *vocab,
                                  unsigned flags, long unk_id, size_t *unknown, sq_seqs *out) {
  if (!out || !path)
    return sq_fail(NULL, SEQCL_ERR_INVALID_ARGUMENT, "sq_tokens_read: path or out is NULL");
  memset(out, 0, sizeof *out);
  sq_text_in in;
  SQ_TRY(sq_text_in_read(path, &in));
  seqcl_status st = sq_tokens_parse_flags(in.text, in.len, in.name, vocab_size, vocab, flags,
                                          unk_id, unknown, out);
  free(in.text);
  return st;
}

int sq_tokens_write_line(FILE *f, const int32_t *ids, size_t n, const sq_vocab *vocab) {
  if (!f || (n && !ids)) {
    sq_fail(NULL, SEQCL_ERR_INVALID_ARGUMENT, "sq_tokens_write_line: NULL argument");
    return -1;
  }
  for (size_t i = 0; i < n; i++) {
    if (i && fputc(' ', f) == EOF) goto write_error;
    if (vocab) {
      if (ids[i] < 0 || (size_t)ids[i] >= vocab->count) {
        sq_fail(NULL, SEQCL_ERR_BAD_TOKENS,
                "id %ld has no word in the vocabulary (it has %zu words)", (long)ids[i],
                vocab->count);
        return -1;
      }
      if (fputs(vocab->words[ids[i]], f) == EOF) goto write_error;
    } else if (fprintf(f, "%ld", (long)ids[i]) < 0) {
      goto write_error;
    }
  }
  if (fputc('\n', f) == EOF) goto write_error;
  return 0;
write_error:
  sq_fail(NULL, SEQCL_ERR_IO, "writing a token line failed: %s", strerror(errno));
  return -1;
}
