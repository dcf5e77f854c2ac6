/* Shared pieces of the device-area tests (and of the other tests that need
 * an OpenCL device): the OpenCL devices or a skip, opening one as a bare
 * context (no dependence on the ops layer), seeded random numbers, reading
 * a small text file. */
#ifndef SQ_TEST_DEVICE_UTIL_H
#define SQ_TEST_DEVICE_UTIL_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "core/ctx.h"

/* xorshift64*: reproducible inputs from a seed. */
static uint64_t test_rng_state = 0x9e3779b97f4a7c15ull;
static inline void test_seed(uint64_t s) { test_rng_state = s * 0x9e3779b97f4a7c15ull + 1; }
static inline uint64_t test_next(void) {
  test_rng_state ^= test_rng_state >> 12;
  test_rng_state ^= test_rng_state << 25;
  test_rng_state ^= test_rng_state >> 27;
  return test_rng_state * 0x2545f4914f6cdd1dull;
}
/* Uniform in [-1, 1], never exactly 0. */
static inline float test_uniform(void) {
  float x;
  do x = (float)((double)(test_next() >> 11) / 9007199254740992.0 * 2.0 - 1.0);
  while (x == 0.0f);
  return x;
}
/* Integer in [lo, hi]. */
static inline int test_int(int lo, int hi) {
  return lo + (int)(test_next() % (uint64_t)(hi - lo + 1));
}

/* Reads at most cap - 1 bytes of a text file into buf (empty when it cannot
 * be opened: the tests that call this check what it holds). */
static inline void test_read_text(const char *path, char *buf, size_t cap) {
  buf[0] = '\0';
  FILE *f = fopen(path, "r");
  if (!f) return;
  size_t n = fread(buf, 1, cap - 1, f);
  buf[n] = '\0';
  fclose(f);
}

/* The OpenCL devices of this machine (the host entry removed) into *out and
 * their count into *n; the listing's status. */
static inline seqcl_status test_opencl_devices(seqcl_device_info **out, size_t *n) {
  seqcl_device_info *all = NULL;
  size_t count = 0;
  *out = NULL;
  *n = 0;
  seqcl_status st = seqcl_devices_list(&all, &count);
  if (st != SEQCL_OK) return st;
  size_t k = 0;
  for (size_t i = 0; i < count; i++)
    if (all[i].type != SEQCL_DEVICE_HOST) all[k++] = all[i];
  *out = all;
  *n = k;
  return SEQCL_OK;
}

/* main's start in a test of the OpenCL devices: the devices into devs and
 * their count into n; a listing that fails is a failure (1); with no
 * device, the skip line and meson's "skipped" (77). */
#define TEST_OPENCL_DEVICES_OR_SKIP(devs, n)                                                 \
  seqcl_device_info *devs = NULL;                                                          \
  size_t n = 0;                                                                            \
  if (test_opencl_devices(&devs, &n) != SEQCL_OK) {                                        \
    printf("cannot list the devices: %s\n", seqcl_last_message());                         \
    return 1;                                                                              \
  }                                                                                        \
  if (n == 0) {                                                                            \
    printf("no OpenCL device: skipped\n");                                                 \
    free(devs);                                                                            \
    return 77;                                                                             \
  }

/* main's start in a test of the first OpenCL device: it into device, or
 * the failure or the skip of TEST_OPENCL_DEVICES_OR_SKIP. */
#define TEST_FIRST_OPENCL_DEVICE_OR_SKIP(device)                                             \
  do {                                                                                     \
    TEST_OPENCL_DEVICES_OR_SKIP(devs_, n_);                                                \
    (void)n_;                                                                              \
    (device) = devs_[0];                                                                   \
    free(devs_);                                                                           \
  } while (0)

#ifdef SEQCL_HAVE_OPENCL
/* Runs the cmocka group tests on each of the n devices in turn with ctx open
 * on it, each_device (a statement, may be empty) run first, then frees devs;
 * declares int failed, the number of failures (a device that does not open
 * counts as one). */
#define TEST_RUN_ON_DEVICES(failed, devs, n, ctx, tests, each_device)                        \
  int failed = 0;                                                                          \
  for (size_t i_ = 0; i_ < (n); i_++) {                                                    \
    printf("device %s: %s (%s)\n", devs[i_].selector, devs[i_].name, devs[i_].platform);   \
    if (test_open(&devs[i_], &(ctx)) != SEQCL_OK) {                                        \
      printf("cannot open %s: %s\n", devs[i_].selector, seqcl_last_message());             \
      failed++;                                                                            \
      continue;                                                                            \
    }                                                                                      \
    each_device;                                                                           \
    failed += cmocka_run_group_tests_name(devs[i_].selector, tests, NULL, NULL);           \
    test_close(ctx);                                                                       \
  }                                                                                        \
  free(devs)

/* A context whose backend is the OpenCL backend of `info`. */
static inline seqcl_status test_open(const seqcl_device_info *info, seqcl_ctx **out) {
  *out = calloc(1, sizeof **out);
  if (!*out) return SEQCL_ERR_OUT_OF_MEMORY;
  (*out)->info = *info;
  seqcl_status st = sq_settings_from_env(*out, &(*out)->settings);
  if (st == SEQCL_OK) st = sq_opencl_backend_create(*out, &(*out)->be);
  if (st != SEQCL_OK) {
    free(*out);
    *out = NULL;
  }
  return st;
}

static inline void test_close(seqcl_ctx *ctx) {
  if (!ctx) return;
  if (ctx->be) ctx->be->ops->destroy(ctx->be);
  free(ctx);
}
#endif

#endif
