/* Dropout on OpenCL devices (kernels/dropout.cl). */
#include <limits.h>

#include "backend/opencl/ocl.h"
#include "backend/opencl/ops_internal.h"
#include "core/error.h"

#define DROPOUT_WG 64

seqcl_status sq_ocl_dropout(sq_backend *be, const sq_dropout_args *a) {
  sq_ocl *o = sq_ocl_of(be);
  const size_t span_x = (size_t)(a->rows - 1) * a->ldx + a->cols;
  const size_t span_y = (size_t)(a->rows - 1) * a->ldy + a->cols;
  if (a->x.off + span_x > INT_MAX || a->y.off + span_y > INT_MAX)
    return sq_fail(be->ctx, SEQCL_ERR_UNSUPPORTED,
                   "opencl dropout: a %d x %d tensor exceeds the kernel's int index range",
                   a->rows, a->cols);
  cl_kernel k;
  SQ_TRY(sq_ocl_kernel(o, "dropout.cl", "", "dropout", &k));
  cl_uint i = 0;
  SQ_ARG(o, k, i++, a->rows);
  SQ_ARG(o, k, i++, a->cols);
  SQ_TRY(sq_ocl_ref_args(o, k, i, a->x, "dropout"));
  i += 2;
  SQ_ARG(o, k, i++, a->ldx);
  SQ_TRY(sq_ocl_ref_args(o, k, i, a->y, "dropout"));
  i += 2;
  SQ_ARG(o, k, i++, a->ldy);
  cl_uint words[6] = {a->key[0], a->key[1], a->ctr[0], a->ctr[1], a->ctr[2], a->threshold};
  for (int w = 0; w < 6; w++) SQ_ARG(o, k, i++, words[w]);
  SQ_ARG(o, k, i++, a->scale);
  size_t local[2] = {DROPOUT_WG, 1};
  size_t global[2] = {sq_round_up((size_t)a->cols, DROPOUT_WG), (size_t)a->rows};
  return sq_ocl_launch(o, k, 2, global, local, "dropout");
}
