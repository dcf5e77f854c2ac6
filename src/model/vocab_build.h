/* Building vocabulary files from text: tokens counted over the files, the
 * special tokens first at fixed ids, then the tokens by falling count. */
#ifndef SQ_MODEL_VOCAB_BUILD_H
#define SQ_MODEL_VOCAB_BUILD_H

#include <stdio.h>

#include "model/tokens.h"
#include "model/wordtab.h"

/* The special tokens. Their ids: with pad, <pad> 0, <unk> 1, <s> 2, </s> 3;
 * without, <unk> 0, <s> 1, </s> 2. <space> stands for a space character in a
 * character vocabulary (vocabulary files hold no whitespace); a character
 * token is one code point, so none of these can be mistaken for one. */
#define SQ_TOK_PAD "<pad>"
#define SQ_TOK_UNK "<unk>"
#define SQ_TOK_BOS "<s>"
#define SQ_TOK_EOS "</s>"
#define SQ_TOK_SPACE "<space>"

typedef enum sq_split { SQ_SPLIT_WORDS = 0, SQ_SPLIT_CHARS = 1 } sq_split;

typedef struct sq_vocab_spec {
  sq_split split;
  long min_count; /* tokens seen fewer times are left out (>= 1) */
  long max_size;  /* the whole vocabulary, specials included (0 = no limit) */
  int pad;        /* add <pad> (at id 0) */
} sq_vocab_spec;

/* Counts the tokens of a text file into t: words (whitespace-separated) or
 * characters (code points; a space, tab, VT, FF counts as <space>). Invalid
 * UTF-8 or a NUL byte is SEQCL_ERR_BAD_TOKENS naming the file and line. */
seqcl_status sq_vocab_count(const char *path, sq_split split, sq_wordtab *t);

typedef struct sq_vocab_summary {
  size_t size;      /* lines written */
  size_t specials;  /* of which special tokens */
  size_t distinct;  /* distinct tokens counted */
  size_t below_min; /* distinct tokens left out by min_count */
  size_t over_max;  /* distinct tokens left out by max_size */
} sq_vocab_summary;

/* Writes the vocabulary, one token per line. A counted token equal to a
 * special one is that special token. */
seqcl_status sq_vocab_write(FILE *f, const sq_wordtab *t, const sq_vocab_spec *spec,
                            sq_vocab_summary *sum);

/* Builds the vocabulary of the files paths[0..n) in memory, as
 * sq_vocab_write would write it (*out is freed with sq_vocab_free). */
seqcl_status sq_vocab_build(const char *const *paths, size_t n, const sq_vocab_spec *spec,
                            sq_vocab **out, sq_vocab_summary *sum);
/* Writes v to path, one token per line, atomically (sq_outfile). */
seqcl_status sq_vocab_save(const sq_vocab *v, const char *path);

#endif
