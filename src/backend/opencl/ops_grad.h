/* The OpenCL backend's backward table (src/train/grad.h), implemented in
 * ops_grad.c over kernels/grad.cl. */
#ifndef SQ_BACKEND_OCL_OPS_GRAD_H
#define SQ_BACKEND_OCL_OPS_GRAD_H

#include "train/grad.h"

extern const struct sq_grad_ops sq_ocl_grad_table;

#endif
