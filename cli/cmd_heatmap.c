/* seqcl heatmap: draws one line of an alignments file (from `decode
 * --alignments` or `forward --out`) in the terminal, and optionally as SVG. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "cli_model.h"
#include "model/heatmap.h"
#include "model/safetensors.h"

static void help(FILE *f) {
  fprintf(f,
          "usage: seqcl heatmap --alignments FILE.safetensors --src FILE [--tgt FILE]\n"
          "                     [--line I] [--svg OUT.svg] [--ascii]\n"
          "                     [--src-vocab F] [--tgt-vocab F]\n\n"
          "Shows the attention of line I (from 1; default 1) of an 'alignments' tensor\n"
          "[N, T, S] as shaded blocks, one row per decoder step, one column per source\n"
          "token; rows after the line's last non-zero row are left out.\n\n"
          "  --alignments FILE  written by `seqcl decode --alignments` or `seqcl forward`\n"
          "  --src FILE         the source lines (column labels)\n"
          "  --tgt FILE         the produced tokens of every line (row labels), e.g. the\n"
          "                     output of `seqcl decode`; rows past the line are 'EOS'.\n"
          "                     Without it rows are numbered.\n"
          "  --line I           which line (default 1)\n"
          "  --svg OUT.svg      also write an SVG picture (temporary file, then renamed)\n"
          "  --ascii            shade with ASCII characters instead of block elements\n"
          "  --src-vocab F, --tgt-vocab F  label tokens with words\n"
          "  -h, --help         this text\n");
}

typedef struct hm_args {
  const char *align, *src, *tgt, *svg, *src_vocab, *tgt_vocab;
  long line;
  int ascii;
} hm_args;

/* The name the messages give. */
static const char cmd[] = "heatmap";

static int parse(int argc, char **argv, hm_args *a) {
  a->line = 1;
  const cli_opt opts[] = {CLI_STR("--alignments", &a->align), CLI_STR("--src", &a->src),
                          CLI_STR("--tgt", &a->tgt), CLI_STR("--svg", &a->svg),
                          CLI_STR("--src-vocab", &a->src_vocab),
                          CLI_STR("--tgt-vocab", &a->tgt_vocab),
                          CLI_NUM("--line", &a->line, 1, 1L << 30),
                          CLI_FLAG("--ascii", &a->ascii), {0}};
  int rc = cli_options(cmd, opts, help, 1, argc, argv, NULL, NULL);
  if (rc) return rc;
  if (!a->align || !a->src)
    return cli_usage_error(cmd, "--alignments and --src are required (see --help)");
  return CLI_OK;
}

static int render(const hm_args *a, const sq_st_file *f, const sq_seqs *src, const sq_seqs *tgt,
                  const sq_vocab *sv, const sq_vocab *tv) {
  const sq_st_tensor *t = sq_st_find(f, "alignments");
  if (!t && sq_st_find(f, "logits"))
    return cli_usage_error(cmd, "%s: no 'alignments' tensor: a `seqcl forward` file without one "
                           "comes from a model with attention.score \"none\", which has no "
                           "alignments to draw", a->align);
  if (!t || t->ndim != 3)
    return cli_usage_error(cmd, "%s: no 'alignments' tensor of shape [N, T, S]", a->align);
  const size_t N = (size_t)t->shape[0], T = (size_t)t->shape[1], S = (size_t)t->shape[2];
  const size_t line = (size_t)a->line - 1;
  /* a source file that does not match the alignments would label the wrong line */
  if (src->count != N)
    return cli_usage_error(cmd, "%s has %zu lines but %s holds %zu: give the source file the "
                           "alignments were made from", a->src, src->count, a->align, N);
  if (tgt && tgt->count != N)
    return cli_usage_error(cmd, "%s has %zu lines but %s holds %zu: give the output of that run",
                           a->tgt, tgt->count, a->align, N);
  if (line >= N || line >= src->count)
    return cli_usage_error(cmd, "--line %ld: %s has %zu lines and %s %zu", a->line, a->align, N,
                           a->src, src->count);
  const size_t cols = sq_seq_len(src, line);
  if (cols > S)
    return cli_usage_error(cmd, "%s:%zu has %zu tokens but the alignments only %zu columns",
                           a->src, line + 1, cols, S);
  float *w = malloc((t->nelem ? t->nelem : 1) * sizeof(float));
  if (!w) return cli_usage_error(cmd, "out of memory");
  sq_st_to_f32(f, t, w);
  const float *rowsp = w + line * T * S;
  size_t rows = 0;
  for (size_t r = 0; r < T; r++)
    for (size_t j = 0; j < S; j++)
      if (rowsp[r * S + j] != 0.0f) rows = r + 1;
  char **labels = calloc(rows + cols + 1, sizeof(char *));
  char buf[32];
  int rc = labels ? CLI_OK : CLI_RUNTIME;
  for (size_t r = 0; labels && r < rows; r++) {
    const char *s;
    if (!tgt)
      snprintf(buf, sizeof buf, "t%zu", r), s = buf;
    else if (line < tgt->count && r < sq_seq_len(tgt, line))
      s = cli_token_label(tv, tgt->ids[tgt->offsets[line] + r], buf, sizeof buf);
    else
      s = "EOS";
    labels[r] = strdup(s);
  }
  for (size_t j = 0; labels && j < cols; j++)
    labels[rows + j] = strdup(cli_token_label(sv, src->ids[src->offsets[line] + j], buf, sizeof buf));
  for (size_t k = 0; labels && k < rows + cols; k++)
    if (!labels[k]) rc = CLI_RUNTIME;
  if (rc == CLI_OK) {
    char title[64];
    snprintf(title, sizeof title, "attention, line %zu", line + 1);
    sq_heatmap h = {rowsp, (int)rows, (int)cols, (int)S, (const char *const *)labels,
                    (const char *const *)labels + rows, title, 0};
    sq_heatmap_text(stdout, &h, !a->ascii);
    if (a->svg) {
      sq_outfile o;
      seqcl_status st = sq_outfile_open(a->svg, &o);
      if (st != SEQCL_OK) {
        rc = cli_fail(cmd, st);
      } else if (sq_heatmap_svg(o.f, &h)) {
        sq_outfile_abort(&o);
        rc = cli_runtime_error(cmd, "%s: write failed", a->svg);
      } else if ((st = sq_outfile_commit(&o)) != SEQCL_OK) {
        rc = cli_fail_output(cmd, st);
      }
    }
  }
  for (size_t k = 0; labels && k < rows + cols; k++) free(labels[k]);
  free(labels);
  free(w);
  return rc;
}

/* The work, once the options are parsed and checked. */
static int run(const hm_args *a) {
  int rc = CLI_OK;
  sq_vocab *sv = NULL, *tv = NULL;
  sq_seqs src = {0}, tgt = {0};
  sq_st_file *f = NULL;
  seqcl_status st;
  if ((rc = cli_check_outputs(cmd, "--svg", a->svg, NULL))) return rc;
  if ((rc = cli_read_vocab(cmd, a->src_vocab, &sv))) goto done;
  if ((rc = cli_read_vocab(cmd, a->tgt_vocab, &tv))) goto done;
  if ((st = sq_st_read(a->align, 0, &f)) != SEQCL_OK) {
    rc = cli_fail(cmd, st);
    goto done;
  }
  if ((st = sq_tokens_read(a->src, 0, sv, &src)) != SEQCL_OK) {
    rc = cli_fail(cmd, st);
    goto done;
  }
  /* --tgt is read as a token file, so a line the decoder left empty (EOS first)
   * cannot be given; without --tgt rows are numbered instead. */
  if (a->tgt && (st = sq_tokens_read(a->tgt, 0, tv, &tgt)) != SEQCL_OK) {
    rc = cli_fail(cmd, st);
    goto done;
  }
  rc = render(a, f, &src, a->tgt ? &tgt : NULL, sv, tv);
done:
  sq_st_free(f);
  sq_seqs_free(&src);
  sq_seqs_free(&tgt);
  sq_vocab_free(sv);
  sq_vocab_free(tv);
  return rc;
}

CLI_COMMAND(cmd_heatmap, hm_args, parse, run)
