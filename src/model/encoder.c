/* The encoder (SPEC §1): embedding, stacked (bi)directional GRU layers with
 * pack_padded_sequence semantics, the once-per-batch attention key projection
 * and the decoder's initial state. */
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "model/seq2seq.h"

void sq_encoded_free(sq_encoded *e) {
  if (!e) return;
  free(e->lens_host);
  sq_buf_free(e->lens);
  sq_buf_free(e->keys);
  sq_buf_free(e->pkeys);
  sq_buf_free(e->s0);
  sq_buf_free(e->fixed);
  sq_buf_free(e->rows);
  sq_buf_free(e->mask);
  free(e->mask_host);
  memset(e, 0, sizeof *e);
}

static seqcl_status alloc_f32(seqcl_ctx *ctx, size_t count, sq_buf **out) {
  return sq_buf_alloc(ctx, (count ? count : 1) * sizeof(float), out);
}

/* s0 = tanh(W_b [h_fwd ; h_bwd] + b_b). The concatenation is never built: the
 * two halves of W_b (columns 0..H-1 and H..2H-1) are applied by two GEMMs. */
static seqcl_status bridge(seqcl_model *m, int n, sq_buf *hfin, sq_buf *s0) {
  seqcl_ctx *ctx = m->ctx;
  const int H = m->cfg.enc_hidden, Hd = m->cfg.dec_hidden;
  if (!m->cfg.bidirectional) {
    SQ_TRY(sq_linear(ctx, n, H, Hd, sq_at(hfin, 0), H, m->bridge_w, m->bridge_b, sq_at(s0, 0),
                     Hd));
  } else {
    SQ_TRY(sq_gemm(ctx, 0, 1, n, Hd, H, 1.0f, sq_at(hfin, 0), H, 0, m->bridge_w, m->He, 0, 0.0f,
                   sq_at(s0, 0), Hd, 0, 1));
    SQ_TRY(sq_gemm(ctx, 0, 1, n, Hd, H, 1.0f, sq_at(hfin, (size_t)n * H), H, 0,
                   sq_ref_add(m->bridge_w, (size_t)H), m->He, 0, 1.0f, sq_at(s0, 0), Hd, 0, 1));
    SQ_TRY(sq_add_bias(ctx, n, Hd, sq_at(s0, 0), Hd, m->bridge_b));
  }
  return sq_tanh_inplace(ctx, (size_t)n * Hd, sq_at(s0, 0));
}

/* s0 = [h_fwd ; h_bwd] (init "final", H_d = H_e). hfin holds the directions one
 * after the other ([dirs, n, H]); s0 interleaves them per row, so the
 * bidirectional case copies row by row (n copies per direction, enqueued
 * once per batch, never inside the decoder loop). */
static seqcl_status final_state(seqcl_model *m, int n, sq_buf *hfin, sq_buf *s0) {
  seqcl_ctx *ctx = m->ctx;
  const int H = m->cfg.enc_hidden;
  if (!m->cfg.bidirectional) return sq_copy(ctx, sq_at(s0, 0), sq_at(hfin, 0), (size_t)n * H);
  for (int d = 0; d < 2; d++)
    for (int i = 0; i < n; i++)
      SQ_TRY(sq_copy(ctx, sq_at(s0, (size_t)i * 2 * H + (size_t)d * H),
                     sq_at(hfin, ((size_t)d * n + (size_t)i) * H), (size_t)H));
  return SEQCL_OK;
}

/* rows[i] = i / k on the device (k = 1: the identity): the gather that moves
 * whole rows between buffers of different row strides, or repeats each row k
 * times (an embedding lookup whose table is the source buffer). */
static seqcl_status source_rows(seqcl_ctx *ctx, int n, int k, sq_buf **rows) {
  int32_t *ids = malloc((size_t)n * sizeof(int32_t));
  if (!ids) return sq_fail(ctx, SEQCL_ERR_OUT_OF_MEMORY, "encoder: out of memory");
  for (int i = 0; i < n; i++) ids[i] = i / k;
  seqcl_status st = sq_buf_alloc(ctx, (size_t)n * sizeof(int32_t), rows);
  if (st == SEQCL_OK) st = sq_write(ctx, sq_at(*rows, 0), ids, (size_t)n * sizeof(int32_t));
  free(ids);
  return st;
}

/* Score "none": fixed = [h_fwd_final ; h_bwd_final] [n, He] from hfin
 * [dirs][n][H] (the final states of the top layer, as the bridge reads them). */
static seqcl_status fixed_context(seqcl_model *m, sq_encoded *e, sq_buf *hfin) {
  seqcl_ctx *ctx = m->ctx;
  const int n = e->n, H = m->cfg.enc_hidden, He = m->He;
  SQ_TRY(alloc_f32(ctx, (size_t)n * He, &e->fixed));
  SQ_TRY(source_rows(ctx, n, 1, &e->rows));
  if (!m->cfg.bidirectional) return sq_copy(ctx, sq_at(e->fixed, 0), sq_at(hfin, 0), (size_t)n * H);
  for (int d = 0; d < 2; d++)
    SQ_TRY(sq_embedding_device_ids(ctx, n, H, n, sq_at(e->rows, 0), sq_at(hfin, (size_t)d * n * H),
                                   sq_at(e->fixed, (size_t)d * H), He));
  return SEQCL_OK;
}

static seqcl_status encode_batch(seqcl_model *m, const seqcl_seqs *src, size_t first, int n,
                                 sq_encoded *e, int32_t *ids_host, sq_buf **tmp) {
  seqcl_ctx *ctx = m->ctx;
  const sq_config *c = &m->cfg;
  const int S = e->S, D = c->embed_dim, H = c->enc_hidden, He = m->He;
  const int dirs = c->bidirectional ? 2 : 1;
  const size_t NS = (size_t)n * S;
  for (int i = 0; i < n; i++) {
    const int32_t *ids = src->ids + src->offsets[first + i];
    for (int j = 0; j < S; j++) ids_host[(size_t)i * S + j] = j < e->lens_host[i] ? ids[j] : 0;
  }
  sq_buf **ids = &tmp[0], **emb = &tmp[1], **other = &tmp[2], **hfin = &tmp[3], **ws = &tmp[4];
  SQ_TRY(sq_buf_alloc(ctx, (size_t)n * sizeof(int32_t), &e->lens));
  SQ_TRY(sq_buf_alloc(ctx, NS * sizeof(int32_t), ids));
  SQ_TRY(alloc_f32(ctx, NS * D, emb));
  SQ_TRY(alloc_f32(ctx, NS * He, &e->keys));
  if (c->enc_layers > 1) SQ_TRY(alloc_f32(ctx, NS * He, other));
  SQ_TRY(alloc_f32(ctx, (size_t)dirs * n * H, hfin));
  SQ_TRY(alloc_f32(ctx, NS * 3 * H + (size_t)n * 3 * H, ws));
  SQ_TRY(sq_write(ctx, sq_at(e->lens, 0), e->lens_host, (size_t)n * sizeof(int32_t)));
  SQ_TRY(sq_write(ctx, sq_at(*ids, 0), ids_host, NS * sizeof(int32_t)));
  SQ_TRY(sq_embedding(ctx, (int)NS, D, c->src_vocab, sq_at(*ids, 0), ids_host, m->enc_emb,
                      sq_at(*emb, 0), D));
  /* Layers alternate between two buffers so that the last one lands in keys. */
  sq_buf *in = *emb;
  int in_dim = D;
  for (int l = 0; l < c->enc_layers; l++) {
    sq_buf *cur = ((c->enc_layers - 1 - l) % 2 == 0) ? e->keys : *other;
    SQ_TRY(sq_fill(ctx, sq_at(cur, 0), NS * He, 0.0f));
    SQ_TRY(sq_fill(ctx, sq_at(*hfin, 0), (size_t)dirs * n * H, 0.0f));
    for (int d = 0; d < dirs; d++) {
      const sq_gru_params *p = &m->enc[l * dirs + d];
      SQ_TRY(sq_gru_layer(ctx, n, S, in_dim, H, sq_at(in, 0), p->w_ih, p->w_hh, p->b_ih, p->b_hh,
                          sq_at(e->lens, 0), e->lens_host, d, sq_at(*hfin, (size_t)d * n * H),
                          sq_at(cur, 0), He, d * H, sq_at(*ws, 0)));
    }
    in = cur;
    in_dim = He;
  }
  if (c->score == SQ_SCORE_ADDITIVE) {
    SQ_TRY(alloc_f32(ctx, NS * c->attn_dim, &e->pkeys));
    SQ_TRY(sq_linear(ctx, (int)NS, He, c->attn_dim, sq_at(e->keys, 0), He, m->key_w, m->key_b,
                     sq_at(e->pkeys, 0), c->attn_dim));
    /* b_q enters the score only through W_k h + b_k + W_q q + b_q, so it is
     * added here once instead of to the query projection at every step. */
    if (m->query_b.buf)
      SQ_TRY(sq_add_bias(ctx, (int)NS, c->attn_dim, sq_at(e->pkeys, 0), c->attn_dim, m->query_b));
  }
  if (c->score == SQ_SCORE_NONE) SQ_TRY(fixed_context(m, e, *hfin));
  SQ_TRY(alloc_f32(ctx, (size_t)n * c->dec_hidden, &e->s0));
  if (c->init == SQ_INIT_BRIDGE) return bridge(m, n, *hfin, e->s0);
  if (c->init == SQ_INIT_FINAL) return final_state(m, n, *hfin, e->s0);
  return sq_fill(ctx, sq_at(e->s0, 0), (size_t)n * c->dec_hidden, 0.0f);
}

seqcl_status sq_encode(seqcl_model *m, const seqcl_seqs *src, size_t first, int n,
                       sq_encoded *out) {
  memset(out, 0, sizeof *out);
  out->n = n;
  out->lens_host = malloc((size_t)n * sizeof(int32_t));
  if (!out->lens_host) return sq_fail(m->ctx, SEQCL_ERR_OUT_OF_MEMORY, "encoder: out of memory");
  int S = 1;
  for (int i = 0; i < n; i++) {
    out->lens_host[i] = (int32_t)sq_seq_len_of(src, first + i);
    if (out->lens_host[i] > S) S = out->lens_host[i];
  }
  out->S = S;
  int32_t *ids_host = malloc((size_t)n * S * sizeof(int32_t));
  sq_buf *tmp[5] = {0};
  seqcl_status st = ids_host ? encode_batch(m, src, first, n, out, ids_host, tmp)
                             : sq_fail(m->ctx, SEQCL_ERR_OUT_OF_MEMORY, "encoder: out of memory");
  for (int i = 0; i < 5; i++) sq_buf_free(tmp[i]);
  free(ids_host);
  if (st != SEQCL_OK) sq_encoded_free(out);
  return st;
}

seqcl_status sq_encoded_repeat(seqcl_model *m, const sq_encoded *e, int k, sq_encoded *out) {
  seqcl_ctx *ctx = m->ctx;
  memset(out, 0, sizeof *out);
  const int n = e->n * k, S = e->S, He = m->He, Hd = m->cfg.dec_hidden;
  const int A = m->cfg.score == SQ_SCORE_ADDITIVE ? m->cfg.attn_dim : 0;
  out->n = n;
  out->S = S;
  seqcl_status st = SEQCL_OK;
  out->lens_host = malloc((size_t)n * sizeof(int32_t));
  if (!out->lens_host) {
    st = sq_fail(ctx, SEQCL_ERR_OUT_OF_MEMORY, "beam search: out of memory");
    goto done;
  }
  for (int i = 0; i < n; i++) out->lens_host[i] = e->lens_host[i / k];
  if ((st = sq_buf_alloc(ctx, (size_t)n * sizeof(int32_t), &out->lens)) != SEQCL_OK) goto done;
  if ((st = sq_write(ctx, sq_at(out->lens, 0), out->lens_host, (size_t)n * sizeof(int32_t))))
    goto done;
  if ((st = alloc_f32(ctx, (size_t)n * S * He, &out->keys))) goto done;
  if (A && (st = alloc_f32(ctx, (size_t)n * S * A, &out->pkeys))) goto done;
  if ((st = alloc_f32(ctx, (size_t)n * Hd, &out->s0))) goto done;
  const int fixed = e->fixed != NULL;
  if (fixed && (st = alloc_f32(ctx, (size_t)n * He, &out->fixed))) goto done;
  if (fixed && (st = source_rows(ctx, n, 1, &out->rows))) goto done;
  for (int i = 0; i < n && st == SEQCL_OK; i++) {
    const size_t from = (size_t)(i / k), to = (size_t)i;
    st = sq_copy(ctx, sq_at(out->keys, to * S * He), sq_at(e->keys, from * S * He),
                 (size_t)S * He);
    if (st == SEQCL_OK && A)
      st = sq_copy(ctx, sq_at(out->pkeys, to * S * A), sq_at(e->pkeys, from * S * A),
                   (size_t)S * A);
    if (st == SEQCL_OK)
      st = sq_copy(ctx, sq_at(out->s0, to * Hd), sq_at(e->s0, from * Hd), (size_t)Hd);
    if (st == SEQCL_OK && fixed)
      st = sq_copy(ctx, sq_at(out->fixed, to * He), sq_at(e->fixed, from * He), (size_t)He);
  }
done:
  if (st != SEQCL_OK) sq_encoded_free(out);
  return st;
}

seqcl_status sq_encoded_group(seqcl_model *m, sq_encoded *e, int k) {
  seqcl_ctx *ctx = m->ctx;
  const int n = e->n * k, Hd = m->cfg.dec_hidden;
  sq_buf *rows = NULL, *s0 = NULL;
  /* s0 gathered row by row through the source index, in one launch */
  seqcl_status st = source_rows(ctx, n, k, &rows);
  if (st == SEQCL_OK) st = alloc_f32(ctx, (size_t)n * Hd, &s0);
  if (st == SEQCL_OK)
    st = sq_embedding_device_ids(ctx, n, Hd, e->n, sq_at(rows, 0), sq_at(e->s0, 0),
                                 sq_at(s0, 0), Hd);
  if (st != SEQCL_OK) {
    sq_buf_free(rows);
    sq_buf_free(s0);
    return st;
  }
  sq_buf_free(e->s0);
  e->s0 = s0;
  if (e->fixed) { /* score "none": the fixed context's gather index, now per row */
    sq_buf_free(e->rows);
    e->rows = rows;
  } else {
    sq_buf_free(rows);
  }
  e->group = k;
  return SEQCL_OK;
}
