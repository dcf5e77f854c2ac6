/* The grid of `seqcl bench --grid` (harness.h): the shapes users run, one
 * factor at a time around a base point, each point measured by
 * sq_bench_point on a random model whose EOS logit is blocked (every line runs
 * every step, so the work per run is fixed). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "bench/bench.h"
#include "bench/harness.h"
#include "core/error.h"

typedef struct grid_point {
  const char *label;
  int bi, layers, state_context, V, S, beam;
  const char *score;
  int batches[3]; /* 0 ends the list */
  int quick_batches[3];
} grid_point;

/* H 256 everywhere; the bidirectional encoder is 2 x 128, so that H_e = 256
 * as in the one-way base and only the encoder's structure changes. */
enum { GRID_H = 256 };

static const grid_point points[] = {
    {"base", 0, 1, 0, 1000, 20, 1, "additive", {1, 16, 64}, {1, 64, 0}},
    {"bidirectional", 1, 1, 0, 1000, 20, 1, "additive", {1, 64, 0}, {64, 0, 0}},
    {"2 layers", 0, 2, 0, 1000, 20, 1, "additive", {1, 64, 0}, {0, 0, 0}},
    {"state_context", 0, 1, 1, 1000, 20, 1, "additive", {1, 64, 0}, {64, 0, 0}},
    {"V 8000", 0, 1, 0, 8000, 20, 1, "additive", {1, 64, 0}, {0, 0, 0}},
    {"V 32000", 0, 1, 0, 32000, 20, 1, "additive", {1, 64, 0}, {64, 0, 0}},
    {"S 50", 0, 1, 0, 1000, 50, 1, "additive", {1, 64, 0}, {0, 0, 0}},
    {"S 100", 0, 1, 0, 1000, 100, 1, "additive", {1, 64, 0}, {0, 0, 0}},
    {"beam 5", 0, 1, 0, 1000, 20, 5, "additive", {1, 64, 0}, {64, 0, 0}},
    {"general", 0, 1, 0, 1000, 20, 1, "general", {1, 64, 0}, {0, 0, 0}},
};

/* The point's model directory under the run's folder, written on first use. */
static seqcl_status point_model(const sq_bench_cfg *cfg, const grid_point *p, char *dir,
                                size_t cap) {
  snprintf(dir, cap, "%s/grid_%s_%d_%d_%d_%d", cfg->tmp_root, p->score, p->bi, p->layers,
           p->state_context, p->V);
  struct stat sb;
  if (stat(dir, &sb) == 0) return SEQCL_OK;
  if (mkdir(dir, 0700) != 0) return sq_fail(NULL, SEQCL_ERR_IO, "bench: cannot create %s", dir);
  const sq_bench_model_spec sp = {.D = SQ_BENCH_EMBED, .H = p->bi ? GRID_H / 2 : GRID_H,
                                  .layers = p->layers, .bidirectional = p->bi, .Hd = GRID_H,
                                  .A = GRID_H, .V = p->V, .score = p->score,
                                  .state_context = p->state_context};
  return sq_bench_write_model_spec(dir, &sp, 1, 17u);
}

typedef struct lines {
  int32_t *ids;
  size_t *offsets;
  seqcl_seqs view;
} lines;

/* n random lines of length S over ids [0, V - 2), also written to path as
 * text for the whole-process run. */
static seqcl_status make_lines(lines *l, int n, int S, int V, const char *path) {
  memset(l, 0, sizeof *l);
  l->ids = malloc((size_t)n * S * sizeof(int32_t));
  l->offsets = malloc(((size_t)n + 1) * sizeof(size_t));
  if (!l->ids || !l->offsets) return sq_fail(NULL, SEQCL_ERR_OUT_OF_MEMORY, "bench: out of memory");
  FILE *f = fopen(path, "w");
  if (!f) return sq_fail(NULL, SEQCL_ERR_IO, "bench: cannot write %s", path);
  uint32_t r = 0x2545Fu + (uint32_t)S;
  for (int i = 0; i < n; i++)
    for (int j = 0; j < S; j++) {
      r = r * 1664525u + 1013904223u;
      const int32_t id = (int32_t)((r >> 8) % (uint32_t)(V - 2));
      l->ids[(size_t)i * S + j] = id;
      fprintf(f, "%d%c", id, j == S - 1 ? '\n' : ' ');
    }
  if (fclose(f) != 0) return sq_fail(NULL, SEQCL_ERR_IO, "bench: cannot write %s", path);
  for (int i = 0; i <= n; i++) l->offsets[i] = (size_t)i * S;
  l->view = (seqcl_seqs){(size_t)n, l->ids, l->offsets};
  return SEQCL_OK;
}

static void free_lines(lines *l) {
  free(l->ids);
  free(l->offsets);
}

/* Lines per run: enough batches that the whole-process figure is not only
 * start-up (16 single lines, 4 batches of 16 or 64); --quick one batch. */
static int lines_for(const sq_bench_cfg *cfg, int batch) {
  if (cfg->quick) return batch == 1 ? 8 : batch;
  return batch == 1 ? 16 : 4 * batch;
}

static seqcl_status run_point(seqcl_ctx *ctx, const sq_bench_cfg *cfg, const grid_point *p,
                              int batch, void (*cb)(void *, const sq_bench_point_row *),
                              void *user) {
  char dir[4300], src[4400];
  SQ_TRY(point_model(cfg, p, dir, sizeof dir));
  snprintf(src, sizeof src, "%s/src_%d_%d.txt", cfg->tmp_root, p->S, batch);
  lines l;
  seqcl_status st = make_lines(&l, lines_for(cfg, batch), p->S, p->V, src);
  seqcl_model *m = NULL;
  if (st == SEQCL_OK) st = seqcl_model_load(ctx, dir, &m);
  sq_bench_point_row row;
  if (st == SEQCL_OK) {
    const sq_bench_point_in in = {.m = m, .src = &l.view, .batch = batch, .beam = p->beam,
                                  .steps = cfg->steps, .reps = cfg->reps, .exe = cfg->exe,
                                  .model_dir = dir, .src_path = src};
    st = sq_bench_point(ctx, &in, &row);
  }
  seqcl_model_free(m);
  free_lines(&l);
  SQ_TRY(st);
  snprintf(row.label, sizeof row.label, "%s", p->label);
  if (cb) cb(user, &row);
  return SEQCL_OK;
}

seqcl_status sq_bench_grid(seqcl_ctx *ctx, const sq_bench_cfg *cfg,
                           void (*cb)(void *user, const sq_bench_point_row *r), void *user) {
  for (size_t i = 0; i < sizeof points / sizeof points[0]; i++) {
    const grid_point *p = &points[i];
    const int *bs = cfg->quick ? p->quick_batches : p->batches;
    for (int b = 0; b < 3 && bs[b]; b++) SQ_TRY(run_point(ctx, cfg, p, bs[b], cb, user));
  }
  return SEQCL_OK;
}
