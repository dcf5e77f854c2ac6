/* The training graph's encoder over packed tokens, as PyTorch's
 * pack_padded_sequence runs nn.GRU: the batch's lines ranked by length
 * (longest first, ties in batch order), and the tokens at position s of the
 * bs[s] lines longer than s stored as one block of rows cum[s] .. cum[s] +
 * bs[s] - 1 in rank order. Step s of a direction is then the block's rows
 * only, and the input GEMMs and weight gradients cover the real tokens only:
 * no work on padding (a batch of lines of 4-20 tokens is ~40 % padding).
 *
 * The reverse direction runs over each line reversed (step s reads the token
 * at position len - 1 - s): its input is gathered into that order once per
 * layer (rev, an involution: forward row <-> reverse row) and its states are
 * gathered back into the forward order for the layer's output. Each step
 * keeps the state before (hp) and after (hs) its block, so that the weight
 * gradients of all steps are one GEMM each over the packed rows.
 *
 * Dropout masks of the encoder (the embedding, each layer's output but the
 * top one's) are drawn over the packed [ntok, cols] tensors: element e is
 * packed row e / cols. The attention reads the top layer's output unpacked
 * into batch-major enc_out [N,S,He], 0 at padding. Additive attention's
 * keys are projected over the packed top-layer output too (the real tokens
 * only: a batch of 4-20-token lines pads 40 % of N x S) and gathered into
 * batch-major pkeys; their gradient is gathered back into packed order for
 * the projection's backward. */
#include <stdlib.h>
#include <string.h>

#include "ops/ops.h"
#include "train/graph_impl.h"

/* Ranks, blocks and the gathers' ids of this batch (src_h, lens_h set). */
seqcl_status sq_genc_set_batch(sq_graph *g) {
  const int N = g->N, S = g->S;
  const int32_t *len = g->lens_h;
  int32_t *order = g->pk_h, *rank = order + N; /* staging: order, rank, then the id arrays */
  int at = 0;
  for (int l = S; l >= 1; l--) /* longest first; a stable counting pass per length */
    for (int n = 0; n < N; n++)
      if (len[n] == l) order[at++] = n;
  for (int r = 0; r < N; r++) rank[order[r]] = r;
  g->cum[0] = 0;
  for (int s = 0, r = N; s < S; s++) {
    while (r > 0 && len[order[r - 1]] <= s) r--;
    g->bs[s] = r;
    g->cum[s + 1] = g->cum[s] + r;
  }
  const int ntok = g->ntok = g->cum[S];
  int32_t *rev = rank + N, *unpack = rev + ntok, *pack = unpack + (size_t)N * S, *fin = pack + ntok;
  for (int s = 0; s < S; s++)
    for (int r = 0; r < g->bs[s]; r++) {
      const int n = order[r], row = g->cum[s] + r;
      g->tok_h[row] = g->src_h[(size_t)n * S + s];
      rev[row] = g->cum[len[n] - 1 - s] + r;
      pack[row] = n * S + s;
    }
  for (int n = 0; n < N; n++) {
    for (int s = 0; s < S; s++) unpack[(size_t)n * S + s] = s < len[n] ? g->cum[s] + rank[n] : ntok;
    fin[n] = g->cum[len[n] - 1] + rank[n];
  }
  seqcl_ctx *ctx = g->ctx;
  SQ_TRY(sq_write(ctx, I(g, g->tok), g->tok_h, sizeof(int32_t) * (size_t)ntok));
  SQ_TRY(sq_write(ctx, I(g, g->order), order, sizeof(int32_t) * (size_t)N));
  SQ_TRY(sq_write(ctx, I(g, g->rev), rev, sizeof(int32_t) * (size_t)ntok));
  SQ_TRY(sq_write(ctx, I(g, g->unpack), unpack, sizeof(int32_t) * (size_t)N * S));
  SQ_TRY(sq_write(ctx, I(g, g->pack), pack, sizeof(int32_t) * (size_t)ntok));
  return sq_write(ctx, I(g, g->fin), fin, sizeof(int32_t) * (size_t)N);
}

/* rows [count, width] of dst (ld ld_dst) = rows ids[] of a [table_rows, width] table */
static seqcl_status gather(sq_graph *g, int count, int width, int table_rows, size_t ids,
                           sq_ref table, sq_ref dst, int ld_dst) {
  return sq_embedding_device_ids(g->ctx, count, width, table_rows, I(g, ids), table, dst, ld_dst);
}

static int layer_in(const sq_graph *g, int l) { return l ? g->He : g->D; }

/* Direction d of layer l: (reverse: its input in its own order), the input
 * GEMM over every token, then per step the block's recurrent GEMM and gates. */
static seqcl_status layer_forward_dir(sq_graph *g, int l, int d) {
  seqcl_ctx *ctx = g->ctx;
  const sq_tlayout *L = &g->L;
  const int H = g->H, G = g->G, In = layer_in(g, l), ntok = g->ntok;
  sq_ref in = F(g, l ? g->lout[l - 1] : g->enc_x);
  if (d) {
    SQ_TRY(gather(g, ntok, In, ntok, g->rev, in, F(g, g->enc_inrev[l]), In));
    in = F(g, g->enc_inrev[l]);
  }
  const size_t gi = g->enc_gi[l][d], gh = g->enc_gh[l][d], hp = g->enc_hp[l][d],
               hs = g->enc_hs[l][d];
  SQ_TRY(sq_gemm(ctx, 0, 1, ntok, G, In, 1.0f, in, In, 0, P(g, L->enc_wih[l][d]), In, 0, 0.0f,
                 F(g, gi), G, 0, 1));
  for (int s = 0; s < g->S && g->bs[s]; s++) { /* past the longest line: no block */
    const int R = g->bs[s];
    const size_t at = (size_t)g->cum[s];
    sq_ref hprev = F(g, hp + at * H), h = F(g, hs + at * H), ghs = F(g, gh + at * G);
    if (s == 0) { /* every line starts from the zero state */
      SQ_TRY(sq_fill(ctx, hprev, (size_t)R * H, 0.0f));
      SQ_TRY(sq_fill(ctx, ghs, (size_t)R * G, 0.0f));
    } else { /* the first R rows of the previous block: the lines still running */
      SQ_TRY(sq_copy(ctx, hprev, F(g, hs + (size_t)g->cum[s - 1] * H), (size_t)R * H));
      SQ_TRY(sq_gemm(ctx, 0, 1, R, G, H, 1.0f, hprev, H, 0, P(g, L->enc_whh[l][d]), H, 0, 0.0f,
                     ghs, G, 0, 1));
    }
    SQ_TRY(sq_copy(ctx, h, hprev, (size_t)R * H));
    sq_gru_args a = {.N = R, .H = H, .gi = F(g, gi + at * G), .gi_sn = (size_t)G, .gi_st = 0,
                     .gh = ghs, .ld_gh = G, .b_ih = P(g, L->enc_bih[l][d]),
                     .b_hh = P(g, L->enc_bhh[l][d]), .h = h, .out = sq_none(),
                     .lens = sq_none(), .step = 0, .reverse = 0};
    SQ_TRY(sq_gru_fwd(ctx, &a, F(g, g->enc_sv[l][d] + at * 4 * H), (size_t)4 * H, 0));
  }
  return SEQCL_OK;
}

/* The directions of one layer as tasks (sq_run_tasks): on the host with two
 * threads each direction's chain of small per-step products and gates runs on
 * a core of its own, without a fork and join per slot call. */
typedef struct dir_tasks {
  sq_graph *g;
  int l;
  seqcl_status st[2];
  /* a failed task's message (messages are per thread: the task may have run
   * on a worker), raised again on the caller's thread by tasks_status */
  char *msg[2];
} dir_tasks;

static void task_done(dir_tasks *j, int d, seqcl_status st) {
  j->st[d] = st;
  if (st != SEQCL_OK) j->msg[d] = strdup(seqcl_last_message());
}

static seqcl_status tasks_status(dir_tasks *j) {
  seqcl_status st = SEQCL_OK;
  for (int d = 0; d < j->g->ndir; d++) {
    if (j->st[d] != SEQCL_OK && st == SEQCL_OK)
      st = sq_fail(j->g->ctx, j->st[d], "%s",
                   j->msg[d] ? j->msg[d] : "(the failure's message: out of host memory)");
    free(j->msg[d]);
  }
  return st;
}

static void forward_dir_task(void *arg, int d) {
  dir_tasks *j = arg;
  task_done(j, d, layer_forward_dir(j->g, j->l, d));
}

/* Layer l: both directions, then its output [fwd ; rev] in forward order. */
static seqcl_status layer_forward(sq_graph *g, int l) {
  const int ntok = g->ntok, H = g->H, He = g->He;
  dir_tasks j = {g, l, {SEQCL_OK, SEQCL_OK}, {NULL, NULL}};
  sq_run_tasks(g->ctx, g->ndir, forward_dir_task, &j);
  SQ_TRY(tasks_status(&j));
  sq_ref out = F(g, g->lout[l]);
  if (g->ndir == 1) SQ_TRY(sq_copy(g->ctx, out, F(g, g->enc_hs[l][0]), (size_t)ntok * H));
  else {
    SQ_TRY(gather(g, ntok, H, ntok, g->ident, F(g, g->enc_hs[l][0]), out, He));
    SQ_TRY(gather(g, ntok, H, ntok, g->rev, F(g, g->enc_hs[l][1]), sq_ref_add(out, (size_t)H), He));
  }
  return sq_fill(g->ctx, sq_ref_add(out, (size_t)ntok * He), (size_t)He, 0.0f); /* the zero row */
}

seqcl_status sq_genc_forward(sq_graph *g, int dropout) {
  seqcl_ctx *ctx = g->ctx;
  const sq_tlayout *L = &g->L;
  const int N = g->N, S = g->S, D = g->D, H = g->H, He = g->He, ntok = g->ntok;
  const int top = g->layers - 1;
  SQ_TRY(sq_embedding(ctx, ntok, D, L->cfg.src_vocab, I(g, g->tok), g->tok_h, P(g, L->enc_emb),
                      F(g, g->enc_x), D));
  if (dropout) SQ_TRY(sq_graph_drop(g, DROP_ENC_EMB, ntok, D, F(g, g->enc_x), D, F(g, g->enc_x), D));
  for (int l = 0; l < g->layers; l++) {
    SQ_TRY(layer_forward(g, l));
    if (dropout && l < top) /* the next layer's input; the GRU backward never reads it */
      SQ_TRY(sq_graph_drop(g, DROP_LAYER + (uint32_t)l, ntok, He, F(g, g->lout[l]), He,
                           F(g, g->lout[l]), He));
  }
  SQ_TRY(gather(g, N * S, He, ntok + 1, g->unpack, F(g, g->lout[top]), F(g, g->enc_out), He));
  if (L->cfg.score == SQ_SCORE_ADDITIVE) { /* padding reads pkp's zero row: masked anyway */
    const int A = g->A;
    SQ_TRY(sq_linear(ctx, ntok, He, A, F(g, g->lout[top]), He, P(g, L->key_w), P(g, L->key_b),
                     F(g, g->pkp), A));
    SQ_TRY(sq_fill(ctx, F(g, g->pkp + (size_t)ntok * A), (size_t)A, 0.0f));
    SQ_TRY(gather(g, N * S, A, ntok + 1, g->unpack, F(g, g->pkp), F(g, g->pkeys), A));
  }
  /* each line's final state per direction: the state after its last token */
  for (int d = 0; d < g->ndir; d++)
    SQ_TRY(gather(g, N, H, ntok, g->fin, F(g, g->enc_hs[top][d]), F(g, g->hfin[d]), H));
  return SEQCL_OK;
}

/* Backward of direction d of layer l from dL/d(its output) (dlout[l]'s
 * columns, the reverse's gathered into its order) and, for the top layer,
 * dL/d(final states) (enc_dhr, rank order): its steps, then its weight and
 * bias gradients. */
static seqcl_status layer_backward_dir(sq_graph *g, int l, int d) {
  seqcl_ctx *ctx = g->ctx;
  const sq_tlayout *L = &g->L;
  const int H = g->H, He = g->He, G = g->G, In = layer_in(g, l), ntok = g->ntok;
  sq_ref dout = F(g, g->dlout[l]);
  if (d) {
    SQ_TRY(gather(g, ntok, He, ntok, g->rev, dout, F(g, g->enc_drev), He));
    dout = sq_ref_add(F(g, g->enc_drev), (size_t)H);
  }
  sq_ref dh = F(g, g->enc_dhr[d]);
  const size_t gi = g->enc_gi[l][d], gh = g->enc_gh[l][d], hp = g->enc_hp[l][d];
  const size_t dgi = g->enc_dgi[d], dgh = g->enc_dgh[d], sv = g->enc_sv[l][d];
  /* Past its last token a line's state only passes on, so its dh (the final
   * state's gradient, or 0) waits untouched until its last block. */
  for (int s = g->S - 1; s >= 0; s--) {
    const int R = g->bs[s];
    if (!R) continue; /* past the longest line */
    const size_t at = (size_t)g->cum[s];
    sq_gru_bwd_args b = {.N = R, .H = H, .gi = F(g, gi + at * G), .gi_sn = (size_t)G, .gi_st = 0,
                         .gh = F(g, gh + at * G), .ld_gh = G, .b_ih = P(g, L->enc_bih[l][d]),
                         .b_hh = P(g, L->enc_bhh[l][d]), .h_prev = F(g, hp + at * H), .dh = dh,
                         .dout = sq_ref_add(dout, at * He), .dout_sn = (size_t)He, .dout_st = 0,
                         .dgi = F(g, dgi + at * G), .dgh = F(g, dgh + at * G), .ld_dgh = G,
                         .lens = sq_none(), .step = 0, .reverse = 0,
                         .saved = F(g, sv + at * 4 * H), .sv_sn = (size_t)4 * H, .sv_st = 0};
    SQ_TRY(sq_gru_gates_bwd(ctx, &b));
    if (s > 0) /* step 0 started from the constant zero state */
      SQ_TRY(sq_gemm(ctx, 0, 0, R, H, G, 1.0f, F(g, dgh + at * G), G, 0, P(g, L->enc_whh[l][d]), H,
                     0, 1.0f, dh, H, 0, 1));
  }
  sq_ref in = d ? F(g, g->enc_inrev[l]) : F(g, l ? g->lout[l - 1] : g->enc_x);
  /* weight gradients of all steps at once (the dropped input, as read) */
  SQ_TRY(sq_gemm(ctx, 1, 0, G, In, ntok, 1.0f, F(g, dgi), G, 0, in, In, 0, 1.0f,
                 Gr(g, L->enc_wih[l][d]), In, 0, 1));
  SQ_TRY(sq_gemm(ctx, 1, 0, G, H, ntok, 1.0f, F(g, dgh), G, 0, F(g, hp), H, 0, 1.0f,
                 Gr(g, L->enc_whh[l][d]), H, 0, 1));
  SQ_TRY(sq_bias_grad(ctx, ntok, G, F(g, dgi), G, Gr(g, L->enc_bih[l][d])));
  return sq_bias_grad(ctx, ntok, G, F(g, dgh), G, Gr(g, L->enc_bhh[l][d]));
}

static void backward_dir_task(void *arg, int d) {
  dir_tasks *j = arg;
  task_done(j, d, layer_backward_dir(j->g, j->l, d));
}

/* Layer l: both directions (as tasks), then dL/d(its input) into dlout[l-1]
 * or denc_x, forward order: the reverse's part gathered back, the forward's
 * added by its GEMM. */
static seqcl_status layer_backward(sq_graph *g, int l) {
  seqcl_ctx *ctx = g->ctx;
  const sq_tlayout *L = &g->L;
  const int G = g->G, In = layer_in(g, l), ntok = g->ntok;
  sq_ref din = F(g, l ? g->dlout[l - 1] : g->denc_x);
  dir_tasks j = {g, l, {SEQCL_OK, SEQCL_OK}, {NULL, NULL}};
  sq_run_tasks(ctx, g->ndir, backward_dir_task, &j);
  SQ_TRY(tasks_status(&j));
  if (g->ndir == 2) {
    SQ_TRY(sq_gemm(ctx, 0, 0, ntok, In, G, 1.0f, F(g, g->enc_dgi[1]), G, 0,
                   P(g, L->enc_wih[l][1]), In, 0, 0.0f, F(g, g->enc_dxrev), In, 0, 1));
    SQ_TRY(gather(g, ntok, In, ntok, g->rev, F(g, g->enc_dxrev), din, In));
  }
  SQ_TRY(sq_gemm(ctx, 0, 0, ntok, In, G, 1.0f, F(g, g->enc_dgi[0]), G, 0, P(g, L->enc_wih[l][0]),
                 In, 0, g->ndir == 2 ? 1.0f : 0.0f, din, In, 0, 1));
  if (sq_graph_dropping(g) && l > 0)
    SQ_TRY(sq_graph_drop(g, DROP_LAYER + (uint32_t)(l - 1), ntok, g->He, din, g->He, din, g->He));
  return SEQCL_OK;
}

seqcl_status sq_genc_backward(sq_graph *g) {
  seqcl_ctx *ctx = g->ctx;
  const int N = g->N, H = g->H, He = g->He, ntok = g->ntok, top = g->layers - 1;
  /* the attention's and the keys' gradient, packed; the final states' in rank order */
  SQ_TRY(gather(g, ntok, He, N * g->S, g->pack, F(g, g->denc_out), F(g, g->dlout[top]), He));
  if (g->L.cfg.score == SQ_SCORE_ADDITIVE) {
    const sq_tlayout *L = &g->L;
    const int A = g->A;
    SQ_TRY(gather(g, ntok, A, N * g->S, g->pack, F(g, g->dpkeys), F(g, g->dpkp), A));
    SQ_TRY(sq_linear_bwd(ctx, ntok, He, A, F(g, g->lout[top]), He, P(g, L->key_w), F(g, g->dpkp),
                         A, F(g, g->dlout[top]), He, 1.0f, Gr(g, L->key_w),
                         Popt(g, L->key_b).buf ? Gr(g, L->key_b) : sq_none()));
  }
  for (int l = top; l >= 0; l--) {
    for (int d = 0; d < g->ndir; d++)
      SQ_TRY(l == top ? gather(g, N, H, N, g->order, F(g, g->enc_dh[d]), F(g, g->enc_dhr[d]), H)
                      : sq_fill(ctx, F(g, g->enc_dhr[d]), (size_t)N * H, 0.0f));
    SQ_TRY(layer_backward(g, l));
  }
  if (sq_graph_dropping(g))
    SQ_TRY(sq_graph_drop(g, DROP_ENC_EMB, ntok, g->D, F(g, g->denc_x), g->D, F(g, g->denc_x),
                         g->D));
  return sq_embedding_bwd(ctx, ntok, g->D, I(g, g->tok), F(g, g->denc_x), g->D, g->L.cfg.pad_id,
                          Gr(g, g->L.enc_emb));
}
