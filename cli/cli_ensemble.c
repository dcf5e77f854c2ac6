/* Ensembles of model folders on the command line (cli_ensemble.h). */
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "cli_ensemble.h"
#include "core/fileio.h"

int cli_models_take(const char *cmd, cli_models *ms, int argc, char **argv, int *i) {
  if (strcmp(argv[*i], "--model")) return 0;
  const char *v = cli_value(cmd, argc, argv, i);
  if (!v) return CLI_USAGE;
  if (ms->count == SEQCL_ENSEMBLE_MAX)
    return cli_usage_error(cmd, "--model: at most %d models decode together (an ensemble)",
                           SEQCL_ENSEMBLE_MAX);
  ms->dirs[ms->count++] = v;
  return CLI_TAKEN;
}

/* dir's vocabulary `name` must hold the tokens of `first` (read from dir0). */
static int same_vocab(const char *cmd, const char *dir0, const char *dir, const char *name,
                      const sq_vocab *first) {
  char *path = sq_path_join(dir, name);
  if (!path) return cli_usage_error(cmd, "out of memory");
  sq_vocab *v = NULL;
  int rc = cli_read_vocab(cmd, path, &v);
  if (rc == CLI_OK) {
    size_t id = 0;
    while (id < v->count && id < first->count && !strcmp(v->words[id], first->words[id])) id++;
    if (id < v->count || id < first->count)
      rc = cli_usage_error(cmd,
                           "--model %s and --model %s: %s differs at id %zu (%s against %s): the "
                           "models of an ensemble must read and write the same tokens",
                           dir0, dir, name, id, id < first->count ? first->words[id] : "no token",
                           id < v->count ? v->words[id] : "no token");
  }
  sq_vocab_free(v);
  free(path);
  return rc;
}

int cli_models_check(const char *cmd, const cli_models *ms, const cli_text *tx,
                     const char *src_vocab, const char *tgt_vocab, const sq_config *c0,
                     const sq_vocab *sv, const sq_vocab *tv) {
  for (int j = 1; j < ms->count; j++) {
    sq_config c;
    int rc = cli_read_config(cmd, ms->dirs[j], &c);
    if (rc) return rc;
    if (c.src_vocab != c0->src_vocab || c.tgt_vocab != c0->tgt_vocab || c.bos_id != c0->bos_id ||
        c.eos_id != c0->eos_id)
      return cli_usage_error(cmd,
                             "--model %s and --model %s: the models of an ensemble must read and "
                             "write the same ids (src_vocab_size %d / %d, tgt_vocab_size %d / %d, "
                             "bos_id %d / %d, eos_id %d / %d)",
                             ms->dirs[0], ms->dirs[j], c0->src_vocab, c.src_vocab, c0->tgt_vocab,
                             c.tgt_vocab, c0->bos_id, c.bos_id, c0->eos_id, c.eos_id);
    if (tx->on && !src_vocab && sv &&
        (rc = same_vocab(cmd, ms->dirs[0], ms->dirs[j], "src.vocab", sv)))
      return rc;
    if (tx->on && !tgt_vocab && tv &&
        (rc = same_vocab(cmd, ms->dirs[0], ms->dirs[j], "tgt.vocab", tv)))
      return rc;
  }
  return CLI_OK;
}

int cli_open_models(const char *cmd, const char *device, const cli_models *ms,
                    const char *precision, cli_model_run *m) {
  int rc = cli_open_model(cmd, device, ms->dirs[0], precision, &m->ctx, &m->model);
  if (rc) return rc;
  for (int j = 1; j < ms->count; j++) {
    if ((rc = cli_load_model(cmd, m->ctx, ms->dirs[j], precision, &m->extra[j - 1]))) return rc;
    m->count = j;
  }
  return CLI_OK;
}
