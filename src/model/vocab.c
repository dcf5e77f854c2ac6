/* Vocabulary files (SPEC §4): one token per line, id = line number - 1.
 * Words are looked up through a small open-addressing hash table. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/fileio.h"
#include "core/hash.h"
#include "model/tokens.h"

/* Slot of word in the table: either the slot that holds it or the empty slot
 * where it would go. hash_ids stores id + 1 so that 0 means empty. */
static size_t find_slot(const sq_vocab *v, const char *word, size_t len) {
  size_t mask = v->hash_cap - 1;
  size_t i = (size_t)sq_hash_bytes(SQ_HASH_INIT, word, len) & mask;
  for (;;) {
    size_t stored = v->hash_ids[i];
    if (stored == 0) return i;
    const char *w = v->words[stored - 1];
    if (strncmp(w, word, len) == 0 && w[len] == '\0') return i;
    i = (i + 1) & mask;
  }
}

long sq_vocab_lookup(const sq_vocab *v, const char *word, size_t len) {
  if (!v || !word || !v->hash_cap) return -1;
  if (memchr(word, '\0', len)) return -1;
  size_t stored = v->hash_ids[find_slot(v, word, len)];
  return stored ? (long)(stored - 1) : -1;
}

void sq_vocab_free(sq_vocab *v) {
  if (!v) return;
  for (size_t i = 0; i < v->count; i++) free(v->words[i]);
  free(v->words);
  free(v->hash_ids);
  free(v);
}

static int is_inline_space(unsigned char c) {
  return c == ' ' || c == '\t' || c == '\v' || c == '\f' || c == '\r';
}

/* Checks one line (CR of a CRLF already removed) and adds it as the next word. */
static seqcl_status add_word(sq_vocab *v, const char *name, size_t lineno, const char *s,
                             size_t len) {
  if (len == 0)
    return sq_fail(NULL, SEQCL_ERR_BAD_TOKENS, "%s:%zu: empty line (each line holds one token)",
                   name, lineno);
  for (size_t i = 0; i < len; i++) {
    if (is_inline_space((unsigned char)s[i]))
      return sq_fail(NULL, SEQCL_ERR_BAD_TOKENS,
                     "%s:%zu: the token contains whitespace (at byte %zu of the line)", name,
                     lineno, i + 1);
    if (s[i] == '\0')
      return sq_fail(NULL, SEQCL_ERR_BAD_TOKENS, "%s:%zu: the token contains a NUL byte", name,
                     lineno);
  }
  size_t slot = find_slot(v, s, len);
  if (v->hash_ids[slot])
    return sq_fail(NULL, SEQCL_ERR_BAD_TOKENS, "%s:%zu: duplicate token '%.*s' (already on line %zu)",
                   name, lineno, (int)(len > 64 ? 64 : len), s, v->hash_ids[slot]);
  char *w = malloc(len + 1);
  if (!w) return sq_fail(NULL, SEQCL_ERR_OUT_OF_MEMORY, "%s: out of host memory", name);
  memcpy(w, s, len);
  w[len] = '\0';
  v->words[v->count++] = w;
  v->hash_ids[slot] = v->count;
  return SEQCL_OK;
}

static seqcl_status parse_vocab(const char *text, size_t len, const char *name, sq_vocab *v) {
  if (len == 0) return sq_fail(NULL, SEQCL_ERR_BAD_TOKENS, "%s: empty vocabulary file", name);
  size_t lines = 1;
  for (size_t i = 0; i + 1 < len; i++) lines += text[i] == '\n';
  v->words = calloc(lines, sizeof *v->words);
  size_t cap = 16;
  while (cap < 2 * lines) cap *= 2;
  v->hash_ids = calloc(cap, sizeof *v->hash_ids);
  v->hash_cap = cap;
  if (!v->words || !v->hash_ids)
    return sq_fail(NULL, SEQCL_ERR_OUT_OF_MEMORY, "%s: out of host memory", name);
  sq_lines lr = {text, len, 0};
  size_t pos, stop, lineno = 0;
  while (sq_lines_next(&lr, &pos, &stop))
    SQ_TRY(add_word(v, name, ++lineno, text + pos, stop - pos));
  return SEQCL_OK;
}

seqcl_status sq_vocab_parse(const char *text, size_t len, const char *name, sq_vocab **out) {
  if (!out) return sq_fail(NULL, SEQCL_ERR_INVALID_ARGUMENT, "sq_vocab_parse: out is NULL");
  *out = NULL;
  sq_vocab *v = calloc(1, sizeof *v);
  seqcl_status st = v ? parse_vocab(text, len, name, v)
                      : sq_fail(NULL, SEQCL_ERR_OUT_OF_MEMORY, "%s: out of host memory", name);
  if (st != SEQCL_OK) {
    sq_vocab_free(v);
    return st;
  }
  *out = v;
  return SEQCL_OK;
}

seqcl_status sq_vocab_read(const char *path, sq_vocab **out) {
  if (!out) return sq_fail(NULL, SEQCL_ERR_INVALID_ARGUMENT, "sq_vocab_read: out is NULL");
  *out = NULL;
  sq_text_in in;
  SQ_TRY(sq_text_in_read(path, &in));
  seqcl_status st = sq_vocab_parse(in.text, in.len, in.name, out);
  free(in.text);
  return st;
}
