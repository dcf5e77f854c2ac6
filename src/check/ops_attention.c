/* Op list entries of the attention family: attention scores (four kinds),
 * masked softmax, context, the fused attention step (four kinds, also checked
 * against its own unfused composition), and the hand-computed case of seed
 * 000. Over 500 lines for a reason: the four kinds' error bounds are shared by
 * the scores, the fused step and the hand case; the training entries are in
 * ops_attention_bwd.c. */
#include <stdlib.h>
#include <string.h>

#include "check/opdefs.h"
#include "check/ops_all.h"

/* Shape keys: N S He Hd A; bk bq bv (biases present, default 1); lens (1 =
 * varied lengths, the default; 0 = all S); mask (1 = also a random mask);
 * pad (extra row stride of the context output); poison (1 = rows without a
 * softmax, poison_rows); group (rows per source, sq_attn_args.group: each
 * group's rows get the same keys, length and mask, and the op reads them once
 * per source, from keys_g, lens_g and mask_g). dot/scaled_dot use Hd = He. */
typedef struct attn_dims {
  sq_score kind;
  int N, S, He, Hd, A, pad, group;
} attn_dims;

static void attn_dims_of(const sq_case *c, attn_dims *d) {
  const sq_shape *s = &c->shape;
  d->kind = (sq_score)c->op->variant;
  d->N = sq_shape_int(s, "N", 1);
  d->S = sq_shape_int(s, "S", 1);
  d->He = sq_shape_int(s, "He", 1);
  d->Hd = d->kind == SQ_SCORE_DOT || d->kind == SQ_SCORE_SCALED_DOT ? d->He
                                                                     : sq_shape_int(s, "Hd", 1);
  d->A = d->kind == SQ_SCORE_ADDITIVE ? sq_shape_int(s, "A", 1) : 0;
  d->pad = sq_shape_int(s, "pad", 0);
  d->group = sq_shape_int(s, "group", 1);
}

/* group > 1: each group's rows take its first row's keys, length and mask
 * (so the reference, which reads them row by row, sees what the op sees),
 * and keys_g, lens_g and mask_g hold them once per source. */
static seqcl_status group_sources(sq_case *c, const attn_dims *d, float *keys, int32_t *lens,
                                  int32_t *mask) {
  const int G = d->group, Ns = d->N / G, S = d->S, He = d->He;
  float *keys_g = sq_case_f(c, "keys_g", (size_t)Ns * S * He);
  int32_t *lens_g = sq_case_i(c, "lens_g", (size_t)Ns);
  int32_t *mask_g = mask ? sq_case_i(c, "mask_g", (size_t)Ns * S) : NULL;
  SQ_NEED(keys_g && lens_g && (!mask || mask_g));
  const size_t row = (size_t)S * He;
  for (int n = 0; n < d->N; n++) {
    const int first = n - n % G;
    if (n != first) {
      memcpy(keys + n * row, keys + first * row, row * sizeof *keys);
      lens[n] = lens[first];
      if (mask) memcpy(mask + (size_t)n * S, mask + (size_t)first * S, (size_t)S * sizeof *mask);
      continue;
    }
    memcpy(keys_g + (size_t)(n / G) * row, keys + n * row, row * sizeof *keys);
    lens_g[n / G] = lens[n];
    if (mask) memcpy(mask_g + (size_t)(n / G) * S, mask + (size_t)n * S, (size_t)S * sizeof *mask);
  }
  return SEQCL_OK;
}

/* The first valid position of row n (sq_gen_mask keeps one in every row). */
static int first_valid(const sq_case *c, int S, int n) {
  int j = 0;
  while (j + 1 < S && !sq_attn_valid(c, S, n, j)) j++;
  return j;
}

/* poison=1 (N >= 3): rows whose scores have no softmax, which must come out
 * NaN (weights and context) on every device rather than as a zero context:
 * row 0's query is NaN (every score NaN), row 1 has one NaN key element (one
 * score NaN) and, for dot-type scores, every valid key of row 2 starts with
 * an infinity of the query's opposite sign (every valid score -inf). */
static seqcl_status poison_rows(const sq_case *c, const attn_dims *d, float *keys, float *q) {
  if (d->N < 3)
    return sq_fail(NULL, SEQCL_ERR_INVALID_ARGUMENT, "%s: poison needs N >= 3", c->op->name);
  q[0] = NAN;
  keys[((size_t)1 * d->S + first_valid(c, d->S, 1)) * d->He] = NAN;
  if (d->kind == SQ_SCORE_DOT || d->kind == SQ_SCORE_SCALED_DOT) {
    float *q2 = q + (size_t)2 * d->Hd;
    if (q2[0] == 0.0f) q2[0] = 0.5f;
    for (int j = 0; j < d->S; j++)
      if (sq_attn_valid(c, d->S, 2, j))
        keys[((size_t)2 * d->S + j) * d->He] = q2[0] > 0 ? -INFINITY : INFINITY;
  }
  return SEQCL_OK;
}

/* Draws the inputs every attention entry takes; *dp receives the case's dims. */
static seqcl_status attn_gen_inputs(sq_case *c, sq_rng *r, attn_dims *dp) {
  SQ_DIM(c, N, "N", 1, 1, SQ_MAXDIM);
  SQ_DIM(c, S, "S", 1, 1, SQ_MAXDIM);
  SQ_DIM(c, He, "He", 1, 1, SQ_MAXDIM);
  SQ_DIM(c, pad, "pad", 0, 0, 4096);
  (void)N, (void)S, (void)He, (void)pad;
  attn_dims d;
  attn_dims_of(c, &d);
  *dp = d;
  if (d.Hd < 1 || d.Hd > SQ_MAXDIM || (d.kind == SQ_SCORE_ADDITIVE && (d.A < 1 || d.A > SQ_MAXDIM)))
    return sq_fail(NULL, SEQCL_ERR_INVALID_ARGUMENT, "%s: Hd and A must lie in [1, %d]",
                   c->op->name, SQ_MAXDIM);
  const sq_shape *s = &c->shape;
  float *keys = sq_gen_f(c, r, "keys", (size_t)d.N * d.S * d.He, 1.0f);
  float *q = sq_gen_f(c, r, "q", (size_t)d.N * d.Hd, 1.0f);
  SQ_NEED(keys && q);
  /* Weights scaled like PyTorch's initialisation (1/sqrt(fan_in)) so that tanh
   * is not saturated and errors in its argument stay visible. */
  if (d.kind == SQ_SCORE_ADDITIVE) {
    SQ_NEED(sq_gen_f(c, r, "Wk", (size_t)d.A * d.He, 1.0f / sqrtf((float)d.He)));
    if (sq_shape_int(s, "bk", 1)) SQ_NEED(sq_gen_f(c, r, "bk", (size_t)d.A, 0.5f));
    SQ_NEED(sq_gen_f(c, r, "Wq", (size_t)d.A * d.Hd, 1.0f / sqrtf((float)d.Hd)));
    if (sq_shape_int(s, "bq", 1)) SQ_NEED(sq_gen_f(c, r, "bq", (size_t)d.A, 0.5f));
    SQ_NEED(sq_gen_f(c, r, "v", (size_t)d.A, 1.0f));
    if (sq_shape_int(s, "bv", 1)) SQ_NEED(sq_gen_f(c, r, "bv", 1, 1.0f));
  } else if (d.kind == SQ_SCORE_GENERAL) {
    SQ_NEED(sq_gen_f(c, r, "Wq", (size_t)d.He * d.Hd, 1.0f / sqrtf((float)d.Hd)));
    if (sq_shape_int(s, "bq", 1)) SQ_NEED(sq_gen_f(c, r, "bq", (size_t)d.He, 0.5f));
  }
  int32_t *lens = sq_gen_lens(c, r, "lens", d.N, d.S, sq_shape_int(s, "lens", 1));
  SQ_NEED(lens);
  int32_t *mask = NULL;
  if (sq_shape_int(s, "mask", 0)) SQ_NEED(mask = sq_gen_mask(c, r, d.N, d.S));
  if (sq_shape_int(s, "poison", 0)) SQ_TRY(poison_rows(c, &d, keys, q));
  if (d.group > 1) {
    if (d.N % d.group || sq_shape_int(s, "poison", 0))
      return sq_fail(NULL, SEQCL_ERR_INVALID_ARGUMENT,
                     "%s: group must divide N (and not come with poison)", c->op->name);
    SQ_TRY(group_sources(c, &d, keys, lens, mask));
  }
  return SEQCL_OK;
}

/* Reads the case's dims into d, uploads the inputs, projects the query (and
 * the keys for additive) with sq_linear, and fills the argument block every
 * attention front takes (with group > 1: the keys, lengths and mask once per
 * source). */
static seqcl_status attn_prepare(sq_arena *a, const sq_case *c, attn_dims *d,
                                 sq_attn_args *args) {
  attn_dims_of(c, d);
  sq_attn_args_named(a, c, d->kind, d->N, d->S, d->He, d->A, args);
  const int Ns = d->N / d->group;
  if (d->group > 1) {
    args->group = d->group;
    args->keys = sq_arena_in_named(a, c, "keys_g");
    args->lens = sq_arena_in_named(a, c, "lens_g");
    args->mask = sq_arena_in_named(a, c, "mask_g");
  }
  sq_ref q = sq_arena_in_named(a, c, "q");
  if (d->kind == SQ_SCORE_ADDITIVE) {
    sq_ref Wk = sq_arena_in_named(a, c, "Wk"), bk = sq_arena_in_named(a, c, "bk");
    sq_ref Wq = sq_arena_in_named(a, c, "Wq"), bq = sq_arena_in_named(a, c, "bq");
    args->pkeys = sq_arena_scratch(a, "pkeys", (size_t)Ns * d->S * d->A);
    args->qp = sq_arena_scratch(a, "qp", (size_t)d->N * d->A);
    args->ld_qp = d->A;
    SQ_TRY(a->st);
    SQ_TRY(sq_linear(a->ctx, Ns * d->S, d->He, d->A, args->keys, d->He, Wk, bk, args->pkeys,
                     d->A));
    SQ_TRY(sq_linear(a->ctx, d->N, d->Hd, d->A, q, d->Hd, Wq, bq, args->qp, d->A));
  } else if (d->kind == SQ_SCORE_GENERAL) {
    sq_ref Wq = sq_arena_in_named(a, c, "Wq"), bq = sq_arena_in_named(a, c, "bq");
    args->qp = sq_arena_scratch(a, "qp", (size_t)d->N * d->He);
    args->ld_qp = d->He;
    SQ_TRY(a->st);
    SQ_TRY(sq_linear(a->ctx, d->N, d->Hd, d->He, q, d->Hd, Wq, bq, args->qp, d->He));
  } else {
    args->qp = q;
    args->ld_qp = d->He;
  }
  return a->st;
}

/* The error bound of the raw score e[n, j] (see the entries' tolerance texts). */
static double score_tol(const sq_case *c, const attn_dims *d, int n, int j) {
  const float *keys = sq_case_inf(c, "keys") + ((size_t)n * d->S + j) * d->He;
  const float *q = sq_case_inf(c, "q") + (size_t)n * d->Hd;
  const float *Wq = sq_case_inf(c, "Wq"), *bq = sq_case_inf(c, "bq");
  double t = 0;
  if (d->kind == SQ_SCORE_ADDITIVE) {
    const float *Wk = sq_case_inf(c, "Wk"), *bk = sq_case_inf(c, "bk");
    const float *v = sq_case_inf(c, "v"), *bv = sq_case_inf(c, "bv");
    double fk = sq_dot_factor((d->He > d->Hd ? d->He : d->Hd) + 1), sv = 0;
    for (int x = 0; x < d->A; x++) {
      double m = (bk ? fabs(bk[x]) : 0) + (bq ? fabs(bq[x]) : 0);
      for (int i = 0; i < d->He; i++) m += fabs(Wk[(size_t)x * d->He + i] * keys[i]);
      for (int i = 0; i < d->Hd; i++) m += fabs(Wq[(size_t)x * d->Hd + i] * q[i]);
      /* the argument's error passes through tanh (slope <= 1); tanh itself is
       * allowed 5 ulp in OpenCL C, one more for the add */
      t += fabs(v[x]) * (fk * m + 6 * SQ_EPS);
      sv += fabs(v[x]);
    }
    t += sq_dot_factor(d->A) * (sv + (bv ? fabs(bv[0]) : 0));
  } else if (d->kind == SQ_SCORE_GENERAL) {
    double f = sq_dot_factor(d->He) + sq_dot_factor(d->Hd);
    for (int i = 0; i < d->He; i++) {
      double m = bq ? fabs(bq[i]) : 0;
      for (int k = 0; k < d->Hd; k++) m += fabs(Wq[(size_t)i * d->Hd + k] * q[k]);
      t += f * fabs(keys[i]) * m;
    }
  } else {
    double scale = d->kind == SQ_SCORE_SCALED_DOT ? 1.0 / sqrt((double)d->He) : 1.0;
    for (int i = 0; i < d->He; i++) t += fabs(keys[i] * q[i]);
    t *= sq_dot_factor(d->He + 1) * scale; /* +1: the float rounding of the scale */
  }
  return t;
}

/* ------------------------------------------------------ attn_scores.* ---- */
static seqcl_status scores_gen(sq_case *c, sq_rng *r) {
  attn_dims d;
  SQ_TRY(attn_gen_inputs(c, r, &d));
  SQ_NEED(sq_case_out(c, "scores", (size_t)d.N * d.S, 0) >= 0);
  return SEQCL_OK;
}

static seqcl_status scores_run(sq_arena *a, const sq_case *c) {
  attn_dims d;
  sq_attn_args args;
  SQ_TRY(attn_prepare(a, c, &d, &args));
  sq_ref e = sq_arena_out(a, "scores", (size_t)d.N * d.S, NULL);
  SQ_TRY(a->st);
  const int g = d.group > 1;
  SQ_TRY(sq_attn_scores(a->ctx, &args, sq_case_ini(c, g ? "lens_g" : "lens"),
                        sq_case_ini(c, g ? "mask_g" : "mask"), e));
  return sq_finish_fetch(a, c, &e);
}

static void scores_tol(const sq_case *c, int k, double *const *ref, double *tol) {
  (void)k, (void)ref;
  attn_dims d;
  attn_dims_of(c, &d);
  const int32_t *lens = sq_case_ini(c, "lens");
  for (int n = 0; n < d.N; n++)
    for (int j = 0; j < d.S; j++)
      /* raw energies past a row's length may hold anything finite */
      tol[(size_t)n * d.S + j] = j < lens[n] ? score_tol(c, &d, n, j) : INFINITY;
}

static const char *const additive_shapes[] = {
    "N=1,S=1,He=1,Hd=1,A=1",
    "N=3,S=7,He=13,Hd=5,A=11",
    "N=5,S=37,He=61,Hd=13,A=33,bk=0",
    "N=2,S=13,He=8,Hd=16,A=7,bq=0",
    "N=4,S=61,He=24,Hd=40,A=65,bv=0",
    "N=3,S=13,He=7,Hd=7,A=13,bk=0,bq=0,bv=0,mask=1",
    "N=2,S=256,He=512,Hd=512",
    /* rows sharing a source (beam search's hypotheses) */
    "N=6,S=13,He=9,Hd=5,A=11,group=3,mask=1", "N=10,S=70,He=17,Hd=6,A=16,group=5",
    NULL};
static const char *const general_shapes[] = {"N=1,S=1,He=1,Hd=1",   "N=3,S=7,He=13,Hd=5",
                                             "N=5,S=37,He=61,Hd=29,bq=0",
                                             "N=4,S=61,He=33,Hd=64,mask=1",
                                             "N=2,S=256,He=512,Hd=512",
                                             "N=6,S=13,He=9,Hd=5,group=2,mask=1", NULL};
static const char *const dot_shapes[] = {"N=1,S=1,He=1",         "N=3,S=7,He=13",
                                         "N=5,S=37,He=61",       "N=4,S=61,He=64,mask=1",
                                         "N=2,S=300,He=512",     "N=6,S=13,He=9,group=3",
                                         NULL};
static const char *const additive_quick[] = {"N=3,S=7,He=13,Hd=5,A=11", NULL};
static const char *const general_quick[] = {"N=3,S=7,He=13,Hd=5", NULL};
static const char *const dot_quick[] = {"N=3,S=7,He=13", NULL};

#define ADDITIVE_TOL                                                                          \
  "sum_a |v_a| (2(K+3)u (sum|W_k h| + sum|W_q q| + |b_k| + |b_q|)_a + 6 eps) + 2(A+2)u "      \
  "(sum|v| + |b_v|), K = max(He, Hd): the projections' GEMM bound through tanh (slope <= 1, "  \
  "5 ulp allowed by OpenCL C), then the A-term dot with v; scaled by magnitudes, not by the "  \
  "score, because the terms cancel"
#define GENERAL_TOL                                                                           \
  "(2(He+2)u + 2(Hd+2)u) sum_i |h_i| (sum_k |W_q,ik q_k| + |b_q,i|): the query projection's " \
  "GEMM bound carried through the dot with h"
#define DOT_TOL "2(He+3)u sum_i |h_i q_i| (times 1/sqrt(He) for scaled_dot): the dot product bound"

SQ_SCORE_OPS(sq_op_scores, "attn_scores", scores_gen, scores_run, scores_tol,
             ADDITIVE_TOL " (positions past a row's length: any finite value)", additive_shapes,
             additive_quick, GENERAL_TOL, general_shapes, general_quick, DOT_TOL, dot_shapes,
             dot_quick);

/* ------------------------------------------------------ masked_softmax ---- */
/* Relative tolerance of one softmax weight: sq_softmax_rel(S) for the
 * exponentials and the sum, plus u (|d_j| + max_k |d_k|) for the rounding of
 * d = x - max before exp. */
static void softmax_tol_row(const float *x, int S, int valid_of(const sq_case *, int, int, int),
                            const sq_case *c, int n, const double *ref, double *tol) {
  double mx = -INFINITY, dmax = 0;
  for (int j = 0; j < S; j++)
    if (valid_of(c, S, n, j) && x[j] > mx) mx = x[j];
  for (int j = 0; j < S; j++) {
    double dj = mx - x[j];
    if (valid_of(c, S, n, j) && dj < 104 && dj > dmax) dmax = dj; /* e^-104 underflows */
  }
  double rel0 = sq_softmax_rel(S);
  for (int j = 0; j < S; j++) {
    if (!valid_of(c, S, n, j)) {
      tol[j] = 0; /* masked weights are exactly 0 */
      continue;
    }
    double rel = rel0 + SQ_U * ((mx - x[j] < 104 ? mx - x[j] : 104) + dmax);
    tol[j] = fabs(ref[j]) > 1e-5 ? rel * fabs(ref[j]) : SQ_EPS;
  }
}

static seqcl_status softmax_gen(sq_case *c, sq_rng *r) {
  SQ_DIM(c, N, "N", 1, 1, SQ_MAXDIM);
  SQ_DIM(c, S, "S", 1, 1, SQ_MAXDIM);
  float *x = sq_gen_logits(c, r, "x", N, S, (float)sq_shape_get(&c->shape, "scale", 4.0));
  SQ_NEED(x);
  SQ_NEED(sq_gen_lens(c, r, "lens", N, S, SH("lens", 1)));
  if (SH("mask", 0)) SQ_NEED(sq_gen_mask(c, r, N, S));
  if (SH("poison", 0)) {
    /* Rows 0-3 have no softmax and must come out NaN at their valid
     * positions: one NaN score, all NaN, one +inf, all -inf. Row 4 has every
     * other valid score -inf, which is a softmax (those weights exactly 0). */
    if (N < 5)
      return sq_fail(NULL, SEQCL_ERR_INVALID_ARGUMENT, "masked_softmax: poison needs N >= 5");
    static const float first[5] = {NAN, NAN, INFINITY, -INFINITY, 0};
    for (int n = 0; n < 5; n++) {
      int k = 0;
      for (int j = 0; j < S; j++) {
        if (!sq_attn_valid(c, S, n, j)) continue;
        if (k == 0 && n != 4) x[(size_t)n * S + j] = first[n];
        if (k > 0 && (n == 1 || n == 3 || (n == 4 && k % 2))) x[(size_t)n * S + j] = first[n == 4 ? 3 : n];
        k++;
      }
    }
  }
  SQ_NEED(sq_case_out(c, "y", (size_t)N * S, 0) >= 0);
  return SEQCL_OK;
}

static seqcl_status softmax_run(sq_arena *a, const sq_case *c) {
  int N = SH("N", 1), S = SH("S", 1);
  sq_ref x = sq_arena_in_named(a, c, "x"), lens = sq_arena_in_named(a, c, "lens");
  sq_ref mask = sq_arena_in_named(a, c, "mask");
  sq_ref y = sq_arena_out(a, "y", (size_t)N * S, NULL);
  SQ_TRY(a->st);
  SQ_TRY(sq_masked_softmax(a->ctx, N, S, x, lens, sq_case_ini(c, "lens"), mask,
                           sq_case_ini(c, "mask"), y));
  return sq_finish_fetch(a, c, &y);
}

static void softmax_tol(const sq_case *c, int k, double *const *ref, double *tol) {
  int N = SH("N", 1), S = SH("S", 1);
  const float *x = sq_case_inf(c, "x");
  for (int n = 0; n < N; n++)
    softmax_tol_row(x + (size_t)n * S, S, sq_attn_valid, c, n, ref[k] + (size_t)n * S,
                    tol + (size_t)n * S);
}

static const char *const softmax_shapes[] = {
    "N=1,S=1",       "N=3,S=7",          "N=5,S=37,mask=1", "N=4,S=61,big=1", "N=7,S=13,scale=30",
    "N=3,S=257,mask=1", "N=2,S=1000,big=1", "N=6,S=64,lens=0", "N=6,S=70,mask=1,poison=1",
    "N=5,S=300,poison=1", NULL};
static const char *const softmax_quick[] = {"N=4,S=61,big=1", NULL};

const sq_op sq_op_masked_softmax = {
    "masked_softmax",
    "relative (8 + 2 ceil(log2 S)) eps + u (|x_j - max| + max_k |x_k - max|) where |ref| > 1e-5, "
    "else absolute eps: exp and a tree-reduced sum, plus the rounding of x - max (S <= 1000 "
    "keeps a sequential sum inside it); masked weights exactly 0; a row with a NaN or +inf "
    "score, or only -inf ones, NaN at its valid positions",
    softmax_shapes, softmax_quick, 0, softmax_gen, softmax_run, softmax_tol, NULL};

/* ------------------------------------------------------------- context ---- */
static seqcl_status context_gen(sq_case *c, sq_rng *r) {
  SQ_DIM(c, N, "N", 1, 1, SQ_MAXDIM);
  SQ_DIM(c, S, "S", 1, 1, SQ_MAXDIM);
  SQ_DIM(c, He, "He", 1, 1, SQ_MAXDIM);
  SQ_DIM(c, pad, "pad", 0, 0, 4096);
  (void)pad;
  SQ_NEED(sq_gen_f(c, r, "keys", (size_t)N * S * He, 1.0f));
  int32_t *lens = sq_gen_lens(c, r, "lens", N, S, 1);
  float *alpha = sq_case_f(c, "alpha", (size_t)N * S);
  SQ_NEED(lens && alpha);
  for (int n = 0; n < N; n++) { /* a weight row as softmax leaves it: >= 0, sum 1, 0 past len */
    double sum = 0;
    for (int j = 0; j < lens[n]; j++) sum += alpha[(size_t)n * S + j] = fabsf(sq_rng_unit(r));
    for (int j = 0; j < S; j++)
      alpha[(size_t)n * S + j] = j < lens[n] ? (float)(alpha[(size_t)n * S + j] / sum) : 0.0f;
  }
  SQ_NEED(sq_case_out(c, "c", (size_t)N * He, 0) >= 0);
  return SEQCL_OK;
}

static seqcl_status context_run(sq_arena *a, const sq_case *c) {
  int N = SH("N", 1), S = SH("S", 1), He = SH("He", 1), pad = SH("pad", 0);
  sq_ref alpha = sq_arena_in_named(a, c, "alpha"), keys = sq_arena_in_named(a, c, "keys");
  sq_ref out = sq_arena_out2d(a, "c", (size_t)N, (size_t)He, (size_t)He + pad, NULL);
  SQ_TRY(a->st);
  SQ_TRY(sq_context(a->ctx, N, S, He, alpha, keys, out, He + pad));
  return sq_finish_fetch(a, c, &out);
}

static void context_tol(const sq_case *c, int k, double *const *ref, double *tol) {
  (void)k, (void)ref;
  int N = SH("N", 1), S = SH("S", 1), He = SH("He", 1);
  const float *alpha = sq_case_inf(c, "alpha"), *keys = sq_case_inf(c, "keys");
  for (int n = 0; n < N; n++)
    for (int i = 0; i < He; i++) {
      double m = 0;
      for (int j = 0; j < S; j++)
        m += fabs(alpha[(size_t)n * S + j] * keys[((size_t)n * S + j) * He + i]);
      tol[(size_t)n * He + i] = sq_dot_factor(S) * m;
    }
}

static const char *const context_shapes[] = {"N=1,S=1,He=1", "N=3,S=7,He=13",
                                              "N=5,S=37,He=61,pad=3", "N=4,S=61,He=64",
                                              "N=2,S=256,He=512",
                                              /* the host's 128-wide blocks, then 16, then a part */
                                              "N=3,S=45,He=200,pad=1", NULL};
static const char *const context_quick[] = {"N=3,S=7,He=13,pad=3", NULL};

const sq_op sq_op_context = {
    "context", "2(S+2)u sum_j |alpha_j h_j,i|: an S-term dot product bound", context_shapes,
    context_quick, 0, context_gen, context_run, context_tol, NULL};

/* ------------------------------------------------------- attn_fused.* ---- */
/* Outputs: c, alpha (fused), then c and alpha of the unfused composition
 * scores -> masked_softmax -> context on the same device, which must agree
 * with the reference and with the fused outputs. */
static seqcl_status fused_gen(sq_case *c, sq_rng *r) {
  attn_dims d;
  SQ_TRY(attn_gen_inputs(c, r, &d));
  SQ_NEED(sq_case_out(c, "c", (size_t)d.N * d.He, 0) >= 0);
  SQ_NEED(sq_case_out(c, "alpha", (size_t)d.N * d.S, 0) >= 0);
  int cu = sq_case_out(c, "c_unfused", (size_t)d.N * d.He, 0);
  int au = sq_case_out(c, "alpha_unfused", (size_t)d.N * d.S, 0);
  SQ_NEED(cu >= 0 && au >= 0);
  c->out[cu].twin = 0;
  c->out[au].twin = 1;
  return SEQCL_OK;
}

static seqcl_status fused_run(sq_arena *a, const sq_case *c) {
  attn_dims d;
  sq_attn_args args;
  SQ_TRY(attn_prepare(a, c, &d, &args));
  int ldc = d.He + d.pad;
  sq_ref cf = sq_arena_out2d(a, "c", (size_t)d.N, (size_t)d.He, (size_t)ldc, NULL);
  sq_ref af = sq_arena_out(a, "alpha", (size_t)d.N * d.S, NULL);
  sq_ref e = sq_arena_scratch(a, "scores", (size_t)d.N * d.S);
  sq_ref cu = sq_arena_out2d(a, "c_unfused", (size_t)d.N, (size_t)d.He, (size_t)ldc, NULL);
  sq_ref au = sq_arena_out(a, "alpha_unfused", (size_t)d.N * d.S, NULL);
  /* the softmax and the context take one source per row: with group > 1
   * they read the per-row copies */
  const int g = d.group > 1;
  sq_ref row_lens = g ? sq_arena_in_named(a, c, "lens") : args.lens;
  sq_ref row_mask = g ? sq_arena_in_named(a, c, "mask") : args.mask;
  sq_ref row_keys = g ? sq_arena_in_named(a, c, "keys") : args.keys;
  SQ_TRY(a->st);
  const int32_t *lens = sq_case_ini(c, "lens"), *mask = sq_case_ini(c, "mask");
  const int32_t *src_lens = sq_case_ini(c, g ? "lens_g" : "lens");
  const int32_t *src_mask = sq_case_ini(c, g ? "mask_g" : "mask");
  SQ_TRY(sq_attn_fused(a->ctx, &args, src_lens, src_mask, cf, ldc, af));
  SQ_TRY(sq_attn_scores(a->ctx, &args, src_lens, src_mask, e));
  SQ_TRY(sq_masked_softmax(a->ctx, d.N, d.S, e, row_lens, lens, row_mask, mask, au));
  SQ_TRY(sq_context(a->ctx, d.N, d.S, d.He, au, row_keys, cu, ldc));
  return sq_finish_fetch(a, c, (sq_ref[]){cf, af, cu, au});
}

/* alpha: a score error de moves weight j by alpha_j (de_j - sum_k alpha_k de_k),
 * so |d alpha_j| <= 2 alpha_j max|de| on top of the softmax's own tolerance.
 * c: the context bound plus sum_j |d alpha_j| |h_j|. */
static void fused_alpha_tol(const sq_case *c, const attn_dims *d, int n, const double *alpha,
                            double *tol) {
  double emax = 0;
  for (int j = 0; j < d->S; j++)
    if (sq_attn_valid(c, d->S, n, j)) {
      double t = score_tol(c, d, n, j);
      if (t > emax) emax = t;
    }
  sq_weights_tol(c, d->S, n, alpha, sq_softmax_rel(d->S) + 2 * emax, tol);
}

static void fused_tol(const sq_case *c, int k, double *const *ref, double *tol) {
  attn_dims d;
  attn_dims_of(c, &d);
  const double *alpha = ref[k < 2 ? 1 : 3];
  double *at = malloc((size_t)d.S * sizeof *at);
  const float *keys = sq_case_inf(c, "keys");
  for (int n = 0; n < d.N; n++) {
    const double *an = alpha + (size_t)n * d.S;
    if (k == 1 || k == 3) {
      fused_alpha_tol(c, &d, n, an, tol + (size_t)n * d.S);
      continue;
    }
    if (!at) { /* out of memory: fall back to a loose bound rather than none */
      for (int i = 0; i < d.He; i++) tol[(size_t)n * d.He + i] = 1e-2;
      continue;
    }
    fused_alpha_tol(c, &d, n, an, at);
    sq_context_tol(keys, d.S, d.He, n, an, at, tol + (size_t)n * d.He);
  }
  free(at);
}

static const char *const additive_fused_shapes[] = {
    "N=1,S=1,He=1,Hd=1,A=1",
    "N=3,S=7,He=13,Hd=5,A=11,pad=2",
    "N=5,S=37,He=61,Hd=13,A=33,bk=0",
    "N=4,S=61,He=24,Hd=40,A=65,bq=0,bv=0,mask=1",
    "N=2,S=256,He=512,Hd=512,A=512",
    /* long rows: the row kernel's many blocks and running-maximum rescales */
    "N=3,S=1031,He=40,Hd=24,A=48,mask=1",
    /* the GPU form's chunks of 64 positions: one short of a chunk, exactly
     * one (finished in the chunk kernel), one more (a combine of two), 33 */
    "N=1,S=63,He=20,Hd=7,A=19", "N=1,S=64,He=9,Hd=5,A=33,mask=1",
    "N=2,S=65,He=17,Hd=6,A=16,pad=1", "N=1,S=2053,He=24,Hd=8,A=40",
    /* rows without a softmax (NaN scores), in one chunk and in five */
    "N=4,S=37,He=13,Hd=5,A=11,mask=1,poison=1", "N=3,S=300,He=16,Hd=8,A=24,poison=1",
    /* rows sharing a source (beam search's hypotheses): one chunk, and three */
    "N=6,S=37,He=13,Hd=5,A=11,group=3,mask=1,pad=1", "N=10,S=150,He=17,Hd=6,A=16,group=5",
    "N=7,S=5,He=3,Hd=2,A=5,group=7",
    /* the host's context in 128-wide blocks, then 16, then a part */
    "N=3,S=45,He=200,Hd=24,A=40,mask=1",
    NULL};
static const char *const general_fused_shapes[] = {"N=1,S=1,He=1,Hd=1", "N=3,S=7,He=13,Hd=5,pad=2",
                                                   "N=5,S=37,He=61,Hd=29,bq=0",
                                                   "N=4,S=61,He=33,Hd=64,mask=1",
                                                   "N=2,S=256,He=512,Hd=512",
                                                   "N=3,S=1031,He=67,Hd=31",
                                                   /* chunk edges, as above */
                                                   "N=1,S=63,He=19,Hd=7",
                                                   "N=1,S=64,He=33,Hd=5,mask=1",
                                                   "N=2,S=65,He=16,Hd=9,pad=1",
                                                   "N=1,S=2053,He=37,Hd=11",
                                                   /* rows without a softmax */
                                                   "N=4,S=37,He=13,Hd=5,mask=1,poison=1",
                                                   "N=3,S=300,He=16,Hd=8,poison=1",
                                                   /* rows sharing a source */
                                                   "N=6,S=37,He=13,Hd=5,group=3,mask=1",
                                                   "N=10,S=150,He=17,Hd=6,group=5",
                                                   "N=3,S=45,He=200,Hd=24,mask=1", NULL};
static const char *const dot_fused_shapes[] = {"N=1,S=1,He=1",  "N=3,S=7,He=13,pad=2",
                                               "N=5,S=37,He=61", "N=4,S=61,He=64,mask=1",
                                               "N=2,S=300,He=512", "N=2,S=2053,He=35,mask=1",
                                               /* chunk edges, as above */
                                               "N=1,S=63,He=19", "N=1,S=64,He=33,mask=1",
                                               "N=2,S=65,He=16,pad=1", "N=1,S=2053,He=40",
                                               /* a row longer than llvmpipe lets one
                                                * work-item loop (the row form then
                                                * hands it to the group form there) */
                                               "N=1,S=4100,He=256",
                                               /* rows without a softmax (NaN, all -inf) */
                                               "N=4,S=37,He=13,mask=1,poison=1",
                                               "N=3,S=300,He=16,poison=1",
                                               /* rows sharing a source */
                                               "N=6,S=37,He=13,group=2,mask=1",
                                               "N=10,S=150,He=17,group=5", NULL};

#define FUSED_TOL                                                                             \
  "alpha: (8 + 2 ceil(log2 S)) eps |alpha_j| + 2 |alpha_j| max_k tol(e_k) + eps (a score "    \
  "error de shifts alpha_j by alpha_j (de_j - E[de])), masked weights exactly 0; c: 2(S+2)u "  \
  "sum_j |alpha_j h_j| + sum_j tol(alpha_j) |h_j|; the unfused composition on the same "      \
  "device must meet the same bounds against the reference and against the fused outputs; a "   \
  "row whose scores hold a NaN or +inf, or are all -inf, is NaN (weights at valid positions, "  \
  "context) everywhere"

SQ_SCORE_OPS(sq_op_fused, "attn_fused", fused_gen, fused_run, fused_tol, FUSED_TOL,
             additive_fused_shapes, additive_quick, FUSED_TOL, general_fused_shapes, general_quick,
             FUSED_TOL, dot_fused_shapes, dot_quick);

/* ------------------------------------------------------ attn_seed000 ------ */
/* DESIGN.md §3: energies [0, ln 2, ln 3] over h = [1,0], [0,2], [2,2] give
 * weights [1/6, 2/6, 3/6] and context [7/6, 5/3]; with the third position
 * invalid, [1/3, 2/3, 0] and [1/3, 4/3]. Checked through masked_softmax +
 * context and through the fused dot score with q = (x, y), x = ln(1.5)/2,
 * y = (ln 2 + x)/2, whose energies are those above shifted by x. */
static seqcl_status hand_gen(sq_case *c, sq_rng *r) {
  (void)r;
  static const float h[] = {1, 0, 0, 2, 2, 2};
  float *e = sq_case_f(c, "x", 6), *keys = sq_case_f(c, "keys", 12), *q = sq_case_f(c, "q", 4);
  int32_t *lens = sq_case_i(c, "lens", 2);
  SQ_NEED(e && keys && q && lens);
  double x = 0.5 * log(1.5), y = 0.5 * (log(2.0) + x);
  for (int n = 0; n < 2; n++) {
    e[3 * n] = 0.0f;
    e[3 * n + 1] = (float)log(2.0);
    e[3 * n + 2] = (float)log(3.0);
    memcpy(keys + 6 * n, h, sizeof h);
    q[2 * n] = (float)x;
    q[2 * n + 1] = (float)y;
  }
  lens[0] = 3;
  lens[1] = 2;
  static const double alpha[] = {1.0 / 6, 2.0 / 6, 3.0 / 6, 1.0 / 3, 2.0 / 3, 0};
  static const double ctx[] = {7.0 / 6, 5.0 / 3, 1.0 / 3, 4.0 / 3};
  const char *names[4] = {"alpha_softmax", "c_context", "alpha_fused_dot", "c_fused_dot"};
  for (int k = 0; k < 4; k++) {
    int o = sq_case_out(c, names[k], k % 2 ? 4 : 6, 0);
    double *want = sq_case_expect(c, o);
    SQ_NEED(o >= 0 && want);
    memcpy(want, k % 2 ? ctx : alpha, (k % 2 ? 4 : 6) * sizeof(double));
  }
  return SEQCL_OK;
}

static seqcl_status hand_run(sq_arena *a, const sq_case *c) {
  /* the fused dot score (the entry's variant) takes the query as it is; the
   * keys and lengths it uploads serve the softmax and the context too */
  attn_dims d;
  sq_attn_args args;
  SQ_TRY(attn_prepare(a, c, &d, &args));
  sq_ref x = sq_arena_in_named(a, c, "x");
  sq_ref as = sq_arena_out(a, "alpha_softmax", 6, NULL), cs = sq_arena_out(a, "c_context", 4, NULL);
  sq_ref af = sq_arena_out(a, "alpha_fused_dot", 6, NULL);
  sq_ref cf = sq_arena_out(a, "c_fused_dot", 4, NULL);
  SQ_TRY(a->st);
  const int32_t *lens_host = sq_case_ini(c, "lens");
  SQ_TRY(sq_masked_softmax(a->ctx, 2, 3, x, args.lens, lens_host, sq_none(), NULL, as));
  SQ_TRY(sq_context(a->ctx, 2, 3, 2, as, args.keys, cs, 2));
  SQ_TRY(sq_attn_fused(a->ctx, &args, lens_host, NULL, cf, 2, af));
  return sq_finish_fetch(a, c, (sq_ref[]){as, cs, af, cf});
}

static void hand_tol(const sq_case *c, int k, double *const *ref, double *tol) {
  for (size_t e = 0; e < c->out[k].n; e++)
    tol[e] = ref[k][e] == 0 ? 0 : 32 * SQ_EPS * (fabs(ref[k][e]) > 1 ? fabs(ref[k][e]) : 1);
}

static const char *const hand_shapes[] = {"N=2,S=3,He=2", NULL};

const sq_op sq_op_attn_seed000 = {
    "attn_seed000",
    "hand-computed values (1/6, 2/6, 3/6; 7/6, 5/3; masked 1/3, 2/3, 0; 1/3, 4/3): 32 eps "
    "max(1, |v|), since ln 2, ln 3 and 1/6 are rounded in float32; the masked weight exactly 0",
    hand_shapes, hand_shapes, SQ_SCORE_DOT, hand_gen, hand_run, hand_tol, NULL};
