/* Beam search (SPEC §4), batched over sentences and kept on the device: n
 * sentences x K hypotheses run as R = n K decoder rows. Each step is the
 * decoder step, then three launches: beam_topk (each row's K best tokens and
 * their log-probabilities), beam_select (ranks every sentence's K x K
 * candidates, appends to the token history and the finished table, sets the
 * next input tokens and the parent rows) and gather_rows (reorders the
 * decoder state by parent). The rules are those of tests/golden/README.md
 * ("Beam search") and backend.h; tools/seq2seq_reference.py does the same.
 *
 * The host reads only the per-sentence done flags, every CHECK_EVERY steps,
 * and at the end the finished table, the live rows and the history, from
 * which it rebuilds each hypothesis by following parents. Alignments are kept
 * per step and row, unreordered, and followed the same way.
 *
 * An ensemble (M > 1 models, ensemble.c) runs the same search: each model
 * keeps its own encoding, decoder state and logits, the step's log-probabilities
 * are their combination (sq_ensemble_combine), written where one model's
 * logits would be (beam_topk's log-softmax of log-probabilities that already
 * sum to 1 changes them by float rounding only), and every model's state is
 * reordered by the same parents. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "ops/ops.h"
#include "model/seq2seq.h"

/* Steps between two reads of the done flags (as greedy.c): a read drains the
 * queue; at most CHECK_EVERY - 1 steps are spent once every sentence is done
 * (beam_select leaves done sentences alone, so they never change the output). */
#define CHECK_EVERY 4

/* A hypothesis to report: it ends at step `step` with token tok, extending row
 * `parent` of that step. */
typedef struct ending {
  int step, parent;
  int32_t tok;
  double logprob, score;
  int order; /* finished: when it finished; live: rank order */
} ending;

/* One model's share of a batch: its encoding e (one per sentence read by
 * its K rows, or, with the unfused attention, e1 repeated K times), decoder
 * workspace, the spare state buffer the reordered rows go to and, in an
 * ensemble, its own logits. */
typedef struct beam_member {
  sq_encoded e1, e;
  sq_dec_ws ws;
  sq_buf *h_alt, *logits;
} beam_member;

typedef struct beam_state {
  int n, K, R, S, V, max_steps, want_align, M;
  beam_member *mb;    /* [M] */
  sq_buf **ens_logits; /* [M] (M > 1): mb[j].logits */
  float *ens_scratch, *ens_out;
  double *ens_work;
  /* device */
  sq_buf *ids, *logits, *alpha;
  sq_buf *vals, *toks, *cum, *live, *parent, *tok_hist, *par_hist;
  sq_buf *fin_lp, *fin_step, *fin_par, *fin_count, *done;
  /* host copies read at the end */
  int32_t *tok_hist_h, *par_hist_h, *live_h, *fin_step_h, *fin_par_h, *fin_count_h, *done_h;
  float *cum_h, *fin_lp_h, *align_hist;
  ending *ends; /* [K]: one sentence's hypotheses */
} beam_state;

static void beam_free(beam_state *b) {
  sq_buf *bufs[] = {b->ids,      b->logits,   b->alpha,   b->vals,      b->toks,
                    b->cum,      b->live,     b->parent,  b->tok_hist,  b->par_hist,
                    b->fin_lp,   b->fin_step, b->fin_par, b->fin_count, b->done};
  for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) sq_buf_free(bufs[i]);
  for (int j = 0; b->mb && j < b->M; j++) {
    sq_buf_free(b->mb[j].h_alt);
    sq_buf_free(b->mb[j].logits);
    sq_dec_ws_free(&b->mb[j].ws);
    sq_encoded_free(&b->mb[j].e);
    sq_encoded_free(&b->mb[j].e1);
  }
  free(b->mb);
  free(b->ens_logits);
  free(b->ens_scratch);
  free(b->ens_out);
  free(b->ens_work);
  free(b->tok_hist_h);
  free(b->par_hist_h);
  free(b->live_h);
  free(b->fin_step_h);
  free(b->fin_par_h);
  free(b->fin_count_h);
  free(b->done_h);
  free(b->cum_h);
  free(b->fin_lp_h);
  free(b->align_hist);
  free(b->ends);
}

static int ending_cmp(const void *pa, const void *pb) {
  const ending *a = pa, *b = pb;
  if (a->score != b->score) return a->score > b->score ? -1 : 1;
  return (a->order > b->order) - (a->order < b->order);
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
    seq[u] = b->tok_hist_h[at];
    cur = b->par_hist_h[at];
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

static seqcl_status beam_alloc(seqcl_model *const *ms, beam_state *b) {
  seqcl_ctx *ctx = ms[0]->ctx;
  const size_t R = (size_t)b->R, T = (size_t)b->max_steps, K = (size_t)b->K, n = (size_t)b->n;
  const size_t i4 = sizeof(int32_t), f4 = sizeof(float), RV = R * b->V;
  SQ_TRY(sq_buf_alloc(ctx, R * i4, &b->ids));
  SQ_TRY(sq_buf_alloc(ctx, RV * f4, &b->logits));
  if (b->want_align) SQ_TRY(sq_buf_alloc(ctx, T * R * b->S * f4, &b->alpha));
  for (int j = 0; j < b->M; j++) {
    SQ_TRY(sq_buf_alloc(ctx, R * ms[j]->cfg.dec_hidden * f4, &b->mb[j].h_alt));
    if (b->M > 1) SQ_TRY(sq_buf_alloc(ctx, RV * f4, &b->mb[j].logits));
  }
  if (b->M > 1) {
    b->ens_logits = malloc((size_t)b->M * sizeof *b->ens_logits);
    b->ens_scratch = malloc((size_t)b->M * RV * f4);
    b->ens_out = malloc(RV * f4);
    b->ens_work = malloc((size_t)b->M * b->V * sizeof(double));
    if (!b->ens_logits || !b->ens_scratch || !b->ens_out || !b->ens_work)
      return sq_fail(ctx, SEQCL_ERR_OUT_OF_MEMORY, "beam search: out of host memory");
    for (int j = 0; j < b->M; j++) b->ens_logits[j] = b->mb[j].logits;
  }
  SQ_TRY(sq_buf_alloc(ctx, R * K * f4, &b->vals));
  SQ_TRY(sq_buf_alloc(ctx, R * K * i4, &b->toks));
  SQ_TRY(sq_buf_alloc(ctx, R * f4, &b->cum));
  SQ_TRY(sq_buf_alloc(ctx, R * i4, &b->live));
  SQ_TRY(sq_buf_alloc(ctx, R * i4, &b->parent));
  SQ_TRY(sq_buf_alloc(ctx, T * R * i4, &b->tok_hist));
  SQ_TRY(sq_buf_alloc(ctx, T * R * i4, &b->par_hist));
  SQ_TRY(sq_buf_alloc(ctx, n * K * f4, &b->fin_lp));
  SQ_TRY(sq_buf_alloc(ctx, n * K * i4, &b->fin_step));
  SQ_TRY(sq_buf_alloc(ctx, n * K * i4, &b->fin_par));
  SQ_TRY(sq_buf_alloc(ctx, n * i4, &b->fin_count));
  SQ_TRY(sq_buf_alloc(ctx, n * i4, &b->done));
  b->tok_hist_h = malloc(T * R * i4);
  b->par_hist_h = malloc(T * R * i4);
  b->live_h = malloc(R * i4);
  b->cum_h = malloc(R * f4);
  b->fin_lp_h = malloc(n * K * f4);
  b->fin_step_h = malloc(n * K * i4);
  b->fin_par_h = malloc(n * K * i4);
  b->fin_count_h = malloc(n * i4);
  b->done_h = malloc(n * i4);
  b->align_hist = b->want_align ? malloc(T * R * b->S * f4) : NULL;
  b->ends = malloc(K * sizeof(ending));
  if (!b->tok_hist_h || !b->par_hist_h || !b->live_h || !b->cum_h || !b->fin_lp_h ||
      !b->fin_step_h || !b->fin_par_h || !b->fin_count_h || !b->done_h ||
      (b->want_align && !b->align_hist) || !b->ends)
    return sq_fail(ctx, SEQCL_ERR_OUT_OF_MEMORY, "beam search: out of host memory");
  return SEQCL_OK;
}

/* Step 0 state: one live hypothesis per sentence (row s K), BOS as input. */
static seqcl_status beam_start(seqcl_model *m, beam_state *b) {
  seqcl_ctx *ctx = m->ctx;
  const size_t R = (size_t)b->R, n = (size_t)b->n;
  for (int r = 0; r < b->R; r++) b->live_h[r] = r % b->K == 0;
  SQ_TRY(sq_write(ctx, sq_at(b->live, 0), b->live_h, R * sizeof(int32_t)));
  SQ_TRY(sq_fill_i32(ctx, sq_at(b->ids, 0), R, m->cfg.bos_id));
  SQ_TRY(sq_fill(ctx, sq_at(b->cum, 0), R, 0.0f));
  SQ_TRY(sq_fill_i32(ctx, sq_at(b->fin_count, 0), n, 0));
  return sq_fill_i32(ctx, sq_at(b->done, 0), n, 0);
}

static seqcl_status beam_step(seqcl_model *const *ms, beam_state *b, size_t first, int t) {
  seqcl_ctx *ctx = ms[0]->ctx;
  const size_t R = (size_t)b->R;
  sq_ref alpha = b->want_align ? sq_at(b->alpha, (size_t)t * R * b->S) : sq_none();
  for (int j = 0; j < b->M; j++) {
    beam_member *mb = &b->mb[j];
    SQ_TRY(sq_dec_step(ms[j], &mb->e, &mb->ws, sq_at(b->ids, 0), NULL, j ? sq_none() : alpha,
                       sq_at(b->M > 1 ? mb->logits : b->logits, 0), 1));
  }
  if (b->M > 1) {
    SQ_TRY(sq_ensemble_combine(ctx, b->M, b->ens_logits, b->R, b->V, b->ens_scratch,
                               b->ens_work, b->ens_out, first, b->K, t));
    SQ_TRY(sq_write(ctx, sq_at(b->logits, 0), b->ens_out, R * b->V * sizeof(float)));
  }
  SQ_TRY(sq_beam_topk(ctx, b->R, b->V, sq_at(b->logits, 0), b->V, b->K, sq_at(b->vals, 0),
                      sq_at(b->toks, 0)));
  sq_beam_args a = {.n = b->n,
                    .K = b->K,
                    .step = t,
                    .max_steps = b->max_steps,
                    .eos = ms[0]->cfg.eos_id,
                    .vals = sq_at(b->vals, 0),
                    .tok = sq_at(b->toks, 0),
                    .cum = sq_at(b->cum, 0),
                    .live = sq_at(b->live, 0),
                    .ids = sq_at(b->ids, 0),
                    .parent = sq_at(b->parent, 0),
                    .tok_hist = sq_at(b->tok_hist, 0),
                    .par_hist = sq_at(b->par_hist, 0),
                    .fin_lp = sq_at(b->fin_lp, 0),
                    .fin_step = sq_at(b->fin_step, 0),
                    .fin_par = sq_at(b->fin_par, 0),
                    .fin_count = sq_at(b->fin_count, 0),
                    .done = sq_at(b->done, 0)};
  SQ_TRY(sq_beam_select(ctx, &a));
  /* the surviving rows' states, gathered into the spare buffer, which becomes ws->h */
  for (int j = 0; j < b->M; j++) {
    beam_member *mb = &b->mb[j];
    SQ_TRY(sq_gather_rows(ctx, b->R, ms[j]->cfg.dec_hidden, sq_at(mb->ws.h, 0),
                          sq_at(b->parent, 0), sq_at(mb->h_alt, 0)));
    sq_buf *h = mb->ws.h;
    mb->ws.h = mb->h_alt;
    mb->h_alt = h;
  }
  return SEQCL_OK;
}

static seqcl_status read_back(seqcl_ctx *ctx, beam_state *b, int ran) {
  const size_t R = (size_t)b->R, nK = (size_t)b->n * b->K, n = (size_t)b->n;
  const size_t i4 = sizeof(int32_t), f4 = sizeof(float);
  SQ_TRY(sq_read(ctx, sq_at(b->tok_hist, 0), b->tok_hist_h, (size_t)ran * R * i4));
  SQ_TRY(sq_read(ctx, sq_at(b->par_hist, 0), b->par_hist_h, (size_t)ran * R * i4));
  SQ_TRY(sq_read(ctx, sq_at(b->live, 0), b->live_h, R * i4));
  SQ_TRY(sq_read(ctx, sq_at(b->cum, 0), b->cum_h, R * f4));
  SQ_TRY(sq_read(ctx, sq_at(b->fin_lp, 0), b->fin_lp_h, nK * f4));
  SQ_TRY(sq_read(ctx, sq_at(b->fin_step, 0), b->fin_step_h, nK * i4));
  SQ_TRY(sq_read(ctx, sq_at(b->fin_par, 0), b->fin_par_h, nK * i4));
  SQ_TRY(sq_read(ctx, sq_at(b->fin_count, 0), b->fin_count_h, n * i4));
  if (b->want_align)
    SQ_TRY(sq_read(ctx, sq_at(b->alpha, 0), b->align_hist, (size_t)ran * R * b->S * f4));
  return SEQCL_OK;
}

/* Sentence s's hypotheses, best first: the finished ones, else the live ones
 * (which exist only when the sentence ran out of steps: then every step ran). */
static int collect(const beam_state *b, int s, int eos, double A) {
  const int K = b->K, f = b->fin_count_h[s];
  int count = 0;
  for (int i = 0; i < f; i++) {
    ending *e = &b->ends[count++];
    const size_t at = (size_t)s * K + i;
    e->step = b->fin_step_h[at];
    e->parent = b->fin_par_h[at];
    e->tok = eos;
    e->logprob = b->fin_lp_h[at];
    e->score = e->logprob / pow((double)(e->step + 1), A);
    e->order = i;
  }
  qsort(b->ends, (size_t)count, sizeof *b->ends, ending_cmp);
  if (f >= K) return count;
  const int last = b->max_steps - 1;
  const int first_open = count;
  for (int i = 0; i < K - f; i++) {
    const int r = s * K + i;
    if (!b->live_h[r]) break;
    ending *e = &b->ends[count++];
    const size_t at = (size_t)last * b->R + r;
    e->step = last;
    e->parent = b->par_hist_h[at];
    e->tok = b->tok_hist_h[at];
    e->logprob = b->cum_h[r];
    e->score = e->logprob / pow((double)(last + 1), A);
    e->order = i;
  }
  qsort(b->ends + first_open, (size_t)(count - first_open), sizeof *b->ends, ending_cmp);
  return count;
}

static seqcl_status run(seqcl_model *const *ms, const seqcl_seqs *src, size_t first, int n,
                        int K, double A, int max_steps, int slots, seqcl_hypothesis *hyps,
                        int *hyp_counts, float **line_align, beam_state *b) {
  seqcl_ctx *ctx = ms[0]->ctx;
  const int eos = ms[0]->cfg.eos_id;
  if (K > SQ_BEAM_MAX_K)
    return sq_fail(ctx, SEQCL_ERR_INVALID_ARGUMENT,
                   "beam search: beam size %d exceeds the limit of %d", K, SQ_BEAM_MAX_K);
  /* A sentence's K rows read its one encoding, so its keys are read from
   * cache for all K; the unfused attention (an ablation) needs K copies. */
  const int shared = !(sq_ablated(ctx) & (SQ_ABL_BEAM_SHARED | SQ_ABL_FUSED_ATTN));
  for (int j = 0; j < b->M; j++) {
    beam_member *mb = &b->mb[j];
    SQ_TRY(sq_encode(ms[j], src, first, n, shared ? &mb->e : &mb->e1));
    if (shared) {
      SQ_TRY(sq_encoded_group(ms[j], &mb->e, K));
    } else {
      SQ_TRY(sq_encoded_repeat(ms[j], &mb->e1, K, &mb->e));
      sq_encoded_free(&mb->e1);
    }
  }
  const sq_encoded *e = &b->mb[0].e;
  b->n = n;
  b->K = K;
  b->R = n * K;
  b->S = e->S;
  b->V = ms[0]->cfg.tgt_vocab;
  b->max_steps = max_steps;
  b->want_align = line_align != NULL;
  SQ_TRY(beam_alloc(ms, b));
  for (int j = 0; j < b->M; j++) {
    SQ_TRY(sq_dec_ws_init(ms[j], b->R, &b->mb[j].ws));
    SQ_TRY(sq_dec_start(ms[j], &b->mb[j].e, &b->mb[j].ws));
  }
  SQ_TRY(beam_start(ms[0], b));
  int ran = 0;
  while (ran < max_steps) {
    SQ_TRY(beam_step(ms, b, first, ran));
    ran++;
    if (ran % CHECK_EVERY == 0 && ran < max_steps) {
      int all;
      SQ_TRY(sq_dec_all_finished(ctx, sq_at(b->done, 0), b->done_h, n, &all));
      if (all) break;
    }
  }
  SQ_TRY(read_back(ctx, b, ran));

  for (int s = 0; s < n; s++) {
    const int count = collect(b, s, eos, A);
    int out = 0;
    for (int i = 0; i < count && out < slots; i++, out++)
      SQ_TRY(backtrack(ctx, b, &b->ends[i], eos, e->lens_host[shared ? s : s * K],
                       &hyps[(size_t)s * slots + out],
                       out == 0 && line_align ? &line_align[s] : NULL));
    hyp_counts[s] = out;
  }
  return SEQCL_OK;
}

seqcl_status sq_decode_beam(seqcl_model *const *ms, int M, const seqcl_seqs *src, size_t first,
                            int n, int K, double length_penalty, int max_steps, int slots,
                            seqcl_hypothesis *hyps, int *hyp_counts, float **line_align) {
  beam_state b;
  memset(&b, 0, sizeof b);
  b.M = M;
  b.mb = calloc((size_t)M, sizeof *b.mb);
  seqcl_status st = b.mb ? run(ms, src, first, n, K, length_penalty, max_steps, slots, hyps,
                               hyp_counts, line_align, &b)
                         : sq_fail(ms[0]->ctx, SEQCL_ERR_OUT_OF_MEMORY,
                                   "beam search: out of host memory");
  beam_free(&b);
  return st;
}
