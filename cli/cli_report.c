#include "cli_report.h"

#include "cli.h"
#include "core/fileio.h"

int cli_write_reports(const char *cmd, const char *json_path, json_t *root,
                      const char *svg_path, int (*draw)(FILE *f, const void *user),
                      const void *user) {
  sq_outfile jf = {0}, sf = {0};
  int jopen = 0, sopen = 0;
  const char *bad = NULL; /* the file whose writing failed */
  seqcl_status st = SEQCL_OK;
  if (json_path && (st = sq_outfile_open(json_path, &jf)) == SEQCL_OK) {
    jopen = 1;
    if (json_dumpf(root, jf.f, JSON_INDENT(2)) != 0 || fputc('\n', jf.f) == EOF) bad = json_path;
  }
  if (st == SEQCL_OK && !bad && svg_path && (st = sq_outfile_open(svg_path, &sf)) == SEQCL_OK) {
    sopen = 1;
    if (draw(sf.f, user) != 0) bad = svg_path;
  }
  if (st == SEQCL_OK && !bad && jopen) jopen = 0, st = sq_outfile_commit(&jf);
  if (st == SEQCL_OK && !bad && sopen) {
    sopen = 0;
    /* the JSON is already in place: take it back so that neither stays */
    if ((st = sq_outfile_commit(&sf)) != SEQCL_OK && json_path) sq_output_remove(json_path);
  }
  json_decref(root);
  if (jopen) sq_outfile_abort(&jf);
  if (sopen) sq_outfile_abort(&sf);
  if (st != SEQCL_OK) return cli_fail(cmd, st);
  return bad ? cli_runtime_error(cmd, "%s: write failed", bad) : CLI_OK;
}
