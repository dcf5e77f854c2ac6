/* Training checkpoints: a directory holding the model (config.json,
 * model.safetensors), Adam's moments (optimizer.safetensors: exp_avg.NAME and
 * exp_avg_sq.NAME, torch.optim.Adam's names) and training.json (step count,
 * hyperparameters, the shuffle generator's state and position, a fingerprint
 * of the training data, and what `--resume DIR` alone needs to go on: the
 * task, the data files, the total step count and the intervals). Written into a temporary folder beside the target and
 * renamed into place, so DIR/checkpoint is always a complete checkpoint. */
#ifndef SQ_TRAIN_CHECKPOINT_H
#define SQ_TRAIN_CHECKPOINT_H

#include <stdint.h>

#include "train/tmodel.h"

typedef struct sq_ckpt_meta {
  long step;                /* Adam steps done */
  int batch_size;
  double lr, clip;
  uint64_t seed;
  uint64_t epoch_rng[4];    /* shuffle generator before this epoch's permutation */
  long epoch, cursor;       /* epochs begun; lines of this epoch's permutation used */
  long train_lines;
  uint64_t data_hash;       /* FNV-1a of the training ids and line lengths */
  double dropout;           /* absent in older checkpoints: 0 */
  /* what the run was asked for (so that --resume DIR alone continues it) */
  char task[16];            /* "files" or "reverse" */
  long steps_total;         /* the --steps of the run */
  int checkpoint_every, valid_every;
  int length;               /* reverse: digits per line */
  char src[1024], tgt[1024], valid_src[1024], valid_tgt[1024]; /* files: absolute paths, "" = none */
  /* schedules (absent in older checkpoints: none). Settings: */
  int warmup, decay_patience, patience, bucket; /* bucket: batches per sorted window, 0 = plain */
  long batch_tokens;
  double lr_decay, min_lr;
  char metric[8];           /* "loss", "exact", "ter" */
  int keep_best;
  /* and state: */
  double lr_scale, best;    /* best: in lower-is-better form; +inf = none */
  long best_step;
  int since_best, since_decay;
  long adam_offset;         /* Adam's step count minus the run's (fine-tuning with the
                             * optimizer state of --init) */
  char text[16];            /* files read as text: "SRC,TGT" splits (chars/words); "" = ids.
                             * The vocabularies are then in the checkpoint folder */
} sq_ckpt_meta;

/* The absolute form of path (realpath, else path itself) into buf. */
void sq_ckpt_abspath(const char *path, char *buf, size_t cap);

/* Writes save_dir/checkpoint (replacing an older one). adam_mv holds m then v
 * (L->total floats each). */
seqcl_status sq_checkpoint_write(seqcl_ctx *ctx, const char *save_dir, const sq_tlayout *L,
                                 const float *params, const float *adam_mv,
                                 const sq_ckpt_meta *meta);
/* The checkpoint folder for --resume DIR: DIR/checkpoint when it holds
 * training.json, else DIR itself. *out is malloc'd. */
seqcl_status sq_checkpoint_locate(seqcl_ctx *ctx, const char *dir, char **out);
seqcl_status sq_checkpoint_read_meta(seqcl_ctx *ctx, const char *ckdir, sq_ckpt_meta *meta);
/* training.json from memory (path names it in messages): every field checked;
 * *meta zeroed on failure. And the text written for meta (malloc'd). */
seqcl_status sq_checkpoint_parse_meta(seqcl_ctx *ctx, const char *text, size_t len,
                                      const char *path, sq_ckpt_meta *meta);
seqcl_status sq_checkpoint_meta_to_json(seqcl_ctx *ctx, const sq_ckpt_meta *meta, char **out);
/* Reads the moments for layout L (every exp_avg / exp_avg_sq tensor present,
 * with the parameter's element count). */
seqcl_status sq_checkpoint_read_adam(seqcl_ctx *ctx, const char *ckdir, const sq_tlayout *L,
                                     float *adam_mv);
/* Fills params from a model.safetensors: every tensor of L present with L's
 * shape, no tensor L lacks (errors name the file and tensor). */
seqcl_status sq_tlayout_load(seqcl_ctx *ctx, const sq_tlayout *L, const char *path,
                             float *params);

#endif
