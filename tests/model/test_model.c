/* The seq2seq model against a naive double-precision implementation written
 * here from SPEC §1, on tiny random models, on the host path and every OpenCL
 * device: teacher-forced logits / alignments / loss, greedy and beam decoding,
 * and the load-time errors of SPEC §2.
 *
 * Tolerance: SPEC §5's rule, max |seqcl - ref| <= 1e-4 x max |ref| over valid
 * positions. With these sizes (K <= 30 terms per dot product, a few GRU steps)
 * float32 rounding stays near 1e-6 relative; 1e-4 leaves room for tanh/exp
 * ulps of OpenCL builtins while catching any wrong index, gate or mask. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "../common/test_main.h"
#include "../common/test_results.h"
#include "../harden/harden_util.h"
#include "test_devices.h"

#include <seqcl/seqcl.h>

#include "model/config.h"
#include "model/safetensors.h"
#include "model/seq2seq.h"
#include "core/ctx.h"

#define MAXT 64
#define REL_TOL 1e-4
#define NEAR_TIE 1e-3

/* ------------------------------------------------------------------ */
/* A random model written to a temporary directory                     */

typedef hu_tensor tensor;

typedef struct tmodel {
  sq_config cfg;
  int He;
  int n;
  tensor t[MAXT];
  char dir[256];
} tmodel;

static uint64_t rng_state;
static void add(tmodel *m, const char *name, int ndim, int64_t d0, int64_t d1) {
  hu_add_tensor(m->t, &m->n, name, ndim, d0, d1, &rng_state);
}

static const float *W(const tmodel *m, const char *name) {
  for (int i = 0; i < m->n; i++)
    if (!strcmp(m->t[i].name, name)) return m->t[i].data;
  return NULL;
}

static tensor *find(tmodel *m, const char *name) {
  for (int i = 0; i < m->n; i++)
    if (!strcmp(m->t[i].name, name)) return &m->t[i];
  return NULL;
}

/* The SPEC §2 table, written independently of src/model/model.c. */
static void make_tensors(tmodel *m, int with_attn_biases) {
  const sq_config *c = &m->cfg;
  const int D = c->embed_dim, H = c->enc_hidden, He = m->He, Hd = c->dec_hidden;
  char name[80];
  add(m, "encoder.embedding.weight", 2, c->src_vocab, D);
  for (int l = 0; l < c->enc_layers; l++)
    for (int d = 0; d < (c->bidirectional ? 2 : 1); d++) {
      const char *s = d ? "_reverse" : "";
      snprintf(name, sizeof name, "encoder.rnn.weight_ih_l%d%s", l, s);
      add(m, name, 2, 3 * H, l ? He : D);
      snprintf(name, sizeof name, "encoder.rnn.weight_hh_l%d%s", l, s);
      add(m, name, 2, 3 * H, H);
      snprintf(name, sizeof name, "encoder.rnn.bias_ih_l%d%s", l, s);
      add(m, name, 1, 3 * H, 0);
      snprintf(name, sizeof name, "encoder.rnn.bias_hh_l%d%s", l, s);
      add(m, name, 1, 3 * H, 0);
    }
  if (c->init == SQ_INIT_BRIDGE) {
    add(m, "bridge.weight", 2, Hd, He);
    add(m, "bridge.bias", 1, Hd, 0);
  }
  add(m, "decoder.embedding.weight", 2, c->tgt_vocab, D);
  if (c->score == SQ_SCORE_ADDITIVE) {
    add(m, "decoder.attention.key.weight", 2, c->attn_dim, He);
    add(m, "decoder.attention.query.weight", 2, c->attn_dim, Hd);
    add(m, "decoder.attention.energy.weight", 2, 1, c->attn_dim);
    if (with_attn_biases) {
      add(m, "decoder.attention.key.bias", 1, c->attn_dim, 0);
      add(m, "decoder.attention.query.bias", 1, c->attn_dim, 0);
      add(m, "decoder.attention.energy.bias", 1, 1, 0);
    }
  } else if (c->score == SQ_SCORE_GENERAL) {
    add(m, "decoder.attention.query.weight", 2, He, Hd);
    if (with_attn_biases) add(m, "decoder.attention.query.bias", 1, He, 0);
  }
  add(m, "decoder.rnn.weight_ih", 2, 3 * Hd, D + He);
  add(m, "decoder.rnn.weight_hh", 2, 3 * Hd, Hd);
  add(m, "decoder.rnn.bias_ih", 1, 3 * Hd, 0);
  add(m, "decoder.rnn.bias_hh", 1, 3 * Hd, 0);
  add(m, "decoder.output.weight", 2, c->tgt_vocab, c->output == SQ_OUTPUT_STATE ? Hd : Hd + He);
  add(m, "decoder.output.bias", 1, c->tgt_vocab, 0);
  /* A nudge towards EOS so that lines end at different steps. */
  find(m, "decoder.output.bias")->data[c->eos_id] += 2.5f;
}

static void write_model(tmodel *m) {
  snprintf(m->dir, sizeof m->dir, "/tmp/seqcl-test-model-XXXXXX");
  assert_non_null(mkdtemp(m->dir));
  char *json = NULL;
  assert_int_equal(sq_config_to_json(&m->cfg, &json), SEQCL_OK);
  char path[300];
  snprintf(path, sizeof path, "%s/config.json", m->dir);
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  fputs(json, f);
  fclose(f);
  free(json);
  sq_st_out out[MAXT];
  memset(out, 0, sizeof out);
  for (int i = 0; i < m->n; i++) {
    out[i].name = m->t[i].name;
    out[i].ndim = m->t[i].ndim;
    out[i].shape[0] = m->t[i].shape[0];
    out[i].shape[1] = m->t[i].shape[1];
    out[i].data = m->t[i].data;
  }
  snprintf(path, sizeof path, "%s/model.safetensors", m->dir);
  assert_int_equal(sq_st_write(path, out, (size_t)m->n), SEQCL_OK);
}

static void free_model(tmodel *m) {
  if (m->dir[0]) {
    char path[300];
    snprintf(path, sizeof path, "%s/config.json", m->dir);
    unlink(path);
    snprintf(path, sizeof path, "%s/model.safetensors", m->dir);
    unlink(path);
    rmdir(m->dir);
    m->dir[0] = '\0';
  }
  for (int i = 0; i < m->n; i++) free(m->t[i].data);
  m->n = 0;
}

static void make_model(tmodel *m, uint64_t seed, sq_score score, int bidir, int layers,
                       sq_init init, sq_output output, int biases) {
  memset(m, 0, sizeof *m);
  rng_state = seed;
  sq_config *c = &m->cfg;
  hu_tiny_config(c); /* the vocabularies, D 5, H 6 per direction; the rest set here */
  c->enc_layers = layers;
  c->bidirectional = bidir;
  m->He = bidir ? 12 : 6;
  c->dec_hidden = (score == SQ_SCORE_DOT || score == SQ_SCORE_SCALED_DOT) ? m->He : 8;
  c->init = init;
  c->score = score;
  c->attn_dim = score == SQ_SCORE_ADDITIVE ? 7 : 0;
  c->output = output;
  make_tensors(m, biases);
}

/* ------------------------------------------------------------------ */
/* The double-precision reference                                      */

static double sigm(double x) { return 1.0 / (1.0 + exp(-x)); }

/* h <- GRUCell(x, h), torch gate order r, z, n. */
static void ref_cell(const float *Wih, const float *Whh, const float *bih, const float *bhh,
                     int In, int H, const double *x, double *h) {
  double gi[3 * 64], gh[3 * 64];
  for (int r = 0; r < 3 * H; r++) {
    double a = bih[r], b = bhh[r];
    for (int k = 0; k < In; k++) a += (double)Wih[(size_t)r * In + k] * x[k];
    for (int k = 0; k < H; k++) b += (double)Whh[(size_t)r * H + k] * h[k];
    gi[r] = a;
    gh[r] = b;
  }
  for (int i = 0; i < H; i++) {
    double r = sigm(gi[i] + gh[i]), z = sigm(gi[H + i] + gh[H + i]);
    double n = tanh(gi[2 * H + i] + r * gh[2 * H + i]);
    h[i] = (1 - z) * n + z * h[i];
  }
}

typedef struct ref_enc {
  int S;
  double out[32][64]; /* [S][He] */
  double s0[64];
  double fin[64];     /* [h_fwd_final ; h_bwd_final] of the top layer (score "none") */
} ref_enc;

static void ref_encode(const tmodel *m, const int32_t *ids, int S, ref_enc *e) {
  const sq_config *c = &m->cfg;
  const int D = c->embed_dim, H = c->enc_hidden, He = m->He, dirs = c->bidirectional ? 2 : 1;
  double in[32][64], fin[2][64];
  int in_dim = D;
  e->S = S;
  for (int t = 0; t < S; t++)
    for (int k = 0; k < D; k++) in[t][k] = W(m, "encoder.embedding.weight")[(size_t)ids[t] * D + k];
  for (int l = 0; l < c->enc_layers; l++) {
    for (int d = 0; d < dirs; d++) {
      char n1[80], n2[80], n3[80], n4[80];
      const char *s = d ? "_reverse" : "";
      snprintf(n1, 80, "encoder.rnn.weight_ih_l%d%s", l, s);
      snprintf(n2, 80, "encoder.rnn.weight_hh_l%d%s", l, s);
      snprintf(n3, 80, "encoder.rnn.bias_ih_l%d%s", l, s);
      snprintf(n4, 80, "encoder.rnn.bias_hh_l%d%s", l, s);
      double h[64] = {0};
      for (int step = 0; step < S; step++) {
        int t = d ? S - 1 - step : step;
        ref_cell(W(m, n1), W(m, n2), W(m, n3), W(m, n4), in_dim, H, in[t], h);
        for (int k = 0; k < H; k++) e->out[t][d * H + k] = h[k];
      }
      memcpy(fin[d], h, sizeof h);
    }
    for (int t = 0; t < S; t++) memcpy(in[t], e->out[t], sizeof e->out[t]);
    in_dim = He;
  }
  const int Hd = c->dec_hidden;
  for (int k = 0; k < He; k++) e->fin[k] = fin[k / H][k % H];
  for (int i = 0; i < Hd; i++) {
    if (c->init == SQ_INIT_ZEROS) {
      e->s0[i] = 0;
      continue;
    }
    double a = W(m, "bridge.bias")[i];
    for (int k = 0; k < He; k++)
      a += (double)W(m, "bridge.weight")[(size_t)i * He + k] * fin[k / H][k % H];
    e->s0[i] = tanh(a);
  }
}

/* One decoder step: alpha [S], logits [V]; s updated. */
static void ref_step(const tmodel *m, const ref_enc *e, double *s, int y, double *alpha,
                     double *logits) {
  const sq_config *c = &m->cfg;
  const int D = c->embed_dim, He = m->He, Hd = c->dec_hidden, S = e->S;
  double score[32], ctx[64] = {0}, x[128];
  for (int j = 0; c->score != SQ_SCORE_NONE && j < S; j++) {
    double v = 0;
    if (c->score == SQ_SCORE_ADDITIVE) {
      const int A = c->attn_dim;
      const float *bk = W(m, "decoder.attention.key.bias"), *bq = W(m, "decoder.attention.query.bias");
      const float *bv = W(m, "decoder.attention.energy.bias");
      for (int a = 0; a < A; a++) {
        double u = (bk ? bk[a] : 0) + (bq ? bq[a] : 0);
        for (int k = 0; k < He; k++)
          u += (double)W(m, "decoder.attention.key.weight")[(size_t)a * He + k] * e->out[j][k];
        for (int k = 0; k < Hd; k++)
          u += (double)W(m, "decoder.attention.query.weight")[(size_t)a * Hd + k] * s[k];
        v += (double)W(m, "decoder.attention.energy.weight")[a] * tanh(u);
      }
      v += bv ? bv[0] : 0;
    } else if (c->score == SQ_SCORE_GENERAL) {
      const float *bq = W(m, "decoder.attention.query.bias");
      for (int k = 0; k < He; k++) {
        double q = bq ? bq[k] : 0;
        for (int i = 0; i < Hd; i++)
          q += (double)W(m, "decoder.attention.query.weight")[(size_t)k * Hd + i] * s[i];
        v += e->out[j][k] * q;
      }
    } else {
      for (int k = 0; k < He; k++) v += e->out[j][k] * s[k];
      if (c->score == SQ_SCORE_SCALED_DOT) v /= sqrt((double)He);
    }
    score[j] = v;
  }
  if (c->score == SQ_SCORE_NONE) {
    /* seed 000 §01: c = h_S, the same at every step; no weights */
    for (int j = 0; j < S; j++) alpha[j] = 0;
    for (int k = 0; k < He; k++) ctx[k] = e->fin[k];
  } else {
    double mx = score[0], sum = 0;
    for (int j = 1; j < S; j++) mx = score[j] > mx ? score[j] : mx;
    for (int j = 0; j < S; j++) sum += exp(score[j] - mx);
    for (int j = 0; j < S; j++) {
      alpha[j] = exp(score[j] - mx) / sum;
      for (int k = 0; k < He; k++) ctx[k] += alpha[j] * e->out[j][k];
    }
  }
  for (int k = 0; k < D; k++) x[k] = W(m, "decoder.embedding.weight")[(size_t)y * D + k];
  for (int k = 0; k < He; k++) x[D + k] = ctx[k];
  ref_cell(W(m, "decoder.rnn.weight_ih"), W(m, "decoder.rnn.weight_hh"), W(m, "decoder.rnn.bias_ih"),
           W(m, "decoder.rnn.bias_hh"), D + He, Hd, x, s);
  const int in = c->output == SQ_OUTPUT_STATE ? Hd : Hd + He;
  for (int v = 0; v < c->tgt_vocab; v++) {
    double a = W(m, "decoder.output.bias")[v];
    for (int k = 0; k < Hd; k++) a += (double)W(m, "decoder.output.weight")[(size_t)v * in + k] * s[k];
    if (in > Hd)
      for (int k = 0; k < He; k++)
        a += (double)W(m, "decoder.output.weight")[(size_t)v * in + Hd + k] * ctx[k];
    logits[v] = a;
  }
}

/* ------------------------------------------------------------------ */
/* Test data                                                           */

/* Four lines of different lengths (the longest not first, S = 1 included). */
static const int32_t src_ids[] = {1, 2, 3, 4, 5, 6, 0, 3, 5, 5, 1, 4, 2, 6};
static const size_t src_off[] = {0, 2, 8, 9, 14};
static const int32_t tgt_ids[] = {7, 1, 2, 8, 7, 3, 8, 7, 4, 4, 4, 6, 8, 7, 0};
static const size_t tgt_off[] = {0, 4, 7, 13, 15};
#define NLINES 4

static seqcl_seqs the_src(void) {
  seqcl_seqs s = {NLINES, src_ids, src_off};
  return s;
}
static seqcl_seqs the_tgt(void) {
  seqcl_seqs s = {NLINES, tgt_ids, tgt_off};
  return s;
}

typedef struct worst {
  double err, ref;
} worst;
static void track(worst *w, double got, double ref) {
  if (fabs(got - ref) > w->err || isnan(got)) w->err = isnan(got) ? INFINITY : fabs(got - ref);
  if (fabs(ref) > w->ref) w->ref = fabs(ref);
}

/* ------------------------------------------------------------------ */
/* Per-device checks                                                   */


static void check_forward(const tmodel *tm, seqcl_model *model, const char *dev, int batch) {
  seqcl_seqs src = the_src(), tgt = the_tgt();
  seqcl_forward_result *r = NULL;
  seqcl_status st = seqcl_model_forward(model, &src, &tgt, batch, &r);
  if (st != SEQCL_OK) fail_msg("%s: forward: %s", dev, seqcl_last_message());
  assert_int_equal(r->N, NLINES);
  assert_int_equal(r->T, 5);
  assert_int_equal(r->S, 6);
  assert_int_equal(r->V, tm->cfg.tgt_vocab);
  const int align = tm->cfg.score != SQ_SCORE_NONE;
  if (!align) assert_null(r->alignments); /* SPEC §4: "none" has no alignments */
  worst wl = {0, 0}, wa = {0, 0};
  double loss = 0;
  size_t labels = 0;
  for (int n = 0; n < NLINES; n++) {
    ref_enc e;
    const int S = (int)(src_off[n + 1] - src_off[n]), L = (int)(tgt_off[n + 1] - tgt_off[n]) - 1;
    ref_encode(tm, src_ids + src_off[n], S, &e);
    double s[64], alpha[32], logits[64];
    memcpy(s, e.s0, sizeof s);
    for (int t = 0; t < r->T; t++) {
      const float *gl = r->logits + ((size_t)n * r->T + t) * r->V;
      const float *ga = align ? r->alignments + ((size_t)n * r->T + t) * r->S : NULL;
      if (t >= L) { /* past the line's end: exactly zero */
        for (int v = 0; v < r->V; v++) assert_true(gl[v] == 0.0f);
        for (int j = 0; align && j < r->S; j++) assert_true(ga[j] == 0.0f);
        continue;
      }
      ref_step(tm, &e, s, tgt_ids[tgt_off[n] + t], alpha, logits);
      for (int v = 0; v < r->V; v++) track(&wl, gl[v], logits[v]);
      for (int j = 0; align && j < r->S; j++) {
        if (j >= S)
          assert_true(ga[j] == 0.0f);
        else
          track(&wa, ga[j], alpha[j]);
      }
      double mx = logits[0], sum = 0;
      for (int v = 1; v < r->V; v++) mx = logits[v] > mx ? logits[v] : mx;
      for (int v = 0; v < r->V; v++) sum += exp(logits[v] - mx);
      loss += mx + log(sum) - logits[tgt_ids[tgt_off[n] + t + 1]];
      labels++;
    }
  }
  loss /= (double)labels;
  print_message("  %-10s batch %d: logits max|d| %.2e (max|ref| %.2f), alignments %.2e, loss %.6f vs %.6f\n",
                dev, batch, wl.err, wl.ref, wa.err, (double)r->loss, loss);
  assert_true(wl.ref > 0.1 && (wa.ref > 0.1 || !align)); /* the reference is not trivially small */
  assert_true(wl.err <= REL_TOL * wl.ref);
  assert_true(wa.err <= REL_TOL * wa.ref);
  assert_true(fabs(r->loss - loss) <= REL_TOL * fabs(loss));
  assert_int_equal(r->labels, labels);
  seqcl_forward_result_free(r);
}

/* Greedy decoding in double; returns steps; near[t] = 1 where the two best
 * logits are within NEAR_TIE. */
static int ref_greedy(const tmodel *tm, int n, int max_steps, int32_t *out, int *near,
                      double (*align)[32]) {
  ref_enc e;
  const int S = (int)(src_off[n + 1] - src_off[n]);
  ref_encode(tm, src_ids + src_off[n], S, &e);
  double s[64], logits[64];
  memcpy(s, e.s0, sizeof s);
  int y = tm->cfg.bos_id;
  for (int t = 0; t < max_steps; t++) {
    ref_step(tm, &e, s, y, align[t], logits);
    int best = 0, second = -1;
    for (int v = 1; v < tm->cfg.tgt_vocab; v++)
      if (logits[v] > logits[best]) best = v;
    for (int v = 0; v < tm->cfg.tgt_vocab; v++)
      if (v != best && (second < 0 || logits[v] > logits[second])) second = v;
    near[t] = logits[best] - logits[second] < NEAR_TIE;
    out[t] = y = best;
    if (y == tm->cfg.eos_id) return t + 1;
  }
  return max_steps;
}

static void check_greedy(const tmodel *tm, seqcl_model *model, const char *dev) {
  seqcl_seqs src = the_src();
  seqcl_decode_options o;
  seqcl_decode_options_init(&o);
  o.max_steps = 9;
  const int has_align = tm->cfg.score != SQ_SCORE_NONE; /* "none" has no alignments */
  o.want_alignments = has_align;
  o.batch_size = 3; /* two batches of different sizes */
  seqcl_decode_result *g = NULL, *b1 = NULL;
  if (seqcl_model_decode(model, &src, &o, &g) != SEQCL_OK)
    fail_msg("%s: greedy: %s", dev, seqcl_last_message());
  o.nbest = 1; /* forces the beam path with K = 1 */
  if (seqcl_model_decode(model, &src, &o, &b1) != SEQCL_OK)
    fail_msg("%s: beam 1: %s", dev, seqcl_last_message());
  int finished_lines = 0, T = 0;
  worst wa = {0, 0};
  for (int n = 0; n < NLINES; n++) {
    int32_t ref[16];
    int near[16];
    double align[16][32];
    const int steps = ref_greedy(tm, n, o.max_steps, ref, near, align);
    const int S = (int)(src_off[n + 1] - src_off[n]);
    const size_t len = g->offsets[n + 1] - g->offsets[n];
    const int32_t *got = g->ids + g->offsets[n];
    int diverged = 0;
    for (int t = 0; t < steps && !diverged; t++) {
      int32_t mine = (size_t)t < len ? got[t] : tm->cfg.eos_id;
      if (mine != ref[t]) {
        if (!near[t]) fail_msg("%s: line %d step %d: greedy %d, reference %d", dev, n, t, mine, ref[t]);
        diverged = 1; /* a near-tie: either choice is right; the rest can differ */
      }
    }
    if (!diverged) {
      assert_int_equal(g->steps[n], steps);
      for (int t = 0; t < steps; t++)
        for (int j = 0; has_align && j < S; j++) track(&wa, g->alignments[((size_t)n * g->T + t) * g->S + j], align[t][j]);
    }
    finished_lines += ref[steps - 1] == tm->cfg.eos_id;
    if (g->steps[n] > T) T = g->steps[n];
    /* rows after the line's EOS and columns past its source are zero */
    for (int t = 0; has_align && t < g->T; t++)
      for (int j = 0; j < g->S; j++)
        if (t >= g->steps[n] || j >= S) assert_true(g->alignments[((size_t)n * g->T + t) * g->S + j] == 0.0f);
    /* K = 1 beam search is greedy decoding, exactly */
    assert_int_equal(b1->offsets[n + 1] - b1->offsets[n], len);
    assert_memory_equal(b1->ids + b1->offsets[n], got, len * sizeof(int32_t));
    assert_int_equal(b1->steps[n], g->steps[n]);
  }
  assert_int_equal(g->T, T);
  assert_int_equal(b1->T, g->T);
  if (has_align)
    assert_memory_equal(b1->alignments, g->alignments, (size_t)g->count * g->T * g->S * sizeof(float));
  else
    assert_true(!g->alignments && !b1->alignments);
  print_message("  %-10s greedy: %d/%d lines end with EOS, alignments max|d| %.2e; beam 1 == greedy\n",
                dev, finished_lines, NLINES, wa.err);
  assert_true(wa.err <= REL_TOL * (wa.ref > 0 ? wa.ref : 1));
  seqcl_decode_result_free(g);
  seqcl_decode_result_free(b1);
}

/* Beam search in double, written from SPEC §4; returns the best tokens. */
typedef struct rhyp {
  double s[64];
  int32_t tok[16];
  int len;
  double lp;
} rhyp;

static int rcand_cmp(const void *a, const void *b) {
  const double *x = a, *y = b; /* {logprob, tok, hyp} */
  if (x[0] != y[0]) return x[0] > y[0] ? -1 : 1;
  if (x[1] != y[1]) return x[1] < y[1] ? -1 : 1;
  return (x[2] > y[2]) - (x[2] < y[2]);
}

static int ref_beam(const tmodel *tm, int n, int K, double A, int max_steps, int32_t *out,
                    double *score) {
  ref_enc e;
  const int S = (int)(src_off[n + 1] - src_off[n]), V = tm->cfg.tgt_vocab, eos = tm->cfg.eos_id;
  ref_encode(tm, src_ids + src_off[n], S, &e);
  rhyp live[8], next[8], fin[8];
  int nlive = 1, nfin = 0;
  memset(live, 0, sizeof live);
  memcpy(live[0].s, e.s0, sizeof e.s0);
  for (int t = 0; t < max_steps && nlive > 0 && nfin < K; t++) {
    double cands[64][3], state[8][64];
    int nc = 0;
    for (int k = 0; k < nlive; k++) {
      double alpha[32], logits[64];
      memcpy(state[k], live[k].s, sizeof state[k]);
      ref_step(tm, &e, state[k], t ? live[k].tok[t - 1] : tm->cfg.bos_id, alpha, logits);
      double mx = logits[0], sum = 0;
      for (int v = 1; v < V; v++) mx = logits[v] > mx ? logits[v] : mx;
      for (int v = 0; v < V; v++) sum += exp(logits[v] - mx);
      int used[64] = {0};
      for (int i = 0; i < K && i < V; i++) { /* its K best tokens, lower id on ties */
        int b = -1;
        for (int v = 0; v < V; v++)
          if (!used[v] && (b < 0 || logits[v] > logits[b])) b = v;
        used[b] = 1;
        cands[nc][0] = live[k].lp + logits[b] - mx - log(sum);
        cands[nc][1] = b;
        cands[nc][2] = k;
        nc++;
      }
    }
    qsort(cands, (size_t)nc, sizeof cands[0], rcand_cmp);
    int nn = 0;
    const int keep = K - nfin; /* K hypotheses in all, finished ones included */
    for (int c = 0; c < nc && c < keep; c++) {
      rhyp h = live[(int)cands[c][2]];
      memcpy(h.s, state[(int)cands[c][2]], sizeof h.s);
      h.tok[t] = (int32_t)cands[c][1];
      h.len = t + 1;
      h.lp = cands[c][0];
      if (h.tok[t] == eos)
        fin[nfin++] = h;
      else
        next[nn++] = h;
    }
    memcpy(live, next, sizeof next);
    nlive = nn;
  }
  const rhyp *pool = nfin ? fin : live;
  const int np = nfin ? nfin : nlive;
  int best = 0;
  for (int i = 1; i < np; i++)
    if (pool[i].lp / pow(pool[i].len, A) > pool[best].lp / pow(pool[best].len, A)) best = i;
  *score = pool[best].lp / pow(pool[best].len, A);
  int len = pool[best].len - (nfin ? 1 : 0);
  memcpy(out, pool[best].tok, (size_t)len * sizeof(int32_t));
  return len;
}

/* The beam checks' options: K hypotheses, all of them reported, 8 steps,
 * alignments where the model has attention. */
static seqcl_decode_options beam_options(const tmodel *tm, int K, double A) {
  seqcl_decode_options o;
  seqcl_decode_options_init(&o);
  o.max_steps = 8;
  o.beam = K;
  o.length_penalty = A;
  o.nbest = K;
  o.want_alignments = tm->cfg.score != SQ_SCORE_NONE;
  return o;
}

static void check_beam(const tmodel *tm, seqcl_model *model, const char *dev, int K, double A) {
  seqcl_seqs src = the_src();
  const seqcl_decode_options o = beam_options(tm, K, A);
  seqcl_decode_result *r = NULL;
  if (seqcl_model_decode(model, &src, &o, &r) != SEQCL_OK)
    fail_msg("%s: beam %d: %s", dev, K, seqcl_last_message());
  for (int n = 0; n < NLINES; n++) {
    int32_t ref[16];
    double score;
    const int len = ref_beam(tm, n, K, A, o.max_steps, ref, &score);
    assert_int_equal(r->offsets[n + 1] - r->offsets[n], len);
    assert_memory_equal(r->ids + r->offsets[n], ref, (size_t)len * sizeof(int32_t));
    assert_true(fabs(r->scores[n] - score) <= 1e-4 * fabs(score) + 1e-6);
    assert_true(r->hyp_counts[n] >= 1 && r->hyp_counts[n] <= K);
    /* n-best list: finished hypotheses first, each group sorted by score */
    for (int k = 1; k < r->hyp_counts[n]; k++) {
      const seqcl_hypothesis *a = &r->hyps[n * r->nbest + k - 1], *b = &r->hyps[n * r->nbest + k];
      assert_true(a->finished >= b->finished);
      if (a->finished == b->finished) assert_true(b->score <= a->score);
    }
  }
  print_message("  %-10s beam %d (A = %.1f) matches the reference beam search\n", dev, K, A);
  seqcl_decode_result_free(r);
}

/* Beam search with each sentence's K rows reading its one encoding (the
 * default) gives what K copies of it give, bit for bit: the same keys meet
 * the same queries in the same order. */
static void check_beam_shared(const tmodel *tm, seqcl_model *model, const char *dev, int K) {
  seqcl_seqs src = the_src();
  const seqcl_decode_options o = beam_options(tm, K, 0.0);
  seqcl_decode_result *r[2] = {NULL, NULL};
  for (int copies = 0; copies < 2; copies++) {
    sq_ctx_set_ablated(model->ctx, copies ? SQ_ABL_BEAM_SHARED : 0);
    if (seqcl_model_decode(model, &src, &o, &r[copies]) != SEQCL_OK)
      fail_msg("%s: beam %d (%s encoding): %s", dev, K, copies ? "copied" : "shared",
               seqcl_last_message());
  }
  sq_ctx_set_ablated(model->ctx, 0);
  tr_expect_same(r[0], r[1], o.want_alignments);
  print_message("  %-10s beam %d: shared encoding = K copies, bit for bit\n", dev, K);
  seqcl_decode_result_free(r[0]);
  seqcl_decode_result_free(r[1]);
}

typedef struct model_case {
  const char *name;
  sq_score score;
  int bidir, layers;
  sq_init init;
  sq_output output;
  int biases;
} model_case;

static const model_case cases[] = {
    {"additive uni 1-layer zeros state", SQ_SCORE_ADDITIVE, 0, 1, SQ_INIT_ZEROS, SQ_OUTPUT_STATE, 1},
    {"additive bi 2-layer bridge state_context (no attn biases)", SQ_SCORE_ADDITIVE, 1, 2,
     SQ_INIT_BRIDGE, SQ_OUTPUT_STATE_CONTEXT, 0},
    {"general bi 1-layer bridge state", SQ_SCORE_GENERAL, 1, 1, SQ_INIT_BRIDGE, SQ_OUTPUT_STATE, 1},
    {"dot uni 2-layer bridge state_context", SQ_SCORE_DOT, 0, 2, SQ_INIT_BRIDGE,
     SQ_OUTPUT_STATE_CONTEXT, 0},
    {"scaled_dot bi 3-layer zeros state", SQ_SCORE_SCALED_DOT, 1, 3, SQ_INIT_ZEROS, SQ_OUTPUT_STATE, 0},
    {"none uni 1-layer zeros state", SQ_SCORE_NONE, 0, 1, SQ_INIT_ZEROS, SQ_OUTPUT_STATE, 0},
    {"none bi 2-layer bridge state_context", SQ_SCORE_NONE, 1, 2, SQ_INIT_BRIDGE,
     SQ_OUTPUT_STATE_CONTEXT, 0},
};

static void test_model_vs_reference(void **state) {
  (void)state;
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    tmodel tm;
    make_model(&tm, 1000 + c, cases[c].score, cases[c].bidir, cases[c].layers, cases[c].init,
               cases[c].output, cases[c].biases);
    write_model(&tm);
    print_message("%s\n", cases[c].name);
    for (size_t d = 0; d < device_count; d++) {
      seqcl_ctx *ctx = NULL;
      if (seqcl_ctx_open_info(&devices[d], &ctx) != SEQCL_OK)
        fail_msg("%s: %s", devices[d].selector, seqcl_last_message());
      seqcl_model *model = NULL;
      if (seqcl_model_load(ctx, tm.dir, &model) != SEQCL_OK)
        fail_msg("%s: load: %s", devices[d].selector, seqcl_last_message());
      const char *dev = devices[d].selector;
      /* The small vocabulary gets the decoder's embedding table: the checks
       * run the steps that gather from it, then the ones that embed and
       * multiply (the table ablated), against the same reference. */
      assert_non_null(model->dec_table);
      for (int abl = 0; abl < 2; abl++) {
        sq_ctx_set_ablated(ctx, abl ? SQ_ABL_DEC_TABLE : 0);
        check_forward(&tm, model, dev, 0);
        check_forward(&tm, model, dev, 3);
        check_greedy(&tm, model, dev);
        check_beam(&tm, model, dev, 3, 0.0);
        check_beam(&tm, model, dev, 4, 1.0);
      }
      sq_ctx_set_ablated(ctx, 0);
      check_beam_shared(&tm, model, dev, 3);
      if (cases[c].output == SQ_OUTPUT_STATE_CONTEXT) {
        /* The checks above ran the output over [s ; c] as one product over
         * the step's row [s | c | e]; the two-product form must agree too. */
        sq_dec_ws ws;
        assert_int_equal(sq_dec_ws_init(model, 2, &ws), SEQCL_OK);
        assert_non_null(ws.sce);
        sq_dec_ws_free(&ws);
        sq_ctx_set_ablated(ctx, SQ_ABL_OUTPUT_ONE_GEMM);
        assert_int_equal(sq_dec_ws_init(model, 2, &ws), SEQCL_OK);
        assert_null(ws.sce);
        sq_dec_ws_free(&ws);
        check_forward(&tm, model, dev, 3);
        check_greedy(&tm, model, dev);
        check_beam(&tm, model, dev, 3, 0.0);
        sq_ctx_set_ablated(ctx, 0);
      }
      seqcl_model_free(model);
      seqcl_ctx_close(ctx);
    }
    free_model(&tm);
  }
}

/* ------------------------------------------------------------------ */
/* Load-time errors (host only: they happen before the device is used) */

static void expect_load_error(tmodel *tm, const char *needle1, const char *needle2) {
  write_model(tm);
  seqcl_ctx *ctx = NULL;
  assert_int_equal(seqcl_ctx_open("cpu", &ctx), SEQCL_OK);
  seqcl_model *model = (seqcl_model *)1;
  assert_int_equal(seqcl_model_load(ctx, tm->dir, &model), SEQCL_ERR_BAD_MODEL);
  assert_null(model);
  const char *msg = seqcl_last_message();
  if (!strstr(msg, needle1) || !strstr(msg, needle2))
    fail_msg("message '%s' lacks '%s' / '%s'", msg, needle1, needle2);
  assert_string_equal(seqcl_ctx_message(ctx), msg);
  seqcl_ctx_close(ctx);
  free_model(tm);
}

static void test_load_errors(void **state) {
  (void)state;
  tmodel tm;
  /* missing required tensor */
  make_model(&tm, 7, SQ_SCORE_ADDITIVE, 0, 1, SQ_INIT_ZEROS, SQ_OUTPUT_STATE, 1);
  tensor *t = find(&tm, "decoder.rnn.bias_hh");
  free(t->data);
  *t = tm.t[--tm.n];
  expect_load_error(&tm, "missing tensor 'decoder.rnn.bias_hh'", "model.safetensors");

  /* unknown tensor */
  make_model(&tm, 8, SQ_SCORE_GENERAL, 1, 1, SQ_INIT_BRIDGE, SQ_OUTPUT_STATE, 1);
  add(&tm, "decoder.attention.key.weight", 2, 3, 3); /* only additive has keys */
  expect_load_error(&tm, "unknown tensor 'decoder.attention.key.weight'", "model.safetensors");

  /* "none" has no attention weights at all (SPEC §2): one is an unknown tensor */
  make_model(&tm, 12, SQ_SCORE_NONE, 1, 1, SQ_INIT_ZEROS, SQ_OUTPUT_STATE, 0);
  add(&tm, "decoder.attention.query.weight", 2, 12, 8);
  expect_load_error(&tm, "unknown tensor 'decoder.attention.query.weight'", "model.safetensors");

  /* wrong shape */
  make_model(&tm, 9, SQ_SCORE_DOT, 0, 2, SQ_INIT_ZEROS, SQ_OUTPUT_STATE_CONTEXT, 0);
  t = find(&tm, "encoder.rnn.weight_ih_l1");
  t->shape[1] = 5; /* the embedding width instead of H_e = 6 */
  expect_load_error(&tm, "'encoder.rnn.weight_ih_l1' has shape [18, 5]", "expected [18, 6]");

  /* a bridge model without its bridge */
  make_model(&tm, 10, SQ_SCORE_DOT, 0, 1, SQ_INIT_BRIDGE, SQ_OUTPUT_STATE, 0);
  t = find(&tm, "bridge.bias");
  free(t->data);
  *t = tm.t[--tm.n];
  expect_load_error(&tm, "missing tensor 'bridge.bias'", "[6]");

  /* a config problem is reported by the config reader, naming the file */
  seqcl_ctx *ctx = NULL;
  assert_int_equal(seqcl_ctx_open("cpu", &ctx), SEQCL_OK);
  seqcl_model *model = (seqcl_model *)1;
  seqcl_status st = seqcl_model_load(ctx, "/nonexistent-seqcl-model", &model);
  assert_true(st == SEQCL_ERR_IO || st == SEQCL_ERR_BAD_MODEL);
  assert_null(model);
  assert_non_null(strstr(seqcl_last_message(), "/nonexistent-seqcl-model/config.json"));
  seqcl_ctx_close(ctx);
}

static void test_bad_inputs(void **state) {
  (void)state;
  tmodel tm;
  make_model(&tm, 11, SQ_SCORE_ADDITIVE, 0, 1, SQ_INIT_ZEROS, SQ_OUTPUT_STATE, 1);
  write_model(&tm);
  seqcl_ctx *ctx = NULL;
  assert_int_equal(seqcl_ctx_open("cpu", &ctx), SEQCL_OK);
  seqcl_model *model = NULL;
  assert_int_equal(seqcl_model_load(ctx, tm.dir, &model), SEQCL_OK);
  seqcl_model_config c;
  assert_int_equal(seqcl_model_get_config(model, &c), SEQCL_OK);
  assert_int_equal(c.tgt_vocab_size, 9);
  assert_int_equal(c.encoder_width, 6);
  assert_int_equal(c.attention_dim, 7);
  assert_int_equal(seqcl_model_eos_id(model), 8);

  seqcl_seqs src = the_src(), tgt = the_tgt();
  seqcl_forward_result *fr = (seqcl_forward_result *)1;
  /* a target line of BOS alone has no label */
  static const size_t short_off[] = {0, 4, 7, 13, 14};
  seqcl_seqs tshort = {NLINES, tgt_ids, short_off};
  assert_int_equal(seqcl_model_forward(model, &src, &tshort, 0, &fr), SEQCL_ERR_EMPTY_SEQUENCE);
  assert_null(fr);
  assert_non_null(strstr(seqcl_last_message(), "target line 4"));
  /* line counts differ */
  tgt.count = 3;
  fr = (seqcl_forward_result *)1;
  assert_int_equal(seqcl_model_forward(model, &src, &tgt, 0, &fr), SEQCL_ERR_INVALID_ARGUMENT);
  assert_null(fr);
  /* an empty source line */
  static const size_t empty_off[] = {0, 2, 2, 9, 14};
  seqcl_seqs sempty = {NLINES, src_ids, empty_off};
  seqcl_decode_result *dr = (seqcl_decode_result *)1;
  assert_int_equal(seqcl_model_decode(model, &sempty, NULL, &dr), SEQCL_ERR_EMPTY_SEQUENCE);
  assert_null(dr);
  assert_non_null(strstr(seqcl_last_message(), "source line 2"));
  /* an id outside the vocabulary */
  static const int32_t bad_ids[] = {1, 7};
  static const size_t bad_off[] = {0, 2};
  seqcl_seqs sbad = {1, bad_ids, bad_off};
  dr = (seqcl_decode_result *)1;
  assert_int_equal(seqcl_model_decode(model, &sbad, NULL, &dr), SEQCL_ERR_INVALID_ARGUMENT);
  assert_null(dr);
  /* nbest larger than the beam */
  seqcl_decode_options o;
  seqcl_decode_options_init(&o);
  o.beam = 2;
  o.nbest = 3;
  assert_int_equal(seqcl_model_decode(model, &src, &o, &dr), SEQCL_ERR_INVALID_ARGUMENT);
  /* default max_steps: 2 x 6 + 10 = 22 at most */
  seqcl_decode_options_init(&o);
  assert_int_equal(seqcl_model_decode(model, &src, &o, &dr), SEQCL_OK);
  for (int n = 0; n < NLINES; n++) assert_true(dr->steps[n] >= 1 && dr->steps[n] <= 22);
  assert_null(dr->alignments);
  seqcl_decode_result_free(dr);
  seqcl_model_free(model);
  seqcl_ctx_close(ctx);
  free_model(&tm);
}

SQ_TEST_MAIN(test_devices_setup, test_devices_teardown,
      cmocka_unit_test(test_load_errors),
      cmocka_unit_test(test_bad_inputs),
      cmocka_unit_test(test_model_vs_reference))
