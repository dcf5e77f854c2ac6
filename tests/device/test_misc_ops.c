/* The small ops of the OpenCL backend (kernels/memory.cl, linear.cl,
 * embedding.cl, loss.cl, decode.cl) on every OpenCL device,
 * against double-precision references: fill/fill_i32/copy, add_bias, embedding,
 * argmax (ties, bias), log_softmax (logits far beyond ±88) and cross_entropy
 * (ignored rows, no valid row). Sizes are odd and larger than any work-group so
 * the rounding-up and bounds checks are exercised; every output sits between
 * guard elements that must stay untouched. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "test_util.h"

#define EPS 1.1920928955078125e-07 /* 2^-23 */
#define GUARD 5                    /* guard elements before and after each output */
static const float sentinel = -12345.5f;

static seqcl_ctx *ctx;

/* A device buffer holding n elements after GUARD sentinels, GUARD after. */
static sq_buf *upload(const void *data, size_t n) {
  sq_backend *be = ctx->be;
  sq_buf *b = NULL;
  size_t total = n + 2 * GUARD;
  float *tmp = malloc(total * 4);
  assert_non_null(tmp);
  for (size_t i = 0; i < total; i++) tmp[i] = sentinel;
  if (data) memcpy(tmp + GUARD, data, n * 4);
  assert_int_equal(be->ops->buf_alloc(be, total * 4, &b), SEQCL_OK);
  assert_int_equal(be->ops->write(be, sq_at(b, 0), tmp, total * 4), SEQCL_OK);
  free(tmp);
  return b;
}

/* Reads the n elements back and checks the guards. */
static void download(sq_buf *b, void *out, size_t n) {
  sq_backend *be = ctx->be;
  size_t total = n + 2 * GUARD;
  float *tmp = malloc(total * 4);
  assert_non_null(tmp);
  seqcl_status st = be->ops->read(be, sq_at(b, 0), tmp, total * 4);
  if (st != SEQCL_OK) print_error("%s\n", seqcl_last_message());
  assert_int_equal(st, SEQCL_OK);
  for (size_t i = 0; i < GUARD; i++) {
    assert_memory_equal(&tmp[i], &sentinel, 4);
    assert_memory_equal(&tmp[GUARD + n + i], &sentinel, 4);
  }
  memcpy(out, tmp + GUARD, n * 4);
  free(tmp);
}

static sq_ref at(sq_buf *b) { return sq_at(b, GUARD); }

static void ok(seqcl_status st) {
  if (st != SEQCL_OK) print_error("%s\n", seqcl_last_message());
  assert_int_equal(st, SEQCL_OK);
}

static void test_fill_copy(void **state) {
  (void)state;
  sq_backend *be = ctx->be;
  const size_t n = 1031; /* prime, > any work-group */
  sq_buf *a = upload(NULL, n), *b = upload(NULL, n);
  ok(be->ops->fill(be, at(a), n, -0.375f));
  float *x = malloc(n * 4);
  download(a, x, n);
  for (size_t i = 0; i < n; i++) assert_true(x[i] == -0.375f);
  ok(be->ops->fill_i32(be, at(b), n, -7));
  int32_t *y = malloc(n * 4);
  download(b, y, n);
  for (size_t i = 0; i < n; i++) assert_int_equal(y[i], -7);
  /* copy an inner range with offsets on both sides */
  for (size_t i = 0; i < n; i++) x[i] = test_uniform();
  sq_buf *c = upload(x, n);
  ok(be->ops->copy(be, sq_ref_add(at(a), 3), sq_ref_add(at(c), 10), n - 20));
  float *z = malloc(n * 4);
  download(a, z, n);
  for (size_t i = 0; i < n; i++)
    assert_true(z[i] == ((i >= 3 && i < 3 + n - 20) ? x[i + 7] : -0.375f));
  /* a transfer outside a buffer is refused, not passed to the driver */
  assert_int_equal(be->ops->read(be, sq_at(a, n + 2 * GUARD), z, 4), SEQCL_ERR_INVALID_ARGUMENT);
  free(x);
  free(y);
  free(z);
  be->ops->buf_free(be, a);
  be->ops->buf_free(be, b);
  be->ops->buf_free(be, c);
}

/* y + b is one correctly rounded float addition: the result must be exact. */
static void test_add_bias(void **state) {
  (void)state;
  sq_backend *be = ctx->be;
  const int rows = 37, cols = 61, ld = 67;
  size_t n = (size_t)rows * ld;
  float *y = malloc(n * 4), *b = malloc(cols * 4), *out = malloc(n * 4);
  for (size_t i = 0; i < n; i++) y[i] = test_uniform();
  for (int i = 0; i < cols; i++) b[i] = test_uniform();
  sq_buf *by = upload(y, n), *bb = upload(b, cols);
  ok(be->ops->add_bias(be, rows, cols, at(by), ld, at(bb)));
  download(by, out, n);
  for (int r = 0; r < rows; r++)
    for (int c = 0; c < ld; c++) {
      size_t i = (size_t)r * ld + c;
      float want = c < cols ? y[i] + b[c] : y[i]; /* padding columns untouched */
      assert_memory_equal(&out[i], &want, 4);
    }
  free(y);
  free(b);
  free(out);
  be->ops->buf_free(be, by);
  be->ops->buf_free(be, bb);
}

/* A gather: exact. */
static void test_embedding(void **state) {
  (void)state;
  sq_backend *be = ctx->be;
  const int V = 13, D = 37, N = 29, ld = 41;
  float *table = malloc((size_t)V * D * 4), *out = malloc((size_t)N * ld * 4);
  int32_t ids[29];
  for (int i = 0; i < V * D; i++) table[i] = test_uniform();
  for (int i = 0; i < N; i++) ids[i] = i < V ? i : test_int(0, V - 1);
  ids[N - 1] = V - 1;
  for (int i = 0; i < N * ld; i++) out[i] = 7.0f;
  sq_buf *bt = upload(table, (size_t)V * D), *bi = upload(ids, N), *bo = upload(out, (size_t)N * ld);
  ok(be->ops->embedding(be, N, D, at(bi), at(bt), at(bo), ld));
  download(bo, out, (size_t)N * ld);
  for (int n = 0; n < N; n++)
    for (int d = 0; d < ld; d++) {
      float want = d < D ? table[(size_t)ids[n] * D + d] : 7.0f;
      assert_memory_equal(&out[(size_t)n * ld + d], &want, 4);
    }
  free(table);
  free(out);
  be->ops->buf_free(be, bt);
  be->ops->buf_free(be, bi);
  be->ops->buf_free(be, bo);
}

static void test_argmax(void **state) {
  (void)state;
  sq_backend *be = ctx->be;
  const int N = 9, V = 1001, ld = 1003;
  float *x = malloc((size_t)N * ld * 4), *bias = malloc(V * 4);
  for (int i = 0; i < N * ld; i++) x[i] = test_uniform();
  for (int i = 0; i < V; i++) bias[i] = 0.25f * test_uniform();
  /* row 0: a tie between 17 and 900 -> 17; row 1: tie at 0 and V-1 -> 0;
   * row 2: the max in the last column; row 3: all equal -> 0;
   * row 4: the max only in the ld padding (must be ignored); row 5: -inf everywhere but one;
   * NaN counts as the largest value, its first occurrence winning (as torch.argmax):
   * row 6: NaN at 300 and 600 after a larger number -> 300; row 7: NaN first -> 0;
   * row 8: -0 at 40 before +0 at 41 above negatives -> 40 (equal values) */
  x[0 * ld + 17] = x[0 * ld + 900] = 5.0f;
  x[1 * ld + 0] = x[1 * ld + V - 1] = 5.0f;
  x[2 * ld + V - 1] = 5.0f;
  for (int v = 0; v < V; v++) x[3 * ld + v] = 0.5f;
  x[4 * ld + V] = 100.0f;
  x[4 * ld + 500] = 3.0f;
  for (int v = 0; v < V; v++) x[5 * ld + v] = -INFINITY;
  x[5 * ld + 777] = -1e30f;
  x[6 * ld + 10] = 50.0f;
  x[6 * ld + 300] = x[6 * ld + 600] = NAN;
  x[7 * ld + 0] = NAN;
  for (int v = 0; v < V; v++) x[8 * ld + v] = -1.0f - test_uniform() * test_uniform();
  x[8 * ld + 40] = -0.0f;
  x[8 * ld + 41] = 0.0f;
  sq_buf *bx = upload(x, (size_t)N * ld), *bb = upload(bias, V), *bi = upload(NULL, N);
  int32_t ids[9];
  for (int with_bias = 0; with_bias < 2; with_bias++) {
    ok(be->ops->argmax(be, N, V, at(bx), ld, with_bias ? at(bb) : sq_none(), at(bi)));
    download(bi, ids, N);
    for (int n = 0; n < N; n++) {
      int best = 0;
      double bv = -INFINITY;
      for (int v = 0; v < V; v++) {
        double val = (double)(x[(size_t)n * ld + v] + (with_bias ? bias[v] : 0.0f));
        if (isnan(val)) { /* the first NaN */
          best = v;
          break;
        }
        if (val > bv) { /* strict: the lowest index wins a tie */
          bv = val;
          best = v;
        }
      }
      if (ids[n] != best) print_error("row %d bias %d: got %d, want %d\n", n, with_bias, ids[n], best);
      assert_int_equal(ids[n], best);
    }
    if (!with_bias) {
      assert_int_equal(ids[0], 17);
      assert_int_equal(ids[1], 0);
      assert_int_equal(ids[2], V - 1);
      assert_int_equal(ids[3], 0);
      assert_int_equal(ids[4], 500);
      assert_int_equal(ids[5], 777);
      assert_int_equal(ids[6], 300);
      assert_int_equal(ids[7], 0);
      assert_int_equal(ids[8], 40);
    }
  }
  free(x);
  free(bias);
  be->ops->buf_free(be, bx);
  be->ops->buf_free(be, bb);
  be->ops->buf_free(be, bi);
}

/* log-sum-exp of a row in double. */
static void ref_lse(const float *x, int V, double *m, double *lse) {
  *m = -INFINITY;
  for (int v = 0; v < V; v++) *m = fmax(*m, x[v]);
  double s = 0;
  for (int v = 0; v < V; v++) s += exp(x[v] - *m);
  *lse = log(s);
}

/* Tolerance of one log_softmax element y = (x - m) - lse: the subtraction
 * x - m and the final one round by 2^-24 of their magnitudes; lse = log(sum)
 * carries the sum's relative error (each term exp(.) within 4 ulp, summed in a
 * tree of depth <= V/16 + 12 for work-groups of >= 16) plus log's own 4 ulp. */
static double lsm_tol(double xm, double lse, int V) {
  return EPS * (2.0 * (fabs(xm) + fabs(lse)) + 4.0 + (V / 16.0 + 12.0) + 4.0 * fabs(lse));
}

static void test_log_softmax(void **state) {
  (void)state;
  sq_backend *be = ctx->be;
  static const int Vs[] = {1, 2, 13, 257, 1031};
  for (size_t vi = 0; vi < sizeof Vs / sizeof Vs[0]; vi++) {
    const int V = Vs[vi], N = 7;
    float *x = malloc((size_t)N * V * 4), *y = malloc((size_t)N * V * 4);
    for (int i = 0; i < N * V; i++) x[i] = 4.0f * test_uniform();
    /* rows 1..3: logits far outside exp's float range, where a naive
     * exp(x) / sum overflows or underflows */
    for (int v = 0; v < V; v++) {
      x[1 * V + v] = 100.0f + 50.0f * test_uniform();
      x[2 * V + v] = -1000.0f + 300.0f * test_uniform();
      x[3 * V + v] = (v % 2 ? 1000.0f : -1000.0f) * test_uniform();
    }
    sq_buf *bx = upload(x, (size_t)N * V), *by = upload(NULL, (size_t)N * V);
    ok(be->ops->log_softmax(be, N, V, at(bx), at(by)));
    download(by, y, (size_t)N * V);
    for (int n = 0; n < N; n++) {
      double m, lse;
      ref_lse(x + (size_t)n * V, V, &m, &lse);
      for (int v = 0; v < V; v++) {
        double xm = (double)x[(size_t)n * V + v] - m;
        double ref = xm - lse, got = y[(size_t)n * V + v];
        assert_true(isfinite(got));
        double tol = lsm_tol(xm, lse, V);
        if (!(fabs(got - ref) <= tol)) {
          print_error("V=%d row %d v %d: %.9g vs %.9g (tol %.3g)\n", V, n, v, got, ref, tol);
          fail();
        }
      }
    }
    free(x);
    free(y);
    be->ops->buf_free(be, bx);
    be->ops->buf_free(be, by);
  }
}

static void test_cross_entropy(void **state) {
  (void)state;
  sq_backend *be = ctx->be;
  const int N = 41, V = 263;
  float *x = malloc((size_t)N * V * 4);
  int32_t labels[41];
  for (int i = 0; i < N * V; i++) x[i] = 3.0f * test_uniform();
  for (int v = 0; v < V; v++) x[5 * V + v] = 200.0f * test_uniform(); /* beyond ±88 */
  for (int n = 0; n < N; n++) labels[n] = (n % 4 == 3) ? -100 : test_int(0, V - 1);
  labels[0] = 0;
  labels[1] = V - 1;
  labels[2] = -1;
  sq_buf *bx = upload(x, (size_t)N * V), *bl = upload(labels, N), *bo = upload(NULL, 1);
  ok(be->ops->cross_entropy(be, N, V, at(bx), at(bl), at(bo)));
  float loss;
  download(bo, &loss, 1);
  double sum = 0, max_term = 0;
  int count = 0;
  for (int n = 0; n < N; n++) {
    if (labels[n] < 0) continue;
    double m, lse;
    ref_lse(x + (size_t)n * V, V, &m, &lse);
    double term = lse - ((double)x[(size_t)n * V + labels[n]] - m);
    sum += term;
    max_term = fmax(max_term, fabs(term) + fabs(lse));
    count++;
  }
  double ref = sum / count;
  /* each term within lsm_tol of its magnitude; the compensated sum and the
   * division add a few ulp of the mean */
  double tol = lsm_tol(max_term, max_term, V) + 4 * EPS * fabs(ref);
  if (!(fabs(loss - ref) <= tol)) print_error("loss %.9g vs %.9g (tol %.3g)\n", loss, ref, tol);
  assert_true(fabs(loss - ref) <= tol);

  /* every row ignored: exactly 0 */
  int32_t none[41];
  for (int n = 0; n < N; n++) none[n] = -100;
  sq_buf *bn = upload(none, N);
  ok(be->ops->cross_entropy(be, N, V, at(bx), at(bn), at(bo)));
  download(bo, &loss, 1);
  assert_true(loss == 0.0f);
  free(x);
  be->ops->buf_free(be, bx);
  be->ops->buf_free(be, bl);
  be->ops->buf_free(be, bo);
  be->ops->buf_free(be, bn);
}

static void test_huge_alloc_refused(void **state) {
  (void)state;
  sq_backend *be = ctx->be;
  ok(be->ops->finish(be));
  sq_buf *b = NULL;
  /* larger than any device allows in one buffer */
  assert_int_equal(be->ops->buf_alloc(be, (size_t)1 << 62, &b), SEQCL_ERR_DEVICE_OUT_OF_MEMORY);
  assert_null(b);
  assert_non_null(strstr(seqcl_last_message(), "4611686018427387904"));
}

int main(void) {
  TEST_OPENCL_DEVICES_OR_SKIP(devs, n);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_fill_copy),      cmocka_unit_test(test_add_bias),
      cmocka_unit_test(test_embedding),      cmocka_unit_test(test_argmax),
      cmocka_unit_test(test_log_softmax),    cmocka_unit_test(test_cross_entropy),
      cmocka_unit_test(test_huge_alloc_refused),
  };
  test_seed(42);
  TEST_RUN_ON_DEVICES(failed, devs, n, ctx, tests, (void)0);
  return failed ? 1 : 0;
}
