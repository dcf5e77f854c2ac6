/* Folders written whole (fileio.h's "folders written whole"): a temporary
 * sibling folder filled and then put in place of the final one, and tree
 * removal. */
#define _POSIX_C_SOURCE 200809L
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/error.h"
#include "core/fileio.h"

/* "PARENT/.NAME.TAG.XXXXXX" for final (trailing slashes ignored); malloc'd. */
static char *sibling_name(const char *final, const char *tag) {
  size_t n = strlen(final);
  while (n > 1 && final[n - 1] == '/') n--;
  char *trimmed = malloc(n + 1);
  if (!trimmed) return NULL;
  memcpy(trimmed, final, n);
  trimmed[n] = '\0';
  char *dir = sq_path_folder(trimmed);
  const char *slash = strrchr(trimmed, '/');
  const char *base = slash ? slash + 1 : trimmed;
  size_t len = (dir ? strlen(dir) : 0) + strlen(base) + strlen(tag) + 16;
  char *out = dir ? malloc(len) : NULL;
  if (out) snprintf(out, len, "%s/.%s.%s.XXXXXX", dir, base, tag);
  free(dir);
  free(trimmed);
  return out;
}

seqcl_status sq_dir_make_temp(const char *final, char **tmp) {
  *tmp = sibling_name(final, "tmp");
  if (!*tmp) return sq_fail(NULL, SEQCL_ERR_OUT_OF_MEMORY, "%s: out of host memory", final);
  if (!mkdtemp(*tmp)) {
    int e = errno;
    free(*tmp);
    *tmp = NULL;
    return sq_fail(NULL, SEQCL_ERR_IO, "%s: cannot create a temporary folder next to it: %s", final,
                   strerror(e));
  }
  /* mkdtemp makes it private; the result is an ordinary folder */
  mode_t mask = umask(0);
  umask(mask);
  (void)chmod(*tmp, 0777 & ~mask);
  return SEQCL_OK;
}

static void remove_tree_at(const char *dir, int depth) {
  DIR *d = depth < 16 ? opendir(dir) : NULL;
  if (d) {
    struct dirent *e;
    while ((e = readdir(d))) {
      if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
      size_t n = strlen(dir) + strlen(e->d_name) + 2;
      char *p = malloc(n);
      if (!p) continue;
      snprintf(p, n, "%s/%s", dir, e->d_name);
      struct stat sb;
      if (lstat(p, &sb) == 0 && S_ISDIR(sb.st_mode))
        remove_tree_at(p, depth + 1);
      else
        unlink(p);
      free(p);
    }
    closedir(d);
  }
  rmdir(dir);
}

void sq_dir_remove_tree(const char *dir) {
  if (dir) remove_tree_at(dir, 0);
}

seqcl_status sq_dir_replace(const char *tmp, const char *final, const char *carry) {
  struct stat sb;
  char *old = NULL;
  if (lstat(final, &sb) == 0) {
    /* A folder cannot be renamed over a non-empty one: move the old one aside
     * (a fresh unique name: mkdtemp, then free the name for rename). */
    old = sibling_name(final, "old");
    if (!old) return sq_fail(NULL, SEQCL_ERR_OUT_OF_MEMORY, "%s: out of host memory", final);
    if (!mkdtemp(old) || rmdir(old) != 0 || rename(final, old) != 0) {
      int e = errno;
      free(old);
      sq_dir_remove_tree(tmp);
      return sq_fail(NULL, SEQCL_ERR_IO, "%s: cannot move the previous folder aside: %s", final,
                     strerror(e));
    }
  }
  if (rename(tmp, final) != 0) {
    int e = errno;
    sq_dir_remove_tree(tmp);
    if (old) (void)rename(old, final);
    free(old);
    return sq_fail(NULL, SEQCL_ERR_IO, "%s: cannot put the new folder in place: %s", final,
                   strerror(e));
  }
  seqcl_status st = SEQCL_OK;
  if (old && carry) {
    size_t n = strlen(old) + strlen(final) + 2 * strlen(carry) + 4;
    char *from = malloc(n), *to = malloc(n);
    struct stat cb;
    if (from && to) {
      snprintf(from, n, "%s/%s", old, carry);
      snprintf(to, n, "%s/%s", final, carry);
      if (lstat(from, &cb) == 0 && rename(from, to) != 0) {
        /* keep the old folder (and what it holds) rather than lose it */
        st = sq_fail(NULL, SEQCL_ERR_IO, "%s: cannot move %s into the new folder: %s; the old "
                     "folder stays at %s", final, carry, strerror(errno), old);
      }
    } else {
      st = sq_fail(NULL, SEQCL_ERR_OUT_OF_MEMORY, "%s: out of host memory", final);
    }
    free(from);
    free(to);
  }
  sq_sync_folder_of(final);
  if (old && st == SEQCL_OK) sq_dir_remove_tree(old);
  free(old);
  return st;
}
