/* Rendering one line's attention matrix (target steps x source positions): an
 * SVG picture with token labels and a colour scale, and a compact rendering
 * for the terminal with shaded blocks. */
#ifndef SQ_MODEL_HEATMAP_H
#define SQ_MODEL_HEATMAP_H

#include <stdio.h>

typedef struct sq_heatmap {
  const float *w;                 /* values [rows, cols] in [0, vmax], row stride ld */
  int rows, cols, ld;
  const char *const *row_labels;  /* rows entries (the produced tokens) */
  const char *const *col_labels;  /* cols entries (the source tokens) */
  const char *title;              /* may be NULL */
  double vmax;                    /* the colour scale's top; 0 = 1 (weights) */
} sq_heatmap;

/* Both return 0, or -1 when writing to f failed. */
int sq_heatmap_svg(FILE *f, const sq_heatmap *h);
/* n heatmaps side by side in one picture (each with its own title and scale). */
int sq_heatmap_svg_row(FILE *f, const sq_heatmap *h, int n);
/* utf8: shade with ░▒▓█, else with the ASCII ramp " .:-=+*#%@". */
int sq_heatmap_text(FILE *f, const sq_heatmap *h, int utf8);

#endif
