/* seqcl forward: teacher forcing over a source/target file pair (SPEC §4). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "cli_model.h"
#include "cli_progress.h"
#include "cli_text.h"
#include "model/safetensors.h"

static void help(FILE *f) {
  fprintf(f,
          "usage: seqcl forward --model DIR --src FILE --tgt FILE --out FILE.safetensors\n"
          "                     [--batch-size B] [--device SEL] [--src-vocab F] [--tgt-vocab F]\n"
          "                     [--text chars|words|SRC,TGT] [--precision f32|bf16|f16]\n\n"
          "Teacher-forced forward pass over every line pair: the decoder reads the target\n"
          "line's tokens y_0 .. y_{L-1} (y_0 = BOS) and is scored against y_1 .. y_L.\n"
          "Writes, all float32:\n"
          "  logits      [N, T, V_tgt]  (N lines, T = longest target line - 1)\n"
          "  alignments  [N, T, S]      (S = longest source line; not written for a model\n"
          "                             with attention.score \"none\", which has none)\n"
          "  loss        []             mean cross-entropy over every label\n"
          "Entries past a line's own end are 0.\n\n"
          "  --model DIR       model directory (config.json + model.safetensors)\n"
          "  --src FILE        source lines ('-' = standard input)\n"
          "  --tgt FILE        target lines, BOS first; each needs BOS plus at least one token\n"
          "  --out FILE        output .safetensors (checked first; a regular file is written\n"
          "                    to a temporary file beside it, then renamed)\n"
          "  --batch-size B    lines per device batch (default: all at once); only splits work\n"
          "  --src-vocab F     read source lines as words (one token per line, id = line - 1)\n"
          "  --tgt-vocab F     read target lines as words\n"
          "  --text SPLIT      read --src and --tgt as text through the model folder's\n"
          "                    src.vocab and tgt.vocab (--src-vocab/--tgt-vocab override):\n"
          "                    chars, words or SRC,TGT; target lines then hold the tokens\n"
          "                    only (BOS and EOS are added)\n"
          "  --precision P     f32 (default), bf16 or f16: every weight rounded to that width\n"
          "                    at load, the products reading 16-bit weights, all arithmetic\n"
          "                    float32 (host path with AVX-512F only)\n"
          "  --device SEL      device (SPEC §3; default SEQCL_DEVICE, else auto)\n"
          "  -q, --quiet       no progress bar (shown on a terminal for runs over a second)\n"
          "  -h, --help        this text\n\n"
          "Exit status: 0 success, 1 device/runtime failure, 2 bad usage or input.\n");
}

typedef struct fw_args {
  const char *model, *src, *tgt, *out, *device, *src_vocab, *tgt_vocab, *text, *precision;
  long batch;
  cli_text tx;
} fw_args;

/* The name the messages give. */
static const char cmd[] = "forward";

static int parse(int argc, char **argv, fw_args *a) {
  const cli_opt opts[] = {CLI_STR("--model", &a->model), CLI_STR("--src", &a->src),
                          CLI_STR("--tgt", &a->tgt), CLI_STR("--out", &a->out),
                          CLI_STR("--device", &a->device), CLI_STR("--src-vocab", &a->src_vocab),
                          CLI_STR("--tgt-vocab", &a->tgt_vocab), CLI_STR("--text", &a->text),
                          CLI_STR("--precision", &a->precision),
                          CLI_NUM("--batch-size", &a->batch, 1, 1L << 30), {0}};
  int rc = cli_options(cmd, opts, help, 1, argc, argv, NULL, NULL);
  if (rc) return rc;
  if (!a->model || !a->src || !a->tgt || !a->out)
    return cli_usage_error(cmd, "--model, --src, --tgt and --out are required (see --help)");
  if (cli_text_parse(cmd, a->text, &a->tx)) return CLI_USAGE;
  if (!strcmp(a->src, "-") && !strcmp(a->tgt, "-"))
    return cli_usage_error(cmd, "--src and --tgt cannot both read standard input");
  return CLI_OK;
}

/* Target lines need BOS first (as training does) and at least one label; the
 * two files pair up line by line. The first bad line is the one named. */
static int check_pairs(const fw_args *a, const sq_seqs *src, const sq_seqs *tgt, int bos) {
  if (src->count != tgt->count)
    return cli_usage_error(cmd, "%s has %zu lines but %s has %zu; they must pair up",
                           a->src, src->count, a->tgt, tgt->count);
  for (size_t i = 0; i < tgt->count; i++) {
    if (sq_seq_len(tgt, i) > 0 && tgt->ids[tgt->offsets[i]] != bos)
      return cli_usage_error(cmd,
                             "%s:%zu: a target line starts with BOS (id %d), not %d: the decoder "
                             "reads it as its first input",
                             a->tgt, i + 1, bos, (int)tgt->ids[tgt->offsets[i]]);
    if (sq_seq_len(tgt, i) < 2)
      return cli_usage_error(cmd,
                             "%s:%zu: a target line needs BOS and at least one more token",
                             a->tgt, i + 1);
  }
  return CLI_OK;
}

static int write_result(const char *path, const seqcl_forward_result *r) {
  sq_st_out t[3] = {sq_st_out3("logits", (int64_t)r->N, r->T, r->V, r->logits),
                    sq_st_out3("alignments", (int64_t)r->N, r->T, r->S, r->alignments),
                    sq_st_scalar("loss", &r->loss)};
  /* score "none": no alignments (SPEC §4), so the file holds logits and loss */
  if (!r->alignments) t[1] = t[2];
  seqcl_status st = sq_st_write(path, t, r->alignments ? 3 : 2);
  return st == SEQCL_OK ? CLI_OK : cli_fail_output(cmd, st);
}

/* The work, once the options are parsed and checked. */
static int run(const fw_args *a) {
  int rc = CLI_OK;
  cli_model_run m = {0};
  sq_seqs src = {0}, tgt = {0};
  seqcl_forward_result *res = NULL;
  seqcl_status st;
  /* Everything the user gave is read and checked before a device is opened. */
  if ((rc = cli_check_outputs(cmd, "--out", a->out, NULL))) return rc;
  if ((rc = cli_read_config(cmd, a->model, &m.cfg))) goto done;
  if ((rc = cli_text_vocabs(cmd, &a->tx, a->src_vocab, a->tgt_vocab, a->model, &m.sv, &m.tv)))
    goto done;
  if ((rc = cli_read_side(cmd, &a->tx, a->src, &m.cfg, 0, m.sv, 0, 0, &src))) goto done;
  if ((rc = cli_read_side(cmd, &a->tx, a->tgt, &m.cfg, 1, m.tv, 0, 1, &tgt))) goto done;
  if ((rc = check_pairs(a, &src, &tgt, m.cfg.bos_id))) goto done;
  if ((rc = cli_open_model(cmd, a->device, a->model, a->precision, &m.ctx, &m.model))) goto done;
  seqcl_seqs s = cli_seqs(&src), t = cli_seqs(&tgt);
  cli_progress bar;
  cli_progress_start(&bar, cmd, "lines");
  seqcl_model_set_progress(m.model, cli_progress_update, &bar);
  cli_interrupt_install();
  st = seqcl_model_forward(m.model, &s, &t, (int)a->batch, &res);
  cli_progress_end(&bar);
  if (cli_stopped_by_sigint(st)) {
    fprintf(stderr, "seqcl forward: interrupted; nothing written\n");
    rc = CLI_INTERRUPTED;
    goto done;
  }
  if (st != SEQCL_OK) {
    rc = cli_fail_memory(cmd, st,
                         " (%zu lines, batch %s%ld: the result alone is lines x steps x target "
                         "vocabulary floats; lower --batch-size, or split the files)",
                         src.count, a->batch ? "" : "all = ",
                         a->batch ? a->batch : (long)src.count);
    goto done;
  }
  rc = write_result(a->out, res);
  if (rc == CLI_OK && cli_verbose)
    fprintf(stderr, "seqcl forward: %zu lines, %zu labels, loss %.6f\n", res->N, res->labels,
            (double)res->loss);
done:
  seqcl_forward_result_free(res);
  cli_model_run_free(&m);
  sq_seqs_free(&src);
  sq_seqs_free(&tgt);
  return rc;
}

CLI_COMMAND(cmd_forward, fw_args, parse, run)
