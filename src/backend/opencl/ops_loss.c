/* The loss family on OpenCL devices (kernels/loss.cl): log-softmax and the
 * cross-entropy loss, one work-group per row, and the loss's backward. */
#include "backend/opencl/kargs.h"

#define LOSS_FILE "loss.cl"

seqcl_status sq_ocl_log_softmax(sq_backend *be, int N, int V, sq_ref x, sq_ref y) {
  sq_ocl *o = sq_ocl_of(be);
  SQ_TRY(sq_ocl_fits_int(o, (size_t)N * (size_t)V, "log_softmax"));
  cl_kernel k;
  SQ_TRY(sq_ocl_kernel(o, LOSS_FILE, "", "log_softmax", &k));
  size_t wg = sq_ocl_wg_size(o, k, ROW_WG);
  SQ_TRY(sq_ocl_ref_args(o, k, 0, x, "log_softmax"));
  SQ_TRY(sq_ocl_ref_args(o, k, 2, y, "log_softmax"));
  SQ_ARG(o, k, 4, V);
  SQ_TRY(sq_ocl_arg(o, k, 5, wg * sizeof(cl_float), NULL, "log_softmax"));
  return sq_ocl_launch_rows(o, k, (size_t)N, wg, "log_softmax");
}


seqcl_status sq_ocl_cross_entropy(sq_backend *be, int N, int V, sq_ref x, sq_ref labels,
                                  sq_ref loss) {
  sq_ocl *o = sq_ocl_of(be);
  SQ_TRY(sq_ocl_fits_int(o, (size_t)N * (size_t)V, "cross_entropy"));
  cl_kernel k;
  if (o->cpu_device) { /* loss.cl: one work-group walks every row */
    SQ_TRY(sq_ocl_kernel(o, LOSS_FILE, "", "cross_entropy", &k));
    size_t wg = sq_ocl_wg_size(o, k, ROW_WG);
    /* per row, each work-item runs two passes over its vocabulary slice and
     * two tree reductions: where the driver cuts long loops short (llvmpipe,
     * KNOWN_ISSUES.md), many rows take the work-group-per-row form below */
    unsigned long long per_row = 2 * (((unsigned long long)V + wg - 1) / wg) + 3;
    for (size_t h = wg; h > 1; h >>= 1) per_row += 2;
    if (sq_ocl_loops_ok(o, (unsigned long long)N * per_row)) {
      SQ_TRY(sq_ocl_ref_args(o, k, 0, x, "cross_entropy"));
      SQ_TRY(sq_ocl_ref_args(o, k, 2, labels, "cross_entropy"));
      SQ_TRY(sq_ocl_ref_args(o, k, 4, loss, "cross_entropy"));
      SQ_ARG(o, k, 6, N);
      SQ_ARG(o, k, 7, V);
      SQ_TRY(sq_ocl_arg(o, k, 8, wg * sizeof(cl_float), NULL, "cross_entropy"));
      return sq_ocl_launch_rows(o, k, 1, wg, "cross_entropy");
    }
  }
  /* GPUs: a work-group per row (ce_rows), then the mean (ce_mean) */
  SQ_TRY(sq_ocl_fits_int(o, 2 * (size_t)N, "cross_entropy"));
  cl_mem part;
  SQ_TRY(sq_ocl_scratch(o, 2 * (size_t)N * sizeof(cl_float), &part));
  int p_off = 0;
  SQ_TRY(sq_ocl_kernel(o, LOSS_FILE, "", "ce_rows", &k));
  size_t wg = sq_ocl_wg_size(o, k, ROW_WG);
  SQ_TRY(sq_ocl_ref_args(o, k, 0, x, "ce_rows"));
  SQ_TRY(sq_ocl_ref_args(o, k, 2, labels, "ce_rows"));
  SQ_ARG(o, k, 4, part);
  SQ_ARG(o, k, 5, p_off);
  SQ_ARG(o, k, 6, V);
  SQ_TRY(sq_ocl_arg(o, k, 7, wg * sizeof(cl_float), NULL, "ce_rows"));
  SQ_TRY(sq_ocl_launch_rows(o, k, (size_t)N, wg, "ce_rows"));
  cl_kernel mean;
  SQ_TRY(sq_ocl_kernel(o, LOSS_FILE, "", "ce_mean", &mean));
  wg = sq_ocl_wg_size(o, mean, ROW_WG);
  SQ_ARG(o, mean, 0, part);
  SQ_ARG(o, mean, 1, p_off);
  SQ_ARG(o, mean, 2, N);
  SQ_TRY(sq_ocl_ref_args(o, mean, 3, loss, "ce_mean"));
  SQ_TRY(sq_ocl_arg(o, mean, 5, wg * sizeof(cl_float), NULL, "ce_mean"));
  return sq_ocl_launch_rows(o, mean, 1, wg, "ce_mean");
}


seqcl_status sq_ocl_cross_entropy_bwd(sq_backend *be, int N, int V, sq_ref x, sq_ref labels,
                                        float scale, sq_ref dx) {
  sq_ocl *o = sq_ocl_of(be);
  SQ_TRY(sq_ocl_fits_int(o, (size_t)N * (size_t)V, "cross_entropy_bwd"));
  kargs a;
  size_t acc;
  SQ_TRY(train_args(o, LOSS_FILE, "ce_bwd", &a, &acc));
  size_t wg = sq_ocl_wg_size(o, a.k, ROW_WG);
  arg_int(&a, N);
  arg_int(&a, V);
  arg_ref(&a, x);
  arg_ref(&a, labels);
  arg_float(&a, scale);
  arg_ref(&a, dx);
  arg_local(&a, wg * acc);
  return launch_groups(&a, (size_t)N, wg);
}
