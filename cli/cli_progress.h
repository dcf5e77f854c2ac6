/* Progress of long commands on stderr: on a terminal a bar redrawn at most ten
 * times a second, shown once the work has taken a second (lines done, lines/s,
 * ETA); elsewhere, with -v, a plain line every few seconds and one at the end.
 * -q/--quiet silences both. */
#ifndef SEQCL_CLI_PROGRESS_H
#define SEQCL_CLI_PROGRESS_H

#include <stddef.h>

typedef struct cli_progress {
  const char *cmd, *unit; /* "decode", "lines" */
  int tty, drawn, plain;  /* terminal; bar on screen; plain lines printed */
  double t0, last;
  double show_after; /* seconds before anything is shown */
  size_t done, total;
} cli_progress;

/* Seconds on the monotonic clock (a difference of two is a duration). */
double cli_now(void);
/* A progress bar's cells as a string: '#' for the part done, '.' for the
 * rest; all '#' when total is 0. Shared by this bar and the training bars of
 * train and demo, so that they look alike. */
enum { CLI_BAR_WIDTH = 30 };
void cli_bar_cells(char cells[CLI_BAR_WIDTH + 1], double done, double total);
void cli_progress_start(cli_progress *p, const char *cmd, const char *unit);
/* A seqcl_progress_fn: user is the cli_progress. Returns 1 after Ctrl-C (so
 * that the library call stops), else 0. */
int cli_progress_update(void *user, size_t done, size_t total);
/* Ends the bar's line (or prints the last plain line). */
void cli_progress_end(cli_progress *p);

#endif
