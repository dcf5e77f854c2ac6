/* --text for the model commands (cli_text.h). */
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "cli_model.h"
#include "cli_text.h"
#include "core/fileio.h"

int cli_text_parse(const char *cmd, const char *spec, cli_text *t) {
  memset(t, 0, sizeof *t);
  if (!spec) return CLI_OK;
  if (sq_text_split_parse(spec, t->split))
    return cli_usage_error(cmd, "--text: '%s' is not chars, words or SRC,TGT of those", spec);
  t->on = 1;
  return CLI_OK;
}

int cli_text_vocab(const char *cmd, const cli_text *t, const char *given, const char *dir,
                   int target, sq_vocab **out) {
  if (given || !t->on) return cli_read_vocab(cmd, given, out);
  const char *name = target ? "tgt.vocab" : "src.vocab";
  char *path = sq_path_join(dir, name);
  if (!path) return cli_usage_error(cmd, "out of memory");
  int rc = cli_read_vocab(cmd, path, out);
  free(path);
  return rc;
}

int cli_text_vocabs(const char *cmd, const cli_text *t, const char *src_given,
                    const char *tgt_given, const char *dir, sq_vocab **sv, sq_vocab **tv) {
  int rc = cli_text_vocab(cmd, t, src_given, dir, 0, sv);
  return rc ? rc : cli_text_vocab(cmd, t, tgt_given, dir, 1, tv);
}

int cli_read_side(const char *cmd, const cli_text *t, const char *path, const sq_config *cfg,
                  int target, const sq_vocab *vocab, unsigned flags, int wrap, sq_seqs *out) {
  if (!t->on) return cli_read_tokens(cmd, path, cfg, target, vocab, flags, out);
  const long unk = cli_unk_id(cfg, target);
  size_t unknown = 0;
  seqcl_status st = sq_text_read(path, t->split[target], vocab,
                                 target ? cfg->tgt_vocab : cfg->src_vocab, unk, flags, &unknown, out);
  if (st == SEQCL_OK && wrap && (st = sq_seqs_wrap(out, cfg->bos_id, cfg->eos_id)) != SEQCL_OK)
    sq_seqs_free(out);
  if (st != SEQCL_OK) return cli_fail(cmd, st);
  cli_warn_unknown(cmd, path, unknown, "token", target, unk);
  return CLI_OK;
}

int cli_write_side(FILE *f, const cli_text *t, const int32_t *ids, size_t n, const sq_vocab *tv) {
  return t->on ? sq_text_write_line(f, ids, n, tv, t->split[1]) : sq_tokens_write_line(f, ids, n, tv);
}
