#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "core/fileio.h"

int cli_verbose = 0;

int cli_fail(const char *cmd, seqcl_status st) {
  const char *msg = seqcl_last_message();
  fprintf(stderr, "seqcl %s: %s\n", cmd, msg && *msg ? msg : seqcl_status_str(st));
  return seqcl_status_is_input_error(st) ? CLI_USAGE : CLI_RUNTIME;
}

int cli_usage_error(const char *cmd, const char *fmt, ...) {
  va_list ap;
  fprintf(stderr, "seqcl %s: ", cmd);
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputc('\n', stderr);
  return CLI_USAGE;
}

int cli_check_outputs(const char *cmd, ...) {
  va_list ap;
  va_start(ap, cmd);
  int rc = CLI_OK;
  for (const char *opt; rc == CLI_OK && (opt = va_arg(ap, const char *));) {
    const char *path = va_arg(ap, const char *);
    if (!path) continue;
    seqcl_status st = sq_output_check(path, opt);
    if (st != SEQCL_OK) rc = cli_fail(cmd, st);
  }
  va_end(ap);
  return rc;
}

int cli_is_help(const char *arg) { return !strcmp(arg, "-h") || !strcmp(arg, "--help"); }

int cli_parse_int(const char *s, long min, long max, long *out) {
  if (!s || !*s) return -1;
  char *end = NULL;
  errno = 0;
  long v = strtol(s, &end, 10);
  if (errno || *end || v < min || v > max) return -1;
  *out = v;
  return 0;
}

int cli_parse_float(const char *s, double *out) {
  if (!s || !*s) return -1;
  char *end = NULL;
  errno = 0;
  double v = strtod(s, &end);
  if (errno || *end || !isfinite(v)) return -1;
  *out = v;
  return 0;
}
