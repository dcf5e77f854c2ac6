/* Training on the synthetic digit-reversal task (SPEC §4 `seqcl train`).
 * Include <seqcl/seqcl.h>. */
#ifndef SEQCL_TRAIN_H
#define SEQCL_TRAIN_H

#include "device.h"
#include "status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct seqcl_train_options {
  int length;         /* digits per source line (default 6) */
  const char *score;  /* "additive" (default), "general", "dot", "scaled_dot", "none" */
  int bidirectional;  /* encoder direction count 2 (dot/scaled_dot refuse it) */
  int steps;          /* Adam steps, the total (default 1200; on resume 0 = the checkpoint's) */
  int batch_size;     /* default 64 */
  double lr;          /* default 1e-3 */
  double clip;        /* global gradient-norm bound; 0 = none (default) */
  unsigned long long seed; /* weights and data (default 0) */
  const char *save_dir;    /* model directory to write; NULL = do not save */
  /* Called after every step (may be NULL); returning nonzero cancels the run
   * with SEQCL_ERR_CANCELLED. */
  int (*progress)(void *user, int step, int steps, float loss);
  void *user;
  /* save_dir may be an existing seqcl model folder, replaced whole at the end
   * (0 = refused). A missing or empty folder is always accepted; anything else
   * never. Checked before training starts. */
  int overwrite;
  int num_layers;     /* encoder layers 1..4 (default 1) */
  const char *output; /* "state" (default) or "state_context" */
  const char *init;   /* decoder init "zeros" (default) or "bridge" */
  double dropout;     /* in [0, 1): embeddings, between encoder layers and the
                       * output layer's input, training steps only (default 0) */
  /* Continue the checkpoint in DIR/checkpoint (or DIR): the config, the
   * hyperparameters and the data stream come from it; only steps and save_dir
   * are read from these options. */
  const char *resume_dir;
} seqcl_train_options;

typedef struct seqcl_train_result {
  float final_loss;  /* the loss of the last training batch */
  int start_step, steps_done; /* 0 or the checkpoint's step; the step count at the end */
  int correct, evaluated; /* exact-match greedy accuracy on held-out samples */
  double train_seconds;
} seqcl_train_result;

/* The defaults above. Every options struct of the API is filled the same
 * way: seqcl_X_options_init. */
void seqcl_train_options_init(seqcl_train_options *o);
/* The earlier spelling of seqcl_train_options_init, kept for callers of 0.1. */
void seqcl_train_options_default(seqcl_train_options *o);

/* Trains a fresh model on the reversal task on ctx's device, evaluates greedy
 * exact-match accuracy on 256 held-out samples and, when save_dir is set,
 * writes config.json + model.safetensors there with a checkpoint in
 * save_dir/checkpoint (also when the progress callback stops the run, which
 * then returns SEQCL_ERR_CANCELLED after saving). Bad options are
 * SEQCL_ERR_INVALID_ARGUMENT; a save_dir that could not be written
 * (see overwrite) is SEQCL_ERR_IO before any step runs; a non-finite loss is
 * SEQCL_ERR_NON_FINITE. */
seqcl_status seqcl_train_reverse(seqcl_ctx *ctx, const seqcl_train_options *o,
                                 seqcl_train_result *out);

/* ---- training on the user's own token files ---- */

/* What the progress callback of seqcl_train_files sees after each step. */
typedef struct seqcl_train_event {
  int step, steps;      /* steps done (counting those before a resume), total */
  float loss;           /* this step's training batch loss */
  int validated;        /* 1 when validation ran after this step: */
  double valid_loss;    /*   teacher-forced mean cross-entropy over every label */
  int valid_correct, valid_count; /* greedy exact-match lines */
  int checkpointed;     /* 1 when a checkpoint was written after this step */
  /* (seqcl_train_files only:) */
  double lr;            /* the rate this step used */
  int lines, tokens;    /* this batch: lines, and label tokens (target tokens after BOS) */
  double valid_ter;     /*   validation: token edit rate, percent (edits / reference tokens) */
  int best;             /*   1: the best validation so far (saved, with keep_best) */
  int decayed;          /*   1: the rate decayed after it */
  int stopping;         /*   1: patience ran out: the run stops after this step */
} seqcl_train_event;

typedef struct seqcl_train_files_options {
  const char *src_path, *tgt_path;  /* token files (SPEC §4); targets BOS ... EOS */
  const char *valid_src_path, *valid_tgt_path; /* optional held-out pair */
  const char *config_path; /* config.json of the model to train; may be NULL with
                            * init_dir (its config) or resume_dir (the checkpoint's) */
  const char *init_dir;    /* start from this model directory's weights (optional) */
  const char *resume_dir;  /* continue the checkpoint in DIR/checkpoint or DIR; the files,
                            * steps and intervals not given come from it (paths given must
                            * be the recorded ones) */
  const char *save_dir;    /* the model is written here, checkpoints in save_dir/checkpoint;
                            * required unless resuming (then: the checkpoint's model folder) */
  int steps;               /* total steps, those before a resume included; 0 = 1000, or on
                            * resume the checkpoint's total */
  /* 0 / negative = the default (64, 1e-3, no clipping, 0), or on resume the
   * checkpoint's value; on resume an explicit value must equal the checkpoint's,
   * except lr: a new rate on resume is the base rate from then on. */
  int batch_size;
  double lr;
  double clip;             /* < 0: unset; 0: no clipping */
  long long seed;          /* < 0: unset. Seeds the weights and the shuffle */
  int checkpoint_every;    /* 0: a checkpoint only at the end (and on cancel) */
  int valid_every;         /* 0: validate only at the end */
  /* Called after every step (may be NULL). Returning nonzero stops the run:
   * the checkpoint and the model are saved, then SEQCL_ERR_CANCELLED returns. */
  int (*progress)(void *user, const seqcl_train_event *e);
  void *user;
  /* save_dir may be an existing seqcl model folder, replaced whole at the end
   * (only this run's checkpoint is kept in it). Without it such a folder is
   * accepted only when resume_dir names it (then updated in place). A missing
   * or empty folder is always accepted; anything else never. Checked before
   * any data is read. */
  int overwrite;
  /* Dropout probability in [0, 1) (< 0: unset, i.e. 0 or the checkpoint's),
   * applied as PyTorch users place it: on both embeddings, on each encoder
   * layer's output but the last (nn.GRU's dropout=) and on the output layer's
   * input; inverted (kept values scaled by 1/(1-p)); off in validation and
   * decoding. The masks come from Philox4x32-10 keyed by (seed, step, tensor,
   * element), so every device draws the same masks. */
  double dropout;
  /* Read the four files as text instead of token ids: "chars" (every UTF-8
   * character a token, a space the token <space>), "words" (whitespace-
   * separated), or "SRC,TGT" of those ("chars,words": letters in, phonemes
   * out); NULL = ids (or on resume what the checkpoint was trained on). Target
   * lines hold the tokens only (BOS and EOS are added). The vocabularies are
   * src_vocab_path / tgt_vocab_path when set, else init_dir's src.vocab /
   * tgt.vocab with init_dir, else (resume) the checkpoint's, else built from
   * the training files (<unk> 0, <s> 1, </s> 2, then by falling count). A
   * model that starts fresh takes its vocabulary sizes, bos_id, eos_id, pad_id
   * and unknown ids from them (the config's are replaced); one whose weights
   * are loaded must match them. Unknown tokens map to <unk> (counted in the
   * result) or are an error naming the file, line and token. The model folder
   * and the checkpoint then hold src.vocab and tgt.vocab. */
  const char *text;
  const char *src_vocab_path, *tgt_vocab_path;
  /* ---- schedules. 0 = unset (on resume: the checkpoint's) ---- */
  double epochs;           /* > 0: passes over the training lines, instead of steps */
  int bucket;              /* > 0: length-bucketed batches, sorted within windows of this many
                            * batches, the batches shuffled (seeded); < 0: off */
  long batch_tokens;       /* > 0: bucketed batches of at most this many padded tokens
                            * (lines x (longest source + longest target)), at most
                            * batch_size lines (implies bucket 100 when bucket is unset) */
  int warmup;              /* > 0: linear warm-up of the rate over this many steps */
  double lr_decay;         /* in (0, 1): the rate is multiplied by it when the validation
                            * metric has not improved for decay_patience validations */
  int decay_patience;      /* default 1 */
  double min_lr;           /* decays stop at this rate (default 0) */
  int patience;            /* > 0: stop after this many validations without improvement */
  const char *metric;      /* what validation is judged by: "loss" (default), "exact" (exact
                            * match, higher is better) or "ter"; with keep_best, the metric */
  int keep_best;           /* 1: the saved model is the best validation's (by metric); the
                            * checkpoint keeps the last state */
  int init_optimizer;      /* 1 with init_dir: continue Adam's moments and step count from
                            * init_dir's checkpoint (fine-tuning as one run) */
} seqcl_train_files_options;

typedef struct seqcl_train_files_result {
  int steps_done;          /* the step count at the end (after a resume: total) */
  int start_step;          /* 0, or the checkpoint's step when resumed */
  float final_loss;        /* last training batch loss */
  int validated;
  double valid_loss;
  int valid_correct, valid_count;
  double train_seconds;
  int train_lines, max_src_len, max_tgt_len;
  char save_dir[1024];     /* where the model and the checkpoint went */
  /* text: unknown tokens mapped to <unk> in the source and target files (the
   * validation pair included), the vocabulary sizes, and which were built */
  size_t unknown[2];
  int vocab_size[2], vocab_built[2];
  double valid_ter;        /* the last validation's token edit rate (percent) */
  int best_step;           /* the best validation's step (0: none); with keep_best the model */
  double best_value;       /*   its metric value (loss, exact % or ter %) */
  int stopped_early;       /* 1: patience ran out */
  int kept_best;           /* 1: the saved model is the best validation's (keep_best) */
  char metric[8];          /* the validation metric: loss, exact or ter */
  double final_lr;
} seqcl_train_files_result;

void seqcl_train_files_options_init(seqcl_train_files_options *o);
/* The earlier spelling of seqcl_train_files_options_init. */
void seqcl_train_files_options_default(seqcl_train_files_options *o);

/* Trains on token files with Adam over batches drawn by a seeded shuffle
 * (a new permutation each epoch); ragged lines are padded and masked. Every
 * score, init and output trains, with encoder.num_layers 1..4
 * (SEQCL_ERR_INVALID_ARGUMENT naming the key otherwise). Checkpoints (model, Adam moments,
 * step, shuffle state) are written atomically to save_dir/checkpoint; a resumed
 * run continues bit for bit on the same device. Bad files are
 * SEQCL_ERR_BAD_TOKENS / SEQCL_ERR_BAD_MODEL / SEQCL_ERR_IO naming file and line. */
seqcl_status seqcl_train_files(seqcl_ctx *ctx, const seqcl_train_files_options *o,
                               seqcl_train_files_result *out);

#ifdef __cplusplus
}
#endif
#endif
