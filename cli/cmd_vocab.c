/* seqcl vocab build: a vocabulary file (one token per line) from text files. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "cli_model.h"
#include "core/fileio.h"
#include "model/vocab_build.h"

static void help(FILE *f) {
  fprintf(f,
          "usage: seqcl vocab build --split chars|words [--min-count N] [--max-size N] [--pad]\n"
          "                         --out FILE TEXT...\n\n"
          "Counts the tokens of the TEXT files ('-' = standard input) and writes a\n"
          "vocabulary: one token per line, id = line number - 1, as --src-vocab and\n"
          "--tgt-vocab read it (a model directory keeps them as src.vocab, tgt.vocab).\n"
          "The special tokens come first:\n"
          "  with --pad:   <pad> 0, <unk> 1, <s> 2 (BOS), </s> 3 (EOS)\n"
          "  without:      <unk> 0, <s> 1 (BOS), </s> 2 (EOS)\n"
          "then the tokens by falling count (ties in byte order).\n\n"
          "  --split chars    every character (UTF-8 code point) is a token; a space\n"
          "                   (or tab) is the token <space>\n"
          "  --split words    tokens are separated by whitespace\n"
          "  --min-count N    leave out tokens seen fewer than N times (default 1)\n"
          "  --max-size N     at most N lines, the special tokens included\n"
          "  --pad            add <pad> at id 0\n"
          "  --out FILE       the vocabulary file ('-' = standard output)\n"
          "  -h, --help       this text\n\n"
          "Prints the size and the special ids to stderr. Invalid UTF-8 is an error\n"
          "naming the file and line. Exit status: 0 success, 2 bad usage or input.\n");
}

int cmd_vocab(int argc, char **argv) {
  static const char cmd[] = "vocab";
  if (argc < 2 || cli_is_help(argv[1])) {
    help(argc < 2 ? stderr : stdout);
    return argc < 2 ? CLI_USAGE : CLI_OK;
  }
  if (strcmp(argv[1], "build"))
    return cli_usage_error(cmd, "unknown subcommand '%s' (known: build; see seqcl vocab --help)",
                           argv[1]);
  sq_vocab_spec spec = {SQ_SPLIT_WORDS, 1, 0, 0};
  const char *out = NULL, *split = NULL;
  const char **inputs = calloc((size_t)argc, sizeof *inputs);
  if (!inputs) return cli_fail(cmd, SEQCL_ERR_OUT_OF_MEMORY);
  int ninputs = 0, rc = CLI_OK;
  for (int i = 2; i < argc && rc == CLI_OK; i++) {
    const char *o = argv[i], *v = NULL;
    if (cli_is_help(o)) {
      help(stdout);
      free(inputs);
      return CLI_OK;
    } else if (!strcmp(o, "--split") || !strcmp(o, "--out")) {
      if (!(v = cli_value(cmd, argc, argv, &i))) rc = CLI_USAGE;
      else if (o[2] == 's') split = v;
      else out = v;
    } else if (!strcmp(o, "--min-count") || !strcmp(o, "--max-size")) {
      if (!(v = cli_value(cmd, argc, argv, &i)) ||
          cli_long(cmd, o, v, 1, 1L << 30, o[3] == 'i' ? &spec.min_count : &spec.max_size))
        rc = CLI_USAGE;
    } else if (!strcmp(o, "--pad")) {
      spec.pad = 1;
    } else if (o[0] == '-' && o[1]) {
      rc = cli_usage_error(cmd, "unknown option '%s' (see seqcl vocab --help)", o);
    } else {
      inputs[ninputs++] = o;
    }
  }
  if (rc == CLI_OK && !split)
    rc = cli_usage_error(cmd, "--split chars|words is required (see seqcl vocab --help)");
  else if (rc == CLI_OK && strcmp(split, "chars") && strcmp(split, "words"))
    rc = cli_usage_error(cmd, "--split: '%s' is not 'chars' or 'words'", split);
  else if (rc == CLI_OK && !out)
    rc = cli_usage_error(cmd, "--out FILE is required");
  else if (rc == CLI_OK && !ninputs)
    rc = cli_usage_error(cmd, "give at least one text file to count");
  else if (rc == CLI_OK && spec.max_size && spec.max_size <= 3 + spec.pad)
    rc = cli_usage_error(cmd, "--max-size %ld leaves no room beside the %d special tokens",
                         spec.max_size, 3 + spec.pad);
  if (rc == CLI_OK) rc = cli_check_outputs(cmd, "--out", out, NULL);
  if (rc != CLI_OK) {
    free(inputs);
    return rc;
  }
  spec.split = !strcmp(split, "chars") ? SQ_SPLIT_CHARS : SQ_SPLIT_WORDS;
  sq_wordtab tab = {0};
  sq_outfile of = {0};
  sq_vocab_summary sum;
  seqcl_status st = SEQCL_OK;
  for (int k = 0; k < ninputs && st == SEQCL_OK; k++) st = sq_vocab_count(inputs[k], spec.split, &tab);
  if (st == SEQCL_OK && (st = sq_outfile_open(out, &of)) == SEQCL_OK) {
    st = sq_vocab_write(of.f, &tab, &spec, &sum);
    st = st == SEQCL_OK ? sq_outfile_commit(&of) : (sq_outfile_abort(&of), st);
  }
  if (st != SEQCL_OK) {
    rc = cli_fail(cmd, st);
  } else {
    fprintf(stderr,
            "seqcl vocab: %zu tokens written to %s (ids: %s<unk> %d, <s> %d, </s> %d); %zu distinct "
            "counted, %zu below --min-count, %zu past --max-size\n",
            sum.size, out, spec.pad ? "<pad> 0, " : "", spec.pad, spec.pad + 1, spec.pad + 2,
            sum.distinct, sum.below_min, sum.over_max);
  }
  sq_wordtab_free(&tab);
  free(inputs);
  return rc;
}
