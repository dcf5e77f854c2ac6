/* Backward slots of the host table against central finite differences of
 * double-precision forward implementations written here.
 *
 * Inputs are seeded uniform in [-1, 1]. The finite differences use h = 1e-5 in
 * double (truncation ~h^2 * f''' ~ 1e-10, rounding ~1e-16 / h ~ 1e-11), so the
 * reference is exact to ~1e-9; the slots compute in float32 over at most a few
 * dozen terms per output, so |slot - ref| <= 1e-4 * max|ref| + 1e-6 leaves a
 * wide margin over float rounding (~1e-6 relative) while a wrong term (a missing
 * factor, a sign, a transposed index) is off by O(1) relative. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../common/test_main.h"
#include "backend/host/host.h"
#include "ops/ops.h"
#include "oracle.h"

#define FD_H 1e-5
#define REL_TOL 1e-4
#define ABS_TOL 1e-6

static uint64_t rng_state = 0x1234567;
static double urand(void) { /* [-1, 1), never exactly 0 in practice */
  rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
  return ((double)(rng_state >> 11) * 0x1.0p-53) * 2.0 - 1.0;
}
static void fill(float *x, size_t n) {
  for (size_t i = 0; i < n; i++) x[i] = (float)urand();
}

static sq_backend fake_be;
static sq_buf bufs[64];
static int nbufs;
static sq_ref R(void *p) {
  sq_buf *b = &bufs[nbufs++ % 64];
  b->be = &fake_be;
  b->bytes = 0;
  b->ptr = p;
  return sq_at(b, 0);
}

static void compare(const char *what, const float *got, const double *ref, size_t n) {
  double mx = 0, worst = 0;
  for (size_t i = 0; i < n; i++) mx = fmax(mx, fabs(ref[i]));
  for (size_t i = 0; i < n; i++) {
    double e = fabs((double)got[i] - ref[i]);
    worst = fmax(worst, e);
    if (!(e <= REL_TOL * mx + ABS_TOL))
      fail_msg("%s[%zu]: got %.8g, finite differences %.8g (max|ref| %.3g)", what, i,
               (double)got[i], ref[i], mx);
  }
  /* the reference must not be trivially zero: the test could not fail then */
  if (mx == 0.0) fail_msg("%s: reference gradient is all zeros", what);
  (void)worst;
}

/* Central differences of f over the float array x (perturbed in double via a shadow). */
typedef double (*scalar_fn)(void *user);
static void fd_grad(scalar_fn f, void *user, double *x, size_t n, double *g) {
  for (size_t i = 0; i < n; i++) {
    double keep = x[i];
    x[i] = keep + FD_H;
    double fp = f(user);
    x[i] = keep - FD_H;
    double fm = f(user);
    x[i] = keep;
    g[i] = (fp - fm) / (2 * FD_H);
  }
}
static double *to_d(const float *x, size_t n) {
  double *d = malloc(n * sizeof *d);
  for (size_t i = 0; i < n; i++) d[i] = x[i];
  return d;
}

/* ---------- cross-entropy ---------- */
typedef struct {
  int N, V;
  double *x;
  const int32_t *labels;
} ce_case;
static double ce_loss(void *u) {
  ce_case *c = u;
  double s = 0;
  int cnt = 0;
  for (int n = 0; n < c->N; n++) {
    if (c->labels[n] < 0) continue;
    const double *r = c->x + (size_t)n * c->V;
    double mx = r[0], z = 0;
    for (int v = 1; v < c->V; v++) mx = fmax(mx, r[v]);
    for (int v = 0; v < c->V; v++) z += exp(r[v] - mx);
    s += -(r[c->labels[n]] - mx - log(z));
    cnt++;
  }
  return s / cnt;
}
static void test_cross_entropy_bwd(void **state) {
  (void)state;
  enum { N = 6, V = 9 };
  float x[N * V], dx[N * V];
  int32_t labels[N] = {3, -1, 0, 8, -1, 5};
  fill(x, N * V);
  for (int i = 0; i < N * V; i++) x[i] *= 4.0f; /* peaked rows, not just near-uniform */
  memset(dx, 0x7f, sizeof dx);
  assert_int_equal(sq_host_backend_ops()->cross_entropy_bwd(&fake_be, N, V, R(x), R(labels),
                                                         1.0f / 4.0f, R(dx)),
                   SEQCL_OK);
  ce_case c = {N, V, to_d(x, N * V), labels};
  double g[N * V];
  fd_grad(ce_loss, &c, c.x, N * V, g);
  compare("dlogits", dx, g, N * V);
  for (int v = 0; v < V; v++) assert_true(dx[1 * V + v] == 0.0f && dx[4 * V + v] == 0.0f);
  free(c.x);
}

/* ---------- GRU step ---------- */
enum { GN = 4, GH = 5, GT = 3 };
typedef struct {
  double *gi, *gh, *bih, *bhh, *hp;
  const double *w, *wout; /* loss = sum w . h' + sum wout . out */
  const int32_t *lens;
  int step, reverse;
} gru_case;
static double sig(double x) { return 1 / (1 + exp(-x)); }
static double gru_loss(void *u) {
  gru_case *c = u;
  double L = 0;
  for (int n = 0; n < GN; n++) {
    int active = c->step < c->lens[n];
    int t = c->reverse ? c->lens[n] - 1 - c->step : c->step;
    for (int k = 0; k < GH; k++) {
      double hn = c->hp[n * GH + k];
      if (active) {
        const double *gi = c->gi + ((size_t)n * GT + t) * 3 * GH, *gh = c->gh + (size_t)n * 3 * GH;
        double r = sig(gi[k] + c->bih[k] + gh[k] + c->bhh[k]);
        double z = sig(gi[GH + k] + c->bih[GH + k] + gh[GH + k] + c->bhh[GH + k]);
        double nn = tanh(gi[2 * GH + k] + c->bih[2 * GH + k] + r * (gh[2 * GH + k] + c->bhh[2 * GH + k]));
        hn = (1 - z) * nn + z * hn;
        L += c->wout[((size_t)n * GT + t) * GH + k] * hn;
      }
      L += c->w[n * GH + k] * hn;
    }
  }
  return L;
}
static void run_gru_case(int reverse, int step) {
  float gi[GN * GT * 3 * GH], gh[GN * 3 * GH], bih[3 * GH], bhh[3 * GH], hp[GN * GH];
  float w[GN * GH], wout[GN * GT * GH], dh[GN * GH], dgi[GN * GT * 3 * GH], dgh[GN * 3 * GH];
  int32_t lens[GN] = {3, 1, 2, 3};
  fill(gi, sizeof gi / 4), fill(gh, sizeof gh / 4), fill(bih, 3 * GH), fill(bhh, 3 * GH);
  fill(hp, GN * GH), fill(w, GN * GH), fill(wout, GN * GT * GH);
  memcpy(dh, w, sizeof dh);
  memset(dgi, 0, sizeof dgi);
  memset(dgh, 0x7f, sizeof dgh);
  sq_gru_bwd_args a = {.N = GN, .H = GH, .gi = R(gi), .gi_sn = GT * 3 * GH, .gi_st = 3 * GH,
                       .gh = R(gh), .ld_gh = 3 * GH, .b_ih = R(bih), .b_hh = R(bhh), .h_prev = R(hp),
                       .dh = R(dh), .dout = R(wout), .dout_sn = GT * GH, .dout_st = GH,
                       .dgi = R(dgi), .dgh = R(dgh), .ld_dgh = 3 * GH, .lens = R(lens),
                       .step = step, .reverse = reverse};
  assert_int_equal(sq_host_backend_ops()->gru_gates_bwd(&fake_be, &a), SEQCL_OK);
  double *dw = to_d(w, GN * GH), *dwo = to_d(wout, GN * GT * GH);
  gru_case c = {to_d(gi, sizeof gi / 4), to_d(gh, sizeof gh / 4), to_d(bih, 3 * GH),
                to_d(bhh, 3 * GH), to_d(hp, GN * GH), dw, dwo, lens, step, reverse};
  double rgi[GN * GT * 3 * GH], rgh[GN * 3 * GH], rhp[GN * GH], rbih[3 * GH], rbhh[3 * GH];
  fd_grad(gru_loss, &c, c.gi, sizeof gi / 4, rgi);
  fd_grad(gru_loss, &c, c.gh, sizeof gh / 4, rgh);
  fd_grad(gru_loss, &c, c.hp, GN * GH, rhp);
  fd_grad(gru_loss, &c, c.bih, 3 * GH, rbih);
  fd_grad(gru_loss, &c, c.bhh, 3 * GH, rbhh);
  /* the same step with the gates the training forward kept */
  {
    float h[GN * GH], sv[GN * GT * 4 * GH], dh2[GN * GH], dgi2[GN * GT * 3 * GH], dgh2[GN * 3 * GH];
    memcpy(h, hp, sizeof h);
    memcpy(dh2, w, sizeof dh2);
    memset(dgi2, 0, sizeof dgi2);
    sq_gru_args f = {.N = GN, .H = GH, .gi = R(gi), .gi_sn = GT * 3 * GH, .gi_st = 3 * GH,
                     .gh = R(gh), .ld_gh = 3 * GH, .b_ih = R(bih), .b_hh = R(bhh), .h = R(h),
                     .out = sq_none(), .lens = R(lens), .step = step, .reverse = reverse};
    assert_int_equal(sq_host_backend_ops()->gru_fwd(&fake_be, &f, R(sv), GT * 4 * GH, 4 * GH),
                     SEQCL_OK);
    sq_gru_bwd_args b2 = a;
    b2.dh = R(dh2), b2.dgi = R(dgi2), b2.dgh = R(dgh2);
    b2.saved = R(sv), b2.sv_sn = GT * 4 * GH, b2.sv_st = 4 * GH;
    assert_int_equal(sq_host_backend_ops()->gru_gates_bwd(&fake_be, &b2), SEQCL_OK);
    compare("dgi (saved gates)", dgi2, rgi, sizeof gi / 4);
    compare("dgh (saved gates)", dgh2, rgh, sizeof gh / 4);
    compare("dh_prev (saved gates)", dh2, rhp, GN * GH);
  }
  compare("dgi", dgi, rgi, sizeof gi / 4);
  compare("dgh", dgh, rgh, sizeof gh / 4);
  compare("dh_prev", dh, rhp, GN * GH);
  /* bias gradients are the column sums of dgi / dgh (bias_grad slot) */
  float gb_ih[3 * GH] = {0}, gb_hh[3 * GH] = {0};
  assert_int_equal(sq_host_backend_ops()->bias_grad(&fake_be, GN * GT, 3 * GH, R(dgi), 3 * GH, R(gb_ih)),
                   SEQCL_OK);
  assert_int_equal(sq_host_backend_ops()->bias_grad(&fake_be, GN, 3 * GH, R(dgh), 3 * GH, R(gb_hh)),
                   SEQCL_OK);
  compare("db_ih", gb_ih, rbih, 3 * GH);
  compare("db_hh", gb_hh, rbhh, 3 * GH);
  free(c.gi), free(c.gh), free(c.bih), free(c.bhh), free(c.hp), free(dw), free(dwo);
}
static void test_gru_bwd_forward_dir(void **state) {
  (void)state;
  run_gru_case(0, 0);
  run_gru_case(0, 1); /* row 1 (len 1) inactive */
  run_gru_case(0, 2);
}
static void test_gru_bwd_reverse_dir(void **state) {
  (void)state;
  run_gru_case(1, 0);
  run_gru_case(1, 1);
  run_gru_case(1, 2);
}

/* ---------- attention ---------- */
enum { AN = 3, AS = 5, AHE = 4, AA = 6 };
typedef struct {
  sq_score kind;
  double *qp, *keys, *pkeys, *v, *bv;
  const double *wc; /* loss = sum wc . c */
  const int32_t *lens;
  double scale;
  int qw;
} attn_case;
static double attn_loss_alpha(attn_case *c, double *alpha_out) {
  double L = 0;
  for (int n = 0; n < AN; n++) {
    double e[AS], mx = -INFINITY, z = 0;
    for (int j = 0; j < c->lens[n]; j++) {
      const double *h = c->keys + ((size_t)n * AS + j) * AHE;
      double s = 0;
      if (c->kind == SQ_SCORE_ADDITIVE) {
        const double *pk = c->pkeys + ((size_t)n * AS + j) * AA;
        for (int a = 0; a < AA; a++) s += c->v[a] * tanh(pk[a] + c->qp[n * c->qw + a]);
        s += c->bv[0];
      } else {
        for (int k = 0; k < AHE; k++) s += h[k] * c->qp[n * c->qw + k];
      }
      e[j] = s * c->scale;
      mx = fmax(mx, e[j]);
    }
    for (int j = 0; j < c->lens[n]; j++) z += exp(e[j] - mx);
    for (int j = 0; j < c->lens[n]; j++) {
      double al = exp(e[j] - mx) / z;
      if (alpha_out) alpha_out[n * AS + j] = al;
      const double *h = c->keys + ((size_t)n * AS + j) * AHE;
      for (int k = 0; k < AHE; k++) L += c->wc[n * AHE + k] * al * h[k];
    }
    if (alpha_out)
      for (int j = c->lens[n]; j < AS; j++) alpha_out[n * AS + j] = 0;
  }
  return L;
}
static double attn_loss(void *u) { return attn_loss_alpha(u, NULL); }
static void run_attn_case(sq_score kind) {
  const int qw = kind == SQ_SCORE_ADDITIVE ? AA : AHE;
  float qp[AN * AA], keys[AN * AS * AHE], pkeys[AN * AS * AA], v[AA], bv[1], wc[AN * AHE];
  float alpha[AN * AS], dqp[AN * AA], dkeys[AN * AS * AHE], dpkeys[AN * AS * AA], dv[AA], dbv[1];
  int32_t lens[AN] = {5, 2, 4};
  fill(qp, AN * AA), fill(keys, AN * AS * AHE), fill(pkeys, AN * AS * AA), fill(v, AA);
  fill(bv, 1), fill(wc, AN * AHE);
  for (int i = 0; i < AN * AA; i++) qp[i] *= 2.0f; /* sharper weights */
  attn_case c = {kind, to_d(qp, AN * AA), to_d(keys, AN * AS * AHE), to_d(pkeys, AN * AS * AA),
                 to_d(v, AA), to_d(bv, 1), NULL, lens,
                 kind == SQ_SCORE_SCALED_DOT ? 1.0 / sqrt((double)AHE) : 1.0, qw};
  double *dwc = to_d(wc, AN * AHE);
  c.wc = dwc;
  double al[AN * AS];
  attn_loss_alpha(&c, al);
  for (int i = 0; i < AN * AS; i++) alpha[i] = (float)al[i];
  memset(dqp, 0, sizeof dqp), memset(dkeys, 0, sizeof dkeys), memset(dpkeys, 0, sizeof dpkeys);
  memset(dv, 0, sizeof dv), memset(dbv, 0, sizeof dbv);
  sq_attn_args a = {.kind = kind, .N = AN, .S = AS, .He = AHE, .A = AA, .qp = R(qp), .ld_qp = qw,
                    .keys = R(keys), .pkeys = R(pkeys), .v = R(v), .bv = R(bv),
                    .scale = (float)c.scale, .lens = R(lens), .mask = sq_none()};
  /* the training forward must give the oracle's weights and context */
  float alpha_f[AN * AS], cf[AN * AHE], u[AN * AS * AA];
  assert_int_equal(sq_host_backend_ops()->attn_fwd(&fake_be, &a, R(u), R(cf), AHE, R(alpha_f)),
                   SEQCL_OK);
  for (int i = 0; i < AN * AS; i++) assert_true(fabs(alpha_f[i] - al[i]) <= 1e-6);
  for (int n = 0; n < AN; n++)
    for (int k = 0; k < AHE; k++) {
      double ref = 0;
      for (int j = 0; j < lens[n]; j++) ref += al[n * AS + j] * keys[(n * AS + j) * AHE + k];
      assert_true(fabs(cf[n * AHE + k] - ref) <= 1e-6);
    }
  for (int i = 0; i < AN * AS; i++) alpha[i] = alpha_f[i];
  assert_int_equal(sq_host_backend_ops()->attn_bwd(&fake_be, &a, R(alpha),
                                                kind == SQ_SCORE_ADDITIVE ? R(u) : sq_none(), R(wc), AHE, R(dqp), qw,
                                                R(dkeys), R(dpkeys), R(dv), R(dbv)),
                   SEQCL_OK);
  double rq[AN * AA], rk[AN * AS * AHE], rpk[AN * AS * AA], rv[AA], rbv[1];
  /* qp rows have stride qw; perturb only the used part */
  double *qd = c.qp;
  fd_grad(attn_loss, &c, qd, (size_t)AN * qw, rq);
  fd_grad(attn_loss, &c, c.keys, AN * AS * AHE, rk);
  compare("dqp", dqp, rq, (size_t)AN * qw);
  compare("dkeys", dkeys, rk, AN * AS * AHE);
  for (int n = 0; n < AN; n++) /* invalid positions get nothing */
    for (int j = lens[n]; j < AS; j++)
      for (int k = 0; k < AHE; k++) assert_true(dkeys[(n * AS + j) * AHE + k] == 0.0f);
  if (kind == SQ_SCORE_ADDITIVE) {
    fd_grad(attn_loss, &c, c.pkeys, AN * AS * AA, rpk);
    fd_grad(attn_loss, &c, c.v, AA, rv);
    fd_grad(attn_loss, &c, c.bv, 1, rbv);
    compare("dpkeys", dpkeys, rpk, AN * AS * AA);
    compare("dv", dv, rv, AA);
    /* the energy bias shifts every score of a row equally: its true gradient is 0 */
    assert_true(fabs(dbv[0]) <= 1e-5);
    assert_true(fabs(rbv[0]) <= 1e-8);
  }
  free(c.qp), free(c.keys), free(c.pkeys), free(c.v), free(c.bv), free(dwc);
}
static void test_attn_bwd_additive(void **s) { (void)s; run_attn_case(SQ_SCORE_ADDITIVE); }
static void test_attn_bwd_general(void **s) { (void)s; run_attn_case(SQ_SCORE_GENERAL); }
static void test_attn_bwd_dot(void **s) { (void)s; run_attn_case(SQ_SCORE_DOT); }
static void test_attn_bwd_scaled_dot(void **s) { (void)s; run_attn_case(SQ_SCORE_SCALED_DOT); }

/* ---------- embedding, tanh, Adam, norm ---------- */
static void test_embedding_bwd(void **state) {
  (void)state;
  enum { N = 7, D = 3, V = 5, LD = 4 };
  int32_t ids[N] = {1, 4, 1, 2, 0, 2, 1};
  float dy[N * LD], dt[V * D];
  fill(dy, N * LD);
  fill(dt, V * D);
  float before[V * D];
  memcpy(before, dt, sizeof dt);
  assert_int_equal(sq_host_backend_ops()->embedding_bwd(&fake_be, N, D, R(ids), R(dy), LD, 2, R(dt)),
                   SEQCL_OK);
  for (int v = 0; v < V; v++)
    for (int k = 0; k < D; k++) {
      double ref = before[v * D + k];
      for (int n = 0; n < N; n++)
        if (ids[n] == v && v != 2) ref += dy[n * LD + k];
      assert_true(fabs(dt[v * D + k] - ref) <= 1e-6);
    }
  for (int k = 0; k < D; k++) assert_true(dt[2 * D + k] == before[2 * D + k]); /* pad row */
}

typedef struct {
  double *x;
  const double *w;
  size_t n;
} tanh_case;
static double tanh_loss(void *u) {
  tanh_case *c = u;
  double L = 0;
  for (size_t i = 0; i < c->n; i++) L += c->w[i] * tanh(c->x[i]);
  return L;
}
static void test_tanh_bwd(void **state) {
  (void)state;
  enum { N = 11 };
  float x[N], y[N], w[N], dx[N];
  fill(x, N), fill(w, N);
  for (int i = 0; i < N; i++) y[i] = tanhf(x[i] * 2), x[i] *= 2;
  assert_int_equal(sq_host_backend_ops()->tanh_bwd(&fake_be, N, R(y), R(w), R(dx)), SEQCL_OK);
  double *wd = to_d(w, N), *xd = to_d(x, N), g[N];
  tanh_case c = {xd, wd, N};
  fd_grad(tanh_loss, &c, xd, N, g);
  compare("dtanh", dx, g, N);
  free(wd), free(xd);
}

static void test_adam_matches_torch_formula(void **state) {
  (void)state;
  enum { N = 9, STEPS = 5 };
  float p[N], g[N], m[N] = {0}, v[N] = {0};
  double pd[N], md[N] = {0}, vd[N] = {0};
  fill(p, N);
  for (int i = 0; i < N; i++) pd[i] = p[i];
  const double lr = 1e-2, b1 = 0.9, b2 = 0.999, eps = 1e-8;
  for (int t = 1; t <= STEPS; t++) {
    fill(g, N);
    double bc1 = 1 - pow(b1, t), bc2 = 1 - pow(b2, t);
    assert_int_equal(sq_host_backend_ops()->adam(&fake_be, N, R(p), R(g), R(m), R(v), (float)b1,
                                              (float)b2, (float)eps, (float)(lr / bc1),
                                              (float)sqrt(bc2)),
                     SEQCL_OK);
    for (int i = 0; i < N; i++) { /* torch.optim.Adam, single-tensor path */
      md[i] = b1 * md[i] + (1 - b1) * g[i];
      vd[i] = b2 * vd[i] + (1 - b2) * g[i] * g[i];
      pd[i] -= lr / bc1 * md[i] / (sqrt(vd[i]) / sqrt(bc2) + eps);
    }
  }
  /* each step moves p by ~lr; float rounding of the update is ~1e-7 relative */
  for (int i = 0; i < N; i++) assert_true(fabs(p[i] - pd[i]) <= 1e-6);
}

static void test_sum_squares_and_scale(void **state) {
  (void)state;
  enum { N = 1000 };
  float x[N], out[1];
  fill(x, N);
  double ref = 0;
  for (int i = 0; i < N; i++) ref += (double)x[i] * x[i];
  assert_int_equal(sq_host_backend_ops()->sum_squares(&fake_be, N, R(x), R(out)), SEQCL_OK);
  assert_true(fabs(out[0] - ref) <= 1e-6 * ref);
  float keep = x[17];
  assert_int_equal(sq_host_backend_ops()->scale(&fake_be, N, R(x), 0.25f), SEQCL_OK);
  assert_true(x[17] == keep * 0.25f);
}

/* ---------- dropout ---------- */
/* Philox4x32-10 against Random123's published known answers (its
 * kat_vectors), on the host backend's generator and the oracle's. */
static void test_philox_known_answers(void **state) {
  (void)state;
  static const uint32_t kat[3][10] = {
      {0, 0, 0, 0, 0, 0, 0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8},
      {~0u, ~0u, ~0u, ~0u, ~0u, ~0u, 0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd},
      {0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344, 0xa4093822, 0x299f31d0, 0xd16cfe09,
       0x94fdcceb, 0x5001e420, 0x24126ea1}};
  for (int i = 0; i < 3; i++) {
    uint32_t a[4], b[4];
    sq_host_philox4x32_10(kat[i], kat[i] + 4, a);
    oracle_philox4x32_10(kat[i], kat[i] + 4, b);
    for (int k = 0; k < 4; k++) {
      assert_int_equal(a[k], kat[i][6 + k]);
      assert_int_equal(b[k], kat[i][6 + k]);
    }
  }
}

/* Backward of y = dropout(x) is the same op on dy: against central
 * differences of L = sum w . dropout(x) computed in double with the oracle's
 * mask, on a strided [R, C] tensor; the kept fraction must be near 1 - p. */
typedef struct {
  int R, C, ld;
  double p, *x;
  const float *w;
} drop_case;
static double drop_loss(void *u) {
  drop_case *d = u;
  double s = 0;
  for (int r = 0; r < d->R; r++)
    for (int c = 0; c < d->C; c++) {
      uint64_t e = (uint64_t)r * d->C + c;
      s += d->w[e] * d->x[(size_t)r * d->ld + c] * oracle_dropout_factor(d->p, 77, 5, 2, e);
    }
  return s;
}
static void test_dropout_bwd(void **state) {
  (void)state;
  enum { Rr = 9, Cc = 23, LD = 26, NX = Rr * LD };
  float x[NX], w[Rr * Cc], dx[NX];
  fill(x, NX);
  fill(w, Rr * Cc);
  seqcl_ctx *ctx = NULL;
  assert_int_equal(seqcl_ctx_open("cpu", &ctx), SEQCL_OK);
  sq_buf *b = NULL;
  assert_int_equal(sq_buf_alloc(ctx, sizeof w, &b), SEQCL_OK);
  assert_int_equal(sq_write(ctx, sq_at(b, 0), w, sizeof w), SEQCL_OK);
  /* dy = w, dx in place (row stride C) */
  sq_dropout_args a = {.rows = Rr, .cols = Cc, .x = sq_at(b, 0), .ldx = Cc, .y = sq_at(b, 0),
                       .ldy = Cc};
  sq_dropout_key(&a, 0.35, 77, 5, 2);
  assert_int_equal(sq_dropout(ctx, &a), SEQCL_OK);
  float got[Rr * Cc];
  assert_int_equal(sq_read(ctx, sq_at(b, 0), got, sizeof got), SEQCL_OK);
  sq_buf_free(b);
  seqcl_ctx_close(ctx);
  drop_case d = {Rr, Cc, LD, 0.35, to_d(x, NX), w};
  double g[NX];
  fd_grad(drop_loss, &d, d.x, NX, g);
  int kept = 0;
  for (int r = 0; r < Rr; r++)
    for (int c = 0; c < Cc; c++) {
      dx[r * Cc + c] = got[r * Cc + c];
      g[r * Cc + c] = g[r * LD + c];
      kept += got[r * Cc + c] != 0.0f;
    }
  compare("dropout dx", dx, g, Rr * Cc);
  /* 207 Bernoulli(0.65) draws: 134.6 expected, sd 6.9 */
  assert_true(kept > 105 && kept < 165);
  free(d.x);
}

SQ_TEST_MAIN(NULL, NULL,
      cmocka_unit_test(test_cross_entropy_bwd),   cmocka_unit_test(test_gru_bwd_forward_dir),
      cmocka_unit_test(test_gru_bwd_reverse_dir), cmocka_unit_test(test_attn_bwd_additive),
      cmocka_unit_test(test_attn_bwd_general),    cmocka_unit_test(test_attn_bwd_dot),
      cmocka_unit_test(test_attn_bwd_scaled_dot), cmocka_unit_test(test_embedding_bwd),
      cmocka_unit_test(test_tanh_bwd),            cmocka_unit_test(test_adam_matches_torch_formula),
      cmocka_unit_test(test_sum_squares_and_scale),
      cmocka_unit_test(test_philox_known_answers), cmocka_unit_test(test_dropout_bwd))
