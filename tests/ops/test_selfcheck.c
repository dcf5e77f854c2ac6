/* The first-use self-check: it runs once per (device, driver, seqcl version),
 * records its verdict atomically in the cache folder, refuses a device with a
 * failing verdict (naming the operation and the seqcl check command), and is
 * skipped by SEQCL_SELFCHECK=0 and while seqcl check runs. Needs an OpenCL
 * device (exit 77 without one). */
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

#include "check/selfcheck.h"

static seqcl_device_info device;

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void read_file(const char *path, char *buf, size_t cap) {
  buf[0] = '\0';
  FILE *f = fopen(path, "r");
  if (!f) return;
  size_t n = fread(buf, 1, cap - 1, f);
  buf[n] = '\0';
  fclose(f);
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
  read_file(path, text, sizeof text);
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
  read_file(path, text, sizeof text);
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
  read_file(path, text, sizeof text);
  assert_non_null(strstr(text, "verdict=pass"));
}

int main(void) {
  seqcl_device_info *list = NULL;
  size_t n = 0;
  if (seqcl_devices_list(&list, &n) != SEQCL_OK) return 1;
  int found = 0;
  for (size_t i = 0; i < n && !found; i++)
    if (list[i].type != SEQCL_DEVICE_HOST) device = list[i], found = 1;
  seqcl_devices_free(list);
  if (!found) {
    printf("no OpenCL device: skipped\n");
    return 77;
  }
  /* The cache folder of the test environment (compiled programs are shared
   * with the other tests); this test removes its own verdict file. */
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(first_open_runs_and_records),
      cmocka_unit_test(failing_verdict_refuses),
  };
  int rc = cmocka_run_group_tests(tests, NULL, NULL);
  char path[4400];
  if (sq_selfcheck_path(&device, path, sizeof path) == SEQCL_OK) unlink(path);
  return rc;
}
