/* seqcl train: the synthetic digit-reversal task (SPEC §4). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "model/config.h" /* the score names (sq_score_parse) */
#include "cli_model.h"
#include "cli_progress.h"
#include "train/checkpoint.h"
#include "train/save_dir.h"

#include <seqcl/train.h>

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

typedef struct progress_state {
  int tty, first; /* first: the step the run started from (after a resume) */
  double t0, last;
  int every;
} progress_state;

/* A bar redrawn at most ten times a second on a terminal; plain lines at
 * every tenth of the run otherwise (logs, pipes). The rate counts the steps of
 * this process only, from the resumed step on. */
static int on_progress(void *user, int step, int steps, float loss) {
  progress_state *p = user;
  if (cli_interrupted()) return 1;
  double t = cli_now();
  if (p->first < 0) p->first = step - 1;
  double rate = (step - p->first) / (t - p->t0 > 1e-9 ? t - p->t0 : 1e-9);
  if (cli_quiet) return 0;
  if (p->tty) {
    if (step != steps && t - p->last < 0.1) return 0;
    p->last = t;
    char bar[CLI_BAR_WIDTH + 1];
    cli_bar_cells(bar, step, steps);
    fprintf(stderr, "\r[%s] %d/%d  loss %.4f  %.0f steps/s", bar, step, steps, (double)loss,
            rate);
    if (step == steps) fputc('\n', stderr);
    fflush(stderr);
  } else if (step % p->every == 0 || step == steps) {
    fprintf(stderr, "step %d/%d loss %.4f %.0f steps/s\n", step, steps, (double)loss, rate);
  }
  return 0;
}

static void progress_init(progress_state *p, int steps) {
  memset(p, 0, sizeof *p);
  p->tty = isatty(fileno(stderr));
  p->first = -1;
  p->t0 = cli_now();
  p->every = steps >= 10 ? steps / 10 : 1;
}

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

/* The name the messages give. */
static const char cmd[] = "train";

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

static int parse(int argc, char **argv, train_args *a) {
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

/* 1 when SIGINT stopped the run (then reported, after the progress line). */
static int stopped_by_sigint(seqcl_status st) {
  if (!cli_stopped_by_sigint(st)) return 0;
  fputc('\n', stderr);
  cli_fail(cmd, st);
  return 1;
}

static int check_score(const char *score, int bidirectional) {
  sq_score kind;
  if (sq_score_parse(score, &kind))
    return cli_usage_error(cmd, "--score: unknown score '%s' (%s)", score, SQ_SCORE_CHOICES);
  if (bidirectional && (kind == SQ_SCORE_DOT || kind == SQ_SCORE_SCALED_DOT))
    return cli_usage_error(cmd,
                           "--score %s needs encoder width == decoder hidden; it cannot be "
                           "used with --bidirectional",
                           score);
  return CLI_OK;
}

static int train_files(const train_args *a);

/* On resume of the reversal task, a value given again must be the
 * checkpoint's: the run goes on as it was started. */
static int reverse_resume_agrees(const train_args *a, const sq_ckpt_meta *m, const sq_config *c) {
  const char *had = sq_score_names[c->score];
  if (a->length_given && a->length != m->length)
    return cli_usage_error(cmd, "--length %ld differs from the checkpoint's %d (leave it out)",
                           a->length, m->length);
  if (a->score && strcmp(a->score, had))
    return cli_usage_error(cmd, "--score %s differs from the checkpoint's %s (leave it out)",
                           a->score, had);
  if (a->bidirectional && !c->bidirectional)
    return cli_usage_error(cmd, "--bidirectional: the checkpoint's encoder is unidirectional");
  if (a->layers && a->layers != c->enc_layers)
    return cli_usage_error(cmd, "--layers %ld differs from the checkpoint's %d (leave it out)",
                           a->layers, c->enc_layers);
  if (a->output || a->init)
    return cli_usage_error(cmd, "--output and --init come from the checkpoint's config on "
                                "resume; leave them out");
  if (a->dropout_given && a->dropout != m->dropout)
    return cli_usage_error(cmd, "--dropout %g differs from the checkpoint's %g (leave it out)",
                           a->dropout, m->dropout);
  if (a->batch_given && a->batch != m->batch_size)
    return cli_usage_error(cmd, "--batch-size %ld differs from the checkpoint's %d (leave it out)",
                           a->batch, m->batch_size);
  if (a->lr_given && a->lr != m->lr)
    return cli_usage_error(cmd, "--lr %g differs from the checkpoint's %g (leave it out)", a->lr,
                           m->lr);
  if (a->clip_given && a->clip != m->clip)
    return cli_usage_error(cmd, "--clip %g differs from the checkpoint's %g (leave it out)",
                           a->clip, m->clip);
  if (a->seed_given && (unsigned long long)a->seed != m->seed)
    return cli_usage_error(cmd, "--seed %ld differs from the checkpoint's %llu (leave it out)",
                           a->seed, (unsigned long long)m->seed);
  return CLI_OK;
}

/* What --resume DIR continues: "files", "reverse", or NULL after an error. */
static const char *resume_task(const char *dir, sq_ckpt_meta *m, sq_config *c, int *rc) {
  char *ck = NULL;
  seqcl_status st = sq_checkpoint_locate(NULL, dir, &ck);
  if (st == SEQCL_OK) st = sq_checkpoint_read_meta(NULL, ck, m);
  /* the checkpoint's own config.json, read as a model folder's is */
  *rc = st == SEQCL_OK ? cli_read_config(cmd, ck, c) : cli_fail(cmd, st);
  free(ck);
  return *rc == CLI_OK ? m->task : NULL;
}

/* The work, once the options are parsed and checked. */
static int run(const train_args *a) {
  int rc = CLI_OK;
  sq_ckpt_meta meta;
  sq_config ckcfg;
  const char *resumed = NULL;
  if (a->resume && !(resumed = resume_task(a->resume, &meta, &ckcfg, &rc))) return rc;
  if (a->task && resumed && strcmp(resumed, "reverse"))
    return cli_usage_error(cmd, "--task %s: the checkpoint in %s is of a run on token files",
                           a->task, a->resume);
  if (a->src || (resumed && !strcmp(resumed, "files"))) {
    if (a->task) return cli_usage_error(cmd, "--task and --src exclude each other");
    return train_files(a);
  }
  if (a->text || a->src_vocab || a->tgt_vocab)
    return cli_usage_error(cmd, "--text, --src-vocab and --tgt-vocab read training files: "
                                "give --src and --tgt (the reversal task makes its own ids)");
  if (a->sched_given || a->keep_best || a->init_optimizer)
    return cli_usage_error(cmd, "the schedule options (--epochs, --bucket, --batch-tokens, "
                                "--warmup, --lr-decay, --patience, --keep-best, "
                                "--init-optimizer) are for training on files (--src/--tgt)");
  seqcl_train_options o;
  seqcl_train_options_init(&o);
  if (resumed) {
    if ((rc = reverse_resume_agrees(a, &meta, &ckcfg))) return rc;
    o.resume_dir = a->resume;
    o.steps = a->steps_given ? (int)a->steps : 0;
    o.save_dir = a->save ? a->save : a->resume;
  } else {
    if (!a->task) return cli_usage_error(cmd, "--task is required (the one task is 'reverse')");
    if (strcmp(a->task, "reverse"))
      return cli_usage_error(cmd, "--task: unknown task '%s' (the one task is 'reverse')", a->task);
    if (!a->save) return cli_usage_error(cmd, "--save DIR is required");
    if (a->score) o.score = a->score;
    if ((rc = check_score(o.score, a->bidirectional))) return rc;
    o.bidirectional = a->bidirectional;
    o.save_dir = a->save;
    if (a->length_given) o.length = (int)a->length;
    if (a->steps_given) o.steps = (int)a->steps;
    if (a->batch_given) o.batch_size = (int)a->batch;
    if (a->seed_given) o.seed = (unsigned long long)a->seed;
    if (a->lr_given) o.lr = a->lr;
    if (a->clip_given) o.clip = a->clip;
    if (a->layers) o.num_layers = (int)a->layers;
    if (a->output) o.output = a->output;
    if (a->init) o.init = a->init;
    if (a->dropout_given) o.dropout = a->dropout;
  }
  o.overwrite = a->overwrite;
  /* before a device is opened: a run that could not save fails in its first second */
  sq_save_plan plan;
  seqcl_status st = sq_save_dir_check(NULL, o.save_dir, o.overwrite, o.resume_dir, &plan);
  if (st != SEQCL_OK) return cli_fail(cmd, st);
  seqcl_ctx *ctx = NULL;
  if ((rc = cli_ctx_open(cmd, a->device, &ctx))) return rc;
  progress_state p;
  progress_init(&p, o.steps ? o.steps : (int)meta.steps_total);
  o.progress = on_progress;
  o.user = &p;
  seqcl_train_result r;
  double t0 = cli_now();
  cli_interrupt_install();
  st = seqcl_train_reverse(ctx, &o, &r);
  double total = cli_now() - t0;
  seqcl_ctx_close(ctx);
  if (stopped_by_sigint(st)) return CLI_INTERRUPTED;
  if (st != SEQCL_OK)
    return cli_fail_memory(cmd, st, " (batch %d, length %d: lower --batch-size)",
                           o.resume_dir ? (int)meta.batch_size : o.batch_size,
                           o.resume_dir ? meta.length : o.length);
  const int done = r.steps_done - r.start_step;
  printf("final loss %.4f\n", (double)r.final_loss);
  printf("greedy exact-match accuracy %.1f%% (%d/%d held-out samples)\n",
         100.0 * r.correct / (r.evaluated ? r.evaluated : 1), r.correct, r.evaluated);
  printf("trained steps %d..%d in %.2f s (%.1f steps/s); total %.2f s; saved %s (checkpoint in "
         "%s/checkpoint)\n",
         r.start_step, r.steps_done, r.train_seconds,
         r.train_seconds > 0 ? done / r.train_seconds : 0.0, total, o.save_dir, o.save_dir);
  return CLI_OK;
}

CLI_COMMAND(cmd_train, train_args, parse, run)

/* ---- training on token files ---- */

typedef struct files_progress {
  progress_state bar;
  double tokens; /* label tokens trained on by this process */
} files_progress;

/* A bar (terminal) or a line every tenth of the run: steps, loss, rate, label
 * tokens per second and the time left at this process's pace. */
static int on_files_progress(void *user, const seqcl_train_event *e) {
  files_progress *p = user;
  progress_state *b = &p->bar;
  if (cli_interrupted()) return 1;
  double t = cli_now();
  if (b->first < 0) { /* the total is known from the first step on (--epochs) */
    b->first = e->step - 1;
    b->every = e->steps >= 10 ? e->steps / 10 : 1;
  }
  p->tokens += e->tokens;
  const double dt = t - b->t0 > 1e-9 ? t - b->t0 : 1e-9, rate = (e->step - b->first) / dt;
  const double eta = rate > 0 ? (e->steps - e->step) / rate : 0;
  const int eta_min = (int)(eta / 60), eta_s = (int)eta % 60;
  if (!cli_quiet) {
    if (b->tty) {
      if (e->step == e->steps || t - b->last >= 0.1 || e->validated) {
        b->last = t;
        fprintf(stderr, "\r%d/%d  loss %.4f  lr %.3g  %.1f steps/s  %.0f tokens/s  ETA %d:%02d ",
                e->step, e->steps, (double)e->loss, e->lr, rate, p->tokens / dt, eta_min, eta_s);
        if (e->step == e->steps) fputc('\n', stderr);
        fflush(stderr);
      }
    } else if (e->step % b->every == 0 || e->step == e->steps) {
      fprintf(stderr, "step %d/%d loss %.4f lr %.3g %.1f steps/s %.0f tokens/s ETA %d:%02d\n",
              e->step, e->steps, (double)e->loss, e->lr, rate, p->tokens / dt, eta_min, eta_s);
    }
  }
  if (e->validated || e->checkpointed) {
    if (b->tty && !cli_quiet) fputc('\n', stderr);
    if (e->validated)
      fprintf(stderr,
              "step %d: validation loss %.4f, exact match %.2f%% (%d/%d), ter %.2f%%%s%s%s%s\n",
              e->step, e->valid_loss, 100.0 * e->valid_correct / (e->valid_count ? e->valid_count : 1),
              e->valid_correct, e->valid_count, e->valid_ter, e->best ? ", best so far" : "",
              e->decayed ? ", rate decayed" : "", e->stopping ? ", patience ran out: stopping" : "",
              e->checkpointed ? ", checkpoint saved" : "");
    else
      fprintf(stderr, "step %d: checkpoint saved\n", e->step);
  }
  return 0;
}

static int train_files(const train_args *a) {
  seqcl_train_files_options o;
  seqcl_train_files_options_init(&o);
  if (a->length_given || a->score || a->bidirectional || a->layers || a->output)
    return cli_usage_error(cmd, "--length, --score, --bidirectional, --layers and --output "
                                "belong to --task reverse; a model on token files takes them "
                                "from --config");
  o.src_path = a->src, o.tgt_path = a->tgt;
  o.valid_src_path = a->valid_src, o.valid_tgt_path = a->valid_tgt;
  o.config_path = a->config, o.init_dir = a->init, o.resume_dir = a->resume;
  o.save_dir = a->save;
  o.text = a->text, o.src_vocab_path = a->src_vocab, o.tgt_vocab_path = a->tgt_vocab;
  o.epochs = a->epochs, o.bucket = (int)a->bucket, o.batch_tokens = a->batch_tokens;
  o.warmup = (int)a->warmup, o.lr_decay = a->lr_decay, o.decay_patience = (int)a->decay_patience;
  o.min_lr = a->min_lr, o.patience = (int)a->patience;
  if (a->keep_best) {
    if (strcmp(a->keep_best, "loss") && strcmp(a->keep_best, "exact") && strcmp(a->keep_best, "ter"))
      return cli_usage_error(cmd, "--keep-best: unknown metric '%s' (loss, exact or ter)",
                             a->keep_best);
    o.metric = a->keep_best, o.keep_best = 1;
  }
  if (a->init_optimizer && !a->init)
    return cli_usage_error(cmd, "--init-optimizer continues the Adam state of --init DIR: give --init");
  o.init_optimizer = a->init_optimizer;
  if (a->steps_given) o.steps = (int)a->steps;
  if (a->batch_given) o.batch_size = (int)a->batch;
  if (a->seed_given) o.seed = a->seed;
  if (a->lr_given) o.lr = a->lr;
  if (a->clip_given) o.clip = a->clip;
  if (a->dropout_given) o.dropout = a->dropout;
  o.overwrite = a->overwrite;
  o.checkpoint_every = (int)a->ckpt_every;
  o.valid_every = (int)a->valid_every;
  if (!a->resume) {
    if (!o.src_path || !o.tgt_path) return cli_usage_error(cmd, "--src and --tgt are required");
    if (!o.save_dir) return cli_usage_error(cmd, "--save DIR is required");
    if (!o.config_path && !o.init_dir)
      return cli_usage_error(cmd, "--config FILE (or --init DIR, or --resume DIR) is required");
    if (!o.valid_every) o.valid_every = o.checkpoint_every;
  }
  /* before a device is opened: a run that could not save fails in its first second (on
   * resume without --save the library settles the folder, and checks it the same way) */
  if (o.save_dir) {
    sq_save_plan plan;
    seqcl_status pst = sq_save_dir_check(NULL, o.save_dir, o.overwrite, o.resume_dir, &plan);
    if (pst != SEQCL_OK) return cli_fail(cmd, pst);
  }
  seqcl_ctx *ctx = NULL;
  int rc = cli_ctx_open(cmd, a->device, &ctx);
  if (rc) return rc;
  files_progress p;
  progress_init(&p.bar, o.steps ? o.steps : 1000);
  p.tokens = 0;
  o.progress = on_files_progress;
  o.user = &p;
  seqcl_train_files_result r;
  cli_interrupt_install();
  seqcl_status st = seqcl_train_files(ctx, &o, &r);
  seqcl_ctx_close(ctx);
  if (stopped_by_sigint(st)) return CLI_INTERRUPTED;
  if (st != SEQCL_OK)
    return a->resume ? cli_fail_memory(cmd, st, " (the checkpoint's batch size is too large "
                                                "here: train anew with a smaller --batch-size)")
                     : cli_fail_memory(cmd, st, " (batch %d: lower --batch-size; the longest "
                                                "lines set the other sizes)",
                                       o.batch_size ? o.batch_size : 64);
  static const char *const side[2] = {"source", "target"};
  for (int k = 0; k < 2; k++)
    if (r.vocab_built[k])
      fprintf(stderr, "seqcl train: %s vocabulary built from %s: %d tokens\n", side[k],
              k ? o.tgt_path : o.src_path, r.vocab_size[k]);
  for (int k = 0; k < 2; k++)
    if (r.unknown[k])
      fprintf(stderr, "seqcl train: %zu unknown %s token%s mapped to <unk>\n", r.unknown[k],
              side[k], r.unknown[k] == 1 ? "" : "s");
  const int done = r.steps_done - r.start_step;
  printf("trained steps %d..%d on %d lines (longest source %d, target %d) in %.2f s (%.1f "
         "steps/s)\n",
         r.start_step, r.steps_done, r.train_lines, r.max_src_len, r.max_tgt_len, r.train_seconds,
         r.train_seconds > 0 ? done / r.train_seconds : 0.0);
  printf("final batch loss %.4f\n", (double)r.final_loss);
  if (r.validated)
    printf("validation loss %.4f, greedy exact match %.1f%% (%d/%d), ter %.2f%%\n", r.valid_loss,
           100.0 * r.valid_correct / (r.valid_count ? r.valid_count : 1), r.valid_correct,
           r.valid_count, r.valid_ter);
  if (r.stopped_early) printf("stopped early: --patience ran out after step %d\n", r.steps_done);
  if (r.kept_best)
    printf("saved model: the best validation's, after step %d (%s %.4f%s)\n", r.best_step,
           r.metric, r.best_value, strcmp(r.metric, "loss") ? " %" : "");
  const char *save = r.save_dir;
  printf("saved %s (checkpoint in %s/checkpoint)\n", save, save);
  return CLI_OK;
}
