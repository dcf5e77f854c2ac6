/* seqcl eval: exact match, token edit rate and corpus BLEU of a model's output
 * (decoded here) or of an existing output file, against reference lines. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "cli_ensemble.h"
#include "cli_model.h"
#include "cli_text.h"
#include "model/metrics.h"
#include "model/text.h"
#include "model/wordtab.h"

static void help(FILE *f) {
  fprintf(f,
          "usage: seqcl eval --model DIR [--model DIR ...] --src FILE --ref FILE [--beam K]\n"
          "                  [--length-penalty A]\n"
          "                  [--max-steps N] [--batch-size B] [--src-vocab F] [--tgt-vocab F]\n"
          "                  [--text chars|words|SRC,TGT] [--metric exact,ter,bleu,attention]\n"
          "                  [--precision f32|bf16|f16] [--device SEL]\n"
          "       seqcl eval --hyp FILE --ref FILE [--metric exact,ter,bleu]\n\n"
          "Scores produced lines against reference lines, line by line in order:\n"
          "  exact  percent of lines equal to their reference (100 minus it is the\n"
          "         word error rate of grapheme-to-phoneme work)\n"
          "  ter    token edit rate: Levenshtein edits / reference tokens, in percent\n"
          "         (the phoneme error rate of grapheme-to-phoneme work)\n"
          "  bleu   corpus BLEU-4 over the tokens as given, 0-100, no smoothing (0 when\n"
          "         any n-gram precision is 0); equals 100 x NLTK's corpus_bleu\n"
          "  attention  (with --model: the alignments of its decoding) the mean attention\n"
          "         entropy over valid decoder steps (nats, and divided by ln of the\n"
          "         source length) and the invariants: each step's weights sum to 1\n"
          "         (worst |sum - 1|, tolerance 1e-5), padding weights are 0, all finite\n\n"
          "  --model DIR        decode --src with this model (as seqcl decode does);\n"
          "                     given again (up to 16): with the models as an ensemble,\n"
          "                     as seqcl decode does (no attention metric)\n"
          "  --src FILE         source lines ('-' = standard input)\n"
          "  --ref FILE         reference lines: ids (words with --tgt-vocab) as decode\n"
          "                     writes them; with --model a leading BOS id and a trailing\n"
          "                     EOS id are dropped, so training target files serve as is\n"
          "  --text SPLIT       read --src and --ref as text through the model folder's\n"
          "                     src.vocab and tgt.vocab (--src-vocab/--tgt-vocab override):\n"
          "                     chars: every UTF-8 character a token (a space is <space>);\n"
          "                     words: whitespace-separated; SRC,TGT for two splits\n"
          "                     (chars,words for letters to phonemes); metrics count\n"
          "                     those tokens\n"
          "  --hyp FILE         score this file instead of decoding: tokens of --hyp and\n"
          "                     --ref are compared as strings (empty lines allowed)\n"
          "  --beam K, --length-penalty A, --max-steps N, --batch-size B,\n"
          "  --src-vocab F, --tgt-vocab F, --precision P, --device SEL   as in seqcl decode\n"
          "  --metric LIST      which metrics to print (default exact,ter,bleu, and\n"
          "                     attention with one --model)\n"
          "  -h, --help         this text\n\n"
          "Prints one line per metric (two for attention) to standard output. Exit status: 0 success,\n"
          "1 device/runtime failure, 2 bad usage or input (a message names the file\n"
          "and line).\n");
}

enum { M_EXACT = 1, M_TER = 2, M_BLEU = 4, M_ATTENTION = 8 };

typedef struct eval_args {
  cli_models models;
  const char *model; /* models.dirs[0] */
  const char *src, *ref, *hyp, *device, *src_vocab, *tgt_vocab, *text, *precision;
  long beam, max_steps, batch;
  double lp;
  int lp_given;
  unsigned metrics;
  cli_text tx;
} eval_args;

/* The name the messages give. */
static const char cmd[] = "eval";

static int parse_metrics(const char *v, unsigned *out) {
  *out = 0;
  const char *p = v;
  for (;;) {
    size_t n = strcspn(p, ",");
    unsigned m = n == 5 && !strncmp(p, "exact", 5) ? M_EXACT
                 : n == 3 && !strncmp(p, "ter", 3) ? M_TER
                 : n == 4 && !strncmp(p, "bleu", 4) ? M_BLEU
                 : n == 9 && !strncmp(p, "attention", 9) ? M_ATTENTION
                                                    : 0;
    if (!m)
      return cli_usage_error(cmd, "--metric: unknown metric '%.*s' in '%s' (known: exact, ter, bleu, attention)",
                             (int)n, p, v);
    *out |= m;
    if (!p[n]) return CLI_OK;
    p += n + 1;
  }
}

/* --metric: a list a table cannot check. */
static int more_option(void *user, int argc, char **argv, int *i) {
  eval_args *a = user;
  const char *v;
  const int r = cli_models_take(cmd, &a->models, argc, argv, i);
  if (r) return r;
  if (strcmp(argv[*i], "--metric")) return 0;
  if (!(v = cli_value(cmd, argc, argv, i))) return CLI_USAGE;
  return parse_metrics(v, &a->metrics) ? CLI_USAGE : CLI_TAKEN;
}

static int parse(int argc, char **argv, eval_args *a) {
  a->beam = 1;
  a->metrics = 0; /* the default is set once --hyp/--model are known */
  const cli_opt opts[] = {CLI_STR("--src", &a->src),
                          CLI_STR("--ref", &a->ref), CLI_STR("--hyp", &a->hyp),
                          CLI_STR("--device", &a->device), CLI_STR("--src-vocab", &a->src_vocab),
                          CLI_STR("--tgt-vocab", &a->tgt_vocab), CLI_STR("--text", &a->text),
                          CLI_STR("--precision", &a->precision),
                          CLI_NUM("--beam", &a->beam, 1, 16),
                          CLI_NUM("--max-steps", &a->max_steps, 1, 1000000),
                          CLI_NUM("--batch-size", &a->batch, 1, 1L << 30),
                          CLI_DBL_SEEN("--length-penalty", &a->lp, CLI_ANY_NUMBER, &a->lp_given),
                          {0}};
  int rc = cli_options(cmd, opts, help, 1, argc, argv, more_option, a);
  if (rc) return rc;
  a->model = a->models.dirs[0];
  if (!a->ref) return cli_usage_error(cmd, "--ref is required (see --help)");
  if (cli_text_parse(cmd, a->text, &a->tx)) return CLI_USAGE;
  /* attention needs the decoder's alignments: a --model run's own */
  if (!a->metrics)
    a->metrics = M_EXACT | M_TER | M_BLEU | (a->hyp || a->models.count > 1 ? 0 : M_ATTENTION);
  if (a->models.count > 1 && (a->metrics & M_ATTENTION))
    return cli_usage_error(cmd, "--metric attention: an ensemble of %d models has one attention "
                           "per model; evaluate one --model for it", a->models.count);
  if (a->hyp && (a->metrics & M_ATTENTION))
    return cli_usage_error(cmd, "--metric attention measures the alignments of a decoding: give "
                                "--model DIR and --src FILE instead of --hyp");
  if (a->text && a->hyp)
    return cli_usage_error(cmd, "--text reads through the model's vocabularies: give it with --model");
  if (a->hyp) {
    if (a->model || a->src || a->src_vocab || a->tgt_vocab || a->beam != 1 || a->lp_given ||
        a->max_steps || a->batch || a->precision)
      return cli_usage_error(cmd,
                             "--hyp scores an existing file: --model, --src, the vocabularies and "
                             "the decoding options would be ignored; give either --hyp or --model");
  } else if (!a->model || !a->src) {
    return cli_usage_error(cmd, "give --model DIR and --src FILE (or --hyp FILE) with --ref");
  }
  if (a->lp_given && a->beam == 1)
    return cli_usage_error(cmd,
                           "--length-penalty only ranks beam hypotheses; with --beam 1 (greedy) "
                           "it would be ignored: give --beam K > 1");
  return CLI_OK;
}

static void print_metrics(const eval_args *a, const sq_metrics *m, const sq_attn_stats *as,
                          int fixed_context) {
  printf("lines: %zu\n", m->lines);
  if (a->metrics & M_EXACT)
    printf("exact: %.2f %% (%zu of %zu lines; word error rate %.2f %%)\n", sq_metrics_exact(m),
           m->exact, m->lines, 100.0 - sq_metrics_exact(m));
  if (a->metrics & M_TER) {
    if (m->ref_tokens)
      printf("ter: %.2f %% (%zu edits over %zu reference tokens)\n", sq_metrics_ter(m), m->edits,
             m->ref_tokens);
    else
      printf("ter: n/a (the references hold no token)\n");
  }
  if (a->metrics & M_BLEU) {
    printf("bleu: %.2f (precisions", sq_metrics_bleu(m));
    for (int n = 0; n < SQ_BLEU_N; n++)
      printf("%c%.2f", n ? '/' : ' ', 100.0 * (double)m->match[n] / (double)m->total[n]);
    printf(", brevity penalty %.4f, hypothesis/reference tokens %zu/%zu)\n", sq_metrics_brevity(m),
           m->hyp_tokens, m->ref_tokens);
  }
  if ((a->metrics & M_ATTENTION) && !fixed_context) cli_attn_stats_print(stdout, "attention ", as);
  if ((a->metrics & M_ATTENTION) && fixed_context) cli_attn_stats_print_none(stdout, "attention ");
}

/* A line of a training target file starts with BOS and ends with EOS; decode
 * writes neither. */
static void strip_bos_eos(sq_seqs *ref, int bos, int eos) {
  size_t w = 0;
  for (size_t i = 0; i < ref->count; i++) {
    size_t b = ref->offsets[i], e = ref->offsets[i + 1];
    if (e > b && ref->ids[b] == bos) b++;
    if (e > b && ref->ids[e - 1] == eos) e--;
    ref->offsets[i] = w;
    memmove(ref->ids + w, ref->ids + b, (e - b) * sizeof *ref->ids);
    w += e - b;
  }
  ref->offsets[ref->count] = w;
}

/* Decodes --src with the model of m (opened here) into *res (an exit status). */
static int decode(const eval_args *a, cli_model_run *m, seqcl_decode_result **res,
                  sq_attn_stats *as) {
  sq_seqs src = {0};
  seqcl_status st;
  int rc = CLI_OK;
  if ((rc = cli_read_side(cmd, &a->tx, a->src, &m->cfg, 0, m->sv, 0, 0, &src)))
    goto done;
  if ((rc = cli_open_models(cmd, a->device, &a->models, a->precision, m))) goto done;
  seqcl_seqs s = cli_seqs(&src);
  seqcl_decode_options o;
  seqcl_decode_options_init(&o);
  o.max_steps = (int)a->max_steps;
  o.beam = (int)a->beam;
  o.length_penalty = a->lp;
  o.batch_size = (int)a->batch;
  o.want_alignments = (a->metrics & M_ATTENTION) && m->cfg.score != SQ_SCORE_NONE;
  seqcl_model *models[SEQCL_ENSEMBLE_MAX];
  const int count = cli_models_of(m, models);
  if ((st = seqcl_ensemble_decode(models, count, &s, &o, res)) != SEQCL_OK) rc = cli_fail(cmd, st);
  else cli_attn_stats(*res, &src, as);
done:
  sq_seqs_free(&src);
  return rc;
}

/* The work, once the options are parsed and checked. */
static int run(const eval_args *a) {
  int rc = CLI_OK;
  cli_model_run mr = {0};
  sq_wordtab tab = {0};
  sq_seqs hyp = {0}, ref = {0};
  sq_metrics m;
  sq_metrics_init(&m);
  sq_attn_stats as;
  sq_attn_stats_init(&as);
  seqcl_decode_result *res = NULL;
  seqcl_status st = SEQCL_OK;
  const char *hyp_name = a->hyp ? a->hyp : "the decoded --src";
  int fixed_context = 0; /* attention.score "none": nothing to measure */
  if (a->hyp) {
    if ((st = sq_words_read(a->hyp, &tab, &hyp)) != SEQCL_OK ||
        (st = sq_words_read(a->ref, &tab, &ref)) != SEQCL_OK) {
      rc = cli_fail(cmd, st);
      goto done;
    }
  } else {
    if ((rc = cli_read_config(cmd, a->model, &mr.cfg))) goto done;
    fixed_context = mr.cfg.score == SQ_SCORE_NONE;
    if ((rc = cli_text_vocabs(cmd, &a->tx, a->src_vocab, a->tgt_vocab, a->model, &mr.sv, &mr.tv)))
      goto done;
    if ((rc = cli_models_check(cmd, &a->models, &a->tx, a->src_vocab, a->tgt_vocab, &mr.cfg, mr.sv,
                               mr.tv)))
      goto done;
    /* the references before the decoding: a bad file fails at once */
    if ((rc = cli_read_side(cmd, &a->tx, a->ref, &mr.cfg, 1, mr.tv, SQ_TOKENS_EMPTY_OK, 0, &ref)))
      goto done;
    strip_bos_eos(&ref, mr.cfg.bos_id, mr.cfg.eos_id);
    if ((rc = decode(a, &mr, &res, &as))) goto done;
  }
  const size_t nh = res ? res->count : hyp.count;
  if (nh != ref.count) {
    rc = cli_usage_error(cmd, "%s has %zu lines but %s has %zu: lines are compared in order",
                         a->hyp ? a->hyp : a->src, nh, a->ref, ref.count);
    goto done;
  }
  for (size_t i = 0; i < nh && st == SEQCL_OK; i++) {
    const int32_t *h = res ? res->ids + res->offsets[i] : hyp.ids + hyp.offsets[i];
    size_t hn = res ? res->offsets[i + 1] - res->offsets[i] : sq_seq_len(&hyp, i);
    st = sq_metrics_add(&m, h, hn, ref.ids + ref.offsets[i], sq_seq_len(&ref, i));
  }
  if (st != SEQCL_OK) {
    rc = cli_fail(cmd, st);
    goto done;
  }
  if (cli_verbose) fprintf(stderr, "seqcl eval: %s against %s\n", hyp_name, a->ref);
  print_metrics(a, &m, &as, fixed_context);
  if (fflush(stdout) || ferror(stdout)) rc = cli_usage_error(cmd, "writing to standard output failed");
done:
  sq_metrics_free(&m);
  seqcl_decode_result_free(res);
  sq_wordtab_free(&tab);
  sq_seqs_free(&hyp);
  sq_seqs_free(&ref);
  cli_model_run_free(&mr);
  return rc;
}

CLI_COMMAND(cmd_eval, eval_args, parse, run)
