/* Training on the user's token files (SPEC §4 `seqcl train --src --tgt`):
 * ragged lines padded to each batch's longest in one graph sized for the
 * longest lines of the files, batches drawn
 * from a seeded per-epoch permutation, periodic validation (teacher-forced loss
 * and greedy exact match), checkpoints, resume and a clean stop. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <seqcl/train.h>

#include "core/fileio.h"
#include "core/hash.h"
#include "model/config.h"
#include "model/tokens.h"
#include "ops/ops.h"
#include "model/metrics.h"
#include "train/batches.h"
#include "train/checkpoint.h"
#include "train/optim.h"
#include "train/save_dir.h"
#include "train/schedule.h"
#include "train/text_data.h"
#include "train/tmodel.h"

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

typedef struct dataset {
  const char *src_name, *tgt_name;
  sq_seqs src, tgt;
} dataset;

/* tx: read as text through its vocabularies (unknown tokens counted into
 * unknown[side]); NULL: token ids. */
static seqcl_status load_pair(seqcl_ctx *ctx, const sq_config *c, const sq_train_text *tx,
                              const char *src_path, const char *tgt_path, dataset *d,
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

static void free_pair(dataset *d) {
  sq_seqs_free(&d->src);
  sq_seqs_free(&d->tgt);
}

static void longest(const dataset *d, int *S, int *T) {
  for (size_t i = 0; i < d->src.count; i++) {
    if ((int)sq_seq_len(&d->src, i) > *S) *S = (int)sq_seq_len(&d->src, i);
    if ((int)sq_seq_len(&d->tgt, i) - 1 > *T) *T = (int)sq_seq_len(&d->tgt, i) - 1;
  }
}

static uint64_t data_hash(const dataset *d) {
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
static void batch_shape(const dataset *d, const long *idx, int n, int *S, int *T) {
  *S = 1, *T = 1;
  for (int r = 0; r < n; r++) {
    size_t i = (size_t)idx[r];
    if ((int)sq_seq_len(&d->src, i) > *S) *S = (int)sq_seq_len(&d->src, i);
    if ((int)sq_seq_len(&d->tgt, i) - 1 > *T) *T = (int)sq_seq_len(&d->tgt, i) - 1;
  }
}

/* Pads lines idx[0..n) into src [n, S] (0 past the end), lens [n] and
 * tgt [n, T+1] (-1 past the end: ignored labels). */
static void fill_batch(const dataset *d, const long *idx, int n, int S, int T, int32_t *src,
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

typedef struct run {
  sq_config cfg;
  sq_tlayout L;
  dataset train, valid;
  int have_valid;
  sq_graph *g;
  sq_adam adam;
  sq_buf *scratch;
  sq_batcher sh;
  sq_schedule sched;
  int32_t *len_src, *len_tgt; /* per training line: source length, decoder steps */
  long *idx;
  int32_t *src, *lens, *tgt, *pred;
  float *host; /* params, then m and v */
  char *ckdir, *save_alloc;
  sq_ckpt_meta meta;
  sq_save_plan save;
  sq_train_text text;
  char text_spec[16]; /* "SRC,TGT" when training on text, else "" */
  int B, S, T;
  uint64_t seed, hash;
  double lr, clip, dropout;
  long adam_offset; /* Adam's step count minus the run's */
} run;

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

/* Resolves the hyperparameters: explicit values, else the checkpoint's, else
 * the defaults; on resume an explicit value must equal the checkpoint's. */
static seqcl_status settle_options(seqcl_ctx *ctx, const seqcl_train_files_options *o,
                                   const sq_ckpt_meta *m, run *R) {
  if (o->steps < 0) return sq_fail(ctx, SEQCL_ERR_INVALID_ARGUMENT, "train: --steps is negative");
  if (o->checkpoint_every < 0 || o->valid_every < 0)
    return sq_fail(ctx, SEQCL_ERR_INVALID_ARGUMENT, "train: negative interval");
  if (o->batch_size < 0 || o->batch_size > 1 << 20 || !(o->lr >= 0) || !isfinite(o->lr) ||
      !isfinite(o->clip))
    return sq_fail(ctx, SEQCL_ERR_INVALID_ARGUMENT, "train: bad --batch-size, --lr or --clip");
  if (!(o->dropout < 1.0))
    return sq_fail(ctx, SEQCL_ERR_INVALID_ARGUMENT, "train: --dropout %g is outside [0, 1)",
                   o->dropout);
  R->B = o->batch_size ? o->batch_size : m ? m->batch_size : 64;
  R->lr = o->lr > 0 ? o->lr : m ? m->lr : 1e-3;
  R->clip = o->clip >= 0 ? o->clip : m ? m->clip : 0.0;
  R->seed = o->seed >= 0 ? (uint64_t)o->seed : m ? m->seed : 0;
  R->dropout = o->dropout >= 0 ? o->dropout : m ? m->dropout : 0.0;
  if (m) {
    char given[64] = "", had[64] = "";
    const char *which = NULL;
    if (R->B != m->batch_size)
      which = "--batch-size", snprintf(given, 64, "%d", R->B), snprintf(had, 64, "%d", m->batch_size);
    else if (R->clip != m->clip)
      which = "--clip", snprintf(given, 64, "%g", R->clip), snprintf(had, 64, "%g", m->clip);
    else if (R->seed != m->seed)
      which = "--seed", snprintf(given, 64, "%llu", (unsigned long long)R->seed),
      snprintf(had, 64, "%llu", (unsigned long long)m->seed);
    else if (R->dropout != m->dropout)
      which = "--dropout", snprintf(given, 64, "%g", R->dropout), snprintf(had, 64, "%g", m->dropout);
    if (which)
      return sq_fail(ctx, SEQCL_ERR_INVALID_ARGUMENT,
                     "train: %s %s differs from the checkpoint's %s (a resumed run continues the "
                     "same run; leave %s out)",
                     which, given, had, which);
    if (o->epochs <= 0 && o->steps <= m->step) /* --epochs: checked once it is steps */
      return sq_fail(ctx, SEQCL_ERR_INVALID_ARGUMENT,
                     "train: --steps %d: the checkpoint has already done %ld steps; give a "
                     "larger --steps (the new total) to train on",
                     o->steps, m->step);
  }
  return SEQCL_OK;
}

static seqcl_status save_checkpoint(seqcl_ctx *ctx, const seqcl_train_files_options *o, run *R) {
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
static seqcl_status validate_into(run *R, seqcl_train_event *e, sq_metrics *mt) {
  const dataset *d = &R->valid;
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

static seqcl_status validate(run *R, seqcl_train_event *e) {
  sq_metrics mt;
  sq_metrics_init(&mt);
  seqcl_status st = validate_into(R, e, &mt);
  sq_metrics_free(&mt);
  return st;
}

/* One data file on resume: a given path must be the recorded one; an absent
 * one is taken from the checkpoint. */
static seqcl_status resume_path(seqcl_ctx *ctx, const char *opt, const char **given,
                                const char *recorded, const char *ckdir, int required) {
  if (*given) {
    char abs[1024];
    sq_ckpt_abspath(*given, abs, sizeof abs);
    if (recorded[0] && strcmp(abs, recorded))
      return sq_fail(ctx, SEQCL_ERR_INVALID_ARGUMENT,
                     "train: %s %s differs from the checkpoint's (%s in %s); leave %s out to "
                     "continue on the same data",
                     opt, *given, recorded, ckdir, opt);
    return SEQCL_OK;
  }
  if (recorded[0]) {
    *given = recorded;
    return SEQCL_OK;
  }
  if (required)
    return sq_fail(ctx, SEQCL_ERR_INVALID_ARGUMENT,
                   "train: the checkpoint in %s does not record its training files: give %s",
                   ckdir, opt);
  return SEQCL_OK;
}

/* --resume DIR alone: what was not given again comes from the checkpoint
 * (files, total steps, intervals; the save folder is the one holding it). */
static seqcl_status resume_options(seqcl_ctx *ctx, const seqcl_train_files_options *o,
                                   const sq_ckpt_meta *m, const char *ckdir,
                                   seqcl_train_files_options *eff, char **save_alloc) {
  *eff = *o;
  if (strcmp(m->task, "files"))
    return sq_fail(ctx, SEQCL_ERR_INVALID_ARGUMENT,
                   "train: the checkpoint in %s is of the %s task (seqcl train --resume %s "
                   "continues it)",
                   ckdir, m->task, o->resume_dir);
  SQ_TRY(resume_path(ctx, "--src", &eff->src_path, m->src, ckdir, 1));
  SQ_TRY(resume_path(ctx, "--tgt", &eff->tgt_path, m->tgt, ckdir, 1));
  if (!o->valid_src_path && !o->valid_tgt_path && m->valid_src[0] && m->valid_tgt[0]) {
    eff->valid_src_path = m->valid_src;
    eff->valid_tgt_path = m->valid_tgt;
  } else {
    SQ_TRY(resume_path(ctx, "--valid-src", &eff->valid_src_path, m->valid_src, ckdir, 0));
    SQ_TRY(resume_path(ctx, "--valid-tgt", &eff->valid_tgt_path, m->valid_tgt, ckdir, 0));
  }
  if (o->src_vocab_path || o->tgt_vocab_path)
    return sq_fail(ctx, SEQCL_ERR_INVALID_ARGUMENT,
                   "train: --src-vocab/--tgt-vocab: a resumed run keeps the checkpoint's "
                   "vocabularies (in %s); leave them out",
                   ckdir);
  if (!o->text && m->text[0]) eff->text = m->text;
  if (!eff->keep_best) eff->keep_best = m->keep_best;
  if (!eff->steps) eff->steps = m->steps_total ? (int)m->steps_total : 1000;
  if (!eff->checkpoint_every) eff->checkpoint_every = m->checkpoint_every;
  if (!eff->valid_every) eff->valid_every = m->valid_every;
  if (!eff->save_dir) {
    /* DIR/checkpoint: the model is DIR; a checkpoint folder given itself: its parent */
    size_t n = strlen(ckdir);
    int nested = n > 11 && !strcmp(ckdir + n - 11, "/checkpoint");
    *save_alloc = nested ? strndup(ckdir, n - 11) : strdup(o->resume_dir);
    if (*save_alloc && !nested) {
      char *slash = strrchr(*save_alloc, '/');
      if (slash && slash != *save_alloc) *slash = '\0';
      else snprintf(*save_alloc, strlen(*save_alloc) + 1, "%s", slash ? "/" : ".");
    }
    if (!*save_alloc) return sq_fail(ctx, SEQCL_ERR_OUT_OF_MEMORY, "train: out of host memory");
    eff->save_dir = *save_alloc;
  }
  return SEQCL_OK;
}

/* --text: the splits (on resume the checkpoint's; one given again must agree),
 * the vocabularies and the config keys that follow from them. */
static seqcl_status settle_text(seqcl_ctx *ctx, const seqcl_train_files_options *o,
                                const sq_ckpt_meta *m, run *R, seqcl_train_files_result *res) {
  if (!o->text) {
    if (o->src_vocab_path || o->tgt_vocab_path)
      return sq_fail(ctx, SEQCL_ERR_INVALID_ARGUMENT,
                     "train: --src-vocab/--tgt-vocab read the files as text: give --text too");
    if (m && m->text[0])
      return sq_fail(ctx, SEQCL_ERR_INVALID_ARGUMENT, "train: the checkpoint was trained on text");
    return SEQCL_OK;
  }
  sq_train_text *t = &R->text;
  if (sq_text_split_parse(o->text, t->split))
    return sq_fail(ctx, SEQCL_ERR_INVALID_ARGUMENT,
                   "train: --text '%s' is not chars, words or SRC,TGT of those", o->text);
  snprintf(R->text_spec, sizeof R->text_spec, "%s,%s",
           t->split[0] == SQ_SPLIT_CHARS ? "chars" : "words",
           t->split[1] == SQ_SPLIT_CHARS ? "chars" : "words");
  if (m && strcmp(R->text_spec, m->text[0] ? m->text : "(token ids)"))
    return sq_fail(ctx, SEQCL_ERR_INVALID_ARGUMENT,
                   "train: --text %s differs from the checkpoint's %s (leave it out)", o->text,
                   m->text[0] ? m->text : "token ids");
  const char *given[2] = {o->src_vocab_path, o->tgt_vocab_path};
  const char *train[2] = {o->src_path, o->tgt_path};
  const char *from = m ? R->ckdir : o->init_dir;
  SQ_TRY(sq_train_text_vocabs(ctx, t, given, from, train));
  SQ_TRY(sq_train_text_config(ctx, t, &R->cfg, m || o->init_dir,
                              m ? R->ckdir : o->init_dir ? o->init_dir : o->config_path));
  for (int k = 0; k < 2; k++)
    res->vocab_size[k] = (int)t->vocab[k]->count, res->vocab_built[k] = t->built[k];
  return SEQCL_OK;
}

/* The schedule and the batch stream's settings: given, else (resume) the
 * checkpoint's, else the defaults; the stream's settings cannot change on
 * resume (the batches would), the rate can (the decays start again from it). */
static seqcl_status settle_schedule(seqcl_ctx *ctx, const seqcl_train_files_options *o,
                                    const sq_ckpt_meta *m, run *R) {
  if (o->warmup < 0 || o->decay_patience < 0 || o->patience < 0 || o->batch_tokens < 0 ||
      !(o->lr_decay >= 0 && o->lr_decay < 1) || !(o->min_lr >= 0) || !(o->epochs >= 0) ||
      !isfinite(o->epochs))
    return sq_fail(ctx, SEQCL_ERR_INVALID_ARGUMENT,
                   "train: bad schedule (--warmup, --lr-decay in [0, 1), --decay-patience, "
                   "--min-lr, --patience, --batch-tokens, --epochs)");
  sq_schedule *sc = &R->sched;
  sc->lr = R->lr;
  sc->warmup = o->warmup ? o->warmup : m ? m->warmup : 0;
  sc->decay = o->lr_decay > 0 ? o->lr_decay : m ? m->lr_decay : 0.0;
  sc->decay_patience = o->decay_patience ? o->decay_patience : m ? m->decay_patience : 1;
  sc->min_lr = o->min_lr > 0 ? o->min_lr : m ? m->min_lr : 0.0;
  sc->patience = o->patience ? o->patience : m ? m->patience : 0;
  const char *metric = o->metric ? o->metric : m ? m->metric : "loss";
  if (sq_metric_parse(metric, &sc->metric))
    return sq_fail(ctx, SEQCL_ERR_INVALID_ARGUMENT,
                   "train: unknown validation metric '%s' (loss, exact or ter)", metric);
  if ((o->keep_best || sc->patience || sc->decay > 0) && !R->have_valid)
    return sq_fail(ctx, SEQCL_ERR_INVALID_ARGUMENT,
                   "train: --keep-best, --patience and --lr-decay judge validations: give "
                   "--valid-src and --valid-tgt");
  sq_schedule_start(sc);
  if (m) {
    if (o->metric && strcmp(o->metric, m->metric))
      return sq_fail(ctx, SEQCL_ERR_INVALID_ARGUMENT,
                     "train: metric %s differs from the checkpoint's %s (its best would not "
                     "compare; leave it out)", o->metric, m->metric);
    sc->best = m->best, sc->best_step = m->best_step;
    sc->since_best = m->since_best, sc->since_decay = m->since_decay;
    /* a new --lr on resume is the rate from now on */
    sc->scale = R->lr == m->lr ? m->lr_scale : 1.0;
  }
  /* the batch stream */
  sq_batcher *b = &R->sh;
  const long lines = (long)R->train.src.count;
  b->n = lines, b->B = R->B;
  b->window = o->bucket > 0 ? o->bucket : o->bucket < 0 ? 0 : m ? m->bucket : o->batch_tokens > 0 ? 100 : 0;
  b->tokens = o->batch_tokens ? o->batch_tokens : m ? m->batch_tokens : 0;
  if (m && (b->window != m->bucket || b->tokens != m->batch_tokens))
    return sq_fail(ctx, SEQCL_ERR_INVALID_ARGUMENT,
                   "train: --bucket %d / --batch-tokens %ld differ from the checkpoint's %d / %ld "
                   "(the batches would change; leave them out)",
                   b->window, b->tokens, m->bucket, m->batch_tokens);
  if (b->tokens && !b->window)
    return sq_fail(ctx, SEQCL_ERR_INVALID_ARGUMENT, "train: --batch-tokens needs bucketed batches");
  R->len_src = malloc(sizeof(int32_t) * (size_t)lines);
  R->len_tgt = malloc(sizeof(int32_t) * (size_t)lines);
  if (!R->len_src || !R->len_tgt)
    return sq_fail(ctx, SEQCL_ERR_OUT_OF_MEMORY, "train: out of host memory");
  for (long i = 0; i < lines; i++) {
    R->len_src[i] = (int32_t)sq_seq_len(&R->train.src, (size_t)i);
    R->len_tgt[i] = (int32_t)sq_seq_len(&R->train.tgt, (size_t)i) - 1;
  }
  b->src_len = R->len_src, b->tgt_len = R->len_tgt;
  return SEQCL_OK;
}

/* --init DIR with its optimizer: Adam's moments and step count from
 * DIR/checkpoint, so that fine-tuning continues Adam as one run would. */
static seqcl_status init_adam(seqcl_ctx *ctx, const char *dir, run *R) {
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
                                    run *R, seqcl_train_files_result *res) {
  seqcl_train_files_options eff = *given;
  const seqcl_train_files_options *o = &eff;
  if (given->resume_dir) {
    if (given->config_path || given->init_dir)
      return sq_fail(ctx, SEQCL_ERR_INVALID_ARGUMENT,
                     "train: --resume takes the model from the checkpoint; leave out --config "
                     "and --init");
    SQ_TRY(sq_checkpoint_locate(ctx, given->resume_dir, &R->ckdir));
    SQ_TRY(sq_checkpoint_read_meta(ctx, R->ckdir, &R->meta));
    SQ_TRY(resume_options(ctx, given, &R->meta, R->ckdir, &eff, &R->save_alloc));
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
  SQ_TRY(settle_options(ctx, o, m, R));
  SQ_TRY(settle_text(ctx, o, m, R, res));
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

  SQ_TRY(settle_schedule(ctx, o, m, R));
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
  run R;
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
