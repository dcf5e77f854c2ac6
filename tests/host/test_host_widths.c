/* The host loops compiled per vector width (backend/host/host_math.h,
 * SQ_HOT_BY_WIDTH) at every width this CPU runs, one after the other
 * (sq_host_isa_limit): the AVX-512 and AVX2 forms give the same bits (the
 * same operations per logical lane), and the 16-byte baseline, which rounds
 * each product before adding it, agrees within 1e-5 relative (its sums take
 * at most a few hundred such roundings). A CPU without AVX-512 can only make
 * the second comparison, one without AVX2 neither (it says which ran). The op
 * list and the PyTorch goldens run at each width as well (SEQCL_HOST_ISA,
 * tests/meson.build). */
#include <stdlib.h>

#include "../common/test_main.h"
#include "backend/host/host.h"
#include "backend/host/host_math.h"
#include "backend/host/host_vmath.h"
#include "host_test.h"

enum { LEVELS = 3 };
static const int level_of[LEVELS] = {4, 3, 0};

/* out[l] holds `count` floats computed at level_of[l] where ran[l]. */
static void widths_agree(const char *what, float *const out[LEVELS], const int ran[LEVELS],
                         size_t count) {
  if (ran[0] && ran[1])
    for (size_t i = 0; i < count; i++)
      if (memcmp(&out[0][i], &out[1][i], sizeof(float)))
        fail_msg("%s: element %zu is %.9g with AVX-512, %.9g with AVX2", what, i,
                 (double)out[0][i], (double)out[1][i]);
  const int ref = ran[0] ? 0 : ran[1] ? 1 : 2;
  for (size_t i = 0; i < count; i++) {
    const double want = out[ref][i], got = out[2][i];
    if (!(fabs(got - want) <= 1e-5 * (fabs(want) + 1.0)))
      fail_msg("%s: element %zu is %.9g at the baseline width, %.9g at the widest", what, i,
               got, want);
  }
}

/* Runs fn(arg, out) at each level this CPU has, then lifts the limit. */
typedef void (*at_level_fn)(seqcl_ctx *ctx, void *arg, float *out);
static void run_widths(seqcl_ctx *ctx, const char *what, at_level_fn fn, void *arg,
                       size_t count) {
  float *out[LEVELS];
  int ran[LEVELS] = {0, 0, 0};
  const int top = sq_host_isa();
  for (int l = 0; l < LEVELS; l++) {
    out[l] = calloc(count, sizeof(float));
    assert_non_null(out[l]);
    if (level_of[l] > top) continue;
    sq_host_isa_limit(level_of[l]);
    fn(ctx, arg, out[l]);
    ran[l] = 1;
  }
  sq_host_isa_limit(-1);
  widths_agree(what, out, ran, count);
  print_message("%s: widths run here: %s%s16-byte\n", what, ran[0] ? "AVX-512, " : "",
                ran[1] ? "AVX2, " : "");
  for (int l = 0; l < LEVELS; l++) free(out[l]);
}

/* An attention problem from a seeded generator: keys [N, S, He] and their
 * projections [N, S, A], a query of each kind, v and bv, lengths and a mask
 * that drops every fifth position. */
typedef struct attn_problem {
  int N, S, He, A;
  int32_t lens[4], *mask;
  sq_buf *q, *qa, *keys, *pk, *v, *bv, *lens_b, *mask_b;
} attn_problem;

static sq_buf *random_buf(seqcl_ctx *ctx, th_rng *r, size_t n) {
  float *x = malloc(n * sizeof(float));
  assert_non_null(x);
  th_fill(r, x, n, 1);
  sq_buf *b = th_buf(ctx, n, x);
  free(x);
  return b;
}

static attn_problem problem(seqcl_ctx *ctx, uint64_t seed, int N, int S, int He, int A,
                            const int32_t *lens) {
  attn_problem p = {.N = N, .S = S, .He = He, .A = A};
  th_rng r = th_seed(seed);
  p.q = random_buf(ctx, &r, (size_t)N * He);
  p.qa = random_buf(ctx, &r, (size_t)N * A);
  p.keys = random_buf(ctx, &r, (size_t)N * S * He);
  p.pk = random_buf(ctx, &r, (size_t)N * S * A);
  p.v = random_buf(ctx, &r, (size_t)A);
  p.bv = random_buf(ctx, &r, 1);
  memcpy(p.lens, lens, (size_t)N * sizeof(int32_t));
  p.mask = malloc((size_t)N * S * sizeof(int32_t));
  assert_non_null(p.mask);
  for (int i = 0; i < N * S; i++) p.mask[i] = i % 5 != 2;
  p.lens_b = th_buf(ctx, (size_t)N, p.lens);
  p.mask_b = th_buf(ctx, (size_t)N * S, p.mask);
  return p;
}

static void problem_free(attn_problem *p) {
  sq_buf *all[] = {p->q, p->qa, p->keys, p->pk, p->v, p->bv, p->lens_b, p->mask_b};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) sq_buf_free(all[i]);
  free(p->mask);
}

static sq_attn_args problem_args(const attn_problem *p, int general) {
  sq_attn_args a = {.kind = general ? SQ_SCORE_GENERAL : SQ_SCORE_ADDITIVE, .N = p->N,
                    .S = p->S, .He = p->He, .A = p->A, .scale = 1.0f};
  a.qp = sq_at(general ? p->q : p->qa, 0);
  a.ld_qp = general ? p->He : p->A;
  a.keys = sq_at(p->keys, 0);
  a.pkeys = sq_at(p->pk, 0);
  a.v = sq_at(p->v, 0);
  a.bv = sq_at(p->bv, 0);
  a.lens = sq_at(p->lens_b, 0);
  a.mask = sq_at(p->mask_b, 0);
  return a;
}

/* Decoding's attention: the scores, then the fused pass's weights and context
 * (its padding columns zeroed), for the additive and the general score. */
typedef struct decode_run {
  const attn_problem *p;
  sq_buf *scores, *alpha, *ctxv;
} decode_run;

static void decode_at_level(seqcl_ctx *ctx, void *arg, float *out) {
  const decode_run *d = arg;
  const attn_problem *p = d->p;
  const int N = p->N, S = p->S, He = p->He, LD = He + 3;
  for (int general = 0; general < 2; general++) {
    sq_attn_args a = problem_args(p, general);
    TH_OK(sq_attn_scores(ctx, &a, p->lens, p->mask, sq_at(d->scores, 0)));
    TH_OK(sq_attn_fused(ctx, &a, p->lens, p->mask, sq_at(d->ctxv, 0), LD, sq_at(d->alpha, 0)));
    TH_OK(sq_read(ctx, sq_at(d->scores, 0), out, (size_t)N * S * sizeof(float)));
    TH_OK(sq_read(ctx, sq_at(d->alpha, 0), out + N * S, (size_t)N * S * sizeof(float)));
    float *c = out + 2 * N * S;
    TH_OK(sq_read(ctx, sq_at(d->ctxv, 0), c, (size_t)N * LD * sizeof(float)));
    for (int n = 0; n < N; n++)
      for (int k = He; k < LD; k++) c[n * LD + k] = 0.0f;
    out += 2 * N * S + N * LD;
  }
}

/* N = 3, S = 45 (a block of 32 and one of 13), He = A = 200 (64- and
 * 16-lane blocks, then 8 lanes). */
static void attention_widths_agree(void **state) {
  seqcl_ctx *ctx = *state;
  enum { N = 3, S = 45, He = 200 };
  const int32_t lens[N] = {45, 17, 33};
  attn_problem p = problem(ctx, 7, N, S, He, He, lens);
  decode_run d = {&p, th_buf(ctx, N * S, NULL), th_buf(ctx, N * S, NULL),
                  th_buf(ctx, N * (He + 3), NULL)};
  run_widths(ctx, "decoding's attention", decode_at_level, &d,
             2 * (2 * N * S + N * (He + 3)));
  sq_buf_free(d.scores);
  sq_buf_free(d.alpha);
  sq_buf_free(d.ctxv);
  problem_free(&p);
}

/* Training's attention: the forward (u, context, weights) and the backward
 * (dq, dkeys and, additive, dpkeys, dv, dbv) from a seeded dc; the additive
 * backward once from the kept u and once computing the tanh again. */
typedef struct train_run {
  const attn_problem *p;
  sq_buf *dc, *u, *c, *alpha, *dq, *dk, *dpk, *dv, *dbv;
} train_run;

static void train_at_level(seqcl_ctx *ctx, void *arg, float *out) {
  const train_run *t = arg;
  const attn_problem *p = t->p;
  const size_t N = (size_t)p->N, S = (size_t)p->S, He = (size_t)p->He, A = (size_t)p->A;
  sq_buf *parts[] = {t->u, t->c, t->alpha, t->dq, t->dk, t->dpk, t->dv, t->dbv};
  const size_t sizes[] = {N * S * A, N * He, N * S, N * He, N * S * He, N * S * A, A, 1};
  /* additive keeping u, additive computing it again in the backward, general */
  for (int pass = 0; pass < 3; pass++) {
    const int general = pass == 2;
    for (int i = 0; i < 8; i++) TH_OK(sq_fill(ctx, sq_at(parts[i], 0), sizes[i], 0.0f));
    sq_attn_args a = problem_args(p, general);
    const sq_ref u = pass == 0 ? sq_at(t->u, 0) : sq_none();
    TH_OK(sq_attn_fwd(ctx, &a, u, sq_at(t->c, 0), p->He, sq_at(t->alpha, 0)));
    TH_OK(sq_attn_bwd(ctx, &a, sq_at(t->alpha, 0), u, sq_at(t->dc, 0), p->He,
                      sq_at(t->dq, 0), a.ld_qp, sq_at(t->dk, 0),
                      general ? sq_none() : sq_at(t->dpk, 0),
                      general ? sq_none() : sq_at(t->dv, 0),
                      general ? sq_none() : sq_at(t->dbv, 0)));
    for (int i = 0; i < 8; i++) {
      TH_OK(sq_read(ctx, sq_at(parts[i], 0), out, sizes[i] * sizeof(float)));
      out += sizes[i];
    }
  }
}

/* N = 3, S = 21, He = 40, A = 37 (16-lane blocks, then parts of 8 and 5). */
static void attention_train_widths_agree(void **state) {
  seqcl_ctx *ctx = *state;
  enum { N = 3, S = 21, He = 40, A = 37 };
  const int32_t lens[N] = {21, 9, 15};
  attn_problem p = problem(ctx, 13, N, S, He, A, lens);
  th_rng r = th_seed(14);
  train_run t = {&p, random_buf(ctx, &r, N * He), th_buf(ctx, N * S * A, NULL),
                 th_buf(ctx, N * He, NULL), th_buf(ctx, N * S, NULL),
                 th_buf(ctx, N * He, NULL), th_buf(ctx, N * S * He, NULL),
                 th_buf(ctx, N * S * A, NULL), th_buf(ctx, A, NULL), th_buf(ctx, 1, NULL)};
  run_widths(ctx, "training's attention", train_at_level, &t,
             3 * (2 * N * S * A + 2 * N * He + N * S + N * S * He + A + 1));
  sq_buf *all[] = {t.dc, t.u, t.c, t.alpha, t.dq, t.dk, t.dpk, t.dv, t.dbv};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) sq_buf_free(all[i]);
  problem_free(&p);
}

/* The GRU gates: H = 45 (16- and 8-lane blocks, then 4 lanes, then 1), N = 3,
 * with biases; h starts from the same state at every level. */
typedef struct gates_run {
  int N, H;
  const float *h0;
  sq_buf *gi, *gh, *bi, *bh, *h, *out;
} gates_run;

static void gates_at_level(seqcl_ctx *ctx, void *arg, float *out) {
  const gates_run *g = arg;
  const int N = g->N, H = g->H;
  TH_OK(sq_write(ctx, sq_at(g->h, 0), g->h0, (size_t)N * H * sizeof(float)));
  sq_gru_args a = {.N = N, .H = H, .gi = sq_at(g->gi, 0), .gi_sn = 3 * (size_t)H,
                   .gh = sq_at(g->gh, 0), .ld_gh = 3 * H, .b_ih = sq_at(g->bi, 0),
                   .b_hh = sq_at(g->bh, 0), .h = sq_at(g->h, 0), .out = sq_at(g->out, 0),
                   .out_sn = (size_t)H, .lens = sq_none()};
  TH_OK(sq_gru_gates(ctx, &a, NULL));
  TH_OK(sq_read(ctx, sq_at(g->out, 0), out, (size_t)N * H * sizeof(float)));
}

static void gates_widths_agree(void **state) {
  seqcl_ctx *ctx = *state;
  enum { N = 3, H = 45 };
  th_rng r = th_seed(11);
  float h0[N * H];
  th_fill(&r, h0, N * H, 1);
  gates_run g = {N, H, h0, random_buf(ctx, &r, N * 3 * H), random_buf(ctx, &r, N * 3 * H),
                 random_buf(ctx, &r, 3 * H), random_buf(ctx, &r, 3 * H),
                 th_buf(ctx, N * H, NULL), th_buf(ctx, N * H, NULL)};
  run_widths(ctx, "GRU gates", gates_at_level, &g, N * H);
  sq_buf *all[] = {g.gi, g.gh, g.bi, g.bh, g.h, g.out};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) sq_buf_free(all[i]);
}

/* Training's GRU step: the forward that keeps its gates, then the backward
 * of the gates from them and, again, computing them anew (N = 3, H = 45,
 * with biases and a gradient from the layer output). */
typedef struct gru_train_run {
  int N, H;
  const float *h0, *dh0;
  sq_buf *gi, *gh, *bi, *bh, *h, *out, *saved, *hprev, *dh, *dout, *dgi, *dgh;
} gru_train_run;

static void gru_train_at_level(seqcl_ctx *ctx, void *arg, float *out) {
  const gru_train_run *g = arg;
  const int N = g->N, H = g->H;
  const size_t nh = (size_t)N * H;
  TH_OK(sq_write(ctx, sq_at(g->h, 0), g->h0, nh * sizeof(float)));
  sq_gru_args f = {.N = N, .H = H, .gi = sq_at(g->gi, 0), .gi_sn = 3 * (size_t)H,
                   .gh = sq_at(g->gh, 0), .ld_gh = 3 * H, .b_ih = sq_at(g->bi, 0),
                   .b_hh = sq_at(g->bh, 0), .h = sq_at(g->h, 0), .out = sq_at(g->out, 0),
                   .out_sn = (size_t)H, .lens = sq_none()};
  TH_OK(sq_gru_fwd(ctx, &f, sq_at(g->saved, 0), 4 * (size_t)H, 0));
  sq_buf *fwd[] = {g->h, g->out, g->saved};
  const size_t fwd_n[] = {nh, nh, 4 * nh};
  for (int i = 0; i < 3; i++) {
    TH_OK(sq_read(ctx, sq_at(fwd[i], 0), out, fwd_n[i] * sizeof(float)));
    out += fwd_n[i];
  }
  for (int kept = 1; kept >= 0; kept--) {
    TH_OK(sq_write(ctx, sq_at(g->dh, 0), g->dh0, nh * sizeof(float)));
    sq_gru_bwd_args b = {.N = N, .H = H, .gi = sq_at(g->gi, 0), .gi_sn = 3 * (size_t)H,
                         .gh = sq_at(g->gh, 0), .ld_gh = 3 * H, .b_ih = sq_at(g->bi, 0),
                         .b_hh = sq_at(g->bh, 0), .h_prev = sq_at(g->hprev, 0),
                         .dh = sq_at(g->dh, 0), .dout = sq_at(g->dout, 0),
                         .dout_sn = (size_t)H, .dgi = sq_at(g->dgi, 0),
                         .dgh = sq_at(g->dgh, 0), .ld_dgh = 3 * H, .lens = sq_none(),
                         .saved = kept ? sq_at(g->saved, 0) : sq_none(),
                         .sv_sn = kept ? 4 * (size_t)H : 0};
    TH_OK(sq_gru_gates_bwd(ctx, &b));
    sq_buf *bwd[] = {g->dh, g->dgi, g->dgh};
    const size_t bwd_n[] = {nh, 3 * nh, 3 * nh};
    for (int i = 0; i < 3; i++) {
      TH_OK(sq_read(ctx, sq_at(bwd[i], 0), out, bwd_n[i] * sizeof(float)));
      out += bwd_n[i];
    }
  }
}

static void gru_train_widths_agree(void **state) {
  seqcl_ctx *ctx = *state;
  enum { N = 3, H = 45 };
  th_rng r = th_seed(17);
  float h0[N * H], dh0[N * H];
  th_fill(&r, h0, N * H, 1);
  th_fill(&r, dh0, N * H, 1);
  gru_train_run g = {N, H, h0, dh0,
                     random_buf(ctx, &r, N * 3 * H), random_buf(ctx, &r, N * 3 * H),
                     random_buf(ctx, &r, 3 * H), random_buf(ctx, &r, 3 * H),
                     th_buf(ctx, N * H, NULL), th_buf(ctx, N * H, NULL),
                     th_buf(ctx, N * 4 * H, NULL), th_buf(ctx, N * H, h0),
                     th_buf(ctx, N * H, NULL), random_buf(ctx, &r, N * H),
                     th_buf(ctx, N * 3 * H, NULL), th_buf(ctx, N * 3 * H, NULL)};
  run_widths(ctx, "training's GRU step", gru_train_at_level, &g, 6 * N * H + 2 * 7 * N * H);
  sq_buf *all[] = {g.gi, g.gh, g.bi, g.bh, g.h, g.out, g.saved, g.hprev, g.dh, g.dout, g.dgi,
                   g.dgh};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) sq_buf_free(all[i]);
}

SQ_TEST_MAIN(th_setup_ctx, th_teardown_ctx, cmocka_unit_test(attention_widths_agree),
             cmocka_unit_test(attention_train_widths_agree),
             cmocka_unit_test(gates_widths_agree), cmocka_unit_test(gru_train_widths_agree))
