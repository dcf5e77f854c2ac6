/* One decoder step (SPEC §1): attention on s_{t-1}, GRUCell([embed(y) ; c], s),
 * output projection. The embedding and the context are written straight into
 * the GRU input buffer [n, D + He], so nothing is concatenated by copying. */
#include <math.h>
#include <string.h>

#include "core/error.h"
#include "model/seq2seq.h"

seqcl_status sq_greedy_update(seqcl_ctx *ctx, int N, sq_ref ids, sq_ref finished, int eos,
                              sq_ref hist) {
  sq_backend *be = sq_be(ctx);
  if (!be->ops->greedy_update)
    return sq_fail(ctx, SEQCL_ERR_UNSUPPORTED, "greedy_update: not available on backend %s",
                   be->ops->name);
  return be->ops->greedy_update(be, N, ids, finished, eos, hist);
}

seqcl_status sq_tanh_inplace(seqcl_ctx *ctx, size_t count, sq_ref x) {
  sq_backend *be = sq_be(ctx);
  if (!be->ops->tanh_inplace)
    return sq_fail(ctx, SEQCL_ERR_UNSUPPORTED, "tanh_inplace: not available on backend %s",
                   be->ops->name);
  return be->ops->tanh_inplace(be, count, x);
}

static int query_width(const seqcl_model *m) {
  switch (m->cfg.score) {
  case SQ_SCORE_ADDITIVE: return m->cfg.attn_dim;
  case SQ_SCORE_GENERAL: return m->He;
  default: return 0; /* dot products read the state itself */
  }
}

void sq_dec_ws_free(sq_dec_ws *ws) {
  if (!ws) return;
  sq_buf_free(ws->h);
  sq_buf_free(ws->xin);
  sq_buf_free(ws->qp);
  sq_buf_free(ws->gru_ws);
  memset(ws, 0, sizeof *ws);
}

seqcl_status sq_dec_ws_init(seqcl_model *m, int n, sq_dec_ws *ws) {
  memset(ws, 0, sizeof *ws);
  ws->n = n;
  const size_t Hd = (size_t)m->cfg.dec_hidden, X = (size_t)m->cfg.embed_dim + m->He;
  const size_t q = (size_t)query_width(m);
  seqcl_status st = sq_buf_alloc(m->ctx, n * Hd * sizeof(float), &ws->h);
  if (st == SEQCL_OK) st = sq_buf_alloc(m->ctx, n * X * sizeof(float), &ws->xin);
  if (st == SEQCL_OK && q) st = sq_buf_alloc(m->ctx, n * q * sizeof(float), &ws->qp);
  if (st == SEQCL_OK) st = sq_buf_alloc(m->ctx, 6 * n * Hd * sizeof(float), &ws->gru_ws);
  if (st != SEQCL_OK) sq_dec_ws_free(ws);
  return st;
}

seqcl_status sq_dec_start(seqcl_model *m, const sq_encoded *e, sq_dec_ws *ws) {
  return sq_copy(m->ctx, sq_at(ws->h, 0), sq_at(e->s0, 0), (size_t)ws->n * m->cfg.dec_hidden);
}

seqcl_status sq_dec_step(seqcl_model *m, const sq_encoded *e, sq_dec_ws *ws, sq_ref ids,
                         const int32_t *ids_host, sq_ref alpha, sq_ref logits, int with_bias) {
  seqcl_ctx *ctx = m->ctx;
  const sq_config *c = &m->cfg;
  const int n = ws->n, D = c->embed_dim, He = m->He, Hd = c->dec_hidden, V = c->tgt_vocab;
  const int X = D + He;
  sq_ref h = sq_at(ws->h, 0), xin = sq_at(ws->xin, 0), ctxv = sq_at(ws->xin, (size_t)D);
  if (ids_host) {
    SQ_TRY(sq_embedding(ctx, n, D, V, ids, ids_host, m->dec_emb, xin, X));
  } else {
    /* Greedy decoding: the ids were written on the device by argmax over V
     * logits, so they are in range by construction, and the front's host-side
     * check would need the very round trip the greedy loop avoids. */
    sq_backend *be = sq_be(ctx);
    SQ_TRY(be->ops->embedding(be, n, D, ids, m->dec_emb, xin, X));
  }

  sq_attn_args a;
  memset(&a, 0, sizeof a);
  a.kind = c->score;
  a.N = n;
  a.S = e->S;
  a.He = He;
  a.keys = sq_at(e->keys, 0);
  a.lens = sq_at(e->lens, 0);
  a.mask = sq_none();
  a.scale = c->score == SQ_SCORE_SCALED_DOT ? (float)(1.0 / sqrt((double)He)) : 1.0f;
  const int q = query_width(m);
  if (q) {
    /* additive: b_q was folded into the projected keys (encoder.c) */
    sq_ref bq = c->score == SQ_SCORE_ADDITIVE ? sq_none() : m->query_b;
    SQ_TRY(sq_linear(ctx, n, Hd, q, h, Hd, m->query_w, bq, sq_at(ws->qp, 0), q));
    a.qp = sq_at(ws->qp, 0);
    a.ld_qp = q;
  } else {
    a.qp = h;
    a.ld_qp = Hd;
  }
  if (c->score == SQ_SCORE_ADDITIVE) {
    a.A = c->attn_dim;
    a.pkeys = sq_at(e->pkeys, 0);
    a.v = m->energy_w;
    a.bv = m->energy_b;
  } else {
    a.pkeys = a.v = a.bv = sq_none();
  }
  SQ_TRY(sq_attn_fused(ctx, &a, e->lens_host, NULL, ctxv, X, alpha));

  SQ_TRY(sq_gru_cell(ctx, n, X, Hd, xin, X, m->dec.w_ih, m->dec.w_hh, m->dec.b_ih, m->dec.b_hh, h,
                     sq_at(ws->gru_ws, 0)));

  /* Without the bias when the caller adds it itself (greedy: argmax adds it). */
  sq_ref bo = with_bias ? m->out_b : sq_none();
  if (c->output == SQ_OUTPUT_STATE) return sq_linear(ctx, n, Hd, V, h, Hd, m->out_w, bo, logits, V);
  /* W_o [s ; c]: the two column blocks of W_o against s and against the context
   * already sitting in the GRU input buffer. */
  SQ_TRY(sq_gemm(ctx, 0, 1, n, V, Hd, 1.0f, h, Hd, 0, m->out_w, Hd + He, 0, 0.0f, logits, V, 0, 1));
  SQ_TRY(sq_gemm(ctx, 0, 1, n, V, He, 1.0f, ctxv, X, 0, sq_ref_add(m->out_w, (size_t)Hd), Hd + He,
                 0, 1.0f, logits, V, 0, 1));
  return with_bias ? sq_add_bias(ctx, n, V, logits, V, m->out_b) : SEQCL_OK;
}
