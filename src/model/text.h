/* Text lines through a vocabulary: split into characters (UTF-8 code points)
 * or words, and written back the same way. */
#ifndef SQ_MODEL_TEXT_H
#define SQ_MODEL_TEXT_H

#include <stdio.h>

#include "model/tokens.h"
#include "model/vocab_build.h"

/* Reads text lines as ids of vocab: characters (a space or tab is the token
 * <space>) or whitespace-separated words. An unknown token maps to unk_id when
 * unk_id >= 0 (*unknown counts them; may be NULL), else it is an error naming
 * the file, line and token; so are invalid UTF-8, ids >= vocab_size (when > 0),
 * an empty file and, without SQ_TOKENS_EMPTY_OK, an empty line. */
seqcl_status sq_text_parse(const char *text, size_t len, const char *name, sq_split split,
                           const sq_vocab *vocab, long vocab_size, long unk_id, unsigned flags,
                           size_t *unknown, sq_seqs *out);
seqcl_status sq_text_read(const char *path, sq_split split, const sq_vocab *vocab, long vocab_size,
                          long unk_id, unsigned flags, size_t *unknown, sq_seqs *out);
/* Writes one line: characters joined without separators (<space> as a space),
 * or words joined by single spaces; then '\n'. 0, or -1 after sq_fail. */
int sq_text_write_line(FILE *f, const int32_t *ids, size_t n, const sq_vocab *vocab, sq_split split);

/* Puts bos before and eos after every line of s (text holds the tokens only;
 * a training or teacher-forcing target is BOS ... EOS). s is replaced. */
seqcl_status sq_seqs_wrap(sq_seqs *s, int32_t bos, int32_t eos);

/* "chars", "words" (both sides) or "SRC,TGT" of those (letters in, phonemes
 * out: "chars,words") into split[0] (source) and split[1] (target); 0, or -1
 * when spec is none of these. */
int sq_text_split_parse(const char *spec, sq_split split[2]);

#endif
