/* Opening a context: the settings read from the environment (each context
 * keeps its own, a bad value is an error naming the variable), the backend
 * registry (backends told apart by kind), and two contexts in one process
 * with different settings behaving independently; the options spellings. Run with SEQCL_THREADS=3
 * (meson.build): the host pool has three threads whatever the machine. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../common/test_main.h"
#include "backend/backend.h"
#include "backend/host/pool.h"
#include "backend/registry.h"
#include "core/ctx.h"
#include "core/settings.h"
#ifdef SEQCL_HAVE_OPENCL
#include "backend/opencl/gemm_small.h"
#include "backend/opencl/ocl.h"
#endif

static void clear_env(void) {
  unsetenv("SEQCL_KERNELS");
  unsetenv("SEQCL_GEMM");
  setenv("SEQCL_THREADS", "3", 1);
}

static seqcl_ctx *open_host(void) {
  seqcl_ctx *ctx = NULL;
  assert_int_equal(seqcl_ctx_open("cpu", &ctx), SEQCL_OK);
  assert_non_null(ctx);
  return ctx;
}

static void setenv_or_unset(const char *var, const char *value) {
  if (value)
    setenv(var, value, 1);
  else
    unsetenv(var);
}

static void settings_defaults_and_values(void **state) {
  (void)state;
  /* unset, empty (the same as unset) and every documented value; NULL: unset */
  static const struct {
    const char *kernels, *gemm, *threads;
    sq_kernel_forms want_kernels;
    sq_gemm_choice want_gemm;
    int want_threads;
  } cases[] = {
      {NULL, NULL, NULL, SQ_FORMS_AUTO, SQ_GEMM_AUTO, 0},
      {"", "auto", NULL, SQ_FORMS_AUTO, SQ_GEMM_AUTO, 0},
      {"cpu", "small", "1", SQ_FORMS_CPU, SQ_GEMM_SMALL, 1},
      {"gpu", "clblast", "64", SQ_FORMS_GPU, SQ_GEMM_CLBLAST, 64},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    setenv_or_unset("SEQCL_KERNELS", cases[i].kernels);
    setenv_or_unset("SEQCL_GEMM", cases[i].gemm);
    setenv_or_unset("SEQCL_THREADS", cases[i].threads);
    sq_settings s;
    assert_int_equal(sq_settings_from_env(NULL, &s), SEQCL_OK);
    if (s.kernels != cases[i].want_kernels || s.gemm != cases[i].want_gemm ||
        s.threads != cases[i].want_threads || s.ablated != 0)
      fail_msg("SEQCL_KERNELS=%s SEQCL_GEMM=%s SEQCL_THREADS=%s: kernels %d gemm %d threads %d "
               "ablated %u, want %d %d %d 0",
               cases[i].kernels ? cases[i].kernels : "(unset)",
               cases[i].gemm ? cases[i].gemm : "(unset)",
               cases[i].threads ? cases[i].threads : "(unset)", (int)s.kernels, (int)s.gemm,
               s.threads, s.ablated, (int)cases[i].want_kernels, (int)cases[i].want_gemm,
               cases[i].want_threads);
  }
  clear_env();
}

/* Opening a context with var=value fails with SEQCL_ERR_INVALID_ARGUMENT,
 * a NULL context and a message naming the variable and the value. */
static void expect_rejected(const char *var, const char *value) {
  clear_env();
  setenv(var, value, 1);
  seqcl_ctx *ctx = (seqcl_ctx *)&ctx; /* must be reset to NULL */
  seqcl_status st = seqcl_ctx_open("cpu", &ctx);
  const char *msg = seqcl_last_message();
  if (st != SEQCL_ERR_INVALID_ARGUMENT || ctx != NULL || !strstr(msg, var) || !strstr(msg, value))
    fail_msg("%s='%s': status %s, message '%s'", var, value, seqcl_status_name(st), msg);
  clear_env();
}

static void bad_values_are_errors(void **state) {
  (void)state;
  expect_rejected("SEQCL_KERNELS", "foo");
  expect_rejected("SEQCL_KERNELS", "CPU");
  expect_rejected("SEQCL_GEMM", "fast");
  expect_rejected("SEQCL_THREADS", "abc");
  expect_rejected("SEQCL_THREADS", "0");
  expect_rejected("SEQCL_THREADS", "65");
  expect_rejected("SEQCL_THREADS", "2x");
  /* and a good environment opens again */
  seqcl_ctx *ctx = open_host();
  seqcl_ctx_close(ctx);
}

static void registry_kinds(void **state) {
  (void)state;
  clear_env();
  assert_int_equal(sq_backend_built(SQ_BACKEND_HOST), 1);
  assert_int_equal(sq_backend_built(SQ_BACKEND_OPENCL), seqcl_has_opencl());
  seqcl_ctx *ctx = open_host();
  assert_int_equal(ctx->be->ops->kind, SQ_BACKEND_HOST);
  assert_non_null(ctx->be->ops->supports);
  assert_int_equal(ctx->be->ops->supports(ctx->be, SQ_CAP_THREADS), 1);
  assert_null(ctx->be->ops->counters);
  seqcl_ctx_close(ctx);

  seqcl_device_info *list = NULL;
  size_t n = 0;
  assert_int_equal(seqcl_devices_list(&list, &n), SEQCL_OK);
  for (size_t i = 0; i < n; i++) {
    if (list[i].type == SEQCL_DEVICE_HOST) continue;
    ctx = NULL;
    seqcl_status st = seqcl_ctx_open_info(&list[i], &ctx);
    if (st != SEQCL_OK) fail_msg("%s: %s", list[i].selector, seqcl_last_message());
    assert_int_equal(ctx->be->ops->kind, SQ_BACKEND_OPENCL);
    assert_non_null(ctx->be->ops->counters);
    assert_int_equal(ctx->be->ops->supports(ctx->be, SQ_CAP_THREADS), 0);
    seqcl_ctx_close(ctx);
  }
  seqcl_devices_free(list);

  if (!sq_backend_built(SQ_BACKEND_OPENCL)) {
    /* a device the registry has no backend for in this build */
    seqcl_device_info gpu;
    memset(&gpu, 0, sizeof gpu);
    gpu.type = SEQCL_DEVICE_GPU;
    snprintf(gpu.selector, sizeof gpu.selector, "opencl:0");
    ctx = (seqcl_ctx *)&ctx;
    assert_int_equal(seqcl_ctx_open_info(&gpu, &ctx), SEQCL_ERR_UNSUPPORTED);
    assert_null(ctx);
    assert_non_null(strstr(seqcl_last_message(), "built without OpenCL"));
  }
}

/* Two host contexts: one with SEQCL_THREADS=1, one with the ablation of the
 * thread split, one with neither; each splits work as its own settings say. */
static void host_contexts_independent(void **state) {
  (void)state;
  clear_env();
  setenv("SEQCL_THREADS", "1", 1);
  seqcl_ctx *one = open_host();
  clear_env(); /* SEQCL_THREADS=3 */
  seqcl_ctx *all = open_host();
  seqcl_ctx *abl = open_host();
  sq_ctx_set_ablated(abl, SQ_ABL_THREADS);
  assert_int_equal(sq_pool_parts(all->be, 64, 1e9), 3);
  assert_int_equal(sq_pool_parts(one->be, 64, 1e9), 1);
  assert_int_equal(sq_pool_parts(abl->be, 64, 1e9), 1);
  assert_int_equal(sq_ablated(all), 0);
  /* switching the ablation back is seen at once, and only there */
  sq_ctx_set_ablated(abl, 0);
  assert_int_equal(sq_pool_parts(abl->be, 64, 1e9), 3);
  assert_int_equal(sq_pool_parts(one->be, 64, 1e9), 1);
  seqcl_ctx_close(one);
  seqcl_ctx_close(all);
  seqcl_ctx_close(abl);
}

#ifdef SEQCL_HAVE_OPENCL
/* The first OpenCL device opened under the environment now set, or NULL. */
static seqcl_ctx *open_opencl(void) {
  seqcl_device_info *list = NULL;
  size_t n = 0;
  seqcl_ctx *ctx = NULL;
  if (seqcl_devices_list(&list, &n) != SEQCL_OK) return NULL;
  for (size_t i = 0; i < n && !ctx; i++)
    if (list[i].type != SEQCL_DEVICE_HOST && seqcl_ctx_open_info(&list[i], &ctx) != SEQCL_OK)
      fail_msg("%s: %s", list[i].selector, seqcl_last_message());
  seqcl_devices_free(list);
  return ctx;
}

static int small_wanted(seqcl_ctx *ctx) {
  /* a decode-step product the small-GEMM kernel supports: [1, 256] x [768, 256]^T */
  return sq_ocl_gemm_small_wanted(ctx->be, 0, 1, 1, 768, 256, 256, 0, 256, 0, 768, 0,
                                  1);
}

/* Contexts on one OpenCL device with different SEQCL_KERNELS, SEQCL_GEMM and
 * ablations, open at the same time. */
static void opencl_contexts_independent(void **state) {
  (void)state;
  clear_env();
  setenv("SEQCL_KERNELS", "cpu", 1);
  setenv("SEQCL_GEMM", "small", 1);
  seqcl_ctx *a = open_opencl();
  setenv("SEQCL_KERNELS", "gpu", 1);
  setenv("SEQCL_GEMM", "clblast", 1);
  seqcl_ctx *b = open_opencl();
  clear_env();
  if (!a || !b) {
    seqcl_ctx_close(a);
    seqcl_ctx_close(b);
    skip();
  }
  assert_int_equal(sq_ocl_of(a->be)->cpu_device, 1);
  assert_int_equal(sq_ocl_of(b->be)->cpu_device, 0);
  assert_int_equal(small_wanted(a), 1);
  assert_int_equal(small_wanted(b), 0);
  /* the benchmark's switches, per context */
  sq_ctx_set_ablated(a, SQ_ABL_SMALL_GEMM);
  sq_ctx_set_ablated(b, SQ_FORCE_SMALL_GEMM);
  assert_int_equal(small_wanted(a), 0);
  assert_int_equal(small_wanted(b), 1);
  sq_ctx_set_ablated(a, 0);
  sq_ctx_set_ablated(b, 0);
  assert_int_equal(small_wanted(a), 1);
  assert_int_equal(small_wanted(b), 0);
  /* the environment is read when a context opens, not later */
  setenv("SEQCL_GEMM", "clblast", 1);
  assert_int_equal(small_wanted(a), 1);
  clear_env();
  seqcl_ctx_close(a);
  seqcl_ctx_close(b);
}
/* main's list entry for it (an #ifdef cannot stand inside SQ_TEST_MAIN). */
#define OPENCL_CONTEXT_TESTS cmocka_unit_test(opencl_contexts_independent),
#else
#define OPENCL_CONTEXT_TESTS
#endif

/* One spelling for filling options (seqcl_X_options_init); the earlier
 * _default spellings still give the same defaults. */
/* X_init(&out) and X_default fill every byte of their T alike, whatever
 * each held before. */
#define EXPECT_SAME_FILL(T, init, deflt, out)                                                \
  do {                                                                                       \
    T other_;                                                                                \
    memset(&(out), 0x5a, sizeof(out));                                                       \
    memset(&other_, 0xa5, sizeof other_);                                                    \
    init(&(out));                                                                            \
    deflt(&other_);                                                                          \
    assert_memory_equal(&(out), &other_, sizeof(out));                                       \
  } while (0)

static void options_init_spellings(void **state) {
  (void)state;
  seqcl_train_options a;
  EXPECT_SAME_FILL(seqcl_train_options, seqcl_train_options_init, seqcl_train_options_default, a);
  assert_int_equal(a.length, 6);
  seqcl_train_files_options f;
  EXPECT_SAME_FILL(seqcl_train_files_options, seqcl_train_files_options_init,
                   seqcl_train_files_options_default, f);
  assert_int_equal(f.steps, 0); /* 1000, or on resume the checkpoint's total */
}

SQ_TEST_MAIN(NULL, NULL,
      cmocka_unit_test(settings_defaults_and_values),
      cmocka_unit_test(bad_values_are_errors),
      cmocka_unit_test(registry_kinds),
      cmocka_unit_test(host_contexts_independent),
      cmocka_unit_test(options_init_spellings),
      OPENCL_CONTEXT_TESTS)
