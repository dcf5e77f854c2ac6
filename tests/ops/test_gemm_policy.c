/* The measured choice between the own decode-step GEMM kernel and CLBlast
 * (src/backend/opencl/gemm_policy.c): the first decode-sized product measures
 * and writes the choice into the program cache folder; later contexts follow
 * the kept choice without measuring; a file of another device is measured
 * over; SEQCL_GEMM=small|clblast pins the choice whatever the file says.
 * SEQCL_GEMM=measured makes a CPU device (PoCL) measure as a GPU would.
 * Needs an OpenCL device (exit 77 without one). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "backend/opencl/gemm_small.h"
#include "ops/ops.h"
#include "../device/test_util.h"

static seqcl_device_info device;

static void write_text(const char *path, const char *text) {
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  fputs(text, f);
  fclose(f);
}

/* The key line of a kept file (the first line after the header). */
static void key_line(const char *text, char *out, size_t cap) {
  const char *k = strstr(text, "key=");
  assert_non_null(k);
  size_t n = strcspn(k, "\n");
  assert_true(n < cap);
  memcpy(out, k, n);
  out[n] = '\0';
}

/* One [M, K] x [N, K]^T product on a fresh context; returns the CLBlast
 * calls and kernel launches it took, checks one result element. */
static void one_product(int M, char *policy_path, size_t cap,
                        unsigned long long *blas, unsigned long long *launches) {
  enum { N = 24, K = 37 };
  seqcl_ctx *ctx = NULL;
  assert_int_equal(seqcl_ctx_open_info(&device, &ctx), SEQCL_OK);
  if (policy_path) assert_true(sq_ocl_gemm_policy_path(sq_be(ctx), policy_path, cap));
  float a[64 * K], b[N * K], c[64 * N];
  for (int i = 0; i < 64 * K; i++) a[i] = (float)(i % 7) - 3.0f;
  for (int i = 0; i < N * K; i++) b[i] = (float)(i % 5) - 2.0f;
  sq_buf *ba = NULL, *bb = NULL, *bc = NULL;
  assert_int_equal(sq_buf_alloc(ctx, sizeof a, &ba), SEQCL_OK);
  assert_int_equal(sq_buf_alloc(ctx, sizeof b, &bb), SEQCL_OK);
  assert_int_equal(sq_buf_alloc(ctx, sizeof c, &bc), SEQCL_OK);
  assert_int_equal(sq_write(ctx, sq_at(ba, 0), a, sizeof a), SEQCL_OK);
  assert_int_equal(sq_write(ctx, sq_at(bb, 0), b, sizeof b), SEQCL_OK);
  sq_backend_counts before, after;
  sq_ocl_counters(sq_be(ctx), &before);
  assert_int_equal(sq_gemm(ctx, 0, 1, M, N, K, 1.0f, sq_at(ba, 0), K, 0, sq_at(bb, 0), K, 0, 0.0f,
                           sq_at(bc, 0), N, 0, 1),
                   SEQCL_OK);
  sq_ocl_counters(sq_be(ctx), &after);
  assert_int_equal(sq_read(ctx, sq_at(bc, 0), c, sizeof(float) * (size_t)M * N), SEQCL_OK);
  /* integer-valued products are exact in any summation order */
  double ref = 0;
  for (int k = 0; k < K; k++) ref += (double)a[(M - 1) * K + k] * b[(N - 1) * K + k];
  assert_true(c[(M - 1) * N + N - 1] == (float)ref);
  *blas = after.blas_calls - before.blas_calls;
  *launches = after.launches - before.launches;
  sq_buf_free(ba);
  sq_buf_free(bb);
  sq_buf_free(bc);
  seqcl_ctx_close(ctx);
}

/* The kept file of a test: its path, this device's key line, its text. */
typedef struct kept_file {
  char path[4400], key[1200], text[2048];
} kept_file;

/* A measured M-row product: the kept file's path and key line into k. */
static void measure_key(kept_file *k, int M) {
  char text[4096];
  unsigned long long blas, launches;
  one_product(M, k->path, sizeof k->path, &blas, &launches);
  test_read_text(k->path, text, sizeof text);
  key_line(text, k->key, sizeof k->key);
}

/* Keeps a file of k's key line with the given choice lines and no timings
 * (a measurement would write them back). */
static void keep_choices(kept_file *k, const char *choices) {
  snprintf(k->text, sizeof k->text, "seqcl-gemm-policy 1\n%s\n%s", k->key, choices);
  write_text(k->path, k->text);
}

/* Each test starts measured: a CPU device (PoCL) measures as a GPU would. */
static int measured(void **state) {
  (void)state;
  return setenv("SEQCL_GEMM", "measured", 1);
}

static void first_product_measures_and_keeps(void **state) {
  (void)state;
  char path[4400], text[4096];
  unsigned long long blas, launches;
  one_product(1, path, sizeof path, &blas, &launches);
  unlink(path);
  one_product(1, path, sizeof path, &blas, &launches);
  /* the measurement's own calls are not counted: one product, one path */
  assert_int_equal(blas + launches, 1);
  test_read_text(path, text, sizeof text);
  assert_non_null(strstr(text, "seqcl-gemm-policy 1\nkey=gemm-policy|"));
  assert_non_null(strstr(text, "\nm1="));
  assert_non_null(strstr(text, "\nm8="));
  assert_non_null(strstr(text, "\nm64="));
  assert_non_null(strstr(text, " us clblast "));
}

static void kept_choice_is_followed(void **state) {
  (void)state;
  kept_file k;
  char text[4096];
  unsigned long long blas, launches;
  measure_key(&k, 8);
  keep_choices(&k, "m1=clblast\nm8=small\nm64=clblast\n");
  one_product(1, NULL, 0, &blas, &launches);
  assert_int_equal(blas, 1);
  assert_int_equal(launches, 0);
  one_product(5, NULL, 0, &blas, &launches);
  assert_int_equal(blas, 0);
  assert_int_equal(launches, 1);
  one_product(64, NULL, 0, &blas, &launches);
  assert_int_equal(blas, 1);
  test_read_text(k.path, text, sizeof text);
  assert_string_equal(text, k.text);
}

static void foreign_file_is_measured_over(void **state) {
  (void)state;
  kept_file k;
  char text[4096];
  unsigned long long blas, launches;
  measure_key(&k, 1);
  write_text(k.path, "seqcl-gemm-policy 1\nkey=another device\nm1=small\nm8=small\nm64=small\n");
  one_product(1, NULL, 0, &blas, &launches);
  test_read_text(k.path, text, sizeof text);
  assert_null(strstr(text, "another device"));
  assert_non_null(strstr(text, " us clblast "));
  /* a truncated file too */
  write_text(k.path, "seqcl-gemm-policy 1\n");
  one_product(1, NULL, 0, &blas, &launches);
  test_read_text(k.path, text, sizeof text);
  assert_non_null(strstr(text, "\nm64="));
}

static void pinned_choice_ignores_the_file(void **state) {
  (void)state;
  kept_file k;
  unsigned long long blas, launches;
  measure_key(&k, 1);
  keep_choices(&k, "m1=small\nm8=small\nm64=small\n");
  setenv("SEQCL_GEMM", "clblast", 1);
  one_product(1, NULL, 0, &blas, &launches);
  assert_int_equal(blas, 1);
  keep_choices(&k, "m1=clblast\nm8=clblast\nm64=clblast\n");
  setenv("SEQCL_GEMM", "small", 1);
  one_product(1, NULL, 0, &blas, &launches);
  assert_int_equal(blas, 0);
  unsetenv("SEQCL_GEMM");
}

int main(void) {
  TEST_FIRST_OPENCL_DEVICE_OR_SKIP(device);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup(first_product_measures_and_keeps, measured),
      cmocka_unit_test_setup(kept_choice_is_followed, measured),
      cmocka_unit_test_setup(foreign_file_is_measured_over, measured),
      cmocka_unit_test_setup(pinned_choice_ignores_the_file, measured),
  };
  int rc = cmocka_run_group_tests(tests, NULL, NULL);
  /* the test's choices must not steer the other tests sharing the folder */
  seqcl_ctx *ctx = NULL;
  if (seqcl_ctx_open_info(&device, &ctx) == SEQCL_OK) {
    char path[4400];
    if (sq_ocl_gemm_policy_path(sq_be(ctx), path, sizeof path)) unlink(path);
    seqcl_ctx_close(ctx);
  }
  return rc;
}
