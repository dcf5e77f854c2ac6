/* Pieces shared by the model commands (forward, decode, heatmap). */
#ifndef SEQCL_CLI_MODEL_H
#define SEQCL_CLI_MODEL_H

#include <seqcl/seqcl.h>

#include "model/config.h"
#include "model/tokens.h"

/* The value of option argv[*i] (advancing *i), or NULL after printing a usage
 * error when it is missing. */
const char *cli_value(const char *cmd, int argc, char **argv, int *i);
/* Reads DIR/config.json (before any device is opened, so that a malformed model
 * is a usage error even where no device works). Returns an exit status. */
int cli_read_config(const char *cmd, const char *dir, sq_config *cfg);
/* Reads a vocabulary when path is not NULL (*out = NULL otherwise). */
int cli_read_vocab(const char *cmd, const char *path, sq_vocab **out);
/* Reads a token file of the model's source (target = 0) or target side: ids,
 * or words through vocab when it is not NULL; there an unknown word maps to the
 * config's src_unk_id / tgt_unk_id when it has one (how many did is printed
 * to stderr) and is an error otherwise. flags: SQ_TOKENS_*. An exit status. */
int cli_read_tokens(const char *cmd, const char *path, const sq_config *cfg, int target,
                    const sq_vocab *vocab, unsigned flags, sq_seqs *out);
/* Opens the device (printing it to stderr when verbose) and loads the model. */
int cli_open_model(const char *cmd, const char *device, const char *dir, seqcl_ctx **ctx,
                   seqcl_model **model);
/* The flat view of token lines the library takes. */
static inline seqcl_seqs cli_seqs(const sq_seqs *s) {
  seqcl_seqs v = {s->count, s->ids, s->offsets};
  return v;
}
/* A token's label: the vocabulary word, else the decimal id (buf holds >= 16). */
const char *cli_token_label(const sq_vocab *v, int32_t id, char *buf, size_t cap);

#endif
