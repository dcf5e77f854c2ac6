/* A growing table of distinct tokens (strings) with their counts: ids are
 * handed out in order of first appearance. Used to compare token files whose
 * tokens are arbitrary strings, and to count tokens when building vocabularies. */
#ifndef SQ_MODEL_WORDTAB_H
#define SQ_MODEL_WORDTAB_H

#include <stddef.h>
#include <stdint.h>

#include <seqcl/seqcl.h>

#include "model/tokens.h"

typedef struct sq_wordtab {
  size_t count;
  char **words;   /* id -> token */
  size_t *counts; /* id -> times added */
  /* private: open addressing, id + 1 per slot (0 = empty) */
  size_t *slots, slot_cap, cap;
} sq_wordtab;

/* Adds one occurrence of word[0..len) and gives its id. */
seqcl_status sq_wordtab_add(sq_wordtab *t, const char *word, size_t len, int32_t *id);
void sq_wordtab_free(sq_wordtab *t); /* frees everything, zeroes *t */

/* Length of the UTF-8 sequence at s (n >= 1 bytes available), or 0 when it is
 * not well-formed (overlong forms, surrogates, values past U+10FFFF). */
size_t sq_utf8_len(const unsigned char *s, size_t n);

/* Reads a file ("-" = standard input) of whitespace-separated tokens, one
 * sequence per line, every token interned in t. Empty lines are sequences of
 * length 0; CRLF and a missing final newline are accepted; an empty file, a
 * NUL byte or a line that is not valid UTF-8 is SEQCL_ERR_BAD_TOKENS naming
 * the file and line. */
seqcl_status sq_words_read(const char *path, sq_wordtab *t, sq_seqs *out);

#endif
