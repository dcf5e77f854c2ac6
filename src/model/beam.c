/* Beam search (SPEC §4), batched over sentences: n sentences x K hypotheses run
 * as n*K decoder rows on the device; each step the logits come back and the
 * scoring and top-K selection run on the host in double precision, then the
 * surviving hypotheses' states are gathered and written back. A sentence holds
 * K hypotheses, finished ones included: once f have finished, each step keeps
 * the best K - f candidates (tools/seq2seq_reference.py does the same).
 *
 * Ranking inside one hypothesis uses the logits themselves (log_softmax only
 * shifts a row, and computing it first could merge two distinct logits into
 * one rounded value), so K = 1 picks exactly the greedy argmax. Candidates of
 * one sentence are ranked by Σ log p, ties to the lower token id, then the
 * earlier hypothesis. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "model/seq2seq.h"

typedef struct cand {
  double logprob;
  int32_t tok;
  int hyp; /* parent row within the sentence */
} cand;

/* A hypothesis that ends at step `step` with token tok, extending row `parent`. */
typedef struct ending {
  int step, parent;
  int32_t tok;
  double logprob, score;
  int order; /* when it was found, for stable ordering */
} ending;

typedef struct beam_state {
  int n, K, R, S, V, Hd, max_steps, want_align;
  int32_t *ids_host, *tok_hist, *par_hist;
  float *logits_host, *align_hist, *h_host, *h_tmp;
  double *cum;
  int *live, *done;
  ending *fin;       /* [n * K] */
  int *fin_count;    /* [n] */
  ending *open;      /* [n * K]: the live hypotheses when a sentence ran out of steps */
  int *open_count;   /* [n] */
  cand *cands;       /* [K * K] */
  sq_buf *ids, *logits, *alpha;
} beam_state;

static void beam_free(beam_state *b) {
  free(b->ids_host);
  free(b->tok_hist);
  free(b->par_hist);
  free(b->logits_host);
  free(b->align_hist);
  free(b->h_host);
  free(b->h_tmp);
  free(b->cum);
  free(b->live);
  free(b->done);
  free(b->fin);
  free(b->fin_count);
  free(b->open);
  free(b->open_count);
  free(b->cands);
  sq_buf_free(b->ids);
  sq_buf_free(b->logits);
  sq_buf_free(b->alpha);
}

static int cand_cmp(const void *pa, const void *pb) {
  const cand *a = pa, *b = pb;
  if (a->logprob != b->logprob) return a->logprob > b->logprob ? -1 : 1;
  if (a->tok != b->tok) return a->tok < b->tok ? -1 : 1;
  return (a->hyp > b->hyp) - (a->hyp < b->hyp);
}

static int ending_cmp(const void *pa, const void *pb) {
  const ending *a = pa, *b = pb;
  if (a->score != b->score) return a->score > b->score ? -1 : 1;
  return (a->order > b->order) - (a->order < b->order);
}

/* The k best tokens of a row by logit (lower id first on ties); returns how many. */
static int top_k(const float *x, int V, int k, int32_t *best) {
  int count = 0;
  for (int v = 0; v < V; v++) {
    if (count == k && !(x[v] > x[best[count - 1]])) continue;
    int pos = count < k ? count++ : k - 1;
    while (pos > 0 && x[v] > x[best[pos - 1]]) {
      best[pos] = best[pos - 1];
      pos--;
    }
    best[pos] = v;
  }
  return count;
}

static double log_sum_exp(const float *x, int V) {
  double mx = x[0];
  for (int v = 1; v < V; v++)
    if (x[v] > mx) mx = x[v];
  double sum = 0.0;
  for (int v = 0; v < V; v++) sum += exp((double)x[v] - mx);
  return mx + log(sum);
}

/* Ranks the candidates of sentence s at step t and rebuilds its K rows. */
static void select_sentence(beam_state *b, int s, int t, int eos, double A, int32_t *top) {
  const int K = b->K, V = b->V;
  int nc = 0;
  for (int k = 0; k < K; k++) {
    const int r = s * K + k;
    if (!b->live[r]) continue;
    const float *x = b->logits_host + (size_t)r * V;
    const double lse = log_sum_exp(x, V);
    const int got = top_k(x, V, K, top);
    for (int i = 0; i < got; i++) {
      b->cands[nc].logprob = b->cum[r] + ((double)x[top[i]] - lse);
      b->cands[nc].tok = top[i];
      b->cands[nc].hyp = k;
      nc++;
    }
  }
  qsort(b->cands, (size_t)nc, sizeof *b->cands, cand_cmp);
  ending *fin = b->fin + (size_t)s * K;
  ending *next = b->open + (size_t)s * K; /* scratch for the new live set */
  /* The sentence holds K hypotheses in all: the best K - finished candidates
   * are kept, those ending in EOS joining the finished ones. */
  const int keep = K - b->fin_count[s];
  int nl = 0;
  for (int c = 0; c < nc && c < keep; c++) {
    const cand *cd = &b->cands[c];
    ending e = {t, s * K + cd->hyp, cd->tok, cd->logprob, 0.0, 0};
    if (cd->tok == eos) {
      e.score = cd->logprob / pow((double)(t + 1), A);
      e.order = b->fin_count[s];
      fin[b->fin_count[s]++] = e;
    } else {
      e.score = cd->logprob / pow((double)(t + 1), A);
      e.order = nl;
      next[nl++] = e;
    }
  }
  const int out_of_steps = t + 1 >= b->max_steps;
  if (b->fin_count[s] >= K || nl == 0 || out_of_steps) {
    b->done[s] = 1;
    b->open_count[s] = b->fin_count[s] >= K ? 0 : nl;
  }
  /* New rows: row s*K+i continues next[i]; the rest go idle (fed EOS). */
  for (int i = 0; i < K; i++) {
    const int r = s * K + i;
    if (i < nl && !b->done[s]) {
      b->tok_hist[(size_t)t * b->R + r] = next[i].tok;
      b->par_hist[(size_t)t * b->R + r] = next[i].parent;
      memcpy(b->h_tmp + (size_t)r * b->Hd, b->h_host + (size_t)next[i].parent * b->Hd,
             (size_t)b->Hd * sizeof(float));
      b->cum[r] = next[i].logprob;
      b->live[r] = 1;
      b->ids_host[r] = next[i].tok;
    } else {
      b->live[r] = 0;
      b->ids_host[r] = eos;
    }
  }
}

/* Rebuilds the tokens (and alignment rows) of a hypothesis by following parents. */
static seqcl_status backtrack(seqcl_ctx *ctx, const beam_state *b, const ending *e, int eos,
                             int src_len, seqcl_hypothesis *h, float **align) {
  const int steps = e->step + 1, finished = e->tok == eos;
  const size_t len = (size_t)(finished ? steps - 1 : steps);
  int32_t *seq = malloc((size_t)steps * sizeof(int32_t));
  float *a = align ? malloc((size_t)steps * src_len * sizeof(float)) : NULL;
  if (!seq || (align && !a)) {
    free(seq);
    free(a);
    return sq_fail(ctx, SEQCL_ERR_OUT_OF_MEMORY, "beam search: out of host memory");
  }
  int cur = e->parent;
  seq[e->step] = e->tok;
  if (a)
    memcpy(a + (size_t)e->step * src_len, b->align_hist + ((size_t)e->step * b->R + cur) * b->S,
           (size_t)src_len * sizeof(float));
  for (int u = e->step - 1; u >= 0; u--) {
    const size_t at = (size_t)u * b->R + cur;
    seq[u] = b->tok_hist[at];
    cur = b->par_hist[at];
    if (a)
      memcpy(a + (size_t)u * src_len, b->align_hist + ((size_t)u * b->R + cur) * b->S,
             (size_t)src_len * sizeof(float));
  }
  h->ids = seq;
  h->len = len;
  h->finished = finished;
  h->steps = steps;
  h->logprob = e->logprob;
  h->score = e->score;
  if (align) *align = a;
  return SEQCL_OK;
}

static seqcl_status beam_alloc(seqcl_model *m, beam_state *b) {
  const size_t R = (size_t)b->R, T = (size_t)b->max_steps, K = (size_t)b->K, n = (size_t)b->n;
  b->ids_host = malloc(R * sizeof(int32_t));
  b->tok_hist = calloc(T * R, sizeof(int32_t));
  b->par_hist = calloc(T * R, sizeof(int32_t));
  b->logits_host = malloc(R * b->V * sizeof(float));
  b->align_hist = b->want_align ? calloc(T * R * b->S, sizeof(float)) : NULL;
  b->h_host = malloc(R * b->Hd * sizeof(float));
  b->h_tmp = malloc(R * b->Hd * sizeof(float));
  b->cum = calloc(R, sizeof(double));
  b->live = calloc(R, sizeof(int));
  b->done = calloc(n, sizeof(int));
  b->fin = calloc(n * K, sizeof(ending));
  b->fin_count = calloc(n, sizeof(int));
  b->open = calloc(n * K, sizeof(ending));
  b->open_count = calloc(n, sizeof(int));
  b->cands = malloc(K * K * sizeof(cand));
  if (!b->ids_host || !b->tok_hist || !b->par_hist || !b->logits_host ||
      (b->want_align && !b->align_hist) || !b->h_host || !b->h_tmp || !b->cum || !b->live ||
      !b->done || !b->fin || !b->fin_count || !b->open || !b->open_count || !b->cands)
    return sq_fail(m->ctx, SEQCL_ERR_OUT_OF_MEMORY, "beam search: out of host memory");
  SQ_TRY(sq_buf_alloc(m->ctx, R * sizeof(int32_t), &b->ids));
  SQ_TRY(sq_buf_alloc(m->ctx, R * b->V * sizeof(float), &b->logits));
  if (b->want_align) SQ_TRY(sq_buf_alloc(m->ctx, R * b->S * sizeof(float), &b->alpha));
  return SEQCL_OK;
}

static seqcl_status run(seqcl_model *m, const seqcl_seqs *src, size_t first, int n, int K,
                        double A, int max_steps, int slots, seqcl_hypothesis *hyps,
                        int *hyp_counts, float **line_align, sq_encoded *e1, sq_encoded *e,
                        sq_dec_ws *ws, beam_state *b) {
  seqcl_ctx *ctx = m->ctx;
  const int eos = m->cfg.eos_id;
  SQ_TRY(sq_encode(m, src, first, n, e1));
  SQ_TRY(sq_encoded_repeat(m, e1, K, e));
  sq_encoded_free(e1);
  b->n = n;
  b->K = K;
  b->R = n * K;
  b->S = e->S;
  b->V = m->cfg.tgt_vocab;
  b->Hd = m->cfg.dec_hidden;
  b->max_steps = max_steps;
  b->want_align = line_align != NULL;
  SQ_TRY(beam_alloc(m, b));
  SQ_TRY(sq_dec_ws_init(m, b->R, ws));
  SQ_TRY(sq_dec_start(m, e, ws));
  int32_t *top = malloc((size_t)K * sizeof(int32_t));
  if (!top) return sq_fail(ctx, SEQCL_ERR_OUT_OF_MEMORY, "beam search: out of host memory");
  for (int r = 0; r < b->R; r++) {
    b->ids_host[r] = m->cfg.bos_id;
    b->live[r] = r % K == 0; /* step 0: one hypothesis per sentence */
  }
  const size_t R = (size_t)b->R, Hd = (size_t)b->Hd;
  seqcl_status st = SEQCL_OK;
  for (int t = 0; t < max_steps && st == SEQCL_OK; t++) {
    int all_done = 1;
    for (int s = 0; s < n && all_done; s++) all_done = b->done[s];
    if (all_done) break;
    sq_ref alpha = b->want_align ? sq_at(b->alpha, 0) : sq_none();
    st = sq_write(ctx, sq_at(b->ids, 0), b->ids_host, R * sizeof(int32_t));
    if (st == SEQCL_OK)
      st = sq_dec_step(m, e, ws, sq_at(b->ids, 0), b->ids_host, alpha, sq_at(b->logits, 0), 1);
    if (st == SEQCL_OK)
      st = sq_read(ctx, sq_at(b->logits, 0), b->logits_host, R * b->V * sizeof(float));
    if (st == SEQCL_OK && b->want_align)
      st = sq_read(ctx, alpha, b->align_hist + (size_t)t * R * b->S, R * b->S * sizeof(float));
    if (st == SEQCL_OK) st = sq_read(ctx, sq_at(ws->h, 0), b->h_host, R * Hd * sizeof(float));
    if (st != SEQCL_OK) break;
    memcpy(b->h_tmp, b->h_host, R * Hd * sizeof(float));
    for (int s = 0; s < n; s++)
      if (!b->done[s]) select_sentence(b, s, t, eos, A, top);
    st = sq_write(ctx, sq_at(ws->h, 0), b->h_tmp, R * Hd * sizeof(float));
  }
  free(top);
  SQ_TRY(st);

  for (int s = 0; s < n; s++) {
    ending *fin = b->fin + (size_t)s * K, *open = b->open + (size_t)s * K;
    qsort(fin, (size_t)b->fin_count[s], sizeof *fin, ending_cmp);
    qsort(open, (size_t)b->open_count[s], sizeof *open, ending_cmp);
    int count = 0;
    for (int i = 0; i < b->fin_count[s] && count < slots; i++, count++)
      SQ_TRY(backtrack(ctx, b, &fin[i], eos, e->lens_host[s * K], &hyps[(size_t)s * slots + count],
                       count == 0 && line_align ? &line_align[s] : NULL));
    for (int i = 0; i < b->open_count[s] && count < slots; i++, count++)
      SQ_TRY(backtrack(ctx, b, &open[i], eos, e->lens_host[s * K],
                       &hyps[(size_t)s * slots + count],
                       count == 0 && line_align ? &line_align[s] : NULL));
    hyp_counts[s] = count;
  }
  return SEQCL_OK;
}

seqcl_status sq_decode_beam(seqcl_model *m, const seqcl_seqs *src, size_t first, int n, int K,
                            double length_penalty, int max_steps, int slots,
                            seqcl_hypothesis *hyps, int *hyp_counts, float **line_align) {
  sq_encoded e1, e;
  sq_dec_ws ws;
  beam_state b;
  memset(&e1, 0, sizeof e1);
  memset(&e, 0, sizeof e);
  memset(&ws, 0, sizeof ws);
  memset(&b, 0, sizeof b);
  seqcl_status st = run(m, src, first, n, K, length_penalty, max_steps, slots, hyps, hyp_counts,
                        line_align, &e1, &e, &ws, &b);
  beam_free(&b);
  sq_dec_ws_free(&ws);
  sq_encoded_free(&e);
  sq_encoded_free(&e1);
  return st;
}
