/* Fronts of the memory slots: buffers, transfers, fills, the queue's finish
 * and the running of independent chains of slot calls. */
#include "core/error.h"
#include "ops/ops.h"
#include "ops/ops_check.h"

#define BE(ctx) ((ctx)->be)
#define OPS(ctx) ((ctx)->be->ops)

seqcl_status sq_buf_alloc(seqcl_ctx *ctx, size_t bytes, sq_buf **out) {
  static const char op[] = "sq_buf_alloc";
  if (!out) return sq_fail(ctx, SEQCL_ERR_INVALID_ARGUMENT, "%s: out is NULL", op);
  *out = NULL;
  SQ_CHK(sq_chk_ctx(ctx, op));
  if (bytes == 0) return sq_fail(ctx, SEQCL_ERR_INVALID_ARGUMENT, "%s: bytes is 0", op);
  return OPS(ctx)->buf_alloc(BE(ctx), bytes, out);
}

void sq_buf_free(sq_buf *buf) {
  if (buf) buf->be->ops->buf_free(buf->be, buf);
}

seqcl_status sq_write(seqcl_ctx *ctx, sq_ref dst, const void *src, size_t bytes) {
  static const char op[] = "sq_write";
  SQ_CHK(sq_chk_ctx(ctx, op));
  if (!src && bytes) return sq_fail(ctx, SEQCL_ERR_INVALID_ARGUMENT, "%s: src is NULL", op);
  SQ_CHK(sq_chk_bytes(ctx, op, "dst", dst, bytes));
  if (!bytes) return SEQCL_OK;
  return OPS(ctx)->write(BE(ctx), dst, src, bytes);
}

seqcl_status sq_read(seqcl_ctx *ctx, sq_ref src, void *dst, size_t bytes) {
  static const char op[] = "sq_read";
  SQ_CHK(sq_chk_ctx(ctx, op));
  if (!dst && bytes) return sq_fail(ctx, SEQCL_ERR_INVALID_ARGUMENT, "%s: dst is NULL", op);
  SQ_CHK(sq_chk_bytes(ctx, op, "src", src, bytes));
  if (!bytes) return SEQCL_OK;
  return OPS(ctx)->read(BE(ctx), src, dst, bytes);
}

seqcl_status sq_copy(seqcl_ctx *ctx, sq_ref dst, sq_ref src, size_t count) {
  static const char op[] = "sq_copy";
  SQ_CHK(sq_chk_ctx(ctx, op));
  SQ_CHK(sq_chk_ref(ctx, op, "dst", dst, count, 1));
  SQ_CHK(sq_chk_ref(ctx, op, "src", src, count, 1));
  /* OpenCL forbids overlapping copies (CL_MEM_COPY_OVERLAP): refuse them everywhere. */
  if (dst.buf == src.buf && dst.off < src.off + count && src.off < dst.off + count &&
      dst.off != src.off)
    return sq_fail(ctx, SEQCL_ERR_INVALID_ARGUMENT,
                   "%s: dst [%zu, +%zu) and src [%zu, +%zu) overlap in one buffer", op, dst.off,
                   count, src.off, count);
  if (!count || (dst.off == src.off && dst.buf == src.buf)) return SEQCL_OK;
  return OPS(ctx)->copy(BE(ctx), dst, src, count);
}

/* The checks of both fills. */
static seqcl_status fill_checks(seqcl_ctx *ctx, const char *op, sq_ref dst, size_t count) {
  SQ_CHK(sq_chk_ctx(ctx, op));
  SQ_CHK(sq_chk_ref(ctx, op, "dst", dst, count, 1));
  return SEQCL_OK;
}

seqcl_status sq_fill(seqcl_ctx *ctx, sq_ref dst, size_t count, float value) {
  SQ_TRY(fill_checks(ctx, "sq_fill", dst, count));
  return count ? OPS(ctx)->fill(BE(ctx), dst, count, value) : SEQCL_OK;
}

seqcl_status sq_fill_i32(seqcl_ctx *ctx, sq_ref dst, size_t count, int32_t value) {
  SQ_TRY(fill_checks(ctx, "sq_fill_i32", dst, count));
  return count ? OPS(ctx)->fill_i32(BE(ctx), dst, count, value) : SEQCL_OK;
}

seqcl_status sq_finish(seqcl_ctx *ctx) {
  SQ_CHK(sq_chk_ctx(ctx, "sq_finish"));
  return OPS(ctx)->finish(BE(ctx));
}

/* A task with its failures kept to its own thread's message. */
typedef struct private_task {
  void (*fn)(void *arg, int task);
  void *arg;
} private_task;

static void run_private(void *arg, int task) {
  const private_task *t = arg;
  const int was = sq_message_private(1);
  t->fn(t->arg, task);
  sq_message_private(was);
}

int sq_task_threads(seqcl_ctx *ctx) {
  if (!ctx || !ctx->be || !ctx->be->ops->run_tasks || !ctx->be->ops->task_threads) return 1;
  const int n = ctx->be->ops->task_threads(ctx->be);
  return n < 1 ? 1 : n;
}

void sq_run_tasks(seqcl_ctx *ctx, int n, void (*fn)(void *arg, int task), void *arg) {
  private_task t = {fn, arg};
  if (ctx && ctx->be && ctx->be->ops->run_tasks) {
    ctx->be->ops->run_tasks(ctx->be, n, run_private, &t);
    return;
  }
  for (int i = 0; i < n; i++) run_private(&t, i);
}

int sq_halfwidth_supported(seqcl_ctx *ctx) {
  const sq_backend_ops *o = OPS(ctx);
  return o->halfwidth_copy && o->supports && o->supports(BE(ctx), SQ_CAP_HALFWIDTH);
}

seqcl_status sq_buf_halfwidth(seqcl_ctx *ctx, sq_buf *buf, sq_halfwidth width) {
  static const char op[] = "sq_buf_halfwidth";
  SQ_CHK(sq_chk_ctx(ctx, op));
  if (!buf || buf->be != BE(ctx))
    return sq_fail(ctx, SEQCL_ERR_INVALID_ARGUMENT, "%s: no buffer of this context", op);
  if (width != SQ_HALF_BF16 && width != SQ_HALF_F16)
    return sq_fail(ctx, SEQCL_ERR_INVALID_ARGUMENT, "%s: width %d is not bf16 or f16", op,
                   (int)width);
  if (!sq_halfwidth_supported(ctx))
    return sq_fail(ctx, SEQCL_ERR_UNSUPPORTED,
                   "%s: 16-bit weights are not available on the %s backend of %s", op,
                   OPS(ctx)->name, ctx->info.selector);
  return OPS(ctx)->halfwidth_copy(BE(ctx), buf, (int)width);
}

float *sq_buf_host_view(seqcl_ctx *ctx, sq_buf *buf) {
  const sq_backend_ops *o = OPS(ctx);
  return buf && buf->be == BE(ctx) && o->host_view ? o->host_view(BE(ctx), buf) : NULL;
}

void sq_freeze(seqcl_ctx *ctx, sq_ref at, size_t count) {
  if (ctx && at.buf && at.buf->be == BE(ctx) && OPS(ctx)->freeze &&
      at.off + count <= at.buf->bytes / sizeof(float))
    OPS(ctx)->freeze(BE(ctx), at, count);
}

void sq_buf_freeze(seqcl_ctx *ctx, sq_buf *buf) {
  if (buf) sq_freeze(ctx, sq_at(buf, 0), buf->bytes / sizeof(float));
}
