/* Teacher forcing (SPEC §1, §4 `seqcl forward`): decoder inputs y_0..y_{L-1},
 * labels y_1..y_L, mean cross-entropy over every label of every line. Each
 * batch keeps its logits and alignments on the device step-major ([t][n]) so
 * that every step writes one contiguous block; they are read back once. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "model/seq2seq.h"

typedef struct fw_batch {
  int32_t *in_host, *lab_host;
  float *logits_host, *alpha_host;
  sq_buf *ids, *labels, *logits, *alpha, *loss;
} fw_batch;

static void fw_batch_free(fw_batch *b) {
  free(b->in_host);
  free(b->lab_host);
  free(b->logits_host);
  free(b->alpha_host);
  sq_buf_free(b->ids);
  sq_buf_free(b->labels);
  sq_buf_free(b->logits);
  sq_buf_free(b->alpha);
  sq_buf_free(b->loss);
}

/* The attention mask of lines first..first+n-1 from keep (parallel to
 * src->ids): [n, S], 0 past each line's end too. */
static seqcl_status set_mask(seqcl_model *m, const seqcl_seqs *src, const uint8_t *keep,
                             size_t first, sq_encoded *e) {
  const size_t cells = (size_t)e->n * (size_t)e->S;
  e->mask_host = calloc(cells, sizeof(int32_t));
  if (!e->mask_host) return sq_fail(m->ctx, SEQCL_ERR_OUT_OF_MEMORY, "forward: out of host memory");
  for (int i = 0; i < e->n; i++) {
    const size_t o = src->offsets[first + i], len = sq_seq_len_of(src, first + i);
    for (size_t j = 0; j < len; j++) e->mask_host[(size_t)i * e->S + j] = keep[o + j] != 0;
  }
  SQ_TRY(sq_buf_alloc(m->ctx, cells * sizeof(int32_t), &e->mask));
  return sq_write(m->ctx, sq_at(e->mask, 0), e->mask_host, cells * sizeof(int32_t));
}

static seqcl_status run_batch(seqcl_model *m, const seqcl_seqs *src, const uint8_t *keep,
                              const seqcl_seqs *tgt, size_t first, int n, seqcl_forward_result *r,
                              double *loss_sum, sq_encoded *e, sq_dec_ws *ws, fw_batch *b) {
  seqcl_ctx *ctx = m->ctx;
  const int V = m->cfg.tgt_vocab, align = r->alignments != NULL;
  SQ_TRY(sq_encode(m, src, first, n, e));
  if (keep) SQ_TRY(set_mask(m, src, keep, first, e));
  SQ_TRY(sq_dec_ws_init(m, n, ws));
  const int S = e->S;
  int T = 0;
  for (int i = 0; i < n; i++)
    if (r->steps[first + i] > T) T = r->steps[first + i];
  const size_t rows = (size_t)T * n;
  b->in_host = malloc(rows * sizeof(int32_t));
  b->lab_host = malloc(rows * sizeof(int32_t));
  b->logits_host = malloc(rows * V * sizeof(float));
  b->alpha_host = align ? malloc(rows * S * sizeof(float)) : NULL;
  if (!b->in_host || !b->lab_host || !b->logits_host || (align && !b->alpha_host))
    return sq_fail(ctx, SEQCL_ERR_OUT_OF_MEMORY, "forward: out of host memory");
  size_t labels = 0;
  for (int i = 0; i < n; i++) {
    const int32_t *y = tgt->ids + tgt->offsets[first + i];
    const int L = r->steps[first + i];
    for (int t = 0; t < T; t++) {
      /* Past a line's end the input is BOS (any valid id would do) and the label
       * is ignored; those rows are dropped when the result is assembled. */
      b->in_host[(size_t)t * n + i] = t < L ? y[t] : m->cfg.bos_id;
      b->lab_host[(size_t)t * n + i] = t < L ? y[t + 1] : -1;
    }
    labels += (size_t)L;
  }
  SQ_TRY(sq_buf_alloc(ctx, rows * sizeof(int32_t), &b->ids));
  SQ_TRY(sq_buf_alloc(ctx, rows * sizeof(int32_t), &b->labels));
  SQ_TRY(sq_buf_alloc(ctx, rows * V * sizeof(float), &b->logits));
  if (align) SQ_TRY(sq_buf_alloc(ctx, rows * S * sizeof(float), &b->alpha));
  SQ_TRY(sq_buf_alloc(ctx, sizeof(float), &b->loss));
  SQ_TRY(sq_write(ctx, sq_at(b->ids, 0), b->in_host, rows * sizeof(int32_t)));
  SQ_TRY(sq_write(ctx, sq_at(b->labels, 0), b->lab_host, rows * sizeof(int32_t)));

  SQ_TRY(sq_dec_start(m, e, ws));
  for (int t = 0; t < T; t++) {
    const size_t row0 = (size_t)t * n;
    SQ_TRY(sq_dec_step(m, e, ws, sq_at(b->ids, row0), b->in_host + row0,
                       align ? sq_at(b->alpha, row0 * S) : sq_none(), sq_at(b->logits, row0 * V),
                       1));
    /* lines of this batch counted as done in proportion to its steps */
    SQ_TRY(sq_model_progress(m, first + (size_t)n * (size_t)(t + 1) / (size_t)T, r->N));
  }
  SQ_TRY(sq_cross_entropy(ctx, (int)rows, V, sq_at(b->logits, 0), sq_at(b->labels, 0),
                          b->lab_host, sq_at(b->loss, 0)));
  float loss = 0.0f;
  SQ_TRY(sq_read(ctx, sq_at(b->loss, 0), &loss, sizeof loss));
  SQ_TRY(sq_read(ctx, sq_at(b->logits, 0), b->logits_host, rows * V * sizeof(float)));
  if (align) SQ_TRY(sq_read(ctx, sq_at(b->alpha, 0), b->alpha_host, rows * S * sizeof(float)));
  *loss_sum += (double)loss * (double)labels;

  for (int i = 0; i < n; i++) {
    const size_t line = first + i;
    for (int t = 0; t < r->steps[line]; t++) {
      const size_t row = (size_t)t * n + i;
      memcpy(r->logits + (line * r->T + t) * V, b->logits_host + row * V, (size_t)V * sizeof(float));
      if (align)
        memcpy(r->alignments + (line * r->T + t) * r->S, b->alpha_host + row * S,
               (size_t)S * sizeof(float));
    }
  }
  return SEQCL_OK;
}

/* NaN/Inf weights or overflowing activations must not pass for results: names
 * the first non-finite logit or alignment (line and step 1-based), else the loss. */
static seqcl_status check_finite(seqcl_ctx *ctx, const seqcl_forward_result *r) {
  for (size_t n = 0; n < r->N; n++)
    for (int t = 0; t < r->steps[n]; t++) {
      const float *l = r->logits + (n * r->T + t) * r->V;
      for (int v = 0; v < r->V; v++)
        if (!isfinite(l[v]))
          return sq_fail(ctx, SEQCL_ERR_NON_FINITE,
                         "forward: logits of line %zu, step %d, id %d are not finite (%g)", n + 1,
                         t + 1, v, (double)l[v]);
      const float *a = r->alignments ? r->alignments + (n * r->T + t) * r->S : NULL;
      for (int j = 0; a && j < r->S; j++)
        if (!isfinite(a[j]))
          return sq_fail(ctx, SEQCL_ERR_NON_FINITE,
                         "forward: alignments of line %zu, step %d, source position %d are not "
                         "finite (%g)", n + 1, t + 1, j + 1, (double)a[j]);
    }
  if (!isfinite(r->loss))
    return sq_fail(ctx, SEQCL_ERR_NON_FINITE, "forward: the loss is not finite (%g)",
                   (double)r->loss);
  return SEQCL_OK;
}

seqcl_status seqcl_model_forward(seqcl_model *m, const seqcl_seqs *src, const seqcl_seqs *tgt,
                                 int batch_size, seqcl_forward_result **out) {
  return seqcl_model_forward_masked(m, src, NULL, tgt, batch_size, out);
}

/* Every line keeps a position: a line with all weights masked would have no
 * softmax to take (NaN), so it is refused like an empty line. */
static seqcl_status check_keep(seqcl_ctx *ctx, const seqcl_seqs *src, const uint8_t *keep) {
  for (size_t i = 0; i < src->count; i++) {
    int any = 0;
    for (size_t j = src->offsets[i]; j < src->offsets[i + 1] && !any; j++) any = keep[j] != 0;
    if (!any)
      return sq_fail(ctx, SEQCL_ERR_EMPTY_SEQUENCE,
                     "forward: the mask hides every source position of line %zu", i + 1);
  }
  return SEQCL_OK;
}

seqcl_status seqcl_model_forward_masked(seqcl_model *m, const seqcl_seqs *src,
                                        const uint8_t *keep, const seqcl_seqs *tgt,
                                        int batch_size, seqcl_forward_result **out) {
  if (!out) return sq_fail(NULL, SEQCL_ERR_INVALID_ARGUMENT, "seqcl_model_forward: out is NULL");
  *out = NULL;
  if (!m || !src || !tgt)
    return sq_fail(NULL, SEQCL_ERR_INVALID_ARGUMENT, "seqcl_model_forward: NULL argument");
  seqcl_ctx *ctx = m->ctx;
  sq_clear_message();
  if (src->count != tgt->count)
    return sq_fail(ctx, SEQCL_ERR_INVALID_ARGUMENT,
                   "forward: %zu source lines but %zu target lines", src->count, tgt->count);
  if (src->count == 0) return sq_fail(ctx, SEQCL_ERR_INVALID_ARGUMENT, "forward: no lines");
  SQ_TRY(sq_check_seqs(ctx, src, m->cfg.src_vocab, 1, "source"));
  SQ_TRY(sq_check_seqs(ctx, tgt, m->cfg.tgt_vocab, 2, "target"));
  if (keep) SQ_TRY(check_keep(ctx, src, keep));

  const size_t N = src->count;
  seqcl_forward_result *r = calloc(1, sizeof *r);
  if (!r) return sq_fail(ctx, SEQCL_ERR_OUT_OF_MEMORY, "forward: out of host memory");
  r->N = N;
  r->V = m->cfg.tgt_vocab;
  r->steps = malloc(N * sizeof(int));
  for (size_t i = 0; r->steps && i < N; i++) {
    const int s = (int)sq_seq_len_of(src, i), t = (int)sq_seq_len_of(tgt, i) - 1;
    r->steps[i] = t;
    if (s > r->S) r->S = s;
    if (t > r->T) r->T = t;
    r->labels += (size_t)t;
  }
  /* score "none" has no alignments: the result holds none (SPEC §4) */
  const int align = m->cfg.score != SQ_SCORE_NONE;
  if (r->steps) {
    r->logits = calloc(N * r->T * (size_t)r->V, sizeof(float));
    r->alignments = align ? calloc(N * r->T * (size_t)r->S, sizeof(float)) : NULL;
  }
  if (!r->steps || !r->logits || (align && !r->alignments)) {
    seqcl_forward_result_free(r);
    return sq_fail(ctx, SEQCL_ERR_OUT_OF_MEMORY, "forward: out of host memory for the result");
  }
  const size_t bs = batch_size > 0 ? (size_t)batch_size : N;
  double loss_sum = 0.0;
  seqcl_status st = SEQCL_OK;
  for (size_t first = 0; first < N && st == SEQCL_OK; first += bs) {
    const int n = (int)(N - first < bs ? N - first : bs);
    sq_encoded e;
    sq_dec_ws ws;
    fw_batch b;
    memset(&e, 0, sizeof e);
    memset(&ws, 0, sizeof ws);
    memset(&b, 0, sizeof b);
    st = run_batch(m, src, keep, tgt, first, n, r, &loss_sum, &e, &ws, &b);
    fw_batch_free(&b);
    sq_dec_ws_free(&ws);
    sq_encoded_free(&e);
  }
  if (st != SEQCL_OK) {
    seqcl_forward_result_free(r);
    return st;
  }
  r->loss = (float)(loss_sum / (double)r->labels);
  if ((st = check_finite(ctx, r)) != SEQCL_OK) {
    seqcl_forward_result_free(r);
    return st;
  }
  *out = r;
  return SEQCL_OK;
}

void seqcl_forward_result_free(seqcl_forward_result *r) {
  if (!r) return;
  free(r->steps);
  free(r->logits);
  free(r->alignments);
  free(r);
}
