/* Intervention maps for one source line (see probe.h). Everything goes through
 * the public decoder and seqcl_model_forward_masked, so the maps measure the
 * same model code users run; probabilities and KL are taken in double from
 * the float32 logits. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "model/probe.h"

void sq_probe_free(sq_probe *p) {
  if (!p) return;
  free(p->labels);
  free(p->attn);
  free(p->kl);
  free(p->flip);
  free(p->rho);
  free(p->edit_kl);
  free(p->edit_flip);
  memset(p, 0, sizeof *p);
}

/* log-softmax of V logits into out (double). */
static void log_softmax(const float *x, int V, double *out) {
  double mx = x[0], sum = 0.0;
  for (int v = 1; v < V; v++)
    if (x[v] > mx) mx = x[v];
  for (int v = 0; v < V; v++) sum += exp((double)x[v] - mx);
  const double lse = mx + log(sum);
  for (int v = 0; v < V; v++) out[v] = (double)x[v] - lse;
}

static int argmax(const float *x, int V) {
  int b = 0;
  for (int v = 1; v < V; v++)
    if (x[v] > x[b]) b = v; /* the lowest index on a tie, as greedy decoding */
  return b;
}

/* KL(p || q) from log-probabilities; 0 log 0 = 0. */
static double kl_div(const double *lp, const double *lq, int V) {
  double d = 0.0;
  for (int v = 0; v < V; v++) {
    const double p = exp(lp[v]);
    if (p > 0.0) d += p * (lp[v] - lq[v]);
  }
  return d > 0.0 ? d : 0.0; /* rounding can give -1e-17 for equal rows */
}

/* Average ranks (ties share the mean of their places) of x[0..n). */
static void ranks(const double *x, int n, double *r) {
  for (int i = 0; i < n; i++) {
    int below = 0, equal = 0;
    for (int k = 0; k < n; k++) below += x[k] < x[i], equal += x[k] == x[i];
    r[i] = below + (equal - 1) / 2.0;
  }
}

/* Spearman's rho: Pearson's correlation of the ranks; NAN when either side is
 * constant (no order to compare) or n < 2. */
static double spearman(const double *a, const double *b, int n, double *scratch) {
  if (n < 2) return NAN;
  double *ra = scratch, *rb = scratch + n;
  ranks(a, n, ra);
  ranks(b, n, rb);
  double ma = 0, mb = 0;
  for (int i = 0; i < n; i++) ma += ra[i], mb += rb[i];
  ma /= n, mb /= n;
  double sab = 0, saa = 0, sbb = 0;
  for (int i = 0; i < n; i++) {
    sab += (ra[i] - ma) * (rb[i] - mb);
    saa += (ra[i] - ma) * (ra[i] - ma);
    sbb += (rb[i] - mb) * (rb[i] - mb);
  }
  return saa > 0 && sbb > 0 ? sab / sqrt(saa * sbb) : NAN;
}

static seqcl_status check_edits(seqcl_ctx *ctx, int S, int V, const sq_probe_edit *e, int n) {
  for (int k = 0; k < n; k++) {
    const char *what = e[k].kind == SQ_EDIT_DELETE ? "delete" : "replace";
    if (e[k].pos < 0 || e[k].pos >= S)
      return sq_fail(ctx, SEQCL_ERR_INVALID_ARGUMENT,
                     "probe: %s at position %d: outside the line's positions 1..%d", what, e[k].pos + 1, S);
    if (e[k].kind == SQ_EDIT_DELETE && S == 1)
      return sq_fail(ctx, SEQCL_ERR_INVALID_ARGUMENT,
                     "probe: delete at position %d would leave an empty line (it has one token)", e[k].pos + 1);
    if (e[k].kind == SQ_EDIT_REPLACE && (e[k].id < 0 || e[k].id >= V))
      return sq_fail(ctx, SEQCL_ERR_INVALID_ARGUMENT,
                     "probe: replace at position %d: id %d is outside the source vocabulary 0..%d",
                     e[k].pos + 1, (int)e[k].id, V - 1);
  }
  return SEQCL_OK;
}

/* The decode of the unedited line: labels (tokens + EOS when finished) and
 * the invariants of its weights. */
static seqcl_status decode_line(seqcl_model *m, const int32_t *src, int S, int max_steps,
                                sq_probe *p) {
  size_t off[2] = {0, (size_t)S};
  seqcl_seqs s = {1, src, off};
  seqcl_decode_options o;
  seqcl_decode_options_init(&o);
  o.max_steps = max_steps;
  o.want_alignments = p->attends;
  seqcl_decode_result *r = NULL;
  SQ_TRY(seqcl_model_decode(m, &s, &o, &r));
  const size_t L = r->offsets[1];
  p->finished = r->hyps[0].finished;
  p->T = (int)L + (p->finished ? 1 : 0);
  p->labels = malloc(sizeof(int32_t) * (size_t)(p->T + 1));
  if (!p->labels) {
    seqcl_decode_result_free(r);
    return sq_fail(seqcl_model_ctx(m), SEQCL_ERR_OUT_OF_MEMORY, "probe: out of host memory");
  }
  memcpy(p->labels, r->ids, L * sizeof(int32_t));
  if (p->finished) p->labels[L] = seqcl_model_eos_id(m);
  sq_attn_stats_init(&p->inv);
  if (p->attends) sq_attn_stats_add(&p->inv, r->alignments, r->steps[0], S, r->S, (size_t)r->S, 0);
  seqcl_decode_result_free(r);
  return SEQCL_OK;
}

/* Line 0: the source; lines 1..S: position j - 1 hidden (only when S > 1);
 * then one line per edit. All share the target BOS + labels. */
typedef struct batch {
  int32_t *ids, *tgt;
  uint8_t *keep;
  size_t *off, *toff;
  size_t lines;
} batch;

static void batch_free(batch *b) {
  free(b->ids), free(b->tgt), free(b->keep), free(b->off), free(b->toff);
}

static int build_batch(const int32_t *src, int S, const sq_probe *p, int bos,
                       const sq_probe_edit *edits, int n_edits, batch *b) {
  const int masks = S > 1 && p->attends ? S : 0;
  b->lines = 1 + (size_t)masks + (size_t)n_edits;
  const size_t tok = b->lines * (size_t)S, tl = (size_t)p->T + 1;
  b->ids = malloc(sizeof(int32_t) * tok);
  b->keep = malloc(tok);
  b->tgt = malloc(sizeof(int32_t) * b->lines * tl);
  b->off = malloc(sizeof(size_t) * (b->lines + 1));
  b->toff = malloc(sizeof(size_t) * (b->lines + 1));
  if (!b->ids || !b->keep || !b->tgt || !b->off || !b->toff) return -1;
  size_t k = 0, line = 0;
  b->off[0] = b->toff[0] = 0;
  for (int variant = -1; variant < masks + n_edits; variant++, line++) {
    const sq_probe_edit *e = variant >= masks ? &edits[variant - masks] : NULL;
    for (int j = 0; j < S; j++) {
      if (e && e->kind == SQ_EDIT_DELETE && e->pos == j) continue;
      b->ids[k] = e && e->kind == SQ_EDIT_REPLACE && e->pos == j ? e->id : src[j];
      b->keep[k] = !(variant >= 0 && variant < masks && variant == j);
      k++;
    }
    b->off[line + 1] = k;
    int32_t *t = b->tgt + line * tl;
    t[0] = bos;
    memcpy(t + 1, p->labels, sizeof(int32_t) * (size_t)p->T);
    b->toff[line + 1] = (line + 1) * tl;
  }
  return 0;
}

static seqcl_status alloc_maps(seqcl_ctx *ctx, sq_probe *p, int n_edits) {
  const size_t cells = (size_t)p->T * (size_t)p->S, ne = n_edits > 0 ? (size_t)n_edits : 1;
  p->attn = p->attends ? calloc(cells ? cells : 1, sizeof(float)) : NULL;
  p->kl = calloc(cells ? cells : 1, sizeof(double));
  p->flip = calloc(cells ? cells : 1, 1);
  p->rho = calloc(p->T ? (size_t)p->T : 1, sizeof(double));
  p->edit_kl = calloc(ne * (size_t)(p->T ? p->T : 1), sizeof(double));
  p->edit_flip = calloc(ne * (size_t)(p->T ? p->T : 1), 1);
  if ((p->attends && !p->attn) || !p->kl || !p->flip || !p->rho || !p->edit_kl || !p->edit_flip)
    return sq_fail(ctx, SEQCL_ERR_OUT_OF_MEMORY, "probe: out of host memory");
  return SEQCL_OK;
}

/* KL and argmax change of every step of line `line` against line 0. */
static void compare(const seqcl_forward_result *r, size_t line, const double *lp0, double *lq,
                    int T, double *kl, size_t kl_stride, uint8_t *flip) {
  const int V = r->V;
  for (int t = 0; t < T; t++) {
    const float *x0 = r->logits + (size_t)t * V, *x = r->logits + (line * r->T + t) * V;
    log_softmax(x, V, lq);
    kl[(size_t)t * kl_stride] = kl_div(lp0 + (size_t)t * V, lq, V);
    flip[(size_t)t * kl_stride] = argmax(x, V) != argmax(x0, V);
  }
}

static seqcl_status maps(seqcl_model *m, const seqcl_forward_result *r, int n_edits, sq_probe *p) {
  const int S = p->S, T = p->T, V = r->V;
  double *lp0 = malloc(sizeof(double) * (size_t)T * V), *lq = malloc(sizeof(double) * V);
  double *scratch = malloc(sizeof(double) * 3 * (size_t)(S > 0 ? S : 1));
  if (!lp0 || !lq || !scratch) {
    free(lp0), free(lq), free(scratch);
    return sq_fail(seqcl_model_ctx(m), SEQCL_ERR_OUT_OF_MEMORY, "probe: out of host memory");
  }
  for (int t = 0; t < T; t++) {
    log_softmax(r->logits + (size_t)t * V, V, lp0 + (size_t)t * V);
    if (p->attends)
      memcpy(p->attn + (size_t)t * S, r->alignments + (size_t)t * r->S, sizeof(float) * (size_t)S);
  }
  const int masks = S > 1 && p->attends ? S : 0;
  for (int j = 0; j < S; j++) {
    if (!masks) {
      for (int t = 0; t < T; t++) p->kl[(size_t)t * S + j] = NAN;
      continue;
    }
    compare(r, 1 + (size_t)j, lp0, lq, T, p->kl + j, (size_t)S, p->flip + j);
  }
  for (int k = 0; k < n_edits; k++)
    compare(r, 1 + (size_t)masks + (size_t)k, lp0, lq, T, p->edit_kl + (size_t)k * T, 1,
            p->edit_flip + (size_t)k * T);
  for (int t = 0; t < T && !masks; t++) p->rho[t] = NAN;
  for (int t = 0; t < T && masks; t++) {
    double *a = scratch + 2 * (size_t)S;
    for (int j = 0; j < S; j++) a[j] = p->attn[(size_t)t * S + j];
    p->rho[t] = spearman(a, p->kl + (size_t)t * S, S, scratch);
  }
  free(lp0), free(lq), free(scratch);
  return SEQCL_OK;
}

seqcl_status sq_probe_run(seqcl_model *m, const int32_t *src, int S, int max_steps,
                          const sq_probe_edit *edits, int n_edits, sq_probe *out) {
  memset(out, 0, sizeof *out);
  seqcl_ctx *ctx = seqcl_model_ctx(m);
  if (S < 1) return sq_fail(ctx, SEQCL_ERR_EMPTY_SEQUENCE, "probe: the source line is empty");
  SQ_TRY(check_edits(ctx, S, seqcl_model_src_vocab_size(m), edits, n_edits));
  seqcl_model_config cfg;
  SQ_TRY(seqcl_model_get_config(m, &cfg));
  out->S = S;
  out->n_edits = n_edits;
  out->attends = cfg.score != SEQCL_SCORE_NONE;
  seqcl_status st = decode_line(m, src, S, max_steps, out);
  if (st == SEQCL_OK && out->T == 0)
    st = sq_fail(ctx, SEQCL_ERR_INVALID_ARGUMENT, "probe: the decode took no step");
  if (st == SEQCL_OK) st = alloc_maps(ctx, out, n_edits);
  batch b;
  memset(&b, 0, sizeof b);
  seqcl_forward_result *r = NULL;
  if (st == SEQCL_OK && build_batch(src, S, out, seqcl_model_bos_id(m), edits, n_edits, &b))
    st = sq_fail(ctx, SEQCL_ERR_OUT_OF_MEMORY, "probe: out of host memory");
  if (st == SEQCL_OK) {
    seqcl_seqs s = {b.lines, b.ids, b.off}, t = {b.lines, b.tgt, b.toff};
    st = seqcl_model_forward_masked(m, &s, out->attends ? b.keep : NULL, &t, 0, &r);
  }
  if (st == SEQCL_OK) st = maps(m, r, n_edits, out);
  seqcl_forward_result_free(r);
  batch_free(&b);
  if (st != SEQCL_OK) sq_probe_free(out);
  return st;
}
