/* Argument checks shared by the op fronts. Each returns SEQCL_OK or the status
 * after recording "op: what is wrong with which argument". Statuses:
 *   missing ctx / required ref, foreign buffer, bad flag   SEQCL_ERR_INVALID_ARGUMENT
 *   non-positive size, stride too small, ref past its end  SEQCL_ERR_SHAPE
 *   length > S                                             SEQCL_ERR_SHAPE
 *   zero length, mask row with no valid position           SEQCL_ERR_EMPTY_SEQUENCE
 *   negative length, id or label out of range              SEQCL_ERR_INVALID_ARGUMENT */
#ifndef SQ_OPS_CHECK_H
#define SQ_OPS_CHECK_H

#include <stddef.h>
#include <stdint.h>

#include "backend/backend.h"
#include "core/ctx.h"

/* Sizes computed with saturation at SIZE_MAX, so a huge shape fails the range
 * check instead of wrapping around. */
size_t sq_mul_sat(size_t a, size_t b);
size_t sq_add_sat(size_t a, size_t b);
/* Elements spanned by `rows` rows of `cols` elements with row stride ld:
 * (rows - 1) * ld + cols. rows >= 1. */
size_t sq_span2(size_t rows, size_t ld, size_t cols);

seqcl_status sq_chk_ctx(seqcl_ctx *ctx, const char *op);
/* value >= 1 */
seqcl_status sq_chk_dim(seqcl_ctx *ctx, const char *op, const char *name, long long value);
/* One size argument of an op, named as its messages name it. */
typedef struct sq_dim {
  const char *name;
  long long value;
} sq_dim;
/* sq_chk_ctx, then sq_chk_dim on each of the n sizes in order (the first too
 * small is the one reported): how every front with sizes begins. A front that
 * reads an args struct checks the context itself before it; the second check
 * then costs a comparison. */
seqcl_status sq_chk_dims(seqcl_ctx *ctx, const char *op, const sq_dim *dims, size_t n);
/* The sizes of a front in one line, the list counted by the compiler:
 *   SQ_CHK_DIMS(ctx, op, {"N", N}, {"V", V}); */
#define SQ_CHK_DIMS(ctx, op, ...)                                                           \
  SQ_TRY(sq_chk_dims((ctx), (op), (const sq_dim[]){__VA_ARGS__},                           \
                     sizeof((const sq_dim[]){__VA_ARGS__}) / sizeof(sq_dim)))
/* ld >= width (the row width it must hold) */
seqcl_status sq_chk_ld(seqcl_ctx *ctx, const char *op, const char *name, long long ld,
                       long long width);
/* A matrix of `rows` rows of `cols` elements with row stride ld: sq_chk_ld
 * (ld_name, ld >= cols), then sq_chk_ref for its span. */
seqcl_status sq_chk_mat(seqcl_ctx *ctx, const char *op, const char *name, sq_ref r,
                        const char *ld_name, int rows, int ld, int cols, int required);
/* r holds `elems` 4-byte elements from its offset; an absent r fails only when
 * required. */
seqcl_status sq_chk_ref(seqcl_ctx *ctx, const char *op, const char *name, sq_ref r, size_t elems,
                        int required);
/* Same for a byte count (write/read). */
seqcl_status sq_chk_bytes(seqcl_ctx *ctx, const char *op, const char *name, sq_ref r,
                          size_t bytes);
/* lens_host[n] in [1, S] for n < N (S <= 0 means no upper bound). */
seqcl_status sq_chk_lens(seqcl_ctx *ctx, const char *op, const int32_t *lens_host, int N, int S);
/* The device mask and its host copy come together; each row has a valid
 * position among its first lens_host[n] entries. */
seqcl_status sq_chk_mask(seqcl_ctx *ctx, const char *op, sq_ref mask, const int32_t *mask_host,
                         const int32_t *lens_host, int N, int S);

#define SQ_CHK(expr) SQ_TRY(expr)

/* The training slots are optional (backend.h): SEQCL_ERR_UNSUPPORTED naming
 * the backend and the slot when the context's backend has none. */
seqcl_status sq_chk_train_slot(seqcl_ctx *ctx, const void *slot, const char *name);
#define SQ_TRAIN_SLOT(ctx, slot) \
  SQ_TRY(sq_chk_train_slot((ctx), (const void *)(ctx)->be->ops->slot, #slot))

#endif
