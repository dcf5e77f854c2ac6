/* Training on token files, the settings of a run (train_files.c runs it):
 * the hyperparameters, what --resume takes from the checkpoint, --text, and
 * the schedule with the batch stream. Each option is given, else (resume) the
 * checkpoint's, else its default; a resumed run may not change what would
 * change its batches or its history, and each refusal names the option. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "train/files_run.h"

/* Resolves the hyperparameters: explicit values, else the checkpoint's, else
 * the defaults; on resume an explicit value must equal the checkpoint's. */
seqcl_status sq_files_settle_options(seqcl_ctx *ctx, const seqcl_train_files_options *o,
                                     const sq_ckpt_meta *m, sq_files_run *R) {
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
seqcl_status sq_files_resume_options(seqcl_ctx *ctx, const seqcl_train_files_options *o,
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
seqcl_status sq_files_settle_text(seqcl_ctx *ctx, const seqcl_train_files_options *o,
                                  const sq_ckpt_meta *m, sq_files_run *R,
                                  seqcl_train_files_result *res) {
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
seqcl_status sq_files_settle_schedule(seqcl_ctx *ctx, const seqcl_train_files_options *o,
                                      const sq_ckpt_meta *m, sq_files_run *R) {
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
