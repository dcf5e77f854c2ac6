/* --text for the model commands (train, forward, decode, eval): lines read
 * and written as characters or words through the model folder's src.vocab and
 * tgt.vocab (--src-vocab / --tgt-vocab override), or as ids when it is off. */
#ifndef SEQCL_CLI_TEXT_H
#define SEQCL_CLI_TEXT_H

#include <stdio.h>

#include "model/config.h"
#include "model/text.h"

typedef struct cli_text {
  int on;
  sq_split split[2]; /* source, target */
} cli_text;

/* spec: NULL (off), chars, words or SRC,TGT of those; a usage error otherwise. */
int cli_text_parse(const char *cmd, const char *spec, cli_text *t);
/* The vocabulary of one side (target = 1: tgt): given when set, else with
 * --text DIR/src.vocab or DIR/tgt.vocab, else none (*out = NULL). */
int cli_text_vocab(const char *cmd, const cli_text *t, const char *given, const char *dir,
                   int target, sq_vocab **out);
/* Both sides' vocabularies, as cli_text_vocab finds them (source first). */
int cli_text_vocabs(const char *cmd, const cli_text *t, const char *src_given,
                    const char *tgt_given, const char *dir, sq_vocab **sv, sq_vocab **tv);
/* One side's lines: as cli_read_tokens reads them, or with --text as text
 * through vocab (unknown tokens mapped to the config's unknown id, their count
 * on stderr; an error where it has none); wrap puts BOS ... EOS around each
 * text line (a teacher-forcing target). An exit status. */
int cli_read_side(const char *cmd, const cli_text *t, const char *path, const sq_config *cfg,
                  int target, const sq_vocab *vocab, unsigned flags, int wrap, sq_seqs *out);
/* One output line: characters without separators or single-spaced words with
 * --text, else ids (words with tv). 0 or -1. */
int cli_write_side(FILE *f, const cli_text *t, const int32_t *ids, size_t n, const sq_vocab *tv);

#endif
