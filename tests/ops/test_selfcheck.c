/* The first-use self-check: it runs once per (device, driver, seqcl version,
 * SEQCL_KERNELS, SEQCL_GEMM), records its verdict atomically in the cache
 * folder (and warns when it cannot), refuses a device with a failing verdict
 * (naming the operation and the seqcl check command), and is skipped by
 * SEQCL_SELFCHECK=0 and while seqcl check runs. It runs every GEMM path: a
 * GEMM broken on one path only (SEQCL_FAULT_GEMM, fault-injection builds)
 * makes it fail on every OpenCL device. Needs an OpenCL device (exit 77
 * without one). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "../common/test_tmpdir.h"
#include "check/selfcheck.h"
#include "core/fault.h"
#include "../device/test_util.h"

static seqcl_device_info device;
static seqcl_device_info *opencl_devices;
static size_t n_opencl_devices;

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void first_open_runs_and_records(void **state) {
  (void)state;
  setenv("SEQCL_SELFCHECK", "1", 1);
  char path[4400], text[4096];
  assert_int_equal(sq_selfcheck_path(&device, path, sizeof path), SEQCL_OK);
  unlink(path);
  seqcl_ctx *ctx = NULL;
  double t0 = now();
  seqcl_status st = seqcl_ctx_open_info(&device, &ctx);
  double first = now() - t0;
  if (st != SEQCL_OK) fail_msg("open failed: %s", seqcl_last_message());
  seqcl_ctx_close(ctx);
  test_read_text(path, text, sizeof text);
  assert_non_null(strstr(text, "verdict=pass"));
  assert_non_null(strstr(text, device.name));
  t0 = now();
  assert_int_equal(seqcl_ctx_open_info(&device, &ctx), SEQCL_OK);
  double second = now() - t0;
  seqcl_ctx_close(ctx);
  printf("  first open (self-check, kernels compiled or loaded) %.2f s, second open %.3f s\n",
         first, second);
}

static void failing_verdict_refuses(void **state) {
  (void)state;
  setenv("SEQCL_SELFCHECK", "1", 1);
  char path[4400], text[4096];
  assert_int_equal(sq_selfcheck_path(&device, path, sizeof path), SEQCL_OK);
  test_read_text(path, text, sizeof text);
  char *v = strstr(text, "verdict=pass");
  assert_non_null(v);
  /* the same key, a failing verdict */
  char forged[4096];
  snprintf(forged, sizeof forged, "%.*sverdict=fail\nop=gemm\nshape=M=7,N=13,K=37,tb=1\n"
           "message=C[3]: got 1, reference 2\n", (int)(v - text), text);
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  fputs(forged, f);
  fclose(f);
  seqcl_ctx *ctx = NULL;
  assert_int_equal(seqcl_ctx_open_info(&device, &ctx), SEQCL_ERR_SELFCHECK);
  assert_null(ctx);
  const char *msg = seqcl_last_message();
  printf("  refused: %s\n", msg);
  assert_non_null(strstr(msg, "gemm"));
  char cmd[128];
  snprintf(cmd, sizeof cmd, "seqcl check --device %s --op gemm", device.selector);
  assert_non_null(strstr(msg, cmd));
  /* SEQCL_SELFCHECK=0 skips it; so does seqcl check's switch */
  setenv("SEQCL_SELFCHECK", "0", 1);
  assert_int_equal(seqcl_ctx_open_info(&device, &ctx), SEQCL_OK);
  seqcl_ctx_close(ctx);
  setenv("SEQCL_SELFCHECK", "1", 1);
  sq_selfcheck_suppress(1);
  assert_int_equal(seqcl_ctx_open_info(&device, &ctx), SEQCL_OK);
  seqcl_ctx_close(ctx);
  sq_selfcheck_suppress(0);
  /* a verdict for another key (an older driver) is not trusted: the check reruns */
  f = fopen(path, "w");
  assert_non_null(f);
  fputs("seqcl-selfcheck 1\nkey=some other driver\nverdict=fail\nop=gemm\n", f);
  fclose(f);
  assert_int_equal(seqcl_ctx_open_info(&device, &ctx), SEQCL_OK);
  seqcl_ctx_close(ctx);
  test_read_text(path, text, sizeof text);
  assert_non_null(strstr(text, "verdict=pass"));
}

/* The key holds the settings that pick kernels: another SEQCL_KERNELS or
 * SEQCL_GEMM is another verdict file. */
static void key_follows_settings(void **state) {
  (void)state;
  char a[4400], b[4400], c[4400];
  unsetenv("SEQCL_KERNELS");
  unsetenv("SEQCL_GEMM");
  assert_int_equal(sq_selfcheck_path(&device, a, sizeof a), SEQCL_OK);
  setenv("SEQCL_KERNELS", "gpu", 1);
  assert_int_equal(sq_selfcheck_path(&device, b, sizeof b), SEQCL_OK);
  unsetenv("SEQCL_KERNELS");
  setenv("SEQCL_GEMM", "clblast", 1);
  assert_int_equal(sq_selfcheck_path(&device, c, sizeof c), SEQCL_OK);
  unsetenv("SEQCL_GEMM");
  assert_string_not_equal(a, b);
  assert_string_not_equal(a, c);
  assert_string_not_equal(b, c);
}

/* A verdict that cannot be written is said on stderr: here the verdict
 * folder's name is taken by a file. */
static void unwritable_verdict_warns(void **state) {
  (void)state;
  setenv("SEQCL_SELFCHECK", "1", 1);
  const char *old = getenv("SEQCL_CACHE_DIR");
  char saved[4096];
  snprintf(saved, sizeof saved, "%s", old ? old : "");
  char dir[] = "/tmp/seqcl-selfcheck-XXXXXX";
  assert_non_null(mkdtemp(dir));
  char sub[256], errpath[256];
  snprintf(sub, sizeof sub, "%s/selfcheck", dir);
  snprintf(errpath, sizeof errpath, "%s/stderr.txt", dir);
  FILE *blocker = fopen(sub, "w");
  assert_non_null(blocker);
  fclose(blocker);
  setenv("SEQCL_CACHE_DIR", dir, 1);
  fflush(stderr);
  int saved_err = dup(2);
  assert_true(freopen(errpath, "w", stderr) != NULL);
  seqcl_ctx *ctx = NULL;
  seqcl_status st = seqcl_ctx_open_info(&device, &ctx);
  fflush(stderr);
  dup2(saved_err, 2);
  close(saved_err);
  seqcl_ctx_close(ctx);
  char text[4096];
  test_read_text(errpath, text, sizeof text);
  printf("  %s", text);
  assert_int_equal(st, SEQCL_OK);
  assert_non_null(strstr(text, "warning: the self-check verdict"));
  assert_non_null(strstr(text, "could not be recorded"));
  if (saved[0]) setenv("SEQCL_CACHE_DIR", saved, 1);
  else unsetenv("SEQCL_CACHE_DIR");
  unlink(errpath);
  unlink(sub);
  /* the program cache wrote its own folders there */
  assert_int_equal(test_remove_tree(dir), 0);
}

#ifdef SEQCL_FAULT_INJECTION
/* One GEMM path broken at a time: the self-check of every OpenCL device must
 * catch it and name the gemm case (CLBlast's indirect path included, which
 * the op list's first shapes never reach). The device's own small-GEMM kernel
 * serves the decode-step layout on CPU-type devices only. */
static void broken_gemm_path_fails(void **state) {
  (void)state;
  static const char *const paths[] = {"small", "direct", "indirect", "batched"};
  setenv("SEQCL_SELFCHECK", "1", 1);
  for (size_t d = 0; d < n_opencl_devices; d++) {
    const seqcl_device_info *dev = &opencl_devices[d];
    for (size_t p = 0; p < sizeof paths / sizeof *paths; p++) {
      if (!strcmp(paths[p], "small") && dev->type != SEQCL_DEVICE_CPU) continue;
      char path[4400];
      setenv("SEQCL_FAULT_GEMM", paths[p], 1);
      assert_int_equal(sq_selfcheck_path(dev, path, sizeof path), SEQCL_OK);
      unlink(path);
      seqcl_ctx *ctx = NULL;
      seqcl_status st = seqcl_ctx_open_info(dev, &ctx);
      unsetenv("SEQCL_FAULT_GEMM");
      seqcl_ctx_close(ctx);
      const char *msg = seqcl_last_message();
      printf("  %s, %s path broken: %.160s\n", dev->selector, paths[p], msg);
      if (st != SEQCL_ERR_SELFCHECK)
        fail_msg("%s with the %s GEMM path broken: %s (want SEQCL_ERR_SELFCHECK)",
                 dev->selector, paths[p], seqcl_status_name(st));
      assert_non_null(strstr(msg, "failed its self-check in "));
      /* only the self-check's own GEMMs reach the indirect path */
      if (!strcmp(paths[p], "indirect")) assert_non_null(strstr(msg, "in gemm (shape M="));
      unlink(path); /* the forged failure must not stay */
    }
  }
}
#endif

int main(void) {
  TEST_OPENCL_DEVICES_OR_SKIP(devs, n);
  device = devs[0];
  opencl_devices = devs;
  n_opencl_devices = n;
  /* The cache folder of the test environment (compiled programs are shared
   * with the other tests); this test removes its own verdict file. */
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(first_open_runs_and_records),
      cmocka_unit_test(failing_verdict_refuses),
      cmocka_unit_test(key_follows_settings),
      cmocka_unit_test(unwritable_verdict_warns),
#ifdef SEQCL_FAULT_INJECTION
      cmocka_unit_test(broken_gemm_path_fails),
#endif
  };
  int rc = cmocka_run_group_tests(tests, NULL, NULL);
  seqcl_devices_free(devs);
  char path[4400];
  if (sq_selfcheck_path(&device, path, sizeof path) == SEQCL_OK) unlink(path);
  return rc;
}
