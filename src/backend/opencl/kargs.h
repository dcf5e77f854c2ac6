/* Kernel arguments set one after another, and the launch shapes the ops of
 * the OpenCL backend share (ops_<family>.c). */
#ifndef SQ_BACKEND_OCL_KARGS_H
#define SQ_BACKEND_OCL_KARGS_H

#include "backend/opencl/ocl.h"
#include "backend/opencl/ops_internal.h"

/* Work-group sizes asked for; sq_ocl_wg_size lowers them to what the device
 * and the kernel allow (always a power of two, as the reductions need):
 * row reductions, elementwise kernels, column-owning kernels. */
#define ROW_WG 256
#define FLAT_WG 128
#define COL_WG 64

/* Arguments set one after another; the first failure sticks and later calls
 * do nothing, so a slot sets all its arguments and checks once. */
typedef struct kargs {
  sq_ocl *o;
  cl_kernel k;
  const char *name;
  cl_uint i;
  seqcl_status st;
} kargs;

static inline kargs kargs_start(sq_ocl *o, cl_kernel k, const char *name) {
  kargs a = {o, k, name, 0, SEQCL_OK};
  return a;
}
/* A training kernel (sq_ocl_train_kernel) and the start of its arguments;
 * acc_bytes (optional) receives the size of its accumulator type acc_t. */
static inline seqcl_status train_args(sq_ocl *o, const char *file, const char *name, kargs *a,
                                      size_t *acc_bytes) {
  cl_kernel k;
  SQ_TRY(sq_ocl_train_kernel(o, file, name, &k, acc_bytes));
  *a = kargs_start(o, k, name);
  return SEQCL_OK;
}
static inline void arg_raw(kargs *a, size_t size, const void *value) {
  if (a->st == SEQCL_OK) a->st = sq_ocl_arg(a->o, a->k, a->i, size, value, a->name);
  a->i++;
}
static inline void arg_int(kargs *a, int v) { arg_raw(a, sizeof v, &v); }
static inline void arg_float(kargs *a, float v) { arg_raw(a, sizeof v, &v); }
static inline void arg_size(kargs *a, size_t v) { /* a stride or size already checked to fit */
  int i = (int)v;
  arg_raw(a, sizeof i, &i);
}
/* buffer + int offset (the dummy for an absent ref) */
static inline void arg_ref(kargs *a, sq_ref r) {
  if (a->st == SEQCL_OK) a->st = sq_ocl_ref_args(a->o, a->k, a->i, r, a->name);
  a->i += 2;
}
/* buffer + offset + has flag */
static inline void arg_opt(kargs *a, sq_ref r) {
  arg_ref(a, r);
  arg_int(a, r.buf != NULL);
}
/* an optional strided tensor: buffer + offset, its row and step strides (0
 * when absent) and the has flag */
static inline void arg_opt_strided(kargs *a, sq_ref r, size_t sn, size_t st) {
  arg_ref(a, r);
  arg_size(a, r.buf ? sn : 0);
  arg_size(a, r.buf ? st : 0);
  arg_int(a, r.buf != NULL);
}
static inline void arg_mem(kargs *a, cl_mem m) { arg_raw(a, sizeof m, &m); }
static inline void arg_local(kargs *a, size_t bytes) { arg_raw(a, bytes, NULL); }

static inline seqcl_status launch1(kargs *a, size_t n, size_t want) {
  SQ_TRY(a->st);
  size_t local = sq_ocl_wg_size(a->o, a->k, want);
  size_t global = sq_round_up(n, local);
  return sq_ocl_launch(a->o, a->k, 1, &global, &local, a->name);
}
/* global (>= x, y, z) with groups of (wg, 1, 1) */
static inline seqcl_status launch3(kargs *a, size_t x, size_t y, size_t z, size_t want) {
  SQ_TRY(a->st);
  size_t wg = sq_ocl_wg_size(a->o, a->k, want);
  const size_t local[3] = {wg, 1, 1};
  const size_t global[3] = {sq_round_up(x, wg), y, z};
  return sq_ocl_launch(a->o, a->k, 3, global, local, a->name);
}

/* An elementwise training kernel over count elements: the count checked to
 * fit the kernels' int index, the kernel, and its arguments started with it. */
static inline seqcl_status train_flat_args(sq_ocl *o, const char *file, const char *name,
                                           size_t count, kargs *a) {
  SQ_TRY(sq_ocl_fits_int(o, count, name));
  SQ_TRY(train_args(o, file, name, a, NULL));
  arg_size(a, count);
  return SEQCL_OK;
}

/* groups work-groups of wg work-items each (a reduction's group size) */
static inline seqcl_status launch_groups(kargs *a, size_t groups, size_t wg) {
  SQ_TRY(a->st);
  size_t global = groups * wg;
  return sq_ocl_launch(a->o, a->k, 1, &global, &wg, a->name);
}

#endif
