/* The SEQCL_* variables the command line depends on, checked once at start-up
 * so that a typo is an error naming the variable rather than a setting that
 * silently does nothing. SEQCL_KERNELS and SEQCL_GEMM are checked where the
 * context reads them; SEQCL_DEVICE where a device is opened (cli_fail_device),
 * since `seqcl devices` must still list the devices when it matches nothing. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "core/settings.h"

static int env_error(const char *name, const char *value, const char *want) {
  fprintf(stderr, "seqcl: environment variable %s='%s' is not %s\n", name, value, want);
  return CLI_USAGE;
}

static int one_of(const char *v, const char *const *list) {
  for (; *list; list++)
    if (!strcmp(v, *list)) return 1;
  return 0;
}

int cli_check_env(void) {
  static const char *const log_levels[] = {"error", "warn", "info", "debug", NULL};
  static const char *const switches[] = {"0", "1", NULL};
  const char *v = getenv("SEQCL_LOG");
  if (v && *v) {
    if (!one_of(v, log_levels)) return env_error("SEQCL_LOG", v, "one of error, warn, info, debug");
    if (!strcmp(v, "info") || !strcmp(v, "debug")) cli_verbose = 1;
  }
  if (sq_threads_env(&v) < 0) return env_error("SEQCL_THREADS", v, SQ_THREADS_WANT);
  if (sq_host_isa_env(&v) == -2) return env_error("SEQCL_HOST_ISA", v, SQ_HOST_ISA_WANT);
  if ((v = getenv("SEQCL_CACHE")) && *v && !one_of(v, switches))
    return env_error("SEQCL_CACHE", v, "0 or 1");
  if ((v = getenv("SEQCL_SELFCHECK")) && *v && !one_of(v, switches))
    return env_error("SEQCL_SELFCHECK", v, "0 or 1");
  if ((v = getenv("SEQCL_PROGRESS_AFTER")) && *v) {
    double d;
    if (cli_parse_float(v, &d) || d < 0)
      return env_error("SEQCL_PROGRESS_AFTER", v, "a number of seconds >= 0");
  }
  struct stat sb;
  if ((v = getenv("SEQCL_KERNEL_DIR")) && *v && (stat(v, &sb) != 0 || !S_ISDIR(sb.st_mode)))
    return env_error("SEQCL_KERNEL_DIR", v, "an existing folder");
  return CLI_OK;
}
