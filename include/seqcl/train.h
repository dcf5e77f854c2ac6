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
  const char *score;  /* "additive" (default), "general", "dot", "scaled_dot" */
  int bidirectional;  /* encoder direction count 2 (dot/scaled_dot refuse it) */
  int steps;          /* Adam steps (default 1200) */
  int batch_size;     /* default 64 */
  double lr;          /* default 1e-3 */
  double clip;        /* global gradient-norm bound; 0 = none (default) */
  unsigned long long seed; /* weights and data (default 0) */
  const char *save_dir;    /* model directory to write; NULL = do not save */
  /* Called after every step (may be NULL); returning nonzero cancels the run
   * with SEQCL_ERR_CANCELLED. */
  int (*progress)(void *user, int step, int steps, float loss);
  void *user;
} seqcl_train_options;

typedef struct seqcl_train_result {
  float final_loss;  /* the loss of the last training batch */
  int correct, evaluated; /* exact-match greedy accuracy on held-out samples */
  double train_seconds;
} seqcl_train_result;

/* The defaults above. */
void seqcl_train_options_default(seqcl_train_options *o);

/* Trains a fresh model on the reversal task on ctx's device, evaluates greedy
 * exact-match accuracy on 256 held-out samples and, when save_dir is set,
 * writes config.json + model.safetensors there. Bad options are
 * SEQCL_ERR_INVALID_ARGUMENT; a non-finite loss is SEQCL_ERR_NON_FINITE. */
seqcl_status seqcl_train_reverse(seqcl_ctx *ctx, const seqcl_train_options *o,
                                 seqcl_train_result *out);

#ifdef __cplusplus
}
#endif
#endif
