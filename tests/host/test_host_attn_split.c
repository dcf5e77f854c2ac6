/* The host's fused attention split inside rows (host_attention.c: a pass of
 * energies over the positions of every row, then one of context columns),
 * taken when whole rows do not share out evenly across the pool: one row at
 * batch 1, beam search's five hypotheses of a sentence. It must give the bits
 * of the one-pass step over whole rows (a context limited to one thread), and
 * agree with a double-precision reference. Run with SEQCL_THREADS=3
 * (meson.build), so the pool has two workers even on a one-core machine and
 * the parts split columns unevenly. */
#include "host_test.h"

#include "../common/test_main.h"
#include "backend/host/host.h"

typedef struct split_case {
  sq_score kind;
  int N, S, He, A, group;
  int masked, weights;
  int nan_row; /* this row's query holds a NaN, or -1 */
  int nan_key; /* this position of source 0 (unmasked) has a NaN key, or -1 */
} split_case;

/* Row n's context is all NaN: its query or one of its valid keys is. */
static int nan_expected(const split_case *t, int n) {
  return n == t->nan_row || (t->nan_key >= 0 && n / t->group == 0);
}

/* The context's row stride: past He by a few floats that vary with the case. */
static int ldc_of(const split_case *t) { return t->He + 3 + t->N % 4; }

typedef struct split_out {
  float *c, *alpha;
  int split; /* the parts the step split its rows into, 0 for whole rows */
} split_out;

typedef struct split_in {
  float *q, *keys, *pk, *v, bv;
  int32_t *lens, *mask;
} split_in;

static split_in make_inputs(const split_case *t, uint64_t seed) {
  const int src = t->N / t->group, q = t->kind == SQ_SCORE_ADDITIVE ? t->A : t->He;
  split_in in;
  th_rng r = th_seed(seed);
  in.q = malloc(sizeof(float) * (size_t)t->N * (size_t)q);
  in.keys = malloc(sizeof(float) * (size_t)src * (size_t)t->S * (size_t)t->He);
  in.pk = malloc(sizeof(float) * (size_t)src * (size_t)t->S * (size_t)t->A);
  in.v = malloc(sizeof(float) * (size_t)t->A);
  in.lens = malloc(sizeof(int32_t) * (size_t)src);
  in.mask = malloc(sizeof(int32_t) * (size_t)src * (size_t)t->S);
  assert_true(in.q && in.keys && in.pk && in.v && in.lens && in.mask);
  th_fill(&r, in.q, (size_t)t->N * (size_t)q, 1);
  th_fill(&r, in.keys, (size_t)src * (size_t)t->S * (size_t)t->He, 1);
  th_fill(&r, in.pk, (size_t)src * (size_t)t->S * (size_t)t->A, 1);
  th_fill(&r, in.v, (size_t)t->A, 1);
  th_fill(&r, &in.bv, 1, 1);
  for (int s = 0; s < src; s++) {
    /* the longest source first, the others shorter by a prime step */
    in.lens[s] = t->S - (s * 7) % t->S;
    for (int j = 0; j < t->S; j++) in.mask[s * t->S + j] = (j * 5 + s) % 11 != 3;
    /* source 1 masks a whole block of positions (32 .. 63) */
    for (int j = 32; s == 1 && j < 64 && j < t->S; j++) in.mask[s * t->S + j] = 0;
    in.mask[s * t->S] = 1; /* every row keeps a valid position */
  }
  if (t->nan_row >= 0) in.q[(size_t)t->nan_row * (size_t)q] = NAN;
  if (t->nan_key >= 0) {
    in.mask[t->nan_key] = 1;
    if (t->kind == SQ_SCORE_ADDITIVE)
      in.pk[(size_t)t->nan_key * (size_t)t->A + 1] = NAN;
    else
      in.keys[(size_t)t->nan_key * (size_t)t->He + 1] = NAN;
  }
  return in;
}

static void free_inputs(split_in *in) {
  free(in->q);
  free(in->keys);
  free(in->pk);
  free(in->v);
  free(in->lens);
  free(in->mask);
}

/* The fused step on ctx as it is configured. The backend's scratch is
 * filled with NaN first, so that energies a pass failed to compute are never
 * found there from an earlier run. */
static split_out run_fused(seqcl_ctx *ctx, const split_case *t, const split_in *in) {
  const int src = t->N / t->group, q = t->kind == SQ_SCORE_ADDITIVE ? t->A : t->He;
  const int ldc = ldc_of(t);
  float *scratch = NULL;
  const size_t nscratch = (size_t)t->N * (size_t)t->S;
  TH_OK(sq_host_scratch(ctx->be, nscratch, &scratch));
  for (size_t i = 0; i < nscratch; i++) scratch[i] = NAN;
  sq_buf *bq = th_buf(ctx, (size_t)t->N * q, in->q);
  sq_buf *bk = th_buf(ctx, (size_t)src * t->S * t->He, in->keys);
  sq_buf *bpk = NULL, *bv = NULL, *bbv = NULL; /* additive only */
  sq_buf *bl = th_buf(ctx, (size_t)src, in->lens), *bm = th_buf(ctx, (size_t)src * t->S, in->mask);
  sq_buf *bc = th_buf(ctx, (size_t)t->N * ldc, NULL), *ba = th_buf(ctx, (size_t)t->N * t->S, NULL);
  sq_attn_args a = {.kind = t->kind, .N = t->N, .S = t->S, .He = t->He, .A = t->A,
                    .group = t->group};
  a.qp = sq_at(bq, 0);
  a.ld_qp = q;
  a.keys = sq_at(bk, 0);
  if (t->kind == SQ_SCORE_ADDITIVE) {
    bpk = th_buf(ctx, (size_t)src * t->S * t->A, in->pk);
    bv = th_buf(ctx, (size_t)t->A, in->v);
    bbv = th_buf(ctx, 1, &in->bv);
    a.pkeys = sq_at(bpk, 0);
    a.v = sq_at(bv, 0);
    a.bv = sq_at(bbv, 0);
  }
  a.scale = t->kind == SQ_SCORE_SCALED_DOT ? 1.0f / sqrtf((float)t->He) : 1.0f;
  a.lens = sq_at(bl, 0);
  a.mask = t->masked ? sq_at(bm, 0) : sq_none();
  split_out o = {malloc(sizeof(float) * (size_t)t->N * ldc),
                 malloc(sizeof(float) * (size_t)t->N * t->S),
                 sq_host_attn_split_parts(ctx->be, &a)};
  assert_true(o.c && o.alpha);
  /* c's padding columns keep a marker: a split must not write past He */
  for (size_t i = 0; i < (size_t)t->N * ldc; i++) o.c[i] = 7.0f;
  TH_OK(sq_write(ctx, sq_at(bc, 0), o.c, sizeof(float) * (size_t)t->N * ldc));
  TH_OK(sq_attn_fused(ctx, &a, in->lens, t->masked ? in->mask : NULL, sq_at(bc, 0), ldc,
                      t->weights ? sq_at(ba, 0) : sq_none()));
  TH_OK(sq_read(ctx, sq_at(bc, 0), o.c, sizeof(float) * (size_t)t->N * ldc));
  if (t->weights) TH_OK(sq_read(ctx, sq_at(ba, 0), o.alpha, sizeof(float) * (size_t)t->N * t->S));
  sq_buf *all[] = {bq, bk, bpk, bv, bbv, bl, bm, bc, ba};
  for (size_t i = 0; i < sizeof all / sizeof *all; i++) sq_buf_free(all[i]);
  return o;
}

/* Row n's context and weights in double; the context tolerance is 1e-4 of
 * sum_j alpha_j |h_jk| (each energy's float error, up to 4 eps sum |v| (|p| +
 * 1) for additive at A 256, moves alpha by that much relatively) plus 1e-6. */
static void check_reference(const split_case *t, const split_in *in, const split_out *o, int n) {
  const int s = n / t->group, q = t->kind == SQ_SCORE_ADDITIVE ? t->A : t->He;
  const int len = in->lens[s], ldc = ldc_of(t);
  double *e = calloc((size_t)t->S, sizeof(double));
  assert_non_null(e);
  double mx = -INFINITY, sum = 0.0;
  for (int j = 0; j < len; j++) {
    double acc = 0.0;
    const float *qr = in->q + (size_t)n * q;
    if (t->kind == SQ_SCORE_ADDITIVE) {
      const float *p = in->pk + ((size_t)s * t->S + j) * t->A;
      for (int k = 0; k < t->A; k++) acc += in->v[k] * tanh((double)p[k] + qr[k]);
      acc += in->bv;
    } else {
      const float *h = in->keys + ((size_t)s * t->S + j) * t->He;
      for (int k = 0; k < t->He; k++) acc += (double)h[k] * qr[k];
      acc *= t->kind == SQ_SCORE_SCALED_DOT ? 1.0 / sqrt((double)t->He) : 1.0;
    }
    e[j] = acc;
    if ((!t->masked || in->mask[s * t->S + j]) && acc > mx) mx = acc;
  }
  for (int j = 0; j < len; j++)
    if (!t->masked || in->mask[s * t->S + j]) sum += exp(e[j] - mx);
  for (int k = 0; k < t->He; k++) {
    double c = 0.0, mag = 0.0;
    for (int j = 0; j < len; j++) {
      if (t->masked && !in->mask[s * t->S + j]) continue;
      const double w = exp(e[j] - mx) / sum, h = in->keys[((size_t)s * t->S + j) * t->He + k];
      c += w * h;
      mag += w * fabs(h);
    }
    const double got = o->c[(size_t)n * ldc + k], tol = 1e-4 * mag + 1e-6;
    if (!(fabs(got - c) <= tol))
      fail_msg("row %d context[%d] = %.9g, want %.9g (tol %.3g)", n, k, got, c, tol);
  }
  if (t->weights)
    for (int j = 0; j < t->S; j++) {
      const int valid = j < len && (!t->masked || in->mask[s * t->S + j]);
      const double want = valid ? exp(e[j] - mx) / sum : 0.0;
      const double got = o->alpha[(size_t)n * t->S + j];
      if (!(fabs(got - want) <= 1e-4 * want + 1e-7))
        fail_msg("row %d alpha[%d] = %.9g, want %.9g", n, j, got, want);
    }
  free(e);
}

static void run_case(seqcl_ctx *ctx, const split_case *t, uint64_t seed) {
  split_in in = make_inputs(t, seed);
  ctx->settings.threads = 0; /* the pool's three */
  split_out split = run_fused(ctx, t, &in);
  ctx->settings.threads = 1; /* whole rows, one thread */
  split_out one = run_fused(ctx, t, &in);
  ctx->settings.threads = 0;
  assert_int_equal(one.split, 0);
  if (split.split < 2)
    fail_msg("kind %d N %d S %d He %d: the step did not split its rows (%d parts)", t->kind, t->N,
             t->S, t->He, split.split);
  const size_t nc = (size_t)t->N * ldc_of(t), na = (size_t)t->N * t->S;
  for (size_t i = 0; i < nc; i++)
    if (memcmp(&one.c[i], &split.c[i], sizeof(float)) != 0)
      fail_msg("kind %d N %d S %d He %d: c[%zu] = %.9g split, %.9g whole", t->kind, t->N, t->S,
               t->He, i, split.c[i], one.c[i]);
  if (t->weights)
    for (size_t i = 0; i < na; i++)
      if (memcmp(&one.alpha[i], &split.alpha[i], sizeof(float)) != 0)
        fail_msg("kind %d N %d S %d He %d: alpha[%zu] = %.9g split, %.9g whole", t->kind, t->N,
                 t->S, t->He, i, split.alpha[i], one.alpha[i]);
  for (int n = 0; n < t->N; n++) {
    const size_t ldc = (size_t)ldc_of(t);
    for (size_t k = (size_t)t->He; k < ldc; k++)
      assert_true(split.c[n * ldc + k] == 7.0f); /* padding untouched */
    if (nan_expected(t, n)) {
      for (int k = 0; k < t->He; k++) assert_true(isnan(split.c[n * ldc + k]));
      continue;
    }
    check_reference(t, &in, &split, n);
  }
  free(one.c);
  free(one.alpha);
  free(split.c);
  free(split.alpha);
  free_inputs(&in);
}

/* Batch 1 and beam search's hypotheses, every score kind, with and without
 * mask and weights; S, He and A at 1-away-from-block, prime and large sizes
 * (the blocks are 32 positions, the column units 16); NaN queries and a NaN
 * key in the second block; as many parts as positions (S 2). */
static void split_matches_whole_rows(void **state) {
  seqcl_ctx *ctx = *state;
  const split_case cases[] = {
      {SQ_SCORE_ADDITIVE, 1, 100, 256, 256, 1, 0, 0, -1, -1},
      {SQ_SCORE_ADDITIVE, 1, 100, 256, 256, 1, 1, 1, -1, -1},
      {SQ_SCORE_ADDITIVE, 1, 133, 200, 67, 1, 1, 1, -1, -1},
      {SQ_SCORE_ADDITIVE, 5, 45, 200, 200, 5, 0, 1, -1, -1},
      {SQ_SCORE_ADDITIVE, 10, 67, 48, 19, 5, 1, 0, -1, -1},
      {SQ_SCORE_ADDITIVE, 10, 67, 48, 19, 5, 1, 1, 7, 40},
      {SQ_SCORE_ADDITIVE, 2, 257, 61, 45, 1, 1, 1, 0, -1},
      {SQ_SCORE_ADDITIVE, 1, 2, 64, 8192, 1, 0, 1, -1, -1},
      {SQ_SCORE_GENERAL, 1, 331, 256, 0, 1, 0, 1, -1, -1},
      {SQ_SCORE_GENERAL, 5, 97, 200, 0, 5, 1, 1, 0, -1},
      {SQ_SCORE_GENERAL, 5, 97, 200, 0, 1, 0, 0, 3, 33},
      {SQ_SCORE_DOT, 1, 601, 128, 0, 1, 1, 0, -1, -1},
      {SQ_SCORE_SCALED_DOT, 7, 211, 96, 0, 1, 0, 1, -1, -1},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) run_case(ctx, &cases[i], 100 + i);
}

SQ_TEST_MAIN(th_setup_ctx, th_teardown_ctx, cmocka_unit_test(split_matches_whole_rows))
