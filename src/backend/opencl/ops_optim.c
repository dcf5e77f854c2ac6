/* The backward slots of the OpenCL backend (src/train/grad.h) over
 * kernels/grad.cl. Every slot only enqueues work; temporaries (the attention
 * score gradients, the partial sums of the norm) are released right after
 * the enqueue, which OpenCL allows: it frees them once the kernels are done. */
#include <limits.h>

#include "backend/opencl/ocl.h"
#include "backend/opencl/ops_grad.h"
#include "backend/opencl/ops_internal.h"

#define GRAD_FILE "grad.cl"
/* Work-group sizes asked for; sq_ocl_wg_size lowers them to what the device
 * and the kernel allow (always a power of two, as the reductions need). */
#define ROW_WG 256
#define FLAT_WG 128
#define COL_WG 64
/* Partial sums of the squared norm: enough groups to fill a device, few
 * enough for one group to add them up. */
#define SUMSQ_GROUPS 64
/* Table-row buckets of embedding_bwd: the parallelism is D * buckets. */
#define EMB_BUCKETS 8
/* Positions per chunk of attn_bwd_energy_part (grad.cl's BWD_ROWS). */
#define BWD_ROWS 64

/* Whether the device computes in double (cl_khr_fp64): the reductions then
 * accumulate in double like the host's. */
static int device_fp64(sq_ocl *o) {
  cl_device_fp_config cfg = 0;
  if (clGetDeviceInfo(o->device, CL_DEVICE_DOUBLE_FP_CONFIG, sizeof cfg, &cfg, NULL) !=
      CL_SUCCESS)
    return 0;
  return cfg != 0;
}

/* All kernels of grad.cl come from one program, built with the same options. */
static seqcl_status grad_kernel(sq_ocl *o, const char *name, cl_kernel *k, size_t *acc_bytes) {
  int fp64 = device_fp64(o);
  if (acc_bytes) *acc_bytes = fp64 ? sizeof(double) : sizeof(float);
  return sq_ocl_kernel(o, GRAD_FILE, fp64 ? "-DSQ_FP64=1" : "", name, k);
}

static seqcl_status fits_int(sq_ocl *o, size_t n, const char *what) {
  if (n > (size_t)INT_MAX)
    return sq_fail(o->ctx, SEQCL_ERR_UNSUPPORTED,
                   "opencl %s: %zu elements exceed the kernels' int index range", what, n);
  return SEQCL_OK;
}

/* Arguments set one after another; the first failure sticks and later calls
 * do nothing, so a slot sets all its arguments and checks once. */
typedef struct kargs {
  sq_ocl *o;
  cl_kernel k;
  const char *name;
  cl_uint i;
  seqcl_status st;
} kargs;

static kargs kargs_start(sq_ocl *o, cl_kernel k, const char *name) {
  kargs a = {o, k, name, 0, SEQCL_OK};
  return a;
}
static void arg_raw(kargs *a, size_t size, const void *value) {
  if (a->st == SEQCL_OK) a->st = sq_ocl_arg(a->o, a->k, a->i, size, value, a->name);
  a->i++;
}
static void arg_int(kargs *a, int v) { arg_raw(a, sizeof v, &v); }
static void arg_float(kargs *a, float v) { arg_raw(a, sizeof v, &v); }
static void arg_size(kargs *a, size_t v) { /* a stride or size already checked to fit */
  int i = (int)v;
  arg_raw(a, sizeof i, &i);
}
/* buffer + int offset (the dummy for an absent ref) */
static void arg_ref(kargs *a, sq_ref r) {
  if (a->st == SEQCL_OK) a->st = sq_ocl_ref_args(a->o, a->k, a->i, r, a->name);
  a->i += 2;
}
/* buffer + offset + has flag */
static void arg_opt(kargs *a, sq_ref r) {
  arg_ref(a, r);
  arg_int(a, r.buf != NULL);
}
static void arg_mem(kargs *a, cl_mem m) { arg_raw(a, sizeof m, &m); }
static void arg_local(kargs *a, size_t bytes) { arg_raw(a, bytes, NULL); }

static seqcl_status launch1(kargs *a, size_t n, size_t want) {
  SQ_TRY(a->st);
  size_t local = sq_ocl_wg_size(a->o, a->k, want);
  size_t global = sq_round_up(n, local);
  return sq_ocl_launch(a->o, a->k, 1, &global, &local, a->name);
}
/* global (>= x, y, z) with groups of (wg, 1, 1) */
static seqcl_status launch3(kargs *a, size_t x, size_t y, size_t z, size_t want) {
  SQ_TRY(a->st);
  size_t wg = sq_ocl_wg_size(a->o, a->k, want);
  const size_t local[3] = {wg, 1, 1};
  const size_t global[3] = {sq_round_up(x, wg), y, z};
  return sq_ocl_launch(a->o, a->k, 3, global, local, a->name);
}

/* ---- cross-entropy, bias, tanh ---- */

static seqcl_status g_cross_entropy_bwd(sq_backend *be, int N, int V, sq_ref x, sq_ref labels,
                                        float scale, sq_ref dx) {
  sq_ocl *o = sq_ocl_of(be);
  SQ_TRY(fits_int(o, (size_t)N * (size_t)V, "cross_entropy_bwd"));
  cl_kernel k;
  size_t acc;
  SQ_TRY(grad_kernel(o, "ce_bwd", &k, &acc));
  size_t wg = sq_ocl_wg_size(o, k, ROW_WG);
  kargs a = kargs_start(o, k, "ce_bwd");
  arg_int(&a, N);
  arg_int(&a, V);
  arg_ref(&a, x);
  arg_ref(&a, labels);
  arg_float(&a, scale);
  arg_ref(&a, dx);
  arg_local(&a, wg * acc);
  SQ_TRY(a.st);
  size_t global = (size_t)N * wg;
  return sq_ocl_launch(o, k, 1, &global, &wg, "ce_bwd");
}

static seqcl_status g_bias_grad(sq_backend *be, int rows, int cols, sq_ref dy, int ld,
                                sq_ref db) {
  sq_ocl *o = sq_ocl_of(be);
  SQ_TRY(fits_int(o, (size_t)rows * (size_t)ld, "bias_grad"));
  cl_kernel k;
  SQ_TRY(grad_kernel(o, "bias_grad", &k, NULL));
  kargs a = kargs_start(o, k, "bias_grad");
  arg_int(&a, rows);
  arg_int(&a, cols);
  arg_ref(&a, dy);
  arg_int(&a, ld);
  arg_ref(&a, db);
  return launch1(&a, (size_t)cols, COL_WG);
}

static seqcl_status g_tanh_bwd(sq_backend *be, size_t count, sq_ref y, sq_ref dy, sq_ref dx) {
  sq_ocl *o = sq_ocl_of(be);
  SQ_TRY(fits_int(o, count, "tanh_bwd"));
  cl_kernel k;
  SQ_TRY(grad_kernel(o, "tanh_bwd", &k, NULL));
  kargs a = kargs_start(o, k, "tanh_bwd");
  arg_size(&a, count);
  arg_ref(&a, y);
  arg_ref(&a, dy);
  arg_ref(&a, dx);
  return launch1(&a, count, FLAT_WG);
}

/* ---- GRU ---- */

static seqcl_status check_strides(sq_ocl *o, const char *what, size_t a, size_t b, size_t c,
                                  size_t d) {
  if (a > (size_t)INT_MAX || b > (size_t)INT_MAX || c > (size_t)INT_MAX || d > (size_t)INT_MAX)
    return sq_fail(o->ctx, SEQCL_ERR_UNSUPPORTED, "opencl %s: a stride exceeds the kernels' int",
                   what);
  return SEQCL_OK;
}

static seqcl_status g_gru_gates_bwd(sq_backend *be, const sq_gru_bwd_args *g) {
  sq_ocl *o = sq_ocl_of(be);
  SQ_TRY(check_strides(o, "gru_gates_bwd", g->gi_sn, g->gi_st, g->dout_sn, g->dout_st));
  SQ_TRY(check_strides(o, "gru_gates_bwd", g->sv_sn, g->sv_st, 0, 0));
  cl_kernel k;
  SQ_TRY(grad_kernel(o, "gru_bwd", &k, NULL));
  kargs a = kargs_start(o, k, "gru_bwd");
  arg_int(&a, g->N);
  arg_int(&a, g->H);
  arg_ref(&a, g->gi);
  arg_size(&a, g->gi_sn);
  arg_size(&a, g->gi_st);
  arg_ref(&a, g->gh);
  arg_int(&a, g->ld_gh);
  arg_opt(&a, g->b_ih);
  arg_opt(&a, g->b_hh);
  arg_ref(&a, g->h_prev);
  arg_ref(&a, g->dh);
  arg_ref(&a, g->dout);
  arg_size(&a, g->dout.buf ? g->dout_sn : 0);
  arg_size(&a, g->dout.buf ? g->dout_st : 0);
  arg_int(&a, g->dout.buf != NULL);
  arg_ref(&a, g->dgi);
  arg_ref(&a, g->dgh);
  arg_int(&a, g->ld_dgh);
  arg_opt(&a, g->lens);
  arg_int(&a, g->step);
  arg_int(&a, g->reverse);
  arg_ref(&a, g->saved);
  arg_size(&a, g->saved.buf ? g->sv_sn : 0);
  arg_size(&a, g->saved.buf ? g->sv_st : 0);
  arg_int(&a, g->saved.buf != NULL);
  return launch3(&a, (size_t)g->H, (size_t)g->N, 1, COL_WG);
}

/* ---- attention ---- */

static seqcl_status g_attn_fwd(sq_backend *be, const sq_attn_args *at, sq_ref u, sq_ref c,
                               int ld_c, sq_ref alpha) {
  sq_ocl *o = sq_ocl_of(be);
  /* The forward step itself is the inference kernel, so training and decoding
   * attend identically; only the tanh activations are kept on top. */
  SQ_TRY(sq_ocl_attn_fused(be, at, c, ld_c, alpha));
  if (at->kind != SQ_SCORE_ADDITIVE || !u.buf) return SEQCL_OK;
  SQ_TRY(fits_int(o, (size_t)at->N * (size_t)at->S * (size_t)at->A, "attn_fwd"));
  cl_kernel k;
  SQ_TRY(grad_kernel(o, "attn_keep_u", &k, NULL));
  kargs a = kargs_start(o, k, "attn_keep_u");
  arg_int(&a, at->N);
  arg_int(&a, at->S);
  arg_int(&a, at->A);
  arg_ref(&a, at->qp);
  arg_int(&a, at->ld_qp);
  arg_ref(&a, at->pkeys);
  arg_ref(&a, at->lens);
  arg_opt(&a, at->mask);
  arg_ref(&a, u);
  return launch3(&a, (size_t)at->A, (size_t)at->S, (size_t)at->N, COL_WG);
}

/* The validity arguments shared by the attention backward kernels. */
static void arg_valid(kargs *a, const sq_attn_args *at) {
  arg_ref(a, at->lens);
  arg_opt(a, at->mask);
}

static seqcl_status attn_bwd_launches(sq_ocl *o, const sq_attn_args *at, sq_ref alpha, sq_ref u,
                                      sq_ref dc, int ld_dc, sq_ref dqp, int ld_dqp, sq_ref dkeys,
                                      sq_ref dpkeys, sq_ref dv, sq_ref dbv, cl_mem de) {
  const int N = at->N, S = at->S, He = at->He, A = at->A;
  const int additive = at->kind == SQ_SCORE_ADDITIVE;
  cl_kernel k;
  /* 1. de[n, j]: one work-item per row on CPU-type devices, a work-group per
   * row elsewhere (grad.cl) */
  const char *de_name = o->cpu_device ? "attn_bwd_de" : "attn_bwd_de_wg";
  size_t acc_bytes;
  SQ_TRY(grad_kernel(o, de_name, &k, &acc_bytes));
  kargs a = kargs_start(o, k, de_name);
  arg_int(&a, N);
  arg_int(&a, S);
  arg_int(&a, He);
  arg_ref(&a, alpha);
  arg_ref(&a, dc);
  arg_int(&a, ld_dc);
  arg_ref(&a, at->keys);
  arg_valid(&a, at);
  arg_float(&a, at->scale);
  arg_mem(&a, de);
  arg_int(&a, 0);
  if (o->cpu_device) {
    SQ_TRY(launch1(&a, (size_t)N, COL_WG));
  } else {
    size_t wg = sq_ocl_wg_size(o, k, ROW_WG);
    arg_local(&a, wg * sizeof(float));
    arg_local(&a, wg * acc_bytes);
    SQ_TRY(a.st);
    const size_t global = (size_t)N * wg;
    SQ_TRY(sq_ocl_launch(o, k, 1, &global, &wg, de_name));
  }

  /* 2. dkeys: the context path, and the score path of dot-type scores */
  SQ_TRY(grad_kernel(o, "attn_bwd_keys", &k, NULL));
  a = kargs_start(o, k, "attn_bwd_keys");
  arg_int(&a, N);
  arg_int(&a, S);
  arg_int(&a, He);
  arg_ref(&a, alpha);
  arg_ref(&a, dc);
  arg_int(&a, ld_dc);
  arg_ref(&a, additive ? sq_none() : at->qp);
  arg_int(&a, additive ? 0 : at->ld_qp);
  arg_int(&a, !additive);
  arg_mem(&a, de);
  arg_int(&a, 0);
  arg_valid(&a, at);
  arg_ref(&a, dkeys);
  SQ_TRY(launch3(&a, (size_t)He, (size_t)S, (size_t)N, COL_WG));

  if (!additive) { /* 3. dqp of dot-type scores */
    SQ_TRY(grad_kernel(o, "attn_bwd_dqp", &k, NULL));
    a = kargs_start(o, k, "attn_bwd_dqp");
    arg_int(&a, N);
    arg_int(&a, S);
    arg_int(&a, He);
    arg_mem(&a, de);
    arg_int(&a, 0);
    arg_ref(&a, at->keys);
    arg_valid(&a, at);
    arg_ref(&a, dqp);
    arg_int(&a, ld_dqp);
    return launch3(&a, (size_t)He, (size_t)N, 1, COL_WG);
  }
  /* 3. additive: dpkeys and dqp, then dv and dbv */
  SQ_TRY(grad_kernel(o, "attn_bwd_additive", &k, NULL));
  a = kargs_start(o, k, "attn_bwd_additive");
  arg_int(&a, N);
  arg_int(&a, S);
  arg_int(&a, A);
  arg_ref(&a, at->qp);
  arg_int(&a, at->ld_qp);
  arg_ref(&a, at->pkeys);
  arg_opt(&a, u);
  arg_ref(&a, at->v);
  arg_mem(&a, de);
  arg_int(&a, 0);
  arg_valid(&a, at);
  arg_ref(&a, dpkeys);
  arg_ref(&a, dqp);
  arg_int(&a, ld_dqp);
  SQ_TRY(launch3(&a, (size_t)A, (size_t)N, 1, COL_WG));

  if (o->cpu_device) { /* one work-item per k walks all N S positions */
    SQ_TRY(grad_kernel(o, "attn_bwd_energy", &k, NULL));
    a = kargs_start(o, k, "attn_bwd_energy");
    arg_int(&a, N);
    arg_int(&a, S);
    arg_int(&a, A);
    arg_ref(&a, at->qp);
    arg_int(&a, at->ld_qp);
    arg_ref(&a, at->pkeys);
    arg_opt(&a, u);
    arg_mem(&a, de);
    arg_int(&a, 0);
    arg_valid(&a, at);
    arg_ref(&a, dv);
    arg_opt(&a, dbv);
    return launch1(&a, (size_t)A + 1, COL_WG);
  }
  /* elsewhere: chunks of BWD_ROWS positions (grad.cl), then their sums */
  const size_t chunks = ((size_t)N * (size_t)S + BWD_ROWS - 1) / BWD_ROWS;
  SQ_TRY(fits_int(o, chunks * ((size_t)A + 1), "attn_bwd energy partial sums"));
  cl_mem part;
  SQ_TRY(sq_ocl_scratch(o, chunks * ((size_t)A + 1) * sizeof(float), &part));
  SQ_TRY(grad_kernel(o, "attn_bwd_energy_part", &k, NULL));
  a = kargs_start(o, k, "attn_bwd_energy_part");
  arg_int(&a, N);
  arg_int(&a, S);
  arg_int(&a, A);
  arg_ref(&a, at->qp);
  arg_int(&a, at->ld_qp);
  arg_ref(&a, at->pkeys);
  arg_opt(&a, u);
  arg_mem(&a, de);
  arg_int(&a, 0);
  arg_valid(&a, at);
  arg_int(&a, dbv.buf != NULL);
  arg_mem(&a, part);
  SQ_TRY(launch3(&a, (size_t)A + 1, chunks, 1, COL_WG));
  SQ_TRY(grad_kernel(o, "attn_bwd_energy_sum", &k, NULL));
  a = kargs_start(o, k, "attn_bwd_energy_sum");
  arg_int(&a, A);
  arg_int(&a, (int)chunks);
  arg_mem(&a, part);
  arg_ref(&a, dv);
  arg_opt(&a, dbv);
  return launch1(&a, (size_t)A + 1, COL_WG);
}

static seqcl_status g_attn_bwd(sq_backend *be, const sq_attn_args *at, sq_ref alpha, sq_ref u,
                               sq_ref dc, int ld_dc, sq_ref dqp, int ld_dqp, sq_ref dkeys,
                               sq_ref dpkeys, sq_ref dv, sq_ref dbv) {
  sq_ocl *o = sq_ocl_of(be);
  const size_t NS = (size_t)at->N * (size_t)at->S;
  SQ_TRY(fits_int(o, NS * (size_t)at->He, "attn_bwd"));
  if (at->kind == SQ_SCORE_ADDITIVE) SQ_TRY(fits_int(o, NS * (size_t)at->A, "attn_bwd"));
  /* de [N, S]: the gradient of the scores, shared by the later kernels */
  cl_int err;
  cl_mem de = clCreateBuffer(o->context, CL_MEM_READ_WRITE, NS * sizeof(float), NULL, &err);
  SQ_TRY(sq_ocl_check(o, err, "clCreateBuffer(attention score gradients)"));
  seqcl_status st =
      attn_bwd_launches(o, at, alpha, u, dc, ld_dc, dqp, ld_dqp, dkeys, dpkeys, dv, dbv, de);
  clReleaseMemObject(de);
  return st;
}

/* ---- embedding, norm, scale, Adam ---- */

static seqcl_status g_embedding_bwd(sq_backend *be, int N, int D, sq_ref ids, sq_ref dy,
                                    int ld_dy, int pad_id, sq_ref dtable) {
  sq_ocl *o = sq_ocl_of(be);
  SQ_TRY(fits_int(o, (size_t)N * (size_t)ld_dy, "embedding_bwd"));
  SQ_TRY(fits_int(o, dtable.buf->bytes / sizeof(float), "embedding_bwd"));
  cl_kernel k;
  SQ_TRY(grad_kernel(o, "embedding_bwd", &k, NULL));
  kargs a = kargs_start(o, k, "embedding_bwd");
  arg_int(&a, N);
  arg_int(&a, D);
  arg_ref(&a, ids);
  arg_ref(&a, dy);
  arg_int(&a, ld_dy);
  arg_int(&a, pad_id);
  arg_ref(&a, dtable);
  arg_int(&a, EMB_BUCKETS);
  return launch3(&a, (size_t)D, EMB_BUCKETS, 1, COL_WG);
}

static seqcl_status sumsq_launches(sq_ocl *o, int count, sq_ref x, sq_ref out, cl_mem partial,
                                   size_t groups) {
  cl_kernel k;
  size_t acc;
  SQ_TRY(grad_kernel(o, "sumsq_partial", &k, &acc));
  size_t wg = sq_ocl_wg_size(o, k, ROW_WG);
  kargs a = kargs_start(o, k, "sumsq_partial");
  arg_int(&a, count);
  arg_ref(&a, x);
  arg_mem(&a, partial);
  arg_local(&a, wg * acc);
  SQ_TRY(a.st);
  size_t global = groups * wg;
  SQ_TRY(sq_ocl_launch(o, k, 1, &global, &wg, "sumsq_partial"));

  SQ_TRY(grad_kernel(o, "sumsq_final", &k, &acc));
  wg = sq_ocl_wg_size(o, k, SUMSQ_GROUPS);
  a = kargs_start(o, k, "sumsq_final");
  arg_int(&a, (int)groups);
  arg_mem(&a, partial);
  arg_ref(&a, out);
  arg_local(&a, wg * acc);
  SQ_TRY(a.st);
  return sq_ocl_launch(o, k, 1, &wg, &wg, "sumsq_final");
}

static seqcl_status g_sum_squares(sq_backend *be, size_t count, sq_ref x, sq_ref out) {
  sq_ocl *o = sq_ocl_of(be);
  SQ_TRY(fits_int(o, count, "sum_squares"));
  size_t acc = device_fp64(o) ? sizeof(double) : sizeof(float);
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

static seqcl_status g_scale(sq_backend *be, size_t count, sq_ref x, float s) {
  sq_ocl *o = sq_ocl_of(be);
  SQ_TRY(fits_int(o, count, "scale"));
  cl_kernel k;
  SQ_TRY(grad_kernel(o, "scale_inplace", &k, NULL));
  kargs a = kargs_start(o, k, "scale_inplace");
  arg_size(&a, count);
  arg_ref(&a, x);
  arg_float(&a, s);
  return launch1(&a, count, FLAT_WG);
}

static seqcl_status g_adam(sq_backend *be, size_t count, sq_ref p, sq_ref g, sq_ref m, sq_ref v,
                           float b1, float b2, float eps, float step_size, float bc2_sqrt) {
  sq_ocl *o = sq_ocl_of(be);
  SQ_TRY(fits_int(o, count, "adam"));
  cl_kernel k;
  SQ_TRY(grad_kernel(o, "adam_step", &k, NULL));
  kargs a = kargs_start(o, k, "adam_step");
  arg_size(&a, count);
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

const struct sq_grad_ops sq_ocl_grad_table = {
    .cross_entropy_bwd = g_cross_entropy_bwd,
    .bias_grad = g_bias_grad,
    .tanh_bwd = g_tanh_bwd,
    .gru_gates_bwd = g_gru_gates_bwd,
    .gru_fwd = sq_ocl_gru_step, /* kernels/gru.cl, keeping the gates */
    .attn_bwd = g_attn_bwd,
    .attn_fwd = g_attn_fwd,
    .embedding_bwd = g_embedding_bwd,
    .sum_squares = g_sum_squares,
    .scale = g_scale,
    .adam = g_adam,
};
