/* The --save DIR rules (save_dir.h). */
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
#include "train/save_dir.h"

/* What seqcl itself puts in a model folder (temporary names of an interrupted
 * write, ".NAME.tmp.XXXXXX" / "NAME.tmp.XXXXXX", too). */
static int seqcl_entry(const char *name) {
  static const char *const known[] = {"config.json", "model.safetensors", "checkpoint",
                                      "src.vocab", "tgt.vocab"};
  for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
    if (!strcmp(name, known[i])) return 1;
  return strstr(name, ".tmp.") != NULL || strstr(name, ".old.") != NULL;
}

/* 0: empty; 1: a seqcl model folder; -1: holds *other (a foreign entry). */
static int folder_kind(const char *dir, char *other, size_t cap) {
  DIR *d = opendir(dir);
  if (!d) return -1;
  int entries = 0, ours = 0, foreign = 0;
  struct dirent *e;
  while ((e = readdir(d))) {
    if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
    entries++;
    if (seqcl_entry(e->d_name)) {
      ours |= !strcmp(e->d_name, "config.json") || !strcmp(e->d_name, "checkpoint");
    } else if (!foreign) {
      foreign = 1;
      snprintf(other, cap, "%s", e->d_name);
    }
  }
  closedir(d);
  if (!entries) return 0;
  if (foreign) return -1;
  if (!ours) {
    snprintf(other, cap, "no config.json");
    return -1;
  }
  return 1;
}

static int same_file(const char *a, const char *b) {
  struct stat sa, sb;
  return a && b && stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_dev == sb.st_dev &&
         sa.st_ino == sb.st_ino;
}

/* The folder that will hold the temporary copy must be writable. */
static seqcl_status parent_writable(seqcl_ctx *ctx, const char *dir, const char *why) {
  char probe[4200];
  snprintf(probe, sizeof probe, "%s", dir);
  size_t n = strlen(probe);
  while (n > 1 && probe[n - 1] == '/') probe[--n] = '\0';
  char *slash = strrchr(probe, '/');
  const char *parent = ".";
  if (slash == probe) parent = "/";
  else if (slash) *slash = '\0', parent = probe;
  struct stat sb;
  if (stat(parent, &sb) != 0 || !S_ISDIR(sb.st_mode))
    return sq_fail(ctx, SEQCL_ERR_IO, "--save %s: folder '%s' does not exist", dir, parent);
  if (access(parent, W_OK | X_OK) != 0)
    return sq_fail(ctx, SEQCL_ERR_IO, "--save %s: folder '%s' is not writable (%s)%s", dir, parent,
                   strerror(errno), why);
  return SEQCL_OK;
}

seqcl_status sq_save_dir_check(seqcl_ctx *ctx, const char *dir_in, int overwrite,
                               const char *resume_dir, sq_save_plan *plan) {
  plan->replace = 0;
  if (!dir_in || !*dir_in)
    return sq_fail(ctx, SEQCL_ERR_INVALID_ARGUMENT, "train: --save DIR is required");
  char *dir = NULL;
  SQ_TRY(sq_path_resolve(dir_in, &dir)); /* a link to a folder: the folder is the target */
  seqcl_status st = SEQCL_OK;
  struct stat sb;
  if (stat(dir, &sb) != 0) {
    if (errno != ENOENT)
      st = sq_fail(ctx, SEQCL_ERR_IO, "--save %s: %s", dir_in, strerror(errno));
    else
      st = parent_writable(ctx, dir, "");
    goto done;
  }
  if (!S_ISDIR(sb.st_mode)) {
    st = sq_fail(ctx, SEQCL_ERR_IO, "--save %s: exists and is not a folder", dir_in);
    goto done;
  }
  if (access(dir, W_OK | X_OK) != 0) {
    st = sq_fail(ctx, SEQCL_ERR_IO, "--save %s: the folder is not writable (%s)", dir_in,
                 strerror(errno));
    goto done;
  }
  char other[300] = "";
  int kind = folder_kind(dir, other, sizeof other);
  if (kind == 0) goto done; /* empty: written into */
  if (kind < 0) {
    st = sq_fail(ctx, SEQCL_ERR_IO,
                 "--save %s: the folder is not empty and is not a seqcl model folder (%s); "
                 "give a new or empty folder",
                 dir_in, other);
    goto done;
  }
  char *ck = malloc(strlen(dir) + 16);
  if (ck) snprintf(ck, strlen(dir) + 16, "%s/checkpoint", dir);
  const int resumed = resume_dir && (same_file(resume_dir, dir) || same_file(resume_dir, ck));
  free(ck);
  if (overwrite) {
    plan->replace = 1;
    st = parent_writable(ctx, dir, "; --overwrite builds the new folder next to the old one");
  } else if (!resumed) {
    st = sq_fail(ctx, SEQCL_ERR_IO,
                 "--save %s: already holds a seqcl model; pass --overwrite to replace it whole "
                 "(or, training on files, --resume %s to continue its checkpoint)",
                 dir_in, dir_in);
  }
done:
  free(dir);
  return st;
}
