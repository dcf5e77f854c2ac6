/* The library's one file reader and one output writer.
 *
 * Every output seqcl writes (a model, a checkpoint, --out, --alignments, an SVG
 * heatmap, a JSON report, a program-cache entry) goes through sq_outfile, so
 * the rules below hold everywhere:
 *   - "-", /dev/stdout and /dev/fd/1 are the standard output, written in place;
 *   - a path that is a symlink is resolved and its target is replaced (the link
 *     stays a link);
 *   - an existing file that is not a regular file (a FIFO, a character device,
 *     a socket) is opened and written in order, never renamed over: bytes
 *     already delivered there cannot be taken back;
 *   - a regular file is written to "NAME.tmp.XXXXXX" in its own folder and
 *     renamed over NAME only once everything was written and flushed, so on any
 *     failure nothing is left at the path (and an old file stays as it was);
 *   - an existing read-only file is refused (SEQCL_ERR_IO, exit status 2), even
 *     though renaming over it would succeed, and so is a folder.
 * sq_output_check applies the same rules without writing anything, so a command
 * can refuse a bad output path before it starts any work. */
#ifndef SQ_CORE_FILEIO_H
#define SQ_CORE_FILEIO_H

#include <stddef.h>
#include <stdio.h>

#include <seqcl/seqcl.h>

/* Reads a whole file ("-" = standard input) into a malloc'd buffer with a NUL
 * after the last byte (not counted in *len). Reads until end of file, so a file
 * that shrinks or grows while being read yields the bytes actually read.
 * Errors are SEQCL_ERR_IO naming the file. */
seqcl_status sq_file_read_all(const char *path, unsigned char **buf, size_t *len);
/* How messages name path: "standard input" for "-", else path itself. */
const char *sq_path_shown(const char *path);
/* A text file read whole for one of the parsers (config, vocabulary, tokens,
 * text, words): sq_file_read_all's bytes and their count, and the name the
 * parser's messages give the file (sq_path_shown). The caller frees text. */
typedef struct sq_text_in {
  char *text;
  size_t len;
  const char *name;
} sq_text_in;
seqcl_status sq_text_in_read(const char *path, sq_text_in *in);
/* The lines of text[0..len), one per sq_lines_next: [*start, *stop) is the
 * next line without its "\n" and without a "\r" right before it (CRLF); 0
 * after the last line. A last line without "\n" is a line; a text that ends
 * in "\n" has no empty line after it. Start with {text, len, 0}. */
typedef struct sq_lines {
  const char *text;
  size_t len, pos;
} sq_lines;
int sq_lines_next(sq_lines *l, size_t *start, size_t *stop);
/* "dir/name" in a malloc'd string (the caller frees it); NULL when out of memory. */
char *sq_path_join(const char *dir, const char *name);

typedef struct sq_outfile {
  FILE *f;     /* write here */
  char *path;  /* as given, for messages */
  char *final; /* the file replaced at commit: path, or the symlink's target */
  char *tmp;   /* the temporary file; NULL when written in place */
  int mode;    /* permission bits the result gets (an old file's, else 0666 & ~umask) */
} sq_outfile;

/* Opens an output under the rules above. */
seqcl_status sq_outfile_open(const char *path, sq_outfile *out);
/* Flushes (and for a regular file fsyncs and renames into place); closes. */
seqcl_status sq_outfile_commit(sq_outfile *o);
/* Closes and removes the temporary file; the path keeps what it held before. */
void sq_outfile_abort(sq_outfile *o);
/* Writes len bytes to path through sq_outfile (open, write, commit). */
seqcl_status sq_file_write_all(const char *path, const void *data, size_t len);
/* Writes text and a newline to path the same way (a JSON document: config.json,
 * training.json); a failed write is SEQCL_ERR_IO "what: cannot write PATH:
 * reason", recorded on ctx too when it is not NULL. */
seqcl_status sq_file_write_line(seqcl_ctx *ctx, const char *path, const char *text,
                                const char *what);

/* Checks, without creating anything, that path can be written under the rules
 * above: "-" and existing non-regular files pass; an existing regular file must
 * be writable; otherwise its folder must exist, be a folder and be writable.
 * what names the option in the message ("--out"). SEQCL_ERR_IO otherwise. */
seqcl_status sq_output_check(const char *path, const char *what);

/* Takes back an output committed earlier when a later step of the same
 * command failed: a regular file (a symlink's target) is removed; stdout and
 * non-regular files are left alone, since what was delivered there is gone. */
void sq_output_remove(const char *path);

/* The path a symlink chain ends at (the path itself when it is not a symlink;
 * a dangling link gives its missing target). *out is malloc'd. */
seqcl_status sq_path_resolve(const char *path, char **out);

/* The folder part of path ("." when there is none, "/" for the root);
 * malloc'd, NULL when out of memory. */
char *sq_path_folder(const char *path);
/* Makes a rename in file's folder durable: fsync of the folder, best effort
 * (some file systems refuse a folder fsync). */
void sq_sync_folder_of(const char *file);

/* ---- folders written whole (folders.c) ---- */

/* Creates an empty folder "PARENT/.NAME.tmp.XXXXXX" next to final (mode 0755
 * & ~umask); *tmp is malloc'd. */
seqcl_status sq_dir_make_temp(const char *final, char **tmp);
/* Puts folder tmp in place of final: an existing final is moved aside, tmp
 * renamed to final, then the old tree removed. When carry is not NULL, the old
 * folder's entry of that name (if any) is moved into the new one first. On
 * failure the old final is put back and tmp removed. */
seqcl_status sq_dir_replace(const char *tmp, const char *final, const char *carry);
/* Removes a folder tree (never follows symlinks); errors are ignored. */
void sq_dir_remove_tree(const char *dir);

#endif
