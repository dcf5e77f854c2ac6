#include <stdint.h>

#include "core/error.h"
#include "ops/ops_check.h"

size_t sq_mul_sat(size_t a, size_t b) {
  if (a && b > SIZE_MAX / a) return SIZE_MAX;
  return a * b;
}

size_t sq_add_sat(size_t a, size_t b) { return b > SIZE_MAX - a ? SIZE_MAX : a + b; }

size_t sq_span2(size_t rows, size_t ld, size_t cols) {
  return sq_add_sat(sq_mul_sat(rows - 1, ld), cols);
}

seqcl_status sq_chk_ctx(seqcl_ctx *ctx, const char *op) {
  if (!ctx) return sq_fail(NULL, SEQCL_ERR_INVALID_ARGUMENT, "%s: ctx is NULL", op);
  if (!ctx->be)
    return sq_fail(ctx, SEQCL_ERR_INVALID_ARGUMENT, "%s: the context has no backend", op);
  return SEQCL_OK;
}

seqcl_status sq_chk_dim(seqcl_ctx *ctx, const char *op, const char *name, long long value) {
  if (value < 1)
    return sq_fail(ctx, SEQCL_ERR_SHAPE, "%s: %s = %lld, must be at least 1", op, name, value);
  return SEQCL_OK;
}

seqcl_status sq_chk_dims(seqcl_ctx *ctx, const char *op, const sq_dim *dims, size_t n) {
  SQ_TRY(sq_chk_ctx(ctx, op));
  for (size_t i = 0; i < n; i++) SQ_TRY(sq_chk_dim(ctx, op, dims[i].name, dims[i].value));
  return SEQCL_OK;
}

seqcl_status sq_chk_ld(seqcl_ctx *ctx, const char *op, const char *name, long long ld,
                       long long width) {
  if (ld < width)
    return sq_fail(ctx, SEQCL_ERR_SHAPE, "%s: %s = %lld is smaller than the row width %lld", op,
                   name, ld, width);
  return SEQCL_OK;
}

static seqcl_status chk_span(seqcl_ctx *ctx, const char *op, const char *name, sq_ref r,
                             size_t bytes, size_t elems_shown, int required) {
  if (!r.buf) {
    if (required)
      return sq_fail(ctx, SEQCL_ERR_INVALID_ARGUMENT, "%s: %s is required but absent", op, name);
    return SEQCL_OK;
  }
  if (r.buf->be != ctx->be)
    return sq_fail(ctx, SEQCL_ERR_INVALID_ARGUMENT,
                   "%s: %s is a buffer of another context's backend", op, name);
  size_t start = sq_mul_sat(r.off, 4);
  if (start > r.buf->bytes || bytes > r.buf->bytes - start) {
    if (elems_shown)
      return sq_fail(ctx, SEQCL_ERR_SHAPE,
                     "%s: %s needs %zu elements from offset %zu but its buffer holds %zu bytes "
                     "(%zu elements)",
                     op, name, elems_shown, r.off, r.buf->bytes, r.buf->bytes / 4);
    return sq_fail(ctx, SEQCL_ERR_SHAPE,
                   "%s: %s needs %zu bytes from offset %zu but its buffer holds %zu bytes", op,
                   name, bytes, r.off, r.buf->bytes);
  }
  return SEQCL_OK;
}

seqcl_status sq_chk_ref(seqcl_ctx *ctx, const char *op, const char *name, sq_ref r, size_t elems,
                        int required) {
  return chk_span(ctx, op, name, r, sq_mul_sat(elems, 4), elems ? elems : 1, required);
}

seqcl_status sq_chk_mat(seqcl_ctx *ctx, const char *op, const char *name, sq_ref r,
                        const char *ld_name, int rows, int ld, int cols, int required) {
  SQ_TRY(sq_chk_ld(ctx, op, ld_name, ld, cols));
  return sq_chk_ref(ctx, op, name, r, sq_span2((size_t)rows, (size_t)ld, (size_t)cols), required);
}

seqcl_status sq_chk_bytes(seqcl_ctx *ctx, const char *op, const char *name, sq_ref r,
                          size_t bytes) {
  return chk_span(ctx, op, name, r, bytes, 0, 1);
}

seqcl_status sq_chk_lens(seqcl_ctx *ctx, const char *op, const int32_t *lens_host, int N, int S) {
  if (!lens_host)
    return sq_fail(ctx, SEQCL_ERR_INVALID_ARGUMENT,
                   "%s: lens_host (the host copy of lens) is required", op);
  for (int n = 0; n < N; n++) {
    int32_t len = lens_host[n];
    if (len == 0)
      return sq_fail(ctx, SEQCL_ERR_EMPTY_SEQUENCE, "%s: sequence %d is empty (lens[%d] = 0)", op,
                     n, n);
    if (len < 0)
      return sq_fail(ctx, SEQCL_ERR_INVALID_ARGUMENT, "%s: lens[%d] = %d is negative", op, n,
                     (int)len);
    if (S > 0 && len > S)
      return sq_fail(ctx, SEQCL_ERR_SHAPE, "%s: lens[%d] = %d exceeds the padded length %d", op, n,
                     (int)len, S);
  }
  return SEQCL_OK;
}

seqcl_status sq_chk_mask(seqcl_ctx *ctx, const char *op, sq_ref mask, const int32_t *mask_host,
                         const int32_t *lens_host, int N, int S) {
  if (!mask.buf && !mask_host) return SEQCL_OK;
  if (!mask_host)
    return sq_fail(ctx, SEQCL_ERR_INVALID_ARGUMENT,
                   "%s: mask is given without mask_host (its host copy, needed to validate it)",
                   op);
  if (!mask.buf)
    return sq_fail(ctx, SEQCL_ERR_INVALID_ARGUMENT, "%s: mask_host is given without mask", op);
  SQ_TRY(sq_chk_ref(ctx, op, "mask", mask, sq_mul_sat((size_t)N, (size_t)S), 1));
  for (int n = 0; n < N; n++) {
    const int32_t *row = mask_host + (size_t)n * (size_t)S;
    int any = 0;
    for (int j = 0; j < lens_host[n] && !any; j++) any = row[j] != 0;
    if (!any)
      return sq_fail(ctx, SEQCL_ERR_EMPTY_SEQUENCE,
                     "%s: mask row %d has no valid position among its first %d (lens[%d])", op, n,
                     (int)lens_host[n], n);
  }
  return SEQCL_OK;
}

seqcl_status sq_chk_train_slot(seqcl_ctx *ctx, const void *slot, const char *name) {
  if (slot) return SEQCL_OK;
  return sq_fail(ctx, SEQCL_ERR_UNSUPPORTED, "training: the %s backend has no %s backward slot",
                 ctx->be->ops->name, name);
}
