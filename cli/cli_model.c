#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "core/fileio.h"
#include "cli_model.h"

const char *cli_value(const char *cmd, int argc, char **argv, int *i) {
  if (*i + 1 >= argc) {
    cli_usage_error(cmd, "option %s needs a value (see seqcl %s --help)", argv[*i], cmd);
    return NULL;
  }
  return argv[++*i];
}

/* cli_take, also telling which entry of opts took the argument (*which). */
static int take(const char *cmd, const cli_opt *table, void (*help)(FILE *), int argc,
                char **argv, int *i, int *which) {
  const char *o = argv[*i];
  if (cli_is_help(o)) {
    help(stdout);
    return -1;
  }
  for (const cli_opt *opts = table; opts->name; opts++) {
    if (strcmp(o, opts->name)) continue;
    *which = (int)(opts - table);
    if (!opts->str && !opts->num && !opts->dbl) { /* a flag */
      *opts->seen = 1;
      return CLI_TAKEN;
    }
    const char *v = cli_value(cmd, argc, argv, i);
    if (!v) return CLI_USAGE;
    if (opts->str) *opts->str = v;
    else if (opts->dbl ? cli_double(cmd, o, v, opts->range, opts->dbl)
                       : cli_long(cmd, o, v, opts->min, opts->max, opts->num))
      return CLI_USAGE;
    if (opts->seen) *opts->seen = 1;
    return CLI_TAKEN;
  }
  return 0;
}

int cli_take(const char *cmd, const cli_opt *opts, void (*help)(FILE *), int argc, char **argv,
             int *i) {
  int which;
  return take(cmd, opts, help, argc, argv, i, &which);
}

/* An option with a value given twice would have its first value ignored:
 * like an option that changes nothing, that is a mistake to report. */
enum { MAX_TABLE = 64 };

int cli_options(const char *cmd, const cli_opt *opts, void (*help)(FILE *), int first, int argc,
                char **argv, cli_more_fn more, void *user) {
  const char *given[MAX_TABLE] = {0}; /* the value each table entry took */
  for (int i = first; i < argc; i++) {
    const char *o = argv[i]; /* more may take a value after it */
    int which = -1;
    int r = take(cmd, opts, help, argc, argv, &i, &which);
    if (r == CLI_TAKEN && which < MAX_TABLE && argv[i] != o) { /* a value was taken */
      if (given[which])
        return cli_usage_error(cmd, "%s given twice ('%s', then '%s'): give it once", o,
                               given[which], argv[i]);
      given[which] = argv[i];
    }
    if (!r && more) r = more(user, argc, argv, &i);
    if (r == CLI_TAKEN) continue;
    if (r) return r;
    return cli_usage_error(cmd, "unknown option '%s' (see seqcl %s --help)", o, cmd);
  }
  return CLI_OK;
}

int cli_read_config(const char *cmd, const char *dir, sq_config *cfg) {
  size_t n = strlen(dir) + sizeof "/config.json";
  char *path = malloc(n);
  if (!path) return cli_usage_error(cmd, "out of memory");
  snprintf(path, n, "%s/config.json", dir);
  seqcl_status st = sq_config_load(path, cfg);
  free(path);
  return st == SEQCL_OK ? CLI_OK : cli_fail(cmd, st);
}

int cli_read_vocab(const char *cmd, const char *path, sq_vocab **out) {
  *out = NULL;
  if (!path) return CLI_OK;
  seqcl_status st = sq_vocab_read(path, out);
  return st == SEQCL_OK ? CLI_OK : cli_fail(cmd, st);
}

long cli_unk_id(const sq_config *cfg, int target) {
  const int has = target ? cfg->has_tgt_unk : cfg->has_src_unk;
  return has ? (target ? cfg->tgt_unk_id : cfg->src_unk_id) : -1;
}

void cli_warn_unknown(const char *cmd, const char *path, size_t unknown, const char *what,
                      int target, long unk) {
  if (unknown)
    fprintf(stderr, "seqcl %s: %s: %zu unknown %s%s mapped to %s_unk_id %ld\n", cmd,
            sq_path_shown(path), unknown, what, unknown == 1 ? "" : "s", target ? "tgt" : "src",
            unk);
}

int cli_read_tokens(const char *cmd, const char *path, const sq_config *cfg, int target,
                    const sq_vocab *vocab, unsigned flags, sq_seqs *out) {
  const long unk = cli_unk_id(cfg, target);
  size_t unknown = 0;
  seqcl_status st = sq_tokens_read_flags(path, target ? cfg->tgt_vocab : cfg->src_vocab, vocab,
                                         flags, unk, &unknown, out);
  if (st != SEQCL_OK) return cli_fail(cmd, st);
  cli_warn_unknown(cmd, path, unknown, "word", target, unk);
  return CLI_OK;
}

int cli_load_model(const char *cmd, seqcl_ctx *ctx, const char *dir, const char *precision,
                   seqcl_model **model) {
  *model = NULL;
  seqcl_model_options mo;
  seqcl_model_options_init(&mo);
  if (precision && seqcl_precision_parse(precision, &mo.precision) != SEQCL_OK)
    return cli_usage_error(cmd, "--precision '%s': expected f32, bf16 or f16", precision);
  seqcl_status st = seqcl_model_load_with(ctx, dir, &mo, model);
  return st == SEQCL_OK ? CLI_OK : cli_fail(cmd, st);
}

int cli_open_model(const char *cmd, const char *device, const char *dir, const char *precision,
                   seqcl_ctx **ctx, seqcl_model **model) {
  *model = NULL;
  seqcl_precision p;
  if (precision && seqcl_precision_parse(precision, &p) != SEQCL_OK)
    return cli_usage_error(cmd, "--precision '%s': expected f32, bf16 or f16", precision);
  int rc = cli_ctx_open(cmd, device, ctx);
  if (rc == CLI_OK && (rc = cli_load_model(cmd, *ctx, dir, precision, model)) != CLI_OK) {
    seqcl_ctx_close(*ctx);
    *ctx = NULL;
  }
  return rc;
}

void cli_model_run_free(cli_model_run *m) {
  for (int j = 0; j < m->count; j++) seqcl_model_free(m->extra[j]);
  seqcl_model_free(m->model);
  seqcl_ctx_close(m->ctx);
  sq_vocab_free(m->sv);
  sq_vocab_free(m->tv);
}

const char *cli_token_label(const sq_vocab *v, int32_t id, char *buf, size_t cap) {
  if (v && id >= 0 && (size_t)id < v->count) return v->words[id];
  snprintf(buf, cap, "%d", (int)id);
  return buf;
}

void cli_attn_stats(const seqcl_decode_result *r, const sq_seqs *src, sq_attn_stats *st) {
  sq_attn_stats_init(st);
  for (size_t i = 0; r->alignments && i < r->count; i++)
    sq_attn_stats_add(st, r->alignments + i * (size_t)r->T * (size_t)r->S, r->steps[i],
                      (int)sq_seq_len(src, i), r->S, (size_t)r->S, i);
}

void cli_attn_stats_print_none(FILE *f, const char *prefix) {
  fprintf(f, "%sentropy: n/a (attention.score \"none\": a fixed context, no alignments)\n", prefix);
  fprintf(f, "%sinvariants: n/a (no alignments)\n", prefix);
}

void cli_attn_stats_print(FILE *f, const char *prefix, const sq_attn_stats *st) {
  fprintf(f, "%sentropy: %.4f nats mean over %zu decoder steps (%.4f of ln S)\n", prefix,
          sq_attn_stats_mean_entropy(st), st->steps, sq_attn_stats_mean_entropy_norm(st));
  fprintf(f,
          "%sinvariants: %s (worst |sum - 1| %.2e at line %zu step %d, tolerance %.0e; worst "
          "padding weight %g; non-finite weights %zu)\n",
          prefix, sq_attn_stats_pass(st) ? "pass" : "FAIL", st->worst_sum, st->worst_sum_line + 1,
          st->worst_sum_step + 1, SQ_ATTN_SUM_TOL, st->worst_pad, st->nonfinite);
}
