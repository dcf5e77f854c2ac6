/* Decoding with an ensemble of models (seqcl_ensemble_decode): every model
 * reads the same source and scores the same hypotheses; a step chooses by the
 * log of the mean of the models' probabilities,
 *
 *   log p(y) = log( (1/M) sum_j softmax(z_j)_y ) = logsumexp_j (z_jy - lse_j) - log M,
 *
 * the rule of fairseq's EnsembleModel (the mean of the probabilities, not of
 * the log-probabilities, so that the combination is itself a distribution and
 * beam scores stay log-probabilities). The combination runs on the host in
 * double from each model's logits read back after its step: M models cost M
 * steps anyway, and reading back [rows, V] per model is small beside them. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "model/seq2seq.h"

seqcl_status sq_ensemble_combine(seqcl_ctx *ctx, int M, sq_buf *const *logits, int R, int V,
                                 float *scratch, double *work, float *out, size_t first, int K,
                                 int step) {
  const size_t RV = (size_t)R * V;
  for (int j = 0; j < M; j++)
    SQ_TRY(sq_read(ctx, sq_at(logits[j], 0), scratch + (size_t)j * RV, RV * sizeof(float)));
  double inv[SEQCL_ENSEMBLE_MAX], lse[SEQCL_ENSEMBLE_MAX];
  const double log_m = log((double)M);
  for (int r = 0; r < R; r++) {
    /* each model's softmax: work[j V + v] = exp(z - max), inv[j] = 1 / its sum */
    for (int j = 0; j < M; j++) {
      const float *z = scratch + (size_t)j * RV + (size_t)r * V;
      double top = -INFINITY;
      for (int v = 0; v < V; v++) {
        if (!isfinite(z[v]))
          return sq_fail(ctx, SEQCL_ERR_NON_FINITE,
                         "ensemble decoding: logits of model %d, line %zu, step %d, id %d are "
                         "not finite (%g)",
                         j + 1, first + (size_t)(r / K) + 1, step + 1, v, (double)z[v]);
        if (z[v] > top) top = z[v];
      }
      double *e = work + (size_t)j * V, sum = 0.0;
      for (int v = 0; v < V; v++) sum += e[v] = exp((double)z[v] - top);
      inv[j] = 1.0 / sum;
      lse[j] = top + log(sum);
    }
    for (int v = 0; v < V; v++) {
      double p = 0.0;
      for (int j = 0; j < M; j++) p += work[(size_t)j * V + v] * inv[j];
      if (p > 0.0) {
        out[(size_t)r * V + v] = (float)(log(p) - log_m);
        continue;
      }
      /* every model's probability underflowed: the same sum, shifted */
      double top = -INFINITY, lp[SEQCL_ENSEMBLE_MAX];
      for (int j = 0; j < M; j++) {
        lp[j] = (double)scratch[(size_t)j * RV + (size_t)r * V + v] - lse[j];
        if (lp[j] > top) top = lp[j];
      }
      double t = 0.0;
      for (int j = 0; j < M; j++) t += exp(lp[j] - top);
      out[(size_t)r * V + v] = (float)(top + log(t) - log_m);
    }
  }
  return SEQCL_OK;
}

/* One model's share of a greedy ensemble batch. */
typedef struct member {
  sq_encoded e;
  sq_dec_ws ws;
  sq_buf *logits;
} member;

typedef struct greedy_ens {
  member *mb;
  sq_buf *ids;
  sq_buf **logits; /* [M]: mb[j].logits, as sq_ensemble_combine takes them */
  int32_t *ids_host, *fin, *hist;
  float *scratch, *comb;
  double *work;
} greedy_ens;

static seqcl_status run(seqcl_model *const *ms, int M, const seqcl_seqs *src, size_t first, int n,
                        int max_steps, seqcl_hypothesis *hyps, greedy_ens *g) {
  seqcl_ctx *ctx = ms[0]->ctx;
  const int V = ms[0]->cfg.tgt_vocab, eos = ms[0]->cfg.eos_id;
  const size_t nV = (size_t)n * V;
  for (int j = 0; j < M; j++) {
    member *b = &g->mb[j];
    SQ_TRY(sq_encode(ms[j], src, first, n, &b->e));
    SQ_TRY(sq_dec_ws_init(ms[j], n, &b->ws));
    SQ_TRY(sq_buf_alloc(ctx, nV * sizeof(float), &b->logits));
    SQ_TRY(sq_dec_start(ms[j], &b->e, &b->ws));
    g->logits[j] = b->logits;
  }
  SQ_TRY(sq_buf_alloc(ctx, (size_t)n * sizeof(int32_t), &g->ids));
  g->ids_host = malloc((size_t)n * sizeof(int32_t));
  g->fin = calloc((size_t)n, sizeof(int32_t));
  g->hist = malloc((size_t)max_steps * n * sizeof(int32_t));
  g->scratch = malloc((size_t)M * nV * sizeof(float));
  g->comb = malloc(nV * sizeof(float));
  g->work = malloc((size_t)M * V * sizeof(double));
  if (!g->ids_host || !g->fin || !g->hist || !g->scratch || !g->comb || !g->work)
    return sq_fail(ctx, SEQCL_ERR_OUT_OF_MEMORY, "ensemble decoding: out of host memory");
  for (int i = 0; i < n; i++) g->ids_host[i] = ms[0]->cfg.bos_id;
  int ran = 0, all = 0;
  while (ran < max_steps && !all) {
    SQ_TRY(sq_write(ctx, sq_at(g->ids, 0), g->ids_host, (size_t)n * sizeof(int32_t)));
    for (int j = 0; j < M; j++)
      SQ_TRY(sq_dec_step(ms[j], &g->mb[j].e, &g->mb[j].ws, sq_at(g->ids, 0), g->ids_host,
                         sq_none(), sq_at(g->mb[j].logits, 0), 1));
    SQ_TRY(sq_ensemble_combine(ctx, M, g->logits, n, V, g->scratch, g->work, g->comb, first, 1,
                               ran));
    all = 1;
    for (int i = 0; i < n; i++) {
      /* as greedy_update: a finished row keeps emitting EOS; the lowest id wins a tie */
      const float *row = g->comb + (size_t)i * V;
      int best = 0;
      for (int v = 1; v < V; v++)
        if (row[v] > row[best]) best = v;
      const int32_t tok = g->fin[i] ? eos : best;
      g->hist[(size_t)ran * n + i] = tok;
      g->ids_host[i] = tok;
      if (tok == eos) g->fin[i] = 1;
      all &= g->fin[i] != 0;
    }
    ran++;
  }
  for (int i = 0; i < n; i++) SQ_TRY(sq_greedy_hypothesis(ctx, g->hist, ran, n, i, eos, &hyps[i]));
  return SEQCL_OK;
}

seqcl_status sq_decode_ensemble_greedy(seqcl_model *const *ms, int M, const seqcl_seqs *src,
                                       size_t first, int n, int max_steps,
                                       seqcl_hypothesis *hyps) {
  greedy_ens g;
  memset(&g, 0, sizeof g);
  g.mb = calloc((size_t)M, sizeof *g.mb);
  g.logits = calloc((size_t)M, sizeof *g.logits);
  seqcl_status st = g.mb && g.logits
                        ? run(ms, M, src, first, n, max_steps, hyps, &g)
                        : sq_fail(ms[0]->ctx, SEQCL_ERR_OUT_OF_MEMORY,
                                  "ensemble decoding: out of host memory");
  for (int j = 0; g.mb && j < M; j++) {
    sq_buf_free(g.mb[j].logits);
    sq_dec_ws_free(&g.mb[j].ws);
    sq_encoded_free(&g.mb[j].e);
  }
  sq_buf_free(g.ids);
  free(g.mb);
  free(g.logits);
  free(g.ids_host);
  free(g.fin);
  free(g.hist);
  free(g.scratch);
  free(g.comb);
  free(g.work);
  return st;
}
