/* The host backend's table and memory; the ops live one family per file
 * (host_<family>.c). Buffers are plain aligned host
 * memory; every slot runs to completion before it returns, so finish() has
 * nothing to wait for.
 *
 * Threads: the products and the row loops of the heavier slots split across
 * seqcl's own pool (pool.c, SEQCL_THREADS); OpenBLAS runs single-threaded
 * inside each part (threads.c). */
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend/host/gemm_nt.h"
#include "backend/host/host.h"
#include "backend/host/host_threads.h"
#include "backend/host/pool.h"
#include "core/ctx.h"
#include "core/fault.h"
#include "core/halfwidth.h"
#include "core/hostmem.h"

static seqcl_status host_buf_alloc(sq_backend *be, size_t bytes, sq_buf **out) {
  *out = NULL;
  sq_buf *buf = malloc(sizeof *buf);
  /* Cache-line alignment keeps every row start that is a multiple of 16 floats
   * aligned for the vector loads; a large buffer (a model's weights, a
   * workspace) is on huge pages where the kernel has them (core/hostmem.h) */
  void *mem = NULL;
  size_t capacity = 0;
  if (buf && !sq_fault_hit(SQ_FAULT_ALLOC)) {
    sq_host *h = be->impl;
    mem = sq_host_blocks_take(&h->blocks, bytes, &capacity);
    if (!mem) {
      mem = sq_hostmem_alloc(bytes);
      capacity = sq_hostmem_capacity(bytes);
    }
  }
  if (!mem) {
    free(buf);
    return sq_fail(be->ctx, SEQCL_ERR_OUT_OF_MEMORY,
                   "host backend: cannot allocate a buffer of %zu bytes", bytes);
  }
  buf->be = be;
  buf->bytes = bytes;
  buf->ptr = mem;
  buf->half = NULL;
  buf->half_width = SQ_HALF_NONE;
  buf->weights_lo = buf->weights_hi = 0;
  buf->packed = NULL;
  buf->capacity = capacity;
  *out = buf;
  return SEQCL_OK;
}

static void drop_half(sq_buf *buf) {
  free(buf->half);
  buf->half = NULL;
  buf->half_width = SQ_HALF_NONE;
}

/* A write of count floats at dst: the 16-bit copy of its buffer and the
 * packed copies it overlaps no longer hold. */
static void drop_copies(sq_ref dst, size_t count) {
  if (dst.buf->half) drop_half(dst.buf);
  sq_host_packed_drop_range(dst.buf, dst.off, count);
}

static void host_buf_free(sq_backend *be, sq_buf *buf) {
  if (!buf) return;
  sq_host *h = be->impl;
  sq_host_packed_free(buf);
  free(buf->half);
  sq_host_blocks_give(&h->blocks, buf->ptr, buf->capacity);
  free(buf);
}

static seqcl_status host_write(sq_backend *be, sq_ref dst, const void *src, size_t bytes) {
  (void)be;
  drop_copies(dst, bytes / sizeof(float));
  if (bytes) memcpy(sq_host_f32(dst), src, bytes);
  return SEQCL_OK;
}

static seqcl_status host_halfwidth_copy(sq_backend *be, sq_buf *buf, int width) {
  const size_t n = buf->bytes / sizeof(float);
  uint16_t *half = sq_hostmem_alloc((n ? n : 1) * sizeof *half);
  if (!half || sq_fault_hit(SQ_FAULT_ALLOC)) {
    free(half);
    return sq_fail(be->ctx, SEQCL_ERR_OUT_OF_MEMORY,
                   "host backend: cannot allocate the 16-bit copy of %zu floats", n);
  }
  const float *f = buf->ptr;
  sq_halfwidth_bits_n(f, half, n, (sq_halfwidth)width);
  drop_half(buf);
  buf->half = half;
  buf->half_width = width;
  return SEQCL_OK;
}

static float *host_view(sq_backend *be, sq_buf *buf) {
  (void)be;
  return buf->ptr;
}

static seqcl_status host_read(sq_backend *be, sq_ref src, void *dst, size_t bytes) {
  (void)be;
  if (bytes) memcpy(dst, sq_host_f32(src), bytes);
  return SEQCL_OK;
}

/* A copy or a fill of count floats at dst, split into parts pool tasks. */
typedef struct span_job {
  float *dst;
  const float *src; /* the copy's source */
  float value;      /* the fill's value */
  int parts;
  size_t count;
} span_job;

static void copy_part(void *arg, int p) {
  const span_job *j = arg;
  size_t lo, hi;
  sq_pool_range_size(j->count, j->parts, p, &lo, &hi);
  memcpy(j->dst + lo, j->src + lo, (hi - lo) * sizeof(float));
}

static seqcl_status host_copy(sq_backend *be, sq_ref dst, sq_ref src, size_t count) {
  (void)be;
  drop_copies(dst, count);
  span_job j = {.dst = sq_host_f32(dst), .src = sq_host_f32(src), .parts = 1, .count = count};
  /* Ranges in the same buffer may overlap: memmove, on one thread. Disjoint
   * ranges are split across the pool (a large copy is memory-bound, and one
   * core does not reach the memory bandwidth). */
  const int disjoint = j.dst + count <= j.src || j.src + count <= j.dst;
  if (disjoint && count <= (size_t)INT_MAX)
    j.parts = sq_pool_parts(be, (int)(count / 1024), (double)count);
  if (j.parts > 1)
    sq_pool_run(j.parts, copy_part, &j);
  else if (count)
    memmove(j.dst, j.src, count * sizeof(float));
  return SEQCL_OK;
}

static void fill_part(void *arg, int p) {
  const span_job *j = arg;
  size_t lo, hi;
  sq_pool_range_size(j->count, j->parts, p, &lo, &hi);
  float *restrict d = j->dst;
  if (j->value == 0.0f && !signbit(j->value))
    memset(d + lo, 0, (hi - lo) * sizeof(float)); /* +0.0f is all zero bits */
  else
    for (size_t i = lo; i < hi; i++) d[i] = j->value;
}

/* Split across the pool like a copy: training clears its gradients and
 * backward buffers every step, megabytes at a time. */
static seqcl_status host_fill(sq_backend *be, sq_ref dst, size_t count, float value) {
  drop_copies(dst, count);
  span_job j = {.dst = sq_host_f32(dst), .value = value, .parts = 1, .count = count};
  if (count <= (size_t)INT_MAX) j.parts = sq_pool_parts(be, (int)(count / 1024), (double)count);
  if (count) sq_pool_run(j.parts, fill_part, &j);
  return SEQCL_OK;
}

static seqcl_status host_fill_i32(sq_backend *be, sq_ref dst, size_t count, int32_t value) {
  (void)be;
  drop_copies(dst, count);
  int32_t *restrict d = sq_host_i32(dst);
  for (size_t i = 0; i < count; i++) d[i] = value;
  return SEQCL_OK;
}

static seqcl_status host_finish(sq_backend *be) {
  (void)be;
  return SEQCL_OK;
}

seqcl_status sq_host_scratch(sq_backend *be, size_t n, float **out) {
  sq_host *h = be->impl;
  const int t = sq_pool_thread_slot();
  if (n > h->scratch_floats[t]) {
    float *grown = realloc(h->scratch[t], n * sizeof(float));
    if (!grown)
      return sq_fail(be->ctx, SEQCL_ERR_OUT_OF_MEMORY,
                     "host backend: cannot allocate %zu bytes of scratch", n * sizeof(float));
    h->scratch[t] = grown;
    h->scratch_floats[t] = n;
  }
  *out = h->scratch[t];
  return SEQCL_OK;
}

static void host_destroy(sq_backend *be) {
  if (!be) return;
  sq_host *h = be->impl;
  if (h) {
    for (int t = 0; t < SQ_POOL_MAX_THREADS; t++) free(h->scratch[t]);
    sq_host_blocks_release(&h->blocks);
  }
  free(h);
  free(be);
}

static int host_supports(const sq_backend *be, sq_backend_cap cap) {
  (void)be;
  switch (cap) {
  case SQ_CAP_OWN_GEMM: return sq_gemm_nt_available(); /* the AVX-512 product */
  case SQ_CAP_THREADS: return 1;
  case SQ_CAP_HALFWIDTH: return sq_gemm_nt_available(); /* its 16-bit forms */
  }
  return 0;
}

/* Tasks at once only when there is one thread per task: the slots inside a
 * task then find the pool taken and run on their thread alone (pool.c), and
 * with more threads than tasks splitting each slot keeps them all busy. The
 * slots' results never depend on the thread count, so neither do the tasks'. */
static int host_task_threads(const sq_backend *be) {
  return sq_pool_parts(be, INT_MAX, HUGE_VAL);
}

static void host_run_tasks(sq_backend *be, int n, void (*fn)(void *arg, int task), void *arg) {
  if (n > 1 && host_task_threads(be) == n) {
    sq_pool_run(n, fn, arg);
    return;
  }
  for (int i = 0; i < n; i++) fn(arg, i);
}


static const sq_backend_ops host_ops = {
    .kind = SQ_BACKEND_HOST,
    .name = "host",
    .blas = "OpenBLAS",
    .supports = host_supports,
    .run_tasks = host_run_tasks,
    .task_threads = host_task_threads,
    .buf_alloc = host_buf_alloc,
    .buf_free = host_buf_free,
    .write = host_write,
    .read = host_read,
    .copy = host_copy,
    .fill = host_fill,
    .fill_i32 = host_fill_i32,
    .finish = host_finish,
    .halfwidth_copy = host_halfwidth_copy,
    .freeze = sq_host_freeze,
    .host_view = host_view,
    /* the op slots: sq_host_<name> of every line of backend/slots.def (no
     * argmax_greedy: on the host the two slots cost no extra launch) */
#define SQ_SLOT(name, params) .name = sq_host_##name,
#include "backend/slots.def"
#undef SQ_SLOT
    .destroy = host_destroy,
};

const sq_backend_ops *sq_host_backend_ops(void) { return &host_ops; }


seqcl_status sq_host_backend_create(seqcl_ctx *ctx, sq_backend **out) {
  *out = NULL;
  sq_backend *be = sq_backend_new(ctx, &host_ops, sizeof(sq_host));
  if (!be) return sq_fail(ctx, SEQCL_ERR_OUT_OF_MEMORY, "host backend: out of host memory");
  sq_host_blocks_init(&((sq_host *)be->impl)->blocks);
  (void)sq_host_threads(); /* OpenBLAS to one thread before the first product */
  *out = be;
  return SEQCL_OK;
}
