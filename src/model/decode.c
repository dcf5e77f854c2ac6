/* seqcl_model_decode and seqcl_ensemble_decode: split the lines into
 * batches, run the greedy loop or beam search on each (over one model, or
 * every model of an ensemble), and assemble ids, scores and alignments
 * [N, T, S]. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/ctx.h"
#include "core/error.h"
#include "ops/ops.h"
#include "model/seq2seq.h"

/* A batch is decoded as parts, one per thread of the backend's tasks (the
 * host's pool), when each part gets at least this many decoder rows (lines
 * times beam width): each part then runs every slot on its thread alone, one
 * fork and join per batch instead of one per slot call (about ten a step),
 * with its rows' activations in its core's caches: 25-28 % more tokens/s at
 * batch 16 and 3-17 % at 64 on two cores, where 4-row parts (batch 8) were slower
 * than splitting each slot (bench/RESULTS.md). But each part then reads all
 * of the weights where a split slot reads its share: at V 8 000 (an 8 MB
 * output layer) batch 64 was 4-7 % slower split, so a model whose output
 * layer is larger than SPLIT_MAX_OUT_BYTES is not split. Every op computes a
 * row the same whatever the other rows (the products' bits included), so the
 * output is the same bit for bit (tests/model/test_split_batch.c). */
enum { SPLIT_MIN_ROWS = 8, SPLIT_MAX_PARTS = 64 };
#define SPLIT_MAX_OUT_BYTES ((size_t)4 << 20)

/* The bytes of a model's output layer (V x H_d, or x (H_d + H_e) over [s ; c]). */
static size_t output_bytes(const seqcl_model *m) {
  const size_t ctx_cols = m->cfg.output == SQ_OUTPUT_STATE ? 0 : (size_t)m->He;
  const size_t cols = (size_t)m->cfg.dec_hidden + ctx_cols;
  return (size_t)m->cfg.tgt_vocab * cols * sizeof(float);
}

void seqcl_decode_options_init(seqcl_decode_options *o) {
  if (!o) return;
  memset(o, 0, sizeof *o);
  o->beam = 1;
  o->batch_size = 64;
}

void seqcl_decode_result_free(seqcl_decode_result *r) {
  if (!r) return;
  if (r->hyps)
    for (size_t i = 0; i < r->count * (size_t)r->nbest; i++) free(r->hyps[i].ids);
  free(r->hyps);
  free(r->hyp_counts);
  free(r->ids);
  free(r->offsets);
  free(r->steps);
  free(r->scores);
  free(r->alignments);
  free(r);
}

static seqcl_status check_options(seqcl_ctx *ctx, const seqcl_decode_options *o) {
  if (o->beam < 1 || o->beam > SQ_BEAM_MAX_K)
    return sq_fail(ctx, SEQCL_ERR_INVALID_ARGUMENT, "decode: beam %d is not in [1, %d]", o->beam,
                   SQ_BEAM_MAX_K);
  if (o->nbest < 0 || o->nbest > o->beam)
    return sq_fail(ctx, SEQCL_ERR_INVALID_ARGUMENT, "decode: nbest %d is not in [0, beam = %d]",
                   o->nbest, o->beam);
  if (o->max_steps < 0 || o->max_steps > 1000000)
    return sq_fail(ctx, SEQCL_ERR_INVALID_ARGUMENT, "decode: max_steps %d is out of range",
                   o->max_steps);
  if (o->batch_size < 0)
    return sq_fail(ctx, SEQCL_ERR_INVALID_ARGUMENT, "decode: batch_size %d is negative",
                   o->batch_size);
  if (!isfinite(o->length_penalty))
    return sq_fail(ctx, SEQCL_ERR_INVALID_ARGUMENT, "decode: length penalty is not finite");
  return SEQCL_OK;
}

/* Flattens the best hypotheses and the per-line alignments into r. */
static seqcl_status assemble(seqcl_ctx *ctx, const seqcl_seqs *src, seqcl_decode_result *r,
                             float **line_align) {
  const size_t N = r->count, slots = (size_t)r->nbest;
  size_t total = 0;
  for (size_t i = 0; i < N; i++) total += r->hyps[i * slots].len;
  r->ids = malloc((total ? total : 1) * sizeof(int32_t));
  r->offsets = malloc((N + 1) * sizeof(size_t));
  r->steps = malloc(N * sizeof(int));
  r->scores = malloc(N * sizeof(double));
  if (!r->ids || !r->offsets || !r->steps || !r->scores)
    return sq_fail(ctx, SEQCL_ERR_OUT_OF_MEMORY, "decode: out of host memory for the result");
  r->offsets[0] = 0;
  r->T = 0;
  r->S = 0;
  for (size_t i = 0; i < N; i++) {
    const seqcl_hypothesis *h = &r->hyps[i * slots];
    memcpy(r->ids + r->offsets[i], h->ids, h->len * sizeof(int32_t));
    r->offsets[i + 1] = r->offsets[i] + h->len;
    r->steps[i] = h->steps;
    r->scores[i] = h->score;
    if (h->steps > r->T) r->T = h->steps;
    if ((int)sq_seq_len_of(src, i) > r->S) r->S = (int)sq_seq_len_of(src, i);
  }
  if (!line_align) return SEQCL_OK;
  r->alignments = calloc(N * (size_t)r->T * r->S + 1, sizeof(float));
  if (!r->alignments)
    return sq_fail(ctx, SEQCL_ERR_OUT_OF_MEMORY, "decode: out of host memory for alignments");
  for (size_t i = 0; i < N; i++) {
    const size_t L = sq_seq_len_of(src, i);
    for (int t = 0; t < r->steps[i]; t++)
      memcpy(r->alignments + (i * r->T + t) * r->S, line_align[i] + (size_t)t * L,
             L * sizeof(float));
  }
  return SEQCL_OK;
}

/* NaN/Inf weights must not pass for results. The beam path reads every
 * log-probability back, alignments are read back when asked for; the greedy
 * loop keeps its logits on the device, so without alignments it cannot tell. */
static seqcl_status check_finite(seqcl_ctx *ctx, const seqcl_seqs *src,
                                 const seqcl_decode_result *r, int use_beam,
                                 float *const *line_align, size_t first, size_t n_lines) {
  for (size_t i = first; i < first + n_lines; i++) {
    for (int k = 0; use_beam && k < r->hyp_counts[i]; k++) {
      const seqcl_hypothesis *h = &r->hyps[i * (size_t)r->nbest + k];
      /* worded as greedy decoding and forward word it: line, step, tensor */
      if (!isfinite(h->logprob))
        return sq_fail(ctx, SEQCL_ERR_NON_FINITE,
                       "beam search: logits of line %zu, by step %d, are not finite: hypothesis "
                       "%d has log-probability %g",
                       i + 1, h->steps, k + 1, h->logprob);
    }
    const size_t L = sq_seq_len_of(src, i);
    const size_t n = line_align ? (size_t)r->hyps[i * (size_t)r->nbest].steps * L : 0;
    for (size_t j = 0; j < n; j++)
      if (!isfinite(line_align[i][j]))
        return sq_fail(ctx, SEQCL_ERR_NON_FINITE,
                       "decode: line %zu: alignments at step %zu, source position %zu are not "
                       "finite (%g)",
                       i + 1, j / L + 1, j % L + 1, (double)line_align[i][j]);
  }
  return SEQCL_OK;
}

/* Lines [first, first + n) of src as one batch: beam search or greedy
 * decoding, into hyps / hyp_counts / alignments at those lines. */
typedef struct batch_args {
  seqcl_model *const *ms;
  int M;
  const seqcl_seqs *src;
  const seqcl_decode_options *o;
  int use_beam, slots, max_steps;
  seqcl_decode_result *r;
  float **line_align;
} batch_args;

static seqcl_status decode_lines(const batch_args *b, size_t first, int n) {
  float **la = b->line_align ? b->line_align + first : NULL;
  seqcl_decode_result *r = b->r;
  if (b->use_beam)
    return sq_decode_beam(b->ms, b->M, b->src, first, n, b->o->beam, b->o->length_penalty,
                          b->max_steps, b->slots, r->hyps + first * b->slots,
                          r->hyp_counts + first, la);
  const seqcl_status st =
      b->M > 1 ? sq_decode_ensemble_greedy(b->ms, b->M, b->src, first, n, b->max_steps,
                                           r->hyps + first)
               : sq_decode_greedy(b->ms[0], b->src, first, n, b->max_steps, r->hyps + first, la);
  for (int i = 0; i < n; i++) r->hyp_counts[first + i] = 1;
  return st;
}

typedef struct split_job {
  const batch_args *b;
  size_t first;
  int n, parts;
  seqcl_status st[SPLIT_MAX_PARTS];
  /* a failed part's message (messages are per thread: the part may have run
   * on a worker), raised again on the caller's thread */
  char *msg[SPLIT_MAX_PARTS];
} split_job;

static void split_part(void *arg, int p) {
  split_job *j = arg;
  const int lo = (int)((long long)j->n * p / j->parts);
  const int hi = (int)((long long)j->n * (p + 1) / j->parts);
  j->st[p] = decode_lines(j->b, j->first + (size_t)lo, hi - lo);
  if (j->st[p] != SEQCL_OK) j->msg[p] = strdup(seqcl_last_message());
}

static seqcl_status decode_batch(const batch_args *b, size_t first, int n) {
  seqcl_ctx *ctx = b->ms[0]->ctx;
  const long long rows = (long long)n * (b->use_beam ? b->o->beam : 1);
  int parts = sq_task_threads(ctx);
  if (parts > SPLIT_MAX_PARTS) parts = SPLIT_MAX_PARTS;
  if (rows / SPLIT_MIN_ROWS < parts) parts = (int)(rows / SPLIT_MIN_ROWS);
  if (parts > n) parts = n;
  for (int j = 0; j < b->M; j++)
    if (output_bytes(b->ms[j]) > SPLIT_MAX_OUT_BYTES) parts = 1;
  if (parts < 2 || (sq_ablated(ctx) & SQ_ABL_SPLIT_BATCH)) return decode_lines(b, first, n);
  split_job j;
  memset(&j, 0, sizeof j);
  j.b = b;
  j.first = first;
  j.n = n;
  j.parts = parts;
  sq_run_tasks(ctx, parts, split_part, &j);
  ctx->split_batches++;
  ctx->split_parts += (unsigned long long)parts;
  seqcl_status st = SEQCL_OK;
  for (int p = 0; p < parts; p++) {
    if (j.st[p] != SEQCL_OK && st == SEQCL_OK)
      st = sq_fail(ctx, j.st[p], "%s",
                   j.msg[p] ? j.msg[p] : "(the failure's message: out of host memory)");
    free(j.msg[p]);
  }
  return st;
}

/* The models ms[0..M) were checked to read the same ids (check_ensemble). */
static seqcl_status decode_models(seqcl_model *const *ms, int M, const seqcl_seqs *src,
                                  const seqcl_decode_options *opts, seqcl_decode_result **out) {
  seqcl_model *m = ms[0];
  seqcl_ctx *ctx = m->ctx;
  seqcl_decode_options o;
  if (opts)
    o = *opts;
  else
    seqcl_decode_options_init(&o);
  SQ_TRY(check_options(ctx, &o));
  if (o.want_alignments && M > 1)
    return sq_fail(ctx, SEQCL_ERR_INVALID_ARGUMENT,
                   "decode: alignments were asked for, but an ensemble of %d models has one "
                   "attention per model: decode with one model for alignments", M);
  if (o.want_alignments && m->cfg.score == SQ_SCORE_NONE)
    return sq_fail(ctx, SEQCL_ERR_INVALID_ARGUMENT,
                   "decode: alignments were asked for, but the model's attention.score is "
                   "\"none\" (a fixed context): it has no alignments");
  if (src->count == 0) return sq_fail(ctx, SEQCL_ERR_INVALID_ARGUMENT, "decode: no lines");
  SQ_TRY(sq_check_seqs(ctx, src, m->cfg.src_vocab, 1, "source"));
  const size_t N = src->count;
  size_t longest = 0;
  for (size_t i = 0; i < N; i++)
    if (sq_seq_len_of(src, i) > longest) longest = sq_seq_len_of(src, i);
  const int max_steps = o.max_steps ? o.max_steps : (int)(2 * longest + 10);
  const int use_beam = o.beam > 1 || o.nbest > 0;
  const int slots = use_beam ? (o.nbest > 0 ? o.nbest : 1) : 1;
  const size_t bs = o.batch_size > 0 ? (size_t)o.batch_size : 64;

  seqcl_decode_result *r = calloc(1, sizeof *r);
  float **line_align = o.want_alignments ? calloc(N, sizeof(float *)) : NULL;
  if (r) {
    r->count = N;
    r->nbest = slots;
    r->hyps = calloc(N * (size_t)slots, sizeof *r->hyps);
    r->hyp_counts = calloc(N, sizeof(int));
  }
  seqcl_status st = SEQCL_OK;
  if (!r || !r->hyps || !r->hyp_counts || (o.want_alignments && !line_align))
    st = sq_fail(ctx, SEQCL_ERR_OUT_OF_MEMORY, "decode: out of host memory");
  const batch_args b = {ms, M, src, &o, use_beam, slots, max_steps, r, line_align};
  for (size_t first = 0; first < N && st == SEQCL_OK; first += bs) {
    const int n = (int)(N - first < bs ? N - first : bs);
    st = decode_batch(&b, first, n);
    /* checked per batch, so that lines handed out early are never garbage */
    if (st == SEQCL_OK) st = check_finite(ctx, src, r, use_beam, line_align, first, (size_t)n);
    if (st == SEQCL_OK && o.on_lines &&
        o.on_lines(o.user, first, (size_t)n, r->hyps + first * slots, r->hyp_counts + first,
                   slots))
      st = sq_fail(ctx, SEQCL_ERR_CANCELLED, "decode: stopped after line %zu", first + n);
    if (st == SEQCL_OK) st = sq_model_progress(m, first + (size_t)n, N);
  }
  if (st == SEQCL_OK) st = assemble(ctx, src, r, line_align);
  if (line_align)
    for (size_t i = 0; i < N; i++) free(line_align[i]);
  free(line_align);
  if (st != SEQCL_OK) {
    seqcl_decode_result_free(r);
    return st;
  }
  *out = r;
  return SEQCL_OK;
}

seqcl_status seqcl_model_decode(seqcl_model *m, const seqcl_seqs *src,
                                const seqcl_decode_options *opts, seqcl_decode_result **out) {
  if (!out) return sq_fail(NULL, SEQCL_ERR_INVALID_ARGUMENT, "seqcl_model_decode: out is NULL");
  *out = NULL;
  if (!m || !src)
    return sq_fail(NULL, SEQCL_ERR_INVALID_ARGUMENT, "seqcl_model_decode: NULL argument");
  sq_clear_message();
  return decode_models(&m, 1, src, opts, out);
}

/* Every model must read the source ids and write the target ids the first
 * one does: the same vocabulary sizes, BOS and EOS, on the same context. */
static seqcl_status check_ensemble(seqcl_model *const *ms, int M) {
  const sq_config *c0 = &ms[0]->cfg;
  for (int j = 1; j < M; j++) {
    const sq_config *c = &ms[j]->cfg;
    if (ms[j]->ctx != ms[0]->ctx)
      return sq_fail(ms[0]->ctx, SEQCL_ERR_INVALID_ARGUMENT,
                     "seqcl_ensemble_decode: model %d was loaded on another context than model 1",
                     j + 1);
    if (c->src_vocab != c0->src_vocab || c->tgt_vocab != c0->tgt_vocab ||
        c->bos_id != c0->bos_id || c->eos_id != c0->eos_id)
      return sq_fail(ms[0]->ctx, SEQCL_ERR_INVALID_ARGUMENT,
                     "seqcl_ensemble_decode: model %d does not read and write the ids model 1 "
                     "does (src_vocab_size %d / %d, tgt_vocab_size %d / %d, bos_id %d / %d, "
                     "eos_id %d / %d)",
                     j + 1, c->src_vocab, c0->src_vocab, c->tgt_vocab, c0->tgt_vocab, c->bos_id,
                     c0->bos_id, c->eos_id, c0->eos_id);
  }
  return SEQCL_OK;
}

seqcl_status seqcl_ensemble_decode(seqcl_model *const *models, int count, const seqcl_seqs *src,
                                   const seqcl_decode_options *opts, seqcl_decode_result **out) {
  if (!out) return sq_fail(NULL, SEQCL_ERR_INVALID_ARGUMENT, "seqcl_ensemble_decode: out is NULL");
  *out = NULL;
  if (!models || !src)
    return sq_fail(NULL, SEQCL_ERR_INVALID_ARGUMENT, "seqcl_ensemble_decode: NULL argument");
  if (count < 1 || count > SEQCL_ENSEMBLE_MAX)
    return sq_fail(NULL, SEQCL_ERR_INVALID_ARGUMENT,
                   "seqcl_ensemble_decode: %d models; an ensemble has 1 to %d", count,
                   SEQCL_ENSEMBLE_MAX);
  for (int j = 0; j < count; j++)
    if (!models[j])
      return sq_fail(NULL, SEQCL_ERR_INVALID_ARGUMENT, "seqcl_ensemble_decode: model %d is NULL",
                     j + 1);
  sq_clear_message();
  SQ_TRY(check_ensemble(models, count));
  return decode_models(models, count, src, opts, out);
}
