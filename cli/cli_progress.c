#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "cli_progress.h"

#define SHOW_AFTER_S 1.0   /* short jobs print nothing (SEQCL_PROGRESS_AFTER overrides it) */
#define TTY_EVERY_S 0.1
#define PLAIN_EVERY_S 2.0

double cli_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

void cli_bar_cells(char cells[CLI_BAR_WIDTH + 1], double done, double total) {
  const int filled = total > 0 ? (int)(CLI_BAR_WIDTH * done / total) : CLI_BAR_WIDTH;
  for (int i = 0; i < CLI_BAR_WIDTH; i++) cells[i] = i < filled ? '#' : '.';
  cells[CLI_BAR_WIDTH] = '\0';
}

void cli_progress_start(cli_progress *p, const char *cmd, const char *unit) {
  p->cmd = cmd;
  p->unit = unit;
  p->tty = isatty(fileno(stderr));
  p->drawn = p->plain = 0;
  p->t0 = p->last = cli_now();
  p->done = p->total = 0;
  /* cli_check_env has already refused a value that is not a number >= 0 */
  const char *after = getenv("SEQCL_PROGRESS_AFTER");
  double a;
  p->show_after = after && *after && cli_parse_float(after, &a) == 0 && a >= 0 ? a : SHOW_AFTER_S;
}

static void draw(cli_progress *p, double t) {
  const double el = t - p->t0 > 1e-9 ? t - p->t0 : 1e-9;
  const double rate = (double)p->done / el;
  const double eta = rate > 0 ? (double)(p->total - p->done) / rate : 0.0;
  if (p->tty) {
    char bar[CLI_BAR_WIDTH + 1];
    cli_bar_cells(bar, (double)p->done, (double)p->total);
    fprintf(stderr, "\r[%s] %zu/%zu %s  %.1f %s/s  ETA %.0f s ", bar, p->done, p->total, p->unit,
            rate, p->unit, eta);
    p->drawn = 1;
  } else {
    fprintf(stderr, "seqcl %s: %zu/%zu %s, %.1f %s/s, ETA %.0f s\n", p->cmd, p->done, p->total,
            p->unit, rate, p->unit, eta);
    p->plain = 1;
  }
  fflush(stderr);
}

int cli_progress_update(void *user, size_t done, size_t total) {
  cli_progress *p = user;
  if (cli_interrupted()) return 1;
  p->done = done, p->total = total;
  if (cli_quiet || (!p->tty && !cli_verbose)) return 0;
  double t = cli_now();
  if (t - p->t0 < p->show_after) return 0;
  if (t - p->last < (p->tty ? TTY_EVERY_S : PLAIN_EVERY_S) && (p->drawn || p->plain) &&
      done != total)
    return 0;
  p->last = t;
  draw(p, t);
  return 0;
}

void cli_progress_end(cli_progress *p) {
  if (p->drawn) {
    draw(p, cli_now());
    fputc('\n', stderr);
  } else if (!cli_quiet && !p->tty && cli_verbose && p->total) {
    draw(p, cli_now()); /* one plain line at the end, however short the run */
  }
  fflush(stderr);
}
