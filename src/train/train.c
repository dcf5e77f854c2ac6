/* The training loop for the reversal task: fresh weights, a new seeded batch
 * per step, forward + backward + (clip) + Adam, then greedy evaluation on
 * held-out samples drawn after the training batches, then saving. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <seqcl/train.h>

#include "model/config.h"
#include "ops/ops.h"
#include "train/checkpoint.h"
#include "train/optim.h"
#include "train/save_dir.h"
#include "train/task.h"
#include "train/tmodel.h"

#define EVAL_SAMPLES 256
#define DATA_SALT 0x5EED0DA7A5EED0DAull

void seqcl_train_options_init(seqcl_train_options *o) {
  memset(o, 0, sizeof *o);
  o->length = 6;
  o->score = "additive";
  o->steps = 1200;
  o->batch_size = 64;
  o->lr = 1e-3;
  o->num_layers = 1;
  o->output = "state";
  o->init = "zeros";
}

static double now_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static seqcl_status parse_score(seqcl_ctx *ctx, const char *s, sq_score *out) {
  if (!sq_score_parse(s, out)) return SEQCL_OK;
  return sq_fail(ctx, SEQCL_ERR_INVALID_ARGUMENT, "train: unknown score '%s' (%s)", s ? s : "",
                 SQ_SCORE_CHOICES);
}

static seqcl_status check_options(seqcl_ctx *ctx, const seqcl_train_options *o, sq_config *c) {
  sq_score score = SQ_SCORE_ADDITIVE;
  SQ_TRY(parse_score(ctx, o->score, &score));
  const int layers = o->num_layers ? o->num_layers : 1;
  const char *output = o->output ? o->output : "state", *init = o->init ? o->init : "zeros";
  if (layers < 1 || layers > SQ_TRAIN_MAX_LAYERS)
    return sq_fail(ctx, SEQCL_ERR_INVALID_ARGUMENT, "train: --layers %d is outside 1..%d", layers,
                   SQ_TRAIN_MAX_LAYERS);
  if (strcmp(output, "state") && strcmp(output, "state_context"))
    return sq_fail(ctx, SEQCL_ERR_INVALID_ARGUMENT,
                   "train: unknown output '%s' (state, state_context)", output);
  if (strcmp(init, "zeros") && strcmp(init, "bridge") && strcmp(init, "final"))
    return sq_fail(ctx, SEQCL_ERR_INVALID_ARGUMENT,
                   "train: unknown init '%s' (zeros, bridge, final)", init);
  if (!strcmp(init, "final") && o->bidirectional)
    return sq_fail(ctx, SEQCL_ERR_INVALID_ARGUMENT,
                   "train: --init final needs encoder width == decoder hidden (64), so it "
                   "cannot be used with --bidirectional");
  if (!(o->dropout >= 0.0 && o->dropout < 1.0))
    return sq_fail(ctx, SEQCL_ERR_INVALID_ARGUMENT, "train: --dropout %g is outside [0, 1)",
                   o->dropout);
  if (o->length < 1 || o->length > 4096)
    return sq_fail(ctx, SEQCL_ERR_INVALID_ARGUMENT, "train: --length %d is outside 1..4096",
                   o->length);
  if (o->steps < 0) return sq_fail(ctx, SEQCL_ERR_INVALID_ARGUMENT, "train: --steps is negative");
  if (o->batch_size < 1 || o->batch_size > 1 << 20)
    return sq_fail(ctx, SEQCL_ERR_INVALID_ARGUMENT, "train: --batch-size %d is outside 1..%d",
                   o->batch_size, 1 << 20);
  if (!(o->lr > 0.0) || !isfinite(o->lr))
    return sq_fail(ctx, SEQCL_ERR_INVALID_ARGUMENT, "train: --lr must be a positive number");
  if (!(o->clip >= 0.0) || !isfinite(o->clip))
    return sq_fail(ctx, SEQCL_ERR_INVALID_ARGUMENT, "train: --clip must be >= 0");
  if (o->bidirectional && (score == SQ_SCORE_DOT || score == SQ_SCORE_SCALED_DOT))
    return sq_fail(ctx, SEQCL_ERR_INVALID_ARGUMENT,
                   "train: --score %s needs encoder width == decoder hidden (64), so it cannot "
                   "be used with --bidirectional",
                   o->score);
  memset(c, 0, sizeof *c);
  c->src_vocab = 12, c->tgt_vocab = 12, c->embed_dim = 32;
  c->bos_id = 10, c->eos_id = 11, c->pad_id = -1;
  c->enc_hidden = 64, c->enc_layers = layers, c->bidirectional = o->bidirectional ? 1 : 0;
  c->dec_hidden = 64, c->score = score;
  c->init = !strcmp(init, "bridge") ? SQ_INIT_BRIDGE
            : !strcmp(init, "final")  ? SQ_INIT_FINAL
                                      : SQ_INIT_ZEROS;
  c->attn_dim = score == SQ_SCORE_ADDITIVE ? 64 : 0;
  c->output = strcmp(output, "state") ? SQ_OUTPUT_STATE_CONTEXT : SQ_OUTPUT_STATE;
  return SEQCL_OK;
}

typedef struct run {
  sq_tlayout L;
  sq_graph *g;
  sq_adam adam;
  int32_t *src, *lens, *tgt, *pred;
  float *host_params; /* params, then Adam's m and v */
  sq_save_plan save;
  char *ckdir;
} run;

static const char *score_name(sq_score s) {
  return (int)s >= 0 && (int)s < SQ_SCORE_COUNT ? sq_score_names[s] : "additive";
}

/* On resume everything but steps and save_dir comes from the checkpoint: its
 * config (score, bidirectional), hyperparameters and data stream. */
static seqcl_status resume_options(seqcl_ctx *ctx, const seqcl_train_options *o, run *R,
                                   sq_ckpt_meta *m, seqcl_train_options *eff) {
  SQ_TRY(sq_checkpoint_locate(ctx, o->resume_dir, &R->ckdir));
  SQ_TRY(sq_checkpoint_read_meta(ctx, R->ckdir, m));
  if (strcmp(m->task, "reverse"))
    return sq_fail(ctx, SEQCL_ERR_INVALID_ARGUMENT,
                   "train: the checkpoint in %s is not of the reversal task", R->ckdir);
  size_t n = strlen(R->ckdir) + sizeof "/config.json";
  char *path = malloc(n);
  if (!path) return sq_fail(ctx, SEQCL_ERR_OUT_OF_MEMORY, "train: out of host memory");
  snprintf(path, n, "%s/config.json", R->ckdir);
  sq_config c;
  seqcl_status st = sq_config_load(path, &c);
  free(path);
  SQ_TRY(st);
  *eff = *o;
  eff->length = m->length;
  eff->score = score_name(c.score);
  eff->bidirectional = c.bidirectional;
  eff->num_layers = c.enc_layers;
  eff->output = c.output == SQ_OUTPUT_STATE_CONTEXT ? "state_context" : "state";
  eff->init = c.init == SQ_INIT_BRIDGE ? "bridge" : c.init == SQ_INIT_FINAL ? "final" : "zeros";
  eff->dropout = m->dropout;
  eff->batch_size = m->batch_size;
  eff->lr = m->lr;
  eff->clip = m->clip;
  eff->seed = m->seed;
  if (!eff->steps) eff->steps = (int)m->steps_total;
  if (eff->steps <= m->step)
    return sq_fail(ctx, SEQCL_ERR_INVALID_ARGUMENT,
                   "train: --steps %d: the checkpoint has already done %ld steps; give a larger "
                   "--steps (the new total) to train on",
                   eff->steps, m->step);
  return SEQCL_OK;
}

/* The model and DIR/checkpoint (weights, Adam, step, data stream), so that
 * `seqcl train --resume DIR` continues the run bit for bit. */
static seqcl_status save_state(seqcl_ctx *ctx, const seqcl_train_options *o, run *R,
                               const sq_trng *data) {
  const size_t total = R->L.total;
  SQ_TRY(sq_read(ctx, sq_graph_params(R->g), R->host_params, sizeof(float) * total));
  SQ_TRY(sq_read(ctx, sq_at(R->adam.state, 0), R->host_params + total,
                 2 * sizeof(float) * total));
  sq_ckpt_meta m;
  memset(&m, 0, sizeof m);
  m.step = R->adam.step, m.batch_size = o->batch_size, m.lr = o->lr, m.clip = o->clip;
  m.seed = o->seed, m.train_lines = 1, m.steps_total = o->steps, m.length = o->length;
  memcpy(m.epoch_rng, data->s, sizeof m.epoch_rng);
  snprintf(m.task, sizeof m.task, "reverse");
  m.dropout = o->dropout;
  SQ_TRY(sq_checkpoint_write(ctx, o->save_dir, &R->L, R->host_params, R->host_params + total, &m));
  return sq_model_dir_save(ctx, &R->L, R->host_params, o->save_dir, &R->save, 1);
}

static seqcl_status train_run(seqcl_ctx *ctx, const seqcl_train_options *given, run *R,
                              seqcl_train_result *res) {
  seqcl_train_options eff = *given;
  const seqcl_train_options *o = &eff;
  sq_ckpt_meta meta;
  memset(&meta, 0, sizeof meta);
  if (given->resume_dir) SQ_TRY(resume_options(ctx, given, R, &meta, &eff));
  if (o->steps < 1)
    return sq_fail(ctx, SEQCL_ERR_INVALID_ARGUMENT, "train: --steps must be at least 1");
  sq_config cfg;
  SQ_TRY(check_options(ctx, o, &cfg));
  SQ_TRY(sq_tlayout_make(ctx, &cfg, &R->L));
  const int S = o->length, T = o->length + 1, B = o->batch_size;
  const int maxn = B > EVAL_SAMPLES ? B : EVAL_SAMPLES;
  SQ_TRY(sq_graph_create(ctx, &R->L, maxn, S, T, &R->g));
  R->src = malloc(sizeof(int32_t) * (size_t)maxn * (S + 1 + (T + 1) + T));
  R->host_params = malloc(sizeof(float) * 3 * R->L.total);
  if (!R->src || !R->host_params)
    return sq_fail(ctx, SEQCL_ERR_OUT_OF_MEMORY, "train: out of host memory");
  R->lens = R->src + (size_t)maxn * S;
  R->tgt = R->lens + maxn;
  R->pred = R->tgt + (size_t)maxn * (T + 1);

  sq_graph *g = R->g;
  sq_ref params = sq_graph_params(g), grads = sq_graph_grads(g);
  const size_t total = R->L.total;
  SQ_TRY(sq_adam_create(ctx, total, (float)o->lr, &R->adam));
  sq_trng data;
  if (given->resume_dir) {
    size_t n = strlen(R->ckdir) + sizeof "/model.safetensors";
    char *path = malloc(n);
    if (!path) return sq_fail(ctx, SEQCL_ERR_OUT_OF_MEMORY, "train: out of host memory");
    snprintf(path, n, "%s/model.safetensors", R->ckdir);
    seqcl_status lst = sq_tlayout_load(ctx, &R->L, path, R->host_params);
    free(path);
    SQ_TRY(lst);
    SQ_TRY(sq_checkpoint_read_adam(ctx, R->ckdir, &R->L, R->host_params + total));
    SQ_TRY(sq_write(ctx, sq_at(R->adam.state, 0), R->host_params + total,
                    2 * sizeof(float) * total));
    R->adam.step = meta.step;
    memcpy(data.s, meta.epoch_rng, sizeof data.s);
  } else {
    sq_tlayout_init(&R->L, o->seed, R->host_params);
    /* the data stream is independent of the weight stream */
    sq_trng_seed(&data, o->seed ^ DATA_SALT);
  }
  SQ_TRY(sq_write(ctx, params, R->host_params, sizeof(float) * total));
  sq_buf *scratch = NULL;
  double t0 = now_seconds();
  float loss = 0.0f;
  int stopped = 0;
  seqcl_status st = sq_buf_alloc(ctx, sizeof(float), &scratch);
  for (int step = (int)R->adam.step; st == SEQCL_OK && step < o->steps && !stopped; step++) {
    sq_task_reverse_batch(&data, B, S, cfg.bos_id, cfg.eos_id, R->src, R->lens, R->tgt);
    st = sq_graph_set_batch(g, B, R->src, R->lens, R->tgt);
    if (st == SEQCL_OK) st = sq_graph_set_dropout(g, o->dropout, o->seed, (uint64_t)step);
    if (st == SEQCL_OK) st = sq_fill(ctx, grads, total, 0.0f);
    if (st == SEQCL_OK) st = sq_graph_forward(g, &loss);
    if (st == SEQCL_OK && !isfinite(loss))
      st = sq_fail(ctx, SEQCL_ERR_NON_FINITE, "train: the loss became %g at step %d",
                   (double)loss, step + 1);
    if (st == SEQCL_OK) st = sq_graph_backward(g);
    if (st == SEQCL_OK && o->clip > 0.0)
      st = sq_clip_grad_norm(ctx, total, grads, (float)o->clip, sq_at(scratch, 0), NULL);
    if (st == SEQCL_OK) st = sq_adam_step(ctx, &R->adam, params, grads);
    if (st == SEQCL_OK && o->progress && o->progress(o->user, step + 1, o->steps, loss))
      stopped = 1;
  }
  sq_buf_free(scratch);
  SQ_TRY(st);
  SQ_TRY(sq_finish(ctx));
  res->steps_done = (int)R->adam.step;
  res->start_step = (int)meta.step;
  /* the stream as it is before the held-out draws: what a resumed run goes on with */
  const sq_trng data_at_end = data;
  if (stopped && o->save_dir) SQ_TRY(save_state(ctx, o, R, &data_at_end));
  if (stopped) {
    if (!o->save_dir)
      return sq_fail(ctx, SEQCL_ERR_CANCELLED, "train: cancelled at step %d", res->steps_done);
    return sq_fail(ctx, SEQCL_ERR_CANCELLED,
                   "train: stopped after step %d of %d; the model is in %s and the checkpoint "
                   "in %s/checkpoint; continue with: seqcl train --resume %s",
                   res->steps_done, o->steps, o->save_dir, o->save_dir, o->save_dir);
  }
  res->final_loss = loss;
  res->train_seconds = now_seconds() - t0;

  /* held-out samples: the next draws of the data stream */
  sq_task_reverse_batch(&data, EVAL_SAMPLES, S, cfg.bos_id, cfg.eos_id, R->src, R->lens, R->tgt);
  SQ_TRY(sq_graph_set_dropout(g, 0.0, 0, 0));
  SQ_TRY(sq_graph_set_batch(g, EVAL_SAMPLES, R->src, R->lens, NULL));
  SQ_TRY(sq_graph_greedy(g, R->pred));
  res->evaluated = EVAL_SAMPLES;
  res->correct = 0;
  for (int n = 0; n < EVAL_SAMPLES; n++) {
    int ok = 1;
    for (int j = 0; j < S; j++) ok &= R->pred[(size_t)n * T + j] == R->tgt[(size_t)n * (T + 1) + 1 + j];
    res->correct += ok;
  }
  /* saved last, so that a failure anywhere leaves nothing */
  if (o->save_dir) SQ_TRY(save_state(ctx, o, R, &data_at_end));
  return SEQCL_OK;
}

seqcl_status seqcl_train_reverse(seqcl_ctx *ctx, const seqcl_train_options *o,
                                 seqcl_train_result *out) {
  if (!ctx || !o || !out)
    return sq_fail(ctx, SEQCL_ERR_INVALID_ARGUMENT, "seqcl_train_reverse: NULL argument");
  memset(out, 0, sizeof *out);
  run R;
  memset(&R, 0, sizeof R);
  /* before any work: a run that cannot save fails now, not after its last step */
  seqcl_status st =
      o->save_dir ? sq_save_dir_check(ctx, o->save_dir, o->overwrite, o->resume_dir, &R.save)
                  : SEQCL_OK;
  if (st == SEQCL_OK) st = train_run(ctx, o, &R, out);
  sq_graph_free(R.g);
  sq_adam_free(&R.adam);
  free(R.src);
  free(R.host_params);
  free(R.ckdir);
  return st;
}

void seqcl_train_options_default(seqcl_train_options *o) { seqcl_train_options_init(o); }
