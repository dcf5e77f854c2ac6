/* The host backend's kept large buffers (host_blocks.c): what is kept, which
 * request takes which block, the limits, and that a decode's second batch
 * reuses the first batch's buffers through the backend. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../common/test_main.h"
#include "backend/host/host_blocks.h"
#include "core/hostmem.h"
#include "ops/ops.h"
#include "seqcl/seqcl.h"

static const size_t MIB = (size_t)1 << 20;

static void *block(size_t bytes) {
  void *p = sq_hostmem_alloc(bytes);
  assert_non_null(p);
  memset(p, 0x3c, bytes); /* used, as a buffer would be */
  return p;
}

/* sq_host_blocks_take, its capacity checked: never less than asked. */
static void *take(sq_host_blocks *b, size_t bytes) {
  size_t capacity = 99;
  void *p = sq_host_blocks_take(b, bytes, &capacity);
  if (p) assert_true(capacity >= bytes);
  else assert_int_equal(capacity, 0);
  return p;
}

/* Below 64 KiB nothing is kept; a take fits the smallest block no more than a
 * quarter larger than the request, and only once. */
static void take_fits(void **state) {
  (void)state;
  sq_host_blocks b;
  sq_host_blocks_init(&b);
  sq_host_blocks_give(&b, block(SQ_HOST_BLOCKS_MIN - 1), SQ_HOST_BLOCKS_MIN - 1); /* freed */
  assert_int_equal(b.n, 0);
  void *p8 = block(8 * MIB), *p5 = block(5 * MIB), *p6 = block(6 * MIB);
  sq_host_blocks_give(&b, p8, 8 * MIB);
  sq_host_blocks_give(&b, p5, 5 * MIB);
  sq_host_blocks_give(&b, p6, 6 * MIB);
  assert_int_equal(b.n, 3);
  assert_int_equal(b.total, 19 * MIB);
  assert_null(take(&b, SQ_HOST_BLOCKS_MIN - 1)); /* too small to be kept */
  assert_null(take(&b, 9 * MIB));      /* larger than any */
  assert_null(take(&b, 2 * MIB)); /* 5 MiB is over a quarter more than its 2 MiB */
  size_t cap = 0;
  assert_ptr_equal(sq_host_blocks_take(&b, 5 * MIB + 1, &cap), p6); /* 5 MiB is too small */
  assert_int_equal(cap, 6 * MIB); /* what the block holds, not what was asked */
  assert_ptr_equal(take(&b, 4 * MIB + MIB / 2), p5); /* the smallest that fits */
  assert_ptr_equal(take(&b, 7 * MIB), p8);
  assert_null(take(&b, 7 * MIB)); /* each block once */
  assert_int_equal(b.n, 0);
  assert_int_equal(b.total, 0);
  free(p5);
  free(p6);
  free(p8);
  sq_host_blocks_release(&b);
}

/* At most SQ_HOST_BLOCKS_MAX blocks and 256 MiB in all: the oldest go first;
 * a block over the limit alone is never kept. */
static void limits(void **state) {
  (void)state;
  sq_host_blocks b;
  sq_host_blocks_init(&b);
  void *first = block(2 * MIB);
  sq_host_blocks_give(&b, first, 2 * MIB);
  for (int i = 1; i < SQ_HOST_BLOCKS_MAX + 3; i++) sq_host_blocks_give(&b, block(3 * MIB), 3 * MIB);
  assert_int_equal(b.n, SQ_HOST_BLOCKS_MAX);
  assert_null(take(&b, 2 * MIB)); /* the oldest, 2 MiB, was freed */
  sq_host_blocks_release(&b);

  sq_host_blocks_init(&b);
  for (int i = 0; i < 3; i++) sq_host_blocks_give(&b, block(100 * MIB), 100 * MIB);
  assert_int_equal(b.n, 2);
  assert_int_equal(b.total, 200 * MIB);
  sq_host_blocks_give(&b, block(257 * MIB), 257 * MIB); /* alone over the limit: freed */
  assert_int_equal(b.n, 2);
  sq_host_blocks_release(&b);
  assert_int_equal(b.n, 0);
}

/* Through the backend: a buffer freed and another of a similar size allocated
 * get the same memory, at 6 MiB (huge pages) and at 200 KiB (4 KiB pages). */
static void backend_reuses(void **state) {
  (void)state;
  seqcl_ctx *ctx = NULL;
  assert_int_equal(seqcl_ctx_open("cpu", &ctx), SEQCL_OK);
  sq_buf *a = NULL, *b = NULL;
  assert_int_equal(sq_buf_alloc(ctx, 6 * MIB, &a), SEQCL_OK);
  void *mem = a->ptr;
  sq_buf_free(a);
  assert_int_equal(sq_buf_alloc(ctx, 5 * MIB, &b), SEQCL_OK);
  assert_ptr_equal(b->ptr, mem);
  assert_int_equal(b->bytes, 5 * MIB);
  assert_int_equal(b->capacity, 6 * MIB);
  float *f = b->ptr;
  f[5 * MIB / sizeof(float) - 1] = 1.0f; /* all of it usable */
  sq_buf_free(b);
  /* a 1.2 MiB buffer holds a whole huge page: freed, a 2 MiB one fits in it,
   * and it goes back to the list as 2 MiB again */
  assert_int_equal(sq_buf_alloc(ctx, MIB + MIB / 5, &a), SEQCL_OK);
  assert_int_equal(a->capacity, sq_hostmem_capacity(MIB + MIB / 5));
  assert_int_equal(a->capacity, 2 * MIB);
  mem = a->ptr;
  sq_buf_free(a);
  assert_int_equal(sq_buf_alloc(ctx, 2 * MIB, &b), SEQCL_OK);
  assert_ptr_equal(b->ptr, mem);
  assert_int_equal(b->capacity, 2 * MIB);
  ((char *)b->ptr)[2 * MIB - 1] = 1;
  sq_buf_free(b);
  assert_int_equal(sq_buf_alloc(ctx, 200 << 10, &a), SEQCL_OK);
  mem = a->ptr;
  sq_buf_free(a);
  assert_int_equal(sq_buf_alloc(ctx, 180 << 10, &b), SEQCL_OK);
  assert_ptr_equal(b->ptr, mem);
  sq_buf_free(b);
  seqcl_ctx_close(ctx);
}

SQ_TEST_MAIN(NULL, NULL, cmocka_unit_test(take_fits), cmocka_unit_test(limits),
             cmocka_unit_test(backend_reuses))
