/* The decode-side tables of the benchmark harness (harness.h): greedy
 * decoding and the encoder over a grid of shapes, and the ablation. */
#include <stdlib.h>
#include <string.h>

#include "bench/ablate.h"
#include "bench/bench.h"
#include "bench/harness.h"
#include "core/ctx.h"
#include "core/error.h"

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
static seqcl_status decode_once(seqcl_model *m, const seqcl_seqs *src, int batch, int steps) {
  return sq_bench_decode_once(m, src, batch, 1, steps, NULL, NULL);
}

/* Counters per decoder step: the difference between runs of 2k and k steps
 * cancels the encoder, the setup and the final reads. */
static seqcl_status per_step_counts(seqcl_ctx *ctx, seqcl_model *m, const seqcl_seqs *src,
                                    int batch, int k, double out[3]) {
  sq_bench_counts a, b, c;
  sq_bench_counters(ctx, &a);
  SQ_TRY(decode_once(m, src, batch, k));
  sq_bench_counters(ctx, &b);
  SQ_TRY(decode_once(m, src, batch, 2 * k));
  sq_bench_counters(ctx, &c);
  out[0] = ((double)(c.launches - b.launches) - (double)(b.launches - a.launches)) / k;
  out[1] = ((double)(c.blas_calls - b.blas_calls) - (double)(b.blas_calls - a.blas_calls)) / k;
  out[2] = ((double)(c.syncs - b.syncs) - (double)(b.syncs - a.syncs)) / k;
  return SEQCL_OK;
}

seqcl_status sq_bench_decode(seqcl_ctx *ctx, const sq_bench_cfg *cfg, const sq_bench_sink *sink) {
  static const char *scores[] = {"additive", "general"};
  static const int Hs[] = {256, 512}, Ss[] = {20, 50}, Bs[] = {1, 64};
  if (sink->table) sink->table(sink->user, SQ_BENCH_DECODE);
  for (int si = 0; si < 2; si++)
    for (int hi = 0; hi < 2; hi++) {
      if (cfg->quick && hi == 1) continue;
      seqcl_model *m = NULL;
      SQ_TRY(sq_bench_model(ctx, cfg, scores[si], Hs[hi], &m));
      seqcl_status st = SEQCL_OK;
      for (int s = 0; s < 2 && st == SEQCL_OK; s++)
        for (int b = 0; b < 2 && st == SEQCL_OK; b++) {
          if (cfg->quick && s == 1) continue;
          src_lines src;
          memset(&src, 0, sizeof src);
          if (make_src(&src, Bs[b], Ss[s], SQ_BENCH_VOCAB, 7)) {
            free_src(&src);
            st = sq_fail(ctx, SEQCL_ERR_OUT_OF_MEMORY, "bench: out of memory");
            break;
          }
          double t = 0, te = 0, step = 0, cnt[3] = {0, 0, 0};
          size_t bsteps = 0;
          st = sq_bench_time_decode(m, &src.view, Bs[b], 1, cfg->steps, cfg->reps, &t, NULL,
                                    &bsteps);
          if (st == SEQCL_OK)
            st = sq_bench_step_seconds(m, &src.view, Bs[b], 1, cfg->reps, t, bsteps, &step);
          if (st == SEQCL_OK) st = sq_bench_time_encode(ctx, m, &src.view, Bs[b], cfg->reps, &te);
          if (st == SEQCL_OK) st = per_step_counts(ctx, m, &src.view, Bs[b], 8, cnt);
          free_src(&src);
          if (st != SEQCL_OK) break;
          sq_bench_decode_row row = {
              .score = scores[si], .hidden = Hs[hi], .src_len = Ss[s], .batch = Bs[b],
              .steps = cfg->steps, .seconds = t,
              .tokens_per_s = (double)Bs[b] * cfg->steps / t,
              .step_ms = 1e3 * step,
              .launches = cnt[0], .blas_calls = cnt[1], .syncs = cnt[2],
              .enc_seconds = te, .enc_tokens_per_s = (double)Bs[b] * Ss[s] / te};
          if (sink->decode) sink->decode(sink->user, &row);
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
static seqcl_status timed_decodes(seqcl_ctx *ctx, seqcl_model *m, const seqcl_seqs *src,
                                  int batch, int steps, unsigned mask, int inner, double *sec) {
  sq_ctx_set_ablated(ctx, mask);
  double t0 = sq_bench_now();
  seqcl_status st = SEQCL_OK;
  for (int i = 0; i < inner && st == SEQCL_OK; i++) st = decode_once(m, src, batch, steps);
  *sec = (sq_bench_now() - t0) / inner;
  sq_ctx_set_ablated(ctx, 0);
  return st;
}

enum { ABL_MAX = 16 };

/* The switches that exist on this backend (0 first: nothing off). */
static int ablation_bits(const seqcl_ctx *ctx, unsigned bits[ABL_MAX]) {
  static const unsigned all_bits[] = {0,
                                      SQ_ABL_STACK_QUERY,
                                      SQ_ABL_FUSED_ATTN,
                                      SQ_ABL_KEYS_ONCE,
                                      SQ_ABL_ARGMAX,
                                      SQ_ABL_NO_SYNC,
                                      SQ_ABL_SMALL_GEMM,
                                      SQ_ABL_THREADS,
                                      SQ_ABL_FUSED_GREEDY,
                                      SQ_ABL_PACKED,
                                      SQ_ABL_DEC_TABLE,
                                      SQ_ABL_SPLIT_BATCH};
  const sq_backend *be = ctx->be;
  const int threads = be->ops->supports && be->ops->supports(be, SQ_CAP_THREADS);
  int nb = 0;
  for (size_t i = 0; i < sizeof all_bits / sizeof all_bits[0]; i++) {
    const unsigned bit = all_bits[i];
    if (bit == SQ_ABL_FUSED_GREEDY && !be->ops->argmax_greedy) continue;
    if ((bit == SQ_ABL_THREADS || bit == SQ_ABL_SPLIT_BATCH) && !threads) continue;
    if (bit == SQ_ABL_PACKED && !be->ops->freeze) continue;
    bits[nb++] = bit;
  }
  return nb;
}

seqcl_status sq_bench_ablation(seqcl_ctx *ctx, const sq_bench_cfg *cfg,
                               const sq_bench_sink *sink) {
  static const int Bs[] = {1, 64};
  unsigned bits[ABL_MAX];
  const int nb = ablation_bits(ctx, bits);
  if (sink->table) sink->table(sink->user, SQ_BENCH_ABLATION);
  seqcl_model *m = NULL;
  SQ_TRY(sq_bench_model(ctx, cfg, "additive", 256, &m));
  seqcl_status st = SEQCL_OK;
  for (int b = 0; b < 2 && st == SEQCL_OK; b++) {
    src_lines src;
    memset(&src, 0, sizeof src);
    if (make_src(&src, Bs[b], 20, SQ_BENCH_VOCAB, 7)) {
      free_src(&src);
      st = sq_fail(ctx, SEQCL_ERR_OUT_OF_MEMORY, "bench: out of memory");
      break;
    }
    const int reps = cfg->reps > 64 ? 64 : cfg->reps;
    int inner[ABL_MAX];
    double cnt[ABL_MAX][3], t[ABL_MAX][64], med[ABL_MAX];
    for (int i = 0; i < nb && st == SEQCL_OK; i++) { /* warm-up, run length, counters */
      double once = 0;
      st = timed_decodes(ctx, m, &src.view, Bs[b], cfg->steps, bits[i], 1, &once);
      inner[i] = once > 0 && once < SQ_BENCH_MIN_REP_S ? (int)(SQ_BENCH_MIN_REP_S / once) + 1 : 1;
      if (inner[i] > 1000) inner[i] = 1000;
      sq_ctx_set_ablated(ctx, bits[i]);
      if (st == SEQCL_OK) st = per_step_counts(ctx, m, &src.view, Bs[b], 8, cnt[i]);
      sq_ctx_set_ablated(ctx, 0);
    }
    for (int r = 0; r < reps && st == SEQCL_OK; r++)
      for (int i = 0; i < nb && st == SEQCL_OK; i++)
        st = timed_decodes(ctx, m, &src.view, Bs[b], cfg->steps, bits[i], inner[i], &t[i][r]);
    free_src(&src);
    if (st != SEQCL_OK) break;
    for (int i = 0; i < nb; i++) med[i] = sq_bench_median(t[i], reps);
    const double base = (double)Bs[b] * cfg->steps / med[0];
    for (int i = 0; i < nb; i++) {
      const double tok = (double)Bs[b] * cfg->steps / med[i];
      sq_bench_ablation_row row = {.off = bits[i] ? sq_ablate_name(bits[i]) : NULL,
                                   .batch = Bs[b], .tokens_per_s = tok,
                                   .ratio_to_all_on = tok / base, .launches = cnt[i][0],
                                   .blas_calls = cnt[i][1], .syncs = cnt[i][2]};
      if (sink->ablation) sink->ablation(sink->user, &row);
    }
  }
  seqcl_model_free(m);
  return st;
}
