/* The benchmark harness (harness.h): its temporary folder and models, the
 * kernel and GEMM tables, training, cold start and the peer mode. The decode
 * tables: harness_decode.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench/bench.h"
#include "bench/harness.h"
#include "core/ctx.h"
#include "core/error.h"
#include "model/tokens.h"

seqcl_status sq_bench_begin(sq_bench_cfg *cfg) {
  const char *tmp = getenv("TMPDIR");
  snprintf(cfg->tmp_root, sizeof cfg->tmp_root, "%s/seqcl-bench-XXXXXX",
           tmp && *tmp ? tmp : "/tmp");
  if (!mkdtemp(cfg->tmp_root)) {
    cfg->tmp_root[0] = '\0';
    return sq_fail(NULL, SEQCL_ERR_IO, "bench: cannot create a temporary directory");
  }
  return SEQCL_OK;
}

void sq_bench_end(sq_bench_cfg *cfg) {
  if (!cfg->tmp_root[0]) return;
  pid_t pid = fork();
  if (pid == 0) {
    execlp("rm", "rm", "-rf", cfg->tmp_root, (char *)NULL);
    _exit(127);
  }
  if (pid > 0) waitpid(pid, NULL, 0);
  cfg->tmp_root[0] = '\0';
}

void sq_bench_info(seqcl_ctx *ctx, sq_bench_backend_info *out) {
  const sq_backend *be = ctx->be;
  out->blas = be->ops->blas ? be->ops->blas : be->ops->name;
  out->own_gemm = be->ops->supports && be->ops->supports(be, SQ_CAP_OWN_GEMM);
  /* the host has no forced form: it picks its own kernel by shape */
  out->own_default = be->ops->kind == SQ_BACKEND_HOST;
}

seqcl_status sq_bench_model(seqcl_ctx *ctx, const sq_bench_cfg *cfg, const char *score, int H,
                            seqcl_model **m) {
  char dir[4200];
  snprintf(dir, sizeof dir, "%s/model_%s_%d", cfg->tmp_root, score, H);
  struct stat sb;
  if (stat(dir, &sb) != 0) {
    if (mkdir(dir, 0700) != 0) return sq_fail(ctx, SEQCL_ERR_IO, "bench: cannot create %s", dir);
    SQ_TRY(sq_bench_write_model(dir, SQ_BENCH_EMBED, H, H, SQ_BENCH_VOCAB, score, 1,
                                (unsigned)H));
  }
  return seqcl_model_load(ctx, dir, m);
}

/* ---- kernels ---- */

static void kernel_row(const sq_bench_sink *sink, const char *label, double s, double g,
                       double copy) {
  sq_bench_kernel_row r;
  snprintf(r.label, sizeof r.label, "%s", label);
  r.ms = 1e3 * s;
  r.gbps = g;
  r.fraction_of_copy = g / copy;
  if (sink->kernel) sink->kernel(sink->user, &r);
}

seqcl_status sq_bench_kernels(seqcl_ctx *ctx, const sq_bench_cfg *cfg,
                              const sq_bench_sink *sink) {
  double copy = 0;
  const int mib = cfg->quick ? 32 : 128;
  if (sink->table) sink->table(sink->user, SQ_BENCH_KERNELS);
  SQ_TRY(sq_bench_copy(ctx, (size_t)mib << 20, cfg->reps, &copy));
  if (sink->copy) sink->copy(sink->user, mib, copy);
  struct {
    sq_score kind;
    const char *name;
    int N, S, He;
  } att[] = {{SQ_SCORE_ADDITIVE, "attention additive", 4, 2048, 512},
             {SQ_SCORE_GENERAL, "attention general", 4, 2048, 512},
             {SQ_SCORE_ADDITIVE, "attention additive", 64, 20, 256}};
  for (size_t i = 0; i < sizeof att / sizeof att[0]; i++) {
    double g = 0, s = 0;
    SQ_TRY(sq_bench_attention(ctx, att[i].kind, att[i].N, att[i].S, att[i].He, cfg->reps, &g, &s));
    char label[96];
    snprintf(label, sizeof label, "%s N%d S%d He%d", att[i].name, att[i].N, att[i].S, att[i].He);
    kernel_row(sink, label, s, g, copy);
  }
  const int gates[][2] = {{64, 512}, {4096, 512}};
  for (int i = 0; i < 2; i++) {
    double g = 0, s = 0;
    SQ_TRY(sq_bench_gates(ctx, gates[i][0], gates[i][1], cfg->reps, &g, &s));
    char label[96];
    snprintf(label, sizeof label, "gru gates N%d H%d", gates[i][0], gates[i][1]);
    kernel_row(sink, label, s, g, copy);
  }

  /* GEMM: C[M,N] = A[M,K] B[N,K]^T at the model's shapes. Own kernel: the
   * small-GEMM kernel (OpenCL) forced for every product it supports, or the
   * host's default choice (its AVX-512 product up to 256 rows, or 24 where
   * OpenBLAS runs AVX-512 kernels, beyond that its product over the weights
   * packed once, or OpenBLAS where the CPU has no AVX-512: the host has no
   * forced form); library: CLBlast or OpenBLAS (packing B in every product). On
   * the host both are split across the host threads. */
  if (sink->table) sink->table(sink->user, SQ_BENCH_GEMM);
  const int shapes[][3] = {{1, 768, 256},   {64, 768, 256},   {1, 1536, 512},
                           {64, 1536, 512}, {64, 1000, 256},  {1280, 768, 128},
                           {3200, 1536, 128}, {512, 512, 512}};
  sq_bench_backend_info info;
  sq_bench_info(ctx, &info);
  const unsigned saved = sq_ablated(ctx);
  for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
    const int M = shapes[i][0], N = shapes[i][1], K = shapes[i][2];
    if (cfg->quick && (M == 3200 || K == 512)) continue;
    double g_own = 0, g_lib = 0, s = 0;
    seqcl_status st = SEQCL_OK;
    if (info.own_gemm) {
      sq_ctx_set_ablated(ctx, info.own_default ? 0 : SQ_FORCE_SMALL_GEMM);
      st = sq_bench_gemm(ctx, M, N, K, cfg->reps, &g_own, &s);
    }
    sq_ctx_set_ablated(ctx, SQ_ABL_SMALL_GEMM | SQ_ABL_PACKED);
    if (st == SEQCL_OK) st = sq_bench_gemm(ctx, M, N, K, cfg->reps, &g_lib, &s);
    sq_ctx_set_ablated(ctx, saved);
    SQ_TRY(st);
    sq_bench_gemm_row r = {M, N, K, g_own, g_lib, g_own > g_lib ? g_own : g_lib};
    if (sink->gemm) sink->gemm(sink->user, &r);
  }
  return SEQCL_OK;
}

/* ---- training ---- */

seqcl_status sq_bench_train(seqcl_ctx *ctx, const sq_bench_cfg *cfg, int *steps,
                            double *ms_per_step) {
  seqcl_train_options t;
  seqcl_train_options_init(&t);
  t.steps = cfg->quick ? 10 : 40;
  seqcl_train_result r;
  *steps = t.steps;
  *ms_per_step = 0;
  SQ_TRY(seqcl_train_reverse(ctx, &t, &r));
  *ms_per_step = 1e3 * r.train_seconds / t.steps;
  return SEQCL_OK;
}

/* ---- cold start ---- */

/* Wall time of `seqcl decode` (exe) for one line, one step. */
static int spawn_decode(const char *exe, const char *selector, const char *model,
                        const char *src, const char *out, const char *cache,
                        const char *pocl_cache, double *sec) {
  double t0 = sq_bench_now();
  pid_t pid = fork();
  if (pid < 0) return -1;
  if (pid == 0) {
    setenv("SEQCL_CACHE_DIR", cache, 1);
    setenv("POCL_CACHE_DIR", pocl_cache, 1);
    execl(exe, "seqcl", "decode", "--device", selector, "--model", model, "--src", src,
          "--max-steps", "1", "--out", out, (char *)NULL);
    _exit(127);
  }
  int status = 0;
  if (waitpid(pid, &status, 0) < 0) return -1;
  *sec = sq_bench_now() - t0;
  return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -1;
}

seqcl_status sq_bench_cold(seqcl_ctx *ctx, const sq_bench_cfg *cfg, double *empty_s,
                           double *warm_s) {
  char model[4200], src[4200], out[4200], cache[4200], pcache[4300], name[64];
  snprintf(model, sizeof model, "%s/model_additive_256", cfg->tmp_root);
  struct stat sb;
  if (stat(model, &sb) != 0) {
    seqcl_model *m = NULL;
    SQ_TRY(sq_bench_model(ctx, cfg, "additive", 256, &m));
    seqcl_model_free(m);
  }
  snprintf(src, sizeof src, "%s/cold_src.txt", cfg->tmp_root);
  snprintf(out, sizeof out, "%s/cold_out.txt", cfg->tmp_root);
  FILE *f = fopen(src, "w");
  if (!f) return sq_fail(ctx, SEQCL_ERR_IO, "bench: cannot write %s", src);
  for (int j = 0; j < 20; j++) fprintf(f, "%d%c", (j * 37) % 900, j == 19 ? '\n' : ' ');
  fclose(f);
  const char *sel = ctx->info.selector;
  snprintf(name, sizeof name, "cache_%s", sel);
  for (char *p = name; *p; p++)
    if (*p == ':' || *p == '.') *p = '_';
  snprintf(cache, sizeof cache, "%s/%s", cfg->tmp_root, name);
  if (mkdir(cache, 0700) != 0) return sq_fail(ctx, SEQCL_ERR_IO, "bench: cannot create %s", cache);
  snprintf(pcache, sizeof pcache, "%s/pocl", cache);
  if (mkdir(pcache, 0700) != 0) return sq_fail(ctx, SEQCL_ERR_IO, "bench: cannot create %s", pcache);
  double warm[16];
  const int nw = cfg->quick ? 2 : 3;
  if (spawn_decode(cfg->exe, sel, model, src, out, cache, pcache, empty_s) != 0)
    return sq_fail(ctx, SEQCL_ERR_INTERNAL, "bench: seqcl decode failed (cold start, %s)", sel);
  for (int i = 0; i < nw; i++)
    if (spawn_decode(cfg->exe, sel, model, src, out, cache, pcache, &warm[i]) != 0)
      return sq_fail(ctx, SEQCL_ERR_INTERNAL, "bench: seqcl decode failed (warm start, %s)", sel);
  *warm_s = sq_bench_median(warm, nw);
  return SEQCL_OK;
}

/* ---- the peer mode ---- */

seqcl_status sq_bench_file(seqcl_model *m, const char *model_dir, const char *src_path,
                           int max_steps, int batch, int beam, int reps, const char *exe,
                           sq_bench_point_row *row) {
  sq_seqs s;
  memset(&s, 0, sizeof s);
  SQ_TRY(sq_tokens_read(src_path, seqcl_model_src_vocab_size(m), NULL, &s));
  seqcl_seqs v = {s.count, s.ids, s.offsets};
  if (max_steps <= 0) { /* decode's default, spelled out for the whole-process run */
    size_t longest = 0;
    for (size_t i = 0; i < s.count; i++)
      if (s.offsets[i + 1] - s.offsets[i] > longest) longest = s.offsets[i + 1] - s.offsets[i];
    max_steps = (int)(2 * longest + 10);
  }
  const sq_bench_point_in in = {.m = m, .src = &v, .batch = batch ? batch : (int)s.count,
                                .beam = beam, .steps = max_steps, .reps = reps, .exe = exe,
                                .model_dir = model_dir, .src_path = src_path};
  seqcl_status st = s.count ? sq_bench_point(m->ctx, &in, row)
                            : sq_fail(m->ctx, SEQCL_ERR_INVALID_ARGUMENT, "bench: %s has no lines",
                                      src_path);
  if (st == SEQCL_OK) snprintf(row->label, sizeof row->label, "file");
  sq_seqs_free(&s);
  return st;
}
