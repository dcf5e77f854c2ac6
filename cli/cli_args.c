/* One command line for every command: the global flags (-v/--verbose,
 * -q/--quiet) are taken out wherever they stand, before or after the command
 * name, and "--opt=value" becomes "--opt" "value", so that each command's own
 * parser sees one spelling. Everything after a bare "--" is left as it is. */
#include <stdlib.h>
#include <string.h>

#include "cli.h"

int cli_normalize_args(int *argc, char ***argv) {
  int n = *argc;
  char **in = *argv;
  /* at most twice as many entries (every one split), plus the terminating NULL */
  char **out = calloc(2 * (size_t)n + 1, sizeof *out);
  if (!out) return -1;
  int k = 0, literal = 0;
  out[k++] = in[0];
  for (int i = 1; i < n; i++) {
    char *a = in[i];
    if (literal) {
      out[k++] = a;
    } else if (!strcmp(a, "--")) {
      literal = 1;
      out[k++] = a;
    } else if (!strcmp(a, "-v") || !strcmp(a, "--verbose")) {
      cli_verbose = 1;
    } else if (!strcmp(a, "-q") || !strcmp(a, "--quiet")) {
      cli_quiet = 1;
    } else if (a[0] == '-' && a[1] == '-' && a[2] && strchr(a, '=')) {
      char *eq = strchr(a, '=');
      size_t len = (size_t)(eq - a);
      char *name = malloc(len + 1);
      if (!name) {
        free(out);
        return -1;
      }
      memcpy(name, a, len);
      name[len] = '\0';
      out[k++] = name; /* lives as long as the process: argv's own lifetime */
      out[k++] = eq + 1;
    } else {
      out[k++] = a;
    }
  }
  out[k] = NULL;
  *argc = k;
  *argv = out;
  return 0;
}
