/* Token files (SPEC §4): one sequence per line, whitespace-separated decimal ids
 * or, with a vocabulary, words. */
#ifndef SQ_MODEL_TOKENS_H
#define SQ_MODEL_TOKENS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <seqcl/seqcl.h>

/* Ragged sequences stored flat: sequence i is ids[offsets[i] .. offsets[i+1]). */
typedef struct sq_seqs {
  size_t count;
  int32_t *ids;
  size_t *offsets; /* count + 1 entries */
} sq_seqs;

static inline size_t sq_seq_len(const sq_seqs *s, size_t i) { return s->offsets[i + 1] - s->offsets[i]; }

typedef struct sq_vocab {
  size_t count;
  char **words; /* id -> word */
  /* private lookup table */
  size_t *hash_ids;
  size_t hash_cap;
} sq_vocab;

/* Reads a vocabulary file: one token per line, id = line number - 1; empty
 * lines, duplicates and tokens with whitespace are errors. */
seqcl_status sq_vocab_read(const char *path, sq_vocab **out);
/* The same from memory; name is used in messages. */
seqcl_status sq_vocab_parse(const char *text, size_t len, const char *name, sq_vocab **out);
void sq_vocab_free(sq_vocab *v);
/* id of word, or -1. */
long sq_vocab_lookup(const sq_vocab *v, const char *word, size_t len);

/* Reads a token file ("-" = standard input). Every id must be < vocab_size
 * (vocab_size <= 0: any id up to INT32_MAX; when vocab is non-NULL, words are
 * looked up instead, and their ids must still be < vocab_size). Errors are
 * SEQCL_ERR_BAD_TOKENS (SEQCL_ERR_IO for unreadable files) naming the file and
 * line: signs or other characters, an empty or whitespace-only line, an id out
 * of range, an unknown word, an empty file. CRLF and a missing final newline
 * are accepted. */
seqcl_status sq_tokens_read(const char *path, long vocab_size, const sq_vocab *vocab,
                            sq_seqs *out);
seqcl_status sq_tokens_parse(const char *text, size_t len, const char *name, long vocab_size,
                             const sq_vocab *vocab, sq_seqs *out);
/* The same with flags: SQ_TOKENS_EMPTY_OK accepts empty and whitespace-only
 * lines as sequences of length 0 (decode's output may hold them). With a
 * vocabulary and unk_id >= 0 (the config's src_unk_id / tgt_unk_id), an
 * unknown word maps to unk_id instead of failing; *unknown (may be NULL)
 * receives how many did. */
enum { SQ_TOKENS_EMPTY_OK = 1u };
seqcl_status sq_tokens_read_flags(const char *path, long vocab_size, const sq_vocab *vocab,
                                  unsigned flags, long unk_id, size_t *unknown, sq_seqs *out);
seqcl_status sq_tokens_parse_flags(const char *text, size_t len, const char *name, long vocab_size,
                                   const sq_vocab *vocab, unsigned flags, long unk_id,
                                   size_t *unknown, sq_seqs *out);
void sq_seqs_free(sq_seqs *s); /* frees the arrays, zeroes *s */

/* Writes one line: ids separated by single spaces (words with vocab), then '\n'.
 * Returns 0, or -1 after sq_fail recorded why (a write error, or an id that the
 * vocabulary does not have). */
int sq_tokens_write_line(FILE *f, const int32_t *ids, size_t n, const sq_vocab *vocab);

/* sq_file_read_all and sq_outfile (the shared reader and writer) */
#include "core/fileio.h"

#endif
