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
 * comparison of bench/compare_pytorch.py). */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "backend/host/gemm_nt.h"
#include "bench/ablate.h"
#include "bench/bench.h"
#include "cli.h"
#include "cli_model.h"
#include "core/ctx.h"
#include "model/seq2seq.h"

static const char cmd[] = "bench";

typedef struct bench_opts {
  const char *device, *json, *model, *src;
  int quick, reps, ablate, cold, max_steps, batch;
  int steps; /* decoder steps per decode run */
} bench_opts;

static void usage(FILE *f) {
  fprintf(f,
          "usage: seqcl bench [--device SEL] [--quick] [--reps N] [--ablate] [--no-cold]\n"
          "                   [--json FILE]\n"
          "       seqcl bench --model DIR --src FILE [--max-steps N] [--batch-size B]\n"
          "                   [--reps N] [--device SEL] [--json FILE]\n\n"
          "Throughput and latency on each selected device (default: SEQCL_DEVICE, else all):\n"
          "greedy decoding (batch 1/64, hidden 256/512, source 20/50, additive/general),\n"
          "the encoder, one training step, copy bandwidth, the fused attention and GRU gate\n"
          "kernels against it, GEMM GFLOP/s, and cold start. Medians of --reps runs\n"
          "(default 5, --quick 3 on a subset) after a warm-up.\n"
          "  --ablate       also decode with each optimisation switched off alone\n"
          "  --no-cold      skip the cold-start runs (they spawn seqcl decode)\n"
          "  --model/--src  time `decode` of this model and token file only\n");
}

static int parse(int argc, char **argv, bench_opts *o) {
  memset(o, 0, sizeof *o);
  o->reps = 0;
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
    } else if (!strcmp(a, "--device") || !strcmp(a, "--json") || !strcmp(a, "--model") ||
               !strcmp(a, "--src") || !strcmp(a, "--reps") || !strcmp(a, "--max-steps") ||
               !strcmp(a, "--batch-size")) {
      if (i + 1 >= argc) return cli_usage_error(cmd, "%s needs a value", a);
      const char *v = argv[++i];
      long n = 0;
      if (!strcmp(a, "--device")) o->device = v;
      else if (!strcmp(a, "--json")) o->json = v;
      else if (!strcmp(a, "--model")) o->model = v;
      else if (!strcmp(a, "--src")) o->src = v;
      else if (cli_parse_int(v, 1, 1000000, &n) != 0)
        return cli_usage_error(cmd, "%s: '%s' is not an integer in [1, 1000000]", a, v);
      else if (!strcmp(a, "--reps")) o->reps = (int)n;
      else if (!strcmp(a, "--max-steps")) o->max_steps = (int)n;
      else o->batch = (int)n;
    } else {
      cli_usage_error(cmd, "unknown option '%s'", a);
      usage(stderr);
      return CLI_USAGE;
    }
  }
  if (!o->model != !o->src) return cli_usage_error(cmd, "--model and --src go together");
  if (!o->reps) o->reps = o->quick ? 3 : 5;
  if (!o->device || !*o->device) o->device = o->model ? "auto" : "all";
  return 0;
}

/* ---- helpers ---- */

static char tmp_root[4096];

/* A fresh directory under the bench's temporary root. */
static int make_dir(char *out, size_t cap, const char *name) {
  snprintf(out, cap, "%s/%s", tmp_root, name);
  return mkdir(out, 0700) == 0 ? 0 : -1;
}

static void remove_tree(const char *path) {
  pid_t pid = fork();
  if (pid == 0) {
    execlp("rm", "rm", "-rf", path, (char *)NULL);
    _exit(127);
  }
  if (pid > 0) waitpid(pid, NULL, 0);
}

/* n random source lines of length S over ids [0, V - 2) (BOS/EOS excluded). */
typedef struct src_lines {
  int32_t *ids;
  size_t *offsets;
  seqcl_seqs view;
} src_lines;

static int make_src(src_lines *s, int n, int S, int V, unsigned seed) {
  s->ids = malloc((size_t)n * S * sizeof(int32_t));
  s->offsets = malloc(((size_t)n + 1) * sizeof(size_t));
  if (!s->ids || !s->offsets) return -1;
  uint32_t r = 0x12345u + seed;
  for (size_t i = 0; i < (size_t)n * S; i++) {
    r = r * 1664525u + 1013904223u;
    s->ids[i] = (int32_t)((r >> 8) % (uint32_t)(V - 2));
  }
  for (int i = 0; i <= n; i++) s->offsets[i] = (size_t)i * S;
  s->view.count = (size_t)n;
  s->view.ids = s->ids;
  s->view.offsets = s->offsets;
  return 0;
}

static void free_src(src_lines *s) {
  free(s->ids);
  free(s->offsets);
  memset(s, 0, sizeof *s);
}

/* One greedy decode of all lines as one batch with a fixed step count. */
static seqcl_status decode_once(seqcl_model *m, const seqcl_seqs *src, int batch, int steps,
                                seqcl_decode_result **keep) {
  seqcl_decode_options o;
  seqcl_decode_options_init(&o);
  o.max_steps = steps;
  o.batch_size = batch;
  seqcl_decode_result *r = NULL;
  seqcl_status st = seqcl_model_decode(m, src, &o, &r);
  if (keep) *keep = r;
  else seqcl_decode_result_free(r);
  return st;
}

static void set_num(json_t *o, const char *k, double v) { json_object_set_new(o, k, json_real(v)); }
static void set_int(json_t *o, const char *k, long long v) {
  json_object_set_new(o, k, json_integer(v));
}
static void set_str(json_t *o, const char *k, const char *v) {
  json_object_set_new(o, k, json_string(v));
}

/* ---- decode + encoder ---- */

typedef struct decode_cfg {
  const char *score;
  int H, S, batch;
} decode_cfg;

enum { BENCH_D = 128, BENCH_V = 1000 };

/* A repetition lasts at least this long (a batch-1 decode takes milliseconds:
 * one scheduler hiccup on a shared machine would otherwise be the median). */
#define MIN_REP_SECONDS 0.25

static seqcl_status time_decode(seqcl_ctx *ctx, seqcl_model *m, const seqcl_seqs *src, int batch,
                                int steps, int reps, double *sec) {
  double t[64];
  if (reps > 64) reps = 64;
  (void)ctx;
  double t0 = sq_bench_now();
  SQ_TRY(decode_once(m, src, batch, steps, NULL)); /* warm-up, and the run's length */
  const double once = sq_bench_now() - t0;
  int inner = once > 0 && once < MIN_REP_SECONDS ? (int)(MIN_REP_SECONDS / once) + 1 : 1;
  if (inner > 1000) inner = 1000;
  for (int r = 0; r < reps; r++) {
    t0 = sq_bench_now();
    for (int i = 0; i < inner; i++) SQ_TRY(decode_once(m, src, batch, steps, NULL));
    t[r] = (sq_bench_now() - t0) / inner;
  }
  *sec = sq_bench_median(t, reps);
  return SEQCL_OK;
}

static seqcl_status time_encode(seqcl_ctx *ctx, seqcl_model *m, const seqcl_seqs *src, int n,
                                int reps, double *sec) {
  double t[64];
  if (reps > 64) reps = 64;
  int inner = 1;
  for (int r = -1; r < reps; r++) {
    double dt = 0;
    for (int i = 0; i < inner; i++) {
      sq_encoded e;
      double t0 = sq_bench_now();
      SQ_TRY(sq_encode(m, src, 0, n, &e));
      seqcl_status st = sq_finish(ctx);
      dt += sq_bench_now() - t0; /* the release is not part of encoding */
      sq_encoded_free(&e);
      SQ_TRY(st);
    }
    if (r < 0) { /* warm-up: sets how many encodes make one repetition */
      if (dt > 0 && dt < MIN_REP_SECONDS) inner = (int)(MIN_REP_SECONDS / dt) + 1;
      if (inner > 1000) inner = 1000;
    } else {
      t[r] = dt / inner;
    }
  }
  *sec = sq_bench_median(t, reps);
  return SEQCL_OK;
}

/* Counters per decoder step: the difference between runs of 2k and k steps
 * cancels the encoder, the setup and the final reads. */
static seqcl_status per_step_counts(seqcl_ctx *ctx, seqcl_model *m, const seqcl_seqs *src,
                                    int batch, int k, double out[3]) {
  sq_bench_counts a, b, c;
  sq_bench_counters(ctx, &a);
  SQ_TRY(decode_once(m, src, batch, k, NULL));
  sq_bench_counters(ctx, &b);
  SQ_TRY(decode_once(m, src, batch, 2 * k, NULL));
  sq_bench_counters(ctx, &c);
  out[0] = ((double)(c.launches - b.launches) - (double)(b.launches - a.launches)) / k;
  out[1] = ((double)(c.blas_calls - b.blas_calls) - (double)(b.blas_calls - a.blas_calls)) / k;
  out[2] = ((double)(c.syncs - b.syncs) - (double)(b.syncs - a.syncs)) / k;
  return SEQCL_OK;
}

static seqcl_status load_bench_model(seqcl_ctx *ctx, const char *score, int H, seqcl_model **m) {
  char dir[4200], name[64];
  snprintf(name, sizeof name, "model_%s_%d", score, H);
  snprintf(dir, sizeof dir, "%s/%s", tmp_root, name);
  struct stat sb;
  if (stat(dir, &sb) != 0) {
    if (make_dir(dir, sizeof dir, name) != 0)
      return sq_fail(ctx, SEQCL_ERR_IO, "bench: cannot create %s", dir);
    SQ_TRY(sq_bench_write_model(dir, BENCH_D, H, H, BENCH_V, score, 1, (unsigned)H));
  }
  return seqcl_model_load(ctx, dir, m);
}

static seqcl_status bench_decode(seqcl_ctx *ctx, const bench_opts *o, json_t *jdev) {
  json_t *jdec = json_array(), *jenc = json_array();
  json_object_set_new(jdev, "decode", jdec);
  json_object_set_new(jdev, "encoder", jenc);
  static const char *scores[] = {"additive", "general"};
  static const int Hs[] = {256, 512}, Ss[] = {20, 50}, Bs[] = {1, 64};
  printf("  decode (greedy, %d steps, embed %d, vocab %d, target tokens/s = batch x steps / "
         "time)\n",
         o->steps, BENCH_D, BENCH_V);
  printf("    %-8s %4s %3s %5s %12s %10s %9s %8s %6s %7s\n", "score", "H", "S", "batch",
         "tokens/s", "step ms", "launch/st", "blas/st", "syn/st", "enc tok/s");
  for (int si = 0; si < 2; si++)
    for (int hi = 0; hi < 2; hi++) {
      if (o->quick && hi == 1) continue;
      seqcl_model *m = NULL;
      SQ_TRY(load_bench_model(ctx, scores[si], Hs[hi], &m));
      seqcl_status st = SEQCL_OK;
      for (int s = 0; s < 2 && st == SEQCL_OK; s++)
        for (int b = 0; b < 2 && st == SEQCL_OK; b++) {
          if (o->quick && s == 1) continue;
          src_lines src;
          memset(&src, 0, sizeof src);
          if (make_src(&src, Bs[b], Ss[s], BENCH_V, 7)) {
            free_src(&src);
            st = sq_fail(ctx, SEQCL_ERR_OUT_OF_MEMORY, "bench: out of memory");
            break;
          }
          double t = 0, te = 0, cnt[3] = {0, 0, 0};
          st = time_decode(ctx, m, &src.view, Bs[b], o->steps, o->reps, &t);
          if (st == SEQCL_OK) st = time_encode(ctx, m, &src.view, Bs[b], o->reps, &te);
          if (st == SEQCL_OK) st = per_step_counts(ctx, m, &src.view, Bs[b], 8, cnt);
          free_src(&src);
          if (st != SEQCL_OK) break;
          const double tok = (double)Bs[b] * o->steps / t;
          const double step_ms = 1e3 * (t - te) / o->steps;
          const double enc_tok = (double)Bs[b] * Ss[s] / te;
          printf("    %-8s %4d %3d %5d %12.0f %10.3f %9.2f %8.2f %6.2f %9.0f\n", scores[si],
                 Hs[hi], Ss[s], Bs[b], tok, step_ms, cnt[0], cnt[1], cnt[2], enc_tok);
          fflush(stdout);
          json_t *j = json_object();
          set_str(j, "score", scores[si]);
          set_int(j, "hidden", Hs[hi]);
          set_int(j, "src_len", Ss[s]);
          set_int(j, "batch", Bs[b]);
          set_int(j, "steps", o->steps);
          set_num(j, "seconds", t);
          set_num(j, "tokens_per_s", tok);
          set_num(j, "step_ms", step_ms);
          set_num(j, "launches_per_step", cnt[0]);
          set_num(j, "clblast_calls_per_step", cnt[1]);
          set_num(j, "blocking_syncs_per_step", cnt[2]);
          json_array_append_new(jdec, j);
          json_t *je = json_object();
          set_str(je, "score", scores[si]);
          set_int(je, "hidden", Hs[hi]);
          set_int(je, "src_len", Ss[s]);
          set_int(je, "batch", Bs[b]);
          set_num(je, "seconds", te);
          set_num(je, "src_tokens_per_s", enc_tok);
          json_array_append_new(jenc, je);
        }
      seqcl_model_free(m);
      SQ_TRY(st);
    }
  return SEQCL_OK;
}

/* ---- ablation ---- */

/* Seconds per decode of src with the switches `mask` off: inner decodes in one
 * repetition (the load of a shared machine drifts, so the configurations are
 * timed in turns, one repetition each, rather than one after the other). */
static seqcl_status timed_decodes(seqcl_model *m, const seqcl_seqs *src, int batch, int steps,
                                  unsigned mask, int inner, double *sec) {
  sq_ablate_set(mask);
  double t0 = sq_bench_now();
  seqcl_status st = SEQCL_OK;
  for (int i = 0; i < inner && st == SEQCL_OK; i++) st = decode_once(m, src, batch, steps, NULL);
  *sec = (sq_bench_now() - t0) / inner;
  sq_ablate_set(0);
  return st;
}

enum { ABL_MAX = 16 };

static seqcl_status bench_ablate(seqcl_ctx *ctx, const bench_opts *o, json_t *jdev) {
  static const unsigned all_bits[] = {0,
                                      SQ_ABL_STACK_QUERY,
                                      SQ_ABL_FUSED_ATTN,
                                      SQ_ABL_KEYS_ONCE,
                                      SQ_ABL_ARGMAX,
                                      SQ_ABL_NO_SYNC,
                                      SQ_ABL_SMALL_GEMM,
                                      SQ_ABL_THREADS,
                                      SQ_ABL_FUSED_GREEDY};
  static const int Bs[] = {1, 64};
  const int host = !strcmp(ctx->be->ops->name, "host");
  unsigned bits[ABL_MAX];
  int nb = 0;
  for (size_t i = 0; i < sizeof all_bits / sizeof all_bits[0]; i++) {
    const unsigned bit = all_bits[i];
    /* switches that do not exist on this backend */
    if (host && bit == SQ_ABL_FUSED_GREEDY) continue;
    if (!host && bit == SQ_ABL_THREADS) continue;
    bits[nb++] = bit;
  }
  json_t *ja = json_array();
  json_object_set_new(jdev, "ablation", ja);
  printf("  ablation (additive, H 256, S 20; one optimisation off at a time, timed in turns)\n");
  printf("    %-22s %5s %12s %8s %9s %8s %7s\n", "off", "batch", "tokens/s", "ratio",
         "launch/st", "blas/st", "syn/st");
  seqcl_model *m = NULL;
  SQ_TRY(load_bench_model(ctx, "additive", 256, &m));
  seqcl_status st = SEQCL_OK;
  for (int b = 0; b < 2 && st == SEQCL_OK; b++) {
    src_lines src;
    memset(&src, 0, sizeof src);
    if (make_src(&src, Bs[b], 20, BENCH_V, 7)) {
      free_src(&src);
      st = sq_fail(ctx, SEQCL_ERR_OUT_OF_MEMORY, "bench: out of memory");
      break;
    }
    const int reps = o->reps > 64 ? 64 : o->reps;
    int inner[ABL_MAX];
    double cnt[ABL_MAX][3], t[ABL_MAX][64], med[ABL_MAX];
    for (int i = 0; i < nb && st == SEQCL_OK; i++) { /* warm-up, run length, counters */
      double once = 0;
      st = timed_decodes(m, &src.view, Bs[b], o->steps, bits[i], 1, &once);
      inner[i] = once > 0 && once < MIN_REP_SECONDS ? (int)(MIN_REP_SECONDS / once) + 1 : 1;
      if (inner[i] > 1000) inner[i] = 1000;
      sq_ablate_set(bits[i]);
      if (st == SEQCL_OK) st = per_step_counts(ctx, m, &src.view, Bs[b], 8, cnt[i]);
      sq_ablate_set(0);
    }
    for (int r = 0; r < reps && st == SEQCL_OK; r++)
      for (int i = 0; i < nb && st == SEQCL_OK; i++)
        st = timed_decodes(m, &src.view, Bs[b], o->steps, bits[i], inner[i], &t[i][r]);
    free_src(&src);
    if (st != SEQCL_OK) break;
    for (int i = 0; i < nb; i++) med[i] = sq_bench_median(t[i], reps);
    const double base = (double)Bs[b] * o->steps / med[0];
    for (int i = 0; i < nb; i++) {
      const double tok = (double)Bs[b] * o->steps / med[i];
      const char *name = bits[i] ? sq_ablate_name(bits[i]) : "(nothing: all on)";
      printf("    %-22s %5d %12.0f %8.2f %9.2f %8.2f %7.2f\n", name, Bs[b], tok, tok / base,
             cnt[i][0], cnt[i][1], cnt[i][2]);
      json_t *j = json_object();
      set_str(j, "off", bits[i] ? name : "none");
      set_int(j, "batch", Bs[b]);
      set_num(j, "tokens_per_s", tok);
      set_num(j, "ratio_to_all_on", tok / base);
      set_num(j, "launches_per_step", cnt[i][0]);
      set_num(j, "clblast_calls_per_step", cnt[i][1]);
      set_num(j, "blocking_syncs_per_step", cnt[i][2]);
      json_array_append_new(ja, j);
    }
    fflush(stdout);
  }
  seqcl_model_free(m);
  return st;
}

/* ---- kernels ---- */

static seqcl_status bench_kernels(seqcl_ctx *ctx, const bench_opts *o, json_t *jdev) {
  const int host = !strcmp(ctx->be->ops->name, "host");
  double copy = 0;
  SQ_TRY(sq_bench_copy(ctx, (size_t)(o->quick ? 32 : 128) << 20, o->reps, &copy));
  printf("  copy bandwidth (%d MiB buffer, read + write): %.2f GB/s\n", o->quick ? 32 : 128, copy);
  set_num(jdev, "copy_gbps", copy);

  json_t *jk = json_array();
  json_object_set_new(jdev, "kernels", jk);
  printf("    %-34s %10s %10s %9s\n", "kernel", "ms", "GB/s", "of copy");
  struct {
    sq_score kind;
    const char *name;
    int N, S, He;
  } att[] = {{SQ_SCORE_ADDITIVE, "attention additive", 4, 2048, 512},
             {SQ_SCORE_GENERAL, "attention general", 4, 2048, 512},
             {SQ_SCORE_ADDITIVE, "attention additive", 64, 20, 256}};
  for (size_t i = 0; i < sizeof att / sizeof att[0]; i++) {
    double g = 0, s = 0;
    SQ_TRY(sq_bench_attention(ctx, att[i].kind, att[i].N, att[i].S, att[i].He, o->reps, &g, &s));
    char label[96];
    snprintf(label, sizeof label, "%s N%d S%d He%d", att[i].name, att[i].N, att[i].S, att[i].He);
    printf("    %-34s %10.3f %10.2f %8.0f%%\n", label, 1e3 * s, g, 100 * g / copy);
    json_t *j = json_object();
    set_str(j, "kernel", label);
    set_num(j, "ms", 1e3 * s);
    set_num(j, "gbps", g);
    set_num(j, "fraction_of_copy", g / copy);
    json_array_append_new(jk, j);
  }
  const int gates[][2] = {{64, 512}, {4096, 512}};
  for (int i = 0; i < 2; i++) {
    double g = 0, s = 0;
    SQ_TRY(sq_bench_gates(ctx, gates[i][0], gates[i][1], o->reps, &g, &s));
    char label[96];
    snprintf(label, sizeof label, "gru gates N%d H%d", gates[i][0], gates[i][1]);
    printf("    %-34s %10.3f %10.2f %8.0f%%\n", label, 1e3 * s, g, 100 * g / copy);
    json_t *j = json_object();
    set_str(j, "kernel", label);
    set_num(j, "ms", 1e3 * s);
    set_num(j, "gbps", g);
    set_num(j, "fraction_of_copy", g / copy);
    json_array_append_new(jk, j);
  }

  /* GEMM: C[M,N] = A[M,K] B[N,K]^T at the model's shapes. */
  json_t *jg = json_array();
  json_object_set_new(jdev, "gemm", jg);
  const int shapes[][3] = {{1, 768, 256},   {64, 768, 256},   {1, 1536, 512},
                           {64, 1536, 512}, {64, 1000, 256},  {1280, 768, 128},
                           {3200, 1536, 128}, {512, 512, 512}};
  /* own kernel: the small-GEMM kernel (OpenCL) or the AVX-512 product (host,
   * where the CPU has it); library: CLBlast or OpenBLAS. On the host both are
   * split across the host threads. */
  const int have_own = !host || sq_gemm_nt_available();
  const char *lib = host ? "OpenBLAS" : "CLBlast";
  /* the host's first column is its default choice (the own kernel up to 256
   * rows, OpenBLAS beyond) */
  printf("    %-22s %12s %12s %10s\n", "gemm M,N,K (B^T)", host ? "seqcl" : "own kernel", lib,
         "best");
  for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
    const int M = shapes[i][0], N = shapes[i][1], K = shapes[i][2];
    if (o->quick && (M == 3200 || K == 512)) continue;
    double g_own = 0, g_lib = 0, s = 0;
    seqcl_status st = SEQCL_OK;
    if (have_own) {
      sq_ablate_set(host ? 0 : SQ_FORCE_SMALL_GEMM);
      st = sq_bench_gemm(ctx, M, N, K, o->reps, &g_own, &s);
    }
    sq_ablate_set(SQ_ABL_SMALL_GEMM);
    if (st == SEQCL_OK) st = sq_bench_gemm(ctx, M, N, K, o->reps, &g_lib, &s);
    sq_ablate_set(0);
    SQ_TRY(st);
    char label[64];
    snprintf(label, sizeof label, "%d,%d,%d", M, N, K);
    const double best = g_own > g_lib ? g_own : g_lib;
    if (have_own)
      printf("    %-22s %12.2f %12.2f %10.2f\n", label, g_own, g_lib, best);
    else
      printf("    %-22s %12s %12.2f %10.2f\n", label, "-", g_lib, best);
    json_t *j = json_object();
    set_int(j, "M", M);
    set_int(j, "N", N);
    set_int(j, "K", K);
    if (have_own) set_num(j, "own_kernel_gflops", g_own);
    set_num(j, host ? "openblas_gflops" : "clblast_gflops", g_lib);
    set_num(j, "best_gflops", best);
    json_array_append_new(jg, j);
  }
  return SEQCL_OK;
}

/* ---- training ---- */

static seqcl_status bench_train(seqcl_ctx *ctx, const bench_opts *o, json_t *jdev) {
  seqcl_train_options t;
  seqcl_train_options_default(&t);
  t.steps = o->quick ? 10 : 40;
  seqcl_train_result r;
  SQ_TRY(seqcl_train_reverse(ctx, &t, &r));
  const double ms = 1e3 * r.train_seconds / t.steps;
  printf("  train (reverse task, batch 64, hidden 64, %d Adam steps): %.2f ms/step\n", t.steps,
         ms);
  set_num(jdev, "train_step_ms", ms);
  return SEQCL_OK;
}

/* ---- cold start ---- */

/* Wall time of `seqcl decode` (this executable) for one line, one step. */
static int spawn_decode(const char *selector, const char *model, const char *src, const char *out,
                        const char *cache, const char *pocl_cache, double *sec) {
  double t0 = sq_bench_now();
  pid_t pid = fork();
  if (pid < 0) return -1;
  if (pid == 0) {
    setenv("SEQCL_CACHE_DIR", cache, 1);
    setenv("POCL_CACHE_DIR", pocl_cache, 1);
    execl("/proc/self/exe", "seqcl", "decode", "--device", selector, "--model", model, "--src",
          src, "--max-steps", "1", "--out", out, (char *)NULL);
    _exit(127);
  }
  int status = 0;
  if (waitpid(pid, &status, 0) < 0) return -1;
  *sec = sq_bench_now() - t0;
  return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -1;
}

static seqcl_status bench_cold(seqcl_ctx *ctx, const bench_opts *o, json_t *jdev) {
  char model[4200], src[4200], out[4200], cache[4200], pcache[4300], name[64];
  snprintf(model, sizeof model, "%s/model_additive_256", tmp_root);
  struct stat sb;
  if (stat(model, &sb) != 0) {
    seqcl_model *m = NULL;
    SQ_TRY(load_bench_model(ctx, "additive", 256, &m));
    seqcl_model_free(m);
  }
  snprintf(src, sizeof src, "%s/cold_src.txt", tmp_root);
  snprintf(out, sizeof out, "%s/cold_out.txt", tmp_root);
  FILE *f = fopen(src, "w");
  if (!f) return sq_fail(ctx, SEQCL_ERR_IO, "bench: cannot write %s", src);
  for (int j = 0; j < 20; j++) fprintf(f, "%d%c", (j * 37) % 900, j == 19 ? '\n' : ' ');
  fclose(f);
  const char *sel = seqcl_ctx_device(ctx)->selector;
  snprintf(name, sizeof name, "cache_%s", sel);
  for (char *p = name; *p; p++)
    if (*p == ':' || *p == '.') *p = '_';
  if (make_dir(cache, sizeof cache, name) != 0)
    return sq_fail(ctx, SEQCL_ERR_IO, "bench: cannot create %s", cache);
  snprintf(pcache, sizeof pcache, "%s/pocl", cache);
  if (mkdir(pcache, 0700) != 0) return sq_fail(ctx, SEQCL_ERR_IO, "bench: cannot create %s", pcache);
  double cold = 0, warm[16];
  int nw = o->quick ? 2 : 3;
  if (spawn_decode(sel, model, src, out, cache, pcache, &cold) != 0)
    return sq_fail(ctx, SEQCL_ERR_INTERNAL, "bench: seqcl decode failed (cold start, %s)", sel);
  for (int i = 0; i < nw; i++)
    if (spawn_decode(sel, model, src, out, cache, pcache, &warm[i]) != 0)
      return sq_fail(ctx, SEQCL_ERR_INTERNAL, "bench: seqcl decode failed (warm start, %s)", sel);
  const double w = sq_bench_median(warm, nw);
  printf("  first token (new process, 1 line, 1 step, H 256): empty cache %.3f s, warm cache "
         "%.3f s\n",
         cold, w);
  json_t *j = json_object();
  set_num(j, "empty_cache_s", cold);
  set_num(j, "warm_cache_s", w);
  json_object_set_new(jdev, "first_token", j);
  return SEQCL_OK;
}

/* ---- one device ---- */

static seqcl_status bench_device(const seqcl_device_info *d, const bench_opts *o, json_t *jdev) {
  seqcl_ctx *ctx = NULL;
  SQ_TRY(seqcl_ctx_open_info(d, &ctx));
  printf("\n== %s: %s (%s)\n", d->selector, d->name, d->platform[0] ? d->platform : "host path");
  set_str(jdev, "selector", d->selector);
  set_str(jdev, "name", d->name);
  set_str(jdev, "platform", d->platform);
  fflush(stdout);
  seqcl_status st = bench_kernels(ctx, o, jdev);
  if (st == SEQCL_OK) st = bench_decode(ctx, o, jdev);
  if (st == SEQCL_OK && o->ablate) st = bench_ablate(ctx, o, jdev);
  if (st == SEQCL_OK) {
    seqcl_status ts = bench_train(ctx, o, jdev);
    if (ts != SEQCL_OK) {
      /* a backend without training kernels still gets the other figures */
      printf("  train: not available (%s)\n", seqcl_last_message());
      set_str(jdev, "train_error", seqcl_last_message());
    }
  }
  if (st == SEQCL_OK && o->cold) st = bench_cold(ctx, o, jdev);
  seqcl_ctx_close(ctx);
  return st;
}

/* ---- the peer mode: one model, one token file ---- */

static int bench_file(const bench_opts *o, json_t *root) {
  seqcl_ctx *ctx = NULL;
  seqcl_model *m = NULL;
  int rc = cli_open_model(cmd, o->device, o->model, &ctx, &m);
  if (rc != CLI_OK) return rc;
  sq_seqs s;
  memset(&s, 0, sizeof s);
  seqcl_status st = sq_tokens_read(o->src, seqcl_model_src_vocab_size(m), NULL, &s);
  double t = 0;
  size_t tokens = 0;
  if (st == SEQCL_OK) {
    seqcl_seqs v = cli_seqs(&s);
    seqcl_decode_options opt;
    seqcl_decode_options_init(&opt);
    opt.max_steps = o->max_steps;
    opt.batch_size = o->batch ? o->batch : (int)s.count;
    double ts[64];
    int reps = o->reps > 64 ? 64 : o->reps;
    for (int r = -1; r < reps && st == SEQCL_OK; r++) {
      seqcl_decode_result *res = NULL;
      double t0 = sq_bench_now();
      st = seqcl_model_decode(m, &v, &opt, &res);
      double dt = sq_bench_now() - t0;
      if (st == SEQCL_OK && r >= 0) ts[r] = dt;
      if (st == SEQCL_OK) {
        tokens = 0;
        for (size_t i = 0; i < res->count; i++) tokens += (size_t)res->steps[i];
      }
      seqcl_decode_result_free(res);
    }
    if (st == SEQCL_OK) t = sq_bench_median(ts, reps);
  }
  if (st == SEQCL_OK) {
    set_str(root, "device", seqcl_ctx_device(ctx)->selector);
    set_num(root, "decode_seconds", t);
    set_int(root, "decoder_steps_total", (long long)tokens);
    set_num(root, "tokens_per_s", (double)tokens / t);
    printf("decode %s: %zu lines, %.6f s (median of %d), %.0f target tokens/s\n",
           seqcl_ctx_device(ctx)->selector, s.count, t, o->reps, (double)tokens / t);
  }
  sq_seqs_free(&s);
  seqcl_model_free(m);
  seqcl_ctx_close(ctx);
  return st == SEQCL_OK ? CLI_OK : cli_fail(cmd, st);
}

static int write_json(const char *path, json_t *root) {
  char tmp[4200];
  snprintf(tmp, sizeof tmp, "%s.tmp%ld", path, (long)getpid());
  if (json_dump_file(root, tmp, JSON_INDENT(2) | JSON_SORT_KEYS) != 0 || rename(tmp, path) != 0) {
    unlink(tmp);
    fprintf(stderr, "seqcl bench: cannot write %s\n", path);
    return CLI_RUNTIME;
  }
  return CLI_OK;
}

int cmd_bench(int argc, char **argv) {
  bench_opts o;
  int rc = parse(argc, argv, &o);
  if (rc < 0) return CLI_OK;
  if (rc) return rc;
  json_t *root = json_object();
  if (o.model) {
    rc = bench_file(&o, root);
    if (rc == CLI_OK && o.json) rc = write_json(o.json, root);
    json_decref(root);
    return rc;
  }
  const char *tmp = getenv("TMPDIR");
  snprintf(tmp_root, sizeof tmp_root, "%s/seqcl-bench-XXXXXX", tmp && *tmp ? tmp : "/tmp");
  if (!mkdtemp(tmp_root)) {
    json_decref(root);
    fprintf(stderr, "seqcl bench: cannot create a temporary directory\n");
    return CLI_RUNTIME;
  }
  seqcl_device_info *devs = NULL;
  size_t n = 0;
  seqcl_status st = seqcl_devices_select(o.device, &devs, &n);
  json_t *jdevs = json_array();
  json_object_set_new(root, "devices", jdevs);
  set_int(root, "reps", o.reps);
  set_int(root, "quick", o.quick);
  for (size_t i = 0; st == SEQCL_OK && i < n; i++) {
    json_t *jd = json_object();
    json_array_append_new(jdevs, jd);
    st = bench_device(&devs[i], &o, jd);
  }
  seqcl_devices_free(devs);
  remove_tree(tmp_root);
  rc = st == SEQCL_OK ? CLI_OK : cli_fail(cmd, st);
  if (rc == CLI_OK && o.json) rc = write_json(o.json, root);
  json_decref(root);
  return rc;
}
