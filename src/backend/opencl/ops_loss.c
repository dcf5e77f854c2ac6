/* The small ops of kernels/misc.cl: fills, bias, embedding, argmax,
 * log_softmax and cross-entropy. */
#include <stdio.h>

#include "backend/opencl/ops_internal.h"

#define MISC "misc.cl"
/* Work-group size asked for the row reductions and the elementwise kernels;
 * sq_ocl_wg_size lowers it to what the device and kernel allow. */
#define ROW_WG 256
#define FLAT_WG 128

static seqcl_status fits_int(sq_ocl *o, size_t n, const char *what) {
  if (n > (size_t)INT_MAX)
    return sq_fail(o->ctx, SEQCL_ERR_UNSUPPORTED, "%s: %zu elements exceed the kernels' int sizes",
                   what, n);
  return SEQCL_OK;
}

/* One work-item per element of a flattened range, rounded up to the group size. */
static seqcl_status launch_flat(sq_ocl *o, cl_kernel k, size_t n, const char *what) {
  size_t local = sq_ocl_wg_size(o, k, FLAT_WG);
  size_t global = sq_round_up(n, local);
  return sq_ocl_launch(o, k, 1, &global, &local, what);
}

/* A 2-D range: cols x rows, work-groups of one row segment each. */
static seqcl_status launch_2d(sq_ocl *o, cl_kernel k, size_t cols, size_t rows, const char *what) {
  size_t lx = sq_ocl_wg_size(o, k, FLAT_WG);
  size_t local[2] = {lx, 1};
  size_t global[2] = {sq_round_up(cols, lx), rows};
  return sq_ocl_launch(o, k, 2, global, local, what);
}

/* One work-group per row; returns the group size in *wg. */
static seqcl_status launch_rows(sq_ocl *o, cl_kernel k, size_t rows, size_t wg, const char *what) {
  size_t global = rows * wg;
  return sq_ocl_launch(o, k, 1, &global, &wg, what);
}

seqcl_status sq_ocl_fill_bits(sq_backend *be, sq_ref dst, size_t count, uint32_t bits) {
  sq_ocl *o = sq_ocl_of(be);
  if (count == 0) return SEQCL_OK;
  SQ_TRY(fits_int(o, count, "fill"));
  cl_kernel k;
  SQ_TRY(sq_ocl_kernel(o, MISC, "", "fill_u32", &k));
  int n = (int)count;
  cl_uint v = bits;
  SQ_TRY(sq_ocl_ref_args(o, k, 0, dst, "fill_u32"));
  SQ_ARG(o, k, 2, n);
  SQ_ARG(o, k, 3, v);
  return launch_flat(o, k, count, "fill_u32");
}

seqcl_status sq_ocl_add_bias(sq_backend *be, int rows, int cols, sq_ref y, int ld, sq_ref bias) {
  sq_ocl *o = sq_ocl_of(be);
  SQ_TRY(fits_int(o, (size_t)rows * (size_t)ld, "add_bias"));
  cl_kernel k;
  SQ_TRY(sq_ocl_kernel(o, MISC, "", "add_bias", &k));
  SQ_TRY(sq_ocl_ref_args(o, k, 0, y, "add_bias"));
  SQ_ARG(o, k, 2, rows);
  SQ_ARG(o, k, 3, cols);
  SQ_ARG(o, k, 4, ld);
  SQ_TRY(sq_ocl_ref_args(o, k, 5, bias, "add_bias"));
  return launch_2d(o, k, (size_t)cols, (size_t)rows, "add_bias");
}

seqcl_status sq_ocl_embedding(sq_backend *be, int N, int D, sq_ref ids, sq_ref table, sq_ref out,
                              int ld_out) {
  sq_ocl *o = sq_ocl_of(be);
  SQ_TRY(fits_int(o, (size_t)N * (size_t)ld_out, "embedding"));
  cl_kernel k;
  SQ_TRY(sq_ocl_kernel(o, MISC, "", "embedding", &k));
  SQ_TRY(sq_ocl_ref_args(o, k, 0, ids, "embedding"));
  SQ_TRY(sq_ocl_ref_args(o, k, 2, table, "embedding"));
  SQ_TRY(sq_ocl_ref_args(o, k, 4, out, "embedding"));
  SQ_ARG(o, k, 6, N);
  SQ_ARG(o, k, 7, D);
  SQ_ARG(o, k, 8, ld_out);
  return launch_2d(o, k, (size_t)D, (size_t)N, "embedding");
}

seqcl_status sq_ocl_argmax(sq_backend *be, int N, int V, sq_ref x, int ld, sq_ref bias,
                           sq_ref ids) {
  sq_ocl *o = sq_ocl_of(be);
  cl_kernel k;
  SQ_TRY(sq_ocl_kernel(o, MISC, "", "argmax", &k));
  size_t wg = sq_ocl_wg_size(o, k, ROW_WG);
  int has_bias = bias.buf != NULL;
  SQ_TRY(sq_ocl_ref_args(o, k, 0, x, "argmax"));
  SQ_ARG(o, k, 2, ld);
  SQ_ARG(o, k, 3, V);
  SQ_TRY(sq_ocl_ref_args(o, k, 4, bias, "argmax"));
  SQ_ARG(o, k, 6, has_bias);
  SQ_TRY(sq_ocl_ref_args(o, k, 7, ids, "argmax"));
  SQ_TRY(sq_ocl_arg(o, k, 9, wg * sizeof(cl_float), NULL, "argmax"));
  SQ_TRY(sq_ocl_arg(o, k, 10, wg * sizeof(cl_int), NULL, "argmax"));
  return launch_rows(o, k, (size_t)N, wg, "argmax");
}

seqcl_status sq_ocl_log_softmax(sq_backend *be, int N, int V, sq_ref x, sq_ref y) {
  sq_ocl *o = sq_ocl_of(be);
  SQ_TRY(fits_int(o, (size_t)N * (size_t)V, "log_softmax"));
  cl_kernel k;
  SQ_TRY(sq_ocl_kernel(o, MISC, "", "log_softmax", &k));
  size_t wg = sq_ocl_wg_size(o, k, ROW_WG);
  SQ_TRY(sq_ocl_ref_args(o, k, 0, x, "log_softmax"));
  SQ_TRY(sq_ocl_ref_args(o, k, 2, y, "log_softmax"));
  SQ_ARG(o, k, 4, V);
  SQ_TRY(sq_ocl_arg(o, k, 5, wg * sizeof(cl_float), NULL, "log_softmax"));
  return launch_rows(o, k, (size_t)N, wg, "log_softmax");
}

seqcl_status sq_ocl_cross_entropy(sq_backend *be, int N, int V, sq_ref x, sq_ref labels,
                                  sq_ref loss) {
  sq_ocl *o = sq_ocl_of(be);
  SQ_TRY(fits_int(o, (size_t)N * (size_t)V, "cross_entropy"));
  cl_kernel k;
  if (o->cpu_device) { /* misc.cl: one work-group walks every row */
    SQ_TRY(sq_ocl_kernel(o, MISC, "", "cross_entropy", &k));
    size_t wg = sq_ocl_wg_size(o, k, ROW_WG);
    SQ_TRY(sq_ocl_ref_args(o, k, 0, x, "cross_entropy"));
    SQ_TRY(sq_ocl_ref_args(o, k, 2, labels, "cross_entropy"));
    SQ_TRY(sq_ocl_ref_args(o, k, 4, loss, "cross_entropy"));
    SQ_ARG(o, k, 6, N);
    SQ_ARG(o, k, 7, V);
    SQ_TRY(sq_ocl_arg(o, k, 8, wg * sizeof(cl_float), NULL, "cross_entropy"));
    return launch_rows(o, k, 1, wg, "cross_entropy");
  }
  /* GPUs: a work-group per row (ce_rows), then the mean (ce_mean) */
  SQ_TRY(fits_int(o, 2 * (size_t)N, "cross_entropy"));
  cl_mem part;
  SQ_TRY(sq_ocl_scratch(o, 2 * (size_t)N * sizeof(cl_float), &part));
  int p_off = 0;
  SQ_TRY(sq_ocl_kernel(o, MISC, "", "ce_rows", &k));
  size_t wg = sq_ocl_wg_size(o, k, ROW_WG);
  SQ_TRY(sq_ocl_ref_args(o, k, 0, x, "ce_rows"));
  SQ_TRY(sq_ocl_ref_args(o, k, 2, labels, "ce_rows"));
  SQ_ARG(o, k, 4, part);
  SQ_ARG(o, k, 5, p_off);
  SQ_ARG(o, k, 6, V);
  SQ_TRY(sq_ocl_arg(o, k, 7, wg * sizeof(cl_float), NULL, "ce_rows"));
  SQ_TRY(launch_rows(o, k, (size_t)N, wg, "ce_rows"));
  cl_kernel mean;
  SQ_TRY(sq_ocl_kernel(o, MISC, "", "ce_mean", &mean));
  wg = sq_ocl_wg_size(o, mean, ROW_WG);
  SQ_ARG(o, mean, 0, part);
  SQ_ARG(o, mean, 1, p_off);
  SQ_ARG(o, mean, 2, N);
  SQ_TRY(sq_ocl_ref_args(o, mean, 3, loss, "ce_mean"));
  SQ_TRY(sq_ocl_arg(o, mean, 5, wg * sizeof(cl_float), NULL, "ce_mean"));
  return launch_rows(o, mean, 1, wg, "ce_mean");
}
