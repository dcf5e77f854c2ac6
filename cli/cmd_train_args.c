/* seqcl train's options (cmd_train_args.h): the help text and the parser. */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "cli_model.h"
#include "cmd_train_args.h"

/* The name the messages give. */
static const char cmd[] = "train";

static void train_help(FILE *f) {
  fprintf(f,
          "usage: seqcl train --src FILE --tgt FILE --config config.json --save DIR\n"
          "                   [--init DIR] [--valid-src FILE --valid-tgt FILE] [--steps 1000]\n"
          "                   [--batch-size 64] [--lr 1e-3] [--clip 0] [--seed 0] [--dropout 0]\n"
          "                   [--checkpoint-every N] [--valid-every N] [--resume DIR]\n"
          "                   [--text chars|words|SRC,TGT [--src-vocab F] [--tgt-vocab F]]\n"
          "                   [--epochs E] [--bucket W] [--batch-tokens N] [--warmup N]\n"
          "                   [--lr-decay F [--decay-patience N] [--min-lr R]] [--patience N]\n"
          "                   [--keep-best loss|exact|ter] [--init-optimizer]\n"
          "                   [--overwrite] [--device SEL]\n"
          "       seqcl train --task reverse [--length 6]\n"
          "                   [--score additive|general|dot|scaled_dot|none]\n"
          "                   [--bidirectional] [--layers 1] [--output state|state_context]\n"
          "                   [--init zeros|bridge|final] [--dropout 0] [--steps 1200] [--batch-size 64]\n"
          "                   [--lr 1e-3] [--clip 0] [--seed 0] --save DIR [--overwrite] [--device SEL]\n"
          "       seqcl train --resume DIR [--steps N] [--device SEL]\n\n"
          "Trains a fresh attention GRU model on the digit-reversal task (sources: --length\n"
          "random digits; targets: BOS 10, the digits reversed, EOS 11) with Adam, then\n"
          "reports greedy exact-match accuracy on 256 held-out samples and saves a model\n"
          "directory that `seqcl decode` reads. --clip bounds the global gradient norm\n"
          "(0 = no clipping). dot and scaled_dot cannot be used with --bidirectional.\n"
          "--score none trains the fixed-context model without attention (the decoder\n"
          "reads the encoder's final state at every step; it has no alignments).\n"
          "--layers stacks encoder GRUs (1 to 4); --output state_context feeds [s_t; c_t] to\n"
          "the output layer. --dropout P drops, in training steps only, the embeddings,\n"
          "each encoder layer's output but the last and the output layer's input, with\n"
          "masks that are the same on every device for the same --seed.\n\n"
          "With --src/--tgt it trains the model of --config (or of --init DIR, starting\n"
          "from its weights) on your token files: targets are BOS ... EOS; batches come\n"
          "from a seeded shuffle (a new permutation each epoch); ragged lines are padded\n"
          "and masked. --valid-src/--valid-tgt report the teacher-forced loss and the\n"
          "greedy exact-match accuracy every --valid-every steps (default: checkpoint\n"
          "interval, else the end). DIR/checkpoint holds the model, Adam's state, the step\n"
          "and the shuffle position (written atomically every --checkpoint-every steps\n"
          "and at the end; --task reverse writes one at the end too).\n\n"
          "--text SPLIT reads the four files as text (chars: every UTF-8 character a\n"
          "token, a space the token <space>; words: whitespace-separated; SRC,TGT for two\n"
          "splits, chars,words for letters to phonemes); target lines hold the tokens\n"
          "only. The vocabularies are --src-vocab/--tgt-vocab, else those of --init DIR,\n"
          "else built from --src/--tgt (<unk> 0, <s> 1, </s> 2, then by falling count);\n"
          "a fresh model takes the vocabulary sizes and the bos, eos, pad and unknown ids\n"
          "from them (the --config's are replaced), one from --init must match them.\n"
          "Unknown tokens map to <unk> (counted on stderr). DIR gets src.vocab and\n"
          "tgt.vocab, so decode, forward and eval --text read them from there.\n\n"
          "Schedules: --epochs E trains E passes over the lines (instead of --steps).\n"
          "--bucket W draws length-bucketed batches: each epoch's shuffled lines are\n"
          "sorted by length within windows of W batches, cut into batches and the batches\n"
          "shuffled (seeded); --batch-tokens N caps a batch at N padded tokens (lines x\n"
          "(longest source + longest target)) and --batch-size lines (implies --bucket\n"
          "100). --warmup N raises the rate linearly over the first N steps. Validation\n"
          "reports loss, exact match and the token edit rate (ter); it is judged by the\n"
          "--keep-best metric (default loss): --lr-decay F multiplies the rate by F after\n"
          "--decay-patience (default 1) validations without improvement, down to\n"
          "--min-lr; --patience N stops after N such validations; --keep-best METRIC makes\n"
          "the saved model the best validation's (the checkpoint keeps the last state).\n"
          "On --resume, --lr sets a new rate; --init DIR --init-optimizer continues the\n"
          "Adam state of DIR's checkpoint. The checkpoint\n"
          "records the task, the files, the settings and the total --steps, so\n"
          "--resume DIR alone continues the run bit for bit (same device), saving into\n"
          "DIR; --steps N sets a new total. Options given again must agree with the\n"
          "checkpoint (an error names the difference). Ctrl-C stops after the current\n"
          "step, saves the model and the checkpoint, prints how to continue and exits\n"
          "with status 130. Training supports\n"
          "every score, init and output, and encoder.num_layers 1 to 4.\n\n"
          "--save DIR is checked before training starts: a new or empty folder, or an\n"
          "existing seqcl model folder only with --overwrite (it is then replaced whole:\n"
          "the new model and this run's checkpoint are all it holds) or when --resume\n"
          "names it (the model and checkpoint are then updated in place).\n");
}

/* The two rates that must stay below 1 (a bound a table cannot check); after
 * the flags, an argument that is not an option is a mistake of its own. */
static int more_option(void *user, int argc, char **argv, int *i) {
  train_args *a = user;
  const char *o = argv[*i];
  if (o[0] != '-' || o[1] != '-') return cli_usage_error(cmd, "unexpected argument '%s'", o);
  const char *v = cli_value(cmd, argc, argv, i);
  if (!v) return CLI_USAGE;
  if (!strcmp(o, "--dropout")) {
    if (cli_double(cmd, o, v, CLI_NON_NEGATIVE, &a->dropout)) return CLI_USAGE;
    if (!(a->dropout < 1)) return cli_usage_error(cmd, "--dropout: '%s' is not below 1", v);
    a->dropout_given = 1;
  } else if (!strcmp(o, "--lr-decay")) {
    if (cli_double(cmd, o, v, CLI_POSITIVE, &a->lr_decay)) return CLI_USAGE;
    if (!(a->lr_decay < 1)) return cli_usage_error(cmd, "--lr-decay: '%s' is not below 1", v);
    a->sched_given = 1;
  } else {
    return 0;
  }
  return CLI_TAKEN;
}

int train_parse(int argc, char **argv, train_args *a) {
  const cli_opt opts[] = {
      CLI_STR("--task", &a->task), CLI_STR("--score", &a->score), CLI_STR("--save", &a->save),
      CLI_STR("--device", &a->device), CLI_STR("--src", &a->src), CLI_STR("--tgt", &a->tgt),
      CLI_STR("--valid-src", &a->valid_src), CLI_STR("--valid-tgt", &a->valid_tgt),
      CLI_STR("--config", &a->config), CLI_STR("--init", &a->init),
      CLI_STR("--output", &a->output), CLI_STR("--resume", &a->resume),
      CLI_STR("--text", &a->text), CLI_STR("--src-vocab", &a->src_vocab),
      CLI_STR("--tgt-vocab", &a->tgt_vocab),
      CLI_NUM_SEEN("--length", &a->length, 1, 4096, &a->length_given),
      CLI_NUM_SEEN("--steps", &a->steps, 1, 1L << 30, &a->steps_given),
      CLI_NUM_SEEN("--batch-size", &a->batch, 1, 1L << 20, &a->batch_given),
      CLI_NUM_SEEN("--seed", &a->seed, 0, 0x7fffffffL, &a->seed_given),
      CLI_NUM("--checkpoint-every", &a->ckpt_every, 0, 1L << 30),
      CLI_NUM("--valid-every", &a->valid_every, 0, 1L << 30),
      CLI_NUM("--layers", &a->layers, 1, 4), CLI_STR("--keep-best", &a->keep_best),
      CLI_NUM_SEEN("--bucket", &a->bucket, 1, 1L << 30, &a->sched_given),
      CLI_NUM_SEEN("--batch-tokens", &a->batch_tokens, 1, 1L << 30, &a->sched_given),
      CLI_NUM_SEEN("--warmup", &a->warmup, 1, 1L << 30, &a->sched_given),
      CLI_NUM_SEEN("--decay-patience", &a->decay_patience, 1, 1L << 30, &a->sched_given),
      CLI_NUM_SEEN("--patience", &a->patience, 1, 1L << 30, &a->sched_given),
      CLI_FLAG("--bidirectional", &a->bidirectional), CLI_FLAG("--overwrite", &a->overwrite),
      CLI_FLAG("--init-optimizer", &a->init_optimizer),
      CLI_DBL_SEEN("--epochs", &a->epochs, CLI_POSITIVE, &a->sched_given),
      CLI_DBL_SEEN("--min-lr", &a->min_lr, CLI_POSITIVE, &a->sched_given),
      CLI_DBL_SEEN("--lr", &a->lr, CLI_POSITIVE, &a->lr_given),
      CLI_DBL_SEEN("--clip", &a->clip, CLI_NON_NEGATIVE, &a->clip_given), {0}};
  return cli_options(cmd, opts, train_help, 1, argc, argv, more_option, a);
}
