/* seqcl train: the synthetic digit-reversal task (SPEC §4). */
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "train/save_dir.h"

#include <seqcl/train.h>

static void train_help(FILE *f) {
  fprintf(f,
          "usage: seqcl train --src FILE --tgt FILE --config config.json --save DIR\n"
          "                   [--init DIR] [--valid-src FILE --valid-tgt FILE] [--steps 1000]\n"
          "                   [--batch-size 64] [--lr 1e-3] [--clip 0] [--seed 0] [--dropout 0]\n"
          "                   [--checkpoint-every N] [--valid-every N] [--resume DIR]\n"
          "                   [--overwrite] [--device SEL]\n"
          "       seqcl train --task reverse [--length 6] [--score additive|general|dot|scaled_dot]\n"
          "                   [--bidirectional] [--layers 1] [--output state|state_context]\n"
          "                   [--init zeros|bridge] [--dropout 0] [--steps 1200] [--batch-size 64]\n"
          "                   [--lr 1e-3] [--clip 0] [--seed 0] --save DIR [--overwrite] [--device SEL]\n\n"
          "Trains a fresh attention GRU model on the digit-reversal task (sources: --length\n"
          "random digits; targets: BOS 10, the digits reversed, EOS 11) with Adam, then\n"
          "reports greedy exact-match accuracy on 256 held-out samples and saves a model\n"
          "directory that `seqcl decode` reads. --clip bounds the global gradient norm\n"
          "(0 = no clipping). dot and scaled_dot cannot be used with --bidirectional.\n"
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
          "and at the end); --resume DIR continues it bit for bit (same files, same\n"
          "device; --steps is the new total). Ctrl-C stops after the current step, saves\n"
          "the model and the checkpoint and exits with status 130. Training supports\n"
          "every score, init and output, and encoder.num_layers 1 to 4.\n\n"
          "--save DIR is checked before training starts: a new or empty folder, or an\n"
          "existing seqcl model folder only with --overwrite (it is then replaced whole:\n"
          "the new model and this run's checkpoint are all it holds) or when --resume\n"
          "names it (the model and checkpoint are then updated in place).\n");
}

typedef struct progress_state {
  int tty;
  double t0, last;
  int every;
} progress_state;

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* A bar redrawn at most ten times a second on a terminal; plain lines at
 * every tenth of the run otherwise (logs, pipes). */
static int on_progress(void *user, int step, int steps, float loss) {
  progress_state *p = user;
  if (cli_interrupted()) return 1;
  double t = now_s();
  double rate = step / (t - p->t0 > 1e-9 ? t - p->t0 : 1e-9);
  if (p->tty) {
    if (step != steps && t - p->last < 0.1) return 0;
    p->last = t;
    int width = 30, filled = steps ? (int)((long)width * step / steps) : width;
    char bar[64];
    for (int i = 0; i < width; i++) bar[i] = i < filled ? '#' : '.';
    bar[width] = 0;
    fprintf(stderr, "\r[%s] %d/%d  loss %.4f  %.0f steps/s", bar, step, steps, (double)loss,
            rate);
    if (step == steps) fputc('\n', stderr);
    fflush(stderr);
  } else if (step % p->every == 0 || step == steps) {
    fprintf(stderr, "step %d/%d loss %.4f %.0f steps/s\n", step, steps, (double)loss, rate);
  }
  return 0;
}

static int train_files(int argc, char **argv);

static int has_option(int argc, char **argv, const char *name) {
  for (int i = 1; i < argc; i++)
    if (!strcmp(argv[i], name)) return 1;
  return 0;
}

int cmd_train(int argc, char **argv) {
  const char *cmd = "train";
  if (has_option(argc, argv, "--src") || has_option(argc, argv, "--resume"))
    return train_files(argc, argv);
  seqcl_train_options o;
  seqcl_train_options_init(&o);
  const char *task = NULL, *device = NULL;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    const char *v = i + 1 < argc ? argv[i + 1] : NULL;
    long n;
    double d;
    if (cli_is_help(a)) {
      train_help(stdout);
      return CLI_OK;
    } else if (!strcmp(a, "--bidirectional")) {
      o.bidirectional = 1;
      continue;
    } else if (!strcmp(a, "--overwrite")) {
      o.overwrite = 1;
      continue;
    }
    if (a[0] != '-' || a[1] != '-') return cli_usage_error(cmd, "unexpected argument '%s'", a);
    if (!v) return cli_usage_error(cmd, "option %s needs a value", a);
    i++;
    if (!strcmp(a, "--task")) {
      task = v;
    } else if (!strcmp(a, "--score")) {
      o.score = v;
    } else if (!strcmp(a, "--output")) {
      o.output = v;
    } else if (!strcmp(a, "--init")) {
      o.init = v;
    } else if (!strcmp(a, "--layers")) {
      if (cli_parse_int(v, 1, 4, &n)) return cli_usage_error(cmd, "bad --layers '%s' (1 to 4)", v);
      o.num_layers = (int)n;
    } else if (!strcmp(a, "--dropout")) {
      if (cli_parse_float(v, &d) || !(d >= 0 && d < 1))
        return cli_usage_error(cmd, "bad --dropout '%s' (0 <= P < 1)", v);
      o.dropout = d;
    } else if (!strcmp(a, "--save")) {
      o.save_dir = v;
    } else if (!strcmp(a, "--device")) {
      device = v;
    } else if (!strcmp(a, "--length")) {
      if (cli_parse_int(v, 1, 4096, &n)) return cli_usage_error(cmd, "bad --length '%s'", v);
      o.length = (int)n;
    } else if (!strcmp(a, "--steps")) {
      if (cli_parse_int(v, 0, 1L << 30, &n)) return cli_usage_error(cmd, "bad --steps '%s'", v);
      o.steps = (int)n;
    } else if (!strcmp(a, "--batch-size")) {
      if (cli_parse_int(v, 1, 1L << 20, &n))
        return cli_usage_error(cmd, "bad --batch-size '%s'", v);
      o.batch_size = (int)n;
    } else if (!strcmp(a, "--seed")) {
      if (cli_parse_int(v, 0, 0x7fffffffL, &n)) return cli_usage_error(cmd, "bad --seed '%s'", v);
      o.seed = (unsigned long long)n;
    } else if (!strcmp(a, "--lr")) {
      if (cli_parse_float(v, &d) || !(d > 0)) return cli_usage_error(cmd, "bad --lr '%s'", v);
      o.lr = d;
    } else if (!strcmp(a, "--clip")) {
      if (cli_parse_float(v, &d) || d < 0) return cli_usage_error(cmd, "bad --clip '%s'", v);
      o.clip = d;
    } else {
      return cli_usage_error(cmd, "unknown option '%s' (see seqcl train --help)", a);
    }
  }
  if (!task) return cli_usage_error(cmd, "--task is required (the one task is 'reverse')");
  if (strcmp(task, "reverse"))
    return cli_usage_error(cmd, "unknown task '%s' (the one task is 'reverse')", task);
  if (!o.save_dir) return cli_usage_error(cmd, "--save DIR is required");
  if (strcmp(o.score, "additive") && strcmp(o.score, "general") && strcmp(o.score, "dot") &&
      strcmp(o.score, "scaled_dot"))
    return cli_usage_error(cmd, "unknown --score '%s' (additive, general, dot, scaled_dot)",
                           o.score);
  if (o.bidirectional && (!strcmp(o.score, "dot") || !strcmp(o.score, "scaled_dot")))
    return cli_usage_error(cmd,
                           "--score %s needs encoder width == decoder hidden; it cannot be "
                           "used with --bidirectional",
                           o.score);
  /* before a device is opened: a run that could not save fails in its first second */
  sq_save_plan plan;
  seqcl_status st = sq_save_dir_check(NULL, o.save_dir, o.overwrite, NULL, &plan);
  if (st != SEQCL_OK) return cli_fail(cmd, st);

  seqcl_ctx *ctx = NULL;
  st = seqcl_ctx_open(device, &ctx);
  if (st != SEQCL_OK) return cli_fail(cmd, st);
  if (cli_verbose) {
    const seqcl_device_info *info = seqcl_ctx_device(ctx);
    fprintf(stderr, "seqcl train: device %s (%s)\n", info->selector, info->name);
  }
  progress_state p = {.tty = isatty(fileno(stderr)), .t0 = now_s()};
  p.every = o.steps >= 10 ? o.steps / 10 : 1;
  o.progress = on_progress;
  o.user = &p;
  seqcl_train_result r;
  double t0 = now_s();
  cli_interrupt_install();
  st = seqcl_train_reverse(ctx, &o, &r);
  double total = now_s() - t0;
  seqcl_ctx_close(ctx);
  if (st == SEQCL_ERR_CANCELLED && cli_interrupted()) {
    fprintf(stderr, "\nseqcl train: interrupted; nothing saved (the reversal task trains in\n"
                    "seconds: run it again)\n");
    return CLI_INTERRUPTED;
  }
  if (st != SEQCL_OK) return cli_fail(cmd, st);
  printf("final loss %.4f\n", (double)r.final_loss);
  printf("greedy exact-match accuracy %.1f%% (%d/%d held-out samples)\n",
         100.0 * r.correct / (r.evaluated ? r.evaluated : 1), r.correct, r.evaluated);
  printf("trained %d steps in %.2f s (%.1f steps/s); total %.2f s; saved %s\n", o.steps,
         r.train_seconds, r.train_seconds > 0 ? o.steps / r.train_seconds : 0.0, total,
         o.save_dir);
  return CLI_OK;
}

/* ---- training on token files ---- */

typedef struct files_progress {
  progress_state bar;
} files_progress;

static int on_files_progress(void *user, const seqcl_train_event *e) {
  files_progress *p = user;
  int stop = on_progress(&p->bar, e->step, e->steps, e->loss);
  if (e->validated || e->checkpointed) {
    if (p->bar.tty) fputc('\n', stderr);
    if (e->validated)
      fprintf(stderr, "step %d: validation loss %.4f, exact match %.1f%% (%d/%d)%s\n", e->step,
              e->valid_loss, 100.0 * e->valid_correct / (e->valid_count ? e->valid_count : 1),
              e->valid_correct, e->valid_count, e->checkpointed ? ", checkpoint saved" : "");
    else
      fprintf(stderr, "step %d: checkpoint saved\n", e->step);
  }
  return stop;
}

static int train_files(int argc, char **argv) {
  const char *cmd = "train", *device = NULL;
  seqcl_train_files_options o;
  seqcl_train_files_options_init(&o);
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    const char *v = i + 1 < argc ? argv[i + 1] : NULL;
    long n;
    double d;
    if (cli_is_help(a)) {
      train_help(stdout);
      return CLI_OK;
    }
    if (!strcmp(a, "--overwrite")) {
      o.overwrite = 1;
      continue;
    }
    if (a[0] != '-' || a[1] != '-') return cli_usage_error(cmd, "unexpected argument '%s'", a);
    if (!v) return cli_usage_error(cmd, "option %s needs a value", a);
    i++;
    if (!strcmp(a, "--src")) o.src_path = v;
    else if (!strcmp(a, "--tgt")) o.tgt_path = v;
    else if (!strcmp(a, "--valid-src")) o.valid_src_path = v;
    else if (!strcmp(a, "--valid-tgt")) o.valid_tgt_path = v;
    else if (!strcmp(a, "--config")) o.config_path = v;
    else if (!strcmp(a, "--init")) o.init_dir = v;
    else if (!strcmp(a, "--resume")) o.resume_dir = v;
    else if (!strcmp(a, "--save")) o.save_dir = v;
    else if (!strcmp(a, "--device")) device = v;
    else if (!strcmp(a, "--steps")) {
      if (cli_parse_int(v, 0, 1L << 30, &n)) return cli_usage_error(cmd, "bad --steps '%s'", v);
      o.steps = (int)n;
    } else if (!strcmp(a, "--batch-size")) {
      if (cli_parse_int(v, 1, 1L << 20, &n))
        return cli_usage_error(cmd, "bad --batch-size '%s'", v);
      o.batch_size = (int)n;
    } else if (!strcmp(a, "--seed")) {
      if (cli_parse_int(v, 0, 0x7fffffffL, &n)) return cli_usage_error(cmd, "bad --seed '%s'", v);
      o.seed = n;
    } else if (!strcmp(a, "--checkpoint-every")) {
      if (cli_parse_int(v, 0, 1L << 30, &n))
        return cli_usage_error(cmd, "bad --checkpoint-every '%s'", v);
      o.checkpoint_every = (int)n;
    } else if (!strcmp(a, "--valid-every")) {
      if (cli_parse_int(v, 0, 1L << 30, &n))
        return cli_usage_error(cmd, "bad --valid-every '%s'", v);
      o.valid_every = (int)n;
    } else if (!strcmp(a, "--lr")) {
      if (cli_parse_float(v, &d) || !(d > 0)) return cli_usage_error(cmd, "bad --lr '%s'", v);
      o.lr = d;
    } else if (!strcmp(a, "--clip")) {
      if (cli_parse_float(v, &d) || d < 0) return cli_usage_error(cmd, "bad --clip '%s'", v);
      o.clip = d;
    } else if (!strcmp(a, "--dropout")) {
      if (cli_parse_float(v, &d) || !(d >= 0 && d < 1))
        return cli_usage_error(cmd, "bad --dropout '%s' (0 <= P < 1)", v);
      o.dropout = d;
    } else {
      return cli_usage_error(cmd, "unknown option '%s' (see seqcl train --help)", a);
    }
  }
  if (!o.src_path || !o.tgt_path) return cli_usage_error(cmd, "--src and --tgt are required");
  if (!o.save_dir) return cli_usage_error(cmd, "--save DIR is required");
  if (!o.config_path && !o.init_dir && !o.resume_dir)
    return cli_usage_error(cmd, "--config FILE (or --init DIR, or --resume DIR) is required");
  if (!o.valid_every) o.valid_every = o.checkpoint_every;
  /* before a device is opened: a run that could not save fails in its first second */
  sq_save_plan plan;
  seqcl_status st = sq_save_dir_check(NULL, o.save_dir, o.overwrite, o.resume_dir, &plan);
  if (st != SEQCL_OK) return cli_fail(cmd, st);

  seqcl_ctx *ctx = NULL;
  st = seqcl_ctx_open(device, &ctx);
  if (st != SEQCL_OK) return cli_fail(cmd, st);
  if (cli_verbose) {
    const seqcl_device_info *info = seqcl_ctx_device(ctx);
    fprintf(stderr, "seqcl train: device %s (%s)\n", info->selector, info->name);
  }
  files_progress p = {.bar = {.tty = isatty(fileno(stderr)), .t0 = now_s()}};
  p.bar.every = o.steps >= 10 ? o.steps / 10 : 1;
  o.progress = on_files_progress;
  o.user = &p;
  seqcl_train_files_result r;
  cli_interrupt_install();
  st = seqcl_train_files(ctx, &o, &r);
  seqcl_ctx_close(ctx);
  if (st == SEQCL_ERR_CANCELLED && cli_interrupted()) {
    fprintf(stderr, "\nseqcl train: %s\n", seqcl_last_message());
    return CLI_INTERRUPTED;
  }
  if (st != SEQCL_OK) return cli_fail(cmd, st);
  printf("trained steps %d..%d on %d lines (longest source %d, target %d) in %.2f s\n",
         r.start_step, r.steps_done, r.train_lines, r.max_src_len, r.max_tgt_len,
         r.train_seconds);
  printf("final batch loss %.4f\n", (double)r.final_loss);
  if (r.validated)
    printf("validation loss %.4f, greedy exact match %.1f%% (%d/%d)\n", r.valid_loss,
           100.0 * r.valid_correct / (r.valid_count ? r.valid_count : 1), r.valid_correct,
           r.valid_count);
  printf("saved %s (checkpoint in %s/checkpoint)\n", o.save_dir, o.save_dir);
  return CLI_OK;
}
