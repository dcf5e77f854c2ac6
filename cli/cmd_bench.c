/* seqcl bench: throughput and latency of the main workloads on each selected
 * device (SPEC §4, the benchmark issue). Every figure is the median of
 * repeated runs after a warm-up; nothing here asserts a speed.
 *
 *   decode    greedy decoding, target tokens/s and per-step latency, batch 1
 *             and 64, hidden 256 and 512, source length 20 and 50, additive
 *             and general attention; launches, CLBlast calls and blocking
 *             waits per decoder step (counted, difference of two step counts)
 *   encoder   source tokens/s of the encoder alone
 *   train     one Adam step of the reversal task (batch 64, hidden 64)
 *   kernels   copy bandwidth (large buffer copy kernel), fused attention and
 *             GRU gates as bytes/s against it, GEMM GFLOP/s per shape (on
 *             OpenCL the own small-GEMM kernel beside CLBlast)
 *   cold      time to the first decoded token of a fresh process, with an
 *             empty and with a warm program cache
 *   ablation  (--ablate) each decode-path optimisation switched off alone
 *
 * With --model DIR --src FILE it times decoding of that file only (the peer
 * comparison of bench/compare_pytorch.py).
 *
 * What is measured, and how, is the harness's (src/bench/harness.h); this
 * file parses the options, opens each device and prints the rows (the table
 * and the --json file) as the harness hands them over. */
#include <jansson.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench/harness.h"
#include "cli.h"
#include "core/fileio.h"
#include "cli_model.h"

static const char cmd[] = "bench";

typedef struct bench_opts {
  const char *device, *json, *model, *src, *precision;
  int quick, reps, ablate, cold, max_steps, batch, beam, grid;
  int steps; /* decoder steps per decode run */
  int device_given; /* --device, not SEQCL_DEVICE */
} bench_opts;

static void usage(FILE *f) {
  fprintf(f,
          "usage: seqcl bench [--device SEL] [--quick] [--reps N] [--ablate] [--no-cold]\n"
          "                   [--json FILE]\n"
          "       seqcl bench --grid [--quick] [--reps N] [--device SEL] [--json FILE]\n"
          "       seqcl bench --model DIR --src FILE [--max-steps N] [--batch-size B]\n"
          "                   [--beam K] [--precision f32|bf16|f16] [--reps N] [--device SEL]\n"
          "                   [--json FILE]\n\n"
          "Throughput and latency on each selected device (default: SEQCL_DEVICE, else all):\n"
          "greedy decoding (batch 1/64, hidden 256/512, source 20/50, additive/general),\n"
          "the encoder, one training step, copy bandwidth, the fused attention and GRU gate\n"
          "kernels against it, GEMM GFLOP/s, and cold start. Medians of --reps runs\n"
          "(default 5, --quick 3 on a subset) after a warm-up.\n"
          "  --ablate       also decode with each optimisation switched off alone\n"
          "  --grid         decode on the shapes users run instead (one factor at a time\n"
          "                 around H 256, S 20, V 1000, additive, greedy): tokens/s in-process\n"
          "                 and as a whole `seqcl decode`, GFLOP/s and its fraction of the\n"
          "                 GEMM ceiling (16+ rows) or of copy bandwidth over the weights\n"
          "  --no-cold      skip the cold-start runs (they spawn seqcl decode)\n"
          "  --model/--src  time `decode` of this model and token file only (the grid's\n"
          "                 columns for it; --beam K: beam search; --precision as in\n"
          "                 seqcl decode)\n");
}

static int parse(int argc, char **argv, bench_opts *o) {
  o->cold = 1;
  o->steps = 20;
  o->device = getenv("SEQCL_DEVICE");
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (cli_is_help(a)) {
      usage(stdout);
      return -1;
    } else if (!strcmp(a, "--quick")) {
      o->quick = 1;
    } else if (!strcmp(a, "--ablate")) {
      o->ablate = 1;
    } else if (!strcmp(a, "--no-cold")) {
      o->cold = 0;
    } else if (!strcmp(a, "--grid")) {
      o->grid = 1;
    } else if (!strcmp(a, "--device") || !strcmp(a, "--json") || !strcmp(a, "--model") ||
               !strcmp(a, "--src") || !strcmp(a, "--reps") || !strcmp(a, "--max-steps") ||
               !strcmp(a, "--batch-size") || !strcmp(a, "--beam") || !strcmp(a, "--precision")) {
      if (i + 1 >= argc) return cli_usage_error(cmd, "%s needs a value", a);
      const char *v = argv[++i];
      long n = 0;
      if (!strcmp(a, "--device")) o->device = v, o->device_given = 1;
      else if (!strcmp(a, "--json")) o->json = v;
      else if (!strcmp(a, "--model")) o->model = v;
      else if (!strcmp(a, "--src")) o->src = v;
      else if (!strcmp(a, "--precision")) o->precision = v;
      else if (cli_long(cmd, a, v, 1, 1000000, &n))
        return CLI_USAGE;
      else if (!strcmp(a, "--reps")) o->reps = (int)n;
      else if (!strcmp(a, "--max-steps")) o->max_steps = (int)n;
      else if (!strcmp(a, "--beam")) o->beam = (int)n;
      else o->batch = (int)n;
    } else {
      cli_usage_error(cmd, "unknown option '%s'", a);
      usage(stderr);
      return CLI_USAGE;
    }
  }
  if (!o->model != !o->src) return cli_usage_error(cmd, "--model and --src go together");
  if (o->grid && o->model) return cli_usage_error(cmd, "--grid and --model are separate modes");
  if (o->beam && !o->model) return cli_usage_error(cmd, "--beam needs --model and --src");
  if (o->precision && !o->model)
    return cli_usage_error(cmd, "--precision needs --model and --src");
  if (!o->beam) o->beam = 1;
  if (!o->reps) o->reps = o->quick ? 3 : 5;
  if (!o->device || !*o->device) o->device = o->model ? "auto" : "all";
  return 0;
}

/* ---- output: the tables and the JSON document ---- */

static void set_num(json_t *o, const char *k, double v) { json_object_set_new(o, k, json_real(v)); }
static void set_int(json_t *o, const char *k, long long v) {
  json_object_set_new(o, k, json_integer(v));
}
static void set_str(json_t *o, const char *k, const char *v) {
  json_object_set_new(o, k, json_string(v));
}

/* A member of a row struct and the JSON key it is written under; its kind
 * comes from the member's C type (int, size_t, double or const char *; any
 * other is a compile error), so that a table cannot misread a member. */
typedef enum { F_INT, F_SIZE, F_NUM, F_STR } field_kind;
typedef struct field {
  const char *key;
  size_t offset;
  field_kind kind;
} field;
#define FIELD(key, type, member)                                                 \
  {key, offsetof(type, member),                                                  \
   _Generic(((type *)0)->member, int: F_INT, size_t: F_SIZE, double: F_NUM,      \
            const char *: F_STR)}

/* Sets one key of j per entry of the table fields (n entries) from row. */
static void set_fields(json_t *j, const void *row, const field *fields, size_t n) {
  for (size_t i = 0; i < n; i++) {
    const field *f = &fields[i];
    const void *p = (const char *)row + f->offset;
    switch (f->kind) {
    case F_INT: set_int(j, f->key, *(const int *)p); break;
    case F_SIZE: set_int(j, f->key, (long long)*(const size_t *)p); break;
    case F_NUM: set_num(j, f->key, *(const double *)p); break;
    case F_STR: set_str(j, f->key, *(const char *const *)p); break;
    }
  }
}
#define SET_FIELDS(j, row, table) set_fields(j, row, table, sizeof table / sizeof table[0])

/* One device's output: its JSON object and what the table headers need. */
typedef struct printer {
  const bench_opts *o;
  json_t *jdev;
  json_t *jk, *jg, *jdec, *jenc, *ja; /* arrays, created with their table */
  double copy_gbps;
  sq_bench_backend_info info;
} printer;

static json_t *new_array(json_t *parent, const char *key) {
  json_t *a = json_array();
  json_object_set_new(parent, key, a);
  return a;
}

static void on_table(void *user, sq_bench_table t) {
  printer *p = user;
  const int host = p->info.own_default;
  switch (t) {
  case SQ_BENCH_KERNELS: break; /* printed once the copy figure is known */
  case SQ_BENCH_GEMM:
    p->jg = new_array(p->jdev, "gemm");
    /* the host's first column is its default choice (the own kernel up to 256
     * rows, OpenBLAS beyond) */
    printf("    %-22s %12s %12s %10s\n", "gemm M,N,K (B^T)", host ? "seqcl" : "own kernel",
           p->info.blas, "best");
    break;
  case SQ_BENCH_DECODE:
    p->jdec = new_array(p->jdev, "decode");
    p->jenc = new_array(p->jdev, "encoder");
    printf("  decode (greedy, %d steps, embed %d, vocab %d, target tokens/s = batch x steps / "
           "time)\n",
           p->o->steps, SQ_BENCH_EMBED, SQ_BENCH_VOCAB);
    printf("    %-8s %4s %3s %5s %12s %10s %9s %8s %6s %7s\n", "score", "H", "S", "batch",
           "tokens/s", "step ms", "launch/st", "blas/st", "syn/st", "enc tok/s");
    break;
  case SQ_BENCH_ABLATION:
    p->ja = new_array(p->jdev, "ablation");
    printf("  ablation (additive, H 256, S 20; one optimisation off at a time, timed in "
           "turns)\n");
    printf("    %-22s %5s %12s %8s %9s %8s %7s\n", "off", "batch", "tokens/s", "ratio",
           "launch/st", "blas/st", "syn/st");
    break;
  }
  fflush(stdout);
}

static void on_copy(void *user, int mib, double gbps) {
  printer *p = user;
  p->copy_gbps = gbps;
  printf("  copy bandwidth (%d MiB buffer, read + write): %.2f GB/s\n", mib, gbps);
  set_num(p->jdev, "copy_gbps", gbps);
  p->jk = new_array(p->jdev, "kernels");
  printf("    %-34s %10s %10s %9s\n", "kernel", "ms", "GB/s", "of copy");
}

static void on_kernel(void *user, const sq_bench_kernel_row *r) {
  printer *p = user;
  printf("    %-34s %10.3f %10.2f %8.0f%%\n", r->label, r->ms, r->gbps, 100 * r->fraction_of_copy);
  static const field fields[] = {FIELD("ms", sq_bench_kernel_row, ms),
                                 FIELD("gbps", sq_bench_kernel_row, gbps),
                                 FIELD("fraction_of_copy", sq_bench_kernel_row, fraction_of_copy)};
  json_t *j = json_object();
  set_str(j, "kernel", r->label);
  SET_FIELDS(j, r, fields);
  json_array_append_new(p->jk, j);
}

static void on_gemm(void *user, const sq_bench_gemm_row *r) {
  printer *p = user;
  char label[64];
  snprintf(label, sizeof label, "%d,%d,%d", r->M, r->N, r->K);
  if (p->info.own_gemm)
    printf("    %-22s %12.2f %12.2f %10.2f\n", label, r->own_gflops, r->lib_gflops,
           r->best_gflops);
  else
    printf("    %-22s %12s %12.2f %10.2f\n", label, "-", r->lib_gflops, r->best_gflops);
  static const field fields[] = {FIELD("M", sq_bench_gemm_row, M), FIELD("N", sq_bench_gemm_row, N),
                                 FIELD("K", sq_bench_gemm_row, K),
                                 FIELD("best_gflops", sq_bench_gemm_row, best_gflops)};
  json_t *j = json_object();
  SET_FIELDS(j, r, fields);
  if (p->info.own_gemm) set_num(j, "own_kernel_gflops", r->own_gflops);
  char key[64];
  snprintf(key, sizeof key, "%s_gflops", p->info.blas);
  for (char *c = key; *c; c++)
    if (*c >= 'A' && *c <= 'Z') *c = (char)(*c - 'A' + 'a'); /* "openblas_gflops" */
  set_num(j, key, r->lib_gflops);
  json_array_append_new(p->jg, j);
}

/* The per-step counters a decode and an ablation row both carry. */
static void set_step_counts(json_t *j, double launches, double blas_calls, double syncs) {
  set_num(j, "launches_per_step", launches);
  set_num(j, "clblast_calls_per_step", blas_calls);
  set_num(j, "blocking_syncs_per_step", syncs);
}

/* A decode row's shape, the key of its decode and its encoder object. */
static json_t *decode_shape(const sq_bench_decode_row *r) {
  static const field fields[] = {
      FIELD("score", sq_bench_decode_row, score), FIELD("hidden", sq_bench_decode_row, hidden),
      FIELD("src_len", sq_bench_decode_row, src_len), FIELD("batch", sq_bench_decode_row, batch)};
  json_t *j = json_object();
  SET_FIELDS(j, r, fields);
  return j;
}

static void on_decode(void *user, const sq_bench_decode_row *r) {
  static const field decode[] = {
      FIELD("steps", sq_bench_decode_row, steps), FIELD("seconds", sq_bench_decode_row, seconds),
      FIELD("tokens_per_s", sq_bench_decode_row, tokens_per_s),
      FIELD("step_ms", sq_bench_decode_row, step_ms)};
  static const field encoder[] = {
      FIELD("seconds", sq_bench_decode_row, enc_seconds),
      FIELD("src_tokens_per_s", sq_bench_decode_row, enc_tokens_per_s)};
  printer *p = user;
  printf("    %-8s %4d %3d %5d %12.0f %10.3f %9.2f %8.2f %6.2f %9.0f\n", r->score, r->hidden,
         r->src_len, r->batch, r->tokens_per_s, r->step_ms, r->launches, r->blas_calls, r->syncs,
         r->enc_tokens_per_s);
  fflush(stdout);
  json_t *j = decode_shape(r);
  SET_FIELDS(j, r, decode);
  set_step_counts(j, r->launches, r->blas_calls, r->syncs);
  json_array_append_new(p->jdec, j);
  json_t *je = decode_shape(r);
  SET_FIELDS(je, r, encoder);
  json_array_append_new(p->jenc, je);
}

static void on_ablation(void *user, const sq_bench_ablation_row *r) {
  static const field fields[] = {
      FIELD("batch", sq_bench_ablation_row, batch),
      FIELD("tokens_per_s", sq_bench_ablation_row, tokens_per_s),
      FIELD("ratio_to_all_on", sq_bench_ablation_row, ratio_to_all_on)};
  printer *p = user;
  const char *name = r->off ? r->off : "(nothing: all on)";
  printf("    %-22s %5d %12.0f %8.2f %9.2f %8.2f %7.2f\n", name, r->batch, r->tokens_per_s,
         r->ratio_to_all_on, r->launches, r->blas_calls, r->syncs);
  fflush(stdout);
  json_t *j = json_object();
  set_str(j, "off", r->off ? r->off : "none");
  SET_FIELDS(j, r, fields);
  set_step_counts(j, r->launches, r->blas_calls, r->syncs);
  json_array_append_new(p->ja, j);
}

/* ---- the grid's rows (also the peer mode's one row) ---- */

static void point_header(void) {
  printf("    %-14s %-8s %2s %4s %3s %5s %4s %10s %10s %8s %8s %8s %5s %9s %6s\n", "point",
         "score", "L", "dirs", "out", "V", "S", "B x beam", "tok/s", "proc tok/s", "step ms",
         "MFLOP/st", "GF/s", "ceiling", "of it");
}

static void point_print(const sq_bench_point_row *r) {
  char bk[24], ceil[24];
  snprintf(bk, sizeof bk, "%dx%d", r->batch, r->beam);
  snprintf(ceil, sizeof ceil, "%.1f %s", r->ceiling, !strcmp(r->bound, "gemm") ? "GF" : "GB");
  printf("    %-14s %-8s %2d %4d %3s %5d %4d %10s %10.0f %10.0f %8.3f %8.2f %5.1f %9s %5.0f%%\n",
         r->label, r->score, r->enc_layers, r->bidirectional ? 2 : 1,
         r->state_context ? "s;c" : "s", r->vocab, r->src_len, bk, r->tokens_per_s,
         r->process_tokens_per_s, r->step_ms, r->step_mflop, r->gflops, ceil,
         100 * r->fraction);
  fflush(stdout);
}

static json_t *point_json(const sq_bench_point_row *r) {
#define POINT(key, member) FIELD(key, sq_bench_point_row, member)
  static const field fields[] = {
      POINT("score", score), POINT("hidden", hidden), POINT("enc_hidden", enc_hidden),
      POINT("enc_layers", enc_layers), POINT("bidirectional", bidirectional),
      POINT("vocab", vocab), POINT("src_len", src_len), POINT("batch", batch),
      POINT("beam", beam), POINT("max_steps", steps), POINT("lines", lines),
      POINT("decoder_steps_total", tokens), POINT("decode_seconds", seconds),
      POINT("tokens_per_s", tokens_per_s), POINT("process_seconds", process_seconds),
      POINT("process_tokens_per_s", process_tokens_per_s), POINT("step_ms", step_ms),
      POINT("step_mflop", step_mflop), POINT("step_weight_mb", step_weight_mb),
      POINT("gflops", gflops), POINT("weight_gbps", weight_gbps), POINT("bound", bound),
      POINT("fraction_of_ceiling", fraction)};
#undef POINT
  json_t *j = json_object();
  set_str(j, "point", r->label);
  set_str(j, "output", r->state_context ? "state_context" : "state");
  SET_FIELDS(j, r, fields);
  set_num(j, r->bound[0] == 'g' ? "gemm_ceiling_gflops" : "copy_gbps", r->ceiling);
  return j;
}

static void on_point(void *user, const sq_bench_point_row *r) {
  point_print(r);
  json_array_append_new((json_t *)user, point_json(r));
}

/* Opens device d for a run and starts its table and JSON object. */
static seqcl_status open_device(const seqcl_device_info *d, json_t *jdev, seqcl_ctx **ctx) {
  seqcl_status st = seqcl_ctx_open_info(d, ctx);
  if (st != SEQCL_OK) return st;
  printf("\n== %s: %s (%s)\n", d->selector, d->name, d->platform[0] ? d->platform : "host path");
  set_str(jdev, "selector", d->selector);
  set_str(jdev, "name", d->name);
  set_str(jdev, "platform", d->platform);
  return SEQCL_OK;
}

/* The grid on one device. */
static seqcl_status grid_device(const seqcl_device_info *d, const sq_bench_cfg *cfg,
                                json_t *jdev) {
  seqcl_ctx *ctx = NULL;
  seqcl_status st = open_device(d, jdev, &ctx);
  if (st != SEQCL_OK) return st;
  printf("  grid (H 256, embed 128, A 256, %d steps; bidirectional = 2 x 128; tok/s = lines x "
         "steps / time; step FLOPs and ceiling: bench/RESULTS.md)\n",
         cfg->steps);
  point_header();
  json_t *jg = json_array();
  json_object_set_new(jdev, "grid", jg);
  st = sq_bench_grid(ctx, cfg, on_point, jg);
  seqcl_ctx_close(ctx);
  return st;
}

/* ---- one device ---- */

static seqcl_status bench_device(const seqcl_device_info *d, const bench_opts *o,
                                 const sq_bench_cfg *cfg, json_t *jdev) {
  seqcl_ctx *ctx = NULL;
  seqcl_status st = open_device(d, jdev, &ctx);
  if (st != SEQCL_OK) return st;
  fflush(stdout);
  printer p;
  memset(&p, 0, sizeof p);
  p.o = o;
  p.jdev = jdev;
  sq_bench_info(ctx, &p.info);
  const sq_bench_sink sink = {&p, on_table, on_copy, on_kernel, on_gemm, on_decode, on_ablation};
  st = sq_bench_kernels(ctx, cfg, &sink);
  if (st == SEQCL_OK) st = sq_bench_decode(ctx, cfg, &sink);
  if (st == SEQCL_OK && o->ablate) st = sq_bench_ablation(ctx, cfg, &sink);
  if (st == SEQCL_OK) {
    int steps = 0;
    double ms = 0;
    if (sq_bench_train(ctx, cfg, &steps, &ms) == SEQCL_OK) {
      printf("  train (reverse task, batch 64, hidden 64, %d Adam steps): %.2f ms/step\n", steps,
             ms);
      set_num(jdev, "train_step_ms", ms);
    } else {
      /* a backend without training kernels still gets the other figures */
      printf("  train: not available (%s)\n", seqcl_last_message());
      set_str(jdev, "train_error", seqcl_last_message());
    }
  }
  if (st == SEQCL_OK && o->cold) {
    double cold = 0, warm = 0;
    st = sq_bench_cold(ctx, cfg, &cold, &warm);
    if (st == SEQCL_OK) {
      printf("  first token (new process, 1 line, 1 step, H 256): empty cache %.3f s, warm cache "
             "%.3f s\n",
             cold, warm);
      json_t *j = json_object();
      set_num(j, "empty_cache_s", cold);
      set_num(j, "warm_cache_s", warm);
      json_object_set_new(jdev, "first_token", j);
    }
  }
  seqcl_ctx_close(ctx);
  return st;
}

/* ---- the peer mode: one model, one token file ---- */

static int bench_file(const bench_opts *o, json_t *root) {
  seqcl_ctx *ctx = NULL;
  seqcl_model *m = NULL;
  int rc = cli_open_model(cmd, o->device, o->model, o->precision, &ctx, &m);
  if (rc != CLI_OK) return rc;
  sq_bench_point_row r;
  seqcl_status st = sq_bench_file(m, o->model, o->src, o->max_steps, o->batch, o->beam, o->reps,
                                  "/proc/self/exe", &r);
  if (st == SEQCL_OK) {
    const char *sel = seqcl_ctx_device(ctx)->selector;
    json_t *j = point_json(&r);
    json_object_update(root, j);
    json_decref(j);
    set_str(root, "device", sel);
    printf("decode %s: %zu lines, %.6f s (median of %d), %.0f target tokens/s; whole process "
           "%.0f tokens/s\n",
           sel, r.lines, r.seconds, o->reps, r.tokens_per_s, r.process_tokens_per_s);
    point_header();
    point_print(&r);
  }
  seqcl_model_free(m);
  seqcl_ctx_close(ctx);
  return st == SEQCL_OK ? CLI_OK : cli_fail(cmd, st);
}

static int write_json(const char *path, json_t *root) {
  sq_outfile f;
  seqcl_status st = sq_outfile_open(path, &f);
  if (st != SEQCL_OK) return cli_fail(cmd, st);
  if (json_dumpf(root, f.f, JSON_INDENT(2) | JSON_SORT_KEYS) != 0) {
    sq_outfile_abort(&f);
    return cli_runtime_error(cmd, "cannot write %s", path);
  }
  st = sq_outfile_commit(&f);
  return st == SEQCL_OK ? CLI_OK : cli_fail_output(cmd, st);
}

/* The work, once the options are parsed and checked. */
static int run(const bench_opts *o) {
  int rc;
  if ((rc = cli_check_outputs(cmd, "--json", o->json, NULL))) return rc;
  json_t *root = json_object();
  if (o->model) {
    rc = bench_file(o, root);
    if (rc == CLI_OK && o->json) rc = write_json(o->json, root);
    json_decref(root);
    return rc;
  }
  sq_bench_cfg cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.quick = o->quick;
  cfg.reps = o->reps;
  cfg.steps = o->steps;
  cfg.exe = "/proc/self/exe"; /* cold start: this executable's `decode` */
  if (sq_bench_begin(&cfg) != SEQCL_OK) {
    json_decref(root);
    return cli_runtime_error(cmd, "cannot create a temporary directory");
  }
  seqcl_device_info *devs = NULL;
  size_t n = 0;
  seqcl_status st = seqcl_devices_select(o->device, &devs, &n);
  json_t *jdevs = json_array();
  json_object_set_new(root, "devices", jdevs);
  set_int(root, "reps", o->reps);
  set_int(root, "quick", o->quick);
  set_int(root, "grid", o->grid);
  for (size_t i = 0; st == SEQCL_OK && i < n; i++) {
    json_t *jd = json_object();
    json_array_append_new(jdevs, jd);
    st = o->grid ? grid_device(&devs[i], &cfg, jd) : bench_device(&devs[i], o, &cfg, jd);
  }
  seqcl_devices_free(devs);
  sq_bench_end(&cfg);
  rc = st == SEQCL_OK ? CLI_OK : cli_fail_device(cmd, st, o->device_given ? o->device : NULL);
  if (rc == CLI_OK && o->json) rc = write_json(o->json, root);
  json_decref(root);
  return rc;
}

CLI_COMMAND(cmd_bench, bench_opts, parse, run)
