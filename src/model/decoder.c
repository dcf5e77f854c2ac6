/* One decoder step (SPEC §1): attention on s_{t-1}, GRUCell([embed(y) ; c], s),
 * output projection. The embedding and the context are written straight into
 * the GRU input buffer [n, D + He], so nothing is concatenated by copying.
 *
 * Launches per step on OpenCL (additive, output "state"): embedding 1, the
 * stacked GEMM s_{t-1} [W_hh ; W_q]^T 1, fused attention 1, the input GEMM
 * W_ih [e ; c] 1, the gates 1, the output GEMM 1 = 6, plus the caller's argmax
 * (and greedy_update). Score "none" (a fixed context, in the input buffer since
 * sq_dec_start) drops the attention launch: 5. Every buffer comes from the
 * workspace, sized once. */
#include <math.h>
#include <string.h>

#include "core/error.h"
#include "model/seq2seq.h"

int sq_dec_query_width(const seqcl_model *m) {
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
  sq_buf_free(ws->ghq);
  sq_buf_free(ws->abl_scores);
  sq_buf_free(ws->abl_alpha);
  sq_buf_free(ws->sce);
  memset(ws, 0, sizeof *ws);
}

/* The stacked GEMM: its output [n, 3H_d + q] here, its weights the model's [W_hh ; W_q]. */
static seqcl_status use_stacked(seqcl_model *m, int q, sq_dec_ws *ws) {
  const size_t Hd = (size_t)m->cfg.dec_hidden, n = (size_t)ws->n;
  SQ_TRY(sq_buf_alloc(m->ctx, n * (3 * Hd + q) * sizeof(float), &ws->ghq));
  ws->wstack = m->dec_w_hhq;
  return SEQCL_OK;
}

seqcl_status sq_dec_ws_init(seqcl_model *m, int n, sq_dec_ws *ws) {
  memset(ws, 0, sizeof *ws);
  ws->n = n;
  const size_t Hd = (size_t)m->cfg.dec_hidden, X = (size_t)m->cfg.embed_dim + m->He;
  const size_t q = (size_t)sq_dec_query_width(m);
  seqcl_status st = sq_buf_alloc(m->ctx, n * Hd * sizeof(float), &ws->h);
  if (st == SEQCL_OK) st = sq_buf_alloc(m->ctx, n * X * sizeof(float), &ws->xin);
  if (st == SEQCL_OK && q) st = sq_buf_alloc(m->ctx, n * q * sizeof(float), &ws->qp);
  if (st == SEQCL_OK) st = sq_buf_alloc(m->ctx, 6 * n * Hd * sizeof(float), &ws->gru_ws);
  const unsigned off = sq_ablated(m->ctx);
  if (st == SEQCL_OK && !(off & SQ_ABL_STACK_QUERY)) st = use_stacked(m, (int)q, ws);
  if (st == SEQCL_OK && ws->wstack.buf && m->dec_w_ih_ce.buf && !(off & SQ_ABL_OUTPUT_ONE_GEMM))
    st = sq_buf_alloc(m->ctx, n * (Hd + X) * sizeof(float), &ws->sce);
  if (st != SEQCL_OK) sq_dec_ws_free(ws);
  return st;
}

int sq_dec_uses_table(const seqcl_model *m) {
  const unsigned off = sq_ablated(m->ctx);
  return m->dec_table && !(off & (SQ_ABL_DEC_TABLE | SQ_ABL_STACK_QUERY));
}

/* Where a step's embedding and context go, `ld` apart row to row: the GRU
 * input xin [e | c], or the row [s | c | e] (sce: output over [s ; c]). */
typedef struct step_row {
  sq_ref emb, ctxv;
  int ld, sce;
} step_row;

static step_row step_row_of(const seqcl_model *m, const sq_dec_ws *ws) {
  const int D = m->cfg.embed_dim, He = m->He, Hd = m->cfg.dec_hidden;
  step_row r;
  r.sce = ws->sce != NULL;
  r.ld = r.sce ? Hd + He + D : D + He;
  r.emb = r.sce ? sq_at(ws->sce, (size_t)(Hd + He)) : sq_at(ws->xin, 0);
  r.ctxv = r.sce ? sq_at(ws->sce, (size_t)Hd) : sq_at(ws->xin, (size_t)D);
  return r;
}

seqcl_status sq_dec_start(seqcl_model *m, const sq_encoded *e, sq_dec_ws *ws) {
  SQ_TRY(sq_copy(m->ctx, sq_at(ws->h, 0), sq_at(e->s0, 0), (size_t)ws->n * m->cfg.dec_hidden));
  if (m->cfg.score != SQ_SCORE_NONE) return SEQCL_OK;
  /* The fixed context goes into the context columns once: the steps write
   * only the embedding (and state) columns, so it stays there (beam search
   * reorders hypotheses only among rows of the same sentence, same context). */
  const step_row r = step_row_of(m, ws);
  return sq_embedding_device_ids(m->ctx, ws->n, m->He, e->n, sq_at(e->rows, 0),
                                 sq_at(e->fixed, 0), r.ctxv, r.ld);
}

/* Ablation only: the key projection redone at every step, as seed 000's
 * AdditiveAttention does (W_k H + b_k, then b_q as in encoder.c). */
static seqcl_status reproject_keys(seqcl_model *m, const sq_encoded *e) {
  const int NS = e->n * e->S, A = m->cfg.attn_dim;
  SQ_TRY(sq_linear(m->ctx, NS, m->He, A, sq_at(e->keys, 0), m->He, m->key_w, m->key_b,
                   sq_at(e->pkeys, 0), A));
  if (m->query_b.buf) SQ_TRY(sq_add_bias(m->ctx, NS, A, sq_at(e->pkeys, 0), A, m->query_b));
  return SEQCL_OK;
}

/* Ablation only: scores, masked softmax and context as three launches. */
static seqcl_status attention_unfused(seqcl_model *m, const sq_encoded *e, sq_dec_ws *ws,
                                      const sq_attn_args *a, sq_ref ctxv, int ld_c,
                                      sq_ref alpha) {
  seqcl_ctx *ctx = m->ctx;
  const size_t nS = (size_t)ws->n * e->S;
  if (!ws->abl_scores) SQ_TRY(sq_buf_alloc(ctx, nS * sizeof(float), &ws->abl_scores));
  if (!ws->abl_alpha) SQ_TRY(sq_buf_alloc(ctx, nS * sizeof(float), &ws->abl_alpha));
  sq_ref al = alpha.buf ? alpha : sq_at(ws->abl_alpha, 0);
  SQ_TRY(sq_attn_scores(ctx, a, e->lens_host, e->mask_host, sq_at(ws->abl_scores, 0)));
  SQ_TRY(sq_masked_softmax(ctx, ws->n, e->S, sq_at(ws->abl_scores, 0), a->lens, e->lens_host,
                           a->mask, e->mask_host, al));
  return sq_context(ctx, ws->n, e->S, a->He, al, a->keys, ctxv, ld_c);
}

/* The attention of one step: projected query (from ghq when the GEMMs are
 * stacked), then scores, masked softmax and context into ctxv. */
static seqcl_status attend(seqcl_model *m, const sq_encoded *e, sq_dec_ws *ws, sq_ref ctxv,
                           int ld_c, sq_ref alpha) {
  seqcl_ctx *ctx = m->ctx;
  const sq_config *c = &m->cfg;
  const int n = ws->n, He = m->He, Hd = c->dec_hidden, Hd3 = 3 * Hd;
  const unsigned off = sq_ablated(ctx);
  const int q = sq_dec_query_width(m);
  sq_ref h = sq_at(ws->h, 0);
  sq_attn_args a;
  memset(&a, 0, sizeof a);
  a.kind = c->score;
  a.N = n;
  a.S = e->S;
  a.He = He;
  a.keys = sq_at(e->keys, 0);
  a.lens = sq_at(e->lens, 0);
  a.mask = e->mask ? sq_at(e->mask, 0) : sq_none();
  a.group = e->group;
  a.scale = c->score == SQ_SCORE_SCALED_DOT ? (float)(1.0 / sqrt((double)He)) : 1.0f;
  /* additive: b_q was folded into the projected keys (encoder.c) */
  sq_ref bq = c->score == SQ_SCORE_ADDITIVE ? sq_none() : m->query_b;
  if (ws->wstack.buf && q) {
    a.qp = sq_at(ws->ghq, (size_t)Hd3);
    a.ld_qp = Hd3 + q;
    if (bq.buf) SQ_TRY(sq_add_bias(ctx, n, q, a.qp, a.ld_qp, bq));
  } else if (q) {
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
    if (off & SQ_ABL_KEYS_ONCE) SQ_TRY(reproject_keys(m, e));
  } else {
    a.pkeys = a.v = a.bv = sq_none();
  }
  if (off & SQ_ABL_FUSED_ATTN) {
    if (sq_attn_group(&a) > 1)
      return sq_fail(ctx, SEQCL_ERR_INVALID_ARGUMENT,
                     "decoder step: the unfused attention reads one source per row (group %d)",
                     a.group);
    return attention_unfused(m, e, ws, &a, ctxv, ld_c, alpha);
  }
  return sq_attn_fused(ctx, &a, e->lens_host, e->mask_host, ctxv, ld_c, alpha);
}

seqcl_status sq_dec_step(seqcl_model *m, const sq_encoded *e, sq_dec_ws *ws, sq_ref ids,
                         const int32_t *ids_host, sq_ref alpha, sq_ref logits, int with_bias) {
  seqcl_ctx *ctx = m->ctx;
  const sq_config *c = &m->cfg;
  const int n = ws->n, D = c->embed_dim, He = m->He, Hd = c->dec_hidden, V = c->tgt_vocab;
  const int X = D + He, Hd3 = 3 * Hd, q = sq_dec_query_width(m);
  sq_ref h = sq_at(ws->h, 0);
  const step_row r = step_row_of(m, ws);
  const int sce = r.sce, ld_x = r.ld;
  sq_ref emb = r.emb, ctxv = r.ctxv;
  const int stacked = ws->wstack.buf != NULL;
  /* With the table (dec_table.c) a step gathers each token's E W_ih[:, :D]^T
   * row into the GRU input product's output and never writes the embedding;
   * greedy and beam decoding read ids that were written on the device. */
  const int table = stacked && sq_dec_uses_table(m);
  const int gw = table ? Hd3 : D;
  sq_ref gsrc = table ? sq_at(m->dec_table, 0) : m->dec_emb;
  sq_ref gdst = table ? sq_at(ws->gru_ws, 0) : emb;
  const int gld = table ? Hd3 : ld_x;
  if (ids_host)
    SQ_TRY(sq_embedding(ctx, n, gw, V, ids, ids_host, gsrc, gdst, gld));
  else
    SQ_TRY(sq_embedding_device_ids(ctx, n, gw, V, ids, gsrc, gdst, gld));

  if (stacked) {
    /* ghq = s_{t-1} [W_hh ; W_q]^T: the recurrent half of the GRU and the query
     * in one GEMM (the GRU reads s_{t-1} only through W_hh s, and s is not
     * updated before the gates run). */
    const int ld = Hd3 + q;
    SQ_TRY(sq_gemm(ctx, 0, 1, n, ld, Hd, 1.0f, h, Hd, 0, ws->wstack, Hd, 0, 0.0f,
                   sq_at(ws->ghq, 0), ld, 0, 1));
  }
  if (c->score != SQ_SCORE_NONE)
    SQ_TRY(attend(m, e, ws, ctxv, ld_x, alpha));
  else if (alpha.buf)
    return sq_fail(ctx, SEQCL_ERR_INVALID_ARGUMENT,
                   "decoder step: a model with attention.score \"none\" has no alignments");
  /* (score "none": the context columns hold the fixed context since
   * sq_dec_start; nothing to compute) */

  if (stacked) {
    sq_ref gi = sq_at(ws->gru_ws, 0);
    if (table) /* gi (the gathered rows) += c W_ih[:, D:]^T */
      SQ_TRY(sq_gemm(ctx, 0, 1, n, Hd3, He, 1.0f, ctxv, ld_x, 0, m->dec_w_ih_c, He, 0, 1.0f, gi,
                     Hd3, 0, 1));
    else /* [e ; c] W_ih^T, or the same sum read as [c ; e] W_ih_ce^T */
      SQ_TRY(sq_gemm(ctx, 0, 1, n, Hd3, X, 1.0f, sce ? ctxv : emb, ld_x, 0,
                     sce ? m->dec_w_ih_ce : m->dec.w_ih, X, 0, 0.0f, gi, Hd3, 0, 1));
    /* with sce the gates also write s_t into the row, beside c_t */
    sq_gru_args g = {.N = n, .H = Hd, .gi = gi, .gi_sn = (size_t)Hd3, .gi_st = 0,
                     .gh = sq_at(ws->ghq, 0), .ld_gh = Hd3 + q, .b_ih = m->dec.b_ih,
                     .b_hh = m->dec.b_hh, .h = h,
                     .out = sce ? sq_at(ws->sce, 0) : sq_none(),
                     .out_sn = sce ? (size_t)ld_x : 0, .out_st = 0, .lens = sq_none(),
                     .step = 0, .reverse = 0};
    SQ_TRY(sq_gru_gates(ctx, &g, NULL));
  } else {
    SQ_TRY(sq_gru_cell(ctx, n, X, Hd, emb, X, m->dec.w_ih, m->dec.w_hh, m->dec.b_ih, m->dec.b_hh,
                       h, sq_at(ws->gru_ws, 0)));
  }

  /* Without the bias when the caller adds it itself (greedy: argmax adds it). */
  sq_ref bo = with_bias ? m->out_b : sq_none();
  if (c->output == SQ_OUTPUT_STATE) return sq_linear(ctx, n, Hd, V, h, Hd, m->out_w, bo, logits, V);
  /* W_o [s ; c] as one product over the row's first H_d + He columns */
  if (sce) return sq_linear(ctx, n, Hd + He, V, sq_at(ws->sce, 0), ld_x, m->out_w, bo, logits, V);
  /* Else the two column blocks of W_o against s and against the context
   * sitting in the GRU input buffer. */
  SQ_TRY(sq_gemm(ctx, 0, 1, n, V, Hd, 1.0f, h, Hd, 0, m->out_w, Hd + He, 0, 0.0f, logits, V, 0, 1));
  SQ_TRY(sq_gemm(ctx, 0, 1, n, V, He, 1.0f, ctxv, X, 0, sq_ref_add(m->out_w, (size_t)Hd), Hd + He,
                 0, 1.0f, logits, V, 0, 1));
  return with_bias ? sq_add_bias(ctx, n, V, logits, V, m->out_b) : SEQCL_OK;
}

seqcl_status sq_dec_all_finished(seqcl_ctx *ctx, sq_ref flags, int32_t *host, int n, int *all) {
  SQ_TRY(sq_read(ctx, flags, host, (size_t)n * sizeof(int32_t)));
  *all = 1;
  for (int i = 0; i < n && *all; i++) *all = host[i] != 0;
  return SEQCL_OK;
}
