/* seqcl probe: does the model use the source positions it attends to? For one
 * source line: the invariants of its decode's attention, the intervention map
 * (each position hidden from the attention in turn, teacher-forced on the
 * original output: KL per step and argmax changes), the attention map beside
 * it with their rank correlation per step, and the effect of the edits asked
 * for (model/probe.c computes; this file parses and prints). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "cli.h"
#include "cli_model.h"
#include "cli_report.h"
#include "model/heatmap.h"
#include "model/probe.h"

#define MAX_EDITS 64

static void help(FILE *f) {
  fprintf(f,
          "usage: seqcl probe --model DIR --src FILE [--line I] [--replace J=ID]... [--delete J]...\n"
          "                   [--json FILE] [--svg FILE] [--device SEL]\n\n"
          "Seed 000 §08's checks that a model uses the source positions, for line I of\n"
          "FILE (default 1; ids as in decode):\n"
          "  (a) invariants of its greedy decode's attention: each step's weights sum to 1\n"
          "      (worst |sum - 1|, tolerance 1e-5), padding weights are 0, all finite;\n"
          "  (b) the intervention map [T, S]: for each source position j, j hidden from\n"
          "      the attention (its energy -inf before the softmax, as padding; the\n"
          "      encoder still reads the token), teacher-forced on the original output\n"
          "      (its tokens and EOS): KL(p_orig || p_masked) per decoder step, in nats,\n"
          "      and whether the step's argmax changes (marked *);\n"
          "  (c) the attention map [T, S] of the same teacher-forced pass, and the\n"
          "      Spearman rank correlation of the two maps' rows per step (rho; '-'\n"
          "      where a row is constant or S = 1).\n"
          "  --replace J=ID and --delete J (positions from 1, repeatable) measure those\n"
          "  edits of the source the same way, one row of KL per edit.\n\n"
          "  --json FILE   every map and value\n"
          "  --svg FILE    the attention and intervention maps side by side\n\n"
          "Output paths are checked before any work. Exit status: 0 success, 1 device\n"
          "or runtime failure, 2 bad usage or input.\n");
}

typedef struct probe_args {
  const char *model, *src, *device, *json, *svg;
  long line;
  int n_edits;
  sq_probe_edit edits[MAX_EDITS];
} probe_args;

/* The name the messages give. */
static const char cmd[] = "probe";

static int parse_edit(const char *opt, const char *v, probe_args *a) {
  if (a->n_edits == MAX_EDITS) return cli_usage_error(cmd, "more than %d edits", MAX_EDITS);
  sq_probe_edit *e = &a->edits[a->n_edits];
  long pos, id = 0;
  if (!strcmp(opt, "--replace")) {
    const char *eq = strchr(v, '=');
    char buf[32];
    if (!eq || (size_t)(eq - v) >= sizeof buf)
      return cli_usage_error(cmd, "--replace: '%s' is not J=ID (position from 1, new id)", v);
    memcpy(buf, v, (size_t)(eq - v));
    buf[eq - v] = 0;
    if (cli_long(cmd, "--replace position", buf, 1, 1L << 30, &pos)) return CLI_USAGE;
    if (cli_long(cmd, "--replace id", eq + 1, 0, 0x7fffffffL, &id)) return CLI_USAGE;
    e->kind = SQ_EDIT_REPLACE;
  } else {
    if (cli_long(cmd, opt, v, 1, 1L << 30, &pos)) return CLI_USAGE;
    e->kind = SQ_EDIT_DELETE;
  }
  e->pos = (int)pos - 1;
  e->id = (int32_t)id;
  a->n_edits++;
  return CLI_OK;
}

/* --replace J=ID and --delete J, each an edit of the line. */
static int more_option(void *user, int argc, char **argv, int *i) {
  const char *o = argv[*i];
  if (strcmp(o, "--replace") && strcmp(o, "--delete")) return 0;
  const char *v = cli_value(cmd, argc, argv, i);
  return !v || parse_edit(o, v, user) ? CLI_USAGE : CLI_TAKEN;
}

static int parse(int argc, char **argv, probe_args *a) {
  a->line = 1;
  const cli_opt opts[] = {CLI_STR("--model", &a->model), CLI_STR("--src", &a->src),
                          CLI_STR("--device", &a->device), CLI_STR("--json", &a->json),
                          CLI_STR("--svg", &a->svg), CLI_NUM("--line", &a->line, 1, 1L << 30),
                          {0}};
  int rc = cli_options(cmd, opts, help, 1, argc, argv, more_option, a);
  if (rc) return rc;
  if (!a->model || !a->src) return cli_usage_error(cmd, "--model and --src are required (see --help)");
  return CLI_OK;
}

static void edit_name(const sq_probe_edit *e, char *buf, size_t cap) {
  if (e->kind == SQ_EDIT_DELETE)
    snprintf(buf, cap, "delete %d", e->pos + 1);
  else
    snprintf(buf, cap, "replace %d=%d", e->pos + 1, (int)e->id);
}

static void print_ids(const char *what, const int32_t *ids, int n) {
  printf("%s", what);
  for (int i = 0; i < n; i++) printf(" %d", (int)ids[i]);
}

static void print_tables(const probe_args *a, const int32_t *src, const sq_probe *p) {
  printf("line %ld:", a->line);
  print_ids(" source", src, p->S);
  printf(" (S = %d); output", p->S);
  print_ids("", p->labels, p->T - p->finished);
  printf("%s (T = %d steps)\n", p->finished ? " + EOS" : ", no EOS", p->T);
  if (!p->attends) {
    printf("attention.score \"none\": a fixed context, no attention to check or to hide a "
           "position from; only the edits below intervene\n\n");
  } else {
  printf("invariants of the decode: %s (worst |sum - 1| %.2e at step %d, tolerance %.0e; worst "
         "padding weight %g; non-finite weights %zu)\n",
         sq_attn_stats_pass(&p->inv) ? "pass" : "FAIL", p->inv.worst_sum, p->inv.worst_sum_step + 1,
         SQ_ATTN_SUM_TOL, p->inv.worst_pad, p->inv.nonfinite);
  printf("mean attention entropy of the decode: %.4f nats (%.4f of ln S)\n\n",
         sq_attn_stats_mean_entropy(&p->inv), sq_attn_stats_mean_entropy_norm(&p->inv));
  for (int map = 0; map < 2; map++) {
    printf(map ? "attention (teacher-forced)\n"
               : "intervention: KL(p_orig || p with position j hidden), nats; * = argmax changes\n");
    printf("%4s %5s", "step", "out");
    for (int j = 0; j < p->S; j++) printf(" %8s%-3d", "j=", j + 1);
    printf("%s\n", map ? "" : "    rho");
    for (int t = 0; t < p->T; t++) {
      printf("%4d %5d", t + 1, (int)p->labels[t]);
      for (int j = 0; j < p->S; j++) {
        const size_t c = (size_t)t * p->S + j;
        if (map)
          printf(" %11.4f", (double)p->attn[c]);
        else if (isnan(p->kl[c]))
          printf(" %11s", "-");
        else
          printf(" %c%10.4f", p->flip[c] ? '*' : ' ', p->kl[c]);
      }
      if (!map) {
        if (isnan(p->rho[t])) printf(" %6s", "-");
        else printf(" %6.2f", p->rho[t]);
      }
      putchar('\n');
    }
    putchar('\n');
  }
  }
  for (int k = 0; k < p->n_edits; k++) {
    char name[64];
    edit_name(&a->edits[k], name, sizeof name);
    printf("%-16s KL per step:", name);
    for (int t = 0; t < p->T; t++)
      printf(" %c%.4f", p->edit_flip[(size_t)k * p->T + t] ? '*' : ' ',
             p->edit_kl[(size_t)k * p->T + t]);
    putchar('\n');
  }
}

static json_t *num(double v) { return isfinite(v) ? json_real(v) : json_null(); }

static json_t *ids_json(const int32_t *ids, int n) {
  json_t *a = json_array();
  for (int i = 0; i < n; i++) json_array_append_new(a, json_integer(ids[i]));
  return a;
}

static json_t *matrix_json(const sq_probe *p, int which) {
  json_t *m = json_array();
  for (int t = 0; t < p->T; t++) {
    json_t *row = json_array();
    for (int j = 0; j < p->S; j++) {
      const size_t c = (size_t)t * p->S + j;
      json_array_append_new(row, which == 0   ? (p->attn ? num(p->attn[c]) : json_null())
                                 : which == 1 ? num(p->kl[c])
                                              : json_boolean(p->flip[c]));
    }
    json_array_append_new(m, row);
  }
  return m;
}

static json_t *to_json(const probe_args *a, const int32_t *src, const sq_probe *p) {
  json_t *o = json_object(), *inv = json_object(), *rho = json_array(), *edits = json_array();
  json_object_set_new(o, "line", json_integer(a->line));
  json_object_set_new(o, "source", ids_json(src, p->S));
  json_object_set_new(o, "output", ids_json(p->labels, p->T - p->finished));
  json_object_set_new(o, "finished", json_boolean(p->finished));
  json_object_set_new(o, "steps", json_integer(p->T));
  json_object_set_new(inv, "pass", json_boolean(sq_attn_stats_pass(&p->inv)));
  json_object_set_new(inv, "worst_sum_error", num(p->inv.worst_sum));
  json_object_set_new(inv, "worst_padding_weight", num(p->inv.worst_pad));
  json_object_set_new(inv, "nonfinite", json_integer((json_int_t)p->inv.nonfinite));
  json_object_set_new(o, "invariants", p->attends ? inv : json_null());
  if (!p->attends) json_decref(inv);
  json_object_set_new(o, "entropy", p->attends ? num(sq_attn_stats_mean_entropy(&p->inv)) : json_null());
  json_object_set_new(o, "entropy_normalized",
                      p->attends ? num(sq_attn_stats_mean_entropy_norm(&p->inv)) : json_null());
  json_object_set_new(o, "attends", json_boolean(p->attends));
  json_object_set_new(o, "attention", p->attends ? matrix_json(p, 0) : json_null());
  json_object_set_new(o, "intervention_kl", matrix_json(p, 1));
  json_object_set_new(o, "argmax_changed", matrix_json(p, 2));
  for (int t = 0; t < p->T; t++) json_array_append_new(rho, num(p->rho[t]));
  json_object_set_new(o, "rank_correlation", rho);
  for (int k = 0; k < p->n_edits; k++) {
    const sq_probe_edit *e = &a->edits[k];
    json_t *x = json_object(), *kl = json_array(), *fl = json_array();
    json_object_set_new(x, "kind", json_string(e->kind == SQ_EDIT_DELETE ? "delete" : "replace"));
    json_object_set_new(x, "position", json_integer(e->pos + 1));
    if (e->kind == SQ_EDIT_REPLACE) json_object_set_new(x, "id", json_integer(e->id));
    for (int t = 0; t < p->T; t++) {
      json_array_append_new(kl, num(p->edit_kl[(size_t)k * p->T + t]));
      json_array_append_new(fl, json_boolean(p->edit_flip[(size_t)k * p->T + t]));
    }
    json_object_set_new(x, "kl", kl);
    json_object_set_new(x, "argmax_changed", fl);
    json_array_append_new(edits, x);
  }
  json_object_set_new(o, "edits", edits);
  return o;
}

/* The two maps side by side; the intervention map's scale tops at its largest KL. */
static int draw(FILE *f, const probe_args *a, const int32_t *src, const sq_probe *p) {
  const size_t cells = (size_t)p->T * p->S;
  float *kl = malloc(sizeof(float) * (cells ? cells : 1));
  char (*lab)[16] = malloc(sizeof *lab * (size_t)(p->T + p->S));
  const char **ptr = malloc(sizeof *ptr * (size_t)(p->T + p->S));
  if (!kl || !lab || !ptr) {
    free(kl), free(lab), free(ptr);
    return -1;
  }
  double top = 0;
  for (size_t c = 0; c < cells; c++) {
    kl[c] = isnan(p->kl[c]) ? 0.0f : (float)p->kl[c];
    if (kl[c] > top) top = kl[c];
  }
  for (int t = 0; t < p->T; t++) snprintf(lab[t], 16, "%d", (int)p->labels[t]);
  for (int j = 0; j < p->S; j++) snprintf(lab[p->T + j], 16, "%d", (int)src[j]);
  for (int i = 0; i < p->T + p->S; i++) ptr[i] = lab[i];
  char t1[96], t2[96];
  snprintf(t1, sizeof t1, "attention, line %ld", a->line);
  snprintf(t2, sizeof t2, "KL, position j hidden (max %.3g)", top);
  sq_heatmap h[2] = {
      {p->attn, p->T, p->S, p->S, ptr, ptr + p->T, t1, 1.0},
      {kl, p->T, p->S, p->S, ptr, ptr + p->T, t2, top > 0 ? top : 1.0},
  };
  int rc = sq_heatmap_svg_row(f, h, 2);
  free(kl), free(lab), free(ptr);
  return rc;
}

typedef struct probe_view {
  const probe_args *a;
  const int32_t *src;
  const sq_probe *p;
} probe_view;

static int draw_view(FILE *f, const void *user) {
  const probe_view *v = user;
  return draw(f, v->a, v->src, v->p);
}

static int write_outputs(const probe_args *a, const int32_t *src, const sq_probe *p) {
  const probe_view v = {a, src, p};
  json_t *root = a->json ? to_json(a, src, p) : NULL;
  return cli_write_reports(cmd, a->json, root, a->svg, draw_view, &v);
}

/* The work, once the options are parsed and checked. */
static int run(const probe_args *a) {
  int rc = cli_check_outputs(cmd, "--json", a->json, "--svg", a->svg, NULL);
  if (rc) return rc;
  cli_model_run m = {0};
  sq_seqs src = {0};
  sq_probe p;
  memset(&p, 0, sizeof p);
  if ((rc = cli_read_config(cmd, a->model, &m.cfg))) goto done;
  if ((rc = cli_read_tokens(cmd, a->src, &m.cfg, 0, NULL, 0, &src))) goto done;
  if (a->svg && m.cfg.score == SQ_SCORE_NONE) {
    rc = cli_usage_error(cmd, "--svg: %s has attention.score \"none\": no attention map to draw "
                              "and no position to hide (the edits' KL is in the table and --json)",
                         a->model);
    goto done;
  }
  if ((size_t)a->line > src.count) {
    rc = cli_usage_error(cmd, "--line %ld: %s has only %zu lines", a->line, a->src, src.count);
    goto done;
  }
  const int32_t *line = src.ids + src.offsets[a->line - 1];
  const int S = (int)sq_seq_len(&src, (size_t)a->line - 1);
  for (int k = 0; k < a->n_edits; k++)
    if (a->edits[k].pos >= S) {
      char name[64];
      edit_name(&a->edits[k], name, sizeof name);
      rc = cli_usage_error(cmd, "%s: line %ld has %d tokens (positions 1..%d)", name, a->line, S, S);
      goto done;
    }
  if ((rc = cli_open_model(cmd, a->device, a->model, NULL, &m.ctx, &m.model))) goto done;
  seqcl_status st = sq_probe_run(m.model, line, S, 0, a->edits, a->n_edits, &p);
  if (st != SEQCL_OK) {
    rc = cli_fail(cmd, st);
    goto done;
  }
  print_tables(a, line, &p);
  rc = write_outputs(a, line, &p);
done:
  sq_probe_free(&p);
  cli_model_run_free(&m);
  sq_seqs_free(&src);
  return rc;
}

CLI_COMMAND(cmd_probe, probe_args, parse, run)
