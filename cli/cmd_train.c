/* seqcl train: the synthetic digit-reversal task (SPEC §4) and training on
 * token files; the options are cmd_train_args.c's. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "model/config.h" /* the score names (sq_score_parse) */
#include "cli_model.h"
#include "cli_progress.h"
#include "cmd_train_args.h"
#include "train/checkpoint.h"
#include "train/save_dir.h"

#include <seqcl/train.h>

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

/* The name the messages give. */
static const char cmd[] = "train";

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

CLI_COMMAND(cmd_train, train_args, train_parse, run)

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
