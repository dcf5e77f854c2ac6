/* seqcl train's options: every option of both forms (the reversal task and
 * training on token files), parsed and checked alone. */
#ifndef SEQCL_CLI_CMD_TRAIN_ARGS_H
#define SEQCL_CLI_CMD_TRAIN_ARGS_H

/* Every option of both forms, with what was given. */
typedef struct train_args {
  const char *task, *score, *save, *device;
  const char *src, *tgt, *valid_src, *valid_tgt, *config, *resume;
  const char *init;   /* --task reverse: zeros|bridge|final; files: the model folder to start from */
  const char *output; /* --task reverse: state|state_context */
  const char *text, *src_vocab, *tgt_vocab;
  long length, steps, batch, seed, ckpt_every, valid_every, layers;
  long bucket, batch_tokens, warmup, decay_patience, patience;
  double lr, clip, dropout, epochs, lr_decay, min_lr;
  const char *keep_best;
  int init_optimizer, sched_given;
  int bidirectional, overwrite, length_given, batch_given, seed_given, lr_given, clip_given,
      steps_given, dropout_given;
} train_args;

/* Parses argv into a (zeroed by the caller): 0, -1 after printing the help,
 * or an exit status after a usage error. */
int train_parse(int argc, char **argv, train_args *a);

#endif
