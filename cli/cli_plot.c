/* SVG line charts (cli_plot.h). Plain SVG 1.1 with no script or CSS, so that
 * browsers, rsvg-convert and editors show the same picture. */
#include <math.h>
#include <stdio.h>

#include "cli_plot.h"

#define PW 300.0   /* plot area of one panel, px */
#define PH 220.0
#define ML 62.0    /* room for the y tick labels and the y label */
#define MR 18.0
#define MT 58.0    /* the figure title and the panel title */
#define MB 52.0    /* x tick labels and the x label */
#define LEGEND_H 26.0

/* Okabe-Ito: distinguishable with the common colour-vision deficiencies. */
static const char *const palette[] = {"#0072B2", "#D55E00", "#009E73", "#CC79A7",
                                      "#E69F00", "#56B4E9", "#000000"};
#define NPAL (sizeof palette / sizeof palette[0])

static void xml_text(FILE *f, const char *s) {
  for (; s && *s; s++) {
    switch (*s) {
    case '<': fputs("&lt;", f); break;
    case '>': fputs("&gt;", f); break;
    case '&': fputs("&amp;", f); break;
    default: fputc(*s, f);
    }
  }
}

static double px_x(const cli_plot *p, double x0, double x) {
  const double lo = p->x[0], hi = p->x[p->nx - 1];
  return x0 + (hi > lo ? (x - lo) / (hi - lo) * PW : PW / 2);
}

static double px_y(const cli_panel *q, double y0, double y) {
  const double span = q->ymax > q->ymin ? q->ymax - q->ymin : 1.0;
  return y0 + PH - (y - q->ymin) / span * PH;
}

static void panel(FILE *f, const cli_plot *p, const cli_panel *q, double x0, double y0) {
  fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.0f\" height=\"%.0f\" fill=\"none\" "
             "stroke=\"#444\"/>\n", x0, y0, PW, PH);
  fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" font-weight=\"bold\">", x0 + PW / 2,
          y0 - 10);
  xml_text(f, q->title);
  fputs("</text>\n", f);
  /* y: five intervals with light grid lines */
  for (int k = 0; k <= 5; k++) {
    const double v = q->ymin + (q->ymax - q->ymin) * k / 5.0, y = px_y(q, y0, v);
    fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>\n", x0, y,
            x0 + PW, y);
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%g</text>\n", x0 - 5, y + 4,
            fabs(v) < 1e-12 ? 0.0 : v);
  }
  /* x: a tick at every measured value */
  for (int i = 0; i < p->nx; i++) {
    const double x = px_x(p, x0, p->x[i]);
    fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#444\"/>\n", x,
            y0 + PH, x, y0 + PH + 5);
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%g</text>\n", x, y0 + PH + 18,
            p->x[i]);
  }
  fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">", x0 + PW / 2, y0 + PH + 38);
  xml_text(f, p->xlabel);
  fputs("</text>\n", f);
  fprintf(f, "<text transform=\"translate(%.1f %.1f) rotate(-90)\" text-anchor=\"middle\">",
          x0 - 44, y0 + PH / 2);
  xml_text(f, q->ylabel);
  fputs("</text>\n", f);
  for (int s = 0; s < p->nseries; s++) {
    const double *y = q->y + (size_t)s * p->nx;
    const char *c = palette[s % NPAL];
    /* one polyline per unbroken run of points */
    int open = 0;
    for (int i = 0; i <= p->nx; i++) {
      const int have = i < p->nx && isfinite(y[i]);
      if (have && !open) {
        fprintf(f, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2\" points=\"", c);
        open = 1;
      }
      if (have) fprintf(f, "%.1f,%.1f ", px_x(p, x0, p->x[i]), px_y(q, y0, y[i]));
      if (!have && open) {
        fputs("\"/>\n", f);
        open = 0;
      }
    }
    for (int i = 0; i < p->nx; i++)
      if (isfinite(y[i]))
        fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3.5\" fill=\"%s\"/>\n",
                px_x(p, x0, p->x[i]), px_y(q, y0, y[i]), c);
  }
}

int cli_plot_svg(FILE *f, const cli_plot *p) {
  const double cell = ML + PW + MR;
  const double width = cell * p->npanels + 10, height = MT + PH + MB + LEGEND_H + 10;
  fprintf(f,
          "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
          "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
          "viewBox=\"0 0 %.0f %.0f\" font-family=\"DejaVu Sans, sans-serif\" font-size=\"12\">\n"
          "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n",
          width, height, width, height);
  fprintf(f, "<text x=\"10\" y=\"20\" font-size=\"14\" font-weight=\"bold\">");
  xml_text(f, p->title);
  fputs("</text>\n", f);
  for (int k = 0; k < p->npanels; k++) panel(f, p, &p->panels[k], 10 + k * cell + ML, MT);
  /* legend under the panels */
  double lx = 10 + ML;
  const double ly = MT + PH + MB + 12;
  for (int s = 0; s < p->nseries; s++) {
    const char *c = palette[s % NPAL];
    fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" "
               "stroke-width=\"2\"/><circle cx=\"%.1f\" cy=\"%.1f\" r=\"3.5\" fill=\"%s\"/>\n",
            lx, ly, lx + 24, ly, c, lx + 12, ly, c);
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\">", lx + 30, ly + 4);
    xml_text(f, p->series[s]);
    fputs("</text>\n", f);
    int n = 0;
    for (const char *t = p->series[s]; *t; t++) n++;
    lx += 30 + 7.5 * n + 24;
  }
  fputs("</svg>\n", f);
  return ferror(f) ? -1 : 0;
}
