/* What every training program starts with. A kernels file built with
 * -DSQ_TRAIN (sq_ocl_train_kernel) is compiled with this file in front of it
 * (src/backend/opencl/program.c; the program cache keys on both texts), so its
 * SQ_TRAIN section and optim.cl share one accumulator type and one
 * work-group sum.
 *
 * Training kernels: built as programs of their own, so that the forward
 * program decoding builds never compiles them.
 * Determinism: no atomics; a value that sums over many rows is owned by one
 * work-item that adds the terms in a fixed order, or is reduced by a fixed
 * tree inside one work-group. Where the host adds terms straight into the
 * output one after another, the kernels do the same, starting from the
 * output's old value, so the rounding matches the host's step for step. */

/* SQ_FP64 (set by the host when the device has cl_khr_fp64) makes the row
 * reductions and the squared norm accumulate in double, as the host does;
 * without it, in float. */
#ifdef SQ_FP64
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
typedef double acc_t;
#else
typedef float acc_t;
#endif

/* The host computes a * b + c with two roundings; so do the kernels. */
#pragma OPENCL FP_CONTRACT OFF

/* Tree sum over the work-group (its size a power of two, as the host launches
 * the reductions); red holds get_local_size(0) values, and the trailing
 * barrier lets the caller reuse it right away. */
static acc_t wg_sum(__local acc_t *red, acc_t x) {
  const int lid = get_local_id(0);
  red[lid] = x;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int s = get_local_size(0) / 2; s > 0; s >>= 1) {
    if (lid < s) red[lid] += red[lid + s];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  const acc_t r = red[0];
  barrier(CLK_LOCAL_MEM_FENCE);
  return r;
}
