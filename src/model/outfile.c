/* Whole-file reads and crash-safe output files.
 *
 * Outputs go to "path.tmp.XXXXXX" in the destination's folder (so the final
 * rename stays on one file system and is atomic) and are renamed into place only
 * once everything was written and flushed: on any failure nothing is left at path. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/error.h"
#include "model/tokens.h"

static int is_stdio(const char *path) { return strcmp(path, "-") == 0; }

seqcl_status sq_file_read_all(const char *path, unsigned char **buf, size_t *len) {
  if (!buf || !len || !path)
    return sq_fail(NULL, SEQCL_ERR_INVALID_ARGUMENT, "sq_file_read_all: NULL argument");
  *buf = NULL;
  *len = 0;
  const char *shown = is_stdio(path) ? "standard input" : path;
  FILE *f = is_stdio(path) ? stdin : fopen(path, "rb");
  if (!f) return sq_fail(NULL, SEQCL_ERR_IO, "%s: cannot open: %s", shown, strerror(errno));

  /* The size from fstat is only a first guess: read until end of file. */
  size_t cap = 1 << 16;
  struct stat sb;
  if (fstat(fileno(f), &sb) == 0 && S_ISREG(sb.st_mode) && sb.st_size > 0 &&
      (unsigned long long)sb.st_size < (unsigned long long)(SIZE_MAX / 2))
    cap = (size_t)sb.st_size + 1;
  unsigned char *data = malloc(cap + 1);
  size_t used = 0;
  seqcl_status st = SEQCL_OK;
  if (!data) st = sq_fail(NULL, SEQCL_ERR_OUT_OF_MEMORY, "%s: out of host memory", shown);
  while (st == SEQCL_OK) {
    if (used == cap) {
      if (cap > SIZE_MAX / 4) {
        st = sq_fail(NULL, SEQCL_ERR_OUT_OF_MEMORY, "%s: file too large", shown);
        break;
      }
      unsigned char *bigger = realloc(data, cap * 2 + 1);
      if (!bigger) {
        st = sq_fail(NULL, SEQCL_ERR_OUT_OF_MEMORY, "%s: out of host memory", shown);
        break;
      }
      data = bigger;
      cap *= 2;
    }
    size_t got = fread(data + used, 1, cap - used, f);
    used += got;
    if (got == 0) {
      if (ferror(f)) st = sq_fail(NULL, SEQCL_ERR_IO, "%s: read failed: %s", shown, strerror(errno));
      break;
    }
  }
  if (f != stdin) fclose(f);
  if (st != SEQCL_OK) {
    free(data);
    return st;
  }
  data[used] = '\0';
  *buf = data;
  *len = used;
  return SEQCL_OK;
}

seqcl_status sq_outfile_open(const char *path, sq_outfile *out) {
  if (!out) return sq_fail(NULL, SEQCL_ERR_INVALID_ARGUMENT, "sq_outfile_open: out is NULL");
  memset(out, 0, sizeof *out);
  if (!path || !*path)
    return sq_fail(NULL, SEQCL_ERR_INVALID_ARGUMENT, "sq_outfile_open: empty path");
  out->path = strdup(path);
  if (!out->path) return sq_fail(NULL, SEQCL_ERR_OUT_OF_MEMORY, "%s: out of host memory", path);
  if (is_stdio(path)) {
    out->f = stdout;
    return SEQCL_OK;
  }
  size_t n = strlen(path);
  static const char suffix[] = ".tmp.XXXXXX";
  out->tmp = malloc(n + sizeof suffix);
  if (!out->tmp) {
    sq_outfile_abort(out);
    return sq_fail(NULL, SEQCL_ERR_OUT_OF_MEMORY, "%s: out of host memory", path);
  }
  memcpy(out->tmp, path, n);
  memcpy(out->tmp + n, suffix, sizeof suffix);
  int fd = mkstemp(out->tmp);
  if (fd < 0) {
    int e = errno;
    free(out->tmp);
    out->tmp = NULL;
    sq_outfile_abort(out);
    return sq_fail(NULL, SEQCL_ERR_IO, "%s: cannot create a temporary file in its folder: %s", path,
                   strerror(e));
  }
  /* mkstemp creates the file 0600; give the result the mode a plain fopen would. */
  mode_t mask = umask(0);
  umask(mask);
  (void)fchmod(fd, 0666 & ~mask);
  out->f = fdopen(fd, "wb");
  if (!out->f) {
    int e = errno;
    close(fd);
    sq_outfile_abort(out);
    return sq_fail(NULL, SEQCL_ERR_IO, "%s: cannot open the temporary file: %s", path, strerror(e));
  }
  return SEQCL_OK;
}

seqcl_status sq_outfile_commit(sq_outfile *o) {
  if (!o || !o->f || !o->path)
    return sq_fail(NULL, SEQCL_ERR_INVALID_ARGUMENT, "sq_outfile_commit: file is not open");
  seqcl_status st = SEQCL_OK;
  if (o->f == stdout) {
    if (fflush(stdout) != 0 || ferror(stdout))
      st = sq_fail(NULL, SEQCL_ERR_IO, "standard output: write failed: %s", strerror(errno));
    o->f = NULL;
    sq_outfile_abort(o);
    return st;
  }
  int failed = fflush(o->f) != 0 || ferror(o->f);
  int e = errno;
  if (!failed && fsync(fileno(o->f)) != 0 && errno != EINVAL && errno != EROFS) {
    failed = 1;
    e = errno;
  }
  if (fclose(o->f) != 0 && !failed) {
    failed = 1;
    e = errno;
  }
  o->f = NULL;
  if (!failed && rename(o->tmp, o->path) != 0) {
    failed = 1;
    e = errno;
  }
  if (failed) {
    st = sq_fail(NULL, SEQCL_ERR_IO, "%s: write failed: %s", o->path, strerror(e));
    unlink(o->tmp);
  }
  free(o->tmp);
  free(o->path);
  memset(o, 0, sizeof *o);
  return st;
}

void sq_outfile_abort(sq_outfile *o) {
  if (!o) return;
  if (o->f && o->f != stdout) fclose(o->f);
  if (o->tmp) unlink(o->tmp);
  free(o->tmp);
  free(o->path);
  memset(o, 0, sizeof *o);
}
