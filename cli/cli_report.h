/* A command's two report files, a JSON document and an SVG picture, written
 * together under core/fileio.h's rules: each to a temporary file first, both
 * renamed into place only when both were written, so a failure leaves
 * neither (and older files as they were). */
#ifndef SEQCL_CLI_REPORT_H
#define SEQCL_CLI_REPORT_H

#include <stdio.h>

#include <jansson.h>

/* json_path / svg_path may be NULL (not asked for); root (the document, NULL
 * when not asked for) is released here. draw writes the SVG to f and returns
 * 0, or -1 on failure. An exit status. */
int cli_write_reports(const char *cmd, const char *json_path, json_t *root,
                      const char *svg_path, int (*draw)(FILE *f, const void *user),
                      const void *user);

#endif
