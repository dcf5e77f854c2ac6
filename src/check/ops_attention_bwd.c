/* Op list entries of the backward slots (train/grad.h): cross-entropy, bias,
 * tanh, the GRU step (forward keeping its gates, and backward), embedding,
 * linear (three GEMMs and a bias sum), sum of squares, scale and Adam.
 *
 * Every output that the slot accumulates into (+=) or updates in place starts
 * from random values (inputs named *0), so a kernel that overwrites instead of
 * accumulating fails. */
#include <stdlib.h>
#include <string.h>

#include "check/opdefs.h"
#include "check/ops_all.h"
#include "train/grad.h"

#define SH(key, dflt) sq_shape_int(&c->shape, key, dflt)

/* Gate tolerance as gru_gates: OpenCL C allows tanh 5 ulp and exp 3 ulp. */
#define GATE_ABS 1e-6
#define GATE_REL 4e-5

#define RUN_WRAPPER(name)                                                                      \
  static seqcl_status name(seqcl_ctx *ctx, const sq_case *c, double *const *got, char *fault,  \
                           size_t cap) {                                                       \
    sq_arena a;                                                                                \
    sq_arena_init(&a, ctx);                                                                    \
    seqcl_status st = name##_in(&a, c, got, fault, cap);                                       \
    sq_arena_release(&a);                                                                      \
    return st;                                                                                 \
  }

/* ------------------------------------------------- grad.cross_entropy ---- */
/* Shape keys: N V, big (row 0 near +1e4, row 1 a mix of +-1e4), noval (every
 * row ignored). The scale is 1 / (number of valid rows), as training passes it. */
float sq_grad_ce_scale(const sq_case *c);
float sq_grad_ce_scale(const sq_case *c) {
  const int32_t *labels = sq_case_ini(c, "labels");
  int valid = 0;
  for (int n = 0; n < SH("N", 1); n++) valid += labels[n] >= 0;
  return valid ? 1.0f / (float)valid : 1.0f;
}

static seqcl_status ce_gen(sq_case *c, sq_rng *r) {
  SQ_DIM(c, N, "N", 1, 1, SQ_MAXDIM);
  SQ_DIM(c, V, "V", 1, 1, SQ_MAXDIM);
  float *x = sq_gen_f(c, r, "x", (size_t)N * V, 4.0f);
  int32_t *labels = sq_case_i(c, "labels", (size_t)N);
  SQ_NEED(x && labels);
  if (SH("big", 0)) {
    for (int v = 0; v < V; v++) x[v] += 1e4f;
    if (N > 1)
      for (int v = 0; v < V; v++) x[V + v] += sq_rng_int(r, 0, 1) ? 1e4f : -1e4f;
  }
  int none = SH("noval", 0);
  for (int n = 0; n < N; n++) {
    labels[n] = sq_rng_int(r, 0, V - 1);
    if (none || n % 3 == 1) labels[n] = n % 2 ? -100 : -1;
  }
  if (!none) labels[0] = V - 1;
  SQ_NEED(sq_case_out(c, "dx", (size_t)N * V, 0) >= 0);
  return SEQCL_OK;
}

static seqcl_status ce_run_in(sq_arena *a, const sq_case *c, double *const *got, char *fault,
                              size_t cap) {
  int N = SH("N", 1), V = SH("V", 1);
  sq_ref x = sq_arena_in_named(a, c, "x"), labels = sq_arena_in_named(a, c, "labels");
  sq_ref dx = sq_arena_out(a, "dx", (size_t)N * V, NULL);
  SQ_TRY(a->st);
  SQ_TRY(sq_grad_cross_entropy(a->ctx, N, V, x, labels, sq_grad_ce_scale(c), dx));
  SQ_TRY(sq_finish_run(a, fault, cap));
  return sq_arena_fetch(a, dx, c->out[0].n, 0, got[0]);
}
RUN_WRAPPER(ce_run)

/* softmax_j's relative error: the rounding of x_j - max carried through exp
 * (u |x_j - max|), the sum's terms likewise (u max|x_k - max|), exp's 3 ulp, a
 * tree sum and the scaling; ignored rows must be exactly 0. */
static void ce_tol(const sq_case *c, int k, double *const *ref, double *tol) {
  int N = SH("N", 1), V = SH("V", 1);
  const float *x = sq_case_inf(c, "x");
  const int32_t *labels = sq_case_ini(c, "labels");
  double scale = sq_grad_ce_scale(c);
  for (int n = 0; n < N; n++) {
    const float *row = x + (size_t)n * V;
    double mx = -INFINITY, dmax = 0;
    for (int v = 0; v < V; v++) mx = row[v] > mx ? row[v] : mx;
    for (int v = 0; v < V; v++)
      if (mx - row[v] < 104 && mx - row[v] > dmax) dmax = mx - row[v];
    for (int v = 0; v < V; v++) {
      size_t e = (size_t)n * V + v;
      if (labels[n] < 0) {
        tol[e] = 0;
        continue;
      }
      double p = fabs(ref[k][e] / scale + (v == labels[n]));
      tol[e] = scale * p * ((10 + 2 * sq_ceil_log2(V)) * SQ_EPS + SQ_U * (mx - row[v] + dmax)) +
               2 * SQ_EPS * fabs(ref[k][e]);
    }
  }
}

static const char *const ce_shapes[] = {"N=1,V=1",         "N=1,V=7",    "N=7,V=13",
                                        "N=37,V=61,big=1", "N=5,V=1000", "N=13,V=33,noval=1",
                                        "N=200,V=517",     NULL};
static const char *const ce_quick[] = {"N=7,V=13", NULL};

const sq_op sq_op_grad_cross_entropy = {
    "grad.cross_entropy",
    "scale p_j ((10 + 2 ceil(log2 V)) eps + u (|x_j - max| + max_k |x_k - max|)) + 2 eps |dx_j|: "
    "the softmax's relative error (rounded differences through exp, a tree sum, the scaling) "
    "and the one-hot subtraction; ignored rows (-1, -100) exactly 0",
    ce_shapes, ce_quick, 0, ce_gen, ce_run, ce_tol, NULL};

/* --------------------------------------------------------- grad.bias ---- */
/* Shape keys: R C (rows, columns), pad (extra row stride of dy). db += column sums. */
static seqcl_status bias_gen(sq_case *c, sq_rng *r) {
  SQ_DIM(c, R, "R", 1, 1, SQ_MAXDIM);
  SQ_DIM(c, C, "C", 1, 1, SQ_MAXDIM);
  SQ_DIM(c, pad, "pad", 0, 0, 4096);
  SQ_NEED(sq_gen_f(c, r, "dy", (size_t)R * (C + pad), 1.0f));
  SQ_NEED(sq_gen_f(c, r, "db0", (size_t)C, 1.0f));
  SQ_NEED(sq_case_out(c, "db", (size_t)C, 0) >= 0);
  return SEQCL_OK;
}

static seqcl_status bias_run_in(sq_arena *a, const sq_case *c, double *const *got, char *fault,
                                size_t cap) {
  int R = SH("R", 1), C = SH("C", 1), pad = SH("pad", 0);
  sq_ref dy = sq_arena_in_named(a, c, "dy");
  sq_ref db = sq_arena_out(a, "db", (size_t)C, sq_case_inf(c, "db0"));
  SQ_TRY(a->st);
  SQ_TRY(sq_grad_bias(a->ctx, R, C, dy, C + pad, db));
  SQ_TRY(sq_finish_run(a, fault, cap));
  return sq_arena_fetch(a, db, c->out[0].n, 0, got[0]);
}
RUN_WRAPPER(bias_run)

static void bias_tol(const sq_case *c, int k, double *const *ref, double *tol) {
  (void)k, (void)ref;
  int R = SH("R", 1), C = SH("C", 1), ld = C + SH("pad", 0);
  const float *dy = sq_case_inf(c, "dy"), *db0 = sq_case_inf(c, "db0");
  for (int j = 0; j < C; j++) {
    double m = fabs(db0[j]);
    for (int r = 0; r < R; r++) m += fabs(dy[(size_t)r * ld + j]);
    tol[j] = sq_dot_factor(R) * m;
  }
}

static const char *const bias_shapes[] = {"R=1,C=1", "R=7,C=13", "R=37,C=61,pad=3",
                                          "R=13,C=1000", "R=517,C=96,pad=1", NULL};
static const char *const bias_quick[] = {"R=7,C=13", NULL};

const sq_op sq_op_grad_bias = {
    "grad.bias",
    "2(R+2)u (|db0_c| + sum_r |dy_rc|): an (R+1)-term float sum in any order; db starts from "
    "random values (accumulated)",
    bias_shapes, bias_quick, 0, bias_gen, bias_run, bias_tol, NULL};

/* --------------------------------------------------------- grad.tanh ---- */
/* Shape key: n. dx = dy (1 - y^2), y in (-1, 1). */
static seqcl_status tanh_gen(sq_case *c, sq_rng *r) {
  SQ_DIM(c, n, "n", 1, 1, 1 << 26);
  SQ_NEED(sq_gen_f(c, r, "y", (size_t)n, 0.999f));
  SQ_NEED(sq_gen_f(c, r, "dy", (size_t)n, 1.0f));
  SQ_NEED(sq_case_out(c, "dx", (size_t)n, 0) >= 0);
  return SEQCL_OK;
}

static seqcl_status tanh_run_in(sq_arena *a, const sq_case *c, double *const *got, char *fault,
                                size_t cap) {
  size_t n = (size_t)SH("n", 1);
  sq_ref y = sq_arena_in_named(a, c, "y"), dy = sq_arena_in_named(a, c, "dy");
  sq_ref dx = sq_arena_out(a, "dx", n, NULL);
  SQ_TRY(a->st);
  SQ_TRY(sq_grad_tanh(a->ctx, n, y, dy, dx));
  SQ_TRY(sq_finish_run(a, fault, cap));
  return sq_arena_fetch(a, dx, n, 0, got[0]);
}
RUN_WRAPPER(tanh_run)

static void tanh_tol(const sq_case *c, int k, double *const *ref, double *tol) {
  (void)k, (void)ref;
  const float *dy = sq_case_inf(c, "dy");
  for (size_t i = 0; i < c->out[0].n; i++) tol[i] = 4 * SQ_U * fabs(dy[i]);
}

static const char *const tanh_shapes[] = {"n=1", "n=7", "n=37", "n=1000", "n=65537", NULL};
static const char *const tanh_quick[] = {"n=37", NULL};

const sq_op sq_op_grad_tanh = {
    "grad.tanh",
    "4u |dy|: three roundings (y^2, 1 - y^2, the product), each at most u |dy| since "
    "|1 - y^2| <= 1",
    tanh_shapes, tanh_quick, 0, tanh_gen, tanh_run, tanh_tol, NULL};

/* ---------------------------------------------------- grad.embedding ---- */
/* Shape keys: N D V, pad (extra row stride of dy), pid (the padding id, -1:
 * none). Repeated ids accumulate; the padding row gets nothing. */
static seqcl_status emb_gen(sq_case *c, sq_rng *r) {
  SQ_DIM(c, N, "N", 1, 1, SQ_MAXDIM);
  SQ_DIM(c, D, "D", 1, 1, SQ_MAXDIM);
  SQ_DIM(c, V, "V", 1, 1, SQ_MAXDIM);
  SQ_DIM(c, pad, "pad", 0, 0, 4096);
  SQ_DIM(c, pid, "pid", -1, -1, V - 1);
  int32_t *ids = sq_case_i(c, "ids", (size_t)N);
  SQ_NEED(ids);
  for (int n = 0; n < N; n++) ids[n] = sq_rng_int(r, 0, V - 1);
  ids[0] = V - 1;
  if (N > 2) ids[N - 1] = ids[1]; /* a repeated id */
  if (pid >= 0)
    for (int n = 1; n < N; n += 3) ids[n] = pid;
  SQ_NEED(sq_gen_f(c, r, "dy", (size_t)N * (D + pad), 1.0f));
  SQ_NEED(sq_gen_f(c, r, "dtable0", (size_t)V * D, 1.0f));
  SQ_NEED(sq_case_out(c, "dtable", (size_t)V * D, 0) >= 0);
  return SEQCL_OK;
}

static seqcl_status emb_run_in(sq_arena *a, const sq_case *c, double *const *got, char *fault,
                               size_t cap) {
  int N = SH("N", 1), D = SH("D", 1), V = SH("V", 1), pad = SH("pad", 0);
  sq_ref ids = sq_arena_in_named(a, c, "ids"), dy = sq_arena_in_named(a, c, "dy");
  sq_ref dt = sq_arena_out(a, "dtable", (size_t)V * D, sq_case_inf(c, "dtable0"));
  SQ_TRY(a->st);
  SQ_TRY(sq_grad_embedding(a->ctx, N, D, ids, dy, D + pad, SH("pid", -1), dt));
  SQ_TRY(sq_finish_run(a, fault, cap));
  return sq_arena_fetch(a, dt, c->out[0].n, 0, got[0]);
}
RUN_WRAPPER(emb_run)

static void emb_tol(const sq_case *c, int k, double *const *ref, double *tol) {
  (void)k, (void)ref;
  int N = SH("N", 1), D = SH("D", 1), V = SH("V", 1), ld = D + SH("pad", 0), pid = SH("pid", -1);
  const int32_t *ids = sq_case_ini(c, "ids");
  const float *dy = sq_case_inf(c, "dy"), *dt0 = sq_case_inf(c, "dtable0");
  for (int v = 0; v < V; v++)
    for (int d = 0; d < D; d++) {
      double m = fabs(dt0[(size_t)v * D + d]);
      int hits = 0;
      for (int n = 0; n < N; n++)
        if (ids[n] == v && v != pid) hits++, m += fabs(dy[(size_t)n * ld + d]);
      tol[(size_t)v * D + d] = hits ? sq_dot_factor(hits) * m : 0;
    }
}

static const char *const emb_shapes[] = {"N=1,D=1,V=1",       "N=7,D=13,V=5,pid=0",
                                         "N=37,D=61,V=7,pad=3", "N=13,D=37,V=1000,pid=999",
                                         "N=256,D=100,V=61,pid=3", NULL};
static const char *const emb_quick[] = {"N=7,D=13,V=5,pid=0", NULL};

const sq_op sq_op_grad_embedding = {
    "grad.embedding",
    "2(h+2)u (|dtable0| + sum |dy|) over the h rows adding into an element (any order); rows "
    "no id hits and the padding row exactly unchanged",
    emb_shapes, emb_quick, 0, emb_gen, emb_run, emb_tol, NULL};

/* ------------------------------------------------------- grad.linear ---- */
/* Shape keys: R I O, pad (extra row stride of x, dy and dx), bias (default 1),
 * beta (of dx, default 1; 0 overwrites dx). dx = beta dx0 + dy W,
 * dW = dW0 + dy^T x, db = db0 + column sums of dy. */
static seqcl_status lin_gen(sq_case *c, sq_rng *r) {
  SQ_DIM(c, R, "R", 1, 1, SQ_MAXDIM);
  SQ_DIM(c, I, "I", 1, 1, SQ_MAXDIM);
  SQ_DIM(c, O, "O", 1, 1, SQ_MAXDIM);
  SQ_DIM(c, pad, "pad", 0, 0, 4096);
  SQ_NEED(sq_gen_f(c, r, "x", (size_t)R * (I + pad), 1.0f));
  SQ_NEED(sq_gen_f(c, r, "W", (size_t)O * I, 1.0f));
  SQ_NEED(sq_gen_f(c, r, "dy", (size_t)R * (O + pad), 1.0f));
  SQ_NEED(sq_gen_f(c, r, "dx0", (size_t)R * (I + pad), 1.0f));
  SQ_NEED(sq_gen_f(c, r, "dW0", (size_t)O * I, 1.0f));
  if (SH("bias", 1)) SQ_NEED(sq_gen_f(c, r, "db0", (size_t)O, 1.0f));
  SQ_NEED(sq_case_out(c, "dx", (size_t)R * I, 0) >= 0);
  SQ_NEED(sq_case_out(c, "dW", (size_t)O * I, 0) >= 0);
  if (SH("bias", 1)) SQ_NEED(sq_case_out(c, "db", (size_t)O, 0) >= 0);
  return SEQCL_OK;
}

static seqcl_status lin_run_in(sq_arena *a, const sq_case *c, double *const *got, char *fault,
                               size_t cap) {
  int R = SH("R", 1), I = SH("I", 1), O = SH("O", 1), pad = SH("pad", 0), bias = SH("bias", 1);
  sq_ref x = sq_arena_in_named(a, c, "x"), W = sq_arena_in_named(a, c, "W");
  sq_ref dy = sq_arena_in_named(a, c, "dy");
  sq_ref dx = sq_arena_out2d(a, "dx", (size_t)R, (size_t)I, (size_t)I + pad, sq_case_inf(c, "dx0"));
  sq_ref dW = sq_arena_out(a, "dW", (size_t)O * I, sq_case_inf(c, "dW0"));
  sq_ref db = bias ? sq_arena_out(a, "db", (size_t)O, sq_case_inf(c, "db0")) : sq_none();
  SQ_TRY(a->st);
  SQ_TRY(sq_linear_bwd(a->ctx, R, I, O, x, I + pad, W, dy, O + pad, dx, I + pad,
                       (float)sq_shape_get(&c->shape, "beta", 1), dW, db));
  SQ_TRY(sq_finish_run(a, fault, cap));
  SQ_TRY(sq_arena_fetch(a, dx, c->out[0].n, 0, got[0]));
  SQ_TRY(sq_arena_fetch(a, dW, c->out[1].n, 0, got[1]));
  return bias ? sq_arena_fetch(a, db, c->out[2].n, 0, got[2]) : SEQCL_OK;
}
RUN_WRAPPER(lin_run)

static void lin_tol(const sq_case *c, int k, double *const *ref, double *tol) {
  (void)ref;
  int R = SH("R", 1), I = SH("I", 1), O = SH("O", 1), pad = SH("pad", 0);
  int lx = I + pad, ly = O + pad;
  double beta = fabs((float)sq_shape_get(&c->shape, "beta", 1));
  const float *x = sq_case_inf(c, "x"), *W = sq_case_inf(c, "W"), *dy = sq_case_inf(c, "dy");
  const float *dx0 = sq_case_inf(c, "dx0"), *dW0 = sq_case_inf(c, "dW0");
  const float *db0 = sq_case_inf(c, "db0");
  if (k == 0) {
    for (int r = 0; r < R; r++)
      for (int i = 0; i < I; i++) {
        double m = beta * fabs(dx0[(size_t)r * lx + i]);
        for (int o = 0; o < O; o++) m += fabs(dy[(size_t)r * ly + o] * W[(size_t)o * I + i]);
        tol[(size_t)r * I + i] = sq_dot_factor(O) * m;
      }
  } else if (k == 1) {
    for (int o = 0; o < O; o++)
      for (int i = 0; i < I; i++) {
        double m = fabs(dW0[(size_t)o * I + i]);
        for (int r = 0; r < R; r++) m += fabs(dy[(size_t)r * ly + o] * x[(size_t)r * lx + i]);
        tol[(size_t)o * I + i] = sq_dot_factor(R) * m;
      }
  } else {
    for (int o = 0; o < O; o++) {
      double m = fabs(db0[o]);
      for (int r = 0; r < R; r++) m += fabs(dy[(size_t)r * ly + o]);
      tol[o] = sq_dot_factor(R) * m;
    }
  }
}

static const char *const lin_shapes[] = {
    "R=1,I=1,O=1",          "R=7,I=13,O=37",         "R=37,I=61,O=13,bias=0",
    "R=13,I=7,O=61,pad=3,beta=0", "R=5,I=33,O=17,pad=1", "R=256,I=300,O=96", NULL};
static const char *const lin_quick[] = {"R=7,I=13,O=37", NULL};

const sq_op sq_op_grad_linear = {
    "grad.linear",
    "the GEMM bound of each sum: dx 2(O+2)u (sum_o |dy W| + |beta dx0|), dW 2(R+2)u "
    "(sum_r |dy x| + |dW0|), db 2(R+2)u (sum_r |dy| + |db0|); dx, dW, db start random "
    "(accumulated; beta=0 overwrites dx)",
    lin_shapes, lin_quick, 0, lin_gen, lin_run, lin_tol, NULL};

/* -------------------------------------------------- grad.sum_squares ---- */
/* Shape key: n. out = sum x^2 (positive terms: relative bound). */
static seqcl_status ssq_gen(sq_case *c, sq_rng *r) {
  SQ_DIM(c, n, "n", 1, 1, 1 << 26);
  SQ_NEED(sq_gen_f(c, r, "x", (size_t)n, 1.0f));
  SQ_NEED(sq_case_out(c, "out", 1, 0) >= 0);
  return SEQCL_OK;
}

static seqcl_status ssq_run_in(sq_arena *a, const sq_case *c, double *const *got, char *fault,
                               size_t cap) {
  sq_ref x = sq_arena_in_named(a, c, "x"), out = sq_arena_out(a, "out", 1, NULL);
  SQ_TRY(a->st);
  SQ_TRY(sq_grad_sum_squares(a->ctx, (size_t)SH("n", 1), x, out));
  SQ_TRY(sq_finish_run(a, fault, cap));
  return sq_arena_fetch(a, out, 1, 0, got[0]);
}
RUN_WRAPPER(ssq_run)

static void ssq_tol(const sq_case *c, int k, double *const *ref, double *tol) {
  tol[0] = sq_dot_factor(SH("n", 1) + 1) * fabs(ref[k][0]);
}

static const char *const ssq_shapes[] = {"n=1", "n=7", "n=37", "n=1000", "n=300007", NULL};
static const char *const ssq_quick[] = {"n=37", NULL};

const sq_op sq_op_grad_sum_squares = {
    "grad.sum_squares",
    "2(n+3)u |sum|: an n-term sum of positive float products in any order (devices without "
    "fp64 accumulate in float) and the final rounding",
    ssq_shapes, ssq_quick, 0, ssq_gen, ssq_run, ssq_tol, NULL};

/* -------------------------------------------------------- grad.scale ---- */
/* Shape keys: n, s (the factor, default 0.37). x *= s in place. */
static seqcl_status scale_gen(sq_case *c, sq_rng *r) {
  SQ_DIM(c, n, "n", 1, 1, 1 << 26);
  SQ_NEED(sq_gen_f(c, r, "x0", (size_t)n, 1.0f));
  SQ_NEED(sq_case_out(c, "x", (size_t)n, 0) >= 0);
  return SEQCL_OK;
}

static seqcl_status scale_run_in(sq_arena *a, const sq_case *c, double *const *got, char *fault,
                                 size_t cap) {
  size_t n = (size_t)SH("n", 1);
  sq_ref x = sq_arena_out(a, "x", n, sq_case_inf(c, "x0"));
  SQ_TRY(a->st);
  SQ_TRY(sq_grad_scale(a->ctx, n, x, (float)sq_shape_get(&c->shape, "s", 0.37)));
  SQ_TRY(sq_finish_run(a, fault, cap));
  return sq_arena_fetch(a, x, n, 0, got[0]);
}
RUN_WRAPPER(scale_run)

static void scale_tol(const sq_case *c, int k, double *const *ref, double *tol) {
  for (size_t i = 0; i < c->out[k].n; i++) tol[i] = SQ_U * fabs(ref[k][i]);
}

static const char *const scale_shapes[] = {"n=1", "n=7", "n=37,s=-3.5", "n=1000,s=1e-3",
                                           "n=65537", NULL};
static const char *const scale_quick[] = {"n=37,s=-3.5", NULL};

const sq_op sq_op_grad_scale = {"grad.scale", "u |x s|: one correctly rounded product",
                                scale_shapes, scale_quick, 0, scale_gen, scale_run, scale_tol,
                                NULL};

/* --------------------------------------------------------- grad.adam ---- */
/* Shape keys: n, t (the step number, default 3). torch.optim.Adam with lr 1e-3,
 * betas (0.9, 0.999), eps 1e-8; p, m, v updated in place from random values
 * (v > 0). The bias corrections are computed here as training computes them. */
typedef struct adam_hp {
  float b1, b2, eps, step_size, bc2_sqrt;
} adam_hp;

static adam_hp adam_params(const sq_case *c) {
  adam_hp h = {0.9f, 0.999f, 1e-8f, 0, 0};
  int t = SH("t", 3);
  h.step_size = (float)(1e-3 / (1.0 - pow(h.b1, t)));
  h.bc2_sqrt = (float)sqrt(1.0 - pow(h.b2, t));
  return h;
}

void sq_grad_adam_params(const sq_case *c, float *b1, float *b2, float *eps, float *step_size,
                         float *bc2_sqrt);
void sq_grad_adam_params(const sq_case *c, float *b1, float *b2, float *eps, float *step_size,
                         float *bc2_sqrt) {
  adam_hp h = adam_params(c);
  *b1 = h.b1, *b2 = h.b2, *eps = h.eps, *step_size = h.step_size, *bc2_sqrt = h.bc2_sqrt;
}

static seqcl_status adam_gen(sq_case *c, sq_rng *r) {
  SQ_DIM(c, n, "n", 1, 1, 1 << 26);
  SQ_DIM(c, t, "t", 3, 1, 1000000);
  (void)t;
  SQ_NEED(sq_gen_f(c, r, "p0", (size_t)n, 1.0f));
  SQ_NEED(sq_gen_f(c, r, "g", (size_t)n, 1.0f));
  SQ_NEED(sq_gen_f(c, r, "m0", (size_t)n, 0.5f));
  float *v0 = sq_gen_f(c, r, "v0", (size_t)n, 0.5f);
  SQ_NEED(v0);
  for (int i = 0; i < n; i++) v0[i] = fabsf(v0[i]);
  SQ_NEED(sq_case_out(c, "p", (size_t)n, 0) >= 0);
  SQ_NEED(sq_case_out(c, "m", (size_t)n, 0) >= 0);
  SQ_NEED(sq_case_out(c, "v", (size_t)n, 0) >= 0);
  return SEQCL_OK;
}

static seqcl_status adam_run_in(sq_arena *a, const sq_case *c, double *const *got, char *fault,
                                size_t cap) {
  size_t n = (size_t)SH("n", 1);
  adam_hp h = adam_params(c);
  sq_ref g = sq_arena_in_named(a, c, "g");
  sq_ref p = sq_arena_out(a, "p", n, sq_case_inf(c, "p0"));
  sq_ref m = sq_arena_out(a, "m", n, sq_case_inf(c, "m0"));
  sq_ref v = sq_arena_out(a, "v", n, sq_case_inf(c, "v0"));
  SQ_TRY(a->st);
  SQ_TRY(sq_grad_adam(a->ctx, n, p, g, m, v, h.b1, h.b2, h.eps, h.step_size, h.bc2_sqrt));
  SQ_TRY(sq_finish_run(a, fault, cap));
  SQ_TRY(sq_arena_fetch(a, p, n, 0, got[0]));
  SQ_TRY(sq_arena_fetch(a, m, n, 0, got[1]));
  return sq_arena_fetch(a, v, n, 0, got[2]);
}
RUN_WRAPPER(adam_run)

/* m and v: the roundings of the products and the sum (3 eps, 4 eps with g^2) on
 * the terms' magnitudes; p: m's and v's errors carried through the update
 * (relative e_m / |m| + e_v / (2 v) + the roundings of sqrt, /, +, *) and the
 * final subtraction. */
static void adam_tol(const sq_case *c, int k, double *const *ref, double *tol) {
  adam_hp h = adam_params(c);
  const float *g = sq_case_inf(c, "g"), *m0 = sq_case_inf(c, "m0"), *v0 = sq_case_inf(c, "v0");
  for (size_t i = 0; i < c->out[k].n; i++) {
    double em = 3 * SQ_EPS * (fabs(h.b1 * m0[i]) + fabs((1.0 - h.b1) * g[i]));
    double ev = 4 * SQ_EPS * (fabs(h.b2 * v0[i]) + fabs((1.0 - h.b2) * g[i] * g[i]));
    if (k == 1) {
      tol[i] = em;
    } else if (k == 2) {
      tol[i] = ev;
    } else {
      double m = fabs(ref[1][i]), v = fabs(ref[2][i]);
      double den = sqrt(v) / h.bc2_sqrt + h.eps;
      double upd = h.step_size * m / den;
      tol[i] = h.step_size * (em + m * (ev / (2 * v) + 8 * SQ_EPS)) / den +
               2 * SQ_EPS * (fabs(ref[0][i]) + upd);
    }
  }
}

static const char *const adam_shapes[] = {"n=1", "n=7,t=1", "n=37", "n=1000,t=100", "n=65537",
                                          NULL};
static const char *const adam_quick[] = {"n=37", NULL};

const sq_op sq_op_grad_adam = {
    "grad.adam",
    "m: 3 eps (|b1 m0| + |(1-b1) g|); v: 4 eps (|b2 v0| + |(1-b2) g^2|); p: those errors "
    "carried through step m / (sqrt(v)/bc2 + eps) plus 8 eps for its roundings and 2 eps for "
    "the subtraction; p, m, v start random",
    adam_shapes, adam_quick, 0, adam_gen, adam_run, adam_tol, NULL};

/* ------------------------------------------------ grad.gru_fwd, gru_gates ---- */
/* Shape keys as gru_gates: N T H, step, rev, lens (default 1), bias (default 1),
 * pad (extra row stride of gh and dgh); the backward adds dout (default 1: the
 * layer output's gradient is given) and saved (1: the gates gru_fwd kept are
 * given, random values in their ranges; 0: recomputed). */
static seqcl_status gru_common_gen(sq_case *c, sq_rng *r, int *N, int *T, int *H) {
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

/* Row n's activity and time index at the case's step (as grad.h defines them). */
static int gru_row_time(const sq_case *c, int n, int *t) {
  const int32_t *lens = sq_case_ini(c, "lens");
  int step = SH("step", 0), len = lens ? lens[n] : step + 1;
  if (step >= len) return 0;
  *t = SH("rev", 0) ? len - 1 - step : step;
  return 1;
}

static seqcl_status gfwd_gen(sq_case *c, sq_rng *r) {
  int N, T, H;
  SQ_TRY(gru_common_gen(c, r, &N, &T, &H));
  SQ_NEED(sq_case_out(c, "h", (size_t)N * H, 0) >= 0);
  SQ_NEED(sq_case_out(c, "out", (size_t)N * T * H, 0) >= 0);
  SQ_NEED(sq_case_out(c, "saved", (size_t)N * T * 4 * H, 0) >= 0);
  return SEQCL_OK;
}

static seqcl_status gfwd_run_in(sq_arena *a, const sq_case *c, double *const *got, char *fault,
                                size_t cap) {
  int N = SH("N", 1), T = SH("T", 1), H = SH("H", 1);
  sq_gru_args g;
  memset(&g, 0, sizeof g);
  g.N = N, g.H = H;
  g.gi = sq_arena_in_named(a, c, "gi");
  g.gi_sn = (size_t)T * 3 * H, g.gi_st = (size_t)3 * H;
  g.gh = sq_arena_in_named(a, c, "gh");
  g.ld_gh = 3 * H + SH("pad", 0);
  g.b_ih = sq_arena_in_named(a, c, "b_ih");
  g.b_hh = sq_arena_in_named(a, c, "b_hh");
  g.h = sq_arena_out(a, "h", (size_t)N * H, sq_case_inf(c, "h"));
  /* untouched slots must stay as they were: start them at 0, as the reference does */
  float *zeros = calloc((size_t)N * T * 4 * H, sizeof(float));
  if (!zeros) return sq_fail(a->ctx, SEQCL_ERR_OUT_OF_MEMORY, "check: out of host memory");
  g.out = sq_arena_out(a, "out", (size_t)N * T * H, zeros);
  sq_ref saved = sq_arena_out(a, "saved", (size_t)N * T * 4 * H, zeros);
  free(zeros);
  g.out_sn = (size_t)T * H, g.out_st = (size_t)H;
  g.lens = sq_arena_in_named(a, c, "lens");
  g.step = SH("step", 0);
  g.reverse = SH("rev", 0) != 0;
  SQ_TRY(a->st);
  SQ_TRY(sq_grad_gru_fwd(a->ctx, &g, saved, (size_t)T * 4 * H, (size_t)4 * H));
  SQ_TRY(sq_finish_run(a, fault, cap));
  SQ_TRY(sq_arena_fetch(a, g.h, c->out[0].n, 0, got[0]));
  SQ_TRY(sq_arena_fetch(a, g.out, c->out[1].n, 0, got[1]));
  return sq_arena_fetch(a, saved, c->out[2].n, 0, got[2]);
}
RUN_WRAPPER(gfwd_run)

static void gfwd_tol(const sq_case *c, int k, double *const *ref, double *tol) {
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

static const char *const gru_shapes[] = {
    "N=1,T=1,H=1",         "N=3,T=7,H=13",             "N=5,T=13,H=37,rev=1,step=2",
    "N=4,T=5,H=61,step=4", "N=7,T=3,H=64,lens=0,pad=5", "N=6,T=7,H=33,bias=0,rev=1,step=6",
    "N=9,T=2,H=512,step=1", NULL};
static const char *const gru_quick[] = {"N=3,T=7,H=13", NULL};

const sq_op sq_op_grad_gru_fwd = {
    "grad.gru_fwd",
    "as gru_gates: absolute 1e-6 + relative 4e-5 for h, out and the kept gates (r, z, n, "
    "W_hn h + b_hn); inactive rows and other time steps exactly unchanged",
    gru_shapes, gru_quick, 0, gfwd_gen, gfwd_run, gfwd_tol, NULL};

static seqcl_status gbwd_gen(sq_case *c, sq_rng *r) {
  int N, T, H;
  SQ_TRY(gru_common_gen(c, r, &N, &T, &H));
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

static seqcl_status gbwd_run_in(sq_arena *a, const sq_case *c, double *const *got, char *fault,
                                size_t cap) {
  int N = SH("N", 1), T = SH("T", 1), H = SH("H", 1), ld = 3 * H + SH("pad", 0);
  sq_gru_bwd_args g;
  memset(&g, 0, sizeof g);
  g.N = N, g.H = H;
  g.gi = sq_arena_in_named(a, c, "gi");
  g.gi_sn = (size_t)T * 3 * H, g.gi_st = (size_t)3 * H;
  g.gh = sq_arena_in_named(a, c, "gh");
  g.ld_gh = ld;
  g.b_ih = sq_arena_in_named(a, c, "b_ih");
  g.b_hh = sq_arena_in_named(a, c, "b_hh");
  g.h_prev = sq_arena_in_named(a, c, "h");
  g.dh = sq_arena_out(a, "dh", (size_t)N * H, sq_case_inf(c, "dh0"));
  g.dout = sq_arena_in_named(a, c, "dout");
  g.dout_sn = (size_t)T * H, g.dout_st = (size_t)H;
  g.dgi = sq_arena_out(a, "dgi", (size_t)N * T * 3 * H, sq_case_inf(c, "dgi0"));
  g.dgh = sq_arena_out2d(a, "dgh", (size_t)N, (size_t)3 * H, (size_t)ld, sq_case_inf(c, "dgh0"));
  g.ld_dgh = ld;
  g.lens = sq_arena_in_named(a, c, "lens");
  g.step = SH("step", 0);
  g.reverse = SH("rev", 0) != 0;
  g.saved = sq_arena_in_named(a, c, "saved");
  g.sv_sn = (size_t)T * 4 * H, g.sv_st = (size_t)4 * H;
  SQ_TRY(a->st);
  SQ_TRY(sq_grad_gru_gates(a->ctx, &g));
  SQ_TRY(sq_finish_run(a, fault, cap));
  SQ_TRY(sq_arena_fetch(a, g.dh, c->out[0].n, 0, got[0]));
  SQ_TRY(sq_arena_fetch(a, g.dgi, c->out[1].n, 0, got[1]));
  return sq_arena_fetch(a, g.dgh, c->out[2].n, 0, got[2]);
}
RUN_WRAPPER(gbwd_run)

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

/* ------------------------------------------ grad.attn_fwd.*, grad.attn.* ---- */
/* Shape keys: N S He A (additive), bv (default 1), lens (1 = varied, the
 * default), mask (1 = a random mask too), pad (extra row stride of qp, c, dc,
 * dqp), u (backward, additive: 1 = the kept tanh activations are given, random
 * in (-1, 1); 0 = recomputed). The slots take the projected query qp and the
 * projected keys pkeys directly. */
typedef struct gattn {
  sq_score kind;
  int N, S, He, A, W, pad; /* W: the width of qp (A for additive, else He) */
  float scale;
} gattn;

static gattn gattn_of(const sq_case *c) {
  gattn d;
  d.kind = (sq_score)c->op->variant;
  d.N = SH("N", 1), d.S = SH("S", 1), d.He = SH("He", 1), d.pad = SH("pad", 0);
  d.A = d.kind == SQ_SCORE_ADDITIVE ? SH("A", 1) : 0;
  d.W = d.kind == SQ_SCORE_ADDITIVE ? d.A : d.He;
  d.scale = d.kind == SQ_SCORE_SCALED_DOT ? 1.0f / sqrtf((float)d.He) : 1.0f;
  return d;
}

static int gattn_valid(const sq_case *c, int S, int n, int j) {
  const int32_t *lens = sq_case_ini(c, "lens"), *mask = sq_case_ini(c, "mask");
  if (j >= lens[n]) return 0;
  return !mask || mask[(size_t)n * S + j] != 0;
}

static seqcl_status gattn_gen_inputs(sq_case *c, sq_rng *r, gattn *d) {
  SQ_DIM(c, N, "N", 1, 1, SQ_MAXDIM);
  SQ_DIM(c, S, "S", 1, 1, SQ_MAXDIM);
  SQ_DIM(c, He, "He", 1, 1, SQ_MAXDIM);
  SQ_DIM(c, A, "A", 1, 1, SQ_MAXDIM);
  SQ_DIM(c, pad, "pad", 0, 0, 4096);
  (void)N, (void)S, (void)He, (void)A, (void)pad;
  *d = gattn_of(c);
  SQ_NEED(sq_gen_f(c, r, "keys", (size_t)d->N * d->S * d->He, 1.0f));
  SQ_NEED(sq_gen_f(c, r, "qp", (size_t)d->N * (d->W + d->pad), 1.0f));
  if (d->kind == SQ_SCORE_ADDITIVE) {
    SQ_NEED(sq_gen_f(c, r, "pkeys", (size_t)d->N * d->S * d->A, 1.0f));
    SQ_NEED(sq_gen_f(c, r, "v", (size_t)d->A, 1.0f));
    if (SH("bv", 1)) SQ_NEED(sq_gen_f(c, r, "bv", 1, 1.0f));
  }
  int32_t *lens = sq_gen_lens(c, r, "lens", d->N, d->S, SH("lens", 1));
  SQ_NEED(lens);
  if (SH("mask", 0)) {
    int32_t *mask = sq_case_i(c, "mask", (size_t)d->N * d->S);
    SQ_NEED(mask);
    for (int n = 0; n < d->N; n++) {
      for (int j = 0; j < d->S; j++) mask[(size_t)n * d->S + j] = sq_rng_int(r, 0, 2) != 0;
      mask[(size_t)n * d->S + sq_rng_int(r, 0, lens[n] - 1)] = 1;
    }
  }
  return SEQCL_OK;
}

static void gattn_args(sq_arena *a, const sq_case *c, const gattn *d, sq_attn_args *args) {
  memset(args, 0, sizeof *args);
  args->kind = d->kind;
  args->N = d->N, args->S = d->S, args->He = d->He, args->A = d->A;
  args->qp = sq_arena_in_named(a, c, "qp");
  args->ld_qp = d->W + d->pad;
  args->keys = sq_arena_in_named(a, c, "keys");
  args->pkeys = sq_arena_in_named(a, c, "pkeys");
  args->v = sq_arena_in_named(a, c, "v");
  args->bv = sq_arena_in_named(a, c, "bv");
  args->scale = d->scale;
  args->lens = sq_arena_in_named(a, c, "lens");
  args->mask = sq_arena_in_named(a, c, "mask");
}

/* tanh(pkeys + qp) of (n, j, a) in double and its float error bound: the
 * rounding of the sum through tanh (slope <= 1) and tanh's 5 ulp (+1). */
static double gattn_u(const sq_case *c, const gattn *d, int n, int j, int a, double *du) {
  double s = (double)sq_case_inf(c, "pkeys")[((size_t)n * d->S + j) * d->A + a] +
             sq_case_inf(c, "qp")[(size_t)n * (d->W + d->pad) + a];
  if (du) *du = SQ_U * fabs(s) + 6 * SQ_EPS;
  return tanh(s);
}

/* The energy e[n, j] in double and its float error bound (as attn_scores). */
static double gattn_e(const sq_case *c, const gattn *d, int n, int j, double *err) {
  const float *qp = sq_case_inf(c, "qp") + (size_t)n * (d->W + d->pad);
  const float *h = sq_case_inf(c, "keys") + ((size_t)n * d->S + j) * d->He;
  double e = 0, m = 0, t = 0;
  if (d->kind == SQ_SCORE_ADDITIVE) {
    const float *v = sq_case_inf(c, "v"), *bv = sq_case_inf(c, "bv");
    for (int a = 0; a < d->A; a++) {
      double du, u = gattn_u(c, d, n, j, a, &du);
      e += v[a] * u;
      m += fabs(v[a]);
      t += fabs(v[a]) * du;
    }
    e += bv ? bv[0] : 0;
    t += sq_dot_factor(d->A + 1) * (m + (bv ? fabs(bv[0]) : 0));
  } else {
    for (int k = 0; k < d->He; k++) e += (double)h[k] * qp[k], m += fabs(h[k] * qp[k]);
    e *= d->scale;
    t = sq_dot_factor(d->He + 1) * m * d->scale;
  }
  if (err) *err = t;
  return e;
}

static seqcl_status gfw_gen(sq_case *c, sq_rng *r) {
  gattn d;
  SQ_TRY(gattn_gen_inputs(c, r, &d));
  SQ_NEED(sq_case_out(c, "c", (size_t)d.N * d.He, 0) >= 0);
  SQ_NEED(sq_case_out(c, "alpha", (size_t)d.N * d.S, 0) >= 0);
  if (d.kind == SQ_SCORE_ADDITIVE) SQ_NEED(sq_case_out(c, "u", (size_t)d.N * d.S * d.A, 0) >= 0);
  return SEQCL_OK;
}

static seqcl_status gfw_run_in(sq_arena *a, const sq_case *c, double *const *got, char *fault,
                               size_t cap) {
  gattn d = gattn_of(c);
  sq_attn_args args;
  gattn_args(a, c, &d, &args);
  sq_ref cr = sq_arena_out2d(a, "c", (size_t)d.N, (size_t)d.He, (size_t)d.He + d.pad, NULL);
  sq_ref al = sq_arena_out(a, "alpha", (size_t)d.N * d.S, NULL);
  sq_ref u = sq_none();
  if (d.kind == SQ_SCORE_ADDITIVE) {
    /* positions past a row's length are left untouched: start them at 0 */
    float *zeros = calloc((size_t)d.N * d.S * d.A, sizeof(float));
    if (!zeros) return sq_fail(a->ctx, SEQCL_ERR_OUT_OF_MEMORY, "check: out of host memory");
    u = sq_arena_out(a, "u", (size_t)d.N * d.S * d.A, zeros);
    free(zeros);
  }
  SQ_TRY(a->st);
  SQ_TRY(sq_grad_attn_fwd(a->ctx, &args, u, cr, d.He + d.pad, al));
  SQ_TRY(sq_finish_run(a, fault, cap));
  SQ_TRY(sq_arena_fetch(a, cr, c->out[0].n, 0, got[0]));
  SQ_TRY(sq_arena_fetch(a, al, c->out[1].n, 0, got[1]));
  return d.kind == SQ_SCORE_ADDITIVE ? sq_arena_fetch(a, u, c->out[2].n, 0, got[2]) : SEQCL_OK;
}
RUN_WRAPPER(gfw_run)

/* alpha_j: the softmax's relative bound plus 2 max_k tol(e_k) (a score error
 * de shifts alpha_j by alpha_j (de_j - E[de])); c: 2(S+2)u sum_j |alpha_j h_j|
 * + sum_j tol(alpha_j) |h_j|; u: the tanh bound; invalid weights exactly 0. */
static void gfw_alpha_tol(const sq_case *c, const gattn *d, int n, const double *alpha,
                          double *tol) {
  double emax = 0, hi = -INFINITY, lo = INFINITY;
  for (int j = 0; j < d->S; j++)
    if (gattn_valid(c, d->S, n, j)) {
      double t, e = gattn_e(c, d, n, j, &t);
      emax = t > emax ? t : emax;
      hi = e > hi ? e : hi, lo = e < lo ? e : lo;
    }
  double rel = (8 + 2 * sq_ceil_log2(d->S)) * SQ_EPS + 2 * emax + 2 * SQ_U * (hi - lo);
  for (int j = 0; j < d->S; j++)
    tol[j] = gattn_valid(c, d->S, n, j) ? rel * fabs(alpha[j]) + SQ_EPS : 0;
}

static void gfw_tol(const sq_case *c, int k, double *const *ref, double *tol) {
  gattn d = gattn_of(c);
  const float *keys = sq_case_inf(c, "keys");
  double *at = malloc((size_t)d.S * sizeof *at);
  for (int n = 0; n < d.N; n++) {
    const double *an = ref[1] + (size_t)n * d.S;
    if (k == 1) {
      gfw_alpha_tol(c, &d, n, an, tol + (size_t)n * d.S);
    } else if (k == 2) {
      for (int j = 0; j < d.S; j++)
        for (int a = 0; a < d.A; a++) {
          double du;
          gattn_u(c, &d, n, j, a, &du);
          tol[((size_t)n * d.S + j) * d.A + a] = gattn_valid(c, d.S, n, j) ? du : INFINITY;
        }
    } else if (!at) {
      for (int i = 0; i < d.He; i++) tol[(size_t)n * d.He + i] = 1e-2; /* out of memory */
    } else {
      gfw_alpha_tol(c, &d, n, an, at);
      for (int i = 0; i < d.He; i++) {
        double m = 0, da = 0;
        for (int j = 0; j < d.S; j++) {
          double h = fabs(keys[((size_t)n * d.S + j) * d.He + i]);
          m += fabs(an[j]) * h;
          da += at[j] * h;
        }
        tol[(size_t)n * d.He + i] = sq_dot_factor(d.S) * m + da;
      }
    }
  }
  free(at);
}

static const char *const gadd_shapes[] = {"N=1,S=1,He=1,A=1", "N=3,S=7,He=13,A=11,pad=2",
                                          "N=5,S=37,He=61,A=33,bv=0",
                                          "N=4,S=61,He=24,A=65,mask=1",
                                          "N=2,S=200,He=256,A=256", NULL};
static const char *const gdot_shapes[] = {"N=1,S=1,He=1", "N=3,S=7,He=13,pad=2", "N=5,S=37,He=61",
                                          "N=4,S=61,He=64,mask=1", "N=2,S=300,He=256",
                                          /* GPU forms: attn_bwd_de's rounds of 16
                                           * positions plus one; 33 attention chunks */
                                          "N=2,S=17,He=33", "N=1,S=2053,He=19", NULL};
static const char *const gadd_quick[] = {"N=3,S=7,He=13,A=11,pad=2", NULL};
static const char *const gdot_quick[] = {"N=3,S=7,He=13,pad=2", NULL};

#define GFW_TOL                                                                               \
  "alpha: ((8 + 2 ceil(log2 S)) eps + 2 max_k tol(e_k) + 2u (max e - min e)) |alpha_j| + eps, " \
  "tol(e) the attn_scores bound from qp and pkeys (a score error shifts alpha_j by alpha_j "    \
  "(de_j - E[de])), invalid weights exactly 0; c: 2(S+2)u sum_j |alpha_j h_j| + sum_j "         \
  "tol(alpha_j) |h_j|; u (additive): u |pkeys + qp| + 6 eps (tanh 5 ulp), any finite value at " \
  "invalid positions"

const sq_op sq_op_grad_attn_fwd_additive = {"grad.attn_fwd.additive", GFW_TOL, gadd_shapes, gadd_quick, SQ_SCORE_ADDITIVE, gfw_gen, gfw_run, gfw_tol, NULL};
const sq_op sq_op_grad_attn_fwd_general = {"grad.attn_fwd.general", GFW_TOL, gdot_shapes, gdot_quick, SQ_SCORE_GENERAL, gfw_gen, gfw_run, gfw_tol, NULL};
const sq_op sq_op_grad_attn_fwd_dot = {"grad.attn_fwd.dot", GFW_TOL, gdot_shapes, gdot_quick, SQ_SCORE_DOT, gfw_gen, gfw_run, gfw_tol, NULL};
const sq_op sq_op_grad_attn_fwd_scaled_dot = {"grad.attn_fwd.scaled_dot", GFW_TOL, gdot_shapes, gdot_quick, SQ_SCORE_SCALED_DOT, gfw_gen, gfw_run, gfw_tol, NULL};

/* The backward: alpha is a valid weight row (>= 0, sum 1, 0 at invalid
 * positions); dc is random; dqp, dkeys, dpkeys, dv, dbv start random
 * (accumulated). */
static seqcl_status gbw_gen(sq_case *c, sq_rng *r) {
  gattn d;
  SQ_TRY(gattn_gen_inputs(c, r, &d));
  int add = d.kind == SQ_SCORE_ADDITIVE, bv = add && SH("bv", 1);
  float *alpha = sq_gen_f(c, r, "alpha", (size_t)d.N * d.S, 1.0f);
  SQ_NEED(alpha);
  for (int n = 0; n < d.N; n++) {
    double s = 0;
    float *an = alpha + (size_t)n * d.S;
    for (int j = 0; j < d.S; j++) s += gattn_valid(c, d.S, n, j) ? fabsf(an[j]) : 0;
    for (int j = 0; j < d.S; j++) an[j] = gattn_valid(c, d.S, n, j) ? (float)(fabsf(an[j]) / s) : 0;
  }
  SQ_NEED(sq_gen_f(c, r, "dc", (size_t)d.N * (d.He + d.pad), 1.0f));
  if (add && SH("u", 0)) SQ_NEED(sq_gen_f(c, r, "u", (size_t)d.N * d.S * d.A, 0.999f));
  SQ_NEED(sq_gen_f(c, r, "dqp0", (size_t)d.N * (d.W + d.pad), 1.0f));
  SQ_NEED(sq_gen_f(c, r, "dkeys0", (size_t)d.N * d.S * d.He, 1.0f));
  if (add) {
    SQ_NEED(sq_gen_f(c, r, "dpkeys0", (size_t)d.N * d.S * d.A, 1.0f));
    SQ_NEED(sq_gen_f(c, r, "dv0", (size_t)d.A, 1.0f));
    if (bv) SQ_NEED(sq_gen_f(c, r, "dbv0", 1, 1.0f));
  }
  SQ_NEED(sq_case_out(c, "dqp", (size_t)d.N * d.W, 0) >= 0);
  SQ_NEED(sq_case_out(c, "dkeys", (size_t)d.N * d.S * d.He, 0) >= 0);
  if (add) {
    SQ_NEED(sq_case_out(c, "dpkeys", (size_t)d.N * d.S * d.A, 0) >= 0);
    SQ_NEED(sq_case_out(c, "dv", (size_t)d.A, 0) >= 0);
    if (bv) SQ_NEED(sq_case_out(c, "dbv", 1, 0) >= 0);
  }
  return SEQCL_OK;
}

static seqcl_status gbw_run_in(sq_arena *a, const sq_case *c, double *const *got, char *fault,
                               size_t cap) {
  gattn d = gattn_of(c);
  int add = d.kind == SQ_SCORE_ADDITIVE, bv = add && SH("bv", 1);
  sq_attn_args args;
  gattn_args(a, c, &d, &args);
  sq_ref al = sq_arena_in_named(a, c, "alpha"), u = sq_arena_in_named(a, c, "u");
  sq_ref dc = sq_arena_in_named(a, c, "dc");
  sq_ref dqp = sq_arena_out2d(a, "dqp", (size_t)d.N, (size_t)d.W, (size_t)d.W + d.pad,
                              sq_case_inf(c, "dqp0"));
  sq_ref dk = sq_arena_out(a, "dkeys", (size_t)d.N * d.S * d.He, sq_case_inf(c, "dkeys0"));
  sq_ref dpk = add ? sq_arena_out(a, "dpkeys", (size_t)d.N * d.S * d.A, sq_case_inf(c, "dpkeys0"))
                   : sq_none();
  sq_ref dv = add ? sq_arena_out(a, "dv", (size_t)d.A, sq_case_inf(c, "dv0")) : sq_none();
  sq_ref dbv = bv ? sq_arena_out(a, "dbv", 1, sq_case_inf(c, "dbv0")) : sq_none();
  SQ_TRY(a->st);
  SQ_TRY(sq_grad_attn(a->ctx, &args, al, u, dc, d.He + d.pad, dqp, d.W + d.pad, dk, dpk, dv, dbv));
  SQ_TRY(sq_finish_run(a, fault, cap));
  sq_ref outs[5] = {dqp, dk, dpk, dv, dbv};
  for (int k = 0; k < c->n_out; k++) SQ_TRY(sq_arena_fetch(a, outs[k], c->out[k].n, 0, got[k]));
  return SEQCL_OK;
}
RUN_WRAPPER(gbw_run)

/* Error propagation with f(K) = 2(K+2)u on magnitudes:
 *   dalpha_j = dc . h_j:  E_a = f(He) M_a, M_a = sum |dc h_j|
 *   s = sum alpha dalpha: E_s = sum alpha_j E_a,j + f(S) M_s, M_s = sum alpha |dalpha|
 *   de_j = scale alpha_j (dalpha_j - s): E_de = scale alpha_j (E_a + E_s + 3 eps (M_a + M_s)),
 *     magnitude M_de = scale alpha_j (M_a + M_s)
 * and each output is an accumulation of such terms: the terms' errors plus
 * f(terms + 1) times the magnitudes (the start value included). For additive
 * scores du = de v (1 - u^2) also carries u's error 2 |u| tol(u) + 3 eps. */
static void gbw_de(const sq_case *c, const gattn *d, int n, double *Ede, double *Mde) {
  const float *dc = sq_case_inf(c, "dc") + (size_t)n * (d->He + d->pad);
  const float *keys = sq_case_inf(c, "keys") + (size_t)n * d->S * d->He;
  const float *al = sq_case_inf(c, "alpha") + (size_t)n * d->S;
  double Es = 0, Ms = 0;
  for (int j = 0; j < d->S; j++) {
    Ede[j] = Mde[j] = 0;
    if (!gattn_valid(c, d->S, n, j)) continue;
    double Ma = 0, da = 0;
    for (int k = 0; k < d->He; k++) {
      Ma += fabs(dc[k] * keys[(size_t)j * d->He + k]);
      da += (double)dc[k] * keys[(size_t)j * d->He + k];
    }
    Mde[j] = Ma; /* M_a for now */
    Es += al[j] * sq_dot_factor(d->He) * Ma;
    Ms += al[j] * fabs(da);
  }
  Es += sq_dot_factor(d->S) * Ms;
  for (int j = 0; j < d->S; j++) {
    if (!gattn_valid(c, d->S, n, j)) continue;
    double Ma = Mde[j];
    Ede[j] = d->scale * al[j] * (sq_dot_factor(d->He) * Ma + Es + 3 * SQ_EPS * (Ma + Ms));
    Mde[j] = d->scale * al[j] * (Ma + Ms);
  }
}

static void gbw_tol(const sq_case *c, int k, double *const *ref, double *tol) {
  (void)ref;
  gattn d = gattn_of(c);
  int add = d.kind == SQ_SCORE_ADDITIVE;
  const float *keys = sq_case_inf(c, "keys"), *qp = sq_case_inf(c, "qp");
  const float *dc = sq_case_inf(c, "dc"), *al = sq_case_inf(c, "alpha");
  const float *v = sq_case_inf(c, "v"), *us = sq_case_inf(c, "u");
  const float *start = sq_case_inf(c, k == 0   ? "dqp0"
                                      : k == 1 ? "dkeys0"
                                      : k == 2 ? "dpkeys0"
                                      : k == 3 ? "dv0"
                                               : "dbv0");
  double *Ede = malloc((size_t)d.S * sizeof *Ede), *Mde = malloc((size_t)d.S * sizeof *Mde);
  if (!Ede || !Mde) {
    for (size_t e = 0; e < c->out[k].n; e++) tol[e] = 1e-2; /* out of memory */
    free(Ede), free(Mde);
    return;
  }
  /* dv, dbv: sums over every (n, j) */
  double sumE = 0;
  size_t terms = (size_t)d.N * d.S + 1;
  double mag_b = fabs(start[0]);
  if (k == 3)
    for (int a = 0; a < d.A; a++) tol[a] = sq_dot_factor((long)terms) * fabs(start[a]);
  for (int n = 0; n < d.N; n++) {
    gbw_de(c, &d, n, Ede, Mde);
    const float *q = qp + (size_t)n * (d.W + d.pad);
    if (k == 0) {
      for (int w = 0; w < d.W; w++) {
        double M = fabs(start[(size_t)n * (d.W + d.pad) + w]), E = 0;
        for (int j = 0; j < d.S; j++) {
          if (!gattn_valid(c, d.S, n, j)) continue;
          if (add) {
            double du = 0, u = us ? us[((size_t)n * d.S + j) * d.A + w] : gattn_u(c, &d, n, j, w, &du);
            if (us) du = 0;
            double g = fabs(v[w]) * (1 - u * u);
            M += Mde[j] * g;
            E += Ede[j] * g + Mde[j] * fabs(v[w]) * (2 * fabs(u) * du + 3 * SQ_EPS);
          } else {
            double h = fabs(keys[((size_t)n * d.S + j) * d.He + w]);
            M += Mde[j] * h;
            E += Ede[j] * h;
          }
        }
        tol[(size_t)n * d.W + w] = sq_dot_factor(d.S + 1) * M + E;
      }
    } else if (k == 1) {
      for (int j = 0; j < d.S; j++)
        for (int i = 0; i < d.He; i++) {
          size_t e = ((size_t)n * d.S + j) * d.He + i;
          if (!gattn_valid(c, d.S, n, j)) {
            tol[e] = 0; /* invalid positions contribute nothing */
            continue;
          }
          double cd = fabs(dc[(size_t)n * (d.He + d.pad) + i]);
          double qh = add ? 0 : fabs(q[i]);
          tol[e] = sq_dot_factor(3) * (fabs(start[e]) + al[(size_t)n * d.S + j] * cd + Mde[j] * qh) +
                   Ede[j] * qh;
        }
    } else {
      for (int j = 0; j < d.S; j++) {
        int valid = gattn_valid(c, d.S, n, j);
        if (k == 4) {
          if (valid) mag_b += Mde[j], sumE += Ede[j];
          continue;
        }
        for (int a = 0; a < d.A; a++) {
          size_t e = ((size_t)n * d.S + j) * d.A + a;
          double du = 0, u = us ? us[e] : gattn_u(c, &d, n, j, a, &du);
          if (us) du = 0;
          if (k == 2) {
            double g = fabs(v[a]) * (1 - u * u);
            tol[e] = valid ? sq_dot_factor(1) * (fabs(start[e]) + Mde[j] * g) + Ede[j] * g +
                                 Mde[j] * fabs(v[a]) * (2 * fabs(u) * du + 3 * SQ_EPS)
                           : 0;
          } else if (valid) {
            tol[a] += sq_dot_factor((long)terms) * Mde[j] * fabs(u) + Ede[j] * fabs(u) + Mde[j] * du;
          }
        }
      }
    }
  }
  if (k == 4) tol[0] = sq_dot_factor((long)terms) * mag_b + sumE;
  free(Ede), free(Mde);
}

static const char *const gbadd_shapes[] = {"N=1,S=1,He=1,A=1", "N=3,S=7,He=13,A=11,pad=2",
                                           "N=5,S=37,He=61,A=33,bv=0,u=1",
                                           "N=4,S=61,He=24,A=65,mask=1",
                                           "N=2,S=200,He=256,A=256,u=1",
                                           /* the GPU form's chunks of 64 positions of
                                            * N S: one short, exactly one, one more, 33 */
                                           "N=1,S=63,He=5,A=7", "N=2,S=32,He=3,A=9,u=1",
                                           "N=5,S=13,He=4,A=6,mask=1", "N=1,S=2053,He=3,A=5",
                                           NULL};

#define GBW_TOL                                                                               \
  "error propagation on magnitudes, 2(K+2)u per K-term sum: dalpha_j = dc.h_j, s = sum "        \
  "alpha dalpha, de_j = scale alpha_j (dalpha_j - s) (with 3 eps for its roundings), then each " \
  "output's accumulation of de-terms (additive: du = de v (1 - u^2) with 2|u| tol(u) + 3 eps); " \
  "invalid positions exactly unchanged; every output starts random (accumulated)"

const sq_op sq_op_grad_attn_additive = {"grad.attn.additive", GBW_TOL, gbadd_shapes, gadd_quick, SQ_SCORE_ADDITIVE, gbw_gen, gbw_run, gbw_tol, NULL};
const sq_op sq_op_grad_attn_general = {"grad.attn.general", GBW_TOL, gdot_shapes, gdot_quick, SQ_SCORE_GENERAL, gbw_gen, gbw_run, gbw_tol, NULL};
const sq_op sq_op_grad_attn_dot = {"grad.attn.dot", GBW_TOL, gdot_shapes, gdot_quick, SQ_SCORE_DOT, gbw_gen, gbw_run, gbw_tol, NULL};
const sq_op sq_op_grad_attn_scaled_dot = {"grad.attn.scaled_dot", GBW_TOL, gdot_shapes, gdot_quick, SQ_SCORE_SCALED_DOT, gbw_gen, gbw_run, gbw_tol, NULL};
