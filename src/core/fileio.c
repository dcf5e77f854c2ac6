/* The one file reader and the one output writer (rules in fileio.h). */
#define _POSIX_C_SOURCE 200809L
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/error.h"
#include "core/fileio.h"
#include "core/hostmem.h"

/* Symlink chains longer than this are refused, as the kernel's ELOOP does. */
#define MAX_LINKS 40

static int is_stdin_name(const char *path) { return strcmp(path, "-") == 0; }

/* Names of the standard output. Opening /dev/stdout anew would give a second
 * file description (its own offset; a rename through /proc would even replace
 * the shell's redirect target): write to the process's stdout instead. */
static int is_stdout_name(const char *path) {
  return !strcmp(path, "-") || !strcmp(path, "/dev/stdout") || !strcmp(path, "/dev/fd/1") ||
         !strcmp(path, "/proc/self/fd/1");
}

const char *sq_path_shown(const char *path) {
  return is_stdin_name(path) ? "standard input" : path;
}

char *sq_path_join(const char *dir, const char *name) {
  size_t n = strlen(dir) + strlen(name) + 2;
  char *p = malloc(n);
  if (p) snprintf(p, n, "%s/%s", dir, name);
  return p;
}

seqcl_status sq_text_in_read(const char *path, sq_text_in *in) {
  unsigned char *bytes = NULL;
  in->text = NULL;
  in->len = 0;
  in->name = path ? sq_path_shown(path) : NULL;
  SQ_TRY(sq_file_read_all(path, &bytes, &in->len));
  in->text = (char *)bytes;
  return SEQCL_OK;
}

int sq_lines_next(sq_lines *l, size_t *start, size_t *stop) {
  if (l->pos >= l->len) return 0;
  const char *nl = memchr(l->text + l->pos, '\n', l->len - l->pos);
  const size_t end = nl ? (size_t)(nl - l->text) : l->len;
  *start = l->pos;
  *stop = end > l->pos && l->text[end - 1] == '\r' ? end - 1 : end;
  l->pos = end + 1;
  return 1;
}

seqcl_status sq_file_read_all(const char *path, unsigned char **buf, size_t *len) {
  if (!buf || !len || !path)
    return sq_fail(NULL, SEQCL_ERR_INVALID_ARGUMENT, "sq_file_read_all: NULL argument");
  *buf = NULL;
  *len = 0;
  const char *shown = sq_path_shown(path);
  FILE *f = is_stdin_name(path) ? stdin : fopen(path, "rb");
  if (!f) return sq_fail(NULL, SEQCL_ERR_IO, "%s: cannot open: %s", shown, strerror(errno));

  /* The size from fstat is only a first guess: read until end of file. */
  size_t cap = 1 << 16;
  struct stat sb;
  if (fstat(fileno(f), &sb) == 0 && S_ISDIR(sb.st_mode)) {
    fclose(f);
    return sq_fail(NULL, SEQCL_ERR_IO, "%s: is a folder, not a file", shown);
  }
  if (fstat(fileno(f), &sb) == 0 && S_ISREG(sb.st_mode) && sb.st_size > 0 &&
      (unsigned long long)sb.st_size < (unsigned long long)(SIZE_MAX / 2))
    cap = (size_t)sb.st_size + 1;
  unsigned char *data = sq_hostmem_alloc(cap + 1);
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

/* ---- paths ---- */

char *sq_path_folder(const char *path) {
  const char *slash = strrchr(path, '/');
  if (!slash) return strdup(".");
  if (slash == path) return strdup("/");
  size_t n = (size_t)(slash - path);
  char *d = malloc(n + 1);
  if (d) {
    memcpy(d, path, n);
    d[n] = '\0';
  }
  return d;
}

seqcl_status sq_path_resolve(const char *path, char **out) {
  *out = NULL;
  char *cur = strdup(path);
  if (!cur) return sq_fail(NULL, SEQCL_ERR_OUT_OF_MEMORY, "%s: out of host memory", path);
  for (int hops = 0;; hops++) {
    struct stat sb;
    if (lstat(cur, &sb) != 0 || !S_ISLNK(sb.st_mode)) break;
    if (hops == MAX_LINKS) {
      free(cur);
      return sq_fail(NULL, SEQCL_ERR_IO, "%s: too many levels of symbolic links", path);
    }
    char target[4096];
    ssize_t n = readlink(cur, target, sizeof target - 1);
    if (n < 0 || (size_t)n >= sizeof target - 1) {
      int e = n < 0 ? errno : ENAMETOOLONG;
      free(cur);
      return sq_fail(NULL, SEQCL_ERR_IO, "%s: cannot read the symbolic link: %s", path, strerror(e));
    }
    target[n] = '\0';
    char *next;
    if (target[0] == '/') {
      next = strdup(target);
    } else {
      /* a relative target is relative to the folder holding the link */
      char *dir = sq_path_folder(cur);
      size_t len = (dir ? strlen(dir) : 0) + (size_t)n + 2;
      next = dir ? malloc(len) : NULL;
      if (next) snprintf(next, len, "%s/%s", dir, target);
      free(dir);
    }
    free(cur);
    if (!next) return sq_fail(NULL, SEQCL_ERR_OUT_OF_MEMORY, "%s: out of host memory", path);
    cur = next;
  }
  *out = cur;
  return SEQCL_OK;
}

/* "--out PATH" or "PATH" at the head of messages. */
static void label(char *buf, size_t cap, const char *what, const char *path) {
  if (what && *what)
    snprintf(buf, cap, "%s %s", what, path);
  else
    snprintf(buf, cap, "%s", path);
}

/* The folder a new file `final` goes into must exist and be writable. */
static seqcl_status check_folder(const char *shown, const char *final) {
  char *dir = sq_path_folder(final);
  if (!dir) return sq_fail(NULL, SEQCL_ERR_OUT_OF_MEMORY, "%s: out of host memory", shown);
  struct stat sb;
  seqcl_status st = SEQCL_OK;
  if (stat(dir, &sb) != 0)
    st = sq_fail(NULL, SEQCL_ERR_IO, "%s: folder '%s' does not exist (%s)", shown, dir,
                 strerror(errno));
  else if (!S_ISDIR(sb.st_mode))
    st = sq_fail(NULL, SEQCL_ERR_IO, "%s: '%s' is not a folder", shown, dir);
  else if (access(dir, W_OK | X_OK) != 0)
    st = sq_fail(NULL, SEQCL_ERR_IO,
                 "%s: folder '%s' is not writable (%s); the output is written to a temporary "
                 "file there and renamed into place",
                 shown, dir, strerror(errno));
  free(dir);
  return st;
}

/* What an output path is: 1 written in place (stdout or a non-regular file),
 * 0 replaced by rename (*final and *mode set). */
static seqcl_status classify(const char *path, const char *what, char **final, int *mode,
                             int *in_place) {
  char shown[4200];
  label(shown, sizeof shown, what, path);
  *final = NULL;
  *in_place = 0;
  mode_t mask = umask(0);
  umask(mask);
  *mode = (int)(0666 & ~mask);
  if (!*path) return sq_fail(NULL, SEQCL_ERR_INVALID_ARGUMENT, "%s: empty path", what ? what : "output");
  if (is_stdout_name(path)) {
    *in_place = 1;
    return SEQCL_OK;
  }
  struct stat sb;
  if (stat(path, &sb) == 0) {
    if (S_ISDIR(sb.st_mode))
      return sq_fail(NULL, SEQCL_ERR_IO, "%s: is a folder, not a file", shown);
    if (!S_ISREG(sb.st_mode)) {
      *in_place = 1;
      return SEQCL_OK;
    }
    SQ_TRY(sq_path_resolve(path, final));
    if (access(*final, W_OK) != 0) {
      int e = errno;
      free(*final);
      *final = NULL;
      return sq_fail(NULL, SEQCL_ERR_IO, "%s: the file exists and is not writable (%s); not overwritten",
                     shown, strerror(e));
    }
    *mode = (int)(sb.st_mode & 07777);
  } else if (errno == ENOENT) {
    SQ_TRY(sq_path_resolve(path, final)); /* a dangling link: its target is created */
  } else {
    return sq_fail(NULL, SEQCL_ERR_IO, "%s: %s", shown, strerror(errno));
  }
  seqcl_status st = check_folder(shown, *final);
  if (st != SEQCL_OK) {
    free(*final);
    *final = NULL;
  }
  return st;
}

seqcl_status sq_output_check(const char *path, const char *what) {
  if (!path) return sq_fail(NULL, SEQCL_ERR_INVALID_ARGUMENT, "sq_output_check: path is NULL");
  char *final = NULL;
  int mode, in_place;
  seqcl_status st = classify(path, what, &final, &mode, &in_place);
  free(final);
  return st;
}

void sq_output_remove(const char *path) {
  if (!path || is_stdout_name(path)) return;
  char *final = NULL;
  struct stat sb;
  if (sq_path_resolve(path, &final) == SEQCL_OK && lstat(final, &sb) == 0 && S_ISREG(sb.st_mode))
    unlink(final);
  else
    sq_clear_message();
  free(final);
}

/* ---- the writer ---- */

seqcl_status sq_outfile_open(const char *path, sq_outfile *out) {
  if (!out) return sq_fail(NULL, SEQCL_ERR_INVALID_ARGUMENT, "sq_outfile_open: out is NULL");
  memset(out, 0, sizeof *out);
  if (!path || !*path)
    return sq_fail(NULL, SEQCL_ERR_INVALID_ARGUMENT, "sq_outfile_open: empty path");
  int in_place = 0;
  SQ_TRY(classify(path, NULL, &out->final, &out->mode, &in_place));
  out->path = strdup(path);
  if (!out->path) {
    sq_outfile_abort(out);
    return sq_fail(NULL, SEQCL_ERR_OUT_OF_MEMORY, "%s: out of host memory", path);
  }
  if (in_place) {
    if (is_stdout_name(path)) {
      out->f = stdout;
      return SEQCL_OK;
    }
    /* No O_TRUNC, no O_CREAT: a FIFO or a device is written as it is. */
    int fd = open(path, O_WRONLY | O_NOCTTY);
    if (fd < 0 || !(out->f = fdopen(fd, "wb"))) {
      int e = errno;
      if (fd >= 0) close(fd);
      sq_outfile_abort(out);
      return sq_fail(NULL, SEQCL_ERR_IO, "%s: cannot open for writing: %s", path, strerror(e));
    }
    return SEQCL_OK;
  }
  size_t n = strlen(out->final);
  static const char suffix[] = ".tmp.XXXXXX";
  out->tmp = malloc(n + sizeof suffix);
  if (!out->tmp) {
    sq_outfile_abort(out);
    return sq_fail(NULL, SEQCL_ERR_OUT_OF_MEMORY, "%s: out of host memory", path);
  }
  memcpy(out->tmp, out->final, n);
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
  /* mkstemp creates the file 0600: give the result the old file's mode, or the
   * mode a plain fopen would. */
  (void)fchmod(fd, (mode_t)out->mode);
  out->f = fdopen(fd, "wb");
  if (!out->f) {
    int e = errno;
    close(fd);
    sq_outfile_abort(out);
    return sq_fail(NULL, SEQCL_ERR_IO, "%s: cannot open the temporary file: %s", path, strerror(e));
  }
  return SEQCL_OK;
}

void sq_sync_folder_of(const char *file) {
  char *dir = sq_path_folder(file);
  if (!dir) return;
  int fd = open(dir, O_RDONLY | O_DIRECTORY);
  if (fd >= 0) {
    (void)fsync(fd);
    close(fd);
  }
  free(dir);
}

seqcl_status sq_outfile_commit(sq_outfile *o) {
  if (!o || !o->f || !o->path)
    return sq_fail(NULL, SEQCL_ERR_INVALID_ARGUMENT, "sq_outfile_commit: file is not open");
  seqcl_status st = SEQCL_OK;
  const char *shown = o->f == stdout ? "standard output" : o->path;
  int failed = fflush(o->f) != 0 || ferror(o->f);
  int e = errno;
  if (o->f != stdout) {
    /* fsync a regular file only: on a FIFO or a terminal it means nothing */
    if (!failed && o->tmp && fsync(fileno(o->f)) != 0 && errno != EINVAL && errno != EROFS) {
      failed = 1;
      e = errno;
    }
    if (fclose(o->f) != 0 && !failed) {
      failed = 1;
      e = errno;
    }
  }
  o->f = NULL;
  if (!failed && o->tmp) {
    if (rename(o->tmp, o->final) != 0) {
      failed = 1;
      e = errno;
    } else {
      free(o->tmp);
      o->tmp = NULL;
      sq_sync_folder_of(o->final);
    }
  }
  if (failed) st = sq_fail(NULL, SEQCL_ERR_IO, "%s: write failed: %s", shown, strerror(e));
  sq_outfile_abort(o);
  return st;
}

void sq_outfile_abort(sq_outfile *o) {
  if (!o) return;
  if (o->f && o->f != stdout) fclose(o->f);
  if (o->tmp) unlink(o->tmp);
  free(o->tmp);
  free(o->final);
  free(o->path);
  memset(o, 0, sizeof *o);
}

seqcl_status sq_file_write_all(const char *path, const void *data, size_t len) {
  sq_outfile o;
  SQ_TRY(sq_outfile_open(path, &o));
  if (len && fwrite(data, 1, len, o.f) != len) {
    int e = errno;
    sq_outfile_abort(&o);
    return sq_fail(NULL, SEQCL_ERR_IO, "%s: write failed: %s", path, strerror(e));
  }
  return sq_outfile_commit(&o);
}

seqcl_status sq_file_write_line(seqcl_ctx *ctx, const char *path, const char *text,
                                const char *what) {
  sq_outfile o;
  SQ_TRY(sq_outfile_open(path, &o));
  if (fputs(text, o.f) < 0 || fputc('\n', o.f) < 0) {
    int e = errno; /* the write's reason, before abort's own calls */
    sq_outfile_abort(&o);
    return sq_fail(ctx, SEQCL_ERR_IO, "%s: cannot write %s: %s", what, path, strerror(e));
  }
  return sq_outfile_commit(&o);
}
