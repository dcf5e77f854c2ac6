/* seqcl decode: greedy or beam decoding of a token file (SPEC §4). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "cli_ensemble.h"
#include "cli_model.h"
#include "cli_progress.h"
#include "cli_text.h"
#include "model/heatmap.h"
#include "model/safetensors.h"

static void help(FILE *f) {
  fprintf(f,
          "usage: seqcl decode --model DIR [--model DIR ...] --src FILE [--out FILE]\n"
          "                    [--max-steps N] [--beam K]\n"
          "                    [--length-penalty A] [--nbest N] [--batch-size B]\n"
          "                    [--alignments FILE.safetensors] [--svg OUT.svg [--line I]]\n"
          "                    [--text chars|words|SRC,TGT] [--src-vocab F] [--tgt-vocab F]\n"
          "                    [--precision f32|bf16|f16] [--device SEL]\n\n"
          "Writes one line per source line: the produced ids after BOS and before the first\n"
          "EOS (possibly an empty line).\n\n"
          "  --model DIR            model directory (config.json + model.safetensors);\n"
          "                         given again (up to 16), the models decode together as\n"
          "                         an ensemble: each step chooses by the mean of their\n"
          "                         probabilities (the same vocabularies, BOS and EOS;\n"
          "                         text through the first folder's vocabularies; no\n"
          "                         --alignments, --svg or attention figures)\n"
          "  --src FILE             source lines ('-' = standard input)\n"
          "  --out FILE             output file (default: standard output)\n"
          "  --max-steps N          decoder steps per line, EOS step included\n"
          "                         (default 2 x the longest source line + 10)\n"
          "  --beam K               beam size, 1..16 (default 1 = greedy, run on the device)\n"
          "  --length-penalty A     rank hypotheses by sum log p / L^A (default 0)\n"
          "  --nbest N              print the N best hypotheses of each line (N <= K) as\n"
          "                         'LINE<TAB>SCORE<TAB>tokens', LINE counted from 1\n"
          "  --batch-size B         sentences decoded together (default 64)\n"
          "  --alignments FILE      write 'alignments' [N, T, S] (float32 safetensors);\n"
          "                         rows after a line's EOS are 0\n"
          "  --svg OUT.svg          draw the attention of one line (--line I, from 1;\n"
          "                         default 1) as an SVG heatmap, as `seqcl heatmap` does\n"
          "                         (--heatmap and --heatmap-line are older spellings)\n"
          "  --src-vocab F          read source lines as words (one token per line)\n"
          "  --tgt-vocab F          write output lines as words\n"
          "  --text SPLIT           read --src and write the output as text through the\n"
          "                         model folder's src.vocab and tgt.vocab (--src-vocab/\n"
          "                         --tgt-vocab override): chars (every UTF-8 character a\n"
          "                         token, written without separators; a space is\n"
          "                         <space>), words (single-spaced), or SRC,TGT of those;\n"
          "                         unknown tokens map to the config's unknown id\n"
          "  --precision P          f32 (default), bf16 or f16: every weight rounded to that\n"
          "                         width at load, the products reading 16-bit weights,\n"
          "                         all arithmetic float32 (host path with AVX-512F only)\n"
          "  --device SEL           device (SPEC §3; default SEQCL_DEVICE, else auto)\n"
          "  -h, --help             this text\n\n"
          "Output paths are checked before decoding starts. Nothing is left at a regular\n"
          "--out, --alignments or --svg file when decoding fails (each is written to a\n"
          "temporary file beside it and renamed); a symlink's target is replaced, the\n"
          "link stays; a read-only file is refused. Standard output, a pipe, a FIFO or a\n"
          "device is written in place, each batch's lines as soon as they are final.\n"
          "On a terminal a progress bar shows on stderr (-q: none; -v: also off a terminal).\n"
          "-v also prints the time taken, the mean attention entropy over valid decoder\n"
          "steps (nats, and divided by ln of the line's source length) and the attention\n"
          "invariants: each step's weights sum to 1 (worst |sum - 1|, tolerance 1e-5),\n"
          "padding weights are 0 and every weight is finite.\n"
          "Exit status: 0 success, 1 device/runtime failure, 2 bad usage or input.\n");
}

typedef struct dec_args {
  cli_models models;
  const char *model; /* models.dirs[0] */
  const char *src, *out, *device, *src_vocab, *tgt_vocab, *align, *svg, *text;
  const char *precision;
  cli_text tx;
  const char *svg_name, *line_name; /* the spellings given: --svg/--heatmap, --line/--heatmap-line */
  long max_steps, beam, nbest, batch, line;
  double lp;
  int nbest_given, lp_given, line_given;
} dec_args;

/* The name the messages give. */
static const char cmd[] = "decode";

/* --svg/--line (as in `seqcl heatmap`) under either spelling, kept for the
 * messages: --heatmap/--heatmap-line are the older ones, kept as aliases. */
static int more_option(void *user, int argc, char **argv, int *i) {
  dec_args *a = user;
  const char *o = argv[*i], *v;
  const int r = cli_models_take(cmd, &a->models, argc, argv, i);
  if (r) return r;
  const int svg = !strcmp(o, "--svg") || !strcmp(o, "--heatmap");
  if (!svg && strcmp(o, "--line") && strcmp(o, "--heatmap-line")) return 0;
  if (!(v = cli_value(cmd, argc, argv, i))) return CLI_USAGE;
  if (svg) {
    a->svg = v, a->svg_name = o;
  } else {
    if (cli_long(cmd, o, v, 1, 1L << 30, &a->line)) return CLI_USAGE;
    a->line_given = 1, a->line_name = o;
  }
  return CLI_TAKEN;
}

static int parse(int argc, char **argv, dec_args *a) {
  a->beam = 1;
  a->line = 1;
  const cli_opt opts[] = {CLI_STR("--src", &a->src),
                          CLI_STR("--out", &a->out), CLI_STR("--device", &a->device),
                          CLI_STR("--precision", &a->precision),
                          CLI_STR("--src-vocab", &a->src_vocab),
                          CLI_STR("--tgt-vocab", &a->tgt_vocab),
                          CLI_STR("--alignments", &a->align), CLI_STR("--text", &a->text),
                          CLI_NUM("--max-steps", &a->max_steps, 1, 1000000),
                          CLI_NUM("--beam", &a->beam, 1, 16),
                          CLI_NUM_SEEN("--nbest", &a->nbest, 1, 1L << 30, &a->nbest_given),
                          CLI_NUM("--batch-size", &a->batch, 1, 1L << 30),
                          CLI_DBL_SEEN("--length-penalty", &a->lp, CLI_ANY_NUMBER, &a->lp_given),
                          {0}};
  int rc = cli_options(cmd, opts, help, 1, argc, argv, more_option, a);
  if (rc) return rc;
  a->model = a->models.dirs[0];
  if (!a->model || !a->src) return cli_usage_error(cmd, "--model and --src are required (see --help)");
  if (cli_text_parse(cmd, a->text, &a->tx)) return CLI_USAGE;
  if (a->nbest > a->beam)
    return cli_usage_error(cmd, "--nbest %ld is larger than --beam %ld", a->nbest, a->beam);
  /* options that would change nothing are mistakes, not no-ops */
  if (a->lp_given && a->beam == 1 && !a->nbest_given)
    return cli_usage_error(cmd,
                           "--length-penalty only ranks beam hypotheses; with --beam 1 (greedy) "
                           "it would be ignored: give --beam K > 1");
  if (a->models.count > 1 && (a->align || a->svg))
    return cli_usage_error(cmd, "%s: an ensemble of %d models has one attention per model; "
                           "decode with one --model for alignments",
                           a->align ? "--alignments" : a->svg_name, a->models.count);
  if (a->line_given && !a->svg)
    return cli_usage_error(cmd, "%s chooses the line %s draws; give %s too", a->line_name,
                           strcmp(a->line_name, "--line") ? "--heatmap" : "--svg",
                           strcmp(a->line_name, "--line") ? "--heatmap OUT.svg" : "--svg OUT.svg");
  return CLI_OK;
}

/* Lines [first, first + n): the best hypothesis of each, or with --nbest
 * every kept one as LINE<TAB>SCORE<TAB>tokens. */
static int write_lines(FILE *f, const dec_args *a, size_t first, size_t n,
                       const seqcl_hypothesis *hyps, const int *counts, int nbest,
                       const sq_vocab *tv) {
  for (size_t i = 0; i < n; i++) {
    for (int k = 0; k < (a->nbest_given ? counts[i] : 1); k++) {
      const seqcl_hypothesis *h = &hyps[i * (size_t)nbest + k];
      if (a->nbest_given) fprintf(f, "%zu\t%.6f\t", first + i + 1, h->score);
      if (cli_write_side(f, &a->tx, h->ids, h->len, tv)) return -1;
    }
  }
  return ferror(f) ? -1 : 0;
}

/* Standard output and pipes get each batch as soon as it is final. */
typedef struct streamer {
  FILE *f;
  const dec_args *a;
  const sq_vocab *tv;
  int failed;
} streamer;

static int on_lines(void *user, size_t first, size_t n, const seqcl_hypothesis *hyps,
                    const int *counts, int nbest) {
  streamer *w = user;
  if (write_lines(w->f, w->a, first, n, hyps, counts, nbest, w->tv) || fflush(w->f)) {
    w->failed = 1;
    return 1;
  }
  return 0;
}

/* Regular files are written whole at the end (temporary file, then rename);
 * anything else (a terminal, a pipe, a FIFO, a device) is streamed. */
static int streams(const char *out) {
  struct stat sb;
  return !out || !strcmp(out, "-") || (stat(out, &sb) == 0 && !S_ISREG(sb.st_mode));
}

static seqcl_status write_alignments(const char *path, const seqcl_decode_result *r) {
  const sq_st_out t = sq_st_out3("alignments", (int64_t)r->count, r->T, r->S, r->alignments);
  return sq_st_write(path, &t, 1);
}

/* The heatmap of line `line` (0-based): rows are the produced tokens with the
 * EOS step, columns the source tokens. */
static int draw_heatmap(FILE *f, const seqcl_decode_result *r, size_t line, const sq_seqs *src,
                        const sq_vocab *sv, const sq_vocab *tv, int eos, int utf8, int svg) {
  const int rows = r->steps[line], cols = (int)sq_seq_len(src, line);
  char **labels = calloc((size_t)(rows + cols) + 1, sizeof(char *));
  if (!labels) return -1;
  char buf[32];
  for (int t = 0; t < rows; t++) {
    int32_t id = (size_t)t < r->offsets[line + 1] - r->offsets[line] ? r->ids[r->offsets[line] + t]
                                                                     : eos;
    labels[t] = strdup(cli_token_label(tv, id, buf, sizeof buf));
  }
  for (int j = 0; j < cols; j++)
    labels[rows + j] = strdup(cli_token_label(sv, src->ids[src->offsets[line] + j], buf, sizeof buf));
  int bad = 0;
  for (int k = 0; k < rows + cols; k++) bad |= labels[k] == NULL;
  char title[64];
  snprintf(title, sizeof title, "attention, line %zu", line + 1);
  sq_heatmap h = {r->alignments + line * (size_t)r->T * r->S, rows, cols, r->S,
                  (const char *const *)labels, (const char *const *)labels + rows, title, 0};
  int rc = bad ? -1 : svg ? sq_heatmap_svg(f, &h) : sq_heatmap_text(f, &h, utf8);
  for (int k = 0; k < rows + cols; k++) free(labels[k]);
  free(labels);
  return rc;
}

static int longest_line(const sq_seqs *s) {
  size_t m = 0;
  for (size_t i = 0; i < s->count; i++)
    if (sq_seq_len(s, i) > m) m = sq_seq_len(s, i);
  return (int)m;
}

static seqcl_decode_options options_of(const dec_args *a) {
  seqcl_decode_options o;
  seqcl_decode_options_init(&o);
  o.max_steps = (int)a->max_steps;
  o.beam = (int)a->beam;
  o.length_penalty = a->lp;
  o.nbest = a->nbest_given ? (int)a->nbest : 0;
  o.batch_size = (int)a->batch;
  /* -v reports the attention's entropy and invariants, so it needs them too */
  o.want_alignments = a->align || a->svg || cli_verbose;
  return o;
}

/* The work, once the options are parsed and checked. */
static int run(const dec_args *a) {
  int rc = CLI_OK;
  cli_model_run m = {0};
  sq_seqs src = {0};
  seqcl_decode_result *res = NULL;
  sq_outfile out = {0}, heat = {0};
  int out_open = 0, heat_open = 0, align_written = 0;
  seqcl_status st;
  /* every output path first: a bad one fails now, not after the decoding */
  if ((rc = cli_check_outputs(cmd, "--out", a->out, "--alignments", a->align,
                              a->svg_name ? a->svg_name : "--svg", a->svg, NULL)))
    return rc;
  if ((rc = cli_read_config(cmd, a->model, &m.cfg))) goto done;
  if (m.cfg.score == SQ_SCORE_NONE && (a->align || a->svg)) {
    rc = cli_usage_error(cmd, "%s: %s/config.json has attention.score \"none\" (a fixed context): "
                         "the model has no alignments to write or draw",
                         a->align ? "--alignments" : a->svg_name ? a->svg_name : "--svg", a->model);
    goto done;
  }
  if ((rc = cli_text_vocabs(cmd, &a->tx, a->src_vocab, a->tgt_vocab, a->model, &m.sv, &m.tv)))
    goto done;
  if ((rc = cli_models_check(cmd, &a->models, &a->tx, a->src_vocab, a->tgt_vocab, &m.cfg, m.sv,
                             m.tv)))
    goto done;
  if ((rc = cli_read_side(cmd, &a->tx, a->src, &m.cfg, 0, m.sv, 0, 0, &src))) goto done;
  if (a->svg && (size_t)a->line > src.count) {
    rc = cli_usage_error(cmd, "%s %ld: %s has only %zu lines", a->line_name ? a->line_name : "--line",
                         a->line, a->src, src.count);
    goto done;
  }
  if ((rc = cli_open_models(cmd, a->device, &a->models, a->precision, &m))) goto done;
  seqcl_seqs s = cli_seqs(&src);
  seqcl_decode_options o = options_of(a);
  /* -v alone asks for no alignments a fixed-context model or an ensemble does not have */
  if (m.cfg.score == SQ_SCORE_NONE || m.count) o.want_alignments = a->align || a->svg;
  streamer w = {NULL, a, m.tv, 0};
  if (streams(a->out)) {
    w.f = !a->out || !strcmp(a->out, "-") ? stdout : fopen(a->out, "w");
    if (!w.f) {
      rc = cli_usage_error(cmd, "%s: cannot open for writing: %s", a->out, strerror(errno));
      goto done;
    }
    o.on_lines = on_lines;
    o.user = &w;
  }
  cli_progress bar;
  cli_progress_start(&bar, cmd, "lines");
  seqcl_model_set_progress(m.model, cli_progress_update, &bar);
  cli_interrupt_install();
  seqcl_model *models[SEQCL_ENSEMBLE_MAX];
  const int count = cli_models_of(&m, models);
  st = seqcl_ensemble_decode(models, count, &s, &o, &res);
  cli_progress_end(&bar);
  if (w.f && w.f != stdout) fclose(w.f);
  if (cli_stopped_by_sigint(st)) {
    fprintf(stderr, "seqcl decode: interrupted after %zu of %zu lines%s\n", bar.done, src.count,
            w.f ? " (those lines were written)" : "; nothing written");
    rc = CLI_INTERRUPTED;
    goto done;
  }
  if (w.failed) {
    rc = cli_runtime_error(cmd, "%s: write failed: %s", a->out ? a->out : "standard output",
                           strerror(errno));
    goto done;
  }
  if (st != SEQCL_OK) {
    rc = cli_fail_memory(cmd, st,
                         " (%zu lines, batch %d, beam %d, max steps %d%s: lower --batch-size, "
                         "--beam or --max-steps)",
                         src.count, o.batch_size ? o.batch_size : 64, o.beam,
                         o.max_steps ? o.max_steps : 2 * longest_line(&src) + 10,
                         o.want_alignments ? ", with alignments" : "");
    goto done;
  }
  if (cli_verbose) {
    const double sec = cli_now() - bar.t0;
    fprintf(stderr, "seqcl decode: %zu lines in %.3f s (%.1f sentences/s), beam %d, batch %d\n",
            res->count, sec, (double)res->count / sec, o.beam, o.batch_size ? o.batch_size : 64);
    sq_attn_stats as;
    cli_attn_stats(res, &src, &as);
    if (res->alignments)
      cli_attn_stats_print(stderr, "seqcl decode: attention ", &as);
    else if (count > 1)
      fprintf(stderr, "seqcl decode: attention: n/a (an ensemble of %d models)\n", count);
    else
      cli_attn_stats_print_none(stderr, "seqcl decode: attention ");
  }
  /* Outputs go to temporary files first; they are renamed into place only when
   * every one of them was written. */
  if (!w.f) {
    if ((st = sq_outfile_open(a->out, &out)) != SEQCL_OK) {
      rc = cli_fail(cmd, st);
      goto done;
    }
    out_open = 1;
    if (write_lines(out.f, a, 0, res->count, res->hyps, res->hyp_counts, res->nbest, m.tv)) {
      rc = cli_fail(cmd, SEQCL_ERR_IO);
      goto done;
    }
  }
  if (a->svg) {
    if ((st = sq_outfile_open(a->svg, &heat)) != SEQCL_OK) {
      rc = cli_fail(cmd, st);
      goto done;
    }
    heat_open = 1;
    if (draw_heatmap(heat.f, res, (size_t)a->line - 1, &src, m.sv, m.tv, m.cfg.eos_id, 0, 1)) {
      rc = cli_runtime_error(cmd, "%s: could not write the heatmap", a->svg);
      goto done;
    }
  }
  if (a->align) {
    if ((st = write_alignments(a->align, res)) != SEQCL_OK) {
      rc = cli_fail_output(cmd, st);
      goto done;
    }
    align_written = 1;
  }
  if (heat_open) {
    heat_open = 0;
    if ((st = sq_outfile_commit(&heat)) != SEQCL_OK) {
      rc = cli_fail_output(cmd, st);
      goto done;
    }
  }
  if (out_open) {
    out_open = 0;
    if ((st = sq_outfile_commit(&out)) != SEQCL_OK) {
      rc = cli_fail_output(cmd, st);
      if (a->svg) sq_output_remove(a->svg);
      goto done;
    }
  }
  if (cli_verbose && a->svg) {
    const char *lang = getenv("LANG");
    draw_heatmap(stderr, res, (size_t)a->line - 1, &src, m.sv, m.tv, m.cfg.eos_id,
                 lang && strstr(lang, "UTF-8"), 0);
  }
  rc = CLI_OK;
done:
  if (rc != CLI_OK && align_written) sq_output_remove(a->align);
  if (heat_open) sq_outfile_abort(&heat);
  if (out_open) sq_outfile_abort(&out);
  seqcl_decode_result_free(res);
  cli_model_run_free(&m);
  sq_seqs_free(&src);
  return rc;
}

CLI_COMMAND(cmd_decode, dec_args, parse, run)
