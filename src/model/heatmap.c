/* Attention heatmaps: SVG with labels and a colour bar, and terminal text. */
#include <math.h>
#include <string.h>

#include "model/heatmap.h"

#define CELL 28      /* px per matrix cell */
#define CHAR_W 7.5   /* px per label character at 12px monospace */

/* Sequential white -> dark blue scale (ColorBrewer "Blues" end points), so that
 * weight 0 reads as empty paper and strong attention as ink. */
static void colour(float v, char out[8]) {
  if (!(v >= 0.0f)) v = 0.0f; /* also catches NaN */
  if (v > 1.0f) v = 1.0f;
  static const int lo[3] = {0xf7, 0xfb, 0xff}, hi[3] = {0x08, 0x30, 0x6b};
  int c[3];
  for (int i = 0; i < 3; i++) c[i] = (int)lroundf((float)lo[i] + ((float)hi[i] - (float)lo[i]) * v);
  snprintf(out, 8, "#%02x%02x%02x", c[0], c[1], c[2]);
}

static void xml_text(FILE *f, const char *s) {
  for (; *s; s++) {
    switch (*s) {
    case '<': fputs("&lt;", f); break;
    case '>': fputs("&gt;", f); break;
    case '&': fputs("&amp;", f); break;
    case '"': fputs("&quot;", f); break;
    default: fputc(*s, f);
    }
  }
}

static size_t max_len(const char *const *labels, int n) {
  size_t m = 1;
  for (int i = 0; i < n; i++)
    if (strlen(labels[i]) > m) m = strlen(labels[i]);
  return m;
}

/* The layout of one heatmap: label margins, grid and colour bar. */
typedef struct layout {
  double left, top, gw, gh, bar_x, bar_h, width, height;
} layout;

static layout layout_of(const sq_heatmap *h) {
  layout L;
  L.left = 20 + CHAR_W * (double)max_len(h->row_labels, h->rows) + 10;
  L.top = 40 + 0.75 * CHAR_W * (double)max_len(h->col_labels, h->cols) + 12;
  L.gw = (double)h->cols * CELL, L.gh = (double)h->rows * CELL;
  L.bar_x = L.left + L.gw + 30;
  L.width = L.bar_x + 16 + 50;
  /* a title wider than the grid widens the picture (14px bold: ~8.5px a character) */
  const double title_w = h->title ? 20 + 8.5 * (double)strlen(h->title) : 0;
  if (L.width < title_w) L.width = title_w;
  L.bar_h = L.gh < 120 ? 120 : L.gh;
  const double height = L.top + L.gh + 50;
  L.height = height < L.top + L.bar_h + 30 ? L.top + L.bar_h + 30 : height;
  return L;
}

static void svg_open(FILE *f, double width, double height) {
  fprintf(f,
          "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
          "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
          "viewBox=\"0 0 %.0f %.0f\" font-family=\"DejaVu Sans Mono, monospace\" font-size=\"12\">\n"
          "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n",
          width, height, width, height);
  /* the colour bar's gradient, once per document (ids are unique) */
  fprintf(f, "<defs><linearGradient id=\"scale\" x1=\"0\" y1=\"1\" x2=\"0\" y2=\"0\">"
             "<stop offset=\"0\" stop-color=\"#f7fbff\"/><stop offset=\"1\" stop-color=\"#08306b\"/>"
             "</linearGradient></defs>\n");
}

/* One heatmap's elements, placed at the document's origin (a caller wraps
 * them in a translated group to put several side by side). */
static void body(FILE *f, const sq_heatmap *h, const layout *L) {
  const double left = L->left, top = L->top, gw = L->gw, gh = L->gh;
  const double bar_x = L->bar_x, bar_h = L->bar_h;
  /* weights span [0, 1]; another map (an intervention's KL) gives its own top */
  const double vmax = h->vmax > 0 ? h->vmax : 1.0;
  if (h->title) {
    fprintf(f, "<text x=\"10\" y=\"20\" font-size=\"14\" font-weight=\"bold\">");
    xml_text(f, h->title);
    fprintf(f, "</text>\n");
  }
  /* Source tokens along the top, slanted so long words fit. */
  for (int j = 0; j < h->cols; j++) {
    const double x = left + (j + 0.5) * CELL, y = top - 6;
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" transform=\"rotate(-45 %.1f %.1f)\">", x, y, x, y);
    xml_text(f, h->col_labels[j]);
    fprintf(f, "</text>\n");
  }
  /* Produced tokens down the left, right-aligned against the grid. */
  for (int t = 0; t < h->rows; t++) {
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">", left - 6,
            top + (t + 0.5) * CELL + 4);
    xml_text(f, h->row_labels[t]);
    fprintf(f, "</text>\n");
  }
  for (int t = 0; t < h->rows; t++) {
    for (int j = 0; j < h->cols; j++) {
      const float v = h->w[(size_t)t * h->ld + j];
      char c[8];
      colour((float)(v / vmax), c);
      const double x = left + j * CELL, y = top + t * CELL;
      fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%d\" height=\"%d\" fill=\"%s\"><title>%.4f</title></rect>\n",
              x, y, CELL, CELL, c, (double)v);
      if (v >= 0.005 * vmax)
        fprintf(f,
                "<text x=\"%.1f\" y=\"%.1f\" font-size=\"9\" text-anchor=\"middle\" fill=\"%s\">%.2f</text>\n",
                x + CELL / 2.0, y + CELL / 2.0 + 3, v > 0.5 * vmax ? "white" : "#333333", (double)v);
    }
  }
  fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"none\" stroke=\"#888888\"/>\n",
          left, top, gw, gh);
  fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" fill=\"#555555\">source</text>\n",
          left + gw / 2, top + gh + 22);
  fprintf(f,
          "<text x=\"12\" y=\"%.1f\" text-anchor=\"middle\" fill=\"#555555\" transform=\"rotate(-90 12 %.1f)\">output</text>\n",
          top + gh / 2, top + gh / 2);
  /* Colour bar: 0 at the bottom, vmax at the top. */
  fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"16\" height=\"%.1f\" fill=\"url(#scale)\" stroke=\"#888888\"/>\n",
          bar_x, top, bar_h);
  for (int i = 0; i <= 4; i++) {
    const double y = top + bar_h * (1.0 - i / 4.0);
    fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#555555\"/>\n", bar_x + 16,
            y, bar_x + 20, y);
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\">%.2f</text>\n", bar_x + 23, y + 4, vmax * i / 4.0);
  }
}

int sq_heatmap_svg(FILE *f, const sq_heatmap *h) { return sq_heatmap_svg_row(f, h, 1); }

int sq_heatmap_svg_row(FILE *f, const sq_heatmap *h, int n) {
  double width = 0, height = 0;
  for (int i = 0; i < n; i++) {
    const layout L = layout_of(&h[i]);
    width += L.width;
    if (L.height > height) height = L.height;
  }
  svg_open(f, width, height);
  double x = 0;
  for (int i = 0; i < n; i++) {
    const layout L = layout_of(&h[i]);
    if (n > 1) fprintf(f, "<g transform=\"translate(%.1f 0)\">\n", x);
    body(f, &h[i], &L);
    if (n > 1) fprintf(f, "</g>\n");
    x += L.width;
  }
  fprintf(f, "</svg>\n");
  return ferror(f) ? -1 : 0;
}

int sq_heatmap_text(FILE *f, const sq_heatmap *h, int utf8) {
  static const char *const blocks[] = {" ", "\u2591", "\u2592", "\u2593", "\u2588"};
  static const char ramp[] = " .:-=+*#%@";
  const int rw = (int)max_len(h->row_labels, h->rows);
  const int short_cols = max_len(h->col_labels, h->cols) <= 2;
  if (h->title) fprintf(f, "%s\n", h->title);
  /* Cells are two characters wide (terminal cells are about twice as tall as
   * wide); labels of up to two characters sit above their column, longer ones
   * are listed with their column number. */
  if (!short_cols)
    for (int j = 0; j < h->cols; j++) fprintf(f, "%*s  %2d: %s\n", rw, "", j, h->col_labels[j]);
  fprintf(f, "%*s  ", rw, "");
  for (int j = 0; j < h->cols; j++)
    if (short_cols)
      fprintf(f, "%-2s", h->col_labels[j]);
    else
      fprintf(f, "%-2d", j % 100);
  fputc('\n', f);
  for (int t = 0; t < h->rows; t++) {
    fprintf(f, "%*s |", rw, h->row_labels[t]);
    for (int j = 0; j < h->cols; j++) {
      float v = h->w[(size_t)t * h->ld + j];
      if (!(v >= 0.0f)) v = 0.0f;
      if (v > 1.0f) v = 1.0f;
      if (utf8) {
        /* 0 stays blank so masked positions are visibly empty. */
        const char *b = blocks[v <= 0.0f ? 0 : 1 + (int)(v * 3.999f)];
        fputs(b, f);
        fputs(b, f);
      } else {
        const char c = ramp[v <= 0.0f ? 0 : 1 + (int)(v * 8.999f)];
        fputc(c, f);
        fputc(c, f);
      }
    }
    fputs("|\n", f);
  }
  return ferror(f) ? -1 : 0;
}
