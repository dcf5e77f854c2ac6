/* seqcl experiment length-sweep: seed 000 §12's exercise 3 as a command. For
 * every score and source length it trains a fresh reversal model through the
 * library's training API (seqcl_train_reverse, the `seqcl train --task
 * reverse` run), decodes held-out samples through the public decoder, and
 * reports accuracy, attention entropy and throughput as a table, JSON and an
 * SVG chart. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include <jansson.h>

#include "cli.h"
#include "cli_model.h"
#include "cli_plot.h"
#include "cli_progress.h"
#include "cli_report.h"
#include "core/fileio.h"
#include "model/attn_stats.h"
#include "train/task.h"

#include <seqcl/train.h>

#define MAX_GRID 32
#define EVAL_SAMPLES 512
/* the held-out stream is its own: it shares no draws with the training
 * batches (seeded from --seed through the training's own salt) */
#define HELD_OUT_SALT 0x4E1DB0A7C0FFEE11ull
#define DEFAULT_SCORES "none,additive,general"
#define DEFAULT_LENGTHS "5,10,20"
#define FULL_LENGTHS "5,10,20,30,40,50"

static void help(FILE *f) {
  fprintf(f,
          "usage: seqcl experiment length-sweep [--scores " DEFAULT_SCORES "]\n"
          "                   [--lengths " DEFAULT_LENGTHS " | --full] [--steps 1200]\n"
          "                   [--batch-size 64] [--seed 0] [--device SEL] [--json FILE]\n"
          "                   [--svg FILE]\n\n"
          "Seed 000's exercise: how attention and fixed-context models fare on the\n"
          "digit-reversal task as the source grows. For each score and each source\n"
          "length L it trains a fresh model with seed 004's recipe (as `seqcl train\n"
          "--task reverse` does: embed 32, GRU 64, attention dim 64, Adam lr 1e-3,\n"
          "batch 64, 1200 steps, no clipping), scaled to length L: sources of L digits,\n"
          "targets BOS + L reversed digits + EOS, greedy decoding for L + 1 steps, and the\n"
          "same number of steps (so the same number of training sequences) at every L.\n"
          "Then it decodes %d held-out samples (a stream of their own) and reports:\n"
          "  token%%     digits right at their position, over all L x %d digits\n"
          "  seq%%       samples reversed exactly (the seed's accuracy)\n"
          "  H          mean attention entropy over valid decoder steps (EOS step\n"
          "             included), nats; '-' for a score without alignments\n"
          "  H/lnL      the same divided by ln L (1 = uniform over the source, 0 = one\n"
          "             position; 0 for L = 1)\n"
          "  train/s    training samples per second; decode/s: held-out samples decoded\n"
          "             per second (wall clock)\n\n"
          "  --scores LIST    scores to compare (default " DEFAULT_SCORES ";\n"
          "                   none is the fixed-context model, without attention)\n"
          "  --lengths LIST   source lengths (default " DEFAULT_LENGTHS ")\n"
          "  --full           the seed's grid: lengths " FULL_LENGTHS " (much longer)\n"
          "  --steps N        Adam steps per run (default 1200)\n"
          "  --batch-size B   training batch (default 64)\n"
          "  --seed S         weights, data and held-out samples (default 0): the same seed\n"
          "                   gives the same accuracies and entropies on the same device\n"
          "  --json FILE      every run's numbers, and the settings\n"
          "  --svg FILE       accuracy and entropy against length, one line per score\n"
          "  --device SEL     device (SPEC §3)\n\n"
          "Prints a row per run as it finishes (a progress bar per run on a terminal).\n"
          "Output paths are checked before any training. Exit status: 0 success,\n"
          "1 device/runtime failure, 2 bad usage; 130 after Ctrl-C (nothing written).\n",
          EVAL_SAMPLES, EVAL_SAMPLES);
}

typedef struct sweep_args {
  const char *scores, *lengths, *device, *json, *svg;
  long steps, batch, seed;
  int full;
  int nscores, nlengths;
  const char *score_names[MAX_GRID];
  int length[MAX_GRID];
} sweep_args;

/* The name the messages give. */
static const char cmd[] = "experiment";

/* What one run measured. */
typedef struct sweep_row {
  const char *score;
  int length;
  double loss, token_acc, seq_acc, entropy, entropy_norm; /* entropy NAN: no alignments */
  double train_s, train_cpu_s, decode_s, decode_cpu_s;
  int invariants_pass; /* -1: no alignments to check (score none) */
  double worst_sum, worst_pad;
} sweep_row;

static double cpu_seconds(void) {
  struct rusage u;
  getrusage(RUSAGE_SELF, &u);
  return (double)u.ru_utime.tv_sec + 1e-6 * (double)u.ru_utime.tv_usec +
         (double)u.ru_stime.tv_sec + 1e-6 * (double)u.ru_stime.tv_usec;
}

/* Splits "a,b,c" into *n pieces of at most MAX_GRID; calls each(piece). */
static int split_list(const char *opt, const char *v, int *n,
                      int (*each)(const char *opt, const char *piece, sweep_args *a, int k),
                      sweep_args *a) {
  *n = 0;
  for (const char *p = v;;) {
    size_t len = strcspn(p, ",");
    char piece[64];
    if (len == 0 || len >= sizeof piece)
      return cli_usage_error(cmd, "%s: '%s' is not a comma-separated list", opt, v);
    if (*n == MAX_GRID) return cli_usage_error(cmd, "%s: more than %d entries", opt, MAX_GRID);
    memcpy(piece, p, len);
    piece[len] = 0;
    if (each(opt, piece, a, *n)) return CLI_USAGE;
    ++*n;
    if (!p[len]) return CLI_OK;
    p += len + 1;
  }
}

static int one_score(const char *opt, const char *piece, sweep_args *a, int k) {
  sq_score kind;
  if (sq_score_parse(piece, &kind))
    return cli_usage_error(cmd, "%s: unknown score '%s' (%s)", opt, piece, SQ_SCORE_CHOICES);
  for (int i = 0; i < k; i++)
    if (!strcmp(a->score_names[i], sq_score_names[kind]))
      return cli_usage_error(cmd, "%s: '%s' is listed twice", opt, piece);
  a->score_names[k] = sq_score_names[kind];
  return CLI_OK;
}

static int one_length(const char *opt, const char *piece, sweep_args *a, int k) {
  long L;
  if (cli_long(cmd, opt, piece, 1, 4096, &L)) return CLI_USAGE;
  for (int i = 0; i < k; i++)
    if (a->length[i] == L) return cli_usage_error(cmd, "%s: %ld is listed twice", opt, L);
  a->length[k] = (int)L;
  return CLI_OK;
}

static int parse(int argc, char **argv, sweep_args *a) {
  a->steps = 1200, a->batch = 64;
  if (argc < 2 || cli_is_help(argv[1])) {
    help(argc < 2 ? stderr : stdout);
    return argc < 2 ? CLI_USAGE : -1;
  }
  if (strcmp(argv[1], "length-sweep"))
    return cli_usage_error(cmd, "unknown experiment '%s' (the one experiment is length-sweep)",
                           argv[1]);
  const cli_opt opts[] = {CLI_STR("--scores", &a->scores), CLI_STR("--lengths", &a->lengths),
                          CLI_STR("--device", &a->device), CLI_STR("--json", &a->json),
                          CLI_STR("--svg", &a->svg), CLI_NUM("--steps", &a->steps, 1, 1L << 30),
                          CLI_NUM("--batch-size", &a->batch, 1, 1L << 20),
                          CLI_NUM("--seed", &a->seed, 0, 0x7fffffffL),
                          CLI_FLAG("--full", &a->full), {0}};
  int rc = cli_options(cmd, opts, help, 2, argc, argv, NULL, NULL);
  if (rc) return rc;
  if (a->full && a->lengths) return cli_usage_error(cmd, "--full and --lengths exclude each other");
  if (split_list("--scores", a->scores ? a->scores : DEFAULT_SCORES, &a->nscores, one_score,
                 a))
    return CLI_USAGE;
  if (split_list("--lengths", a->lengths ? a->lengths : a->full ? FULL_LENGTHS : DEFAULT_LENGTHS,
                 &a->nlengths, one_length, a))
    return CLI_USAGE;
  return CLI_OK;
}

/* ---- one run ---- */

typedef struct run_progress {
  cli_progress bar;
} run_progress;

static int on_step(void *user, int step, int steps, float loss) {
  (void)loss;
  run_progress *p = user;
  return cli_progress_update(&p->bar, (size_t)step, (size_t)steps);
}

/* Scores the decoded held-out samples: ref [n, L] digits. */
static void score_outputs(const seqcl_decode_result *r, const int32_t *src, int L, size_t n,
                          sweep_row *row) {
  size_t tok = 0, seq = 0;
  sq_attn_stats st;
  sq_attn_stats_init(&st);
  for (size_t i = 0; i < n; i++) {
    const int32_t *h = r->ids + r->offsets[i];
    const size_t hl = r->offsets[i + 1] - r->offsets[i];
    int all = hl == (size_t)L;
    for (int j = 0; j < L; j++) {
      const int ok = (size_t)j < hl && h[j] == src[i * (size_t)L + (size_t)(L - 1 - j)];
      tok += (size_t)ok;
      all &= ok;
    }
    seq += (size_t)all;
    if (r->alignments)
      sq_attn_stats_add(&st, r->alignments + i * (size_t)r->T * (size_t)r->S, r->steps[i], L, r->S,
                        (size_t)r->S, i);
  }
  row->token_acc = 100.0 * (double)tok / ((double)n * L);
  row->seq_acc = 100.0 * (double)seq / (double)n;
  row->entropy = r->alignments ? sq_attn_stats_mean_entropy(&st) : NAN;
  row->entropy_norm = r->alignments ? sq_attn_stats_mean_entropy_norm(&st) : NAN;
  row->invariants_pass = r->alignments ? sq_attn_stats_pass(&st) : -1;
  row->worst_sum = r->alignments ? st.worst_sum : NAN;
  row->worst_pad = r->alignments ? st.worst_pad : NAN;
}

/* 1 when a model of this score has alignments to measure. */
static int has_alignments(const char *score) { return strcmp(score, sq_score_names[SQ_SCORE_NONE]) != 0; }

static seqcl_status evaluate(seqcl_ctx *ctx, const char *dir, const sweep_args *a, int L,
                             sweep_row *row) {
  seqcl_model *m = NULL;
  seqcl_status lst = seqcl_model_load(ctx, dir, &m);
  if (lst != SEQCL_OK) return lst;
  const size_t n = EVAL_SAMPLES;
  int32_t *src = malloc(sizeof(int32_t) * n * (size_t)L), *lens = malloc(sizeof(int32_t) * n),
          *tgt = malloc(sizeof(int32_t) * n * (size_t)(L + 2));
  size_t *off = malloc(sizeof(size_t) * (n + 1));
  seqcl_decode_result *r = NULL;
  seqcl_status st = SEQCL_OK;
  if (!src || !lens || !tgt || !off) {
    st = SEQCL_ERR_OUT_OF_MEMORY;
    fprintf(stderr, "seqcl experiment: out of host memory for %zu samples of length %d\n", n, L);
  } else {
    sq_trng g;
    sq_trng_seed(&g, (uint64_t)a->seed ^ HELD_OUT_SALT);
    sq_task_reverse_batch(&g, (int)n, L, seqcl_model_bos_id(m), seqcl_model_eos_id(m), src, lens,
                          tgt);
    for (size_t i = 0; i <= n; i++) off[i] = i * (size_t)L;
    seqcl_seqs s = {n, src, off};
    seqcl_decode_options o;
    seqcl_decode_options_init(&o);
    o.max_steps = L + 1; /* the seed's decode_greedy: the digits and the EOS */
    o.batch_size = EVAL_SAMPLES;
    o.want_alignments = has_alignments(row->score);
    const double t0 = cli_now(), c0 = cpu_seconds();
    st = seqcl_model_decode(m, &s, &o, &r);
    row->decode_s = cli_now() - t0;
    row->decode_cpu_s = cpu_seconds() - c0;
    if (st == SEQCL_OK) score_outputs(r, src, L, n, row);
  }
  seqcl_decode_result_free(r);
  free(src);
  free(lens);
  free(tgt);
  free(off);
  seqcl_model_free(m);
  return st;
}

/* Trains into dir (a fresh folder), evaluates, removes dir. */
static int run_one(seqcl_ctx *ctx, const sweep_args *a, const char *score, int L, const char *dir,
                   sweep_row *row) {
  memset(row, 0, sizeof *row);
  row->score = score;
  row->length = L;
  seqcl_train_options o;
  seqcl_train_options_init(&o);
  o.length = L;
  o.score = score;
  o.steps = (int)a->steps;
  o.batch_size = (int)a->batch;
  o.seed = (unsigned long long)a->seed;
  o.save_dir = dir;
  run_progress p;
  cli_progress_start(&p.bar, cmd, "steps");
  o.progress = on_step;
  o.user = &p;
  seqcl_train_result tr;
  const double c0 = cpu_seconds();
  seqcl_status st = seqcl_train_reverse(ctx, &o, &tr);
  row->train_cpu_s = cpu_seconds() - c0;
  cli_progress_end(&p.bar);
  if (st == SEQCL_OK) {
    row->loss = tr.final_loss;
    row->train_s = tr.train_seconds;
    st = evaluate(ctx, dir, a, L, row);
  }
  sq_dir_remove_tree(dir);
  if (cli_stopped_by_sigint(st)) {
    fprintf(stderr, "seqcl experiment: interrupted during %s, length %d; nothing written\n", score,
            L);
    return CLI_INTERRUPTED;
  }
  if (st == SEQCL_OK) return CLI_OK;
  return cli_fail_memory(cmd, st, " (%s, length %d, batch %ld: lower --batch-size)", score, L,
                         a->batch);
}

/* ---- output ---- */

static void print_header(void) {
  printf("%-10s %4s %6s %8s %7s %7s %7s %6s %9s %9s\n", "score", "L", "steps", "loss", "token%",
         "seq%", "H", "H/lnL", "train/s", "decode/s");
}

static void print_row(const sweep_args *a, const sweep_row *r) {
  char h[16] = "-", hn[16] = "-";
  if (!isnan(r->entropy)) {
    snprintf(h, sizeof h, "%.3f", r->entropy);
    snprintf(hn, sizeof hn, "%.3f", r->entropy_norm);
  }
  printf("%-10s %4d %6ld %8.4f %7.2f %7.2f %7s %6s %9.0f %9.0f%s\n", r->score, r->length, a->steps,
         r->loss, r->token_acc, r->seq_acc, h, hn,
         r->train_s > 0 ? (double)a->steps * (double)a->batch / r->train_s : 0.0,
         r->decode_s > 0 ? EVAL_SAMPLES / r->decode_s : 0.0,
         r->invariants_pass ? "" : "  (attention invariants FAILED)");
  fflush(stdout);
}

static json_t *num_or_null(double v) { return isfinite(v) ? json_real(v) : json_null(); }

static json_t *to_json(const sweep_args *a, const seqcl_ctx *ctx, const sweep_row *rows,
                       int nrows) {
  json_t *root = json_object(), *runs = json_array(), *dev = json_object();
  const seqcl_device_info *d = seqcl_ctx_device(ctx);
  json_object_set_new(root, "experiment", json_string("length-sweep"));
  json_object_set_new(dev, "selector", json_string(d ? d->selector : ""));
  json_object_set_new(dev, "name", json_string(d ? d->name : ""));
  json_object_set_new(root, "device", dev);
  json_object_set_new(root, "seed", json_integer(a->seed));
  json_object_set_new(root, "steps", json_integer(a->steps));
  json_object_set_new(root, "batch_size", json_integer(a->batch));
  json_object_set_new(root, "lr", json_real(1e-3));
  json_object_set_new(root, "eval_samples", json_integer(EVAL_SAMPLES));
  for (int i = 0; i < nrows; i++) {
    const sweep_row *r = &rows[i];
    json_t *o = json_object();
    json_object_set_new(o, "score", json_string(r->score));
    json_object_set_new(o, "length", json_integer(r->length));
    json_object_set_new(o, "final_loss", json_real(r->loss));
    json_object_set_new(o, "token_accuracy", json_real(r->token_acc / 100.0));
    json_object_set_new(o, "sequence_accuracy", json_real(r->seq_acc / 100.0));
    json_object_set_new(o, "entropy", num_or_null(r->entropy));
    json_object_set_new(o, "entropy_normalized", num_or_null(r->entropy_norm));
    json_t *inv = json_object();
    /* null, not true, where there is nothing to check: nothing passed */
    json_object_set_new(inv, "pass", r->invariants_pass < 0 ? json_null()
                                                             : json_boolean(r->invariants_pass));
    json_object_set_new(inv, "worst_sum_error", num_or_null(r->worst_sum));
    json_object_set_new(inv, "worst_padding_weight", num_or_null(r->worst_pad));
    json_object_set_new(o, "invariants", inv);
    json_object_set_new(o, "train_seconds", json_real(r->train_s));
    json_object_set_new(o, "train_cpu_seconds", json_real(r->train_cpu_s));
    json_object_set_new(o, "train_samples_per_s",
                        json_real(r->train_s > 0 ? (double)a->steps * a->batch / r->train_s : 0));
    json_object_set_new(o, "decode_seconds", json_real(r->decode_s));
    json_object_set_new(o, "decode_cpu_seconds", json_real(r->decode_cpu_s));
    json_object_set_new(o, "decode_samples_per_s",
                        json_real(r->decode_s > 0 ? EVAL_SAMPLES / r->decode_s : 0));
    json_array_append_new(runs, o);
  }
  json_object_set_new(root, "runs", runs);
  return root;
}

/* rows are length-major: rows[li * nscores + si]. */
static int draw(FILE *f, const sweep_args *a, const sweep_row *rows) {
  const int ns = a->nscores, nl = a->nlengths;
  double *x = malloc(sizeof(double) * (size_t)nl);
  double *y = malloc(sizeof(double) * 3 * (size_t)ns * (size_t)nl);
  int *order = malloc(sizeof(int) * (size_t)nl);
  if (!x || !y || !order) {
    free(x), free(y), free(order);
    return -1;
  }
  /* the x axis wants increasing lengths; the grid keeps the order given */
  for (int i = 0; i < nl; i++) order[i] = i;
  for (int i = 1; i < nl; i++)
    for (int k = i; k > 0 && a->length[order[k]] < a->length[order[k - 1]]; k--) {
      int t = order[k];
      order[k] = order[k - 1];
      order[k - 1] = t;
    }
  for (int i = 0; i < nl; i++) {
    x[i] = a->length[order[i]];
    for (int s = 0; s < ns; s++) {
      const sweep_row *r = &rows[(size_t)order[i] * ns + s];
      y[(size_t)s * nl + i] = r->token_acc;
      y[((size_t)ns + s) * nl + i] = r->seq_acc;
      y[(2 * (size_t)ns + s) * nl + i] = r->entropy_norm;
    }
  }
  char title[160];
  snprintf(title, sizeof title,
           "Digit reversal against source length (%ld steps x batch %ld, seed %ld, %d held-out)",
           a->steps, a->batch, a->seed, EVAL_SAMPLES);
  const cli_panel panels[3] = {
      {"token accuracy", "% of digits right", 0, 100, y},
      {"sequence accuracy", "% of samples exactly right", 0, 100, y + (size_t)ns * nl},
      {"attention entropy", "mean entropy / ln L", 0, 1, y + 2 * (size_t)ns * nl},
  };
  const cli_plot p = {title, "source length L", x, nl, a->score_names, ns, panels, 3};
  int rc = cli_plot_svg(f, &p);
  free(x), free(y), free(order);
  return rc;
}

typedef struct sweep_view {
  const sweep_args *a;
  const sweep_row *rows;
} sweep_view;

static int draw_view(FILE *f, const void *user) {
  const sweep_view *v = user;
  return draw(f, v->a, v->rows);
}

static int write_outputs(const sweep_args *a, const seqcl_ctx *ctx, const sweep_row *rows) {
  const sweep_view v = {a, rows};
  json_t *root = a->json ? to_json(a, ctx, rows, a->nscores * a->nlengths) : NULL;
  return cli_write_reports(cmd, a->json, root, a->svg, draw_view, &v);
}

/* The work, once the options are parsed and checked. */
static int run(const sweep_args *a) {
  int rc = cli_check_outputs(cmd, "--json", a->json, "--svg", a->svg, NULL);
  if (rc) return rc;
  /* the runs' models live in a private folder, removed after each run */
  const char *tmp = getenv("TMPDIR");
  char dir[4096];
  snprintf(dir, sizeof dir, "%s/seqcl-sweep-XXXXXX", tmp && *tmp ? tmp : "/tmp");
  if (!mkdtemp(dir)) {
    perror("seqcl experiment: cannot make a temporary folder (TMPDIR)");
    return CLI_RUNTIME;
  }
  seqcl_ctx *ctx = NULL;
  sweep_row *rows = calloc((size_t)a->nscores * a->nlengths, sizeof *rows);
  if (!rows) {
    rc = cli_usage_error(cmd, "out of memory");
  } else {
    rc = cli_ctx_open(cmd, a->device, &ctx);
  }
  if (rc == CLI_OK) {
    cli_interrupt_install();
    print_header();
    const int total = a->nscores * a->nlengths;
    for (int li = 0; li < a->nlengths && rc == CLI_OK; li++)
      for (int si = 0; si < a->nscores && rc == CLI_OK; si++) {
        const int k = li * a->nscores + si;
        if (!cli_quiet && (cli_verbose || isatty(fileno(stderr))))
          fprintf(stderr, "run %d/%d: %s, length %d\n", k + 1, total, a->score_names[si],
                  a->length[li]);
        char run_dir[4200];
        snprintf(run_dir, sizeof run_dir, "%s/run", dir);
        rc = run_one(ctx, a, a->score_names[si], a->length[li], run_dir, &rows[k]);
        if (rc == CLI_OK) print_row(a, &rows[k]);
      }
    if (rc == CLI_OK) rc = write_outputs(a, ctx, rows);
  }
  seqcl_ctx_close(ctx);
  sq_dir_remove_tree(dir);
  free(rows);
  return rc;
}

CLI_COMMAND(cmd_experiment, sweep_args, parse, run)
