/* Forward with saved activations and backpropagation through time over one
 * padded batch, written against the ops/ fronts only (forward and training
 * slots), so it runs on any backend that fills the training slots. This file
 * holds the buffers, the batch, the decoder, the output layer and the
 * decoder's initial state; graph_encoder.c the encoder (graph_impl.h the
 * state both share).
 *
 * Layouts: the encoder runs over packed tokens (graph_encoder.c) and hands
 * the attention its top layer's output batch-major [N, S, He]. Decoder
 * tensors are step-major and packed: step t's rows are the lines 0 ..
 * dec_rows[t] - 1 (those with a label at t or later), one contiguous block
 * at row dcum[t], so every per-step operand is one block and the weight
 * gradients of all steps are one GEMM each (K = dcum[T]) after the loop.
 * What the decoder keeps, per packed row: inputs X [D+He] = [embedding ;
 * context], the input state sp, query projection qp, weights alpha [S],
 * gi/gh [3Hd], the new state (st, after s_0's N rows).
 * Score "none" (a fixed context) has no attention: hfinal [N,He] = the top
 * layer's [h_fwd_final ; h_bwd_final] is gathered into every row's context
 * columns of X once, the input GEMM then covers all of X in one call, and the
 * backward adds dL/dc of every row straight into its line's final states'
 * gradient (the embedding backward's scatter-add).
 * With output "state_context" the output layer reads [s_t ; c_t]: its weight
 * is used as two column blocks, the state block against the states and the
 * context block against X's context columns, so nothing is copied. The GRU
 * gates of the forward are kept (sv) for the backward slot.
 *
 * Dropout (training steps only) sits where PyTorch users put it: on both
 * embeddings, on every encoder layer's output but the top one (nn.GRU's
 * dropout=), and on the output layer's input. Masks are never stored: each is
 * drawn again in the backward pass from its (seed, step, tensor, element) key,
 * and backward of y = mask * x / (1-p) is the same op applied to dy. In place
 * where the undropped value has no other reader; the output layer's input gets
 * copies (sd, cd), because the recurrence and the GRU input read s_t and c_t. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "model/seq2seq.h"
#include "ops/ops.h"
#include "train/graph_impl.h"
#include "train/tmodel.h"

seqcl_status sq_graph_drop(sq_graph *g, uint32_t tensor, int rows, int cols, sq_ref x, int ldx,
                           sq_ref y, int ldy) {
  sq_dropout_args a = {.rows = rows, .cols = cols, .x = x, .ldx = ldx, .y = y, .ldy = ldy};
  sq_dropout_key(&a, g->drop_p, g->drop_seed, g->drop_step, tensor);
  return sq_dropout(g->ctx, &a);
}
seqcl_status sq_graph_create(seqcl_ctx *ctx, const sq_tlayout *L, int max_n, int S, int T,
                             sq_graph **out) {
  *out = NULL;
  sq_graph *g = calloc(1, sizeof *g);
  if (!g) return sq_fail(ctx, SEQCL_ERR_OUT_OF_MEMORY, "training: out of host memory");
  const sq_config *c = &L->cfg;
  g->ctx = ctx;
  g->L = *L;
  g->max_n = max_n, g->S = S, g->T = T, g->max_s = S, g->max_t = T;
  g->D = c->embed_dim, g->H = c->enc_hidden, g->He = sq_config_enc_width(c);
  g->Hd = c->dec_hidden, g->A = c->attn_dim, g->V = c->tgt_vocab;
  g->ndir = c->bidirectional ? 2 : 1;
  g->G = 3 * g->H, g->Gd = 3 * g->Hd, g->Xw = g->D + g->He;
  g->qw = c->score == SQ_SCORE_ADDITIVE ? g->A : g->He;
  g->layers = c->enc_layers;
  g->none = c->score == SQ_SCORE_NONE;
  g->ctxout = c->output == SQ_OUTPUT_STATE_CONTEXT;
  g->Ow = g->Hd + (g->ctxout ? g->He : 0);
  const size_t N = (size_t)max_n;
  size_t f = 0;
#define TAKE(field, count) (g->field = f, f += (count))
  TAKE(params, L->total);
  TAKE(grads, L->total);
  TAKE(enc_x, N * S * g->D);
  for (int l = 0; l < g->layers; l++) { /* packed: at most N*S tokens */
    for (int d = 0; d < g->ndir; d++) {
      TAKE(enc_gi[l][d], N * S * g->G);
      TAKE(enc_sv[l][d], N * S * 4 * g->H);
      TAKE(enc_gh[l][d], N * S * g->G);
      TAKE(enc_hp[l][d], N * S * g->H);
      TAKE(enc_hs[l][d], N * S * g->H);
    }
    TAKE(enc_inrev[l], g->ndir == 2 ? N * S * (l ? g->He : g->D) : 0);
    TAKE(lout[l], (N * S + 1) * g->He);
    TAKE(dlout[l], N * S * g->He);
  }
  for (int d = 0; d < g->ndir; d++) {
    TAKE(enc_dgi[d], N * S * g->G);
    TAKE(enc_dgh[d], N * S * g->G);
    TAKE(enc_dh[d], N * g->H);
    TAKE(enc_dhr[d], N * g->H);
    TAKE(hfin[d], N * g->H);
  }
  TAKE(enc_drev, g->ndir == 2 ? N * S * g->He : 0);
  TAKE(enc_dxrev, g->ndir == 2 ? N * S * (g->layers > 1 ? g->He : g->D) : 0);
  TAKE(enc_out, N * S * g->He);
  TAKE(denc_out, N * S * g->He);
  TAKE(denc_x, N * S * g->D);
  TAKE(pkeys, N * S * (g->A > 0 ? g->A : 1));
  TAKE(dpkeys, N * S * (g->A > 0 ? g->A : 1));
  TAKE(pkp, (N * S + 1) * (g->A > 0 ? g->A : 1));
  TAKE(dpkp, N * S * (g->A > 0 ? g->A : 1));
  TAKE(hfinal, N * g->He);
  TAKE(dpre, N * g->Hd);
  TAKE(X, (size_t)T * N * g->Xw);
  TAKE(qp, (size_t)T * N * g->qw);
  TAKE(alpha, (size_t)T * N * S);
  TAKE(u, (size_t)T * N * S * (g->A > 0 ? g->A : 1));
  TAKE(gi, (size_t)T * N * g->Gd);
  TAKE(sv, (size_t)T * N * 4 * g->Hd);
  TAKE(gh, (size_t)T * N * g->Gd);
  TAKE(st, (size_t)(T + 1) * N * g->Hd);
  TAKE(sp, (size_t)T * N * g->Hd);
  TAKE(logits, (size_t)T * N * g->V);
  TAKE(dlogits, (size_t)T * N * g->V);
  TAKE(dS, (size_t)T * N * g->Hd);
  TAKE(ds, N * g->Hd);
  TAKE(dX, (size_t)T * N * g->Xw);
  TAKE(dgi, (size_t)T * N * g->Gd);
  TAKE(dgh, (size_t)T * N * g->Gd);
  TAKE(dqp, (size_t)T * N * g->qw);
  TAKE(loss, 4);
  TAKE(sd, (size_t)T * N * g->Hd);
  TAKE(cd, (size_t)T * N * (g->ctxout ? g->He : 1));
  size_t nf = f;
  f = 0;
  TAKE(lens, N);
  TAKE(dec_in, (size_t)T * N);
  TAKE(labels, (size_t)T * N);
  TAKE(pred, N);
  TAKE(rows, g->none ? (size_t)T * N : 0);
  TAKE(tok, N * S);
  TAKE(rev, N * S);
  TAKE(unpack, N * S);
  TAKE(pack, N * S);
  TAKE(fin, N);
  TAKE(order, N);
  TAKE(ident, N * S);
  size_t ni = f;
#undef TAKE
  seqcl_status st = sq_buf_alloc(ctx, nf * sizeof(float), &g->fb);
  if (st == SEQCL_OK) st = sq_buf_alloc(ctx, ni * sizeof(int32_t), &g->ib);
  if (st == SEQCL_OK) st = sq_fill(ctx, F(g, 0), nf, 0.0f);
  if (st == SEQCL_OK) st = sq_fill_i32(ctx, I(g, 0), ni, 0);
  /* The parameters are frozen (sq_freeze): only sq_write and the Adam slot
   * change them, so on the host a weight is packed into panels once per step
   * (after the update) and every forward product of more than the own
   * kernel's rows through it reads the panels. The decoder's per-step
   * products (and the encoder's per-step recurrent ones) would otherwise have
   * OpenBLAS pack the whole weight for every step's few dozen rows. */
  if (st == SEQCL_OK) sq_freeze(ctx, F(g, g->params), L->total);
  g->src_h = malloc(sizeof(int32_t) * ni);
  if (st == SEQCL_OK && !g->src_h)
    st = sq_fail(ctx, SEQCL_ERR_OUT_OF_MEMORY, "training: out of host memory");
  if (st != SEQCL_OK) {
    sq_graph_free(g);
    return st;
  }
  g->dec_rows = malloc(sizeof(int) * (2 * (size_t)T + 2 * (size_t)S + 2));
  g->tok_h = malloc(sizeof(int32_t) * (4 * N * S + 3 * N));
  if (!g->dec_rows || !g->tok_h) {
    sq_graph_free(g);
    return sq_fail(ctx, SEQCL_ERR_OUT_OF_MEMORY, "training: out of host memory");
  }
  g->dcum = g->dec_rows + T;
  g->bs = g->dcum + T + 1;
  g->cum = g->bs + S;
  g->pk_h = g->tok_h + N * S; /* order, rank, rev, unpack, pack, fin */
  for (size_t i = 0; i < N * S; i++) g->pk_h[i] = (int32_t)i;
  st = sq_write(ctx, I(g, g->ident), g->pk_h, sizeof(int32_t) * N * S);
  if (st != SEQCL_OK) {
    sq_graph_free(g);
    return st;
  }
  g->lens_h = g->src_h + N * S;
  g->dec_in_h = g->lens_h + N;
  g->labels_h = g->dec_in_h + (size_t)T * N;
  *out = g;
  return SEQCL_OK;
}

void sq_graph_free(sq_graph *g) {
  if (!g) return;
  sq_buf_free(g->fb);
  sq_buf_free(g->ib);
  free(g->src_h);
  free(g->dec_rows);
  free(g->tok_h);
  free(g);
}

sq_ref sq_graph_params(sq_graph *g) { return F(g, g->params); }

seqcl_status sq_graph_set_dropout(sq_graph *g, double p, uint64_t seed, uint64_t step) {
  if (!(p >= 0.0 && p < 1.0))
    return sq_fail(g->ctx, SEQCL_ERR_INVALID_ARGUMENT, "training: dropout %g is outside [0, 1)",
                   p);
  g->drop_p = p, g->drop_seed = seed, g->drop_step = step;
  return SEQCL_OK;
}
sq_ref sq_graph_grads(sq_graph *g) { return F(g, g->grads); }

seqcl_status sq_graph_set_batch(sq_graph *g, int N, const int32_t *src, const int32_t *lens,
                                const int32_t *tgt) {
  return sq_graph_set_batch_shape(g, N, g->max_s, g->max_t, src, lens, tgt);
}

/* Score "none": rows[] = the line of each packed decoder row (the fixed
 * context's gather, and its gradient's scatter-add). */
static seqcl_status write_context_rows(sq_graph *g) {
  if (!g->none) return SEQCL_OK;
  int32_t *rows = g->labels_h + (size_t)g->max_t * g->max_n + g->max_n; /* its host mirror */
  for (int t = 0; t < g->T; t++)
    for (int n = 0; n < g->dec_rows[t]; n++) rows[(size_t)g->dcum[t] + n] = n;
  return sq_write(g->ctx, I(g, g->rows), rows, sizeof(int32_t) * (size_t)g->dcum[g->T]);
}

seqcl_status sq_graph_set_batch_shape(sq_graph *g, int N, int S, int T, const int32_t *src,
                                      const int32_t *lens, const int32_t *tgt) {
  if (N < 1 || N > g->max_n || S < 1 || S > g->max_s || T < 1 || T > g->max_t)
    return sq_fail(g->ctx, SEQCL_ERR_SHAPE,
                   "training: batch of %d rows, %d source positions and %d steps (room for %d, "
                   "%d and %d)",
                   N, S, T, g->max_n, g->max_s, g->max_t);
  for (int n = 0; n < N; n++)
    if (lens[n] < 1 || lens[n] > S)
      return sq_fail(g->ctx, SEQCL_ERR_SHAPE, "training: row %d has length %d (1..%d)", n,
                     lens[n], S);
  g->S = S, g->T = T;
  g->N = N;
  g->valid = 0;
  memcpy(g->src_h, src, sizeof(int32_t) * (size_t)N * S);
  memcpy(g->lens_h, lens, sizeof(int32_t) * (size_t)N);
  for (int n = 0; n < N; n++)
    for (int j = lens[n]; j < S; j++) g->src_h[(size_t)n * S + j] = 0; /* padding reads row 0 */
  for (int t = 0; t < T; t++)
    for (int n = 0; n < N; n++) {
      int32_t in = tgt ? tgt[(size_t)n * (T + 1) + t] : g->L.cfg.bos_id;
      int32_t lab = tgt ? tgt[(size_t)n * (T + 1) + t + 1] : -1;
      g->dec_in_h[(size_t)t * N + n] = in < 0 ? 0 : in;
      g->labels_h[(size_t)t * N + n] = in < 0 ? -1 : lab;
      g->valid += g->labels_h[(size_t)t * N + n] >= 0;
    }
  /* a row takes part in step t while it has a label at t or later */
  for (int t = T - 1, rows = 0; t >= 0; t--) {
    for (int n = N - 1; n >= rows; n--)
      if (g->labels_h[(size_t)t * N + n] >= 0) rows = n + 1;
    g->dec_rows[t] = g->valid ? rows : N; /* no label at all: every row (forward-only reads) */
  }
  /* packed: step t's rows at dcum[t] .. dcum[t] + dec_rows[t] - 1 (in place:
   * a row never moves up) */
  g->dcum[0] = 0;
  for (int t = 0; t < T; t++) {
    for (int n = 0; n < g->dec_rows[t]; n++) {
      g->dec_in_h[(size_t)g->dcum[t] + n] = g->dec_in_h[(size_t)t * N + n];
      g->labels_h[(size_t)g->dcum[t] + n] = g->labels_h[(size_t)t * N + n];
    }
    g->dcum[t + 1] = g->dcum[t] + g->dec_rows[t];
  }
  const size_t TR = (size_t)g->dcum[T];
  SQ_TRY(sq_genc_set_batch(g));
  SQ_TRY(sq_write(g->ctx, I(g, g->lens), g->lens_h, sizeof(int32_t) * (size_t)N));
  SQ_TRY(sq_write(g->ctx, I(g, g->dec_in), g->dec_in_h, sizeof(int32_t) * TR));
  SQ_TRY(sq_write(g->ctx, I(g, g->labels), g->labels_h, sizeof(int32_t) * TR));
  return write_context_rows(g);
}

/* Encoder forward (graph_encoder.c), then the key projection (additive) and
 * the decoder's initial state from the top layer's final states hfin. */
static seqcl_status encoder_forward(sq_graph *g, int dropout) {
  seqcl_ctx *ctx = g->ctx;
  const sq_tlayout *L = &g->L;
  const int N = g->N, H = g->H, He = g->He;
  SQ_TRY(sq_genc_forward(g, dropout));
  /* score "none": hfinal = [h_fwd_final ; h_bwd_final]; "final": s0 = the same
   * (H_d = H_e): each line's state after its last token gathered straight
   * into its direction's columns */
  sq_ref s0 = F(g, g->st);
  const int top = g->layers - 1;
  for (int d = 0; d < g->ndir; d++) {
    sq_ref hs = F(g, g->enc_hs[top][d]);
    if (g->none)
      SQ_TRY(sq_embedding_device_ids(ctx, N, H, g->ntok, I(g, g->fin), hs,
                                     F(g, g->hfinal + (size_t)d * H), He));
    if (L->cfg.init == SQ_INIT_FINAL)
      SQ_TRY(sq_embedding_device_ids(ctx, N, H, g->ntok, I(g, g->fin), hs,
                                     sq_ref_add(s0, (size_t)d * H), He));
  }
  if (L->cfg.init == SQ_INIT_BRIDGE) {
    /* s0 = tanh(W_b [h_fwd_final ; h_bwd_final] + b_b) of the top layer */
    for (int d = 0; d < g->ndir; d++)
      SQ_TRY(sq_gemm(ctx, 0, 1, N, g->Hd, H, 1.0f, F(g, g->hfin[d]), H, 0,
                     P(g, L->bridge_w + (size_t)d * H), He, 0, d ? 1.0f : 0.0f, s0, g->Hd, 0, 1));
    SQ_TRY(sq_add_bias(ctx, N, g->Hd, s0, g->Hd, P(g, L->bridge_b)));
    SQ_TRY(sq_tanh_inplace(ctx, (size_t)N * g->Hd, s0));
  } else if (L->cfg.init != SQ_INIT_FINAL) {
    SQ_TRY(sq_fill(ctx, s0, (size_t)N * g->Hd, 0.0f));
  }
  return SEQCL_OK;
}

/* The attention of decoder step t (1-based) over its rows. */
static sq_attn_args attn_args(sq_graph *g, int t) {
  const sq_tlayout *L = &g->L;
  const size_t at = (size_t)g->dcum[t - 1];
  sq_attn_args a = {.kind = L->cfg.score, .N = g->dec_rows[t - 1], .S = g->S, .He = g->He, .A = g->A,
                    .keys = F(g, g->enc_out), .lens = I(g, g->lens), .mask = sq_none(),
                    .scale = 1.0f, .pkeys = sq_none(), .v = sq_none(), .bv = sq_none()};
  if (a.kind == SQ_SCORE_DOT || a.kind == SQ_SCORE_SCALED_DOT) {
    a.qp = F(g, g->sp + at * g->Hd);
    a.ld_qp = g->Hd;
    if (a.kind == SQ_SCORE_SCALED_DOT) a.scale = 1.0f / sqrtf((float)g->He);
  } else {
    a.qp = F(g, g->qp + at * g->qw);
    a.ld_qp = g->qw;
  }
  if (a.kind == SQ_SCORE_ADDITIVE) {
    a.pkeys = F(g, g->pkeys);
    a.v = P(g, L->energy_w);
    a.bv = Popt(g, L->energy_b);
  }
  return a;
}

static sq_ref saved_u(sq_graph *g, int t) {
  if (g->L.cfg.score != SQ_SCORE_ADDITIVE) return sq_none();
  return F(g, g->u + (size_t)g->dcum[t - 1] * g->S * g->A);
}

/* Decoder step t (1-based) over its R rows: their input states sp (the
 * first R of the previous step's new ones), the query, the attention into
 * X's context columns, the GEMMs and the gates into the step's new states.
 * X's embedding part, and when hoisted its half of gi, are there already. */
static seqcl_status decoder_step(sq_graph *g, int t, int hoisted) {
  seqcl_ctx *ctx = g->ctx;
  const sq_tlayout *L = &g->L;
  const int N = g->N, D = g->D, He = g->He, Hd = g->Hd, Gd = g->Gd, Xw = g->Xw;
  const int R = g->dec_rows[t - 1];
  const size_t at = (size_t)g->dcum[t - 1];
  sq_ref prev = t > 1 ? F(g, g->st + ((size_t)N + g->dcum[t - 2]) * Hd) : F(g, g->st);
  sq_ref sprev = F(g, g->sp + at * Hd), snext = F(g, g->st + ((size_t)N + at) * Hd);
  sq_ref X = F(g, g->X + at * Xw), gi = F(g, g->gi + at * Gd), gh = F(g, g->gh + at * Gd);
  SQ_TRY(sq_copy(ctx, sprev, prev, (size_t)R * Hd));
  if (!hoisted)
    SQ_TRY(sq_gemm(ctx, 0, 1, R, Gd, D, 1.0f, X, Xw, 0, P(g, L->dec_wih), Xw, 0, 0.0f, gi, Gd, 0,
                   1));
  if (L->cfg.score == SQ_SCORE_ADDITIVE || L->cfg.score == SQ_SCORE_GENERAL)
    SQ_TRY(sq_linear(ctx, R, Hd, g->qw, sprev, Hd, P(g, L->query_w), Popt(g, L->query_b),
                     F(g, g->qp + at * g->qw), g->qw));
  if (!g->none) {
    sq_attn_args a = attn_args(g, t);
    SQ_TRY(sq_attn_fwd(ctx, &a, saved_u(g, t), sq_ref_add(X, (size_t)D), Xw,
                       F(g, g->alpha + at * g->S)));
  }
  /* gi += c W_ih[:, D:]^T (score "none", hoisted: already in the one input GEMM) */
  if (!g->none || !hoisted)
    SQ_TRY(sq_gemm(ctx, 0, 1, R, Gd, He, 1.0f, sq_ref_add(X, (size_t)D), Xw, 0,
                   P(g, L->dec_wih + (size_t)D), Xw, 0, 1.0f, gi, Gd, 0, 1));
  SQ_TRY(sq_gemm(ctx, 0, 1, R, Gd, Hd, 1.0f, sprev, Hd, 0, P(g, L->dec_whh), Hd, 0, 0.0f, gh, Gd, 0,
                 1));
  SQ_TRY(sq_copy(ctx, snext, sprev, (size_t)R * Hd));
  sq_gru_args ga = {.N = R, .H = Hd, .gi = gi, .gi_sn = (size_t)Gd, .gi_st = 0, .gh = gh,
                    .ld_gh = Gd, .b_ih = P(g, L->dec_bih), .b_hh = P(g, L->dec_bhh), .h = snext,
                    .out = sq_none(), .lens = sq_none(), .step = 0, .reverse = 0};
  return sq_gru_fwd(ctx, &ga, F(g, g->sv + at * 4 * Hd), (size_t)4 * Hd, 0);
}

/* logits [rows, V] of the output layer from states s (ld Hd) and, for
 * "state_context", the contexts c (ld Xw): W_o is [V, Hd (+ He)]. */
static seqcl_status output_forward(sq_graph *g, int rows, sq_ref s, sq_ref c, int ldc,
                                   sq_ref logits) {
  seqcl_ctx *ctx = g->ctx;
  const sq_tlayout *L = &g->L;
  const int Hd = g->Hd, V = g->V, Ow = g->Ow;
  if (!g->ctxout) return sq_linear(ctx, rows, Hd, V, s, Hd, P(g, L->out_w), P(g, L->out_b), logits, V);
  SQ_TRY(sq_gemm(ctx, 0, 1, rows, V, Hd, 1.0f, s, Hd, 0, P(g, L->out_w), Ow, 0, 0.0f, logits, V, 0,
                 1));
  SQ_TRY(sq_gemm(ctx, 0, 1, rows, V, g->He, 1.0f, c, ldc, 0, P(g, L->out_w + (size_t)Hd), Ow, 0,
                 1.0f, logits, V, 0, 1));
  return sq_add_bias(ctx, rows, V, logits, V, P(g, L->out_b));
}

/* Score "none": every step's context columns of X = hfinal (one gather). */
static seqcl_status fixed_context_all_steps(sq_graph *g) {
  return sq_embedding_device_ids(g->ctx, g->dcum[g->T], g->He, g->N, I(g, g->rows),
                                 F(g, g->hfinal), F(g, g->X + (size_t)g->D), g->Xw);
}

seqcl_status sq_graph_forward(sq_graph *g, float *loss) {
  seqcl_ctx *ctx = g->ctx;
  const sq_tlayout *L = &g->L;
  const int N = g->N, T = g->T, D = g->D, Hd = g->Hd, Gd = g->Gd, Xw = g->Xw, V = g->V;
  const int TR = g->dcum[T]; /* the decoder's rows, packed over the steps */
  const int on = sq_graph_dropping(g);
  SQ_TRY(encoder_forward(g, on));
  /* Teacher forcing: every step's input embedding and its half of the input
   * GEMM are known up front, so both are one call over all steps' rows. */
  SQ_TRY(sq_embedding(ctx, TR, D, L->cfg.tgt_vocab, I(g, g->dec_in), g->dec_in_h,
                      P(g, L->dec_emb), F(g, g->X), Xw));
  if (on) SQ_TRY(sq_graph_drop(g, DROP_DEC_EMB, TR, D, F(g, g->X), Xw, F(g, g->X), Xw));
  /* score "none": the context is known up front too, so the GEMM covers it */
  if (g->none) SQ_TRY(fixed_context_all_steps(g));
  SQ_TRY(sq_gemm(ctx, 0, 1, TR, Gd, g->none ? Xw : D, 1.0f, F(g, g->X), Xw, 0, P(g, L->dec_wih),
                 Xw, 0, 0.0f, F(g, g->gi), Gd, 0, 1));
  /* a step without rows is past every line's last label, and so are the rest */
  for (int t = 1; t <= T && g->dec_rows[t - 1]; t++) SQ_TRY(decoder_step(g, t, 1));
  sq_ref s1 = F(g, g->st + (size_t)N * Hd), c1 = F(g, g->X + (size_t)D);
  int ldc = Xw;
  if (on) {
    SQ_TRY(sq_graph_drop(g, DROP_OUT_STATE, TR, Hd, s1, Hd, F(g, g->sd), Hd));
    s1 = F(g, g->sd);
    if (g->ctxout) {
      SQ_TRY(sq_graph_drop(g, DROP_OUT_CTX, TR, g->He, c1, Xw, F(g, g->cd), g->He));
      c1 = F(g, g->cd), ldc = g->He;
    }
  }
  SQ_TRY(output_forward(g, TR, s1, c1, ldc, F(g, g->logits)));
  SQ_TRY(sq_cross_entropy(ctx, TR, V, F(g, g->logits), I(g, g->labels), g->labels_h,
                          F(g, g->loss)));
  if (loss) SQ_TRY(sq_read(ctx, F(g, g->loss), loss, sizeof(float)));
  return SEQCL_OK;
}

/* Backward of the output layer: dS [T*N, Hd] and, for "state_context", the
 * context gradient written into dX's context columns (the decoder loop then
 * adds the recurrent path to it). */
static seqcl_status output_backward(sq_graph *g) {
  seqcl_ctx *ctx = g->ctx;
  const sq_tlayout *L = &g->L;
  const int TN = g->dcum[g->T], Hd = g->Hd, He = g->He, V = g->V, Ow = g->Ow, Xw = g->Xw;
  const int on = sq_graph_dropping(g);
  /* the output layer's input as the forward pass read it */
  sq_ref S1 = on ? F(g, g->sd) : F(g, g->st + (size_t)g->N * Hd), dl = F(g, g->dlogits);
  sq_ref C = on ? F(g, g->cd) : F(g, g->X + (size_t)g->D), dC = F(g, g->dX + (size_t)g->D);
  const int ldc = on ? He : Xw;
  if (!g->ctxout) {
    SQ_TRY(sq_linear_bwd(ctx, TN, Hd, V, S1, Hd, P(g, L->out_w), dl, V, F(g, g->dS), Hd, 0.0f,
                         Gr(g, L->out_w), Gr(g, L->out_b)));
  } else {
    SQ_TRY(sq_gemm(ctx, 0, 0, TN, Hd, V, 1.0f, dl, V, 0, P(g, L->out_w), Ow, 0, 0.0f,
                   F(g, g->dS), Hd, 0, 1));
    SQ_TRY(sq_gemm(ctx, 0, 0, TN, He, V, 1.0f, dl, V, 0, P(g, L->out_w + (size_t)Hd), Ow, 0,
                   0.0f, dC, Xw, 0, 1));
    SQ_TRY(sq_gemm(ctx, 1, 0, V, Hd, TN, 1.0f, dl, V, 0, S1, Hd, 0, 1.0f, Gr(g, L->out_w), Ow,
                   0, 1));
    SQ_TRY(sq_gemm(ctx, 1, 0, V, He, TN, 1.0f, dl, V, 0, C, ldc, 0, 1.0f,
                   Gr(g, L->out_w + (size_t)Hd), Ow, 0, 1));
    SQ_TRY(sq_bias_grad(ctx, TN, V, dl, V, Gr(g, L->out_b)));
  }
  if (on) {
    SQ_TRY(sq_graph_drop(g, DROP_OUT_STATE, TN, Hd, F(g, g->dS), Hd, F(g, g->dS), Hd));
    if (g->ctxout) SQ_TRY(sq_graph_drop(g, DROP_OUT_CTX, TN, He, dC, Xw, dC, Xw));
  }
  return SEQCL_OK;
}

seqcl_status sq_graph_backward(sq_graph *g) {
  seqcl_ctx *ctx = g->ctx;
  const sq_tlayout *L = &g->L;
  const int N = g->N, S = g->S, T = g->T, D = g->D, H = g->H, He = g->He, Hd = g->Hd;
  const int Gd = g->Gd, Xw = g->Xw, V = g->V, qw = g->qw;
  const sq_score kind = L->cfg.score;
  const int projected = kind == SQ_SCORE_ADDITIVE || kind == SQ_SCORE_GENERAL;
  const int TR = g->dcum[T]; /* the decoder's rows, packed over the steps */
  /* output layer: dlogits, then dS (all steps) and the output weights */
  SQ_TRY(sq_cross_entropy_bwd(ctx, TR, V, F(g, g->logits), I(g, g->labels),
                               g->valid ? 1.0f / (float)g->valid : 0.0f, F(g, g->dlogits)));
  SQ_TRY(output_backward(g));
  SQ_TRY(sq_fill(ctx, F(g, g->ds), (size_t)N * Hd, 0.0f));
  SQ_TRY(sq_fill(ctx, F(g, g->denc_out), (size_t)N * S * He, 0.0f));
  if (kind == SQ_SCORE_ADDITIVE)
    SQ_TRY(sq_fill(ctx, F(g, g->dpkeys), (size_t)N * S * g->A, 0.0f));
  if (projected) SQ_TRY(sq_fill(ctx, F(g, g->dqp), (size_t)TR * qw, 0.0f));
  sq_ref ds = F(g, g->ds);
  /* Rows past their last label have ds = 0 until their last step (dS is 0
   * there and no later step reached them). */
  for (int t = T; t >= 1; t--) {
    const int R = g->dec_rows[t - 1];
    if (!R) continue;
    const size_t at = (size_t)g->dcum[t - 1];
    sq_ref dgi = F(g, g->dgi + at * Gd), dgh = F(g, g->dgh + at * Gd);
    sq_ref dc = F(g, g->dX + at * Xw + (size_t)D);
    sq_gru_bwd_args b = {.N = R, .H = Hd, .gi = F(g, g->gi + at * Gd), .gi_sn = (size_t)Gd,
                         .gi_st = 0, .gh = F(g, g->gh + at * Gd), .ld_gh = Gd,
                         .b_ih = P(g, L->dec_bih), .b_hh = P(g, L->dec_bhh),
                         .h_prev = F(g, g->sp + at * Hd), .dh = ds,
                         .dout = F(g, g->dS + at * Hd), .dout_sn = (size_t)Hd, .dout_st = 0,
                         .dgi = dgi, .dgh = dgh, .ld_dgh = Gd, .lens = sq_none(), .step = 0,
                         .reverse = 0, .saved = F(g, g->sv + at * 4 * Hd),
                         .sv_sn = (size_t)4 * Hd, .sv_st = 0};
    SQ_TRY(sq_gru_gates_bwd(ctx, &b));
    SQ_TRY(sq_gemm(ctx, 0, 0, R, Hd, Gd, 1.0f, dgh, Gd, 0, P(g, L->dec_whh), Hd, 0, 1.0f, ds, Hd,
                   0, 1));
    if (g->none) continue; /* no attention; dc of all steps is taken after the loop */
    /* dc (+)= dgi W_ih[:, D:]; "state_context" already put the output layer's part there */
    SQ_TRY(sq_gemm(ctx, 0, 0, R, He, Gd, 1.0f, dgi, Gd, 0, P(g, L->dec_wih + (size_t)D), Xw, 0,
                   g->ctxout ? 1.0f : 0.0f, dc, Xw, 0, 1));
    sq_attn_args a = attn_args(g, t);
    sq_ref dqp = projected ? F(g, g->dqp + at * qw) : ds;
    SQ_TRY(sq_attn_bwd(ctx, &a, F(g, g->alpha + at * S), saved_u(g, t), dc, Xw, dqp,
                       projected ? qw : Hd, F(g, g->denc_out),
                       kind == SQ_SCORE_ADDITIVE ? F(g, g->dpkeys) : sq_none(),
                       kind == SQ_SCORE_ADDITIVE ? Gr(g, L->energy_w) : sq_none(),
                       kind == SQ_SCORE_ADDITIVE && L->energy_b != (size_t)-1
                           ? Gr(g, L->energy_b)
                           : sq_none()));
    if (projected)
      SQ_TRY(sq_gemm(ctx, 0, 0, R, Hd, qw, 1.0f, dqp, qw, 0, P(g, L->query_w), Hd, 0, 1.0f, ds, Hd,
                     0, 1));
  }
  /* score "none": dc_t of every step in one GEMM (as the loop does per step) */
  if (g->none)
    SQ_TRY(sq_gemm(ctx, 0, 0, TR, He, Gd, 1.0f, F(g, g->dgi), Gd, 0,
                   P(g, L->dec_wih + (size_t)D), Xw, 0, g->ctxout ? 1.0f : 0.0f,
                   F(g, g->dX + (size_t)D), Xw, 0, 1));
  /* decoder weight gradients of all steps at once (sp: each row's input state) */
  SQ_TRY(sq_gemm(ctx, 1, 0, Gd, Xw, TR, 1.0f, F(g, g->dgi), Gd, 0, F(g, g->X), Xw, 0, 1.0f,
                 Gr(g, L->dec_wih), Xw, 0, 1));
  SQ_TRY(sq_gemm(ctx, 1, 0, Gd, Hd, TR, 1.0f, F(g, g->dgh), Gd, 0, F(g, g->sp), Hd, 0, 1.0f,
                 Gr(g, L->dec_whh), Hd, 0, 1));
  SQ_TRY(sq_bias_grad(ctx, TR, Gd, F(g, g->dgi), Gd, Gr(g, L->dec_bih)));
  SQ_TRY(sq_bias_grad(ctx, TR, Gd, F(g, g->dgh), Gd, Gr(g, L->dec_bhh)));
  /* embedding half of dX, then the decoder embedding */
  SQ_TRY(sq_gemm(ctx, 0, 0, TR, D, Gd, 1.0f, F(g, g->dgi), Gd, 0, P(g, L->dec_wih), Xw, 0, 0.0f,
                 F(g, g->dX), Xw, 0, 1));
  if (sq_graph_dropping(g))
    SQ_TRY(sq_graph_drop(g, DROP_DEC_EMB, TR, D, F(g, g->dX), Xw, F(g, g->dX), Xw));
  SQ_TRY(sq_embedding_bwd(ctx, TR, D, I(g, g->dec_in), F(g, g->dX), Xw, L->cfg.pad_id,
                          Gr(g, L->dec_emb)));
  if (projected) {
    SQ_TRY(sq_gemm(ctx, 1, 0, qw, Hd, TR, 1.0f, F(g, g->dqp), qw, 0, F(g, g->sp), Hd, 0, 1.0f,
                   Gr(g, L->query_w), Hd, 0, 1));
    if (L->query_b != (size_t)-1)
      SQ_TRY(sq_bias_grad(ctx, TR, qw, F(g, g->dqp), qw, Gr(g, L->query_b)));
  }
  /* the initial state: ds = dL/ds_0 */
  for (int d = 0; d < g->ndir; d++) SQ_TRY(sq_fill(ctx, F(g, g->enc_dh[d]), (size_t)N * H, 0.0f));
  if (L->cfg.init == SQ_INIT_BRIDGE) {
    sq_ref dpre = F(g, g->dpre);
    SQ_TRY(sq_tanh_bwd(ctx, (size_t)N * Hd, F(g, g->st), ds, dpre));
    SQ_TRY(sq_bias_grad(ctx, N, Hd, dpre, Hd, Gr(g, L->bridge_b)));
    for (int d = 0; d < g->ndir; d++) {
      sq_ref hfin = F(g, g->hfin[d]);
      /* dW_b[:, dH:(d+1)H] += dpre^T h_final_d; dh_final_d = dpre W_b[:, dH:(d+1)H] */
      SQ_TRY(sq_gemm(ctx, 1, 0, Hd, H, N, 1.0f, dpre, Hd, 0, hfin, H, 0, 1.0f,
                     Gr(g, L->bridge_w + (size_t)d * H), He, 0, 1));
      SQ_TRY(sq_gemm(ctx, 0, 0, N, H, Hd, 1.0f, dpre, Hd, 0, P(g, L->bridge_w + (size_t)d * H), He,
                     0, 0.0f, F(g, g->enc_dh[d]), H, 0, 1));
    }
  }
  if (L->cfg.init == SQ_INIT_FINAL) {
    /* s0 was the final states themselves: dh_final_d = ds[:, dH:(d+1)H] */
    if (g->ndir == 1) {
      SQ_TRY(sq_copy(ctx, F(g, g->enc_dh[0]), ds, (size_t)N * H));
    } else {
      for (int d = 0; d < g->ndir; d++)
        for (int n = 0; n < N; n++)
          SQ_TRY(sq_copy(ctx, F(g, g->enc_dh[d] + (size_t)n * H),
                         sq_ref_add(ds, (size_t)n * Hd + (size_t)d * H), (size_t)H));
    }
  }
  /* score "none": the context was hfinal at every step, so dh_final_d +=
   * sum_t dc_t[:, dH:(d+1)H]: each packed row's block of dX added into its
   * line's row (the embedding backward's scatter-add; no id is -1) */
  for (int d = 0; g->none && d < g->ndir; d++)
    SQ_TRY(sq_embedding_bwd(ctx, TR, H, I(g, g->rows), F(g, g->dX + (size_t)D + (size_t)d * H), Xw,
                            -1, F(g, g->enc_dh[d])));
  return sq_genc_backward(g);
}

seqcl_status sq_graph_greedy(sq_graph *g, int32_t *out) {
  seqcl_ctx *ctx = g->ctx;
  const sq_tlayout *L = &g->L;
  const int N = g->N, T = g->T, D = g->D, Hd = g->Hd, Xw = g->Xw, V = g->V;
  /* every row runs every step (there are no labels to end them): step k's
   * rows are rows k*N.. of the step tensors */
  for (int t = 0; t <= T; t++) {
    if (t < T) g->dec_rows[t] = N;
    g->dcum[t] = t * N;
  }
  SQ_TRY(write_context_rows(g));
  SQ_TRY(encoder_forward(g, 0)); /* decoding never drops */
  if (g->none) SQ_TRY(fixed_context_all_steps(g)); /* the steps write only the embedding */
  int32_t *ids = g->dec_in_h; /* the current input token per row */
  for (int n = 0; n < N; n++) ids[n] = L->cfg.bos_id;
  SQ_TRY(sq_write(ctx, I(g, g->pred), ids, sizeof(int32_t) * (size_t)N));
  for (int t = 1; t <= T; t++) {
    const size_t k = (size_t)(t - 1);
    SQ_TRY(sq_embedding(ctx, N, D, L->cfg.tgt_vocab, I(g, g->pred), ids, P(g, L->dec_emb),
                        F(g, g->X + k * N * Xw), Xw));
    SQ_TRY(decoder_step(g, t, 0));
    sq_ref logit = F(g, g->logits + k * N * V);
    SQ_TRY(output_forward(g, N, F(g, g->st + (k + 1) * N * Hd), F(g, g->X + k * N * Xw + D), Xw,
                          logit));
    SQ_TRY(sq_argmax(ctx, N, V, logit, V, sq_none(), I(g, g->pred)));
    SQ_TRY(sq_read(ctx, I(g, g->pred), ids, sizeof(int32_t) * (size_t)N));
    for (int n = 0; n < N; n++) {
      /* a finished line keeps producing EOS (SPEC §1, greedy decoding) */
      if (t > 1 && out[(size_t)n * T + k - 1] == L->cfg.eos_id) ids[n] = L->cfg.eos_id;
      out[(size_t)n * T + k] = ids[n];
    }
    SQ_TRY(sq_write(ctx, I(g, g->pred), ids, sizeof(int32_t) * (size_t)N));
  }
  return SEQCL_OK;
}
