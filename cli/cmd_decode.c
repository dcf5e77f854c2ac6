/* seqcl decode: greedy or beam decoding of a token file (SPEC §4). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "cli_model.h"
#include "model/heatmap.h"
#include "model/safetensors.h"

static void help(FILE *f) {
  fprintf(f,
          "usage: seqcl decode --model DIR --src FILE [--out FILE] [--max-steps N] [--beam K]\n"
          "                    [--length-penalty A] [--nbest N] [--batch-size B]\n"
          "                    [--alignments FILE.safetensors] [--heatmap OUT.svg [--heatmap-line I]]\n"
          "                    [--src-vocab F] [--tgt-vocab F] [--device SEL]\n\n"
          "Writes one line per source line: the produced ids after BOS and before the first\n"
          "EOS (possibly an empty line).\n\n"
          "  --model DIR            model directory (config.json + model.safetensors)\n"
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
          "  --heatmap OUT.svg      draw the attention of one line (--heatmap-line I, from 1;\n"
          "                         default 1) as an SVG heatmap\n"
          "  --src-vocab F          read source lines as words (one token per line)\n"
          "  --tgt-vocab F          write output lines as words\n"
          "  --device SEL           device (SPEC §3; default SEQCL_DEVICE, else auto)\n"
          "  -h, --help             this text\n\n"
          "Output paths are checked before decoding starts. Nothing is left at a regular\n"
          "--out, --alignments or --heatmap file when decoding fails (each is written to\n"
          "a temporary file beside it and renamed); a symlink's target is replaced, the\n"
          "link stays; a FIFO or device is written in place; a read-only file is refused.\n"
          "Exit status: 0 success, 1 device/runtime failure, 2 bad usage or input.\n");
}

typedef struct dec_args {
  const char *model, *src, *out, *device, *src_vocab, *tgt_vocab, *align, *heatmap;
  long max_steps, beam, nbest, batch, heat_line;
  double lp;
  int nbest_given;
} dec_args;

static int parse(int argc, char **argv, dec_args *a) {
  static const char cmd[] = "decode";
  memset(a, 0, sizeof *a);
  a->beam = 1;
  a->heat_line = 1;
  for (int i = 1; i < argc; i++) {
    const char *o = argv[i], *v = NULL;
    if (cli_is_help(o)) {
      help(stdout);
      return -1;
    }
    const char **slot = !strcmp(o, "--model")        ? &a->model
                        : !strcmp(o, "--src")        ? &a->src
                        : !strcmp(o, "--out")        ? &a->out
                        : !strcmp(o, "--device")     ? &a->device
                        : !strcmp(o, "--src-vocab")  ? &a->src_vocab
                        : !strcmp(o, "--tgt-vocab")  ? &a->tgt_vocab
                        : !strcmp(o, "--alignments") ? &a->align
                        : !strcmp(o, "--heatmap")    ? &a->heatmap
                                                     : NULL;
    long *num = !strcmp(o, "--max-steps")      ? &a->max_steps
                : !strcmp(o, "--beam")         ? &a->beam
                : !strcmp(o, "--nbest")        ? &a->nbest
                : !strcmp(o, "--batch-size")   ? &a->batch
                : !strcmp(o, "--heatmap-line") ? &a->heat_line
                                               : NULL;
    if (slot) {
      if (!(v = cli_value(cmd, argc, argv, &i))) return CLI_USAGE;
      *slot = v;
    } else if (num) {
      if (!(v = cli_value(cmd, argc, argv, &i))) return CLI_USAGE;
      long max = num == &a->beam ? 16 : num == &a->max_steps ? 1000000 : 1L << 30;
      if (cli_parse_int(v, 1, max, num))
        return cli_usage_error(cmd, "%s '%s' is not an integer in [1, %ld]", o, v, max);
      if (num == &a->nbest) a->nbest_given = 1;
    } else if (!strcmp(o, "--length-penalty")) {
      if (!(v = cli_value(cmd, argc, argv, &i))) return CLI_USAGE;
      if (cli_parse_float(v, &a->lp))
        return cli_usage_error(cmd, "--length-penalty '%s' is not a number", v);
    } else if (!strcmp(o, "-v") || !strcmp(o, "--verbose")) {
      cli_verbose = 1;
    } else {
      return cli_usage_error(cmd, "unknown option '%s' (see seqcl decode --help)", o);
    }
  }
  if (!a->model || !a->src) return cli_usage_error(cmd, "--model and --src are required (see --help)");
  if (a->nbest > a->beam)
    return cli_usage_error(cmd, "--nbest %ld is larger than --beam %ld", a->nbest, a->beam);
  return CLI_OK;
}

static int write_lines(FILE *f, const dec_args *a, const seqcl_decode_result *r,
                       const sq_vocab *tv) {
  for (size_t i = 0; i < r->count; i++) {
    if (!a->nbest_given) {
      if (sq_tokens_write_line(f, r->ids + r->offsets[i], r->offsets[i + 1] - r->offsets[i], tv))
        return -1;
      continue;
    }
    for (int k = 0; k < r->hyp_counts[i]; k++) {
      const seqcl_hypothesis *h = &r->hyps[i * (size_t)r->nbest + k];
      fprintf(f, "%zu\t%.6f\t", i + 1, h->score);
      if (sq_tokens_write_line(f, h->ids, h->len, tv)) return -1;
    }
  }
  return ferror(f) ? -1 : 0;
}

static seqcl_status write_alignments(const char *path, const seqcl_decode_result *r) {
  sq_st_out t;
  memset(&t, 0, sizeof t);
  t.name = "alignments";
  t.ndim = 3;
  t.shape[0] = (int64_t)r->count;
  t.shape[1] = r->T;
  t.shape[2] = r->S;
  t.data = r->alignments;
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
                  (const char *const *)labels, (const char *const *)labels + rows, title};
  int rc = bad ? -1 : svg ? sq_heatmap_svg(f, &h) : sq_heatmap_text(f, &h, utf8);
  for (int k = 0; k < rows + cols; k++) free(labels[k]);
  free(labels);
  return rc;
}

static seqcl_decode_options options_of(const dec_args *a) {
  seqcl_decode_options o;
  seqcl_decode_options_init(&o);
  o.max_steps = (int)a->max_steps;
  o.beam = (int)a->beam;
  o.length_penalty = a->lp;
  o.nbest = a->nbest_given ? (int)a->nbest : 0;
  o.batch_size = (int)a->batch;
  o.want_alignments = a->align || a->heatmap;
  return o;
}

int cmd_decode(int argc, char **argv) {
  static const char cmd[] = "decode";
  dec_args a;
  int rc = parse(argc, argv, &a);
  if (rc) return rc < 0 ? CLI_OK : rc;
  sq_config cfg;
  sq_vocab *sv = NULL, *tv = NULL;
  sq_seqs src = {0};
  seqcl_ctx *ctx = NULL;
  seqcl_model *model = NULL;
  seqcl_decode_result *res = NULL;
  sq_outfile out = {0}, heat = {0};
  int out_open = 0, heat_open = 0, align_written = 0;
  seqcl_status st;
  /* every output path first: a bad one fails now, not after the decoding */
  if ((rc = cli_check_outputs(cmd, "--out", a.out, "--alignments", a.align, "--heatmap",
                              a.heatmap, NULL)))
    return rc;
  if ((rc = cli_read_config(cmd, a.model, &cfg))) goto done;
  if ((rc = cli_read_vocab(cmd, a.src_vocab, &sv))) goto done;
  if ((rc = cli_read_vocab(cmd, a.tgt_vocab, &tv))) goto done;
  if ((st = sq_tokens_read(a.src, cfg.src_vocab, sv, &src)) != SEQCL_OK) {
    rc = cli_fail(cmd, st);
    goto done;
  }
  if (a.heatmap && (size_t)a.heat_line > src.count) {
    rc = cli_usage_error(cmd, "--heatmap-line %ld: %s has only %zu lines", a.heat_line, a.src,
                         src.count);
    goto done;
  }
  if ((rc = cli_open_model(cmd, a.device, a.model, &ctx, &model))) goto done;
  seqcl_seqs s = cli_seqs(&src);
  seqcl_decode_options o = options_of(&a);
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  if ((st = seqcl_model_decode(model, &s, &o, &res)) != SEQCL_OK) {
    rc = cli_fail(cmd, st);
    goto done;
  }
  clock_gettime(CLOCK_MONOTONIC, &t1);
  if (cli_verbose) {
    const double sec = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
    fprintf(stderr, "seqcl decode: %zu lines in %.3f s (%.1f sentences/s), beam %d, batch %d\n",
            res->count, sec, (double)res->count / sec, o.beam, o.batch_size ? o.batch_size : 64);
  }
  /* Outputs go to temporary files first; they are renamed into place only when
   * every one of them was written. */
  if ((st = sq_outfile_open(a.out ? a.out : "-", &out)) != SEQCL_OK) {
    rc = cli_fail(cmd, st);
    goto done;
  }
  out_open = 1;
  if (write_lines(out.f, &a, res, tv)) {
    rc = cli_fail(cmd, SEQCL_ERR_IO);
    goto done;
  }
  if (a.heatmap) {
    if ((st = sq_outfile_open(a.heatmap, &heat)) != SEQCL_OK) {
      rc = cli_fail(cmd, st);
      goto done;
    }
    heat_open = 1;
    if (draw_heatmap(heat.f, res, (size_t)a.heat_line - 1, &src, sv, tv, cfg.eos_id, 0, 1)) {
      rc = cli_usage_error(cmd, "%s: could not write the heatmap", a.heatmap);
      rc = CLI_RUNTIME;
      goto done;
    }
  }
  if (a.align) {
    if ((st = write_alignments(a.align, res)) != SEQCL_OK) {
      rc = cli_fail(cmd, st);
      goto done;
    }
    align_written = 1;
  }
  if (heat_open) {
    heat_open = 0;
    if ((st = sq_outfile_commit(&heat)) != SEQCL_OK) {
      rc = cli_fail(cmd, st);
      goto done;
    }
  }
  out_open = 0;
  if ((st = sq_outfile_commit(&out)) != SEQCL_OK) {
    rc = cli_fail(cmd, st);
    if (a.heatmap) sq_output_remove(a.heatmap);
    goto done;
  }
  if (cli_verbose && a.heatmap) {
    const char *lang = getenv("LANG");
    draw_heatmap(stderr, res, (size_t)a.heat_line - 1, &src, sv, tv, cfg.eos_id,
                 lang && strstr(lang, "UTF-8"), 0);
  }
  rc = CLI_OK;
done:
  if (rc != CLI_OK && align_written) sq_output_remove(a.align);
  if (heat_open) sq_outfile_abort(&heat);
  if (out_open) sq_outfile_abort(&out);
  seqcl_decode_result_free(res);
  seqcl_model_free(model);
  seqcl_ctx_close(ctx);
  sq_seqs_free(&src);
  sq_vocab_free(sv);
  sq_vocab_free(tv);
  return rc;
}
