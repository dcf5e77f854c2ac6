/* seqcl demo: trains the digit-reversal model on the default device, reports
 * its accuracy, decodes a few examples and shows their attention matrices (for
 * reversal the alignment is the anti-diagonal: output step t looks at source
 * position S-1-t), in the terminal and as an SVG picture. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "cli_progress.h"
#include "model/config.h" /* the score names (sq_score_parse) */
#include "model/heatmap.h"
#include "model/tokens.h"
#include "train/save_dir.h"

#include <seqcl/train.h>

#define EXAMPLES 3
#define LENGTH 6

static void demo_help(FILE *f) {
  fprintf(f,
          "usage: seqcl demo [--device SEL] [--score additive|general|dot|scaled_dot]\n"
          "                  [--steps 1200] [--seed 0] [--save DIR [--overwrite]] [--svg FILE]\n\n"
          "Trains an attention GRU model to reverse 6 digits (as `seqcl train --task\n"
          "reverse`) on the default device (a GPU if there is one, else the host path),\n"
          "prints its greedy accuracy on 256 held-out samples, decodes %d examples and\n"
          "shows where the decoder looked: each row of a matrix is an output step, each\n"
          "column a source digit; reversal learns the anti-diagonal. The first matrix is\n"
          "also written as an SVG picture (--svg, default demo-attention.svg). --save DIR\n"
          "keeps the trained model for `seqcl decode` (a new or empty folder; --overwrite\n"
          "replaces an existing model folder whole). Output paths are checked first.\n",
          EXAMPLES);
}

typedef struct bar {
  int tty;
  double t0, last;
} bar;

static int on_step(void *user, int step, int steps, float loss) {
  bar *b = user;
  if (cli_interrupted()) return 1;
  double t = cli_now();
  if (cli_quiet || (step != steps && t - b->last < (b->tty ? 0.1 : 5.0))) return 0;
  b->last = t;
  char cells[CLI_BAR_WIDTH + 1];
  cli_bar_cells(cells, step, steps);
  fprintf(stderr, "%s[%s] %4d/%d  loss %.4f  %.1f s", b->tty ? "\r" : "", cells, step, steps,
          (double)loss, t - b->t0);
  if (step == steps || !b->tty) fputc('\n', stderr);
  fflush(stderr);
  return 0;
}

static int utf8_terminal(void) {
  const char *vars[] = {"LC_ALL", "LC_CTYPE", "LANG"};
  for (int i = 0; i < 3; i++) {
    const char *v = getenv(vars[i]);
    if (v && *v) return strstr(v, "UTF-8") || strstr(v, "utf8") || strstr(v, "UTF8");
  }
  return 0;
}

/* Removes the temporary model folder: the model, the checkpoint the training
 * left beside it, then the folder. */
static void remove_model_dir(const char *dir) {
  static const char *const files[] = {
      "checkpoint/config.json", "checkpoint/model.safetensors", "checkpoint/optimizer.safetensors",
      "checkpoint/training.json", "checkpoint", "config.json", "model.safetensors"};
  char p[600];
  for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
    snprintf(p, sizeof p, "%s/%s", dir, files[i]);
    if (unlink(p) != 0) rmdir(p);
  }
  rmdir(dir);
}

static void print_ids(const char *label, const int32_t *ids, size_t n) {
  printf("  %-7s", label);
  for (size_t i = 0; i < n; i++) printf(" %d", ids[i]);
  printf("\n");
}

static int show_examples(seqcl_ctx *ctx, const char *dir, unsigned long long seed,
                         const char *svg_path) {
  const char *cmd = "demo";
  seqcl_model *model = NULL;
  seqcl_status st = seqcl_model_load(ctx, dir, &model);
  if (st != SEQCL_OK) return cli_fail(cmd, st);
  int32_t ids[EXAMPLES * LENGTH];
  size_t offsets[EXAMPLES + 1];
  srand((unsigned)(seed * 2654435761u + 12345u)); /* examples differ from the training data */
  for (int i = 0; i < EXAMPLES * LENGTH; i++) ids[i] = rand() % 10;
  for (int i = 0; i <= EXAMPLES; i++) offsets[i] = (size_t)i * LENGTH;
  seqcl_seqs src = {EXAMPLES, ids, offsets};
  seqcl_decode_options opts;
  seqcl_decode_options_init(&opts);
  opts.want_alignments = 1;
  opts.max_steps = LENGTH + 1;
  seqcl_decode_result *r = NULL;
  st = seqcl_model_decode(model, &src, &opts, &r);
  if (st != SEQCL_OK) {
    seqcl_model_free(model);
    return cli_fail(cmd, st);
  }
  int utf8 = utf8_terminal(), rc = CLI_OK;
  char labels[2][LENGTH * 2 + 2][16];
  const char *rows[LENGTH * 2 + 2], *cols[LENGTH];
  for (size_t i = 0; i < r->count && rc == CLI_OK; i++) {
    int32_t want[LENGTH];
    for (int j = 0; j < LENGTH; j++) want[j] = ids[i * LENGTH + LENGTH - 1 - j];
    size_t n = r->offsets[i + 1] - r->offsets[i];
    int ok = n == LENGTH && !memcmp(want, r->ids + r->offsets[i], sizeof want);
    printf("\nexample %zu  %s\n", i + 1, ok ? "(correct)" : "(wrong)");
    print_ids("source", ids + i * LENGTH, LENGTH);
    print_ids("target", want, LENGTH);
    print_ids("output", r->ids + r->offsets[i], n);
    int steps = r->steps[i];
    for (int j = 0; j < LENGTH; j++) {
      snprintf(labels[0][j], sizeof labels[0][j], "%d", ids[i * LENGTH + j]);
      cols[j] = labels[0][j];
    }
    for (int t = 0; t < steps; t++) {
      if ((size_t)t < n)
        snprintf(labels[1][t], sizeof labels[1][t], "%d", r->ids[r->offsets[i] + t]);
      else
        snprintf(labels[1][t], sizeof labels[1][t], "EOS");
      rows[t] = labels[1][t];
    }
    char title[96];
    snprintf(title, sizeof title, "attention, example %zu", i + 1);
    sq_heatmap h = {.w = r->alignments + i * (size_t)r->T * r->S, .rows = steps, .cols = LENGTH,
                    .ld = r->S, .row_labels = rows, .col_labels = cols, .title = title};
    printf("\n");
    fflush(stdout);
    if (sq_heatmap_text(stdout, &h, utf8) != 0) rc = cli_usage_error(cmd, "cannot write stdout");
    if (i == 0 && svg_path && rc == CLI_OK) {
      sq_outfile f;
      st = sq_outfile_open(svg_path, &f);
      if (st != SEQCL_OK) {
        rc = cli_fail(cmd, st);
      } else if (sq_heatmap_svg(f.f, &h) != 0) {
        sq_outfile_abort(&f);
        rc = cli_usage_error(cmd, "cannot write %s", svg_path);
      } else if ((st = sq_outfile_commit(&f)) != SEQCL_OK) {
        rc = cli_fail_output(cmd, st);
      }
    }
  }
  if (rc == CLI_OK && svg_path) printf("\nwrote the attention of example 1 to %s\n", svg_path);
  seqcl_decode_result_free(r);
  seqcl_model_free(model);
  return rc;
}

int cmd_demo(int argc, char **argv) {
  const char *cmd = "demo", *device = NULL, *save = NULL, *svg = "demo-attention.svg";
  seqcl_status st0;
  seqcl_train_options o;
  seqcl_train_options_init(&o);
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    long n;
    if (cli_is_help(a)) {
      demo_help(stdout);
      return CLI_OK;
    }
    if (!strcmp(a, "--overwrite")) {
      o.overwrite = 1;
      continue;
    }
    if (a[0] != '-' || a[1] != '-') return cli_usage_error(cmd, "unexpected argument '%s'", a);
    if (!v) return cli_usage_error(cmd, "option %s needs a value", a);
    i++;
    if (!strcmp(a, "--device")) device = v;
    else if (!strcmp(a, "--score")) o.score = v;
    else if (!strcmp(a, "--save")) save = v;
    else if (!strcmp(a, "--svg")) svg = v;
    else if (!strcmp(a, "--steps")) {
      if (cli_long(cmd, a, v, 1, 1L << 30, &n)) return CLI_USAGE;
      o.steps = (int)n;
    } else if (!strcmp(a, "--seed")) {
      if (cli_long(cmd, a, v, 0, 0x7fffffffL, &n)) return CLI_USAGE;
      o.seed = (unsigned long long)n;
    } else {
      return cli_usage_error(cmd, "unknown option '%s' (see seqcl demo --help)", a);
    }
  }
  sq_score score;
  if (sq_score_parse(o.score, &score))
    return cli_usage_error(cmd, "--score: unknown score '%s' (%s)", o.score, SQ_SCORE_CHOICES);
  if (score == SQ_SCORE_NONE)
    return cli_usage_error(cmd, "--score none: the demo shows the attention heatmap, and a model "
                           "with a fixed context has none (train one with seqcl train --score none)");
  /* the outputs first: a bad path fails now, not after the training */
  if (cli_check_outputs(cmd, "--svg", svg, NULL)) return CLI_USAGE;
  sq_save_plan plan;
  if (save && (st0 = sq_save_dir_check(NULL, save, o.overwrite, NULL, &plan)) != SEQCL_OK)
    return cli_fail(cmd, st0);
  char tmpdir[] = "/tmp/seqcl-demo-XXXXXX";
  if (!save) {
    if (!mkdtemp(tmpdir)) {
      return cli_runtime_error(cmd, "cannot create a temporary folder in /tmp");
    }
    save = tmpdir;
  }
  o.save_dir = save;

  seqcl_ctx *ctx = NULL;
  seqcl_status st = seqcl_ctx_open(device, &ctx);
  if (st != SEQCL_OK) {
    if (save == tmpdir) rmdir(tmpdir);
    return cli_fail_device(cmd, st, device);
  }
  const seqcl_device_info *info = seqcl_ctx_device(ctx);
  printf("Training a GRU seq2seq model with %s attention to reverse %d digits on %s (%s).\n",
         o.score, LENGTH, info->selector, info->name);
  fflush(stdout);
  bar b = {.tty = isatty(fileno(stderr)), .t0 = cli_now()};
  o.progress = on_step;
  o.user = &b;
  seqcl_train_result r;
  cli_interrupt_install();
  double t0 = cli_now();
  st = seqcl_train_reverse(ctx, &o, &r);
  int rc = CLI_OK;
  if (cli_stopped_by_sigint(st)) {
    fprintf(stderr, "\nseqcl demo: interrupted\n");
    rc = CLI_INTERRUPTED;
  } else if (st != SEQCL_OK) {
    rc = cli_fail(cmd, st);
  } else {
    printf("trained %d steps in %.1f s; final loss %.4f\n", o.steps, cli_now() - t0,
           (double)r.final_loss);
    printf("greedy exact-match accuracy: %.1f%% (%d of %d held-out samples)\n",
           100.0 * r.correct / (r.evaluated ? r.evaluated : 1), r.correct, r.evaluated);
    rc = show_examples(ctx, save, o.seed, svg);
    if (rc == CLI_OK && save != tmpdir) printf("saved the model in %s\n", save);
  }
  seqcl_ctx_close(ctx);
  if (save == tmpdir) remove_model_dir(tmpdir);
  return rc;
}
