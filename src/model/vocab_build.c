/* Vocabulary building (vocab_build.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/fileio.h"
#include "model/vocab_build.h"

static int is_space(unsigned char c) { return c == ' ' || c == '\t' || c == '\v' || c == '\f'; }

static seqcl_status count_text(const char *text, size_t len, const char *name, sq_split split,
                               sq_wordtab *t) {
  sq_lines lr = {text, len, 0};
  size_t pos, stop, lineno = 0;
  int32_t id;
  while (sq_lines_next(&lr, &pos, &stop)) {
    lineno++;
    size_t word = SIZE_MAX; /* start of the word being read (words split) */
    for (size_t i = pos; i <= stop;) {
      if (i == stop || is_space((unsigned char)text[i])) {
        if (split == SQ_SPLIT_WORDS && word != SIZE_MAX) SQ_TRY(sq_wordtab_add(t, text + word, i - word, &id));
        word = SIZE_MAX;
        if (i == stop) break;
        if (split == SQ_SPLIT_CHARS) SQ_TRY(sq_wordtab_add(t, SQ_TOK_SPACE, strlen(SQ_TOK_SPACE), &id));
        i++;
        continue;
      }
      size_t u = sq_utf8_len((const unsigned char *)text + i, stop - i);
      if (text[i] == '\0' || u == 0)
        return sq_fail(NULL, SEQCL_ERR_BAD_TOKENS, "%s:%zu: %s at byte %zu of the line", name,
                       lineno, text[i] ? "invalid UTF-8" : "a NUL byte", i - pos + 1);
      if (split == SQ_SPLIT_CHARS)
        SQ_TRY(sq_wordtab_add(t, text + i, u, &id));
      else if (word == SIZE_MAX)
        word = i;
      i += u;
    }
  }
  return SEQCL_OK;
}

seqcl_status sq_vocab_count(const char *path, sq_split split, sq_wordtab *t) {
  sq_text_in in;
  SQ_TRY(sq_text_in_read(path, &in));
  seqcl_status st = count_text(in.text, in.len, in.name, split, t);
  free(in.text);
  return st;
}

static int is_special(const char *w) {
  return !strcmp(w, SQ_TOK_PAD) || !strcmp(w, SQ_TOK_UNK) || !strcmp(w, SQ_TOK_BOS) ||
         !strcmp(w, SQ_TOK_EOS);
}

/* qsort over ids needs the table: sort (count, word) pairs instead. */
typedef struct entry {
  size_t count;
  const char *word;
} entry;

static int by_count(const void *a, const void *b) {
  const entry *x = a, *y = b;
  if (x->count != y->count) return x->count > y->count ? -1 : 1;
  return strcmp(x->word, y->word); /* ties in byte order: the file is reproducible */
}

seqcl_status sq_vocab_write(FILE *f, const sq_wordtab *t, const sq_vocab_spec *spec,
                            sq_vocab_summary *sum) {
  memset(sum, 0, sizeof *sum);
  entry *e = malloc((t->count ? t->count : 1) * sizeof *e);
  if (!e) return sq_fail(NULL, SEQCL_ERR_OUT_OF_MEMORY, "vocabulary: out of host memory");
  size_t n = 0;
  for (size_t i = 0; i < t->count; i++) {
    if (is_special(t->words[i])) continue;
    sum->distinct++;
    if (t->counts[i] < (size_t)spec->min_count) {
      sum->below_min++;
      continue;
    }
    e[n].count = t->counts[i];
    e[n++].word = t->words[i];
  }
  qsort(e, n, sizeof *e, by_count);
  static const char *const specials[] = {SQ_TOK_PAD, SQ_TOK_UNK, SQ_TOK_BOS, SQ_TOK_EOS};
  for (size_t k = spec->pad ? 0 : 1; k < 4; k++) {
    fprintf(f, "%s\n", specials[k]);
    sum->specials++;
  }
  size_t room = n;
  if (spec->max_size > 0) {
    size_t max = (size_t)spec->max_size > sum->specials ? (size_t)spec->max_size - sum->specials : 0;
    if (room > max) room = max;
  }
  for (size_t i = 0; i < room; i++) fprintf(f, "%s\n", e[i].word);
  sum->over_max = n - room;
  sum->size = sum->specials + room;
  free(e);
  if (ferror(f)) return sq_fail(NULL, SEQCL_ERR_IO, "writing the vocabulary failed: %s", strerror(errno));
  return SEQCL_OK;
}

seqcl_status sq_vocab_build(const char *const *paths, size_t n, const sq_vocab_spec *spec,
                            sq_vocab **out, sq_vocab_summary *sum) {
  *out = NULL;
  sq_wordtab tab = {0};
  char *text = NULL;
  size_t len = 0;
  seqcl_status st = SEQCL_OK;
  for (size_t k = 0; k < n && st == SEQCL_OK; k++) st = sq_vocab_count(paths[k], spec->split, &tab);
  /* the file form, so that a built vocabulary is exactly the one `seqcl vocab
   * build` writes and sq_vocab_read reads back */
  FILE *f = st == SEQCL_OK ? open_memstream(&text, &len) : NULL;
  if (st == SEQCL_OK && !f)
    st = sq_fail(NULL, SEQCL_ERR_OUT_OF_MEMORY, "vocabulary: out of host memory");
  if (f) {
    st = sq_vocab_write(f, &tab, spec, sum);
    if (fclose(f) != 0 && st == SEQCL_OK)
      st = sq_fail(NULL, SEQCL_ERR_OUT_OF_MEMORY, "vocabulary: out of host memory");
  }
  if (st == SEQCL_OK) st = sq_vocab_parse(text, len, "the built vocabulary", out);
  free(text);
  sq_wordtab_free(&tab);
  return st;
}

seqcl_status sq_vocab_save(const sq_vocab *v, const char *path) {
  sq_outfile o;
  SQ_TRY(sq_outfile_open(path, &o));
  for (size_t i = 0; i < v->count; i++)
    if (fputs(v->words[i], o.f) < 0 || fputc('\n', o.f) < 0) {
      sq_outfile_abort(&o);
      return sq_fail(NULL, SEQCL_ERR_IO, "cannot write %s: %s", path, strerror(errno));
    }
  return sq_outfile_commit(&o);
}
