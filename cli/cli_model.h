/* Pieces shared by the commands: the option loop, and for the model commands
 * (forward, decode, eval, probe, heatmap) reading a model folder and its token files. */
#ifndef SEQCL_CLI_MODEL_H
#define SEQCL_CLI_MODEL_H

#include <seqcl/seqcl.h>

#include <stdio.h>

#include "model/attn_stats.h"
#include "model/config.h"
#include "model/tokens.h"

#include "cli.h"

/* The value of option argv[*i] (advancing *i), or NULL after printing a usage
 * error when it is missing. */
const char *cli_value(const char *cmd, int argc, char **argv, int *i);
/* An option in a command's table for cli_take: one that takes a value, a
 * string (str), a whole number in [min, max] (num) or a number in the range
 * range (dbl), or a flag without one (none of those: seen is then its slot);
 * seen (optional for the others) is set to 1 when the option is given. The
 * table ends with an entry without a name. */
typedef struct cli_opt {
  const char *name;
  const char **str;
  long *num;
  long min, max;
  int *seen;
  double *dbl;
  cli_range range;
} cli_opt;
#define CLI_STR(name, slot) {name, slot, NULL, 0, 0, NULL, NULL, CLI_ANY_NUMBER}
#define CLI_NUM(name, slot, lo, hi) {name, NULL, slot, lo, hi, NULL, NULL, CLI_ANY_NUMBER}
#define CLI_NUM_SEEN(name, slot, lo, hi, seen) \
  {name, NULL, slot, lo, hi, seen, NULL, CLI_ANY_NUMBER}
#define CLI_DBL_SEEN(name, slot, range, seen) {name, NULL, NULL, 0, 0, seen, slot, range}
#define CLI_FLAG(name, seen) {name, NULL, NULL, 0, 0, seen, NULL, CLI_ANY_NUMBER}
/* One step of a command's option loop over argv[*i]: -h/--help prints
 * help(stdout) and gives -1 (the parse functions' "help shown"); an option of
 * opts has its value read (advancing *i) into its slot and gives CLI_TAKEN;
 * CLI_USAGE (reported by cli_value or cli_long) when that value is missing or
 * not a number in range; 0 leaves argv[*i] to the command. */
enum { CLI_TAKEN = -2 };
int cli_take(const char *cmd, const cli_opt *opts, void (*help)(FILE *), int argc, char **argv,
             int *i);
/* A command's option loop over argv[first..]: each argument goes to cli_take,
 * then, when it is none of opts, to more (may be NULL) with user, for what a
 * table cannot hold; more returns CLI_TAKEN, an exit status, or 0 when the
 * argument is none of its own either, which is then an unknown option
 * ("unknown option 'X' (see seqcl CMD --help)"). Returns CLI_OK, -1 after
 * help, or an exit status. */
typedef int (*cli_more_fn)(void *user, int argc, char **argv, int *i);
int cli_options(const char *cmd, const cli_opt *opts, void (*help)(FILE *), int first, int argc,
                char **argv, cli_more_fn more, void *user);
/* Reads DIR/config.json (before any device is opened, so that a malformed model
 * is a usage error even where no device works). Returns an exit status. */
int cli_read_config(const char *cmd, const char *dir, sq_config *cfg);
/* Reads a vocabulary when path is not NULL (*out = NULL otherwise). */
int cli_read_vocab(const char *cmd, const char *path, sq_vocab **out);
/* The unk id a side's unknown words map to (target: the target side), -1 when
 * the config has none. */
long cli_unk_id(const sq_config *cfg, int target);
/* After reading path: the count of unknown words or tokens (what) mapped to
 * that side's unk id, on stderr; nothing when unknown is 0. */
void cli_warn_unknown(const char *cmd, const char *path, size_t unknown, const char *what,
                      int target, long unk);
/* Reads a token file of the model's source (target = 0) or target side: ids,
 * or words through vocab when it is not NULL; there an unknown word maps to the
 * config's src_unk_id / tgt_unk_id when it has one (how many did is printed
 * to stderr) and is an error otherwise. flags: SQ_TOKENS_*. An exit status. */
int cli_read_tokens(const char *cmd, const char *path, const sq_config *cfg, int target,
                    const sq_vocab *vocab, unsigned flags, sq_seqs *out);
/* Opens the device (printing it to stderr when verbose) and loads the model at
 * precision (a --precision value: f32, bf16, f16; NULL: f32). */
int cli_open_model(const char *cmd, const char *device, const char *dir, const char *precision,
                   seqcl_ctx **ctx, seqcl_model **model);
/* Loads one more model on an open context at precision (as cli_open_model). */
int cli_load_model(const char *cmd, seqcl_ctx *ctx, const char *dir, const char *precision,
                   seqcl_model **model);
/* What a model command holds between reading the model folder and exiting:
 * its config (cli_read_config), the vocabularies of its two sides (NULL: ids),
 * and once cli_open_model has run, the context and the model. Start from
 * {0}; cli_model_run_free releases whatever was opened. */
typedef struct cli_model_run {
  sq_config cfg;
  sq_vocab *sv, *tv;
  seqcl_ctx *ctx;
  seqcl_model *model;
  /* an ensemble's other models (cli_open_models), count of them */
  seqcl_model *extra[SEQCL_ENSEMBLE_MAX - 1];
  int count;
} cli_model_run;
void cli_model_run_free(cli_model_run *m);
/* The flat view of token lines the library takes. */
static inline seqcl_seqs cli_seqs(const sq_seqs *s) {
  seqcl_seqs v = {s->count, s->ids, s->offsets};
  return v;
}
/* A token's label: the vocabulary word, else the decimal id (buf holds >= 16). */
const char *cli_token_label(const sq_vocab *v, int32_t id, char *buf, size_t cap);

/* The attention entropy and invariants of a decode result whose alignments were
 * asked for: line i's valid rows are its steps, its valid columns its source
 * length in src. */
void cli_attn_stats(const seqcl_decode_result *r, const sq_seqs *src, sq_attn_stats *st);
/* Two lines, "PREFIXentropy: ..." and "PREFIXinvariants: pass|FAIL (worst values)",
 * lines and steps counted from 1. */
void cli_attn_stats_print(FILE *f, const char *prefix, const sq_attn_stats *st);
/* The same two lines for a model without alignments (attention.score "none"). */
void cli_attn_stats_print_none(FILE *f, const char *prefix);

#endif
