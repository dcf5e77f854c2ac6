/* Line charts as SVG: panels side by side over one shared x axis, one line
 * per series in the same colour in every panel, one legend. Used by
 * `seqcl experiment` for accuracy and entropy against source length. */
#ifndef SEQCL_CLI_PLOT_H
#define SEQCL_CLI_PLOT_H

#include <stdio.h>

typedef struct cli_panel {
  const char *title, *ylabel;
  double ymin, ymax;
  const double *y; /* [nseries][nx]; NAN = no point (the line is broken there) */
} cli_panel;

typedef struct cli_plot {
  const char *title, *xlabel;
  const double *x; /* [nx], increasing */
  int nx;
  const char *const *series; /* names, [nseries] */
  int nseries;
  const cli_panel *panels;
  int npanels;
} cli_plot;

/* Writes a whole SVG document; 0, or -1 when writing to f failed. */
int cli_plot_svg(FILE *f, const cli_plot *p);

#endif
