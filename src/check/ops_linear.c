/* Op list entries of the linear family: gemm, linear, and the training
 * slots bias_grad (grad.bias), tanh_bwd (grad.tanh) and the linear layer's
 * backward (grad.linear: three GEMMs and a bias sum).
 *
 * Every output that a training slot accumulates into (+=) or updates in
 * place starts from random values (inputs named *0), so a kernel that
 * overwrites instead of accumulating fails. */
#include <stdlib.h>

#include "check/opdefs.h"
#include "check/ops_all.h"
#include "core/halfwidth.h"
#include "ops/ops.h"

/* ---------------------------------------------------------------- gemm ---- */
/* Shape keys: M N K, ta tb (transposes), batch, alpha beta, pad (extra leading
 * dimension of A, B and C), int=1 (small integers: the result must be exact),
 * half=1|2 (B at bfloat16 / binary16 values, given to the device as 16-bit ones),
 * frozen=1 (B's buffer frozen, as the model's weights are: the host reads B
 * packed once in products beyond its own kernel's rows). */
typedef struct gemm_dims {
  int M, N, K, ta, tb, batch, pad, exact;
  double alpha, beta;
  int lda, ldb, ldc;
  size_t sa, sb, sc;
} gemm_dims;

static void gemm_dims_of(const sq_case *c, gemm_dims *d) {
  const sq_shape *s = &c->shape;
  d->M = sq_shape_int(s, "M", 1);
  d->N = sq_shape_int(s, "N", 1);
  d->K = sq_shape_int(s, "K", 1);
  d->ta = sq_shape_int(s, "ta", 0) != 0;
  d->tb = sq_shape_int(s, "tb", 0) != 0;
  d->batch = sq_shape_int(s, "batch", 1);
  d->pad = sq_shape_int(s, "pad", 0);
  d->exact = sq_shape_int(s, "int", 0) != 0;
  d->alpha = sq_shape_get(s, "alpha", 1.0);
  d->beta = sq_shape_get(s, "beta", 0.0);
  d->lda = (d->ta ? d->M : d->K) + d->pad;
  d->ldb = (d->tb ? d->K : d->N) + d->pad;
  d->ldc = d->N + d->pad;
  d->sa = (size_t)(d->ta ? d->K : d->M) * d->lda;
  d->sb = (size_t)(d->tb ? d->N : d->K) * d->ldb;
  d->sc = (size_t)d->M * d->ldc;
}

static seqcl_status gemm_gen(sq_case *c, sq_rng *r) {
  SQ_DIM(c, M, "M", 1, 1, SQ_MAXDIM);
  SQ_DIM(c, N, "N", 1, 1, SQ_MAXDIM);
  SQ_DIM(c, K, "K", 1, 1, SQ_MAXDIM);
  SQ_DIM(c, batch, "batch", 1, 1, 4096);
  SQ_DIM(c, pad, "pad", 0, 0, 4096);
  (void)M, (void)N, (void)K, (void)batch, (void)pad;
  gemm_dims d;
  gemm_dims_of(c, &d);
  if (d.exact && (d.alpha != 1.0 || (d.beta != 0.0 && d.beta != 1.0) || d.K * 64L + 8 > (1L << 24)))
    return sq_fail(NULL, SEQCL_ERR_INVALID_ARGUMENT,
                   "gemm: int=1 needs alpha=1, beta 0 or 1 and K*64 + 8 <= 2^24");
  float *A = sq_gen_f(c, r, "A", d.sa * d.batch, 1.0f);
  float *B = sq_gen_f(c, r, "B", d.sb * d.batch, 1.0f);
  float *C0 = sq_gen_f(c, r, "C0", d.sc * d.batch, 1.0f);
  SQ_NEED(A && B && C0);
  const int half = SH("half", SQ_HALF_NONE);
  if (half != SQ_HALF_NONE && half != SQ_HALF_BF16 && half != SQ_HALF_F16)
    return sq_fail(NULL, SEQCL_ERR_INVALID_ARGUMENT, "gemm: half=%d is not 0, 1 (bf16) or 2 (f16)",
                   half);
  /* B as weights of a reduced-precision model: values of the 16-bit width */
  for (size_t i = 0; half && i < d.sb * d.batch; i++) B[i] = sq_round_halfwidth(B[i], half);
  if (d.exact) { /* integers in [-8, 8] \ {0}: every partial sum is exact in float32 */
    float *all[3] = {A, B, C0};
    size_t n[3] = {d.sa * d.batch, d.sb * d.batch, d.sc * d.batch};
    for (int t = 0; t < 3; t++)
      for (size_t i = 0; i < n[t]; i++) {
        int v = sq_rng_int(r, -8, 7);
        all[t][i] = (float)(v >= 0 ? v + 1 : v);
      }
  }
  SQ_NEED(sq_case_out(c, "C", (size_t)d.batch * d.M * d.N, 0) >= 0);
  return SEQCL_OK;
}

static seqcl_status gemm_run(sq_arena *a, const sq_case *c) {
  gemm_dims d;
  gemm_dims_of(c, &d);
  sq_ref A = sq_arena_in_named(a, c, "A"), B = sq_arena_in_named(a, c, "B");
  sq_ref C = sq_arena_out2d(a, "C", (size_t)d.batch * d.M, d.N, d.ldc, sq_case_inf(c, "C0"));
  SQ_TRY(a->st);
  /* half=1|2: the products read B's buffer as 16-bit values (a device without
   * them: unsupported, the case is skipped) */
  const int half = SH("half", SQ_HALF_NONE);
  if (half) SQ_TRY(sq_buf_halfwidth(a->ctx, B.buf, (sq_halfwidth)half));
  if (SH("frozen", 0)) sq_buf_freeze(a->ctx, B.buf);
  SQ_TRY(sq_gemm(a->ctx, d.ta, d.tb, d.M, d.N, d.K, (float)d.alpha, A, d.lda, d.sa, B, d.ldb,
                 d.sb, (float)d.beta, C, d.ldc, d.sc, d.batch));
  return sq_finish_fetch(a, c, &C);
}

static void gemm_tol(const sq_case *c, int k, double *const *ref, double *tol) {
  (void)k, (void)ref;
  gemm_dims d;
  gemm_dims_of(c, &d);
  if (d.exact) { /* integer inputs: every result exact, and no O(MNK) bound to add up */
    for (size_t i = 0, n = (size_t)d.batch * d.M * d.N; i < n; i++) tol[i] = 0;
    return;
  }
  const float *A = sq_case_inf(c, "A"), *B = sq_case_inf(c, "B"), *C0 = sq_case_inf(c, "C0");
  double f = sq_dot_factor(d.K);
  for (int b = 0; b < d.batch; b++)
    for (int i = 0; i < d.M; i++)
      for (int j = 0; j < d.N; j++) {
        double m = 0;
        for (int p = 0; p < d.K; p++) {
          double x = A[b * d.sa + (d.ta ? (size_t)p * d.lda + i : (size_t)i * d.lda + p)];
          double y = B[b * d.sb + (d.tb ? (size_t)j * d.ldb + p : (size_t)p * d.ldb + j)];
          m += fabs(x * y);
        }
        double c0 = C0[b * d.sc + (size_t)i * d.ldc + j];
        tol[((size_t)b * d.M + i) * d.N + j] =
            d.exact ? 0 : f * (fabs(d.alpha) * m + fabs(d.beta * c0));
      }
}

static const char *const gemm_shapes[] = {
    "M=1,N=1,K=1",
    "M=7,N=13,K=37",
    "M=61,N=37,K=13,ta=1",
    "M=13,N=61,K=7,tb=1",
    "M=33,N=17,K=65,ta=1,tb=1,alpha=0.5,beta=-1.25",
    "M=9,N=31,K=127,batch=3,beta=1,pad=3",
    "M=64,N=63,K=65,tb=1,batch=2",
    "M=20,N=24,K=100,int=1",
    "M=17,N=5,K=999,int=1,beta=1,batch=2,tb=1",
    "M=256,N=512,K=512,tb=1",
    /* decoder-step shapes (batch 1 and 64: the small-GEMM kernel on CPU devices) */
    "M=1,N=77,K=259,tb=1,pad=1,beta=0.5",
    "M=64,N=100,K=33,tb=1,pad=2,alpha=-0.75,beta=1",
    "M=3,N=9,K=6,tb=1,batch=3,pad=1",
    /* the GPU form's edges: K around one step of its 32 lanes x float4 (128),
     * a K tail of 1-3, N not a multiple of its 4 columns per group, rows past
     * M in the last row block */
    "M=9,N=5,K=129,tb=1,beta=1",
    "M=64,N=7,K=128,tb=1,batch=2,pad=1",
    "M=2,N=3,K=127,tb=1,alpha=-1.5",
    /* big enough for the host to split across its threads: by rows (the own
     * AVX-512 kernel with tb=1, OpenBLAS otherwise), by columns (M = 1: GEMV) */
    "M=131,N=29,K=47,tb=1,beta=0.5,pad=1",
    "M=129,N=31,K=40,ta=1",
    "M=1,N=4099,K=67,tb=1,alpha=2",
    /* reduced precision (half=1 bf16, 2 f16: B read as 16-bit values): the
     * batch-1 row kernel with a K tail and padded rows, the 4 x 4 blocks with
     * tails, K below one vector, rows split across threads, columns split
     * (M = 1), and the paths that read float32 B (rows past the own kernel's
     * 256, B not transposed); bf16 rows of several whole vectors, with and
     * without a K tail: the row kernel, the blocks with row and column tails,
     * batches, and columns split */
    "M=1,N=77,K=259,tb=1,pad=1,beta=0.5,half=1",
    "M=1,N=77,K=259,tb=1,pad=1,beta=0.5,half=2",
    "M=64,N=100,K=33,tb=1,pad=2,alpha=-0.75,beta=1,half=1",
    "M=13,N=61,K=7,tb=1,half=2",
    "M=20,N=37,K=83,tb=1,pad=1,beta=1,half=1",
    "M=24,N=130,K=100,tb=1,alpha=0.5,half=2",
    "M=131,N=29,K=47,tb=1,beta=0.5,pad=1,half=2",
    "M=1,N=4099,K=67,tb=1,alpha=2,half=1",
    "M=300,N=20,K=40,tb=1,half=1",
    "M=7,N=13,K=37,half=2",
    "M=1,N=77,K=256,tb=1,beta=0.5,half=1",
    "M=1,N=45,K=90,tb=1,pad=6,half=1",
    "M=11,N=37,K=64,tb=1,alpha=-0.75,beta=1,half=1",
    "M=5,N=29,K=17,tb=1,pad=15,batch=2,half=1",
    "M=24,N=130,K=128,tb=1,half=1",
    "M=1,N=4099,K=64,tb=1,half=1",
    /* frozen=1: B as a model's weights (the host packs it once in panels of
     * 16 columns and runs 8 x 32 blocks): a decode step's product, one row
     * past the own kernel's 24 with one column, fewer columns than a panel,
     * rows and columns off the blocks with alpha, beta and padded rows, rows
     * split across threads, columns split in whole panels, integer-exact,
     * batches (not packed), and bf16 values; and with few rows, where the
     * host reads packed weights too: one row (four panels at a time, 1-3 at
     * the end; an odd K for the 16-bit panels' pairs of k) and 2-13 rows
     * (blocks of their own row count), in float32, bf16 and f16, with
     * alpha, beta, padded rows and columns split across threads */
    "M=64,N=768,K=256,tb=1,frozen=1",
    "M=25,N=1,K=1,tb=1,frozen=1",
    "M=37,N=13,K=5,tb=1,frozen=1,alpha=-0.5,beta=1",
    "M=43,N=47,K=129,tb=1,pad=3,frozen=1,beta=0.5",
    "M=300,N=50,K=31,tb=1,frozen=1,alpha=2",
    "M=29,N=4099,K=67,tb=1,frozen=1",
    "M=40,N=33,K=100,tb=1,int=1,beta=1,frozen=1",
    "M=64,N=63,K=65,tb=1,batch=2,frozen=1",
    "M=64,N=100,K=33,tb=1,pad=2,half=1,frozen=1",
    "M=1,N=77,K=259,tb=1,pad=1,beta=0.5,frozen=1",
    "M=3,N=45,K=90,tb=1,alpha=-0.75,frozen=1",
    "M=1,N=77,K=259,tb=1,pad=1,beta=0.5,half=1,frozen=1",
    "M=1,N=50,K=64,tb=1,half=2,frozen=1",
    "M=5,N=29,K=17,tb=1,pad=15,half=1,frozen=1",
    "M=13,N=61,K=7,tb=1,beta=1,half=2,frozen=1",
    "M=1,N=4099,K=67,tb=1,alpha=2,half=1,frozen=1",
    "M=20,N=37,K=83,tb=1,pad=1,beta=1,half=1,frozen=1",
    /* the backward's products read in place (host: gemm_direct.c): C = A B
     * with few rows (row blocks of 8 with a tail, a 16-column strip, beta)
     * and with many rows but few columns (rows split across threads); C =
     * A^T B over several chunks of 256 k with row and column tails, padded,
     * and integer-exact through the chunks */
    "M=61,N=531,K=1537,alpha=-0.5,beta=0.5",
    "M=300,N=70,K=129,pad=2,alpha=0.75,beta=1",
    "M=37,N=45,K=600,ta=1,beta=0.5,pad=2",
    "M=20,N=24,K=700,ta=1,int=1,beta=1",
    NULL};
static const char *const gemm_quick[] = {"M=7,N=13,K=37,tb=1", "M=20,N=24,K=100,int=1,beta=1",
                                         "M=1,N=77,K=259,tb=1,pad=1,beta=0.5", NULL};

const sq_op sq_op_gemm = {
    "gemm",
    "|diff| <= 2(K+2)u (|alpha| (|A||B|)ij + |beta C0ij|), u = 2^-24: the worst-case bound of a "
    "K-term float sum in any order; integer-filled cases (K*64 < 2^24) are exact; half=1|2 "
    "cases hold B at bfloat16 / binary16 values, read as 16-bit ones where the device can (the "
    "same bound: the widening is exact), skipped elsewhere; frozen=1 cases (B packed once on "
    "the host) have the same bound",
    gemm_shapes, gemm_quick, 0, gemm_gen, gemm_run, gemm_tol, NULL};

/* -------------------------------------------------------------- linear ---- */
/* Shape keys of linear and grad.linear: R (rows), I (in), O (out), bias
 * (default 1), pad (extra row stride of x and y, and of dy and dx). This
 * checks them and draws the layer's x [R, I + pad] and W [O, I]. */
static seqcl_status lin_layer_gen(sq_case *c, sq_rng *r) {
  SQ_DIM(c, R, "R", 1, 1, SQ_MAXDIM);
  SQ_DIM(c, I, "I", 1, 1, SQ_MAXDIM);
  SQ_DIM(c, O, "O", 1, 1, SQ_MAXDIM);
  SQ_DIM(c, pad, "pad", 0, 0, 4096);
  SQ_NEED(sq_gen_f(c, r, "x", (size_t)R * (I + pad), 1.0f));
  SQ_NEED(sq_gen_f(c, r, "W", (size_t)O * I, 1.0f));
  return SEQCL_OK;
}

static seqcl_status linear_gen(sq_case *c, sq_rng *r) {
  SQ_TRY(lin_layer_gen(c, r));
  if (SH("bias", 1)) SQ_NEED(sq_gen_f(c, r, "b", (size_t)SH("O", 1), 1.0f));
  SQ_NEED(sq_case_out(c, "y", (size_t)SH("R", 1) * SH("O", 1), 0) >= 0);
  return SEQCL_OK;
}

static seqcl_status linear_run(sq_arena *a, const sq_case *c) {
  int R = SH("R", 1), I = SH("I", 1), O = SH("O", 1), pad = SH("pad", 0);
  sq_ref x = sq_arena_in_named(a, c, "x"), W = sq_arena_in_named(a, c, "W");
  sq_ref b = sq_arena_in_named(a, c, "b");
  sq_ref y = sq_arena_out2d(a, "y", (size_t)R, (size_t)O, (size_t)O + pad, NULL);
  SQ_TRY(a->st);
  SQ_TRY(sq_linear(a->ctx, R, I, O, x, I + pad, W, b, y, O + pad));
  return sq_finish_fetch(a, c, &y);
}

static void linear_tol(const sq_case *c, int k, double *const *ref, double *tol) {
  (void)k, (void)ref;
  int R = SH("R", 1), I = SH("I", 1), O = SH("O", 1), pad = SH("pad", 0);
  sq_abs_linear(R, I, O, sq_case_inf(c, "x"), I + pad, sq_case_inf(c, "W"), sq_case_inf(c, "b"),
                tol);
  for (size_t e = 0; e < (size_t)R * O; e++) tol[e] *= sq_dot_factor(I);
}

static const char *const linear_shapes[] = {
    "R=1,I=1,O=1",  "R=7,I=13,O=37",       "R=61,I=37,O=13,bias=0", "R=5,I=64,O=33,pad=5",
    "R=13,I=129,O=7,pad=1", "R=256,I=512,O=96", NULL};
static const char *const linear_quick[] = {"R=7,I=13,O=37", NULL};

const sq_op sq_op_linear = {
    "linear",
    "|diff| <= 2(I+2)u (sum_i |x_i||W_oi| + |b_o|): the GEMM bound with the bias as one more term",
    linear_shapes, linear_quick, 0, linear_gen, linear_run, linear_tol, NULL};

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

static seqcl_status bias_run(sq_arena *a, const sq_case *c) {
  int R = SH("R", 1), C = SH("C", 1), pad = SH("pad", 0);
  sq_ref dy = sq_arena_in_named(a, c, "dy");
  sq_ref db = sq_arena_out(a, "db", (size_t)C, sq_case_inf(c, "db0"));
  SQ_TRY(a->st);
  SQ_TRY(sq_bias_grad(a->ctx, R, C, dy, C + pad, db));
  return sq_finish_fetch(a, c, &db);
}

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

static seqcl_status tanh_run(sq_arena *a, const sq_case *c) {
  size_t n = (size_t)SH("n", 1);
  sq_ref y = sq_arena_in_named(a, c, "y"), dy = sq_arena_in_named(a, c, "dy");
  sq_ref dx = sq_arena_out(a, "dx", n, NULL);
  SQ_TRY(a->st);
  SQ_TRY(sq_tanh_bwd(a->ctx, n, y, dy, dx));
  return sq_finish_fetch(a, c, &dx);
}

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

/* ------------------------------------------------------- grad.linear ---- */
/* Shape keys as linear, plus beta (of dx, default 1; 0 overwrites dx).
 * dx = beta dx0 + dy W, dW = dW0 + dy^T x, db = db0 + column sums of dy. */
static seqcl_status lin_gen(sq_case *c, sq_rng *r) {
  SQ_TRY(lin_layer_gen(c, r));
  int R = SH("R", 1), I = SH("I", 1), O = SH("O", 1), pad = SH("pad", 0);
  SQ_NEED(sq_gen_f(c, r, "dy", (size_t)R * (O + pad), 1.0f));
  SQ_NEED(sq_gen_f(c, r, "dx0", (size_t)R * (I + pad), 1.0f));
  SQ_NEED(sq_gen_f(c, r, "dW0", (size_t)O * I, 1.0f));
  if (SH("bias", 1)) SQ_NEED(sq_gen_f(c, r, "db0", (size_t)O, 1.0f));
  SQ_NEED(sq_case_out(c, "dx", (size_t)R * I, 0) >= 0);
  SQ_NEED(sq_case_out(c, "dW", (size_t)O * I, 0) >= 0);
  if (SH("bias", 1)) SQ_NEED(sq_case_out(c, "db", (size_t)O, 0) >= 0);
  return SEQCL_OK;
}

static seqcl_status lin_run(sq_arena *a, const sq_case *c) {
  int R = SH("R", 1), I = SH("I", 1), O = SH("O", 1), pad = SH("pad", 0), bias = SH("bias", 1);
  sq_ref x = sq_arena_in_named(a, c, "x"), W = sq_arena_in_named(a, c, "W");
  sq_ref dy = sq_arena_in_named(a, c, "dy");
  sq_ref dx = sq_arena_out2d(a, "dx", (size_t)R, (size_t)I, (size_t)I + pad, sq_case_inf(c, "dx0"));
  sq_ref dW = sq_arena_out(a, "dW", (size_t)O * I, sq_case_inf(c, "dW0"));
  sq_ref db = bias ? sq_arena_out(a, "db", (size_t)O, sq_case_inf(c, "db0")) : sq_none();
  SQ_TRY(a->st);
  SQ_TRY(sq_linear_bwd(a->ctx, R, I, O, x, I + pad, W, dy, O + pad, dx, I + pad,
                       (float)sq_shape_get(&c->shape, "beta", 1), dW, db));
  return sq_finish_fetch(a, c, (sq_ref[]){dx, dW, db});
}

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
