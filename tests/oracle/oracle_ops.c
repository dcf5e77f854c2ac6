/* The oracle as a reference for the op list: unpacks a case's named inputs and
 * computes every declared output in double precision. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "oracle.h"

/* A double copy of float input `name` (NULL when absent). Owned by the pool. */
typedef struct pool {
  double *p[SQ_CASE_MAX_IN + 8];
  int n;
} pool;

static double *dbl(pool *pl, const sq_case *c, const char *name) {
  const sq_tensor *t = sq_case_in(c, name);
  if (!t || t->is_int) return NULL;
  double *d = malloc((t->n ? t->n : 1) * sizeof *d);
  if (!d) return NULL;
  for (size_t i = 0; i < t->n; i++) d[i] = t->f[i];
  pl->p[pl->n++] = d;
  return d;
}

static double *tmp(pool *pl, size_t n) {
  double *d = calloc(n ? n : 1, sizeof *d);
  if (d) pl->p[pl->n++] = d;
  return d;
}

static void pool_free(pool *pl) {
  for (int i = 0; i < pl->n; i++) free(pl->p[i]);
}

#define SH(key, dflt) sq_shape_int(&c->shape, key, dflt)

static void ref_gemm(pool *pl, const sq_case *c, double *const *ref) {
  int M = SH("M", 1), N = SH("N", 1), K = SH("K", 1), ta = SH("ta", 0) != 0, tb = SH("tb", 0) != 0;
  int batch = SH("batch", 1), pad = SH("pad", 0);
  double alpha = sq_shape_get(&c->shape, "alpha", 1), beta = sq_shape_get(&c->shape, "beta", 0);
  int lda = (ta ? M : K) + pad, ldb = (tb ? K : N) + pad, ldc = N + pad;
  size_t sa = (size_t)(ta ? K : M) * lda, sb = (size_t)(tb ? N : K) * ldb, sc = (size_t)M * ldc;
  double *A = dbl(pl, c, "A"), *B = dbl(pl, c, "B"), *C = dbl(pl, c, "C0");
  for (int b = 0; b < batch; b++) {
    oracle_gemm(ta, tb, M, N, K, alpha, A + b * sa, lda, B + b * sb, ldb, beta, C + b * sc, ldc);
    for (int i = 0; i < M; i++)
      for (int j = 0; j < N; j++)
        ref[0][((size_t)b * M + i) * N + j] = C[b * sc + (size_t)i * ldc + j];
  }
}

static void ref_linear(pool *pl, const sq_case *c, double *const *ref) {
  int R = SH("R", 1), I = SH("I", 1), O = SH("O", 1), pad = SH("pad", 0);
  oracle_linear(R, I, O, dbl(pl, c, "x"), I + pad, dbl(pl, c, "W"), dbl(pl, c, "b"), ref[0], O);
}

static int attn_hd(const sq_case *c) {
  sq_score k = (sq_score)c->op->variant;
  return k == SQ_SCORE_DOT || k == SQ_SCORE_SCALED_DOT ? SH("He", 1) : SH("Hd", 1);
}

static double *attn_energies(pool *pl, const sq_case *c) {
  int N = SH("N", 1), S = SH("S", 1), He = SH("He", 1), A = SH("A", 1);
  double *e = tmp(pl, (size_t)N * S);
  oracle_attn_scores((sq_score)c->op->variant, N, S, He, attn_hd(c), A, dbl(pl, c, "keys"),
                     dbl(pl, c, "q"), dbl(pl, c, "Wk"), dbl(pl, c, "bk"), dbl(pl, c, "Wq"),
                     dbl(pl, c, "bq"), dbl(pl, c, "v"), dbl(pl, c, "bv"), e);
  return e;
}

static void ref_scores(pool *pl, const sq_case *c, double *const *ref) {
  double *e = attn_energies(pl, c);
  memcpy(ref[0], e, c->out[0].n * sizeof *e);
}

static void ref_softmax(pool *pl, const sq_case *c, double *const *ref) {
  oracle_masked_softmax(SH("N", 1), SH("S", 1), dbl(pl, c, "x"), sq_case_ini(c, "lens"),
                        sq_case_ini(c, "mask"), ref[0]);
}

static void ref_context(pool *pl, const sq_case *c, double *const *ref) {
  oracle_context(SH("N", 1), SH("S", 1), SH("He", 1), dbl(pl, c, "alpha"), dbl(pl, c, "keys"),
                 ref[0]);
}

static void ref_fused(pool *pl, const sq_case *c, double *const *ref) {
  int N = SH("N", 1), S = SH("S", 1), He = SH("He", 1);
  double *e = attn_energies(pl, c);
  oracle_masked_softmax(N, S, e, sq_case_ini(c, "lens"), sq_case_ini(c, "mask"), ref[1]);
  oracle_context(N, S, He, ref[1], dbl(pl, c, "keys"), ref[0]);
  memcpy(ref[2], ref[0], c->out[0].n * sizeof(double));
  memcpy(ref[3], ref[1], c->out[1].n * sizeof(double));
}

static void ref_gates(pool *pl, const sq_case *c, double *const *ref) {
  int N = SH("N", 1), T = SH("T", 1), H = SH("H", 1), pad = SH("pad", 0);
  int step = SH("step", 0), rev = SH("rev", 0) != 0;
  const int32_t *lens = sq_case_ini(c, "lens");
  double *gi = dbl(pl, c, "gi"), *gh = dbl(pl, c, "gh"), *h = dbl(pl, c, "h");
  double *bi = dbl(pl, c, "b_ih"), *bh = dbl(pl, c, "b_hh");
  memset(ref[1], 0, c->out[1].n * sizeof(double));
  for (int n = 0; n < N; n++) {
    double *hn = h + (size_t)n * H;
    if (!lens || step < lens[n]) {
      int t = rev && lens ? lens[n] - 1 - step : step;
      oracle_gru_update(H, gi + ((size_t)n * T + t) * 3 * H, gh + (size_t)n * (3 * H + pad), bi,
                        bh, hn);
      memcpy(ref[1] + ((size_t)n * T + t) * H, hn, (size_t)H * sizeof *hn);
    }
    memcpy(ref[0] + (size_t)n * H, hn, (size_t)H * sizeof *hn);
  }
}

static void ref_cell(pool *pl, const sq_case *c, double *const *ref) {
  int N = SH("N", 1), In = SH("In", 1), H = SH("H", 1), pad = SH("pad", 0);
  double *h = dbl(pl, c, "h");
  oracle_gru_cell(N, In, H, dbl(pl, c, "x"), In + pad, dbl(pl, c, "W_ih"), dbl(pl, c, "W_hh"),
                  dbl(pl, c, "b_ih"), dbl(pl, c, "b_hh"), h);
  memcpy(ref[0], h, (size_t)N * H * sizeof *h);
}

static void ref_layer(pool *pl, const sq_case *c, double *const *ref) {
  static const char *const w[2][2][4] = {
      {{"W_ih_l0", "W_hh_l0", "b_ih_l0", "b_hh_l0"}, {"W_ih_l0r", "W_hh_l0r", "b_ih_l0r", "b_hh_l0r"}},
      {{"W_ih_l1", "W_hh_l1", "b_ih_l1", "b_hh_l1"}, {"W_ih_l1r", "W_hh_l1r", "b_ih_l1r", "b_hh_l1r"}}};
  static const char *const h0[2][2] = {{"h0_l0", "h0_l0r"}, {"h0_l1", "h0_l1r"}};
  int N = SH("N", 1), T = SH("T", 1), In = SH("In", 1), H = SH("H", 1), L = SH("layers", 1);
  int dirs = SH("bidi", 0) ? 2 : 1, rev = SH("rev", 0) != 0, W = dirs * H;
  const int32_t *lens = sq_case_ini(c, "lens");
  const double *in = dbl(pl, c, "x");
  for (int l = 0; l < L; l++) {
    memset(ref[l], 0, c->out[l].n * sizeof(double));
    for (int d = 0; d < dirs; d++) {
      double *h = dbl(pl, c, h0[l][d]);
      oracle_gru_layer(N, T, l == 0 ? In : W, H, in, dbl(pl, c, w[l][d][0]), dbl(pl, c, w[l][d][1]),
                       dbl(pl, c, w[l][d][2]), dbl(pl, c, w[l][d][3]), lens, dirs == 2 ? d : rev, h,
                       ref[l], W, d * H);
      memcpy(ref[L] + ((size_t)l * dirs + d) * N * H, h, (size_t)N * H * sizeof *h);
    }
    in = ref[l];
  }
}

static void ref_embedding(pool *pl, const sq_case *c, double *const *ref) {
  oracle_embedding(SH("N", 1), SH("D", 1), sq_case_ini(c, "ids"), dbl(pl, c, "table"), ref[0]);
}

static void ref_argmax(pool *pl, const sq_case *c, double *const *ref) {
  (void)pl;
  int V = SH("V", 1);
  oracle_argmax(SH("N", 1), V, sq_case_inf(c, "x"), V + SH("pad", 0), sq_case_inf(c, "bias"),
                ref[0]);
}

/* argmax, then greedy_update: a finished row stays at EOS (V / 2 in the op's
 * cases), the history gets the id (0 when the case passes none), finished
 * becomes id == EOS. */
static void ref_argmax_greedy(pool *pl, const sq_case *c, double *const *ref) {
  (void)pl;
  const int N = SH("N", 1), V = SH("V", 2), eos = V / 2, with_hist = SH("hist", 1);
  const int32_t *fin = sq_case_ini(c, "fin");
  oracle_argmax(N, V, sq_case_inf(c, "x"), V + SH("pad", 0), sq_case_inf(c, "bias"), ref[0]);
  for (int n = 0; n < N; n++) {
    if (fin[n]) ref[0][n] = eos;
    ref[1][n] = ref[0][n] == eos;
    ref[2][n] = with_hist ? ref[0][n] : 0.0;
  }
}

static void ref_log_softmax(pool *pl, const sq_case *c, double *const *ref) {
  oracle_log_softmax(SH("N", 1), SH("V", 1), dbl(pl, c, "x"), ref[0]);
}

static void ref_cross_entropy(pool *pl, const sq_case *c, double *const *ref) {
  ref[0][0] = oracle_cross_entropy(SH("N", 1), SH("V", 1), dbl(pl, c, "x"),
                                   sq_case_ini(c, "labels"));
}

/* beam_topk: the K best positions by the float logits themselves (lower id on
 * ties; -1 and -inf past V), valued by the double log-softmax. */
static void ref_beam_topk(pool *pl, const sq_case *c, double *const *ref) {
  const int N = SH("N", 1), V = SH("V", 1), K = SH("K", 1), ld = V + SH("pad", 0);
  const float *x = sq_case_inf(c, "x");
  double *row = tmp(pl, (size_t)V), *lsm = tmp(pl, (size_t)V);
  char *used = calloc((size_t)V, 1);
  if (!row || !lsm || !used) {
    free(used);
    return;
  }
  for (int n = 0; n < N; n++) {
    const float *xr = x + (size_t)n * ld;
    for (int v = 0; v < V; v++) {
      row[v] = xr[v];
      used[v] = 0;
    }
    oracle_log_softmax(1, V, row, lsm);
    for (int i = 0; i < K; i++) {
      int b = -1;
      for (int v = 0; v < V; v++)
        if (!used[v] && (b < 0 || xr[v] > xr[b])) b = v;
      if (b >= 0) used[b] = 1;
      ref[0][(size_t)n * K + i] = b >= 0 ? lsm[b] : -INFINITY;
      ref[1][(size_t)n * K + i] = b;
    }
  }
  free(used);
}

/* Philox4x32-10 written from the paper's definition (a round: the products
 * M0 c0 and M1 c2 split into high and low words, then
 * (hi1 ^ c1 ^ k0, lo1, hi0 ^ c3 ^ k1, lo0); the key grows by the Weyl
 * constants between rounds), independently of the backends' code. */
void oracle_philox4x32_10(const uint32_t ctr[4], const uint32_t key[2], uint32_t out[4]) {
  uint32_t x[4] = {ctr[0], ctr[1], ctr[2], ctr[3]}, k[2] = {key[0], key[1]};
  for (int round = 0; round < 10; round++) {
    if (round) k[0] += 0x9E3779B9u, k[1] += 0xBB67AE85u;
    uint64_t a = (uint64_t)x[0] * 0xD2511F53u, b = (uint64_t)x[2] * 0xCD9E8D57u;
    uint32_t y[4] = {(uint32_t)(b >> 32) ^ x[1] ^ k[0], (uint32_t)b,
                     (uint32_t)(a >> 32) ^ x[3] ^ k[1], (uint32_t)a};
    memcpy(x, y, sizeof x);
  }
  memcpy(out, x, sizeof x);
}

/* The dropout factor of element e of a mask: floor(p 2^32) is the threshold,
 * float(1 / (1 - p)) the scale (SPEC of sq_dropout_key). */
double oracle_dropout_factor(double p, uint64_t seed, uint64_t step, uint32_t tensor,
                             uint64_t e) {
  uint32_t ctr[4] = {(uint32_t)(e / 4), tensor, (uint32_t)step, (uint32_t)(step >> 32)};
  uint32_t key[2] = {(uint32_t)seed, (uint32_t)(seed >> 32)}, w[4];
  oracle_philox4x32_10(ctr, key, w);
  double threshold = floor(p * 4294967296.0);
  return (double)w[e % 4] >= threshold ? (double)(float)(1.0 / (1.0 - p)) : 0.0;
}

static void ref_dropout(pool *pl, const sq_case *c, double *const *ref) {
  (void)pl;
  const int R = sq_shape_int(&c->shape, "R", 1), C = sq_shape_int(&c->shape, "C", 1);
  const int ldx = C + sq_shape_int(&c->shape, "px", 0);
  const double p = sq_shape_get(&c->shape, "p", 0.3);
  const uint64_t seed = (uint64_t)sq_shape_get(&c->shape, "seed", 12345);
  const uint64_t step = (uint64_t)sq_shape_get(&c->shape, "step", 7);
  const float *x = sq_case_inf(c, "x");
  for (int r = 0; r < R; r++)
    for (int k = 0; k < C; k++) {
      uint64_t e = (uint64_t)r * (uint64_t)C + (uint64_t)k;
      ref[0][e] = (double)x[(size_t)r * ldx + k] * oracle_dropout_factor(p, seed, step, 3, e);
    }
}

static const struct {
  const char *family;
  void (*fn)(pool *, const sq_case *, double *const *);
} refs[] = {
    {"gemm", ref_gemm},           {"linear", ref_linear},         {"attn_scores", ref_scores},
    {"masked_softmax", ref_softmax}, {"context", ref_context},    {"attn_fused", ref_fused},
    {"gru_gates", ref_gates},     {"gru_cell", ref_cell},         {"gru_layer", ref_layer},
    {"embedding", ref_embedding}, {"argmax", ref_argmax},         {"log_softmax", ref_log_softmax},
    {"cross_entropy", ref_cross_entropy}, {"argmax_greedy", ref_argmax_greedy},
    {"beam_topk", ref_beam_topk}, {"dropout", ref_dropout},
};

seqcl_status oracle_reference(void *user, const sq_case *c, double *const *ref) {
  (void)user;
  if (sq_op_matches(c->op, "grad")) return oracle_grad_reference(c, ref);
  for (size_t i = 0; i < sizeof refs / sizeof refs[0]; i++)
    if (sq_op_matches(c->op, refs[i].family)) {
      pool pl = {{0}, 0};
      refs[i].fn(&pl, c, ref);
      pool_free(&pl);
      return SEQCL_OK;
    }
  return sq_fail(NULL, SEQCL_ERR_UNSUPPORTED, "the oracle has no reference for %s", c->op->name);
}

sq_reference oracle_as_reference(void) {
  sq_reference r = {oracle_reference, NULL, 0, "oracle"};
  return r;
}
