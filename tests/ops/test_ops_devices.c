/* Every operation of the op list, at every shape, on every device (the host
 * backend and each OpenCL device), against the double-precision oracle.
 * One context per device is shared by all its tests, so PoCL compiles each
 * program once. Unsupported operations fail: both backends must fill every
 * slot the op list uses. SEQCL_TEST_OPS (a cmocka name pattern such as
 * "*attn_fused*") runs a subset. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "check/oplist.h"
#include "ops/ops.h"
#include "oracle.h"
#include "test_devices.h"

typedef struct device_test {
  seqcl_ctx *ctx;           /* NULL when the device could not be opened */
  const seqcl_device_info *info;
  char open_error[512];
  const sq_op *op;
} device_test;

static void run_op_on_device(void **state) {
  device_test *t = *state;
  if (!t->ctx) fail_msg("%s: could not open the device: %s", t->info->selector, t->open_error);
  sq_reference ref = oracle_as_reference();
  int failed = 0;
  for (size_t i = 0; t->op->shapes[i]; i++) {
    sq_case_result r;
    seqcl_status st = sq_check_case(t->ctx, t->op, t->op->shapes[i], 0, &ref, &r);
    assert_int_equal(st, SEQCL_OK);
    const char *verdict = r.verdict == SQ_PASS ? "pass" : r.verdict == SQ_SKIP ? "UNSUPPORTED" : "FAIL";
    printf("  %-10s %-22s %-44s worst %.3g (tol %.3g, %.3f of it) %s\n", t->info->selector,
           t->op->name, t->op->shapes[i], r.worst_err, r.worst_tol, r.worst_ratio, verdict);
    /* the one sanctioned skip: reduced-precision cases where the device has no
     * 16-bit products (any other unsupported case is a failure) */
    const int may_skip = strstr(t->op->shapes[i], "half=") && !sq_halfwidth_supported(t->ctx);
    if (r.verdict == SQ_SKIP && may_skip) continue;
    if (r.verdict != SQ_PASS) {
      failed++;
      printf("    %s\n    reproduce: seqcl check --device %s --op %s --shape %s --seed 0\n",
             r.message, t->info->selector, t->op->name, t->op->shapes[i]);
    }
  }
  if (failed) fail_msg("%s: %d shape(s) of %s failed", t->info->selector, failed, t->op->name);
}

int main(void) {
  if (test_devices_setup(NULL) != 0) return 1;
  const size_t ndev = device_count;
  size_t nops = 0;
  const sq_op *const *ops = sq_op_list(&nops);
  seqcl_ctx **ctxs = calloc(ndev, sizeof *ctxs);
  device_test *tests = calloc(ndev * nops, sizeof *tests);
  struct CMUnitTest *units = calloc(ndev * nops, sizeof *units);
  char **names = calloc(ndev * nops, sizeof *names);
  if (!ctxs || !tests || !units || !names) return 1;
  size_t n = 0;
  for (size_t d = 0; d < ndev; d++) {
    char open_error[512] = "";
    if (seqcl_ctx_open_info(&devices[d], &ctxs[d]) != SEQCL_OK)
      snprintf(open_error, sizeof open_error, "%s", seqcl_last_message());
    printf("device %s: %s (%s)\n", devices[d].selector, devices[d].name, devices[d].platform);
    for (size_t o = 0; o < nops; o++, n++) {
      tests[n].ctx = ctxs[d];
      tests[n].info = &devices[d];
      tests[n].op = ops[o];
      memcpy(tests[n].open_error, open_error, sizeof open_error);
      names[n] = test_unit_name(&devices[d], ops[o]->name);
      if (!names[n]) return 1;
      units[n].name = names[n];
      units[n].test_func = run_op_on_device;
      units[n].initial_state = &tests[n];
    }
  }
  const char *only = getenv("SEQCL_TEST_OPS");
  if (only && *only) cmocka_set_test_filter(only);
  int rc = _cmocka_run_group_tests("ops_devices", units, n, NULL, NULL);
  for (size_t d = 0; d < ndev; d++) seqcl_ctx_close(ctxs[d]);
  for (size_t i = 0; i < n; i++) free(names[i]);
  free(names);
  free(units);
  free(tests);
  free(ctxs);
  test_devices_teardown(NULL);
  return rc;
}
