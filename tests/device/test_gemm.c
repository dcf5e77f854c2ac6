/* GEMM of the OpenCL backend (CLBlast) on every OpenCL device against a
 * double-precision reference: shapes 1, primes, non-multiples of 16, all four
 * transpose combinations, alpha/beta, ld > cols, element offsets and strided
 * batches, with guard checks around every output.
 *
 * Tolerance, element-wise: |C - ref| <= 2·K·2^-24·|alpha|·(|A||B|)ij
 *                                       + 2^-23·(|alpha·(AB)ij| + |beta·C0ij|).
 * The first term bounds any order of K float products and sums (each of the K
 * additions and products rounds by at most 2^-24 of a partial sum, which is
 * bounded by (|A||B|)ij); the second covers scaling by alpha and adding beta·C0
 * (two more roundings of the result). An integer-filled case, where every partial
 * sum is an integer below 2^24, must match exactly. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "test_util.h"

typedef struct gcase {
  int ta, tb, M, N, K;
  float alpha, beta;
  int pad_a, pad_b, pad_c; /* ld = stored columns + pad */
  size_t off_a, off_b, off_c;
  int batch;
  int integer; /* integer-valued inputs, exact comparison */
  int nan_c;   /* C starts as NaN (beta must be 0): must not leak */
} gcase;

static seqcl_ctx *ctx;
static double worst_ratio;

static float fill_value(int integer) {
  return integer ? (float)test_int(-8, 8) : test_uniform();
}

static void run_case(const gcase *c) {
  sq_backend *be = ctx->be;
  int ar = c->ta ? c->K : c->M, acol = c->ta ? c->M : c->K; /* stored A: ar x acol */
  int br = c->tb ? c->N : c->K, bcol = c->tb ? c->K : c->N;
  int lda = acol + c->pad_a, ldb = bcol + c->pad_b, ldc = c->N + c->pad_c;
  /* batch strides leave a gap of 3 elements that nothing may touch */
  size_t sa = (size_t)ar * lda + 3, sb = (size_t)br * ldb + 3, sc = (size_t)c->M * ldc + 3;
  size_t na = c->off_a + sa * c->batch, nb = c->off_b + sb * c->batch, nc = c->off_c + sc * c->batch;
  float *A = malloc(na * 4), *B = malloc(nb * 4), *C0 = malloc(nc * 4), *C = malloc(nc * 4);
  assert_non_null(A);
  assert_non_null(B);
  assert_non_null(C0);
  assert_non_null(C);
  for (size_t i = 0; i < na; i++) A[i] = fill_value(c->integer);
  for (size_t i = 0; i < nb; i++) B[i] = fill_value(c->integer);
  for (size_t i = 0; i < nc; i++) C0[i] = fill_value(c->integer);
  if (c->nan_c)
    for (int b = 0; b < c->batch; b++)
      for (int i = 0; i < c->M; i++)
        for (int j = 0; j < c->N; j++) C0[c->off_c + b * sc + (size_t)i * ldc + j] = NAN;

  sq_buf *bA = NULL, *bB = NULL, *bC = NULL;
  assert_int_equal(be->ops->buf_alloc(be, na * 4, &bA), SEQCL_OK);
  assert_int_equal(be->ops->buf_alloc(be, nb * 4, &bB), SEQCL_OK);
  assert_int_equal(be->ops->buf_alloc(be, nc * 4, &bC), SEQCL_OK);
  assert_int_equal(be->ops->write(be, sq_at(bA, 0), A, na * 4), SEQCL_OK);
  assert_int_equal(be->ops->write(be, sq_at(bB, 0), B, nb * 4), SEQCL_OK);
  assert_int_equal(be->ops->write(be, sq_at(bC, 0), C0, nc * 4), SEQCL_OK);
  seqcl_status st = be->ops->gemm(be, c->ta, c->tb, c->M, c->N, c->K, c->alpha, sq_at(bA, c->off_a),
                                  lda, sa, sq_at(bB, c->off_b), ldb, sb, c->beta,
                                  sq_at(bC, c->off_c), ldc, sc, c->batch);
  if (st != SEQCL_OK) print_error("gemm: %s\n", seqcl_last_message());
  assert_int_equal(st, SEQCL_OK);
  assert_int_equal(be->ops->read(be, sq_at(bC, 0), C, nc * 4), SEQCL_OK);

  char *inside = calloc(nc, 1);
  assert_non_null(inside);
  for (int b = 0; b < c->batch; b++) {
    const float *a = A + c->off_a + b * sa, *bb = B + c->off_b + b * sb;
    for (int i = 0; i < c->M; i++)
      for (int j = 0; j < c->N; j++) {
        double sum = 0, mag = 0;
        for (int k = 0; k < c->K; k++) {
          double x = c->ta ? a[(size_t)k * lda + i] : a[(size_t)i * lda + k];
          double y = c->tb ? bb[(size_t)j * ldb + k] : bb[(size_t)k * ldb + j];
          sum += x * y;
          mag += fabs(x) * fabs(y);
        }
        size_t at = c->off_c + b * sc + (size_t)i * ldc + j;
        inside[at] = 1;
        double c0 = c->beta == 0.0f ? 0.0 : (double)C0[at];
        double ref = c->alpha * sum + c->beta * c0;
        double tol = 2.0 * c->K * ldexp(1.0, -24) * fabs(c->alpha) * mag +
                     ldexp(1.0, -23) * (fabs(c->alpha * sum) + fabs(c->beta * c0));
        if (c->integer) tol = 0;
        double err = fabs((double)C[at] - ref);
        if (!(err <= tol)) {
          print_error("case ta=%d tb=%d M=%d N=%d K=%d batch=%d: C[%d][%d][%d] = %.9g, ref %.9g, "
                      "|diff| %.3g > tol %.3g\n",
                      c->ta, c->tb, c->M, c->N, c->K, c->batch, b, i, j, C[at], ref, err, tol);
          fail();
        }
        if (tol > 0 && err / tol > worst_ratio) worst_ratio = err / tol;
      }
  }
  /* guards: everything outside the M x N windows is untouched, bit for bit */
  for (size_t i = 0; i < nc; i++)
    if (!inside[i] && memcmp(&C[i], &C0[i], 4) != 0) {
      print_error("gemm wrote outside its output at element %zu\n", i);
      fail();
    }
  free(inside);
  be->ops->buf_free(be, bA);
  be->ops->buf_free(be, bB);
  be->ops->buf_free(be, bC);
  free(A);
  free(B);
  free(C0);
  free(C);
}

/* c with each (ta, tb) in turn: NN, TN, NT, TT (c's own ta and tb are ignored). */
static void run_transposes(gcase c) {
  for (int t = 0; t < 4; t++) {
    c.ta = t & 1;
    c.tb = t >> 1;
    run_case(&c);
  }
}

static void test_shapes_and_transposes(void **state) {
  (void)state;
  static const int shapes[][3] = {{1, 1, 1}, {7, 13, 37}, {61, 37, 13}, {13, 61, 7},
                                  {17, 33, 65}, {1, 61, 37}, {37, 1, 61}};
  test_seed(1);
  for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
    run_transposes((gcase){0, 0, shapes[s][0], shapes[s][1], shapes[s][2], 1.0f, 0.0f,
                           0, 0, 0, 0, 0, 0, 1, 0, 0});
}

static void test_alpha_beta_ld_offsets(void **state) {
  (void)state;
  test_seed(2);
  for (int t = 0; t < 4; t++) {
    gcase c = {t & 1, t >> 1, 13, 37, 61, -0.75f, 0.5f, 3, 5, 7, 11, 2, 9, 1, 0, 0};
    run_case(&c);
    gcase d = {t & 1, t >> 1, 37, 7, 17, 1.5f, -1.0f, 1, 16, 2, 1, 5, 3, 1, 0, 0};
    run_case(&d);
  }
  /* beta = 0 ignores C, NaN included (as BLAS does) */
  gcase n = {0, 1, 7, 13, 37, 1.0f, 0.0f, 2, 0, 4, 0, 0, 5, 1, 0, 1};
  run_case(&n);
}

static void test_strided_batches(void **state) {
  (void)state;
  test_seed(3);
  run_transposes((gcase){0, 0, 7, 13, 37, 1.0f, 0.0f, 0, 0, 0, 0, 0, 0, 3, 0, 0});
  gcase d = {1, 0, 61, 13, 7, 0.5f, 2.0f, 2, 1, 3, 4, 6, 8, 5, 0, 0};
  run_case(&d);
}

static void test_larger_and_exact(void **state) {
  (void)state;
  test_seed(4);
  /* big enough for CLBlast's indirect (tiled, padded) path on most devices */
  gcase big = {0, 1, 257, 130, 200, 1.0f, 0.0f, 3, 1, 5, 7, 0, 3, 1, 0, 0};
  run_case(&big);
  gcase mult = {0, 0, 64, 64, 64, 1.0f, 1.0f, 0, 0, 0, 0, 0, 0, 1, 0, 0};
  run_case(&mult);
  /* integer-filled: K·8·8 = 3904 << 2^24, every partial sum exact -> identical */
  run_transposes((gcase){0, 0, 37, 61, 61, 1.0f, 1.0f, 1, 2, 3, 4, 5, 6, 1, 1, 0});
  gcase ib = {0, 0, 13, 7, 61, 2.0f, -1.0f, 0, 0, 0, 0, 0, 0, 4, 1, 0};
  run_case(&ib);
  gcase ibig = {0, 1, 257, 130, 200, 1.0f, 0.0f, 0, 0, 0, 0, 0, 0, 1, 1, 0};
  run_case(&ibig);
  print_message("worst error / tolerance over all cases: %.3g\n", worst_ratio);
}

int main(void) {
  TEST_OPENCL_DEVICES_OR_SKIP(devs, n);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_shapes_and_transposes),
      cmocka_unit_test(test_alpha_beta_ld_offsets),
      cmocka_unit_test(test_strided_batches),
      cmocka_unit_test(test_larger_and_exact),
  };
  TEST_RUN_ON_DEVICES(failed, devs, n, ctx, tests, worst_ratio = 0);
  return failed ? 1 : 0;
}
