/* Op list entries: the GRU gate kernel, one GRU cell, and a GRU layer over time
 * (forward, reverse, bidirectional into one buffer, stacked layers). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check/opdefs.h"
#include "check/ops_all.h"

/* Gate tolerance: sigmoid and tanh are allowed 3-5 ulp in OpenCL C and the
 * pointwise update adds a few roundings on values of order 1. */
#define GATE_ABS 1e-6
#define GATE_REL 4e-5

/* ---------------------------------------------------------- gru_gates ---- */
/* Shape keys: N T H, step, rev, lens (1 = lengths given, the default), bias
 * (default 1), pad (extra row stride of gh). */
static seqcl_status gates_gen(sq_case *c, sq_rng *r) {
  SQ_DIM(c, N, "N", 1, 1, SQ_MAXDIM);
  SQ_DIM(c, T, "T", 1, 1, SQ_MAXDIM);
  SQ_DIM(c, H, "H", 1, 1, SQ_MAXDIM);
  SQ_DIM(c, step, "step", 0, 0, T - 1);
  SQ_DIM(c, pad, "pad", 0, 0, 4096);
  int rev = sq_shape_int(&c->shape, "rev", 0), lens = sq_shape_int(&c->shape, "lens", 1);
  (void)step;
  if (rev && !lens)
    return sq_fail(NULL, SEQCL_ERR_INVALID_ARGUMENT, "gru_gates: rev=1 needs lens=1");
  SQ_NEED(sq_gen_f(c, r, "gi", (size_t)N * T * 3 * H, 1.5f));
  SQ_NEED(sq_gen_f(c, r, "gh", (size_t)N * (3 * H + pad), 1.5f));
  if (sq_shape_int(&c->shape, "bias", 1)) {
    SQ_NEED(sq_gen_f(c, r, "b_ih", (size_t)3 * H, 0.5f));
    SQ_NEED(sq_gen_f(c, r, "b_hh", (size_t)3 * H, 0.5f));
  }
  SQ_NEED(sq_gen_f(c, r, "h", (size_t)N * H, 1.0f));
  if (lens) SQ_NEED(sq_gen_lens(c, r, "lens", N, T, 1));
  SQ_NEED(sq_case_out(c, "h", (size_t)N * H, 0) >= 0);
  SQ_NEED(sq_case_out(c, "out", (size_t)N * T * H, 0) >= 0);
  return SEQCL_OK;
}

static seqcl_status gates_run_in(sq_arena *a, const sq_case *c, double *const *got, char *fault,
                                 size_t cap) {
  const sq_shape *s = &c->shape;
  int N = sq_shape_int(s, "N", 1), T = sq_shape_int(s, "T", 1), H = sq_shape_int(s, "H", 1);
  sq_gru_args g;
  memset(&g, 0, sizeof g);
  g.N = N;
  g.H = H;
  g.gi = sq_arena_in_named(a, c, "gi");
  g.gi_sn = (size_t)T * 3 * H;
  g.gi_st = (size_t)3 * H;
  g.gh = sq_arena_in_named(a, c, "gh");
  g.ld_gh = 3 * H + sq_shape_int(s, "pad", 0);
  g.b_ih = sq_arena_in_named(a, c, "b_ih");
  g.b_hh = sq_arena_in_named(a, c, "b_hh");
  g.h = sq_arena_out(a, "h", (size_t)N * H, sq_case_inf(c, "h"));
  float *zeros = calloc((size_t)N * T * H, sizeof(float));
  if (!zeros) return sq_fail(a->ctx, SEQCL_ERR_OUT_OF_MEMORY, "check: out of host memory");
  g.out = sq_arena_out(a, "out", (size_t)N * T * H, zeros);
  free(zeros);
  g.out_sn = (size_t)T * H;
  g.out_st = (size_t)H;
  g.lens = sq_arena_in_named(a, c, "lens");
  g.step = sq_shape_int(s, "step", 0);
  g.reverse = sq_shape_int(s, "rev", 0) != 0;
  SQ_TRY(a->st);
  SQ_TRY(sq_gru_gates(a->ctx, &g, sq_case_ini(c, "lens")));
  SQ_TRY(sq_finish_run(a, fault, cap));
  SQ_TRY(sq_arena_fetch(a, g.h, c->out[0].n, 0, got[0]));
  return sq_arena_fetch(a, g.out, c->out[1].n, 0, got[1]);
}

static seqcl_status gates_run(seqcl_ctx *ctx, const sq_case *c, double *const *got, char *fault,
                              size_t cap) {
  sq_arena a;
  sq_arena_init(&a, ctx);
  seqcl_status st = gates_run_in(&a, c, got, fault, cap);
  sq_arena_release(&a);
  return st;
}

static void gates_tol(const sq_case *c, int k, double *const *ref, double *tol) {
  const sq_shape *s = &c->shape;
  int N = sq_shape_int(s, "N", 1), T = sq_shape_int(s, "T", 1), H = sq_shape_int(s, "H", 1);
  int step = sq_shape_int(s, "step", 0), rev = sq_shape_int(s, "rev", 0);
  const int32_t *lens = sq_case_ini(c, "lens");
  for (int n = 0; n < N; n++) {
    int active = !lens || step < lens[n];
    int t = rev && lens ? lens[n] - 1 - step : step;
    for (int i = 0; i < H; i++) {
      if (k == 0) {
        size_t e = (size_t)n * H + i;
        tol[e] = active ? GATE_ABS + GATE_REL * fabs(ref[0][e]) : 0; /* inactive: unchanged */
      } else {
        for (int tt = 0; tt < T; tt++) {
          size_t e = ((size_t)n * T + tt) * H + i;
          tol[e] = active && tt == t ? GATE_ABS + GATE_REL * fabs(ref[1][e]) : 0;
        }
      }
    }
  }
}

static const char *const gates_shapes[] = {
    "N=1,T=1,H=1",           "N=3,T=7,H=13",          "N=5,T=13,H=37,rev=1,step=2",
    "N=4,T=5,H=61,step=4",   "N=7,T=3,H=64,lens=0,pad=5", "N=6,T=7,H=33,bias=0,rev=1,step=6",
    "N=9,T=2,H=512,step=1",  NULL};
static const char *const gates_quick[] = {"N=5,T=13,H=37,rev=1,step=2", NULL};

const sq_op sq_op_gru_gates = {
    "gru_gates",
    "absolute 1e-6 + relative 4e-5 (OpenCL C allows tanh 5 ulp and exp 3 ulp; the update adds "
    "a few roundings on values of order 1); rows past their length and untouched time steps "
    "exactly unchanged",
    gates_shapes, gates_quick, 0, gates_gen, gates_run, gates_tol, NULL};

/* ----------------------------------------------------------- gru_cell ---- */
/* Shape keys: N In H, bias (default 1), pad (extra row stride of x). */
static seqcl_status cell_gen(sq_case *c, sq_rng *r) {
  SQ_DIM(c, N, "N", 1, 1, SQ_MAXDIM);
  SQ_DIM(c, In, "In", 1, 1, SQ_MAXDIM);
  SQ_DIM(c, H, "H", 1, 1, SQ_MAXDIM);
  SQ_DIM(c, pad, "pad", 0, 0, 4096);
  float w = 1.0f / sqrtf((float)H); /* PyTorch's GRU initialisation range */
  SQ_NEED(sq_gen_f(c, r, "x", (size_t)N * (In + pad), 1.0f));
  SQ_NEED(sq_gen_f(c, r, "W_ih", (size_t)3 * H * In, w));
  SQ_NEED(sq_gen_f(c, r, "W_hh", (size_t)3 * H * H, w));
  if (sq_shape_int(&c->shape, "bias", 1)) {
    SQ_NEED(sq_gen_f(c, r, "b_ih", (size_t)3 * H, w));
    SQ_NEED(sq_gen_f(c, r, "b_hh", (size_t)3 * H, w));
  }
  SQ_NEED(sq_gen_f(c, r, "h", (size_t)N * H, 1.0f));
  SQ_NEED(sq_case_out(c, "h", (size_t)N * H, 0) >= 0);
  return SEQCL_OK;
}

static seqcl_status cell_run_in(sq_arena *a, const sq_case *c, double *const *got, char *fault,
                                size_t cap) {
  const sq_shape *s = &c->shape;
  int N = sq_shape_int(s, "N", 1), In = sq_shape_int(s, "In", 1), H = sq_shape_int(s, "H", 1);
  int pad = sq_shape_int(s, "pad", 0);
  sq_ref x = sq_arena_in_named(a, c, "x"), Wi = sq_arena_in_named(a, c, "W_ih");
  sq_ref Wh = sq_arena_in_named(a, c, "W_hh"), bi = sq_arena_in_named(a, c, "b_ih");
  sq_ref bh = sq_arena_in_named(a, c, "b_hh");
  sq_ref h = sq_arena_out(a, "h", (size_t)N * H, sq_case_inf(c, "h"));
  sq_ref ws = sq_arena_scratch(a, "ws", (size_t)6 * N * H);
  SQ_TRY(a->st);
  SQ_TRY(sq_gru_cell(a->ctx, N, In, H, x, In + pad, Wi, Wh, bi, bh, h, ws));
  SQ_TRY(sq_finish_run(a, fault, cap));
  return sq_arena_fetch(a, h, c->out[0].n, 0, got[0]);
}

static seqcl_status cell_run(seqcl_ctx *ctx, const sq_case *c, double *const *got, char *fault,
                             size_t cap) {
  sq_arena a;
  sq_arena_init(&a, ctx);
  seqcl_status st = cell_run_in(&a, c, got, fault, cap);
  sq_arena_release(&a);
  return st;
}

/* The gate bound plus the GEMMs' bound carried through the gates: sigma' <= 1/4,
 * tanh' <= 1, |n - h| <= 2, |r|, |1 - z| <= 1, so the sum of the four pre-activation
 * magnitudes times 2(K+2)u bounds their effect. */
static void cell_tol(const sq_case *c, int k, double *const *ref, double *tol) {
  const sq_shape *s = &c->shape;
  int N = sq_shape_int(s, "N", 1), In = sq_shape_int(s, "In", 1), H = sq_shape_int(s, "H", 1);
  int pad = sq_shape_int(s, "pad", 0);
  const float *x = sq_case_inf(c, "x"), *h = sq_case_inf(c, "h");
  const float *Wi = sq_case_inf(c, "W_ih"), *Wh = sq_case_inf(c, "W_hh");
  const float *bi = sq_case_inf(c, "b_ih"), *bh = sq_case_inf(c, "b_hh");
  double f = sq_dot_factor(In > H ? In : H);
  for (int n = 0; n < N; n++)
    for (int i = 0; i < H; i++) {
      double m = 0;
      for (int g = 0; g < 3; g++) {
        int row = g * H + i;
        m += (bi ? fabs(bi[row]) : 0) + (bh ? fabs(bh[row]) : 0);
        for (int p = 0; p < In; p++) m += fabs(Wi[(size_t)row * In + p] * x[(size_t)n * (In + pad) + p]);
        for (int p = 0; p < H; p++) m += fabs(Wh[(size_t)row * H + p] * h[(size_t)n * H + p]);
      }
      size_t e = (size_t)n * H + i;
      tol[e] = GATE_ABS + GATE_REL * fabs(ref[k][e]) + f * m;
    }
}

static const char *const cell_shapes[] = {"N=1,In=1,H=1", "N=3,In=13,H=7", "N=5,In=37,H=61,pad=3",
                                          "N=8,In=64,H=63,bias=0", "N=2,In=1024,H=512", NULL};
static const char *const cell_quick[] = {"N=3,In=13,H=7", NULL};

const sq_op sq_op_gru_cell = {
    "gru_cell",
    "absolute 1e-6 + relative 4e-5 (the gates) + 2(K+2)u times the summed magnitudes of the "
    "gate pre-activations, K = max(In, H) (the GEMM bound carried through sigma' <= 1/4, "
    "tanh' <= 1)",
    cell_shapes, cell_quick, 0, cell_gen, cell_run, cell_tol, NULL};

/* ---------------------------------------------------------- gru_layer ---- */
/* Shape keys: N T In H; rev (a single reverse direction), bidi (both directions
 * into one [N, T, 2H] buffer), layers (1 or 2, layer 1 reading layer 0's output),
 * lens (1 = varied lengths, the default). Outputs: out0, out1 (2 layers), and
 * the final states of every layer and direction. */
static const char *const gru_w_names[2][2][4] = {
    {{"W_ih_l0", "W_hh_l0", "b_ih_l0", "b_hh_l0"}, {"W_ih_l0r", "W_hh_l0r", "b_ih_l0r", "b_hh_l0r"}},
    {{"W_ih_l1", "W_hh_l1", "b_ih_l1", "b_hh_l1"}, {"W_ih_l1r", "W_hh_l1r", "b_ih_l1r", "b_hh_l1r"}}};
static const char *const gru_h0_names[2][2] = {{"h0_l0", "h0_l0r"}, {"h0_l1", "h0_l1r"}};
static const char *const gru_out_names[2] = {"out0", "out1"};

static seqcl_status layer_gen(sq_case *c, sq_rng *r) {
  SQ_DIM(c, N, "N", 1, 1, SQ_MAXDIM);
  SQ_DIM(c, T, "T", 1, 1, SQ_MAXDIM);
  SQ_DIM(c, In, "In", 1, 1, SQ_MAXDIM);
  SQ_DIM(c, H, "H", 1, 1, SQ_MAXDIM);
  SQ_DIM(c, layers, "layers", 1, 1, 2);
  int dirs = sq_shape_int(&c->shape, "bidi", 0) ? 2 : 1;
  float w = 1.0f / sqrtf((float)H);
  SQ_NEED(sq_gen_f(c, r, "x", (size_t)N * T * In, 1.0f));
  for (int l = 0; l < layers; l++)
    for (int d = 0; d < dirs; d++) {
      int in = l == 0 ? In : dirs * H;
      SQ_NEED(sq_gen_f(c, r, gru_w_names[l][d][0], (size_t)3 * H * in, w));
      SQ_NEED(sq_gen_f(c, r, gru_w_names[l][d][1], (size_t)3 * H * H, w));
      SQ_NEED(sq_gen_f(c, r, gru_w_names[l][d][2], (size_t)3 * H, w));
      SQ_NEED(sq_gen_f(c, r, gru_w_names[l][d][3], (size_t)3 * H, w));
      SQ_NEED(sq_gen_f(c, r, gru_h0_names[l][d], (size_t)N * H, 0.5f));
    }
  SQ_NEED(sq_gen_lens(c, r, "lens", N, T, sq_shape_int(&c->shape, "lens", 1)));
  for (int l = 0; l < layers; l++)
    SQ_NEED(sq_case_out(c, gru_out_names[l], (size_t)N * T * dirs * H, 0) >= 0);
  SQ_NEED(sq_case_out(c, "h_final", (size_t)layers * dirs * N * H, 0) >= 0);
  return SEQCL_OK;
}

static seqcl_status layer_run_in(sq_arena *a, const sq_case *c, double *const *got, char *fault,
                                 size_t cap) {
  const sq_shape *s = &c->shape;
  int N = sq_shape_int(s, "N", 1), T = sq_shape_int(s, "T", 1), In = sq_shape_int(s, "In", 1);
  int H = sq_shape_int(s, "H", 1), layers = sq_shape_int(s, "layers", 1);
  int dirs = sq_shape_int(s, "bidi", 0) ? 2 : 1, rev = sq_shape_int(s, "rev", 0) != 0;
  int W = dirs * H;
  const int32_t *lens_host = sq_case_ini(c, "lens");
  sq_ref x = sq_arena_in_named(a, c, "x"), lens = sq_arena_in_named(a, c, "lens");
  sq_ref ws = sq_arena_scratch(a, "ws", (size_t)N * T * 3 * H + (size_t)N * 3 * H);
  float *zeros = calloc((size_t)N * T * W, sizeof(float));
  if (!zeros) return sq_fail(a->ctx, SEQCL_ERR_OUT_OF_MEMORY, "check: out of host memory");
  sq_ref out[2] = {sq_none(), sq_none()}, h[2][2];
  for (int l = 0; l < layers; l++) {
    out[l] = sq_arena_out(a, gru_out_names[l], (size_t)N * T * W, zeros); /* callers zero first */
    for (int d = 0; d < dirs; d++)
      h[l][d] = sq_arena_out(a, gru_h0_names[l][d], (size_t)N * H, sq_case_inf(c, gru_h0_names[l][d]));
  }
  free(zeros);
  SQ_TRY(a->st);
  for (int l = 0; l < layers; l++) {
    sq_ref in = l == 0 ? x : out[l - 1];
    int in_w = l == 0 ? In : W;
    for (int d = 0; d < dirs; d++) {
      sq_ref Wi = sq_arena_in_named(a, c, gru_w_names[l][d][0]);
      sq_ref Wh = sq_arena_in_named(a, c, gru_w_names[l][d][1]);
      sq_ref bi = sq_arena_in_named(a, c, gru_w_names[l][d][2]);
      sq_ref bh = sq_arena_in_named(a, c, gru_w_names[l][d][3]);
      SQ_TRY(a->st);
      int reverse = dirs == 2 ? d : rev;
      SQ_TRY(sq_gru_layer(a->ctx, N, T, in_w, H, in, Wi, Wh, bi, bh, lens, lens_host, reverse,
                          h[l][d], out[l], W, d * H, ws));
    }
  }
  SQ_TRY(sq_finish_run(a, fault, cap));
  for (int l = 0; l < layers; l++) SQ_TRY(sq_arena_fetch(a, out[l], c->out[l].n, 0, got[l]));
  for (int l = 0; l < layers; l++)
    for (int d = 0; d < dirs; d++)
      SQ_TRY(sq_arena_fetch(a, h[l][d], (size_t)N * H, 0,
                            got[layers] + ((size_t)l * dirs + d) * N * H));
  return SEQCL_OK;
}

static seqcl_status layer_run(seqcl_ctx *ctx, const sq_case *c, double *const *got, char *fault,
                              size_t cap) {
  sq_arena a;
  sq_arena_init(&a, ctx);
  seqcl_status st = layer_run_in(&a, c, got, fault, cap);
  sq_arena_release(&a);
  return st;
}

static void layer_tol(const sq_case *c, int k, double *const *ref, double *tol) {
  const sq_shape *s = &c->shape;
  int N = sq_shape_int(s, "N", 1), T = sq_shape_int(s, "T", 1), H = sq_shape_int(s, "H", 1);
  int layers = sq_shape_int(s, "layers", 1), W = (sq_shape_int(s, "bidi", 0) ? 2 : 1) * H;
  const int32_t *lens = sq_case_ini(c, "lens");
  for (size_t e = 0; e < c->out[k].n; e++) {
    int valid = 1;
    if (k < layers) { /* outputs past a row's length stay exactly 0 */
      size_t n = e / ((size_t)T * W), t = e / W % T;
      valid = (int)t < lens[n];
    }
    tol[e] = valid ? 5e-5 + GATE_REL * fabs(ref[k][e]) : 0;
  }
  (void)N;
}

static double layer_l2(const sq_case *c, int k) {
  (void)k;
  int H = sq_shape_int(&c->shape, "H", 1), T = sq_shape_int(&c->shape, "T", 1);
  int L = sq_shape_int(&c->shape, "layers", 1);
  return 4.0 * sq_ceil_log2(7L * H * T * L) * SQ_EPS;
}

static const char *const layer_shapes[] = {
    "N=1,T=1,In=1,H=1",         "N=3,T=7,In=13,H=5",          "N=5,T=13,In=7,H=37,rev=1",
    "N=4,T=9,In=16,H=61,bidi=1", "N=3,T=7,In=5,H=13,layers=2,bidi=1", "N=6,T=5,In=33,H=31,layers=2",
    "N=7,T=4,In=8,H=16,lens=0,rev=1", "N=2,T=6,In=512,H=512,bidi=1", NULL};
static const char *const layer_quick[] = {"N=3,T=7,In=13,H=5,bidi=1", NULL};

const sq_op sq_op_gru_layer = {
    "gru_layer",
    "element-wise absolute 5e-5 + relative 4e-5 and normalised L2 <= 4 ceil(log2(7 H T L)) eps "
    "(errors of T recurrent steps, each a gate tolerance plus GEMM rounding, through a "
    "contracting recurrence); outputs past a row's length exactly 0",
    layer_shapes, layer_quick, 0, layer_gen, layer_run, layer_tol, layer_l2};
