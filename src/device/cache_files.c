#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/error.h"
#include "core/paths.h"
#include "device/cache_files.h"

static int has_suffix(const char *name, const char *suffix) {
  size_t n = strlen(name), s = strlen(suffix);
  return n > s && !strcmp(name + n - s, suffix);
}

static int is_entry(const char *name) {
  return has_suffix(name, SQ_PROGRAM_SUFFIX) || has_suffix(name, SQ_POLICY_SUFFIX);
}

/* program.c's ".tmp-XXXXXX", gemm_policy.c's "<entry>.tmp-<pid>" */
static int is_temp(const char *name) { return strstr(name, ".tmp-") != NULL; }

/* Walks <cache>/programs; with remove, deletes entries and temporary files. */
static seqcl_status walk(char *dir, size_t cap, int remove, size_t *entries, uint64_t *bytes) {
  *entries = 0;
  *bytes = 0;
  SQ_TRY(sq_cache_dir(dir, cap, 0));
  char path[4096 + 300];
  snprintf(path, sizeof path, "%s/%s", dir, SQ_PROGRAMS_SUBDIR);
  DIR *d = opendir(path);
  if (!d) {
    if (errno == ENOENT) return SEQCL_OK;
    return sq_fail(NULL, SEQCL_ERR_IO, "cannot open cache folder '%s': %s", path, strerror(errno));
  }
  seqcl_status st = SEQCL_OK;
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    int entry = is_entry(e->d_name);
    if (!entry && !(remove && is_temp(e->d_name))) continue;
    char file[4096 + 600];
    snprintf(file, sizeof file, "%s/%s", path, e->d_name);
    struct stat sb;
    if (stat(file, &sb) != 0 || !S_ISREG(sb.st_mode)) continue;
    if (remove && unlink(file) != 0 && errno != ENOENT) {
      st = sq_fail(NULL, SEQCL_ERR_IO, "cannot remove cache entry '%s': %s", file, strerror(errno));
      break;
    }
    if (entry) {
      (*entries)++;
      *bytes += (uint64_t)sb.st_size;
    }
  }
  closedir(d);
  return st;
}

seqcl_status sq_cache_summarize(sq_cache_summary *out) {
  if (!out) return sq_fail(NULL, SEQCL_ERR_INVALID_ARGUMENT, "sq_cache_summarize: NULL output");
  memset(out, 0, sizeof *out);
  out->enabled = sq_cache_enabled();
  return walk(out->dir, sizeof out->dir, 0, &out->entries, &out->bytes);
}

seqcl_status sq_cache_clear(size_t *removed) {
  char dir[4096];
  size_t n = 0;
  uint64_t bytes = 0;
  seqcl_status st = walk(dir, sizeof dir, 1, &n, &bytes);
  if (removed) *removed = n;
  return st;
}

int sq_cache_entry_path(const char *stem, const char *suffix, int create, char *path,
                        size_t cap) {
  if (!sq_cache_enabled()) return 0;
  char dir[4096];
  int ok = sq_cache_dir(dir, sizeof dir, create) == SEQCL_OK;
  if (ok && create) {
    char sub[4096 + 32];
    snprintf(sub, sizeof sub, "%s/%s", dir, SQ_PROGRAMS_SUBDIR);
    ok = mkdir(sub, 0755) == 0 || errno == EEXIST;
  }
  if (!ok) {
    sq_clear_message();
    return 0;
  }
  int n = snprintf(path, cap, "%s/%s/%s%s", dir, SQ_PROGRAMS_SUBDIR, stem, suffix);
  return n > 0 && (size_t)n < cap;
}
