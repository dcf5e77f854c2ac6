/* The host backend's table, memory and GEMM. Buffers are plain aligned host
 * memory; every slot runs to completion before it returns, so finish() has
 * nothing to wait for.
 *
 * Threads: the GEMMs run on OpenBLAS's own thread pool (OPENBLAS_NUM_THREADS
 * caps it); OpenBLAS keeps small products such as the per-step [N,H]x[H,3H]
 * single-threaded by itself. On a loaded machine its threads can cost more
 * than they bring, so a thread setting of seqcl's own should reach OpenBLAS
 * (openblas_set_num_threads). The loops of the other slots are single-threaded. */
#include <cblas.h>
#include <stdlib.h>
#include <string.h>

#include "backend/host/host.h"
#include "backend/host/host_threads.h"
#include "core/ctx.h"
#include "core/fault.h"

/* Cache-line alignment keeps every row start that is a multiple of 16 floats
 * aligned for the vector loads. */
enum { SQ_HOST_ALIGN = 64 };

static seqcl_status host_buf_alloc(sq_backend *be, size_t bytes, sq_buf **out) {
  *out = NULL;
  sq_buf *buf = malloc(sizeof *buf);
  void *mem = NULL;
  /* posix_memalign does not promise anything for size 0: ask for one line. */
  size_t want = bytes ? bytes : SQ_HOST_ALIGN;
  if (!buf || sq_fault_hit(SQ_FAULT_ALLOC) || posix_memalign(&mem, SQ_HOST_ALIGN, want) != 0) {
    free(buf);
    return sq_fail(be->ctx, SEQCL_ERR_OUT_OF_MEMORY,
                   "host backend: cannot allocate a buffer of %zu bytes", bytes);
  }
  buf->be = be;
  buf->bytes = bytes;
  buf->ptr = mem;
  *out = buf;
  return SEQCL_OK;
}

static void host_buf_free(sq_backend *be, sq_buf *buf) {
  (void)be;
  if (!buf) return;
  free(buf->ptr);
  free(buf);
}

static seqcl_status host_write(sq_backend *be, sq_ref dst, const void *src, size_t bytes) {
  (void)be;
  if (bytes) memcpy(sq_host_f32(dst), src, bytes);
  return SEQCL_OK;
}

static seqcl_status host_read(sq_backend *be, sq_ref src, void *dst, size_t bytes) {
  (void)be;
  if (bytes) memcpy(dst, sq_host_f32(src), bytes);
  return SEQCL_OK;
}

static seqcl_status host_copy(sq_backend *be, sq_ref dst, sq_ref src, size_t count) {
  (void)be;
  /* memmove: the two ranges may lie in the same buffer and overlap. */
  if (count) memmove(sq_host_f32(dst), sq_host_f32(src), count * sizeof(float));
  return SEQCL_OK;
}

static seqcl_status host_fill(sq_backend *be, sq_ref dst, size_t count, float value) {
  (void)be;
  float *restrict d = sq_host_f32(dst);
  for (size_t i = 0; i < count; i++) d[i] = value;
  return SEQCL_OK;
}

static seqcl_status host_fill_i32(sq_backend *be, sq_ref dst, size_t count, int32_t value) {
  (void)be;
  int32_t *restrict d = sq_host_i32(dst);
  for (size_t i = 0; i < count; i++) d[i] = value;
  return SEQCL_OK;
}

static seqcl_status host_finish(sq_backend *be) {
  (void)be;
  return SEQCL_OK;
}

/* Strided batches are a loop of cblas_sgemm calls: the batches seqcl issues are
 * few and each is large enough for OpenBLAS to run at full speed. With beta = 0
 * OpenBLAS overwrites C without reading it, so C may be uninitialised. */
static seqcl_status host_gemm(sq_backend *be, int ta, int tb, int M, int N, int K, float alpha,
                              sq_ref A, int lda, size_t sa, sq_ref B, int ldb, size_t sb,
                              float beta, sq_ref C, int ldc, size_t sc, int batch) {
  (void)be;
  const float *a = sq_host_f32(A);
  const float *b = sq_host_f32(B);
  float *c = sq_host_f32(C);
  sq_host_blas_begin(M, N, K, batch);
  if (M == 1 && tb && !ta) {
    /* one row (decoding at batch 1): y = alpha B x + beta y as a GEMV, which
     * OpenBLAS runs at several times sgemm's speed for this shape */
    for (int i = 0; i < batch; i++)
      cblas_sgemv(CblasRowMajor, CblasNoTrans, N, K, alpha, b + (size_t)i * sb, ldb,
                  a + (size_t)i * sa, 1, beta, c + (size_t)i * sc, 1);
  } else {
    for (int i = 0; i < batch; i++)
      cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans,
                  M, N, K, alpha, a + (size_t)i * sa, lda, b + (size_t)i * sb, ldb, beta,
                  c + (size_t)i * sc, ldc);
  }
  sq_host_blas_end();
  return SEQCL_OK;
}

seqcl_status sq_host_scratch(sq_backend *be, size_t n, float **out) {
  sq_host *h = be->impl;
  if (n > h->scratch_floats) {
    float *grown = realloc(h->scratch, n * sizeof(float));
    if (!grown)
      return sq_fail(be->ctx, SEQCL_ERR_OUT_OF_MEMORY,
                     "host backend: cannot allocate %zu bytes of scratch", n * sizeof(float));
    h->scratch = grown;
    h->scratch_floats = n;
  }
  *out = h->scratch;
  return SEQCL_OK;
}

static void host_destroy(sq_backend *be) {
  if (!be) return;
  sq_host *h = be->impl;
  if (h) free(h->scratch);
  free(h);
  free(be);
}

static const sq_backend_ops host_ops = {
    .name = "host",
    .buf_alloc = host_buf_alloc,
    .buf_free = host_buf_free,
    .write = host_write,
    .read = host_read,
    .copy = host_copy,
    .fill = host_fill,
    .fill_i32 = host_fill_i32,
    .finish = host_finish,
    .gemm = host_gemm,
    .add_bias = sq_host_add_bias,
    .attn_scores = sq_host_attn_scores,
    .masked_softmax = sq_host_masked_softmax,
    .context = sq_host_context,
    .attn_fused = sq_host_attn_fused,
    .gru_gates = sq_host_gru_gates,
    .embedding = sq_host_embedding,
    .argmax = sq_host_argmax,
    .log_softmax = sq_host_log_softmax,
    .cross_entropy = sq_host_cross_entropy,
    .greedy_update = sq_host_greedy_update,
    .tanh_inplace = sq_host_tanh_inplace,
    .beam_topk = sq_host_beam_topk, .beam_select = sq_host_beam_select, .gather_rows = sq_host_gather_rows,
    .destroy = host_destroy,
};

seqcl_status sq_host_backend_create(seqcl_ctx *ctx, sq_backend **out) {
  *out = NULL;
  sq_backend *be = calloc(1, sizeof *be);
  sq_host *h = calloc(1, sizeof *h);
  if (!be || !h) {
    free(be);
    free(h);
    return sq_fail(ctx, SEQCL_ERR_OUT_OF_MEMORY, "host backend: out of host memory");
  }
  be->ops = &host_ops;
  be->ctx = ctx;
  be->impl = h;
  *out = be;
  return SEQCL_OK;
}
