/* The training graph's state, shared by its two files: graph.c (buffers,
 * batches, the decoder, the output layer, the initial state) and
 * graph_encoder.c (the encoder over length-sorted packed tokens). */
#ifndef SQ_TRAIN_GRAPH_IMPL_H
#define SQ_TRAIN_GRAPH_IMPL_H

#include "ops/ops.h"
#include "train/tmodel.h"

struct sq_graph {
  seqcl_ctx *ctx;
  sq_tlayout L;
  int max_n, max_s, max_t; /* what the buffers were sized for */
  int S, T, N;               /* this batch's (every stride follows them) */
  int D, H, He, Hd, A, qw, V, ndir, G, Gd, Xw, layers, Ow, ctxout;
  sq_buf *fb, *ib;
  /* float offsets into fb */
  size_t params, grads;
  /* encoder, over the batch's ntok tokens in packed order (graph_encoder.c):
   * per layer and direction the input GEMM gi [ntok,3H], the recurrent GEMM
   * gh [ntok,3H], the gates kept for the backward sv [ntok,4H], the state
   * before (hp) and after (hs) each token [ntok,H]; the reverse direction's
   * input in its own order (inrev [ntok,In]); per layer its output lout
   * [ntok+1,He] (a zero row last, for the padding of enc_out) */
  size_t enc_x, enc_dgi[2], enc_dgh[2], enc_dh[2], enc_dhr[2], enc_drev, enc_dxrev;
  size_t enc_sv[SQ_TRAIN_MAX_LAYERS][2], enc_gi[SQ_TRAIN_MAX_LAYERS][2];
  size_t enc_gh[SQ_TRAIN_MAX_LAYERS][2], enc_hp[SQ_TRAIN_MAX_LAYERS][2];
  size_t enc_hs[SQ_TRAIN_MAX_LAYERS][2], enc_inrev[SQ_TRAIN_MAX_LAYERS];
  size_t lout[SQ_TRAIN_MAX_LAYERS], dlout[SQ_TRAIN_MAX_LAYERS];
  size_t hfin[2]; /* the top layer's final states [N,H] per direction, batch order */
  /* enc_out/denc_out: the top layer's output batch-major [N,S,He] (0 at
   * padding), as the attention reads it */
  size_t enc_out, denc_out, denc_x, pkeys, dpkeys, hfinal, dpre;
  /* additive: the keys projected over the packed tokens (pkp [ntok+1,A], a
   * zero row last, gathered into batch-major pkeys) and their gradient
   * gathered back (dpkp [ntok,A]) */
  size_t pkp, dpkp;
  size_t X, qp, alpha, u, sv, gi, gh, st, sp, logits, dlogits, dS, ds, dX, dgi, dgh, dqp, loss;
  /* int32 offsets into ib */
  size_t lens, dec_in, labels, pred;
  /* the packing's gathers (graph_encoder.c): tok [ntok] token ids; rev [ntok]
   * forward <-> reverse order (an involution); unpack [N*S] packed row of
   * each batch-major position (ntok at padding: lout's zero row); pack
   * [ntok] batch-major row of each packed one; fin [N] packed row of each
   * line's last token; order [N] the line at each rank; ident [max N*S]
   * 0, 1, 2, ... (a strided copy as a gather) */
  size_t tok, rev, unpack, pack, fin, order, ident;
  size_t rows; /* score "none": int32 [T*N], rows[t*N + n] = n (the context gather) */
  int none;
  /* host copies for the fronts' validation */
  int32_t *src_h, *lens_h, *dec_in_h, *labels_h;
  int valid;
  /* the packing, host side: lines by length (longest first, ties in batch
   * order); bs[s] lines are longer than s, their tokens at position s are
   * packed rows cum[s] .. cum[s] + bs[s] - 1 (by rank); ntok = cum[S] */
  int *bs, *cum, ntok;
  int32_t *tok_h, *pk_h; /* pk_h: staging for the gathers' ids */
  /* dec_rows[k]: decoder step k+1 runs rows [0, dec_rows[k]) only, the
   * shortest prefix holding every row with a label at that step or later
   * (past its last label a row feeds no loss: nothing of it is computed, as
   * PyTorch's packed sequences skip it); T entries. Batches sorted by target
   * length (file training) make the prefix exactly the rows still running. */
  int *dec_rows;
  /* the decoder's tensors are packed the same way: step t's rows are rows
   * dcum[t] .. dcum[t] + dec_rows[t] - 1 of every [*, W] step tensor
   * (dcum[T] in all); the states st hold s_0 for all N rows, then step t's
   * new states at row N + dcum[t], and sp step t's input states (packed) */
  int *dcum;
  double drop_p; /* 0: no dropout */
  uint64_t drop_seed, drop_step;
  size_t sd, cd; /* the output layer's dropped input [T,N,Hd] and [T,N,He] */
};

/* Mask streams, one per dropped tensor (the "tensor" word of the key). */
enum { DROP_ENC_EMB = 0, DROP_DEC_EMB = 1, DROP_LAYER = 2, DROP_OUT_STATE = 8, DROP_OUT_CTX = 9 };

static inline int sq_graph_dropping(const sq_graph *g) { return g->drop_p > 0.0; }
/* y = x * mask / (1-p) over a [rows, cols] tensor (in place when x == y). */
seqcl_status sq_graph_drop(sq_graph *g, uint32_t tensor, int rows, int cols, sq_ref x, int ldx,
                           sq_ref y, int ldy);

static inline sq_ref F(sq_graph *g, size_t off) { return sq_at(g->fb, off); }
static inline sq_ref I(sq_graph *g, size_t off) { return sq_at(g->ib, off); }
static inline sq_ref P(sq_graph *g, size_t off) { return sq_at(g->fb, g->params + off); }
static inline sq_ref Gr(sq_graph *g, size_t off) { return sq_at(g->fb, g->grads + off); }
static inline sq_ref Popt(sq_graph *g, size_t off) {
  return off == (size_t)-1 ? sq_none() : P(g, off);
}

/* graph_encoder.c: the packing of this batch's sources (after src_h and
 * lens_h are set), the encoder forward (embedding, layers, enc_out, pkeys,
 * hfin / hfinal) and its backward from denc_out, dpkeys and enc_dh. */
seqcl_status sq_genc_set_batch(sq_graph *g);
seqcl_status sq_genc_forward(sq_graph *g, int dropout);
seqcl_status sq_genc_backward(sq_graph *g);

#endif
