/* The optimiser's slots on OpenCL devices (kernels/optim.cl): the squared
 * norm in two passes (partial sums, then one group adds them), scaling and
 * the Adam step. The partial-sum buffer is released right after the enqueue,
 * which OpenCL allows: it is freed once the kernels are done. */
#include "backend/opencl/kargs.h"

#define OPTIM_FILE "optim.cl"
/* Partial sums of the squared norm: enough groups to fill a device, few
 * enough for one group to add them up. */
#define SUMSQ_GROUPS 64

static seqcl_status sumsq_launches(sq_ocl *o, int count, sq_ref x, sq_ref out, cl_mem partial,
                                   size_t groups) {
  kargs a;
  size_t acc;
  SQ_TRY(train_args(o, OPTIM_FILE, "sumsq_partial", &a, &acc));
  size_t wg = sq_ocl_wg_size(o, a.k, ROW_WG);
  arg_int(&a, count);
  arg_ref(&a, x);
  arg_mem(&a, partial);
  arg_local(&a, wg * acc);
  SQ_TRY(launch_groups(&a, groups, wg));

  SQ_TRY(train_args(o, OPTIM_FILE, "sumsq_final", &a, &acc));
  wg = sq_ocl_wg_size(o, a.k, SUMSQ_GROUPS);
  arg_int(&a, (int)groups);
  arg_mem(&a, partial);
  arg_ref(&a, out);
  arg_local(&a, wg * acc);
  return launch_groups(&a, 1, wg);
}

seqcl_status sq_ocl_sum_squares(sq_backend *be, size_t count, sq_ref x, sq_ref out) {
  sq_ocl *o = sq_ocl_of(be);
  SQ_TRY(sq_ocl_fits_int(o, count, "sum_squares"));
  size_t acc = sq_ocl_device_fp64(o) ? sizeof(double) : sizeof(float);
  /* groups of up to ROW_WG work-items, each group reducing a strided share */
  size_t groups = (count + ROW_WG - 1) / ROW_WG;
  if (groups > SUMSQ_GROUPS) groups = SUMSQ_GROUPS;
  if (groups < 1) groups = 1;
  cl_int err;
  cl_mem partial = clCreateBuffer(o->context, CL_MEM_READ_WRITE, groups * acc, NULL, &err);
  SQ_TRY(sq_ocl_check(o, err, "clCreateBuffer(squared-norm partial sums)"));
  seqcl_status st = sumsq_launches(o, (int)count, x, out, partial, groups);
  clReleaseMemObject(partial);
  return st;
}

seqcl_status sq_ocl_scale(sq_backend *be, size_t count, sq_ref x, float s) {
  sq_ocl *o = sq_ocl_of(be);
  kargs a;
  SQ_TRY(train_flat_args(o, OPTIM_FILE, "scale_inplace", count, &a));
  arg_ref(&a, x);
  arg_float(&a, s);
  return launch1(&a, count, FLAT_WG);
}

seqcl_status sq_ocl_adam(sq_backend *be, size_t count, sq_ref p, sq_ref g, sq_ref m, sq_ref v,
                           float b1, float b2, float eps, float step_size, float bc2_sqrt) {
  sq_ocl *o = sq_ocl_of(be);
  kargs a;
  SQ_TRY(train_flat_args(o, OPTIM_FILE, "adam_step", count, &a));
  arg_ref(&a, p);
  arg_ref(&a, g);
  arg_ref(&a, m);
  arg_ref(&a, v);
  arg_float(&a, b1);
  arg_float(&a, b2);
  arg_float(&a, eps);
  arg_float(&a, step_size);
  arg_float(&a, bc2_sqrt);
  return launch1(&a, count, FLAT_WG);
}
