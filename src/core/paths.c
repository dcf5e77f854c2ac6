#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/error.h"
#include "core/paths.h"

int sq_cache_enabled(void) {
  const char *v = getenv("SEQCL_CACHE");
  return !(v && !strcmp(v, "0"));
}

/* mkdir -p: creates every missing component of path. */
static seqcl_status make_dirs(char *path) {
  for (char *p = path + 1;; p++) {
    if (*p == '/' || *p == '\0') {
      char saved = *p;
      *p = '\0';
      int rc = mkdir(path, 0755);
      int err = errno;
      *p = saved;
      if (rc != 0 && err != EEXIST)
        return sq_fail(NULL, SEQCL_ERR_IO, "cannot create cache folder '%s': %s", path,
                       strerror(err));
      if (saved == '\0') break;
    }
  }
  struct stat st;
  if (stat(path, &st) != 0 || !S_ISDIR(st.st_mode))
    return sq_fail(NULL, SEQCL_ERR_IO, "cache path '%s' is not a folder", path);
  return SEQCL_OK;
}

seqcl_status sq_cache_dir(char *buf, size_t cap, int create) {
  const char *dir = getenv("SEQCL_CACHE_DIR");
  const char *xdg = getenv("XDG_CACHE_HOME");
  const char *home = getenv("HOME");
  int n;
  if (dir && *dir)
    n = snprintf(buf, cap, "%s", dir);
  else if (xdg && *xdg)
    n = snprintf(buf, cap, "%s/seqcl", xdg);
  else if (home && *home)
    n = snprintf(buf, cap, "%s/.cache/seqcl", home);
  else
    return sq_fail(NULL, SEQCL_ERR_IO,
                   "no cache folder: set SEQCL_CACHE_DIR, XDG_CACHE_HOME or HOME (or SEQCL_CACHE=0)");
  if (n < 0 || (size_t)n >= cap)
    return sq_fail(NULL, SEQCL_ERR_IO, "cache folder path is too long");
  /* Trailing slashes would make the entries' paths ugly. */
  while (n > 1 && buf[n - 1] == '/') buf[--n] = '\0';
  return create ? make_dirs(buf) : SEQCL_OK;
}
