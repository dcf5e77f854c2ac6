/* Every backward slot (backend.h, the training slots) on every OpenCL device against the host
 * table, on the same seeded inputs (uniform in [-1, 1], never all zero), at
 * shapes that include 1, primes and sizes that are no multiple of 16.
 *
 * Every device tensor sits between guard regions of GUARD elements holding a
 * sentinel, and is passed at offset GUARD (so the kernels' offset arguments
 * are exercised too); after each call all guards must still hold the sentinel.
 *
 * Tolerances: |dev - host| <= RTOL * (|host| + mag) + ATOL per element.
 *  - element-wise outputs: mag = 0. Both sides compute the same float32
 *    expressions; the device's exp/tanh/sqrt are within a few ulp (OpenCL
 *    1.2 allows 3-4 ulp) and the host's tanh differs from correctly rounded
 *    by ~2e-7 absolute, which a few dependent operations grow to ~1e-6
 *    relative: RTOL = 1e-4, ATOL = 1e-6 leave a wide margin, while a wrong
 *    term (a sign, a missing factor, a wrong index) is off by O(1).
 *  - reductions (bias_grad, sum_squares, the attention sums): mag = the sum of
 *    the magnitudes of the terms (computed exactly for bias_grad and
 *    sum_squares; bounded by K * max|out| with K the number of terms for the
 *    attention sums), because a different summation order may differ by
 *    ~log2(K) ulp of that sum. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <seqcl/seqcl.h>

#include "test_devices.h"

#include "core/ctx.h"
#include "ops/ops.h"

#define GUARD 16
#define SENTINEL_BITS 0x7eadbeefu
#define RTOL 1e-4
#define ATOL 1e-6

/* ---------- seeded inputs ---------- */
static uint64_t rng_state;
static double urand(void) {
  rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
  return ((double)(rng_state >> 11) * 0x1.0p-53) * 2.0 - 1.0;
}
static int irand(int n) { return (int)((urand() + 1.0) * 0.5 * n) % n; }
static float *rnd(size_t n) {
  float *x = malloc((n ? n : 1) * sizeof *x);
  for (size_t i = 0; i < n; i++) x[i] = (float)urand();
  return x;
}

/* ---------- host side: refs onto plain memory ---------- */
static sq_backend host_be;
static sq_buf host_bufs[64];
static int nhost;
static sq_ref H(void *p) {
  if (!p) return sq_none();
  sq_buf *b = &host_bufs[nhost++ % 64];
  b->be = &host_be;
  b->bytes = 0;
  b->ptr = p;
  return sq_at(b, 0);
}

/* ---------- device side: tensors between guards ---------- */
typedef struct dev {
  sq_buf *buf;
  size_t n;
} dev;

static seqcl_ctx *cur; /* the device under test */

static dev up(const void *src, size_t n) {
  dev d = {NULL, n};
  size_t total = n + 2 * GUARD;
  uint32_t *img = malloc(total * sizeof *img);
  for (size_t i = 0; i < total; i++) img[i] = SENTINEL_BITS;
  if (src) memcpy(img + GUARD, src, n * 4);
  assert_int_equal(sq_buf_alloc(cur, total * 4, &d.buf), SEQCL_OK);
  assert_int_equal(sq_write(cur, sq_at(d.buf, 0), img, total * 4), SEQCL_OK);
  free(img);
  return d;
}
static sq_ref D(dev d) { return d.buf ? sq_at(d.buf, GUARD) : sq_none(); }
static void down(dev d) { sq_buf_free(d.buf); }

/* Reads d back, checks its guards, returns its body (malloc'd). */
static float *fetch(const char *what, dev d) {
  size_t total = d.n + 2 * GUARD;
  uint32_t *img = malloc(total * 4);
  seqcl_status st = sq_read(cur, sq_at(d.buf, 0), img, total * 4);
  if (st != SEQCL_OK) fail_msg("%s: read failed: %s", what, seqcl_ctx_message(cur));
  for (size_t i = 0; i < GUARD; i++) {
    if (img[i] != SENTINEL_BITS) fail_msg("%s: guard before the tensor overwritten at -%zu", what, GUARD - i);
    if (img[GUARD + d.n + i] != SENTINEL_BITS)
      fail_msg("%s: guard after the tensor overwritten at +%zu", what, i);
  }
  float *body = malloc((d.n ? d.n : 1) * 4);
  memcpy(body, img + GUARD, d.n * 4);
  free(img);
  return body;
}

/* Compares device output d with the host result h (see the tolerances above);
 * mag: per-element magnitude scale, or NULL for 0, or a single value when
 * mag_all >= 0. */
static void check(const char *what, dev d, const float *h, const double *mag, double mag_all) {
  float *g = fetch(what, d);
  for (size_t i = 0; i < d.n; i++) {
    double m = mag ? mag[i] : mag_all > 0 ? mag_all : 0.0;
    double tol = RTOL * (fabs((double)h[i]) + m) + ATOL;
    double e = fabs((double)g[i] - (double)h[i]);
    if (!(e <= tol))
      fail_msg("%s[%zu]: device %.9g, host %.9g (|diff| %.3g > tol %.3g)", what, i, (double)g[i],
               (double)h[i], e, tol);
  }
  free(g);
}
static void guards_only(const char *what, dev d) { free(fetch(what, d)); }

static double max_abs(const float *x, size_t n) {
  double m = 0;
  for (size_t i = 0; i < n; i++) m = fmax(m, fabs((double)x[i]));
  return m;
}

#define CALL(expr)                                                                       \
  do {                                                                                   \
    seqcl_status st_ = (expr);                                                           \
    if (st_ != SEQCL_OK) fail_msg("%s: %s", #expr, seqcl_ctx_message(cur));              \
  } while (0)

static const sq_backend_ops *hg(void) { return sq_host_backend_ops(); }

/* ---------- cross-entropy ---------- */
static void t_cross_entropy(void) {
  static const int shapes[][2] = {{1, 12}, {7, 37}, {13, 5}, {3, 1000}};
  for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++) {
    int N = shapes[s][0], V = shapes[s][1];
    float *x = rnd((size_t)N * V);
    for (int i = 0; i < N * V; i++) x[i] *= 4.0f;
    int32_t *lab = malloc(sizeof *lab * N);
    int valid = 0;
    for (int n = 0; n < N; n++) {
      lab[n] = (n % 4 == 3) ? -1 : irand(V);
      valid += lab[n] >= 0;
    }
    float scale = valid ? 1.0f / (float)valid : 0.0f;
    float *dxh = rnd((size_t)N * V);
    dev xd = up(x, (size_t)N * V), ld = up(lab, N), dxd = up(dxh, (size_t)N * V);
    hg()->cross_entropy_bwd(&host_be, N, V, H(x), H(lab), scale, H(dxh));
    CALL(sq_cross_entropy_bwd(cur, N, V, D(xd), D(ld), scale, D(dxd)));
    check("cross_entropy_bwd dx", dxd, dxh, NULL, 0);
    guards_only("cross_entropy_bwd x", xd);
    down(xd), down(ld), down(dxd);
    free(x), free(lab), free(dxh);
  }
}

/* ---------- bias ---------- */
static void t_bias(void) {
  static const int shapes[][3] = {{1, 1, 1}, {7, 61, 64}, {37, 16, 19}, {448, 13, 13}};
  for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++) {
    int rows = shapes[s][0], cols = shapes[s][1], ld = shapes[s][2];
    size_t ndy = (size_t)(rows - 1) * ld + cols;
    float *dy = rnd(ndy), *db = rnd(cols);
    double *mag = calloc(cols, sizeof *mag);
    for (int c = 0; c < cols; c++) {
      mag[c] = fabs(db[c]);
      for (int r = 0; r < rows; r++) mag[c] += fabs(dy[(size_t)r * ld + c]);
    }
    dev dyd = up(dy, ndy), dbd = up(db, cols);
    hg()->bias_grad(&host_be, rows, cols, H(dy), ld, H(db));
    CALL(sq_bias_grad(cur, rows, cols, D(dyd), ld, D(dbd)));
    check("bias_grad db", dbd, db, mag, 0);
    down(dyd), down(dbd);
    free(dy), free(db), free(mag);
  }
}

/* ---------- tanh, scale, Adam, sum of squares ---------- */
static void t_tanh(void) {
  static const size_t counts[] = {1, 61, 1000};
  for (size_t s = 0; s < 3; s++) {
    size_t n = counts[s];
    float *y = rnd(n), *dy = rnd(n), *dx = rnd(n);
    dev yd = up(y, n), dyd = up(dy, n), dxd = up(dx, n);
    hg()->tanh_bwd(&host_be, n, H(y), H(dy), H(dx));
    CALL(sq_tanh_bwd(cur, n, D(yd), D(dyd), D(dxd)));
    check("tanh_bwd dx", dxd, dx, NULL, 0);
    down(yd), down(dyd), down(dxd);
    free(y), free(dy), free(dx);
  }
}

static void t_scale(void) {
  static const size_t counts[] = {1, 61, 1000};
  for (size_t s = 0; s < 3; s++) {
    size_t n = counts[s];
    float *x = rnd(n);
    dev xd = up(x, n);
    hg()->scale(&host_be, n, H(x), 0.37f);
    CALL(sq_scale(cur, n, D(xd), 0.37f));
    check("scale x", xd, x, NULL, 0);
    down(xd);
    free(x);
  }
}

static void t_adam(void) {
  static const size_t counts[] = {1, 61, 1000};
  for (size_t s = 0; s < 3; s++) {
    size_t n = counts[s];
    float *p = rnd(n), *g = rnd(n), *m = rnd(n), *v = rnd(n);
    for (size_t i = 0; i < n; i++) v[i] = fabsf(v[i]);
    dev pd = up(p, n), gd = up(g, n), md = up(m, n), vd = up(v, n);
    hg()->adam(&host_be, n, H(p), H(g), H(m), H(v), 0.9f, 0.999f, 1e-8f, 1e-3f / 0.1f,
               sqrtf(0.001f));
    CALL(sq_adam_update(cur, n, D(pd), D(gd), D(md), D(vd), 0.9f, 0.999f, 1e-8f, 1e-3f / 0.1f,
                      sqrtf(0.001f)));
    check("adam p", pd, p, NULL, 0);
    check("adam m", md, m, NULL, 0);
    check("adam v", vd, v, NULL, 0);
    guards_only("adam g", gd);
    down(pd), down(gd), down(md), down(vd);
    free(p), free(g), free(m), free(v);
  }
}

static void t_sum_squares(void) {
  static const size_t counts[] = {1, 61, 4099, 100003};
  for (size_t s = 0; s < 4; s++) {
    size_t n = counts[s];
    float *x = rnd(n), out = 0.5f;
    dev xd = up(x, n), od = up(&out, 1);
    hg()->sum_squares(&host_be, n, H(x), H(&out));
    CALL(sq_sum_squares(cur, n, D(xd), D(od)));
    check("sum_squares out", od, &out, NULL, out); /* terms are >= 0: their sum is out */
    down(xd), down(od);
    free(x);
  }
}

/* ---------- embedding ---------- */
static void t_embedding(void) {
  static const int shapes[][4] = {/* N, D, V, pad */ {1, 1, 12, -1}, {37, 16, 12, 3},
                                  {200, 61, 37, -1}, {13, 7, 5, 0}};
  for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++) {
    int N = shapes[s][0], Dm = shapes[s][1], V = shapes[s][2], pad = shapes[s][3];
    int ld = Dm + 3;
    int32_t *ids = malloc(sizeof *ids * N);
    for (int n = 0; n < N; n++) ids[n] = irand(V);
    size_t ndy = (size_t)(N - 1) * ld + Dm;
    float *dy = rnd(ndy), *dt = rnd((size_t)V * Dm);
    dev idd = up(ids, N), dyd = up(dy, ndy), dtd = up(dt, (size_t)V * Dm);
    hg()->embedding_bwd(&host_be, N, Dm, H(ids), H(dy), ld, pad, H(dt));
    CALL(sq_embedding_bwd(cur, N, Dm, D(idd), D(dyd), ld, pad, D(dtd)));
    /* same terms in the same order as the host: element-wise tolerance */
    check("embedding_bwd dtable", dtd, dt, NULL, 0);
    down(idd), down(dyd), down(dtd);
    free(ids), free(dy), free(dt);
  }
}

/* ---------- GRU ---------- */
typedef struct gru_case {
  int N, H, Tm, step, reverse, use_lens, bias, use_sv, use_dout;
} gru_case;

static const gru_case gru_cases[] = {
    {1, 1, 1, 0, 0, 0, 1, 1, 1},  {7, 16, 4, 2, 0, 1, 1, 1, 1}, {7, 16, 4, 1, 1, 1, 0, 0, 1},
    {3, 61, 4, 0, 1, 1, 1, 0, 0}, {5, 13, 3, 2, 0, 0, 1, 0, 1}, {13, 61, 5, 3, 1, 1, 1, 1, 0},
};

/* The inputs the GRU forward and backward share, drawn in this order: lens
 * (1..Tm), gi [N, Tm, 3H], gh [N, 3H] (ld 3H + 2), the two biases; on the
 * host and on the device. */
typedef struct gru_io {
  int32_t *lens;
  float *gi, *gh, *bih, *bhh;
  size_t ngi, ngh;
  dev lensd, gid, ghd, bihd, bhhd;
} gru_io;

static gru_io gru_inputs(const gru_case *k) {
  gru_io io;
  const int N = k->N, G = 3 * k->H, Tm = k->Tm;
  io.lens = malloc(sizeof *io.lens * N);
  for (int n = 0; n < N; n++) io.lens[n] = 1 + irand(Tm);
  io.ngi = (size_t)N * Tm * G, io.ngh = (size_t)N * (G + 2);
  io.gi = rnd(io.ngi), io.gh = rnd(io.ngh), io.bih = rnd(G), io.bhh = rnd(G);
  io.gid = up(io.gi, io.ngi), io.ghd = up(io.gh, io.ngh), io.bihd = up(io.bih, G);
  io.bhhd = up(io.bhh, G), io.lensd = up(io.lens, N);
  return io;
}

static void gru_free(gru_io *io) {
  down(io->gid), down(io->ghd), down(io->bihd), down(io->bhhd), down(io->lensd);
  free(io->gi), free(io->gh), free(io->bih), free(io->bhh), free(io->lens);
}

/* The shared inputs as the case passes them: on the host, or on the device. */
typedef struct gru_refs {
  sq_ref gi, gh, b_ih, b_hh, lens;
} gru_refs;

static gru_refs gru_host_refs(const gru_case *k, gru_io *io) {
  return (gru_refs){H(io->gi), H(io->gh), k->bias ? H(io->bih) : sq_none(),
                    k->bias ? H(io->bhh) : sq_none(), k->use_lens ? H(io->lens) : sq_none()};
}

static gru_refs gru_dev_refs(const gru_case *k, const gru_io *io) {
  return (gru_refs){D(io->gid), D(io->ghd), k->bias ? D(io->bihd) : sq_none(),
                    k->bias ? D(io->bhhd) : sq_none(), k->use_lens ? D(io->lensd) : sq_none()};
}

static void t_gru_fwd(void) {
  for (size_t c = 0; c < sizeof gru_cases / sizeof *gru_cases; c++) {
    const gru_case *k = &gru_cases[c];
    const int N = k->N, Hh = k->H, G = 3 * Hh, Tm = k->Tm;
    gru_io io = gru_inputs(k);
    size_t nsv = (size_t)N * Tm * 4 * Hh, nout = (size_t)N * Tm * (Hh + 1);
    float *h = rnd((size_t)N * Hh), *out = rnd(nout), *sv = rnd(nsv);
    dev hd = up(h, (size_t)N * Hh), outd = up(out, nout), svd = up(sv, nsv);
    sq_gru_args a = {.N = N, .H = Hh, .gi_sn = (size_t)Tm * G, .gi_st = (size_t)G,
                     .ld_gh = G + 2, .out_sn = (size_t)Tm * (Hh + 1), .out_st = (size_t)Hh + 1,
                     .step = k->step, .reverse = k->reverse};
    sq_gru_args ah = a, ad = a;
    gru_refs rh = gru_host_refs(k, &io), rd = gru_dev_refs(k, &io);
    ah.gi = rh.gi, ah.gh = rh.gh, ah.b_ih = rh.b_ih, ah.b_hh = rh.b_hh, ah.lens = rh.lens;
    ah.h = H(h), ah.out = H(out);
    ad.gi = rd.gi, ad.gh = rd.gh, ad.b_ih = rd.b_ih, ad.b_hh = rd.b_hh, ad.lens = rd.lens;
    ad.h = D(hd), ad.out = D(outd);
    hg()->gru_fwd(&host_be, &ah, k->use_sv ? H(sv) : sq_none(), (size_t)Tm * 4 * Hh,
                  (size_t)4 * Hh);
    CALL(sq_gru_fwd(cur, &ad, k->use_sv ? D(svd) : sq_none(), (size_t)Tm * 4 * Hh,
                         (size_t)4 * Hh));
    check("gru_fwd h", hd, h, NULL, 0);
    check("gru_fwd out", outd, out, NULL, 0);
    check("gru_fwd saved", svd, sv, NULL, 0);
    guards_only("gru_fwd gi", io.gid);
    down(hd), down(outd), down(svd);
    free(h), free(out), free(sv);
    gru_free(&io);
  }
}

static void t_gru_bwd(void) {
  for (size_t c = 0; c < sizeof gru_cases / sizeof *gru_cases; c++) {
    const gru_case *k = &gru_cases[c];
    const int N = k->N, Hh = k->H, G = 3 * Hh, Tm = k->Tm;
    gru_io io = gru_inputs(k);
    size_t nsv = (size_t)N * Tm * 4 * Hh;
    size_t nout = (size_t)N * Tm * (Hh + 1), ndgh = (size_t)N * (G + 1);
    float *hp = rnd((size_t)N * Hh), *dh = rnd((size_t)N * Hh), *dout = rnd(nout);
    float *dgi = rnd(io.ngi), *dgh = rnd(ndgh), *sv = rnd(nsv);
    /* kept gates must be what the forward keeps: r, z in (0, 1), n in (-1, 1) */
    for (size_t i = 0; i < nsv; i++)
      if ((i / Hh) % 4 < 2) sv[i] = 0.5f + 0.5f * sv[i];
    dev hpd = up(hp, (size_t)N * Hh), dhd = up(dh, (size_t)N * Hh), doutd = up(dout, nout);
    dev dgid = up(dgi, io.ngi), dghd = up(dgh, ndgh), svd = up(sv, nsv);
    sq_gru_bwd_args a = {.N = N, .H = Hh, .gi_sn = (size_t)Tm * G, .gi_st = (size_t)G,
                         .ld_gh = G + 2, .dout_sn = (size_t)Tm * (Hh + 1),
                         .dout_st = (size_t)Hh + 1, .ld_dgh = G + 1, .step = k->step,
                         .reverse = k->reverse, .sv_sn = (size_t)Tm * 4 * Hh,
                         .sv_st = (size_t)4 * Hh};
    sq_gru_bwd_args ah = a, ad = a;
    gru_refs rh = gru_host_refs(k, &io), rd = gru_dev_refs(k, &io);
    ah.gi = rh.gi, ah.gh = rh.gh, ah.b_ih = rh.b_ih, ah.b_hh = rh.b_hh, ah.lens = rh.lens;
    ah.h_prev = H(hp), ah.dh = H(dh), ah.dgi = H(dgi), ah.dgh = H(dgh);
    ah.dout = k->use_dout ? H(dout) : sq_none();
    ah.saved = k->use_sv ? H(sv) : sq_none();
    ad.gi = rd.gi, ad.gh = rd.gh, ad.b_ih = rd.b_ih, ad.b_hh = rd.b_hh, ad.lens = rd.lens;
    ad.h_prev = D(hpd), ad.dh = D(dhd), ad.dgi = D(dgid), ad.dgh = D(dghd);
    ad.dout = k->use_dout ? D(doutd) : sq_none();
    ad.saved = k->use_sv ? D(svd) : sq_none();
    hg()->gru_gates_bwd(&host_be, &ah);
    CALL(sq_gru_gates_bwd(cur, &ad));
    check("gru_gates_bwd dh", dhd, dh, NULL, 0);
    check("gru_gates_bwd dgi", dgid, dgi, NULL, 0);
    check("gru_gates_bwd dgh", dghd, dgh, NULL, 0);
    guards_only("gru_gates_bwd dout", doutd);
    down(hpd), down(dhd), down(doutd), down(dgid), down(dghd), down(svd);
    free(hp), free(dh), free(dout), free(dgi), free(dgh), free(sv);
    gru_free(&io);
  }
}

/* ---------- attention ---------- */
typedef struct attn_case {
  sq_score kind;
  int N, S, He, A, use_mask, use_u, use_bv;
} attn_case;

static const attn_case attn_cases[] = {
    {SQ_SCORE_ADDITIVE, 1, 1, 1, 5, 0, 1, 1},     {SQ_SCORE_ADDITIVE, 7, 13, 16, 64, 1, 1, 1},
    {SQ_SCORE_ADDITIVE, 3, 37, 61, 5, 0, 0, 0},   {SQ_SCORE_GENERAL, 1, 1, 1, 0, 0, 0, 0},
    {SQ_SCORE_GENERAL, 7, 13, 16, 0, 1, 0, 0},    {SQ_SCORE_DOT, 3, 37, 61, 0, 0, 0, 0},
    {SQ_SCORE_SCALED_DOT, 7, 13, 16, 0, 1, 0, 0},
};

typedef struct attn_io {
  float *qp, *keys, *pkeys, *v, *bv;
  int32_t *lens, *mask;
  size_t nqp, nkeys, npk;
  int ld_qp, width;
} attn_io;

static attn_io attn_inputs(const attn_case *k) {
  attn_io io;
  const int N = k->N, S = k->S;
  io.width = k->kind == SQ_SCORE_ADDITIVE ? k->A : k->He;
  io.ld_qp = io.width + 3;
  io.nqp = (size_t)(N - 1) * io.ld_qp + io.width;
  io.nkeys = (size_t)N * S * k->He;
  io.npk = (size_t)N * S * (k->A ? k->A : 1);
  io.qp = rnd(io.nqp), io.keys = rnd(io.nkeys), io.pkeys = rnd(io.npk);
  io.v = rnd(k->A ? k->A : 1), io.bv = rnd(1);
  io.lens = malloc(sizeof(int32_t) * N);
  io.mask = malloc(sizeof(int32_t) * N * S);
  for (int n = 0; n < N; n++) io.lens[n] = n == 0 ? S : 1 + irand(S);
  for (int i = 0; i < N * S; i++) io.mask[i] = (i % S == 0) || irand(4) != 0;
  return io;
}
static void attn_free(attn_io *io) {
  free(io->qp), free(io->keys), free(io->pkeys), free(io->v), free(io->bv), free(io->lens);
  free(io->mask);
}

typedef struct attn_dev {
  dev qp, keys, pkeys, v, bv, lens, mask;
} attn_dev;

static attn_dev attn_upload(const attn_case *k, const attn_io *io) {
  attn_dev d;
  d.qp = up(io->qp, io->nqp), d.keys = up(io->keys, io->nkeys), d.pkeys = up(io->pkeys, io->npk);
  d.v = up(io->v, k->A ? k->A : 1), d.bv = up(io->bv, 1), d.lens = up(io->lens, k->N);
  d.mask = up(io->mask, (size_t)k->N * k->S);
  return d;
}
static void attn_down(attn_dev *d) {
  down(d->qp), down(d->keys), down(d->pkeys), down(d->v), down(d->bv), down(d->lens);
  down(d->mask);
}

static void attn_args_pair(const attn_case *k, attn_io *io, attn_dev *d, sq_attn_args *ah,
                           sq_attn_args *ad) {
  const int add = k->kind == SQ_SCORE_ADDITIVE;
  sq_attn_args a = {.kind = k->kind, .N = k->N, .S = k->S, .He = k->He, .A = k->A,
                    .ld_qp = io->ld_qp,
                    .scale = k->kind == SQ_SCORE_SCALED_DOT ? 1.0f / sqrtf((float)k->He) : 1.0f};
  *ah = a, *ad = a;
  ah->qp = H(io->qp), ah->keys = H(io->keys), ah->lens = H(io->lens);
  ah->pkeys = add ? H(io->pkeys) : sq_none(), ah->v = add ? H(io->v) : sq_none();
  ah->bv = add && k->use_bv ? H(io->bv) : sq_none();
  ah->mask = k->use_mask ? H(io->mask) : sq_none();
  ad->qp = D(d->qp), ad->keys = D(d->keys), ad->lens = D(d->lens);
  ad->pkeys = add ? D(d->pkeys) : sq_none(), ad->v = add ? D(d->v) : sq_none();
  ad->bv = add && k->use_bv ? D(d->bv) : sq_none();
  ad->mask = k->use_mask ? D(d->mask) : sq_none();
}

/* One attention case's inputs on both sides and its argument pair. */
typedef struct attn_run {
  attn_io io;
  attn_dev d;
  sq_attn_args ah, ad;
} attn_run;

static void attn_begin(const attn_case *k, attn_run *r) {
  r->io = attn_inputs(k);
  r->d = attn_upload(k, &r->io);
  attn_args_pair(k, &r->io, &r->d, &r->ah, &r->ad);
}

static void attn_end(attn_run *r) {
  attn_down(&r->d);
  attn_free(&r->io);
}

/* The forward's outputs, drawn after the inputs: the context cc [N, He]
 * (ld_c = He + 2), alpha [N, S], u [N, S, A]. */
typedef struct attn_out {
  int ld_c;
  size_t nc, nu;
  float *cc, *alpha, *u;
} attn_out;

static attn_out attn_outputs(const attn_case *k) {
  attn_out o;
  o.ld_c = k->He + 2;
  o.nc = (size_t)(k->N - 1) * o.ld_c + k->He, o.nu = (size_t)k->N * k->S * (k->A ? k->A : 1);
  o.cc = rnd(o.nc), o.alpha = rnd((size_t)k->N * k->S), o.u = rnd(o.nu);
  return o;
}

static void attn_out_free(attn_out *o) { free(o->cc), free(o->alpha), free(o->u); }

static void t_attn_fwd(void) {
  for (size_t c = 0; c < sizeof attn_cases / sizeof *attn_cases; c++) {
    const attn_case *k = &attn_cases[c];
    const int N = k->N, S = k->S;
    attn_run r;
    attn_begin(k, &r);
    attn_out o = attn_outputs(k);
    dev cd = up(o.cc, o.nc), ald = up(o.alpha, (size_t)N * S), ud = up(o.u, o.nu);
    sq_ref uh = k->use_u ? H(o.u) : sq_none(), udr = k->use_u ? D(ud) : sq_none();
    hg()->attn_fwd(&host_be, &r.ah, uh, H(o.cc), o.ld_c, H(o.alpha));
    CALL(sq_attn_fwd(cur, &r.ad, udr, D(cd), o.ld_c, D(ald)));
    /* softmax and context sum over S terms of magnitude <= 1 * |key| <= 1 */
    check("attn_fwd alpha", ald, o.alpha, NULL, 0);
    check("attn_fwd c", cd, o.cc, NULL, 1.0);
    check("attn_fwd u", ud, o.u, NULL, 0);
    down(cd), down(ald), down(ud);
    attn_out_free(&o);
    attn_end(&r);
  }
}

static void t_attn_bwd(void) {
  for (size_t c = 0; c < sizeof attn_cases / sizeof *attn_cases; c++) {
    const attn_case *k = &attn_cases[c];
    const int N = k->N, S = k->S, He = k->He, A = k->A;
    const int add = k->kind == SQ_SCORE_ADDITIVE;
    attn_run r;
    attn_begin(k, &r);
    const attn_io io = r.io;
    /* alpha and u of the host forward: the backward sees what training gives it */
    attn_out o = attn_outputs(k);
    float *alpha = o.alpha, *u = o.u;
    hg()->attn_fwd(&host_be, &r.ah, add ? H(u) : sq_none(), H(o.cc), o.ld_c, H(alpha));
    const int ld_dc = He + 1, ld_dqp = io.width + 2;
    size_t ndc = (size_t)(N - 1) * ld_dc + He, ndqp = (size_t)(N - 1) * ld_dqp + io.width;
    float *dc = rnd(ndc), *dqp = rnd(ndqp), *dkeys = rnd(io.nkeys), *dpk = rnd(io.npk);
    float *dv = rnd(A ? A : 1), *dbv = rnd(1);
    dev ald = up(alpha, (size_t)N * S), ud = up(u, o.nu), dcd = up(dc, ndc), dqpd = up(dqp, ndqp);
    dev dkd = up(dkeys, io.nkeys), dpkd = up(dpk, io.npk), dvd = up(dv, A ? A : 1);
    dev dbvd = up(dbv, 1);
    sq_ref uh = k->use_u ? H(u) : sq_none(), udr = k->use_u ? D(ud) : sq_none();
    hg()->attn_bwd(&host_be, &r.ah, H(alpha), uh, H(dc), ld_dc, H(dqp), ld_dqp, H(dkeys),
                   add ? H(dpk) : sq_none(), add ? H(dv) : sq_none(),
                   add && k->use_bv ? H(dbv) : sq_none());
    CALL(sq_attn_bwd(cur, &r.ad, D(ald), udr, D(dcd), ld_dc, D(dqpd), ld_dqp, D(dkd),
                      add ? D(dpkd) : sq_none(), add ? D(dvd) : sq_none(),
                      add && k->use_bv ? D(dbvd) : sq_none()));
    /* sums over j (S terms) per row; dv, dbv over N * S terms */
    check("attn_bwd dqp", dqpd, dqp, NULL, S * max_abs(dqp, ndqp));
    check("attn_bwd dkeys", dkd, dkeys, NULL, 4 * max_abs(dkeys, io.nkeys));
    check("attn_bwd dpkeys", dpkd, dpk, NULL, 4 * max_abs(dpk, io.npk));
    check("attn_bwd dv", dvd, dv, NULL, (double)N * S * max_abs(dv, A ? A : 1));
    check("attn_bwd dbv", dbvd, dbv, NULL, (double)N * S * max_abs(dbv, 1));
    guards_only("attn_bwd dc", dcd);
    guards_only("attn_bwd alpha", ald);
    down(ald), down(ud), down(dcd), down(dqpd), down(dkd), down(dpkd), down(dvd), down(dbvd);
    free(dc), free(dqp), free(dkeys), free(dpk), free(dv), free(dbv);
    attn_out_free(&o);
    attn_end(&r);
  }
}

/* ---------- registration ---------- */
typedef struct slot_test {
  const char *name;
  void (*run)(void);
} slot_test;

static const slot_test slots[] = {
    {"cross_entropy_bwd", t_cross_entropy}, {"bias_grad", t_bias},
    {"tanh_bwd", t_tanh},                   {"gru_fwd", t_gru_fwd},
    {"gru_gates_bwd", t_gru_bwd},           {"attn_fwd", t_attn_fwd},
    {"attn_bwd", t_attn_bwd},               {"embedding_bwd", t_embedding},
    {"sum_squares", t_sum_squares},         {"scale", t_scale},
    {"adam", t_adam},
};
#define NSLOTS (sizeof slots / sizeof *slots)

typedef struct device_test {
  seqcl_ctx *ctx;
  const char *selector;
  const char *open_error;
  const slot_test *slot;
} device_test;

static void run_slot(void **state) {
  device_test *t = *state;
  if (!t->ctx) fail_msg("%s: could not open the device: %s", t->selector, t->open_error);
  cur = t->ctx;
  rng_state = 0x5eed0000u + (uint64_t)(t->slot - slots);
  nhost = 0;
  t->slot->run();
}

int main(void) {
  if (test_devices_setup(NULL) != 0) return 1;
  const size_t ndev = device_count;
  size_t nopencl = 0;
  for (size_t d = 0; d < ndev; d++) nopencl += devices[d].type != SEQCL_DEVICE_HOST;
  if (nopencl == 0) {
    printf("no OpenCL device: nothing to compare with the host\n");
    test_devices_teardown(NULL);
    return 77;
  }
  seqcl_ctx **ctxs = calloc(ndev, sizeof *ctxs);
  char (*errors)[512] = calloc(ndev, sizeof *errors);
  device_test *tests = calloc(nopencl * NSLOTS, sizeof *tests);
  struct CMUnitTest *units = calloc(nopencl * NSLOTS, sizeof *units);
  char **names = calloc(nopencl * NSLOTS, sizeof *names);
  if (!ctxs || !errors || !tests || !units || !names) return 1;
  size_t n = 0;
  for (size_t d = 0; d < ndev; d++) {
    if (devices[d].type == SEQCL_DEVICE_HOST) continue;
    if (seqcl_ctx_open_info(&devices[d], &ctxs[d]) != SEQCL_OK)
      snprintf(errors[d], sizeof errors[d], "%s", seqcl_last_message());
    printf("device %s: %s (%s)\n", devices[d].selector, devices[d].name, devices[d].platform);
    for (size_t s = 0; s < NSLOTS; s++, n++) {
      tests[n] = (device_test){ctxs[d], devices[d].selector, errors[d], &slots[s]};
      names[n] = test_unit_name(&devices[d], slots[s].name);
      if (!names[n]) return 1;
      units[n].name = names[n];
      units[n].test_func = run_slot;
      units[n].initial_state = &tests[n];
    }
  }
  int rc = _cmocka_run_group_tests("grad_devices", units, n, NULL, NULL);
  for (size_t d = 0; d < ndev; d++) seqcl_ctx_close(ctxs[d]);
  for (size_t i = 0; i < n; i++) free(names[i]);
  free(names), free(units), free(tests), free(errors), free(ctxs);
  test_devices_teardown(NULL);
  return rc;
}
