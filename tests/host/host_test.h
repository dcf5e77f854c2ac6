/* Shared pieces of the host-backend tests: a host context, seeded inputs in
 * [-1, 1] that are never zero, and buffer helpers that fail the test on error. */
#ifndef SQ_TEST_HOST_H
#define SQ_TEST_HOST_H

#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/ctx.h"
#include "ops/ops.h"

static inline seqcl_ctx *th_open(void) {
  seqcl_device_info info;
  memset(&info, 0, sizeof info);
  info.index = info.platform_index = info.device_index = -1;
  info.type = SEQCL_DEVICE_HOST;
  snprintf(info.selector, sizeof info.selector, "cpu");
  seqcl_ctx *ctx = NULL;
  assert_int_equal(seqcl_ctx_open_info(&info, &ctx), SEQCL_OK);
  assert_non_null(ctx);
  return ctx;
}

/* Group fixtures of the tests that share one host context: th_open's context
 * in *state (cmocka hands it to each test), closed after the last test. */
static inline int th_setup_ctx(void **state) {
  *state = th_open();
  return 0;
}

static inline int th_teardown_ctx(void **state) {
  seqcl_ctx_close(*state);
  return 0;
}

/* xorshift64*: reproducible on every platform. */
typedef struct th_rng {
  uint64_t s;
} th_rng;

static inline th_rng th_seed(uint64_t seed) {
  th_rng r = {seed * 0x9E3779B97F4A7C15ull + 1};
  return r;
}

static inline uint32_t th_u32(th_rng *r) {
  r->s ^= r->s >> 12;
  r->s ^= r->s << 25;
  r->s ^= r->s >> 27;
  return (uint32_t)((r->s * 0x2545F4914F6CDD1Dull) >> 32);
}

/* Uniform in [-1, 1] without 0. */
static inline float th_unit(th_rng *r) {
  float v;
  do v = (float)((double)th_u32(r) / 2147483647.5 - 1.0);
  while (v == 0.0f);
  return v;
}

static inline void th_fill(th_rng *r, float *x, size_t n, float scale) {
  for (size_t i = 0; i < n; i++) x[i] = scale * th_unit(r);
}

/* A device buffer of n floats, written from host (NULL: left as allocated). */
static inline sq_buf *th_buf(seqcl_ctx *ctx, size_t n, const void *host) {
  sq_buf *b = NULL;
  assert_int_equal(sq_buf_alloc(ctx, n * 4, &b), SEQCL_OK);
  if (host) assert_int_equal(sq_write(ctx, sq_at(b, 0), host, n * 4), SEQCL_OK);
  return b;
}

/* Expect `call` to fail with `status` and a message containing `needle`. */
#define TH_EXPECT_ERR(call, status, needle)                                                  \
  do {                                                                                       \
    seqcl_status th_st_ = (call);                                                            \
    if (th_st_ != (status) || !strstr(seqcl_last_message(), (needle)))                       \
      fail_msg("%s\n  got %s \"%s\"\n  want %s containing \"%s\"", #call,                    \
               seqcl_status_name(th_st_), seqcl_last_message(), seqcl_status_name(status),   \
               (needle));                                                                    \
  } while (0)

#define TH_OK(call)                                                                          \
  do {                                                                                       \
    seqcl_status th_st_ = (call);                                                            \
    if (th_st_ != SEQCL_OK)                                                                  \
      fail_msg("%s\n  failed: %s \"%s\"", #call, seqcl_status_name(th_st_),                  \
               seqcl_last_message());                                                        \
  } while (0)

/* A case of an error catalogue: the valid argument set `base` with one field
 * changed, in args, makes `call` (which reads args) fail like TH_EXPECT_ERR. */
#define TH_EXPECT_ERR_CHANGED(args, base, field, value, call, status, needle)                \
  do {                                                                                       \
    (args) = (base);                                                                         \
    (args).field = (value);                                                                  \
    TH_EXPECT_ERR(call, status, needle);                                                     \
  } while (0)

#endif
