/* The --save DIR rules, decided before any training so that a run that could
 * not save fails in its first second rather than after its last step:
 *   - a missing folder (its parent must exist and be writable) or an empty one
 *     is written into;
 *   - an existing seqcl model folder (config.json, model.safetensors,
 *     checkpoint/, src.vocab, tgt.vocab and nothing else) only with overwrite,
 *     or when resume_dir names it (DIR or DIR/checkpoint);
 *   - anything else (a file, a folder holding other files) is refused.
 * With overwrite the folder is replaced whole at the end: the new model and the
 * checkpoint this run wrote are all it holds afterwards (nothing of the old
 * model stays, an old checkpoint included). Resuming into the same folder
 * without overwrite updates the model files and the checkpoint in place. */
#ifndef SQ_TRAIN_SAVE_DIR_H
#define SQ_TRAIN_SAVE_DIR_H

#include <seqcl/seqcl.h>

typedef struct sq_save_plan {
  int replace; /* 1: build the folder anew next to it and swap it in */
} sq_save_plan;

/* Applies the rules above; SEQCL_ERR_IO naming the folder and the reason. */
seqcl_status sq_save_dir_check(seqcl_ctx *ctx, const char *dir, int overwrite,
                               const char *resume_dir, sq_save_plan *plan);

/* The final save of a run: with plan->replace, or when dir does not exist
 * yet, the model is written into a new folder next to dir and swapped in (with
 * keep_checkpoint, dir/checkpoint is carried over into it); otherwise the two
 * model files are replaced in place, one atomic rename each. */
typedef struct sq_tlayout sq_tlayout;
seqcl_status sq_model_dir_save(seqcl_ctx *ctx, const sq_tlayout *L, const float *params,
                               const char *dir, const sq_save_plan *plan, int keep_checkpoint);

#endif
