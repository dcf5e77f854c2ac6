/* Op list entries of the gru family: the GRU gate kernel with the training
 * step that keeps its gates (grad.gru_fwd) and its backward (grad.gru_gates),
 * one GRU cell, and a GRU layer over time (forward, reverse, bidirectional into
 * one buffer, stacked layers). The training entries' accumulated outputs start
 * from random values, so a kernel that overwrites instead fails. */
#include <string.h>

#include "check/opdefs.h"
#include "check/ops_all.h"

/* Gate tolerance: sigmoid and tanh are allowed 3-5 ulp in OpenCL C and the
 * pointwise update adds a few roundings on values of order 1. */
#define GATE_ABS 1e-6
#define GATE_REL 4e-5

/* ------------------------------------- gru_gates, grad.gru_fwd, grad.gru_gates ---- */
/* One GRU time step, three entries: the gate kernel, the training forward that
 * also keeps its gates (grad.gru_fwd) and the step's backward (grad.gru_gates).
 * Shape keys: N T H, step, rev, lens (1 = lengths given, the default), bias
 * (default 1), pad (extra row stride of gh and dgh); the backward adds dout
 * (default 1: the layer output's gradient is given) and saved (1: the gates
 * gru_fwd kept are given, random values in their ranges; 0: recomputed). */
static seqcl_status gru_step_gen(sq_case *c, sq_rng *r, int *N, int *T, int *H) {
  SQ_DIM(c, n, "N", 1, 1, SQ_MAXDIM);
  SQ_DIM(c, t, "T", 1, 1, SQ_MAXDIM);
  SQ_DIM(c, h, "H", 1, 1, SQ_MAXDIM);
  SQ_DIM(c, step, "step", 0, 0, t - 1);
  SQ_DIM(c, pad, "pad", 0, 0, 4096);
  (void)step;
  if (SH("rev", 0) && !SH("lens", 1))
    return sq_fail(NULL, SEQCL_ERR_INVALID_ARGUMENT, "%s: rev=1 needs lens=1", c->op->name);
  SQ_NEED(sq_gen_f(c, r, "gi", (size_t)n * t * 3 * h, 1.5f));
  SQ_NEED(sq_gen_f(c, r, "gh", (size_t)n * (3 * h + pad), 1.5f));
  if (SH("bias", 1)) {
    SQ_NEED(sq_gen_f(c, r, "b_ih", (size_t)3 * h, 0.5f));
    SQ_NEED(sq_gen_f(c, r, "b_hh", (size_t)3 * h, 0.5f));
  }
  SQ_NEED(sq_gen_f(c, r, "h", (size_t)n * h, 1.0f));
  if (SH("lens", 1)) SQ_NEED(sq_gen_lens(c, r, "lens", n, t, 1));
  *N = n, *T = t, *H = h;
  return SEQCL_OK;
}

/* Row n's activity and time index at the case's step (as backend.h defines them). */
static int gru_row_time(const sq_case *c, int n, int *t) {
  const int32_t *lens = sq_case_ini(c, "lens");
  int step = SH("step", 0), len = lens ? lens[n] : step + 1;
  if (step >= len) return 0;
  *t = SH("rev", 0) ? len - 1 - step : step;
  return 1;
}

/* The fields that sq_gru_args and sq_gru_bwd_args share, the step of the case
 * with its inputs uploaded: a macro, as the two are distinct types. */
#define GRU_STEP_FIELDS(g, a, c)                                                            \
  do {                                                                                      \
    const int H_ = sq_shape_int(&(c)->shape, "H", 1), T_ = sq_shape_int(&(c)->shape, "T", 1); \
    (g).N = sq_shape_int(&(c)->shape, "N", 1), (g).H = H_;                                  \
    (g).gi = sq_arena_in_named(a, c, "gi");                                                 \
    (g).gi_sn = (size_t)T_ * 3 * H_, (g).gi_st = (size_t)3 * H_;                            \
    (g).gh = sq_arena_in_named(a, c, "gh");                                                 \
    (g).ld_gh = 3 * H_ + sq_shape_int(&(c)->shape, "pad", 0);                               \
    (g).b_ih = sq_arena_in_named(a, c, "b_ih");                                             \
    (g).b_hh = sq_arena_in_named(a, c, "b_hh");                                             \
    (g).lens = sq_arena_in_named(a, c, "lens");                                             \
    (g).step = sq_shape_int(&(c)->shape, "step", 0);                                        \
    (g).reverse = sq_shape_int(&(c)->shape, "rev", 0) != 0;                                 \
  } while (0)

/* The forward step's arguments: h updated in place from the input "h", out
 * [N, T, H] starting at 0 (the time steps not taken must stay as they were,
 * as in the reference). */
static void gru_fwd_args(sq_arena *a, const sq_case *c, sq_gru_args *g) {
  const int N = SH("N", 1), T = SH("T", 1), H = SH("H", 1);
  memset(g, 0, sizeof *g);
  GRU_STEP_FIELDS(*g, a, c);
  g->h = sq_arena_out(a, "h", (size_t)N * H, sq_case_inf(c, "h"));
  g->out = sq_arena_out_zeros(a, "out", (size_t)N * T * H);
  g->out_sn = (size_t)T * H, g->out_st = (size_t)H;
}

static seqcl_status gates_gen(sq_case *c, sq_rng *r) {
  int N, T, H;
  SQ_TRY(gru_step_gen(c, r, &N, &T, &H));
  SQ_NEED(sq_case_out(c, "h", (size_t)N * H, 0) >= 0);
  SQ_NEED(sq_case_out(c, "out", (size_t)N * T * H, 0) >= 0);
  return SEQCL_OK;
}

static seqcl_status gates_run(sq_arena *a, const sq_case *c) {
  sq_gru_args g;
  gru_fwd_args(a, c, &g);
  SQ_TRY(a->st);
  SQ_TRY(sq_gru_gates(a->ctx, &g, sq_case_ini(c, "lens")));
  return sq_finish_fetch(a, c, (sq_ref[]){g.h, g.out});
}

/* The gate bound on every output of an active row at its time step (h, out
 * and the kept gates); inactive rows and other time steps exactly unchanged. */
static void gru_step_tol(const sq_case *c, int k, double *const *ref, double *tol) {
  int N = SH("N", 1), T = SH("T", 1), H = SH("H", 1);
  int w = k == 2 ? 4 * H : H;
  for (int n = 0; n < N; n++) {
    int t = -1, active = gru_row_time(c, n, &t);
    for (int tt = 0; tt < (k == 0 ? 1 : T); tt++)
      for (int i = 0; i < w; i++) {
        size_t e = ((size_t)n * (k == 0 ? 1 : T) + tt) * w + i;
        int live = active && (k == 0 || tt == t);
        tol[e] = live ? GATE_ABS + GATE_REL * fabs(ref[k][e]) : 0;
      }
  }
}

static const char *const gru_step_shapes[] = {
    "N=1,T=1,H=1",         "N=3,T=7,H=13",             "N=5,T=13,H=37,rev=1,step=2",
    "N=4,T=5,H=61,step=4", "N=7,T=3,H=64,lens=0,pad=5", "N=6,T=7,H=33,bias=0,rev=1,step=6",
    "N=9,T=2,H=512,step=1", NULL};
static const char *const gates_quick[] = {"N=5,T=13,H=37,rev=1,step=2", NULL};

const sq_op sq_op_gru_gates = {
    "gru_gates",
    "absolute 1e-6 + relative 4e-5 (OpenCL C allows tanh 5 ulp and exp 3 ulp; the update adds "
    "a few roundings on values of order 1); rows past their length and untouched time steps "
    "exactly unchanged",
    gru_step_shapes, gates_quick, 0, gates_gen, gates_run, gru_step_tol, NULL};

/* grad.gru_fwd: the outputs of gru_gates and the gates kept for the backward. */
static seqcl_status gfwd_gen(sq_case *c, sq_rng *r) {
  SQ_TRY(gates_gen(c, r));
  const size_t n = (size_t)SH("N", 1) * SH("T", 1) * 4 * SH("H", 1);
  SQ_NEED(sq_case_out(c, "saved", n, 0) >= 0);
  return SEQCL_OK;
}

static seqcl_status gfwd_run(sq_arena *a, const sq_case *c) {
  const int N = SH("N", 1), T = SH("T", 1), H = SH("H", 1);
  sq_gru_args g;
  gru_fwd_args(a, c, &g);
  sq_ref saved = sq_arena_out_zeros(a, "saved", (size_t)N * T * 4 * H);
  SQ_TRY(a->st);
  SQ_TRY(sq_gru_fwd(a->ctx, &g, saved, (size_t)T * 4 * H, (size_t)4 * H));
  return sq_finish_fetch(a, c, (sq_ref[]){g.h, g.out, saved});
}

static const char *const gru_quick[] = {"N=3,T=7,H=13", NULL};

const sq_op sq_op_grad_gru_fwd = {
    "grad.gru_fwd",
    "as gru_gates: absolute 1e-6 + relative 4e-5 for h, out and the kept gates (r, z, n, "
    "W_hn h + b_hn); inactive rows and other time steps exactly unchanged",
    gru_step_shapes, gru_quick, 0, gfwd_gen, gfwd_run, gru_step_tol, NULL};

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
  if (SH("bias", 1)) {
    SQ_NEED(sq_gen_f(c, r, "b_ih", (size_t)3 * H, w));
    SQ_NEED(sq_gen_f(c, r, "b_hh", (size_t)3 * H, w));
  }
  SQ_NEED(sq_gen_f(c, r, "h", (size_t)N * H, 1.0f));
  SQ_NEED(sq_case_out(c, "h", (size_t)N * H, 0) >= 0);
  return SEQCL_OK;
}

static seqcl_status cell_run(sq_arena *a, const sq_case *c) {
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
  return sq_finish_fetch(a, c, &h);
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
  int dirs = SH("bidi", 0) ? 2 : 1;
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
  SQ_NEED(sq_gen_lens(c, r, "lens", N, T, SH("lens", 1)));
  for (int l = 0; l < layers; l++)
    SQ_NEED(sq_case_out(c, gru_out_names[l], (size_t)N * T * dirs * H, 0) >= 0);
  SQ_NEED(sq_case_out(c, "h_final", (size_t)layers * dirs * N * H, 0) >= 0);
  return SEQCL_OK;
}

static seqcl_status layer_run(sq_arena *a, const sq_case *c) {
  const sq_shape *s = &c->shape;
  int N = sq_shape_int(s, "N", 1), T = sq_shape_int(s, "T", 1), In = sq_shape_int(s, "In", 1);
  int H = sq_shape_int(s, "H", 1), layers = sq_shape_int(s, "layers", 1);
  int dirs = sq_shape_int(s, "bidi", 0) ? 2 : 1, rev = sq_shape_int(s, "rev", 0) != 0;
  int W = dirs * H;
  const int32_t *lens_host = sq_case_ini(c, "lens");
  sq_ref x = sq_arena_in_named(a, c, "x"), lens = sq_arena_in_named(a, c, "lens");
  sq_ref ws = sq_arena_scratch(a, "ws", (size_t)N * T * 3 * H + (size_t)N * 3 * H);
  sq_ref out[2] = {sq_none(), sq_none()}, h[2][2];
  for (int l = 0; l < layers; l++) {
    out[l] = sq_arena_out_zeros(a, gru_out_names[l], (size_t)N * T * W); /* callers zero first */
    for (int d = 0; d < dirs; d++)
      h[l][d] = sq_arena_out(a, gru_h0_names[l][d], (size_t)N * H, sq_case_inf(c, gru_h0_names[l][d]));
  }
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
  SQ_TRY(sq_finish_run(a));
  for (int l = 0; l < layers; l++) SQ_TRY(sq_arena_fetch(a, out[l], c->out[l].n, 0, a->got[l]));
  for (int l = 0; l < layers; l++)
    for (int d = 0; d < dirs; d++)
      SQ_TRY(sq_arena_fetch(a, h[l][d], (size_t)N * H, 0,
                            a->got[layers] + ((size_t)l * dirs + d) * N * H));
  return SEQCL_OK;
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
  int H = SH("H", 1), T = SH("T", 1), L = SH("layers", 1);
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

/* grad.gru_gates: the step's backward. */
static seqcl_status gbwd_gen(sq_case *c, sq_rng *r) {
  int N, T, H;
  SQ_TRY(gru_step_gen(c, r, &N, &T, &H));
  int ld = 3 * H + SH("pad", 0);
  SQ_NEED(sq_gen_f(c, r, "dh0", (size_t)N * H, 1.0f));
  if (SH("dout", 1)) SQ_NEED(sq_gen_f(c, r, "dout", (size_t)N * T * H, 1.0f));
  if (SH("saved", 0)) {
    float *sv = sq_gen_f(c, r, "saved", (size_t)N * T * 4 * H, 1.0f);
    SQ_NEED(sv);
    for (size_t e = 0; e < (size_t)N * T; e++)
      for (int i = 0; i < 2 * H; i++) sv[e * 4 * H + i] = fabsf(sv[e * 4 * H + i]); /* r, z */
  }
  SQ_NEED(sq_gen_f(c, r, "dgi0", (size_t)N * T * 3 * H, 1.0f));
  SQ_NEED(sq_gen_f(c, r, "dgh0", (size_t)N * ld, 1.0f));
  SQ_NEED(sq_case_out(c, "dh", (size_t)N * H, 0) >= 0);
  SQ_NEED(sq_case_out(c, "dgi", (size_t)N * T * 3 * H, 0) >= 0);
  SQ_NEED(sq_case_out(c, "dgh", (size_t)N * 3 * H, 0) >= 0);
  return SEQCL_OK;
}

static seqcl_status gbwd_run(sq_arena *a, const sq_case *c) {
  int N = SH("N", 1), T = SH("T", 1), H = SH("H", 1), ld = 3 * H + SH("pad", 0);
  sq_gru_bwd_args g;
  memset(&g, 0, sizeof g);
  GRU_STEP_FIELDS(g, a, c);
  g.h_prev = sq_arena_in_named(a, c, "h");
  g.dh = sq_arena_out(a, "dh", (size_t)N * H, sq_case_inf(c, "dh0"));
  g.dout = sq_arena_in_named(a, c, "dout");
  g.dout_sn = (size_t)T * H, g.dout_st = (size_t)H;
  g.dgi = sq_arena_out(a, "dgi", (size_t)N * T * 3 * H, sq_case_inf(c, "dgi0"));
  g.dgh = sq_arena_out2d(a, "dgh", (size_t)N, (size_t)3 * H, (size_t)ld, sq_case_inf(c, "dgh0"));
  g.ld_dgh = ld;
  g.saved = sq_arena_in_named(a, c, "saved");
  g.sv_sn = (size_t)T * 4 * H, g.sv_st = (size_t)4 * H;
  SQ_TRY(a->st);
  SQ_TRY(sq_gru_gates_bwd(a->ctx, &g));
  return sq_finish_fetch(a, c, (sq_ref[]){g.dh, g.dgi, g.dgh});
}

/* Each gate value may be off by d = 1e-6 + 4e-5 (as gru_gates); the gradients'
 * derivatives with respect to r, z, n are bounded by |g| (4 + |h_prev| + |hn|)
 * where g = dh + dout (sigma' <= 1/4, |1 - n^2| <= 1, |n| < 1), so the bound is
 * d |g| (4 + |h_prev| + |hn|) + 4 eps |ref|; dh = g z: d |g| + 2 eps |ref|.
 * Inactive rows: dh and dgi exactly unchanged, dgh exactly 0; other time steps
 * of dgi exactly unchanged. */
static void gbwd_tol(const sq_case *c, int k, double *const *ref, double *tol) {
  int N = SH("N", 1), T = SH("T", 1), H = SH("H", 1), ld = 3 * H + SH("pad", 0);
  const double dg = GATE_ABS + GATE_REL;
  const float *dh0 = sq_case_inf(c, "dh0"), *dout = sq_case_inf(c, "dout");
  const float *hp = sq_case_inf(c, "h"), *gh = sq_case_inf(c, "gh"), *bhh = sq_case_inf(c, "b_hh");
  const float *sv = sq_case_inf(c, "saved");
  size_t w = k == 0 ? (size_t)H : (size_t)3 * H, steps = k == 1 ? (size_t)T : 1;
  for (int n = 0; n < N; n++) {
    int t = -1, active = gru_row_time(c, n, &t);
    for (size_t tt = 0; tt < steps; tt++)
      for (size_t j = 0; j < w; j++) {
        size_t e = ((size_t)n * steps + tt) * w + j;
        int live = active && (k != 1 || (int)tt == t);
        if (!live) {
          tol[e] = 0;
          continue;
        }
        int i = (int)(j % H);
        double g = fabs(dh0[(size_t)n * H + i]) +
                   (dout ? fabs(dout[((size_t)n * T + t) * H + i]) : 0);
        double hn = sv ? fabs(sv[((size_t)n * T + t) * 4 * H + 3 * H + i])
                       : fabs(gh[(size_t)n * ld + 2 * H + i]) + (bhh ? fabs(bhh[2 * H + i]) : 0);
        tol[e] = k == 0 ? dg * g + 2 * SQ_EPS * fabs(ref[k][e])
                        : dg * g * (4 + fabs(hp[(size_t)n * H + i]) + hn) +
                              4 * SQ_EPS * fabs(ref[k][e]);
      }
  }
}

static const char *const gbwd_shapes[] = {
    "N=1,T=1,H=1",
    "N=3,T=7,H=13",
    "N=5,T=13,H=37,rev=1,step=2,saved=1",
    "N=4,T=5,H=61,step=4,dout=0",
    "N=7,T=3,H=64,lens=0,pad=5,saved=1",
    "N=6,T=7,H=33,bias=0,rev=1,step=6",
    "N=9,T=2,H=512,step=1",
    NULL};
static const char *const gbwd_quick[] = {"N=3,T=7,H=13", NULL};

const sq_op sq_op_grad_gru_gates = {
    "grad.gru_gates",
    "each gate off by d = 1e-6 + 4e-5 (as gru_gates) carried through the backward: "
    "d |dh + dout| (4 + |h_prev| + |hn|) + 4 eps |ref| for dgi, dgh; d |dh + dout| + 2 eps |ref| "
    "for dh; inactive rows keep dh, dgi and get dgh = 0 exactly; dh, dgi, dgh start random",
    gbwd_shapes, gbwd_quick, 0, gbwd_gen, gbwd_run, gbwd_tol, NULL};
