/* The host backend's table, memory and GEMM. Buffers are plain aligned host
 * memory; every slot runs to completion before it returns, so finish() has
 * nothing to wait for.
 *
 * Threads: the products and the row loops of the heavier slots split across
 * seqcl's own pool (pool.c, SEQCL_THREADS); OpenBLAS runs single-threaded
 * inside each part (threads.c). */
#include <cblas.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "backend/host/gemm_nt.h"
#include "backend/host/host.h"
#include "backend/host/host_threads.h"
#include "backend/host/pool.h"
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

typedef struct copy_job {
  float *dst;
  const float *src;
  int parts;
  size_t count;
} copy_job;

static void copy_part(void *arg, int p) {
  const copy_job *j = arg;
  const size_t lo = j->count * (size_t)p / (size_t)j->parts;
  const size_t hi = j->count * (size_t)(p + 1) / (size_t)j->parts;
  memcpy(j->dst + lo, j->src + lo, (hi - lo) * sizeof(float));
}

static seqcl_status host_copy(sq_backend *be, sq_ref dst, sq_ref src, size_t count) {
  (void)be;
  copy_job j = {sq_host_f32(dst), sq_host_f32(src), 1, count};
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

/* One product (or strided batch of products) and how it is split across the
 * pool: by batch when there are enough batches, else along the longer side of
 * C. Every part packs its own share of the operand along the split side and
 * all of the other, so splitting the shorter side would pack the larger
 * operand once per part: at decode shapes (C = [N, 3H] = [batch, 3H] x W^T)
 * packing W was 15% of a step when the rows were split. Rows are split only
 * while each part keeps GEMM_MIN_ROWS of them. Every element of C is computed
 * by exactly one part. */
enum { SPLIT_BATCH, SPLIT_ROWS, SPLIT_COLS, GEMM_MIN_ROWS = 8, GEMM_OWN_MAX_ROWS = 256 };

typedef struct gemm_job {
  int ta, tb, M, N, K, lda, ldb, ldc, batch, parts, how;
  int own; /* sq_gemm_nt instead of OpenBLAS */
  float alpha, beta;
  const float *a, *b;
  float *c;
  size_t sa, sb, sc;
} gemm_job;

/* With beta = 0 OpenBLAS overwrites C without reading it, so C may be
 * uninitialised. One row (decoding at batch 1) runs as a GEMV, which OpenBLAS
 * runs at several times sgemm's speed for this shape. */
static void gemm_one(const gemm_job *g, int M, int N, const float *a, const float *b, float *c) {
  if (g->own)
    sq_gemm_nt(M, N, g->K, g->alpha, a, g->lda, b, g->ldb, g->beta, c, g->ldc);
  else if (M == 1 && g->tb && !g->ta)
    cblas_sgemv(CblasRowMajor, CblasNoTrans, N, g->K, g->alpha, b, g->ldb, a, 1, g->beta, c, 1);
  else
    cblas_sgemm(CblasRowMajor, g->ta ? CblasTrans : CblasNoTrans, g->tb ? CblasTrans : CblasNoTrans,
                M, N, g->K, g->alpha, a, g->lda, b, g->ldb, g->beta, c, g->ldc);
}

static void gemm_part(void *arg, int p) {
  const gemm_job *g = arg;
  int lo, hi;
  if (g->how == SPLIT_BATCH) {
    sq_pool_range(g->batch, g->parts, p, &lo, &hi);
    for (int i = lo; i < hi; i++)
      gemm_one(g, g->M, g->N, g->a + (size_t)i * g->sa, g->b + (size_t)i * g->sb,
               g->c + (size_t)i * g->sc);
    return;
  }
  const int rows = g->how == SPLIT_ROWS;
  sq_pool_range(rows ? g->M : g->N, g->parts, p, &lo, &hi);
  if (hi == lo) return;
  for (int i = 0; i < g->batch; i++) {
    const float *a = g->a + (size_t)i * g->sa, *b = g->b + (size_t)i * g->sb;
    float *c = g->c + (size_t)i * g->sc;
    if (rows) /* rows lo..hi of op(A) and C */
      gemm_one(g, hi - lo, g->N, a + (g->ta ? (size_t)lo : (size_t)lo * g->lda), b,
               c + (size_t)lo * g->ldc);
    else /* columns lo..hi of op(B) and C */
      gemm_one(g, g->M, hi - lo, a, b + (g->tb ? (size_t)lo * g->ldb : (size_t)lo), c + lo);
  }
}

static seqcl_status host_gemm(sq_backend *be, int ta, int tb, int M, int N, int K, float alpha,
                              sq_ref A, int lda, size_t sa, sq_ref B, int ldb, size_t sb,
                              float beta, sq_ref C, int ldc, size_t sc, int batch) {
  (void)be;
  gemm_job g = {.ta = ta, .tb = tb, .M = M, .N = N, .K = K, .lda = lda, .ldb = ldb, .ldc = ldc,
                .batch = batch, .parts = 1, .how = SPLIT_BATCH, .alpha = alpha, .beta = beta,
                .a = sq_host_f32(A), .b = sq_host_f32(B), .c = sq_host_f32(C),
                .sa = sa, .sb = sb, .sc = sc};
  /* The own kernel for the nn.Linear layout where the CPU runs it, up to
   * GEMM_OWN_MAX_ROWS rows: it streams A past each block of four rows of B, so
   * it wins while A stays in cache (the decode steps: 1.5x OpenBLAS at batch
   * 64, H 256), and OpenBLAS's packed blocking wins beyond (the encoder's
   * hoisted input product, 1280 x 768 x 128: 0.85x). `seqcl bench` shows both. */
  g.own = !ta && tb && M <= GEMM_OWN_MAX_ROWS && sq_gemm_nt_available() &&
          !(sq_ablated(be->ctx) & SQ_ABL_SMALL_GEMM);
  const double work = (double)M * N * K * batch;
  const int most = sq_pool_parts(be, batch > M ? (batch > N ? batch : N) : (M > N ? M : N), work);
  if (most > 1 && batch >= most) {
    g.parts = most;
  } else if (most > 1 && M >= N && M / most >= GEMM_MIN_ROWS) {
    g.how = SPLIT_ROWS;
    g.parts = most;
  } else if (most > 1) {
    g.how = SPLIT_COLS;
    g.parts = most < N ? most : N;
  }
  sq_pool_run(g.parts, gemm_part, &g);
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

static int host_supports(const sq_backend *be, sq_backend_cap cap) {
  (void)be;
  switch (cap) {
  case SQ_CAP_OWN_GEMM: return sq_gemm_nt_available(); /* the AVX-512 product */
  case SQ_CAP_THREADS: return 1;
  }
  return 0;
}

static const sq_backend_ops host_ops = {
    .kind = SQ_BACKEND_HOST,
    .name = "host",
    .blas = "OpenBLAS",
    .supports = host_supports,
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
    .dropout = sq_host_dropout,
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
  (void)sq_host_threads(); /* OpenBLAS to one thread before the first product */
  be->ops = &host_ops;
  be->ctx = ctx;
  be->impl = h;
  *out = be;
  return SEQCL_OK;
}
