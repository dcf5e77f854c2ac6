/* seqcl: the command-line tool. Dispatches to one function per command. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static const struct {
  const char *name;
  cli_command_fn fn;
  const char *summary;
} commands[] = {
    {"devices", cmd_devices, "list every device with its selector; marks the default"},
    {"check", cmd_check, "cross-vendor correctness suite: every operation on each device"},
    {"forward", cmd_forward, "teacher-forced forward: logits, alignments and loss"},
    {"decode", cmd_decode, "greedy or beam decoding of a token file"},
    {"eval", cmd_eval, "exact match, token edit rate and BLEU against references"},
    {"vocab", cmd_vocab, "build a vocabulary file from text (vocab build)"},
    {"heatmap", cmd_heatmap, "draw one line's attention from an alignments file"},
    {"train", cmd_train, "train on the synthetic digit-reversal task"},
    {"experiment", cmd_experiment, "length-sweep: accuracy and attention entropy against length"},
    {"probe", cmd_probe, "one line's attention beside the effect of hiding each source position"},
    {"demo", cmd_demo, "train the reversal model and show its attention"},
    {"cache", cmd_cache, "show (info) or empty (clear) the program cache"},
    {"bench", cmd_bench, "throughput and latency of decoding, training and kernels"},
    {"info", cmd_info, "a model folder: config, parameters per tensor group, dtypes, size"},
};

static void usage(FILE *f) {
  fprintf(f,
          "usage: seqcl [--version] [-v|-q] COMMAND [OPTIONS]\n\n"
          "Attention-based GRU seq2seq models on any OpenCL device.\n\ncommands:\n");
  for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
    fprintf(f, "  %-10s %s\n", commands[i].name, commands[i].summary);
  fprintf(f,
          "\nEvery command takes --device SEL (SPEC §3: auto, cpu, opencl:N, opencl:P.D,\n"
          "opencl:gpu[:N], opencl:~TEXT, all, A,B); it wins over SEQCL_DEVICE.\n"
          "-v (--verbose) and -q (--quiet: no progress output) may stand anywhere;\n"
          "every option also takes the --opt=value form.\n"
          "`seqcl COMMAND --help` describes a command.\n");
}

int main(int argc, char **argv) {
  if (cli_normalize_args(&argc, &argv) != 0) {
    fprintf(stderr, "seqcl: out of memory\n");
    return CLI_RUNTIME;
  }
  int i = 1;
  for (; i < argc && argv[i][0] == '-'; i++) {
    if (!strcmp(argv[i], "--version")) {
      printf("seqcl %s (OpenCL %s)\n", seqcl_version(), seqcl_has_opencl() ? "enabled" : "disabled");
      return CLI_OK;
    } else if (cli_is_help(argv[i])) {
      usage(stdout);
      return CLI_OK;
    } else {
      fprintf(stderr, "seqcl: unknown option '%s'\n", argv[i]);
      usage(stderr);
      return CLI_USAGE;
    }
  }
  if (i >= argc) {
    usage(stderr);
    return CLI_USAGE;
  }
  int rc = cli_check_env(); /* after --help/--version: those work whatever the environment */
  if (rc != CLI_OK) return rc;
  for (size_t c = 0; c < sizeof commands / sizeof commands[0]; c++)
    if (!strcmp(argv[i], commands[c].name)) {
      rc = commands[c].fn(argc - i, argv + i);
      /* what a command printed to standard output (a listing, a report)
       * must have arrived: a full disk or a closed pipe is a failure, not
       * exit 0 with the text lost. A command that already failed has said
       * why. */
      if ((fflush(stdout) != 0 || ferror(stdout)) && rc == CLI_OK) {
        fprintf(stderr, "seqcl %s: standard output: write failed: %s\n", argv[i], strerror(errno));
        rc = CLI_RUNTIME;
      }
      return rc;
    }
  fprintf(stderr, "seqcl: unknown command '%s'\n", argv[i]);
  usage(stderr);
  return CLI_USAGE;
}
