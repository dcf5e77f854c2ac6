/* Greedy decoding on the device (SPEC §1): the argmax ids of one step feed the
 * next step's embedding lookup straight from a device buffer; finished rows
 * keep emitting EOS (greedy_update); the host looks at the finished flags only
 * every CHECK_EVERY steps. Every buffer is allocated before the step loop. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "model/seq2seq.h"

/* How many steps run between two reads of the finished flags. A read waits for
 * the queue to drain; at most CHECK_EVERY - 1 steps are spent on rows that all
 * have finished already (they only produce EOS, never change the output). */
#define CHECK_EVERY 4

typedef struct greedy_bufs {
  sq_buf *ids, *fin, *hist, *logits, *alpha, *abl_lsm;
  int32_t *fin_host, *hist_host;
  float *alpha_host;
} greedy_bufs;

static void greedy_bufs_free(greedy_bufs *b) {
  sq_buf_free(b->ids);
  sq_buf_free(b->fin);
  sq_buf_free(b->hist);
  sq_buf_free(b->logits);
  sq_buf_free(b->alpha);
  sq_buf_free(b->abl_lsm);
  free(b->fin_host);
  free(b->hist_host);
  free(b->alpha_host);
}

/* The logits stay on the device, so non-finite weights or states would go
 * unnoticed: NaN/Inf anywhere in the model reaches the last step's logits
 * (every row still runs every step), and one small read at the end checks
 * them, with the output bias argmax added. */
static seqcl_status check_last_logits(seqcl_model *m, size_t first, int n, int ran,
                                      greedy_bufs *b) {
  seqcl_ctx *ctx = m->ctx;
  const int V = m->cfg.tgt_vocab;
  float *host = malloc(((size_t)n + 1) * V * sizeof(float));
  if (!host) return sq_fail(ctx, SEQCL_ERR_OUT_OF_MEMORY, "greedy decoding: out of host memory");
  float *bias = host + (size_t)n * V;
  seqcl_status st = sq_read(ctx, sq_at(b->logits, 0), host, (size_t)n * V * sizeof(float));
  if (st == SEQCL_OK) st = sq_read(ctx, m->out_b, bias, (size_t)V * sizeof(float));
  for (int i = 0; i < n && st == SEQCL_OK; i++)
    for (int v = 0; v < V; v++) {
      const float x = host[(size_t)i * V + v] + bias[v];
      if (!isfinite(x)) {
        st = sq_fail(ctx, SEQCL_ERR_NON_FINITE,
                     "greedy decoding: logits of line %zu, step %d, id %d are not finite (%g)",
                     first + (size_t)i + 1, ran, v, (double)x);
        break;
      }
    }
  free(host);
  return st;
}

seqcl_status sq_greedy_hypothesis(seqcl_ctx *ctx, const int32_t *hist, int ran, int n, int i,
                                  int eos, seqcl_hypothesis *h) {
  int steps = ran, finished = 0;
  for (int t = 0; t < ran; t++)
    if (hist[(size_t)t * n + i] == eos) {
      steps = t + 1;
      finished = 1;
      break;
    }
  const size_t len = (size_t)(finished ? steps - 1 : steps);
  h->ids = malloc((len ? len : 1) * sizeof(int32_t));
  if (!h->ids) return sq_fail(ctx, SEQCL_ERR_OUT_OF_MEMORY, "greedy decoding: out of memory");
  for (size_t t = 0; t < len; t++) h->ids[t] = hist[t * n + i];
  h->len = len;
  h->finished = finished;
  h->steps = steps;
  h->logprob = NAN; /* the greedy loops never read probabilities back */
  h->score = NAN;
  return SEQCL_OK;
}

static seqcl_status run(seqcl_model *m, const seqcl_seqs *src, size_t first, int n, int max_steps,
                        seqcl_hypothesis *hyps, float **line_align, sq_encoded *e, sq_dec_ws *ws,
                        greedy_bufs *b) {
  seqcl_ctx *ctx = m->ctx;
  const int V = m->cfg.tgt_vocab, eos = m->cfg.eos_id;
  SQ_TRY(sq_encode(m, src, first, n, e));
  SQ_TRY(sq_dec_ws_init(m, n, ws));
  const int S = e->S;
  const size_t steps_n = (size_t)max_steps * n;
  SQ_TRY(sq_buf_alloc(ctx, (size_t)n * sizeof(int32_t), &b->ids));
  SQ_TRY(sq_buf_alloc(ctx, (size_t)n * sizeof(int32_t), &b->fin));
  SQ_TRY(sq_buf_alloc(ctx, steps_n * sizeof(int32_t), &b->hist));
  SQ_TRY(sq_buf_alloc(ctx, (size_t)n * V * sizeof(float), &b->logits));
  if (line_align) SQ_TRY(sq_buf_alloc(ctx, steps_n * S * sizeof(float), &b->alpha));
  const unsigned off = sq_ablated(ctx);
  if (off & SQ_ABL_ARGMAX) SQ_TRY(sq_buf_alloc(ctx, (size_t)n * V * sizeof(float), &b->abl_lsm));
  const int check_every = (off & SQ_ABL_NO_SYNC) ? 1 : CHECK_EVERY;
  b->fin_host = malloc((size_t)n * sizeof(int32_t));
  b->hist_host = malloc(steps_n * sizeof(int32_t));
  if (!b->fin_host || !b->hist_host)
    return sq_fail(ctx, SEQCL_ERR_OUT_OF_MEMORY, "greedy decoding: out of host memory");

  SQ_TRY(sq_fill_i32(ctx, sq_at(b->ids, 0), (size_t)n, m->cfg.bos_id));
  SQ_TRY(sq_fill_i32(ctx, sq_at(b->fin, 0), (size_t)n, 0));
  SQ_TRY(sq_dec_start(m, e, ws));
  int ran = 0;
  while (ran < max_steps) {
    const size_t row0 = (size_t)ran * n;
    sq_ref alpha = line_align ? sq_at(b->alpha, row0 * S) : sq_none();
    /* argmax adds the output bias itself: one launch fewer per step */
    SQ_TRY(sq_dec_step(m, e, ws, sq_at(b->ids, 0), NULL, alpha, sq_at(b->logits, 0), 0));
    if (off & SQ_ABL_ARGMAX) {
      /* ablation: a full log-softmax first (argmax(x - lse + b) = argmax(x + b)) */
      SQ_TRY(sq_log_softmax(ctx, n, V, sq_at(b->logits, 0), sq_at(b->abl_lsm, 0)));
      SQ_TRY(sq_argmax(ctx, n, V, sq_at(b->abl_lsm, 0), V, m->out_b, sq_at(b->ids, 0)));
      SQ_TRY(sq_greedy_update(ctx, n, sq_at(b->ids, 0), sq_at(b->fin, 0), eos,
                              sq_at(b->hist, row0)));
    } else {
      SQ_TRY(sq_argmax_greedy(ctx, n, V, sq_at(b->logits, 0), V, m->out_b, sq_at(b->ids, 0),
                              sq_at(b->fin, 0), eos, sq_at(b->hist, row0)));
    }
    ran++;
    if (ran % check_every == 0 && ran < max_steps) {
      int all;
      SQ_TRY(sq_dec_all_finished(ctx, sq_at(b->fin, 0), b->fin_host, n, &all));
      if (all) break;
    }
  }
  if (ran > 0) SQ_TRY(check_last_logits(m, first, n, ran, b));
  SQ_TRY(sq_read(ctx, sq_at(b->hist, 0), b->hist_host, (size_t)ran * n * sizeof(int32_t)));
  if (line_align) {
    b->alpha_host = malloc((size_t)ran * n * S * sizeof(float));
    if (!b->alpha_host)
      return sq_fail(ctx, SEQCL_ERR_OUT_OF_MEMORY, "greedy decoding: out of host memory");
    SQ_TRY(sq_read(ctx, sq_at(b->alpha, 0), b->alpha_host, (size_t)ran * n * S * sizeof(float)));
  }
  for (int i = 0; i < n; i++) {
    SQ_TRY(sq_greedy_hypothesis(ctx, b->hist_host, ran, n, i, eos, &hyps[i]));
    const int steps = hyps[i].steps;
    if (line_align) {
      const int L = e->lens_host[i];
      float *a = malloc((size_t)steps * L * sizeof(float));
      if (!a) return sq_fail(ctx, SEQCL_ERR_OUT_OF_MEMORY, "greedy decoding: out of memory");
      for (int t = 0; t < steps; t++)
        memcpy(a + (size_t)t * L, b->alpha_host + ((size_t)t * n + i) * S, (size_t)L * sizeof(float));
      line_align[i] = a;
    }
  }
  return SEQCL_OK;
}

seqcl_status sq_decode_greedy(seqcl_model *m, const seqcl_seqs *src, size_t first, int n,
                              int max_steps, seqcl_hypothesis *hyps, float **line_align) {
  sq_encoded e;
  sq_dec_ws ws;
  greedy_bufs b;
  memset(&e, 0, sizeof e);
  memset(&ws, 0, sizeof ws);
  memset(&b, 0, sizeof b);
  seqcl_status st = run(m, src, first, n, max_steps, hyps, line_align, &e, &ws, &b);
  greedy_bufs_free(&b);
  sq_dec_ws_free(&ws);
  sq_encoded_free(&e);
  return st;
}
