/* seqcl cache info|clear: the on-disk cache of compiled OpenCL programs. */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "device/cache_files.h"

static void help(FILE *f) {
  fprintf(f,
          "usage: seqcl cache info|clear\n\n"
          "Compiled OpenCL programs are cached on disk per (platform, device, driver\n"
          "version, kernel source, build options), so a new process does not compile\n"
          "them again.\n\n"
          "  info   print the cache folder, its number of entries and their size\n"
          "  clear  remove every entry\n\n"
          "The folder is $SEQCL_CACHE_DIR, else $XDG_CACHE_HOME/seqcl, else\n"
          "~/.cache/seqcl; SEQCL_CACHE=0 turns the cache off.\n");
}

int cmd_cache(int argc, char **argv) {
  if (argc >= 2 && cli_is_help(argv[1])) {
    help(stdout);
    return CLI_OK;
  }
  if (argc != 2) {
    cli_usage_error("cache", argc < 2 ? "missing action (info or clear)" : "too many arguments");
    help(stderr);
    return CLI_USAGE;
  }
  if (!strcmp(argv[1], "info")) {
    sq_cache_summary s;
    seqcl_status st = sq_cache_summarize(&s);
    if (st != SEQCL_OK) return cli_fail("cache info", st);
    printf("folder:  %s/%s\n", s.dir, SQ_PROGRAMS_SUBDIR);
    printf("enabled: %s\n", s.enabled ? "yes" : "no (SEQCL_CACHE=0)");
    printf("entries: %zu\n", s.entries);
    printf("size:    %llu bytes (%.1f MiB)\n", (unsigned long long)s.bytes,
           (double)s.bytes / (1024.0 * 1024.0));
    return CLI_OK;
  }
  if (!strcmp(argv[1], "clear")) {
    size_t removed = 0;
    seqcl_status st = sq_cache_clear(&removed);
    if (st != SEQCL_OK) return cli_fail("cache clear", st);
    printf("removed %zu cached program%s\n", removed, removed == 1 ? "" : "s");
    return CLI_OK;
  }
  cli_usage_error("cache", "unknown action '%s' (expected info or clear)", argv[1]);
  help(stderr);
  return CLI_USAGE;
}
