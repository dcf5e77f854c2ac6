/* The state of one run of seqcl_train_files, shared by train_files.c (the
 * data, the loop, validation, checkpoints) and train_files_settle.c (the
 * settings the run starts from). */
#ifndef SQ_TRAIN_FILES_RUN_H
#define SQ_TRAIN_FILES_RUN_H

#include <stdint.h>

#include <seqcl/train.h>

#include "model/config.h"
#include "model/tokens.h"
#include "train/batches.h"
#include "train/checkpoint.h"
#include "train/optim.h"
#include "train/save_dir.h"
#include "train/schedule.h"
#include "train/text_data.h"
#include "train/tmodel.h"

/* A source file and its target file, line for line. */
typedef struct sq_files_data {
  const char *src_name, *tgt_name;
  sq_seqs src, tgt;
} sq_files_data;

/* Everything a run holds; seqcl_train_files frees it, also after a failure. */
typedef struct sq_files_run {
  sq_config cfg;
  sq_tlayout L;
  sq_files_data train, valid;
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
} sq_files_run;

/* The hyperparameters (batch size, rate, clipping, seed, dropout) into R. */
seqcl_status sq_files_settle_options(seqcl_ctx *ctx, const seqcl_train_files_options *o,
                                     const sq_ckpt_meta *m, sq_files_run *R);
/* --resume DIR: o completed from the checkpoint m in ckdir into eff; the save
 * folder, when derived, is malloc'd into *save_alloc. */
seqcl_status sq_files_resume_options(seqcl_ctx *ctx, const seqcl_train_files_options *o,
                                     const sq_ckpt_meta *m, const char *ckdir,
                                     seqcl_train_files_options *eff, char **save_alloc);
/* --text: splits, vocabularies and the config keys they fix (res gets the
 * vocabulary sizes). */
seqcl_status sq_files_settle_text(seqcl_ctx *ctx, const seqcl_train_files_options *o,
                                  const sq_ckpt_meta *m, sq_files_run *R,
                                  seqcl_train_files_result *res);
/* The learning-rate schedule and the batch stream (after the data is read). */
seqcl_status sq_files_settle_schedule(seqcl_ctx *ctx, const seqcl_train_files_options *o,
                                      const sq_ckpt_meta *m, sq_files_run *R);

#endif
