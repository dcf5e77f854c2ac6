/* One decode workload measured every way the grid reports it (harness.h):
 * tokens/s in this process and as a whole `seqcl decode` process, the FLOPs
 * and weight bytes of a decoder step counted from the model's shapes, and what
 * the machine allows for the same work: the backend's GEMM at the step's own
 * products (M = rows, N and K from the weights) when a step has 16 rows or
 * more, else the copy bandwidth of a buffer as large as the weights a step
 * reads (one row per line reads every weight once per step, so it is bound by
 * memory, not arithmetic). */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench/bench.h"
#include "bench/harness.h"
#include "core/ctx.h"
#include "core/error.h"

/* Decoder steps run over all batches: a batch runs until its last line ends. */
static size_t steps_run(const seqcl_decode_result *r, int batch) {
  size_t total = 0;
  for (size_t i = 0; i < r->count; i += (size_t)batch) {
    int most = 0;
    for (size_t j = i; j < r->count && j < i + (size_t)batch; j++)
      if (r->steps[j] > most) most = r->steps[j];
    total += (size_t)most;
  }
  return total;
}

seqcl_status sq_bench_decode_once(seqcl_model *m, const seqcl_seqs *src, int batch, int beam,
                                  int steps, size_t *tokens, size_t *batch_steps) {
  seqcl_decode_options o;
  seqcl_decode_options_init(&o);
  o.max_steps = steps;
  o.batch_size = batch;
  o.beam = beam;
  seqcl_decode_result *r = NULL;
  seqcl_status st = seqcl_model_decode(m, src, &o, &r);
  if (st == SEQCL_OK && tokens) {
    *tokens = 0;
    for (size_t i = 0; i < r->count; i++) *tokens += (size_t)r->steps[i];
  }
  if (st == SEQCL_OK && batch_steps) *batch_steps = steps_run(r, batch);
  seqcl_decode_result_free(r);
  return st;
}

/* How many decodes make a repetition of at least SQ_BENCH_MIN_REP_S, from
 * one decode's time. */
static int decodes_per_rep(double once) {
  int inner = once > 0 && once < SQ_BENCH_MIN_REP_S ? (int)(SQ_BENCH_MIN_REP_S / once) + 1 : 1;
  return inner > 1000 ? 1000 : inner;
}

/* Seconds per step of a decode that took `full` over `steps` steps, less the
 * same decode at one step a batch (`one`, over steps1 steps); all of it per
 * step when noise leaves nothing to take off. */
static double step_of(double full, size_t steps, double one, size_t steps1) {
  return steps > steps1 && full > one ? (full - one) / (double)(steps - steps1)
                                      : full / (double)(steps ? steps : 1);
}

seqcl_status sq_bench_time_decode(seqcl_model *m, const seqcl_seqs *src, int batch, int beam,
                                  int steps, int reps, double *sec, size_t *tokens,
                                  size_t *batch_steps) {
  double t[64];
  if (reps > 64) reps = 64;
  if (reps < 1) reps = 1;
  double t0 = sq_bench_now();
  /* warm-up, the run's length and its work */
  SQ_TRY(sq_bench_decode_once(m, src, batch, beam, steps, tokens, batch_steps));
  const int inner = decodes_per_rep(sq_bench_now() - t0);
  for (int r = 0; r < reps; r++) {
    t0 = sq_bench_now();
    for (int i = 0; i < inner; i++)
      SQ_TRY(sq_bench_decode_once(m, src, batch, beam, steps, NULL, NULL));
    t[r] = (sq_bench_now() - t0) / inner;
  }
  *sec = sq_bench_median(t, reps);
  return SEQCL_OK;
}

seqcl_status sq_bench_step_seconds(seqcl_model *m, const seqcl_seqs *src, int batch, int beam,
                                   int reps, double seconds, size_t batch_steps, double *step) {
  double t1 = 0;
  size_t steps1 = 0;
  SQ_TRY(sq_bench_time_decode(m, src, batch, beam, 1, reps, &t1, NULL, &steps1));
  *step = step_of(seconds, batch_steps, t1, steps1);
  return SEQCL_OK;
}

seqcl_status sq_bench_time_encode(seqcl_ctx *ctx, seqcl_model *m, const seqcl_seqs *src, int n,
                                  int reps, double *sec) {
  double t[64];
  if (reps > 64) reps = 64;
  if (reps < 1) reps = 1;
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
      if (dt > 0 && dt < SQ_BENCH_MIN_REP_S) inner = (int)(SQ_BENCH_MIN_REP_S / dt) + 1;
      if (inner > 1000) inner = 1000;
    } else {
      t[r] = dt / inner;
    }
  }
  *sec = sq_bench_median(t, reps);
  return SEQCL_OK;
}

/* The three products of a decoder step over R rows (decoder.c): s_{t-1}
 * against [W_hh ; W_q], [e ; c] against W_ih, and the output over s or
 * [s ; c]. */
typedef struct step_gemm {
  int M, N, K;
} step_gemm;

static int query_width(const seqcl_model *m) {
  switch (m->cfg.score) {
  case SQ_SCORE_ADDITIVE: return m->cfg.attn_dim;
  case SQ_SCORE_GENERAL: return m->He;
  default: return 0;
  }
}

static void step_gemms(const seqcl_model *m, int R, step_gemm g[3]) {
  const sq_config *c = &m->cfg;
  const int Hd = c->dec_hidden, He = m->He;
  g[0] = (step_gemm){R, 3 * Hd + query_width(m), Hd};
  /* with the embedding table the input product reads the context alone */
  g[1] = (step_gemm){R, 3 * Hd, sq_dec_uses_table(m) ? He : c->embed_dim + He};
  g[2] = (step_gemm){R, c->tgt_vocab, c->output == SQ_OUTPUT_STATE ? Hd : Hd + He};
}

void sq_bench_step_work(const seqcl_model *m, int R, int S, double *flops, double *bytes) {
  step_gemm g[3];
  step_gemms(m, R, g);
  double f = 0, w = 0;
  /* the weights, read once per step: 2 bytes each at a reduced precision */
  const double wbytes = seqcl_model_precision(m) == SEQCL_PRECISION_F32 ? 4.0 : 2.0;
  for (int i = 0; i < 3; i++) {
    f += 2.0 * g[i].M * g[i].N * g[i].K;
    w += wbytes / 4.0 * g[i].N * g[i].K;
  }
  const int He = m->He, A = m->cfg.score == SQ_SCORE_ADDITIVE ? m->cfg.attn_dim : 0;
  /* attention per row and position: additive adds the query to the projected
   * key and takes v . tanh(.) (3A, the tanh not counted), the other scores
   * one dot product (2He); the context another 2He */
  f += (double)R * S * (A ? 3.0 * A + 2.0 * He : 4.0 * He);
  w += (double)R * S * (He + A); /* keys (and projected keys), per row */
  if (sq_dec_uses_table(m)) w += (double)R * 3 * m->cfg.dec_hidden; /* a table row each */
  *flops = f;
  *bytes = 4.0 * w;
}

/* Wall seconds of `exe decode` over the model and token file: the whole
 * process, start-up and model load included. Its standard output (nothing
 * with --out) goes to /dev/null. */
static int spawn_decode(const char *exe, const char *selector, const sq_bench_point_in *in,
                        double *sec) {
  char steps[32], batch[32], beam[32], out[4200];
  snprintf(steps, sizeof steps, "%d", in->steps);
  snprintf(batch, sizeof batch, "%d", in->batch);
  snprintf(beam, sizeof beam, "%d", in->beam);
  snprintf(out, sizeof out, "%s.out", in->src_path);
  const double t0 = sq_bench_now();
  pid_t pid = fork();
  if (pid < 0) return -1;
  if (pid == 0) {
    int fd = open("/dev/null", O_WRONLY);
    if (fd >= 0) dup2(fd, 1);
    execl(exe, "seqcl", "decode", "--device", selector, "--model", in->model_dir, "--src",
          in->src_path, "--max-steps", steps, "--batch-size", batch, "--beam", beam, "--out",
          out, "--precision", seqcl_precision_name(seqcl_model_precision(in->m)), (char *)NULL);
    _exit(127);
  }
  int status = 0;
  if (waitpid(pid, &status, 0) < 0) return -1;
  *sec = sq_bench_now() - t0;
  unlink(out);
  return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -1;
}

static seqcl_status time_process(seqcl_ctx *ctx, const sq_bench_point_in *in, double *sec) {
  double t[16];
  int reps = in->reps < 1 ? 1 : in->reps > 16 ? 16 : in->reps;
  for (int r = 0; r < reps; r++)
    if (spawn_decode(in->exe, ctx->info.selector, in, &t[r]) != 0)
      return sq_fail(ctx, SEQCL_ERR_INTERNAL, "bench: %s decode --model %s --src %s failed",
                     in->exe, in->model_dir, in->src_path);
  *sec = sq_bench_median(t, reps);
  return SEQCL_OK;
}

/* The machine's figure for a step's work: GEMM GFLOP/s over the step's three
 * products (their FLOPs over the sum of their best times), or copy GB/s. */
static seqcl_status ceiling(seqcl_ctx *ctx, const seqcl_model *m, int R, double bytes, int reps,
                            double *value) {
  if (R >= SQ_BENCH_GEMM_ROWS) {
    step_gemm g[3];
    step_gemms(m, R, g);
    double f = 0, t = 0;
    /* each product's faster of the library's choice and the BLAS alone */
    const unsigned saved = sq_ablated(ctx);
    for (int i = 0; i < 3; i++) {
      double gf = 0, s = 0, s_blas = 0;
      SQ_TRY(sq_bench_gemm(ctx, g[i].M, g[i].N, g[i].K, reps, &gf, &s));
      sq_ctx_set_ablated(ctx, saved | SQ_ABL_SMALL_GEMM | SQ_ABL_PACKED);
      const seqcl_status st = sq_bench_gemm(ctx, g[i].M, g[i].N, g[i].K, reps, &gf, &s_blas);
      sq_ctx_set_ablated(ctx, saved);
      SQ_TRY(st);
      f += 2.0 * g[i].M * g[i].N * g[i].K;
      t += s < s_blas ? s : s_blas;
    }
    *value = f / t / 1e9;
  } else {
    size_t b = (size_t)bytes;
    if (b < (1u << 16)) b = 1u << 16;
    SQ_TRY(sq_bench_copy(ctx, b, reps, value));
  }
  return SEQCL_OK;
}

/* Seconds per decode of src, `inner` decodes in a row (no warm-up). */
static seqcl_status time_decodes(const sq_bench_point_in *in, int batch, int steps, int inner,
                                 double *sec) {
  const double t0 = sq_bench_now();
  for (int i = 0; i < inner; i++)
    SQ_TRY(sq_bench_decode_once(in->m, in->src, batch, in->beam, steps, NULL, NULL));
  *sec = (sq_bench_now() - t0) / inner;
  return SEQCL_OK;
}

seqcl_status sq_bench_point(seqcl_ctx *ctx, const sq_bench_point_in *in,
                            sq_bench_point_row *row) {
  seqcl_model *m = in->m;
  const sq_config *c = &m->cfg;
  const size_t lines = in->src->count;
  int S = 1;
  for (size_t i = 0; i < lines; i++) {
    const int len = (int)(in->src->offsets[i + 1] - in->src->offsets[i]);
    if (len > S) S = len;
  }
  const int batch = in->batch < 1 ? 1 : in->batch;
  const int first_n = (size_t)batch < lines ? batch : (int)lines;
  const int R = first_n * in->beam;
  memset(row, 0, sizeof *row);
  row->hidden = c->dec_hidden;
  row->enc_hidden = c->enc_hidden;
  row->enc_layers = c->enc_layers;
  row->bidirectional = c->bidirectional;
  row->state_context = c->output != SQ_OUTPUT_STATE;
  row->score = sq_score_names[c->score];
  row->vocab = c->tgt_vocab;
  row->src_len = S;
  row->batch = batch;
  row->beam = in->beam;
  row->steps = in->steps;
  row->lines = lines;

  /* Warm-ups, the run's work, and each decode's length. Then rounds, each
   * timing the decode, the same decode at one step a batch (its difference
   * is the steps alone: encoding and each batch's start go out the way the
   * decode runs them) and the machine's ceiling one after the other: this
   * machine's speed moves between seconds, so each round's fraction of the
   * ceiling is a ratio of neighbouring timings, and the row reports the
   * median of each figure over the rounds. */
  size_t bsteps = 0, bsteps1 = 0;
  double t0 = sq_bench_now();
  SQ_TRY(sq_bench_decode_once(m, in->src, batch, in->beam, in->steps, &row->tokens, &bsteps));
  const int inner = decodes_per_rep(sq_bench_now() - t0);
  t0 = sq_bench_now();
  SQ_TRY(sq_bench_decode_once(m, in->src, batch, in->beam, 1, NULL, &bsteps1));
  const int inner1 = decodes_per_rep(sq_bench_now() - t0);
  double flops = 0, bytes = 0;
  sq_bench_step_work(m, R, S, &flops, &bytes);
  const int rounds = in->reps < 1 ? 1 : in->reps > 16 ? 16 : in->reps;
  double full[16], step_s[16], ceil[16], frac[16];
  for (int r = 0; r < rounds; r++) {
    double one = 0;
    SQ_TRY(time_decodes(in, batch, in->steps, inner, &full[r]));
    SQ_TRY(time_decodes(in, batch, 1, inner1, &one));
    step_s[r] = step_of(full[r], bsteps, one, bsteps1);
    SQ_TRY(ceiling(ctx, m, R, bytes, 1, &ceil[r]));
    frac[r] = (R >= SQ_BENCH_GEMM_ROWS ? flops : bytes) / step_s[r] / 1e9 / ceil[r];
  }
  row->seconds = sq_bench_median(full, rounds);
  row->tokens_per_s = (double)row->tokens / row->seconds;
  const double step = sq_bench_median(step_s, rounds);
  row->step_ms = 1e3 * step;
  row->step_mflop = flops / 1e6;
  row->step_weight_mb = bytes / 1e6;
  row->gflops = flops / step / 1e9;
  row->weight_gbps = bytes / step / 1e9;
  row->bound = R >= SQ_BENCH_GEMM_ROWS ? "gemm" : "copy";
  row->ceiling = sq_bench_median(ceil, rounds);
  row->fraction = sq_bench_median(frac, rounds);
  if (in->exe) {
    SQ_TRY(time_process(ctx, in, &row->process_seconds));
    row->process_tokens_per_s = (double)row->tokens / row->process_seconds;
  }
  return SEQCL_OK;
}
