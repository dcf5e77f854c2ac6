/* --model given more than once (decode, eval): the folders of an ensemble,
 * checked against the first before any device is opened, then loaded on one
 * context. */
#ifndef SEQCL_CLI_ENSEMBLE_H
#define SEQCL_CLI_ENSEMBLE_H

#include <seqcl/seqcl.h>

#include "cli_model.h"
#include "cli_text.h"

typedef struct cli_models {
  const char *dirs[SEQCL_ENSEMBLE_MAX];
  int count;
} cli_models;

/* For a command's more_option: takes "--model DIR" into ms (CLI_TAKEN), a
 * usage error past SEQCL_ENSEMBLE_MAX folders, 0 for any other option. */
int cli_models_take(const char *cmd, cli_models *ms, int argc, char **argv, int *i);
/* The folders after the first must read and write the ids the first does:
 * the same vocabulary sizes, bos_id and eos_id in config.json, and, where the
 * vocabularies come from the model folders (--text without --src-vocab /
 * --tgt-vocab), the same tokens in src.vocab and tgt.vocab as the first
 * folder's (sv, tv: read from it). A usage error naming both folders. */
int cli_models_check(const char *cmd, const cli_models *ms, const cli_text *tx,
                     const char *src_vocab, const char *tgt_vocab, const sq_config *cfg0,
                     const sq_vocab *sv, const sq_vocab *tv);
/* Opens the device and loads every folder on it: m->model is the first, and
 * m->extra[0..count-1) the others. An exit status. */
int cli_open_models(const char *cmd, const char *device, const cli_models *ms,
                    const char *precision, cli_model_run *m);

/* m's models, the first one first, into out[SEQCL_ENSEMBLE_MAX]; how many. */
static inline int cli_models_of(const cli_model_run *m, seqcl_model **out) {
  out[0] = m->model;
  for (int j = 0; j < m->count; j++) out[j + 1] = m->extra[j];
  return m->count + 1;
}

#endif
