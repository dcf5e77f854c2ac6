#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "core/fileio.h"

int cli_verbose = 0;
int cli_quiet = 0;

/* The library names the operation it was doing ("decode: ..."); when that is
 * the command's own name the prefix would read "seqcl decode: decode: ...". */
static const char *without_prefix(const char *cmd, const char *msg) {
  size_t n = strcspn(cmd, " (");
  if (!strncmp(msg, cmd, n) && msg[n] == ':' && msg[n + 1] == ' ') return msg + n + 2;
  return msg;
}

int cli_fail(const char *cmd, seqcl_status st) {
  const char *msg = seqcl_last_message();
  fprintf(stderr, "seqcl %s: %s\n", cmd,
          msg && *msg ? without_prefix(cmd, msg) : seqcl_status_str(st));
  return seqcl_status_is_input_error(st) ? CLI_USAGE : CLI_RUNTIME;
}

int cli_fail_output(const char *cmd, seqcl_status st) {
  cli_fail(cmd, st);
  return CLI_RUNTIME;
}

int cli_fail_memory(const char *cmd, seqcl_status st, const char *hint, ...) {
  if (st != SEQCL_ERR_OUT_OF_MEMORY && st != SEQCL_ERR_DEVICE_OUT_OF_MEMORY)
    return cli_fail(cmd, st);
  const char *msg = seqcl_last_message();
  fprintf(stderr, "seqcl %s: %s", cmd,
          msg && *msg ? without_prefix(cmd, msg) : seqcl_status_str(st));
  va_list ap;
  va_start(ap, hint);
  vfprintf(stderr, hint, ap);
  va_end(ap);
  fputc('\n', stderr);
  return seqcl_status_is_input_error(st) ? CLI_USAGE : CLI_RUNTIME;
}

int cli_error(int status, const char *cmd, const char *fmt, ...) {
  va_list ap;
  fprintf(stderr, "seqcl %s: ", cmd);
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputc('\n', stderr);
  return status;
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

/* The one wording of a bad number: "--beam: '0' is not an integer in [1, 16]". */
static void describe_int(char *buf, size_t cap, long min, long max) {
  if (max >= (1L << 30) && min == 1)
    snprintf(buf, cap, "a positive integer");
  else if (max >= (1L << 30) && min == 0)
    snprintf(buf, cap, "a non-negative integer");
  else
    snprintf(buf, cap, "an integer in [%ld, %ld]", min, max);
}

int cli_long(const char *cmd, const char *opt, const char *v, long min, long max, long *out) {
  if (cli_parse_int(v, min, max, out) == 0) return CLI_OK;
  char what[64];
  describe_int(what, sizeof what, min, max);
  return cli_usage_error(cmd, "%s: '%s' is not %s", opt, v ? v : "", what);
}

int cli_double(const char *cmd, const char *opt, const char *v, cli_range r, double *out) {
  double d;
  int ok = cli_parse_float(v, &d) == 0 &&
           (r == CLI_ANY_NUMBER || (r == CLI_POSITIVE ? d > 0 : d >= 0));
  if (ok) {
    *out = d;
    return CLI_OK;
  }
  return cli_usage_error(cmd, "%s: '%s' is not a %snumber", opt, v ? v : "",
                         r == CLI_POSITIVE       ? "positive "
                         : r == CLI_NON_NEGATIVE ? "non-negative "
                                                 : "finite ");
}

int cli_fail_device(const char *cmd, seqcl_status st, const char *device) {
  const char *env = seqcl_device_env();
  if ((!device || !*device) && env && *env && seqcl_status_is_input_error(st)) {
    /* said first: the library's message may end in a list of the devices */
    const char *msg = seqcl_last_message();
    fprintf(stderr,
            "seqcl %s: SEQCL_DEVICE='%s' (from the environment; --device overrides it): %s\n",
            cmd, env, msg && *msg ? msg : seqcl_status_str(st));
    return CLI_USAGE;
  }
  return cli_fail(cmd, st);
}

int cli_ctx_open(const char *cmd, const char *device, seqcl_ctx **ctx) {
  *ctx = NULL;
  seqcl_status st = seqcl_ctx_open(device, ctx);
  if (st != SEQCL_OK) return cli_fail_device(cmd, st, device);
  if (cli_verbose) {
    const seqcl_device_info *d = seqcl_ctx_device(*ctx);
    fprintf(stderr, "seqcl %s: device %s: %s%s%s\n", cmd, d->selector, d->name,
            d->platform[0] ? " / " : "", d->platform);
  }
  return CLI_OK;
}
