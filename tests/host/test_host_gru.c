/* sq_gru_cell and sq_gru_layer on the host backend against a naive
 * double-precision GRU (torch.nn.GRU semantics, pack_padded_sequence lengths).
 *
 * Shapes: N in {1,3,7}, T in {1,5,13}, In in {1,37}, H in {1,16,61}, each with
 * variable lengths and both directions written into one [N, T, 2H] output
 * (forward at column 0, reverse at column H), then again without lengths or
 * biases. Weights are drawn as PyTorch initialises them, uniform in
 * [-1/sqrt(H), 1/sqrt(H)], so the gates stay away from saturation and an error
 * in them shows in the output; x and the initial states are uniform in [-1, 1].
 *
 * Tolerances (DESIGN.md):
 *  - one step (sq_gru_cell): |d| <= 1e-6 + 4e-5 |ref| per element; float
 *    expf/tanhf are within a few ulp and the two GEMMs add K eps-sized terms;
 *  - over T steps (sq_gru_layer, outputs and final states): |d| <= 5e-5 per
 *    element. The worst error per T is printed so growth with T is visible.
 * Outputs past each row's end must still hold exactly the 0 the caller wrote,
 * and a guard region after the output must be untouched. */
#include "../common/test_main.h"
#include "host_test.h"

#define GUARD 64
#define SENTINEL 777.0f

static const double TOL_STEP_ABS = 1e-6, TOL_STEP_REL = 4e-5, TOL_SEQ_ABS = 5e-5;

static double sigm(double x) { return 1.0 / (1.0 + exp(-x)); }

/* One double-precision GRU step of one row: h (length H) is updated in place. */
static void ref_step(int In, int H, const float *x, const float *Wih, const float *Whh,
                     const float *bih, const float *bhh, double *h) {
  double *hn = malloc(sizeof(double) * (size_t)H);
  for (int j = 0; j < H; j++) {
    double gi[3], gh[3];
    for (int g = 0; g < 3; g++) {
      int row = g * H + j;
      double si = bih ? bih[row] : 0.0, sh = bhh ? bhh[row] : 0.0;
      for (int k = 0; k < In; k++) si += (double)Wih[(size_t)row * In + k] * x[k];
      for (int k = 0; k < H; k++) sh += (double)Whh[(size_t)row * H + k] * h[k];
      gi[g] = si;
      gh[g] = sh;
    }
    double r = sigm(gi[0] + gh[0]), z = sigm(gi[1] + gh[1]);
    double n = tanh(gi[2] + r * gh[2]);
    hn[j] = (1.0 - z) * n + z * h[j];
  }
  memcpy(h, hn, sizeof(double) * (size_t)H);
  free(hn);
}

typedef struct gru_case {
  int N, T, In, H;
  float *x, *Wih, *Whh, *bih, *bhh, *h0f, *h0r;
  int32_t *lens;
} gru_case;

static gru_case make_case(int N, int T, int In, int H, uint64_t seed) {
  gru_case c = {N, T, In, H, 0, 0, 0, 0, 0, 0, 0, 0};
  th_rng r = th_seed(seed);
  float k = 1.0f / sqrtf((float)H);
  size_t H3 = 3 * (size_t)H;
  c.x = malloc(sizeof(float) * (size_t)N * T * In);
  c.Wih = malloc(sizeof(float) * H3 * In);
  c.Whh = malloc(sizeof(float) * H3 * H);
  c.bih = malloc(sizeof(float) * H3);
  c.bhh = malloc(sizeof(float) * H3);
  c.h0f = malloc(sizeof(float) * (size_t)N * H);
  c.h0r = malloc(sizeof(float) * (size_t)N * H);
  c.lens = malloc(sizeof(int32_t) * (size_t)N);
  th_fill(&r, c.x, (size_t)N * T * In, 1.0f);
  th_fill(&r, c.Wih, H3 * In, k);
  th_fill(&r, c.Whh, H3 * H, k);
  th_fill(&r, c.bih, H3, k);
  th_fill(&r, c.bhh, H3, k);
  th_fill(&r, c.h0f, (size_t)N * H, 1.0f);
  th_fill(&r, c.h0r, (size_t)N * H, 1.0f);
  /* Lengths in [1, T]; with several rows the first has the full length, a
   * single row may be shorter than T (the layer then runs fewer steps). */
  for (int n = 0; n < N; n++) c.lens[n] = 1 + (int32_t)(th_u32(&r) % (uint32_t)T);
  if (N > 1) c.lens[0] = T;
  return c;
}

static void free_case(gru_case *c) {
  free(c->x);
  free(c->Wih);
  free(c->Whh);
  free(c->bih);
  free(c->bhh);
  free(c->h0f);
  free(c->h0r);
  free(c->lens);
}

/* Reference outputs [N, T, 2H] (0 past the end) and final states [2][N, H]. */
static void ref_layer(const gru_case *c, int use_lens, int use_bias, double *out, double *hfin) {
  const int N = c->N, T = c->T, In = c->In, H = c->H;
  memset(out, 0, sizeof(double) * (size_t)N * T * 2 * H);
  double *h = malloc(sizeof(double) * (size_t)H);
  for (int dir = 0; dir < 2; dir++) {
    const float *h0 = dir ? c->h0r : c->h0f;
    for (int n = 0; n < N; n++) {
      int len = use_lens ? c->lens[n] : T;
      for (int j = 0; j < H; j++) h[j] = h0[(size_t)n * H + j];
      for (int s = 0; s < len; s++) {
        int t = dir ? len - 1 - s : s;
        ref_step(In, H, c->x + ((size_t)n * T + t) * In, c->Wih, c->Whh,
                 use_bias ? c->bih : NULL, use_bias ? c->bhh : NULL, h);
        for (int j = 0; j < H; j++) out[((size_t)n * T + t) * 2 * H + dir * H + j] = h[j];
      }
      for (int j = 0; j < H; j++) hfin[(size_t)dir * N * H + (size_t)n * H + j] = h[j];
    }
  }
  free(h);
}

/* Worst error per T (index 0..2 for T = 1, 5, 13) over every case run. */
static double worst_by_T[3];

static int t_index(int T) { return T == 1 ? 0 : T == 5 ? 1 : 2; }

static void run_layer(seqcl_ctx *ctx, const gru_case *c, int use_lens, int use_bias) {
  const int N = c->N, T = c->T, In = c->In, H = c->H;
  const size_t H3 = 3 * (size_t)H, NT = (size_t)N * T, nout = NT * 2 * H;
  sq_buf *x = th_buf(ctx, NT * In, c->x), *Wih = th_buf(ctx, H3 * In, c->Wih);
  sq_buf *Whh = th_buf(ctx, H3 * H, c->Whh), *bih = th_buf(ctx, H3, c->bih);
  sq_buf *bhh = th_buf(ctx, H3, c->bhh), *hf = th_buf(ctx, (size_t)N * H, c->h0f);
  sq_buf *hr = th_buf(ctx, (size_t)N * H, c->h0r), *lens = th_buf(ctx, (size_t)N, c->lens);
  sq_buf *out = th_buf(ctx, nout + GUARD, NULL), *ws = th_buf(ctx, NT * H3 + N * H3, NULL);
  TH_OK(sq_fill(ctx, sq_at(out, 0), nout, 0.0f));
  TH_OK(sq_fill(ctx, sq_at(out, nout), GUARD, SENTINEL));
  /* Workspace starts as NaN: the layer must not read what it has not written. */
  TH_OK(sq_fill(ctx, sq_at(ws, 0), NT * H3 + N * H3, NAN));

  sq_ref L = use_lens ? sq_at(lens, 0) : sq_none();
  const int32_t *Lh = use_lens ? c->lens : NULL;
  sq_ref bi = use_bias ? sq_at(bih, 0) : sq_none(), bh = use_bias ? sq_at(bhh, 0) : sq_none();
  TH_OK(sq_gru_layer(ctx, N, T, In, H, sq_at(x, 0), sq_at(Wih, 0), sq_at(Whh, 0), bi, bh, L, Lh, 0,
                     sq_at(hf, 0), sq_at(out, 0), 2 * H, 0, sq_at(ws, 0)));
  TH_OK(sq_gru_layer(ctx, N, T, In, H, sq_at(x, 0), sq_at(Wih, 0), sq_at(Whh, 0), bi, bh, L, Lh, 1,
                     sq_at(hr, 0), sq_at(out, 0), 2 * H, H, sq_at(ws, 0)));

  float *got = malloc(sizeof(float) * (nout + GUARD));
  float *hgot = malloc(sizeof(float) * 2 * N * H);
  double *want = malloc(sizeof(double) * nout), *hwant = malloc(sizeof(double) * 2 * N * H);
  TH_OK(sq_read(ctx, sq_at(out, 0), got, sizeof(float) * (nout + GUARD)));
  TH_OK(sq_read(ctx, sq_at(hf, 0), hgot, sizeof(float) * N * H));
  TH_OK(sq_read(ctx, sq_at(hr, 0), hgot + (size_t)N * H, sizeof(float) * N * H));
  ref_layer(c, use_lens, use_bias, want, hwant);

  double worst = 0.0;
  for (int n = 0; n < N; n++) {
    int len = use_lens ? c->lens[n] : T;
    for (int t = 0; t < T; t++) {
      for (int j = 0; j < 2 * H; j++) {
        size_t i = ((size_t)n * T + t) * 2 * H + j;
        if (t >= len) {
          if (got[i] != 0.0f)
            fail_msg("N=%d T=%d In=%d H=%d: out[%d,%d,%d] = %g past the end (len %d), want 0", N,
                     T, In, H, n, t, j, got[i], len);
          continue;
        }
        double d = fabs((double)got[i] - want[i]);
        if (!(d <= TOL_SEQ_ABS))
          fail_msg("N=%d T=%d In=%d H=%d lens=%d bias=%d: out[%d,%d,%d] = %.9g, want %.9g "
                   "(|d| = %.3g > %.3g)",
                   N, T, In, H, use_lens, use_bias, n, t, j, got[i], want[i], d, TOL_SEQ_ABS);
        worst = d > worst ? d : worst;
      }
    }
  }
  for (size_t i = 0; i < 2 * (size_t)N * H; i++) {
    double d = fabs((double)hgot[i] - hwant[i]);
    if (!(d <= TOL_SEQ_ABS))
      fail_msg("N=%d T=%d In=%d H=%d lens=%d bias=%d: final %s state [%zu] = %.9g, want %.9g", N,
               T, In, H, use_lens, use_bias, i < (size_t)N * H ? "forward" : "reverse",
               i % ((size_t)N * H), hgot[i], hwant[i]);
    worst = d > worst ? d : worst;
  }
  for (size_t i = nout; i < nout + GUARD; i++)
    if (got[i] != SENTINEL) fail_msg("N=%d T=%d In=%d H=%d: guard element %zu written", N, T, In, H, i - nout);
  int ti = t_index(T);
  worst_by_T[ti] = worst > worst_by_T[ti] ? worst : worst_by_T[ti];

  free(got);
  free(hgot);
  free(want);
  free(hwant);
  sq_buf *all[] = {x, Wih, Whh, bih, bhh, hf, hr, lens, out, ws};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) sq_buf_free(all[i]);
}

static void run_cell(seqcl_ctx *ctx, const gru_case *c) {
  /* One step on x[:, 0, :] read with row stride T*In (so ldx > In when T > 1). */
  const int N = c->N, In = c->In, H = c->H, ldx = c->T * c->In;
  const size_t H3 = 3 * (size_t)H;
  sq_buf *x = th_buf(ctx, (size_t)N * ldx, c->x), *Wih = th_buf(ctx, H3 * In, c->Wih);
  sq_buf *Whh = th_buf(ctx, H3 * H, c->Whh), *bih = th_buf(ctx, H3, c->bih);
  sq_buf *bhh = th_buf(ctx, H3, c->bhh), *h = th_buf(ctx, (size_t)N * H, c->h0f);
  sq_buf *ws = th_buf(ctx, 6 * (size_t)N * H, NULL);
  TH_OK(sq_fill(ctx, sq_at(ws, 0), 6 * (size_t)N * H, NAN));
  TH_OK(sq_gru_cell(ctx, N, In, H, sq_at(x, 0), ldx, sq_at(Wih, 0), sq_at(Whh, 0), sq_at(bih, 0),
                    sq_at(bhh, 0), sq_at(h, 0), sq_at(ws, 0)));
  float *got = malloc(sizeof(float) * N * H);
  double *ref = malloc(sizeof(double) * H);
  TH_OK(sq_read(ctx, sq_at(h, 0), got, sizeof(float) * N * H));
  for (int n = 0; n < N; n++) {
    for (int j = 0; j < H; j++) ref[j] = c->h0f[(size_t)n * H + j];
    ref_step(In, H, c->x + (size_t)n * ldx, c->Wih, c->Whh, c->bih, c->bhh, ref);
    for (int j = 0; j < H; j++) {
      double d = fabs((double)got[(size_t)n * H + j] - ref[j]);
      double tol = TOL_STEP_ABS + TOL_STEP_REL * fabs(ref[j]);
      if (!(d <= tol))
        fail_msg("cell N=%d In=%d H=%d: h[%d,%d] = %.9g, want %.9g (|d| = %.3g > %.3g)", N, In, H,
                 n, j, got[(size_t)n * H + j], ref[j], d, tol);
    }
  }
  free(got);
  free(ref);
  sq_buf *all[] = {x, Wih, Whh, bih, bhh, h, ws};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) sq_buf_free(all[i]);
}

static const int Ns[] = {1, 3, 7}, Ts[] = {1, 5, 13}, Ins[] = {1, 37}, Hs[] = {1, 16, 61};

#define FOR_SHAPES                                                                  \
  for (int a = 0; a < 3; a++)                                                       \
    for (int b = 0; b < 3; b++)                                                     \
      for (int i = 0; i < 2; i++)                                                   \
        for (int e = 0; e < 3; e++)

static void gru_layer_matches_reference(void **state) {
  seqcl_ctx *ctx = *state;
  int cases = 0;
  FOR_SHAPES {
    gru_case c = make_case(Ns[a], Ts[b], Ins[i], Hs[e], 1000u + (uint64_t)(a * 100 + b * 10 + i * 3 + e));
    run_layer(ctx, &c, 1, 1);
    run_layer(ctx, &c, 0, 0);
    free_case(&c);
    cases += 2;
  }
  print_message("sq_gru_layer: %d cases, worst |d| by T: T=1 %.3g, T=5 %.3g, T=13 %.3g (tol %.0e)\n",
                cases, worst_by_T[0], worst_by_T[1], worst_by_T[2], TOL_SEQ_ABS);
}

static void gru_cell_matches_reference(void **state) {
  seqcl_ctx *ctx = *state;
  FOR_SHAPES {
    gru_case c = make_case(Ns[a], Ts[b], Ins[i], Hs[e], 2000u + (uint64_t)(a * 100 + b * 10 + i * 3 + e));
    run_cell(ctx, &c);
    free_case(&c);
  }
}

/* A wrong reverse index or a missing final-state rule must show: the reverse
 * output of a length-1 row equals one step from its initial state at t = 0,
 * and a row that finished early keeps its state while longer rows run on. */
static void gru_layer_short_rows_keep_state(void **state) {
  seqcl_ctx *ctx = *state;
  gru_case c = make_case(3, 5, 4, 3, 77);
  c.lens[0] = 5;
  c.lens[1] = 1;
  c.lens[2] = 3;
  run_layer(ctx, &c, 1, 1);
  free_case(&c);
}

SQ_TEST_MAIN(th_setup_ctx, th_teardown_ctx,
      cmocka_unit_test(gru_cell_matches_reference),
      cmocka_unit_test(gru_layer_matches_reference),
      cmocka_unit_test(gru_layer_short_rows_keep_state))
