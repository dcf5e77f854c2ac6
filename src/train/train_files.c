/* Training on the user's token files (SPEC §4 `seqcl train --src --tgt`):
 * ragged lines padded to each batch's longest in one graph sized for the
 * longest lines of the files, batches drawn
 * from a seeded per-epoch permutation, periodic validation (teacher-forced loss
 * and greedy exact match), checkpoints, resume and a clean stop. The settings
 * a run starts from (options, what a resume takes from its checkpoint, --text,
 * the schedule) are train_files_settle.c's. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/fileio.h"
#include "core/hash.h"
#include "ops/ops.h"
#include "model/metrics.h"
#include "train/files_run.h"

void seqcl_train_files_options_init(seqcl_train_files_options *o) {
  memset(o, 0, sizeof *o);
  o->steps = 0; /* 1000, or on resume the checkpoint's total */
  o->clip = -1.0;
  o->seed = -1;
  o->dropout = -1.0;
}

static double now_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* ---- data ---- */

/* tx: read as text through its vocabularies (unknown tokens counted into
 * unknown[side]); NULL: token ids. */
static seqcl_status load_pair(seqcl_ctx *ctx, const sq_config *c, const sq_train_text *tx,
                              const char *src_path, const char *tgt_path, sq_files_data *d,
                              size_t unknown[2]) {
  d->src_name = src_path, d->tgt_name = tgt_path;
  if (tx) {
    size_t u[2] = {0, 0};
    SQ_TRY(sq_train_text_read(tx, c, 0, src_path, &d->src, &u[0]));
    SQ_TRY(sq_train_text_read(tx, c, 1, tgt_path, &d->tgt, &u[1]));
    unknown[0] += u[0], unknown[1] += u[1];
  } else {
    SQ_TRY(sq_tokens_read(src_path, c->src_vocab, NULL, &d->src));
    SQ_TRY(sq_tokens_read(tgt_path, c->tgt_vocab, NULL, &d->tgt));
  }
  if (d->src.count != d->tgt.count)
    return sq_fail(ctx, SEQCL_ERR_INVALID_ARGUMENT, "%s has %zu lines but %s has %zu", src_path,
                   d->src.count, tgt_path, d->tgt.count);
  for (size_t i = 0; i < d->tgt.count; i++) {
    const int32_t *t = d->tgt.ids + d->tgt.offsets[i];
    if (sq_seq_len(&d->tgt, i) < 2 || t[0] != c->bos_id)
      return sq_fail(ctx, SEQCL_ERR_BAD_TOKENS,
                     "%s:%zu: a target line is BOS (%d) then at least one token", tgt_path,
                     i + 1, c->bos_id);
  }
  return SEQCL_OK;
}

static void free_pair(sq_files_data *d) {
  sq_seqs_free(&d->src);
  sq_seqs_free(&d->tgt);
}

static void longest(const sq_files_data *d, int *S, int *T) {
  for (size_t i = 0; i < d->src.count; i++) {
    if ((int)sq_seq_len(&d->src, i) > *S) *S = (int)sq_seq_len(&d->src, i);
    if ((int)sq_seq_len(&d->tgt, i) - 1 > *T) *T = (int)sq_seq_len(&d->tgt, i) - 1;
  }
}

static uint64_t data_hash(const sq_files_data *d) {
  uint64_t h = SQ_HASH_INIT;
  const sq_seqs *both[2] = {&d->src, &d->tgt};
  for (int k = 0; k < 2; k++) {
    h = sq_hash_bytes(h, both[k]->offsets, sizeof(size_t) * (both[k]->count + 1));
    h = sq_hash_bytes(h, both[k]->ids, sizeof(int32_t) * both[k]->offsets[both[k]->count]);
  }
  return h;
}

/* The longest source and the most decoder steps among lines idx[0..n): each
 * batch is padded to its own (the file's longest lines are rare, and the
 * work of a step scales with S and T). */
static void batch_shape(const sq_files_data *d, const long *idx, int n, int *S, int *T) {
  *S = 1, *T = 1;
  for (int r = 0; r < n; r++) {
    size_t i = (size_t)idx[r];
    if ((int)sq_seq_len(&d->src, i) > *S) *S = (int)sq_seq_len(&d->src, i);
    if ((int)sq_seq_len(&d->tgt, i) - 1 > *T) *T = (int)sq_seq_len(&d->tgt, i) - 1;
  }
}

/* Orders a batch's lines by decoder steps, longest first (then by source
 * length, then as drawn): the decoder then runs, at each step, only the
 * prefix of rows still producing labels (sq_graph's dec_rows). The loss and
 * the gradients are sums over the lines, so the order changes only their
 * rounding. Insertion sort: stable, and a batch is small. */
static void order_by_target(const sq_files_data *d, long *idx, int n) {
  for (int r = 1; r < n; r++) {
    const long i = idx[r];
    const size_t lt = sq_seq_len(&d->tgt, (size_t)i), ls = sq_seq_len(&d->src, (size_t)i);
    int q = r;
    for (; q > 0; q--) {
      const size_t pt = sq_seq_len(&d->tgt, (size_t)idx[q - 1]);
      if (pt > lt || (pt == lt && sq_seq_len(&d->src, (size_t)idx[q - 1]) >= ls)) break;
      idx[q] = idx[q - 1];
    }
    idx[q] = i;
  }
}

/* Pads lines idx[0..n) into src [n, S] (0 past the end), lens [n] and
 * tgt [n, T+1] (-1 past the end: ignored labels). */
static void fill_batch(const sq_files_data *d, const long *idx, int n, int S, int T, int32_t *src,
                       int32_t *lens, int32_t *tgt) {
  for (int r = 0; r < n; r++) {
    size_t i = (size_t)idx[r];
    size_t ls = sq_seq_len(&d->src, i), lt = sq_seq_len(&d->tgt, i);
    for (int j = 0; j < S; j++)
      src[(size_t)r * S + j] = j < (int)ls ? d->src.ids[d->src.offsets[i] + j] : 0;
    lens[r] = (int32_t)ls;
    for (int j = 0; j <= T; j++)
      tgt[(size_t)r * (T + 1) + j] = j < (int)lt ? d->tgt.ids[d->tgt.offsets[i] + j] : -1;
  }
}

/* ---- the run ---- */

static seqcl_status check_trainable(seqcl_ctx *ctx, const sq_config *c, const char *from) {
  if (c->enc_layers > SQ_TRAIN_MAX_LAYERS)
    return sq_fail(ctx, SEQCL_ERR_INVALID_ARGUMENT,
                   "%s: training supports encoder.num_layers 1..%d (the config has %d)", from,
                   SQ_TRAIN_MAX_LAYERS, c->enc_layers);
  return SEQCL_OK;
}

static seqcl_status load_config(seqcl_ctx *ctx, const char *dir, const char *file, sq_config *c) {
  /* exactly one of dir and file is given (a NULL file is never duplicated) */
  char *p = dir ? sq_path_join(dir, "config.json") : file ? strdup(file) : NULL;
  if (!p) return sq_fail(ctx, SEQCL_ERR_OUT_OF_MEMORY, "training: out of host memory");
  seqcl_status st = sq_config_load(p, c);
  if (st == SEQCL_OK) st = check_trainable(ctx, c, p);
  free(p);
  return st;
}

static seqcl_status load_weights(seqcl_ctx *ctx, const sq_tlayout *L, const char *dir,
                                 float *params) {
  char *p = sq_path_join(dir, "model.safetensors");
  if (!p) return sq_fail(ctx, SEQCL_ERR_OUT_OF_MEMORY, "training: out of host memory");
  seqcl_status st = sq_tlayout_load(ctx, L, p, params);
  free(p);
  return st;
}

static seqcl_status save_checkpoint(seqcl_ctx *ctx, const seqcl_train_files_options *o,
                                    sq_files_run *R) {
  const size_t total = R->L.total;
  SQ_TRY(sq_read(ctx, sq_graph_params(R->g), R->host, sizeof(float) * total));
  SQ_TRY(sq_read(ctx, sq_at(R->adam.state, 0), R->host + total, 2 * sizeof(float) * total));
  sq_ckpt_meta m = {.batch_size = R->B, .lr = R->lr, .clip = R->clip,
                    .seed = R->seed, .dropout = R->dropout, .epoch = R->sh.epoch,
                    .cursor = R->sh.cursor, .train_lines = R->sh.n, .data_hash = R->hash};
  m.step = R->adam.step - R->adam_offset;
  m.adam_offset = R->adam_offset;
  const sq_schedule *sc = &R->sched;
  m.warmup = sc->warmup, m.decay_patience = sc->decay_patience, m.patience = sc->patience;
  m.lr_decay = sc->decay, m.min_lr = sc->min_lr, m.keep_best = o->keep_best;
  snprintf(m.metric, sizeof m.metric, "%s", sq_metric_name(sc->metric));
  m.lr_scale = sc->scale, m.best = sc->best, m.best_step = sc->best_step;
  m.since_best = sc->since_best, m.since_decay = sc->since_decay;
  m.bucket = R->sh.window, m.batch_tokens = R->sh.tokens;
  memcpy(m.epoch_rng, R->sh.epoch_rng.s, sizeof m.epoch_rng);
  snprintf(m.task, sizeof m.task, "files");
  m.steps_total = o->steps;
  m.checkpoint_every = o->checkpoint_every;
  m.valid_every = o->valid_every;
  snprintf(m.text, sizeof m.text, "%s", R->text_spec);
  sq_ckpt_abspath(o->src_path, m.src, sizeof m.src);
  sq_ckpt_abspath(o->tgt_path, m.tgt, sizeof m.tgt);
  if (o->valid_src_path) sq_ckpt_abspath(o->valid_src_path, m.valid_src, sizeof m.valid_src);
  if (o->valid_tgt_path) sq_ckpt_abspath(o->valid_tgt_path, m.valid_tgt, sizeof m.valid_tgt);
  return sq_checkpoint_write(ctx, o->save_dir, &R->L, R->host, R->host + total, &m);
}

/* mt accumulates the token edit rate, as seqcl eval counts it (the caller
 * frees it, also after a failure). */
static seqcl_status validate_into(sq_files_run *R, seqcl_train_event *e, sq_metrics *mt) {
  const sq_files_data *d = &R->valid;
  const long n = (long)d->src.count;
  double loss_sum = 0;
  long labels = 0;
  e->valid_correct = 0;
  SQ_TRY(sq_graph_set_dropout(R->g, 0.0, 0, 0)); /* the next step sets it again */
  for (long at = 0; at < n; at += R->B) {
    int rows = (int)(n - at < R->B ? n - at : R->B);
    for (int r = 0; r < rows; r++) R->idx[r] = at + r;
    int S, T;
    batch_shape(d, R->idx, rows, &S, &T);
    fill_batch(d, R->idx, rows, S, T, R->src, R->lens, R->tgt);
    float loss;
    SQ_TRY(sq_graph_set_batch_shape(R->g, rows, S, T, R->src, R->lens, R->tgt));
    SQ_TRY(sq_graph_forward(R->g, &loss));
    long here = 0;
    for (int r = 0; r < rows; r++) here += (long)sq_seq_len(&d->tgt, (size_t)(at + r)) - 1;
    loss_sum += (double)loss * (double)here;
    labels += here;
    /* greedy decoding may run up to the longest target of the data */
    fill_batch(d, R->idx, rows, S, R->T, R->src, R->lens, R->tgt);
    SQ_TRY(sq_graph_set_batch_shape(R->g, rows, S, R->T, R->src, R->lens, NULL));
    SQ_TRY(sq_graph_greedy(R->g, R->pred));
    for (int r = 0; r < rows; r++) {
      /* exact match: the output before the first EOS equals the target between
       * BOS and its final EOS */
      const int32_t *t = d->tgt.ids + d->tgt.offsets[at + r] + 1;
      int want = (int)sq_seq_len(&d->tgt, (size_t)(at + r)) - 1;
      if (want > 0 && t[want - 1] == R->cfg.eos_id) want--;
      const int32_t *p = R->pred + (size_t)r * R->T;
      int got = 0;
      while (got < R->T && p[got] != R->cfg.eos_id) got++;
      e->valid_correct += got == want && !memcmp(p, t, sizeof(int32_t) * (size_t)want);
      SQ_TRY(sq_metrics_add(mt, p, (size_t)got, t, (size_t)want));
    }
  }
  e->valid_ter = sq_metrics_ter(mt);
  e->validated = 1;
  e->valid_loss = labels ? loss_sum / (double)labels : 0.0;
  e->valid_count = (int)n;
  return SEQCL_OK;
}

static seqcl_status validate(sq_files_run *R, seqcl_train_event *e) {
  sq_metrics mt;
  sq_metrics_init(&mt);
  seqcl_status st = validate_into(R, e, &mt);
  sq_metrics_free(&mt);
  return st;
}

/* --init DIR with its optimizer: Adam's moments and step count from
 * DIR/checkpoint, so that fine-tuning continues Adam as one run would. */
static seqcl_status init_adam(seqcl_ctx *ctx, const char *dir, sq_files_run *R) {
  char *ck = NULL;
  sq_ckpt_meta im;
  seqcl_status st = sq_checkpoint_locate(ctx, dir, &ck);
  if (st == SEQCL_OK) st = sq_checkpoint_read_meta(ctx, ck, &im);
  if (st == SEQCL_OK) st = sq_checkpoint_read_adam(ctx, ck, &R->L, R->host + R->L.total);
  free(ck);
  if (st != SEQCL_OK)
    return sq_fail_wrap(ctx, st, "train: --init %s with its optimizer state", dir);
  SQ_TRY(sq_write(ctx, sq_at(R->adam.state, 0), R->host + R->L.total,
                  2 * sizeof(float) * R->L.total));
  R->adam.step = im.step + im.adam_offset;
  R->adam_offset = R->adam.step;
  return SEQCL_OK;
}

/* Whether dir already holds a model (config.json). */
static int model_in(const char *dir) {
  char *p = sq_path_join(dir, "config.json");
  FILE *f = p ? fopen(p, "r") : NULL;
  free(p);
  if (f) fclose(f);
  return f != NULL;
}

static seqcl_status train_files_run(seqcl_ctx *ctx, const seqcl_train_files_options *given,
                                    sq_files_run *R, seqcl_train_files_result *res) {
  seqcl_train_files_options eff = *given;
  const seqcl_train_files_options *o = &eff;
  if (given->resume_dir) {
    if (given->config_path || given->init_dir)
      return sq_fail(ctx, SEQCL_ERR_INVALID_ARGUMENT,
                     "train: --resume takes the model from the checkpoint; leave out --config "
                     "and --init");
    SQ_TRY(sq_checkpoint_locate(ctx, given->resume_dir, &R->ckdir));
    SQ_TRY(sq_checkpoint_read_meta(ctx, R->ckdir, &R->meta));
    SQ_TRY(sq_files_resume_options(ctx, given, &R->meta, R->ckdir, &eff, &R->save_alloc));
  } else if (!eff.steps) {
    eff.steps = 1000;
  }
  if (!o->save_dir) return sq_fail(ctx, SEQCL_ERR_INVALID_ARGUMENT, "train: --save DIR is required");
  /* before any work: a run that cannot save fails now, not after its last step */
  SQ_TRY(sq_save_dir_check(ctx, o->save_dir, o->overwrite, o->resume_dir, &R->save));
  if (!o->src_path || !o->tgt_path)
    return sq_fail(ctx, SEQCL_ERR_INVALID_ARGUMENT, "train: --src and --tgt are required");
  if (!o->valid_src_path != !o->valid_tgt_path)
    return sq_fail(ctx, SEQCL_ERR_INVALID_ARGUMENT,
                   "train: --valid-src and --valid-tgt go together");
  sq_ckpt_meta *m = NULL;
  if (o->resume_dir) {
    m = &R->meta;
    SQ_TRY(load_config(ctx, R->ckdir, NULL, &R->cfg));
  } else if (o->config_path) {
    SQ_TRY(load_config(ctx, NULL, o->config_path, &R->cfg));
  } else if (o->init_dir) {
    SQ_TRY(load_config(ctx, o->init_dir, NULL, &R->cfg));
  } else {
    return sq_fail(ctx, SEQCL_ERR_INVALID_ARGUMENT,
                   "train: --config FILE (or --init DIR, or --resume DIR) is required");
  }
  snprintf(res->save_dir, sizeof res->save_dir, "%s", o->save_dir ? o->save_dir : "");
  SQ_TRY(sq_files_settle_options(ctx, o, m, R));
  SQ_TRY(sq_files_settle_text(ctx, o, m, R, res));
  const sq_train_text *tx = R->text_spec[0] ? &R->text : NULL;
  SQ_TRY(sq_tlayout_make(ctx, &R->cfg, &R->L));
  if (tx) R->L.vocab[0] = tx->vocab[0], R->L.vocab[1] = tx->vocab[1];
  SQ_TRY(load_pair(ctx, &R->cfg, tx, o->src_path, o->tgt_path, &R->train, res->unknown));
  if (o->valid_src_path) {
    SQ_TRY(load_pair(ctx, &R->cfg, tx, o->valid_src_path, o->valid_tgt_path, &R->valid,
                     res->unknown));
    R->have_valid = 1;
  }
  R->hash = data_hash(&R->train);
  const long lines = (long)R->train.src.count;
  if (m && (m->train_lines != lines || m->data_hash != R->hash))
    return sq_fail(ctx, SEQCL_ERR_INVALID_ARGUMENT,
                   "train: %s / %s are not the files the checkpoint in %s was trained on",
                   o->src_path, o->tgt_path, R->ckdir);
  if (lines > 0x7fffffffL)
    return sq_fail(ctx, SEQCL_ERR_INVALID_ARGUMENT, "train: more than 2^31 lines");
  R->S = 1, R->T = 1;
  longest(&R->train, &R->S, &R->T);
  if (R->have_valid) longest(&R->valid, &R->S, &R->T);
  res->train_lines = (int)lines, res->max_src_len = R->S, res->max_tgt_len = R->T + 1;

  SQ_TRY(sq_files_settle_schedule(ctx, o, m, R));
  if (o->epochs > 0) {
    long steps = sq_batcher_steps_for(&R->sh, R->seed, o->epochs);
    if (steps < 1 || steps > 0x7fffffffL)
      return sq_fail(ctx, steps < 0 ? SEQCL_ERR_OUT_OF_MEMORY : SEQCL_ERR_INVALID_ARGUMENT,
                     "train: --epochs %g: %ld steps", o->epochs, steps);
    eff.steps = (int)steps;
    if (m && eff.steps <= m->step)
      return sq_fail(ctx, SEQCL_ERR_INVALID_ARGUMENT,
                     "train: --epochs %g is %d steps: the checkpoint has already done %ld",
                     o->epochs, eff.steps, m->step);
  }

  const int B = R->B, S = R->S, T = R->T;
  const size_t total = R->L.total;
  SQ_TRY(sq_graph_create(ctx, &R->L, B, S, T, &R->g));
  R->idx = malloc(sizeof(long) * (size_t)B);
  R->src = malloc(sizeof(int32_t) * (size_t)B * ((size_t)S + 1 + (size_t)(T + 1) + (size_t)T));
  R->host = malloc(sizeof(float) * 3 * total);
  if (!R->idx || !R->src || !R->host)
    return sq_fail(ctx, SEQCL_ERR_OUT_OF_MEMORY, "train: out of host memory");
  R->lens = R->src + (size_t)B * S;
  R->tgt = R->lens + B;
  R->pred = R->tgt + (size_t)B * (T + 1);

  /* weights, optimizer state and the batch stream's position */
  SQ_TRY(sq_adam_create(ctx, total, (float)R->lr, &R->adam));
  SQ_TRY(sq_batcher_init(&R->sh, R->seed));
  if (m) {
    SQ_TRY(load_weights(ctx, &R->L, R->ckdir, R->host));
    SQ_TRY(sq_checkpoint_read_adam(ctx, R->ckdir, &R->L, R->host + total));
    SQ_TRY(sq_write(ctx, sq_at(R->adam.state, 0), R->host + total, 2 * sizeof(float) * total));
    R->adam_offset = m->adam_offset;
    R->adam.step = m->step + m->adam_offset;
    sq_batcher_restore(&R->sh, m->epoch_rng, m->epoch, m->cursor);
  } else {
    if (o->init_dir)
      SQ_TRY(load_weights(ctx, &R->L, o->init_dir, R->host));
    else
      sq_tlayout_init(&R->L, R->seed, R->host);
    if (o->init_dir && o->init_optimizer) SQ_TRY(init_adam(ctx, o->init_dir, R));
  }
  sq_graph *g = R->g;
  sq_ref params = sq_graph_params(g), grads = sq_graph_grads(g);
  SQ_TRY(sq_write(ctx, params, R->host, sizeof(float) * total));
  SQ_TRY(sq_buf_alloc(ctx, sizeof(float), &R->scratch));

  const int start = (int)(R->adam.step - R->adam_offset);
  res->start_step = start;
  double t0 = now_seconds();
  float loss = 0.0f;
  int stopped = 0, early = 0, best_saved = 0;
  seqcl_train_event e;
  memset(&e, 0, sizeof e);
  for (int step = start; step < o->steps && !stopped && !early; step++) {
    const int rows = sq_batcher_next(&R->sh, R->idx);
    if (rows < 1) return sq_fail(ctx, SEQCL_ERR_OUT_OF_MEMORY, "train: out of host memory");
    int Sb, Tb;
    order_by_target(&R->train, R->idx, rows);
    batch_shape(&R->train, R->idx, rows, &Sb, &Tb);
    fill_batch(&R->train, R->idx, rows, Sb, Tb, R->src, R->lens, R->tgt);
    SQ_TRY(sq_graph_set_batch_shape(g, rows, Sb, Tb, R->src, R->lens, R->tgt));
    SQ_TRY(sq_graph_set_dropout(g, R->dropout, R->seed, (uint64_t)step));
    SQ_TRY(sq_fill(ctx, grads, total, 0.0f));
    SQ_TRY(sq_graph_forward(g, &loss));
    if (!isfinite(loss))
      return sq_fail(ctx, SEQCL_ERR_NON_FINITE, "train: the loss became %g at step %d",
                     (double)loss, step + 1);
    SQ_TRY(sq_graph_backward(g));
    if (R->clip > 0.0)
      SQ_TRY(sq_clip_grad_norm(ctx, total, grads, (float)R->clip, sq_at(R->scratch, 0), NULL));
    const double lr = sq_schedule_lr(&R->sched, step);
    R->adam.lr = (float)lr;
    SQ_TRY(sq_adam_step(ctx, &R->adam, params, grads));
    memset(&e, 0, sizeof e);
    e.step = step + 1, e.steps = o->steps, e.loss = loss, e.lr = lr, e.lines = rows;
    for (int r = 0; r < rows; r++) e.tokens += R->len_tgt[R->idx[r]];
    int last = step + 1 == o->steps;
    if (R->have_valid && (last || (o->valid_every && e.step % o->valid_every == 0))) {
      SQ_TRY(validate(R, &e));
      const int f = sq_schedule_validated(&R->sched, e.step, e.valid_loss,
                                          100.0 * e.valid_correct / (e.valid_count ? e.valid_count : 1),
                                          e.valid_ter);
      e.best = !!(f & SQ_SCHED_IMPROVED), e.decayed = !!(f & SQ_SCHED_DECAYED);
      e.stopping = !!(f & SQ_SCHED_STOP);
      early = e.stopping;
      if (e.best && o->keep_best) {
        /* the model folder holds the best validation's weights from now on */
        SQ_TRY(sq_read(ctx, params, R->host, sizeof(float) * total));
        SQ_TRY(sq_model_dir_save(ctx, &R->L, R->host, o->save_dir, &R->save, 1));
        R->save.replace = 0; /* the folder is this run's now */
        best_saved = 1;
      }
    }
    if (!last && !early && o->checkpoint_every && e.step % o->checkpoint_every == 0) {
      SQ_TRY(save_checkpoint(ctx, o, R));
      e.checkpointed = 1;
    }
    if (o->progress && o->progress(o->user, &e)) stopped = 1;
  }
  SQ_TRY(sq_finish(ctx));
  res->train_seconds = now_seconds() - t0;
  res->steps_done = (int)(R->adam.step - R->adam_offset);
  res->final_loss = loss;
  if (R->have_valid && !e.validated && !stopped) SQ_TRY(validate(R, &e));
  res->validated = e.validated;
  res->valid_loss = e.valid_loss;
  res->valid_ter = e.valid_ter;
  res->valid_correct = e.valid_correct, res->valid_count = e.valid_count;
  res->stopped_early = early;
  res->final_lr = sq_schedule_lr(&R->sched, res->steps_done);
  res->best_step = (int)R->sched.best_step;
  res->best_value = R->sched.metric == SQ_METRIC_EXACT ? -R->sched.best : R->sched.best;
  /* the final (or interrupted) state: checkpoint, then the model itself, unless
   * the model is the best validation's (saved when it was made; on a resume
   * that made no better one, the folder keeps the one it has) */
  SQ_TRY(save_checkpoint(ctx, o, R));
  const int keep = o->keep_best && R->sched.best_step > 0 && (best_saved || (m && model_in(o->save_dir)));
  if (!keep) SQ_TRY(sq_model_dir_save(ctx, &R->L, R->host, o->save_dir, &R->save, 1));
  res->kept_best = keep;
  snprintf(res->metric, sizeof res->metric, "%s", sq_metric_name(R->sched.metric));
  if (stopped)
    return sq_fail(ctx, SEQCL_ERR_CANCELLED,
                   "train: stopped after step %d of %d; the model is in %s and the checkpoint "
                   "in %s/checkpoint; continue with: seqcl train --resume %s",
                   res->steps_done, o->steps, o->save_dir, o->save_dir, o->save_dir);
  return SEQCL_OK;
}

seqcl_status seqcl_train_files(seqcl_ctx *ctx, const seqcl_train_files_options *o,
                               seqcl_train_files_result *out) {
  if (!ctx || !o || !out)
    return sq_fail(ctx, SEQCL_ERR_INVALID_ARGUMENT, "seqcl_train_files: NULL argument");
  memset(out, 0, sizeof *out);
  sq_files_run R;
  memset(&R, 0, sizeof R);
  seqcl_status st = train_files_run(ctx, o, &R, out);
  sq_graph_free(R.g);
  sq_adam_free(&R.adam);
  sq_buf_free(R.scratch);
  free_pair(&R.train);
  free_pair(&R.valid);
  sq_train_text_free(&R.text);
  sq_batcher_free(&R.sh);
  free(R.len_src);
  free(R.len_tgt);
  free(R.idx);
  free(R.src);
  free(R.host);
  free(R.ckdir);
  free(R.save_alloc);
  return st;
}

void seqcl_train_files_options_default(seqcl_train_files_options *o) {
  seqcl_train_files_options_init(o);
}
