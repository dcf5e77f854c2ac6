/* A growing token table (wordtab.h). */
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/fileio.h"
#include "core/hash.h"
#include "model/wordtab.h"

static size_t find_slot(const size_t *slots, size_t cap, char *const *words, const char *w,
                        size_t len) {
  size_t i = (size_t)sq_hash_bytes(SQ_HASH_INIT, w, len) & (cap - 1);
  for (;;) {
    size_t s = slots[i];
    if (s == 0) return i;
    const char *x = words[s - 1];
    if (strncmp(x, w, len) == 0 && x[len] == '\0') return i;
    i = (i + 1) & (cap - 1);
  }
}

/* Doubles the slot table (kept at most half full). */
static int grow_slots(sq_wordtab *t) {
  size_t cap = t->slot_cap ? 2 * t->slot_cap : 64;
  size_t *slots = calloc(cap, sizeof *slots);
  if (!slots) return -1;
  for (size_t id = 0; id < t->count; id++) {
    const char *w = t->words[id];
    slots[find_slot(slots, cap, t->words, w, strlen(w))] = id + 1;
  }
  free(t->slots);
  t->slots = slots;
  t->slot_cap = cap;
  return 0;
}

seqcl_status sq_wordtab_add(sq_wordtab *t, const char *word, size_t len, int32_t *id) {
  if (2 * (t->count + 1) > t->slot_cap && grow_slots(t))
    return sq_fail(NULL, SEQCL_ERR_OUT_OF_MEMORY, "token table: out of host memory");
  size_t slot = find_slot(t->slots, t->slot_cap, t->words, word, len);
  if (t->slots[slot]) {
    size_t k = t->slots[slot] - 1;
    t->counts[k]++;
    *id = (int32_t)k;
    return SEQCL_OK;
  }
  if (t->count >= (size_t)INT32_MAX)
    return sq_fail(NULL, SEQCL_ERR_BAD_TOKENS, "token table: more than %ld distinct tokens",
                   (long)INT32_MAX);
  if (t->count == t->cap) {
    size_t cap = t->cap ? 2 * t->cap : 64;
    char **w = realloc(t->words, cap * sizeof *w);
    if (w) t->words = w;
    size_t *c = w ? realloc(t->counts, cap * sizeof *c) : NULL;
    if (!c) return sq_fail(NULL, SEQCL_ERR_OUT_OF_MEMORY, "token table: out of host memory");
    t->counts = c;
    t->cap = cap;
  }
  char *copy = malloc(len + 1);
  if (!copy) return sq_fail(NULL, SEQCL_ERR_OUT_OF_MEMORY, "token table: out of host memory");
  memcpy(copy, word, len);
  copy[len] = '\0';
  t->words[t->count] = copy;
  t->counts[t->count] = 1;
  t->slots[slot] = ++t->count;
  *id = (int32_t)(t->count - 1);
  return SEQCL_OK;
}

void sq_wordtab_free(sq_wordtab *t) {
  if (!t) return;
  for (size_t i = 0; i < t->count; i++) free(t->words[i]);
  free(t->words);
  free(t->counts);
  free(t->slots);
  memset(t, 0, sizeof *t);
}

/* Length of the UTF-8 sequence at s (at most n bytes), or 0 when it is not a
 * well-formed one (overlong forms, surrogates and values past U+10FFFF too). */
size_t sq_utf8_len(const unsigned char *s, size_t n) {
  unsigned c = s[0];
  if (c < 0x80) return 1;
  size_t len = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : c >= 0xc2 ? 2 : 0;
  if (len == 0 || c > 0xf4 || len > n) return 0;
  for (size_t i = 1; i < len; i++)
    if ((s[i] & 0xc0) != 0x80) return 0;
  if (c == 0xe0 && s[1] < 0xa0) return 0;
  if (c == 0xed && s[1] >= 0xa0) return 0;
  if (c == 0xf0 && s[1] < 0x90) return 0;
  if (c == 0xf4 && s[1] >= 0x90) return 0;
  return len;
}

static int is_sep(unsigned char c) { return c == ' ' || c == '\t' || c == '\v' || c == '\f'; }

static seqcl_status read_text(const char *text, size_t len, const char *name, sq_wordtab *t,
                              sq_seqs *out) {
  if (len == 0) return sq_fail(NULL, SEQCL_ERR_BAD_TOKENS, "%s: empty file (no lines)", name);
  size_t lines = 1, ntok = 0;
  for (size_t i = 0; i + 1 < len; i++) lines += text[i] == '\n';
  for (size_t i = 0; i < len; i++) ntok += !is_sep((unsigned char)text[i]) && text[i] != '\n';
  out->ids = malloc((ntok ? ntok : 1) * sizeof *out->ids);
  out->offsets = malloc((lines + 1) * sizeof *out->offsets);
  if (!out->ids || !out->offsets)
    return sq_fail(NULL, SEQCL_ERR_OUT_OF_MEMORY, "%s: out of host memory", name);
  out->offsets[0] = 0;
  sq_lines lr = {text, len, 0};
  size_t pos, stop, n = 0, lineno = 0;
  while (sq_lines_next(&lr, &pos, &stop)) {
    lineno++;
    for (size_t i = pos; i < stop;) {
      size_t u = sq_utf8_len((const unsigned char *)text + i, stop - i);
      if (text[i] == '\0' || u == 0)
        return sq_fail(NULL, SEQCL_ERR_BAD_TOKENS, "%s:%zu: %s at byte %zu of the line", name,
                       lineno, text[i] ? "invalid UTF-8" : "a NUL byte", i - pos + 1);
      i += u;
    }
    size_t i = pos;
    while (i < stop) {
      while (i < stop && is_sep((unsigned char)text[i])) i++;
      if (i == stop) break;
      size_t start = i;
      while (i < stop && !is_sep((unsigned char)text[i])) i++;
      SQ_TRY(sq_wordtab_add(t, text + start, i - start, &out->ids[n]));
      n++;
    }
    out->offsets[++out->count] = n;
  }
  return SEQCL_OK;
}

seqcl_status sq_words_read(const char *path, sq_wordtab *t, sq_seqs *out) {
  if (!path || !t || !out)
    return sq_fail(NULL, SEQCL_ERR_INVALID_ARGUMENT, "sq_words_read: NULL argument");
  memset(out, 0, sizeof *out);
  sq_text_in in;
  SQ_TRY(sq_text_in_read(path, &in));
  seqcl_status st = read_text(in.text, in.len, in.name, t, out);
  free(in.text);
  if (st != SEQCL_OK) sq_seqs_free(out);
  return st;
}
