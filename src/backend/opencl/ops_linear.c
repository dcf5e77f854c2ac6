/* The linear family on OpenCL devices (kernels/linear.cl): the bias, its
 * gradient, and the tanh of the decoder's combining layer with its backward.
 * The GEMM slot itself is gemm_clblast.c (CLBlast, or gemm_small.c's own
 * kernel for the decoder's small products). */
#include "backend/opencl/kargs.h"

#define LINEAR_FILE "linear.cl"
#define TANH_WG 64

seqcl_status sq_ocl_add_bias(sq_backend *be, int rows, int cols, sq_ref y, int ld, sq_ref bias) {
  sq_ocl *o = sq_ocl_of(be);
  SQ_TRY(sq_ocl_fits_int(o, (size_t)rows * (size_t)ld, "add_bias"));
  cl_kernel k;
  SQ_TRY(sq_ocl_kernel(o, LINEAR_FILE, "", "add_bias", &k));
  SQ_TRY(sq_ocl_ref_args(o, k, 0, y, "add_bias"));
  SQ_ARG(o, k, 2, rows);
  SQ_ARG(o, k, 3, cols);
  SQ_ARG(o, k, 4, ld);
  SQ_TRY(sq_ocl_ref_args(o, k, 5, bias, "add_bias"));
  return sq_ocl_launch_2d(o, k, FLAT_WG, (size_t)cols, (size_t)rows, "add_bias");
}


seqcl_status sq_ocl_tanh_inplace(sq_backend *be, size_t count, sq_ref x) {
  sq_ocl *o = sq_ocl_of(be);
  if (count > INT_MAX)
    return sq_fail(be->ctx, SEQCL_ERR_INVALID_ARGUMENT, "tanh_inplace: %zu elements is too many",
                   count);
  cl_kernel k;
  SQ_TRY(sq_ocl_kernel(o, LINEAR_FILE, "", "tanh_inplace", &k));
  cl_mem m_x = sq_ocl_mem(x);
  int n = (int)count, x_off = (int)x.off;
  SQ_ARG(o, k, 0, n);
  SQ_ARG(o, k, 1, m_x);
  SQ_ARG(o, k, 2, x_off);
  size_t local = TANH_WG, global = sq_round_up(count, local);
  return sq_ocl_launch(o, k, 1, &global, &local, "tanh_inplace");
}

seqcl_status sq_ocl_bias_grad(sq_backend *be, int rows, int cols, sq_ref dy, int ld,
                                sq_ref db) {
  sq_ocl *o = sq_ocl_of(be);
  SQ_TRY(sq_ocl_fits_int(o, (size_t)rows * (size_t)ld, "bias_grad"));
  SQ_TRY(sq_ocl_loops_fit(o, (unsigned long long)rows, "bias_grad"));
  kargs a;
  SQ_TRY(train_args(o, LINEAR_FILE, "bias_grad", &a, NULL));
  arg_int(&a, rows);
  arg_int(&a, cols);
  arg_ref(&a, dy);
  arg_int(&a, ld);
  arg_ref(&a, db);
  return launch1(&a, (size_t)cols, COL_WG);
}

seqcl_status sq_ocl_tanh_bwd(sq_backend *be, size_t count, sq_ref y, sq_ref dy, sq_ref dx) {
  sq_ocl *o = sq_ocl_of(be);
  kargs a;
  SQ_TRY(train_flat_args(o, LINEAR_FILE, "tanh_bwd", count, &a));
  arg_ref(&a, y);
  arg_ref(&a, dy);
  arg_ref(&a, dx);
  return launch1(&a, count, FLAT_WG);
}
