/* Attention ops of the OpenCL backend (kernels/attention.cl): raw scores,
 * masked softmax, context, and the fused step that does all three in one
 * launch per decoder step. */
#include <limits.h>
#include <stdio.h>

#include "backend/opencl/kargs.h"

#define ATTN_FILE "attention.cl"
/* Positions per chunk of attn_bwd_energy_part (attention.cl's BWD_ROWS). */
#define BWD_ROWS 64
/* Row kernels want wide work-groups: a row of S scores is reduced by WG
 * work-items. 256 keeps a GPU's compute unit busy and the reduction short. */
#define ROW_WG_WANT 256
/* Element-wise kernels (scores, context): a modest group, any device copes. */
#define ELEM_WG_WANT 64

/* Kernel offsets and strides are ints (ocl.h convention), so a buffer may be
 * passed only if every element index fits in an int. */
static seqcl_status ref_off(sq_ocl *o, sq_ref r, const char *what, int *off) {
  *off = 0;
  if (!r.buf) return SEQCL_OK;
  if (r.buf->bytes / 4 > (size_t)INT_MAX || r.off > (size_t)INT_MAX)
    return sq_fail(o->ctx, SEQCL_ERR_UNSUPPORTED,
                   "opencl %s: buffer of %zu bytes exceeds the 2^31-element kernel index range",
                   what, r.buf->bytes);
  *off = (int)r.off;
  return SEQCL_OK;
}

/* Argument *i of kernel k (kname in messages): r's buffer, then at *i + 1 its
 * offset, after ref_off's check (what names r there); the dummy buffer when r
 * is absent. */
static seqcl_status set_ref(sq_ocl *o, cl_kernel k, const char *kname, cl_uint *i, sq_ref r,
                            const char *what) {
  int off;
  SQ_TRY(ref_off(o, r, what, &off));
  const cl_mem m = sq_ocl_mem_or_dummy(o, r);
  SQ_TRY(sq_ocl_arg(o, k, (*i)++, sizeof m, &m, kname));
  return sq_ocl_arg(o, k, (*i)++, sizeof off, &off, kname);
}

/* The largest power of two <= min(want, device limit). */
static size_t pow2_at_most(size_t want, size_t limit) {
  size_t p = 1;
  while (p * 2 <= want && p * 2 <= limit) p *= 2;
  return p;
}

/* All kernels of attention.cl come from one program built with -DWG=<wg>, so
 * one build serves a context. A row kernel whose resources allow fewer
 * work-items than the device maximum gets rebuilt with the smaller WG. */
static seqcl_status attn_kernel(sq_ocl *o, const char *name, int row_kernel, cl_kernel *k,
                                size_t *wg) {
  size_t want = pow2_at_most(ROW_WG_WANT, o->max_wg);
  for (;;) {
    char opts[32];
    snprintf(opts, sizeof opts, "-DWG=%zu", want);
    SQ_TRY(sq_ocl_kernel(o, ATTN_FILE, opts, name, k));
    size_t got = sq_ocl_wg_size(o, *k, row_kernel ? want : ELEM_WG_WANT);
    if (!row_kernel || got >= want || want == 1) {
      *wg = row_kernel ? want : got;
      return SEQCL_OK;
    }
    want = got;
  }
}

/* The flat argument list shared by attn_scores and attn_fused, starting at
 * *i: kind, N, S, He, A, group, qp, ld_qp, keys, pkeys, v, bv (+flag), scale,
 * lens. */
static seqcl_status set_score_args(sq_ocl *o, cl_kernel attn, cl_uint *i,
                                   const sq_attn_args *a) {
  int kind = (int)a->kind, N = a->N, S = a->S, He = a->He, group = sq_attn_group(a);
  int A = a->kind == SQ_SCORE_ADDITIVE ? a->A : 0;
  int ld_qp = a->ld_qp;
  int has_bv = a->kind == SQ_SCORE_ADDITIVE && a->bv.buf != NULL;
  float scale = a->scale;
  SQ_ARG(o, attn, (*i)++, kind);
  SQ_ARG(o, attn, (*i)++, N);
  SQ_ARG(o, attn, (*i)++, S);
  SQ_ARG(o, attn, (*i)++, He);
  SQ_ARG(o, attn, (*i)++, A);
  SQ_ARG(o, attn, (*i)++, group);
  SQ_TRY(set_ref(o, attn, "attn", i, a->qp, "attention query"));
  SQ_ARG(o, attn, (*i)++, ld_qp);
  /* The additive score never reads keys, the dot scores never read pkeys/v:
   * those absent get the dummy buffer. */
  SQ_TRY(set_ref(o, attn, "attn", i, a->keys, "attention keys"));
  SQ_TRY(set_ref(o, attn, "attn", i, a->pkeys, "attention key projection"));
  SQ_TRY(set_ref(o, attn, "attn", i, a->v, "attention energy weight"));
  SQ_TRY(set_ref(o, attn, "attn", i, a->bv, "attention energy bias"));
  SQ_ARG(o, attn, (*i)++, has_bv);
  SQ_ARG(o, attn, (*i)++, scale);
  return set_ref(o, attn, "attn", i, a->lens, "attention lengths");
}

seqcl_status sq_ocl_attn_scores(sq_backend *be, const sq_attn_args *a, sq_ref scores) {
  sq_ocl *o = sq_ocl_of(be);
  cl_kernel attn;
  size_t wg;
  SQ_TRY(attn_kernel(o, "attn_scores", 0, &attn, &wg));
  cl_uint i = 0;
  SQ_TRY(set_score_args(o, attn, &i, a));
  SQ_TRY(set_ref(o, attn, "attn", &i, scores, "attention scores"));
  const size_t local[2] = {wg, 1};
  const size_t global[2] = {sq_round_up((size_t)a->S, wg), (size_t)a->N};
  return sq_ocl_launch(o, attn, 2, global, local, "attn_scores");
}

seqcl_status sq_ocl_masked_softmax(sq_backend *be, int N, int S, sq_ref x, sq_ref lens,
                                   sq_ref mask, sq_ref y) {
  sq_ocl *o = sq_ocl_of(be);
  cl_kernel softmax;
  size_t wg;
  SQ_TRY(attn_kernel(o, "masked_softmax", 1, &softmax, &wg));
  int has_mask = mask.buf != NULL;
  cl_uint i = 0;
  SQ_ARG(o, softmax, i++, N);
  SQ_ARG(o, softmax, i++, S);
  SQ_TRY(set_ref(o, softmax, "softmax", &i, x, "masked_softmax input"));
  SQ_TRY(set_ref(o, softmax, "softmax", &i, lens, "masked_softmax lengths"));
  SQ_TRY(set_ref(o, softmax, "softmax", &i, mask, "masked_softmax mask"));
  SQ_ARG(o, softmax, i++, has_mask);
  SQ_TRY(set_ref(o, softmax, "softmax", &i, y, "masked_softmax output"));
  const size_t local[1] = {wg};
  const size_t global[1] = {(size_t)N * wg};
  return sq_ocl_launch(o, softmax, 1, global, local, "masked_softmax");
}

seqcl_status sq_ocl_context(sq_backend *be, int N, int S, int He, sq_ref alpha, sq_ref keys,
                            sq_ref c, int ld_c) {
  sq_ocl *o = sq_ocl_of(be);
  cl_kernel context;
  size_t wg;
  SQ_TRY(attn_kernel(o, "attn_context", 0, &context, &wg));
  cl_uint i = 0;
  SQ_ARG(o, context, i++, N);
  SQ_ARG(o, context, i++, S);
  SQ_ARG(o, context, i++, He);
  SQ_TRY(set_ref(o, context, "context", &i, alpha, "context weights"));
  SQ_TRY(set_ref(o, context, "context", &i, keys, "context keys"));
  SQ_TRY(set_ref(o, context, "context", &i, c, "context output"));
  SQ_ARG(o, context, i++, ld_c);
  const size_t local[2] = {wg, 1};
  const size_t global[2] = {sq_round_up((size_t)He, wg), (size_t)N};
  return sq_ocl_launch(o, context, 2, global, local, "attn_context");
}

/* Where the fused step writes: the context c (row stride ld_c) and, when
 * alpha is given, the weights. attn_fused_combine takes the same tail. */
typedef struct fused_out {
  cl_mem c, alpha;
  int c_off, alpha_off, has_alpha;
} fused_out;

static seqcl_status set_out_args(sq_ocl *o, cl_kernel k, cl_uint *i, const fused_out *out,
                                 int ld_c) {
  SQ_ARG(o, k, (*i)++, out->c);
  SQ_ARG(o, k, (*i)++, out->c_off);
  SQ_ARG(o, k, (*i)++, ld_c);
  SQ_ARG(o, k, (*i)++, out->alpha);
  SQ_ARG(o, k, (*i)++, out->alpha_off);
  SQ_ARG(o, k, (*i)++, out->has_alpha);
  return SEQCL_OK;
}

/* The arguments attn_fused_row and attn_fused_chunk share, from *i: the score
 * list, the optional mask (+flag), then the outputs; *out keeps the outputs
 * for attn_fused_combine. */
static seqcl_status set_fused_args(sq_ocl *o, cl_kernel k, cl_uint *i, const sq_attn_args *a,
                                   sq_ref c, int ld_c, sq_ref alpha, fused_out *out) {
  SQ_TRY(set_score_args(o, k, i, a));
  SQ_TRY(ref_off(o, c, "attention context", &out->c_off));
  SQ_TRY(ref_off(o, alpha, "attention weights", &out->alpha_off));
  int has_mask = a->mask.buf != NULL;
  out->c = sq_ocl_mem(c);
  out->alpha = sq_ocl_mem_or_dummy(o, alpha);
  out->has_alpha = alpha.buf != NULL;
  SQ_TRY(set_ref(o, k, "k", i, a->mask, "attention mask"));
  SQ_ARG(o, k, (*i)++, has_mask);
  return set_out_args(o, k, i, out, ld_c);
}

/* The fused step on CPU-type devices (o->cpu_device): attn_fused_row, a
 * work-item per row (attention.cl says why); elsewhere attn_fused_chunk (+
 * attn_fused_combine), a row split over work-groups. */
static seqcl_status attn_fused_row(sq_ocl *o, const sq_attn_args *a, sq_ref c, int ld_c,
                                   sq_ref alpha) {
  cl_kernel k; /* attention.cl's row form: a program of its own */
  SQ_TRY(sq_ocl_kernel(o, ATTN_FILE, "-DATTN_ROW_FORM", "attn_fused_row", &k));
  cl_uint i = 0;
  fused_out out;
  SQ_TRY(set_fused_args(o, k, &i, a, c, ld_c, alpha, &out));
  /* one work-item per group: a CPU device hands whole groups to its cores,
   * so N rows keep min(N, cores) cores busy */
  const size_t local[1] = {1};
  const size_t global[1] = {(size_t)a->N};
  return sq_ocl_launch(o, k, 1, global, local, "attn_fused_row");
}

/* Source positions per work-group of attn_fused_chunk (attention.cl's CHUNK). */
#define FUSED_CHUNK 64

/* Loop iterations of one attn_fused_row work-item, from attention.cl: per
 * block of ROW_JB (16) positions, each position's score (a 16-lane dot over
 * He or A plus its tail) and weight, the block's context update and a
 * rescale. */
static unsigned long long row_form_iterations(const sq_attn_args *a) {
  const unsigned long long jb = 16, S = (unsigned long long)a->S;
  const unsigned long long len = a->kind == SQ_SCORE_ADDITIVE ? (unsigned long long)a->A
                                                              : (unsigned long long)a->He;
  const unsigned long long score = len / 16 + len % 16, he = (unsigned long long)a->He;
  const unsigned long long h16 = he / 16 + he % 16;
  return (S + jb - 1) / jb * (jb * (2 + score) + (jb + 2) * h16) + he + S;
}

seqcl_status sq_ocl_attn_fused(sq_backend *be, const sq_attn_args *a, sq_ref c, int ld_c,
                               sq_ref alpha) {
  sq_ocl *o = sq_ocl_of(be);
  /* the row form loops over a whole row in one work-item: where the driver
   * cuts long loops short (llvmpipe, KNOWN_ISSUES.md), long rows take the
   * chunked form */
  if (o->cpu_device && sq_ocl_loops_ok(o, row_form_iterations(a)))
    return attn_fused_row(o, a, c, ld_c, alpha);
  cl_kernel chunk, combine;
  size_t wg, cwg;
  SQ_TRY(attn_kernel(o, "attn_fused_chunk", 1, &chunk, &wg));
  const size_t nch = ((size_t)a->S + FUSED_CHUNK - 1) / FUSED_CHUNK;
  const int direct = nch == 1;
  /* per row and chunk: m_c, s_c and the partial context */
  const size_t part_floats = direct ? 4 : (size_t)a->N * nch * ((size_t)a->He + 2);
  if (part_floats > (size_t)INT_MAX)
    return sq_fail(o->ctx, SEQCL_ERR_UNSUPPORTED,
                   "opencl attention: %zu chunk partial values exceed the kernels' int index",
                   part_floats);
  cl_mem part;
  SQ_TRY(sq_ocl_scratch(o, part_floats * sizeof(float), &part));
  cl_uint i = 0;
  int part_off = 0;
  fused_out out;
  SQ_TRY(set_fused_args(o, chunk, &i, a, c, ld_c, alpha, &out));
  SQ_ARG(o, chunk, i++, part);
  SQ_ARG(o, chunk, i++, part_off);
  SQ_ARG(o, chunk, i++, direct);
  {
    const size_t local[2] = {wg, 1};
    const size_t global[2] = {nch * wg, (size_t)a->N};
    SQ_TRY(sq_ocl_launch(o, chunk, 2, global, local, "attn_fused_chunk"));
  }
  if (direct) return SEQCL_OK;

  SQ_TRY(attn_kernel(o, "attn_fused_combine", 0, &combine, &cwg));
  int N = a->N, S = a->S, He = a->He, inch = (int)nch;
  i = 0;
  SQ_ARG(o, combine, i++, N);
  SQ_ARG(o, combine, i++, S);
  SQ_ARG(o, combine, i++, He);
  SQ_ARG(o, combine, i++, inch);
  SQ_ARG(o, combine, i++, part);
  SQ_ARG(o, combine, i++, part_off);
  SQ_TRY(set_out_args(o, combine, &i, &out, ld_c));
  const size_t local[2] = {cwg, 1};
  const size_t global[2] = {cwg, (size_t)a->N};
  return sq_ocl_launch(o, combine, 2, global, local, "attn_fused_combine");
}

/* ---- training: the forward pass that keeps its activations, and the backward ---- */

/* VALID_ARGS of attention.cl: the validity arguments of its training kernels. */
static void arg_valid(kargs *a, const sq_attn_args *at) {
  arg_ref(a, at->lens);
  arg_opt(a, at->mask);
}

seqcl_status sq_ocl_attn_fwd(sq_backend *be, const sq_attn_args *at, sq_ref u, sq_ref c,
                               int ld_c, sq_ref alpha) {
  sq_ocl *o = sq_ocl_of(be);
  /* The forward step itself is the inference kernel, so training and decoding
   * attend identically; only the tanh activations are kept on top. */
  SQ_TRY(sq_ocl_attn_fused(be, at, c, ld_c, alpha));
  if (at->kind != SQ_SCORE_ADDITIVE || !u.buf) return SEQCL_OK;
  SQ_TRY(sq_ocl_fits_int(o, (size_t)at->N * (size_t)at->S * (size_t)at->A, "attn_fwd"));
  kargs a;
  SQ_TRY(train_args(o, ATTN_FILE, "attn_keep_u", &a, NULL));
  arg_int(&a, at->N);
  arg_int(&a, at->S);
  arg_int(&a, at->A);
  arg_ref(&a, at->qp);
  arg_int(&a, at->ld_qp);
  arg_ref(&a, at->pkeys);
  arg_valid(&a, at);
  arg_ref(&a, u);
  return launch3(&a, (size_t)at->A, (size_t)at->S, (size_t)at->N, COL_WG);
}

/* The sizes N, S, He: the first arguments of the backward kernels that read
 * the keys. */
static void arg_sizes(kargs *a, const sq_attn_args *at) {
  arg_int(a, at->N);
  arg_int(a, at->S);
  arg_int(a, at->He);
}

/* dc (row stride ld_dc), the keys and the validity arguments: what
 * attn_bwd_dalpha and attn_bwd_de_wg compute dalpha = dc . keys from. */
static void arg_dc_keys(kargs *a, const sq_attn_args *at, sq_ref dc, int ld_dc) {
  arg_ref(a, dc);
  arg_int(a, ld_dc);
  arg_ref(a, at->keys);
  arg_valid(a, at);
}

/* The energy gradient de: a scratch buffer of its own, so at offset 0. */
static void arg_de(kargs *a, cl_mem de) {
  arg_mem(a, de);
  arg_int(a, 0);
}

/* ADDITIVE_BWD_ARGS of attention.cl: the sizes, qp, pkeys, the optional kept
 * activations u, the energy gradient de and the validity arguments. */
static void arg_additive_bwd(kargs *a, const sq_attn_args *at, sq_ref u, cl_mem de) {
  arg_int(a, at->N);
  arg_int(a, at->S);
  arg_int(a, at->A);
  arg_ref(a, at->qp);
  arg_int(a, at->ld_qp);
  arg_ref(a, at->pkeys);
  arg_opt(a, u);
  arg_de(a, de);
  arg_valid(a, at);
}

static seqcl_status attn_bwd_launches(sq_ocl *o, const sq_attn_args *at, sq_ref alpha, sq_ref u,
                                      sq_ref dc, int ld_dc, sq_ref dqp, int ld_dqp, sq_ref dkeys,
                                      sq_ref dpkeys, sq_ref dv, sq_ref dbv, cl_mem de) {
  const int N = at->N, S = at->S, He = at->He, A = at->A;
  const int additive = at->kind == SQ_SCORE_ADDITIVE;
  /* 1. de[n, j]. CPU-type devices: the products dalpha one work-item each,
   * then a work-item per row for the row sums (no work-item loops over a
   * row's S He products: llvmpipe would cut that loop short, KNOWN_ISSUES.md).
   * Elsewhere: a work-group per row (attention.cl, attn_bwd_de_wg). */
  kargs a;
  if (o->cpu_device) {
    SQ_TRY(train_args(o, ATTN_FILE, "attn_bwd_dalpha", &a, NULL));
    arg_sizes(&a, at);
    arg_dc_keys(&a, at, dc, ld_dc);
    arg_de(&a, de);
    SQ_TRY(launch3(&a, (size_t)S, (size_t)N, 1, COL_WG));
    SQ_TRY(train_args(o, ATTN_FILE, "attn_bwd_de", &a, NULL));
    arg_int(&a, N);
    arg_int(&a, S);
    arg_ref(&a, alpha);
    arg_valid(&a, at);
    arg_float(&a, at->scale);
    arg_de(&a, de);
    SQ_TRY(launch1(&a, (size_t)N, COL_WG));
  } else {
    size_t acc_bytes;
    SQ_TRY(train_args(o, ATTN_FILE, "attn_bwd_de_wg", &a, &acc_bytes));
    arg_sizes(&a, at);
    arg_ref(&a, alpha);
    arg_dc_keys(&a, at, dc, ld_dc);
    arg_float(&a, at->scale);
    arg_de(&a, de);
    size_t wg = sq_ocl_wg_size(o, a.k, ROW_WG);
    arg_local(&a, wg * sizeof(float));
    arg_local(&a, wg * acc_bytes);
    SQ_TRY(launch_groups(&a, (size_t)N, wg));
  }

  /* 2. dkeys: the context path, and the score path of dot-type scores */
  SQ_TRY(train_args(o, ATTN_FILE, "attn_bwd_keys", &a, NULL));
  arg_sizes(&a, at);
  arg_ref(&a, alpha);
  arg_ref(&a, dc);
  arg_int(&a, ld_dc);
  arg_ref(&a, additive ? sq_none() : at->qp);
  arg_int(&a, additive ? 0 : at->ld_qp);
  arg_int(&a, !additive);
  arg_de(&a, de);
  arg_valid(&a, at);
  arg_ref(&a, dkeys);
  SQ_TRY(launch3(&a, (size_t)He, (size_t)S, (size_t)N, COL_WG));

  if (!additive) { /* 3. dqp of dot-type scores */
    SQ_TRY(train_args(o, ATTN_FILE, "attn_bwd_dqp", &a, NULL));
    arg_sizes(&a, at);
    arg_de(&a, de);
    arg_ref(&a, at->keys);
    arg_valid(&a, at);
    arg_ref(&a, dqp);
    arg_int(&a, ld_dqp);
    return launch3(&a, (size_t)He, (size_t)N, 1, COL_WG);
  }
  /* 3. additive: dpkeys and dqp, then dv and dbv */
  SQ_TRY(train_args(o, ATTN_FILE, "attn_bwd_additive", &a, NULL));
  arg_additive_bwd(&a, at, u, de);
  arg_ref(&a, at->v);
  arg_ref(&a, dpkeys);
  arg_ref(&a, dqp);
  arg_int(&a, ld_dqp);
  SQ_TRY(launch3(&a, (size_t)A, (size_t)N, 1, COL_WG));

  /* CPU-type devices: one work-item per k walks all N S positions, unless the
   * driver would cut that loop short (llvmpipe): then the chunked form */
  if (o->cpu_device &&
      sq_ocl_loops_ok(o, (unsigned long long)N * (unsigned long long)S + (unsigned long long)N)) {
    SQ_TRY(train_args(o, ATTN_FILE, "attn_bwd_energy", &a, NULL));
    arg_additive_bwd(&a, at, u, de);
    arg_ref(&a, dv);
    arg_opt(&a, dbv);
    return launch1(&a, (size_t)A + 1, COL_WG);
  }
  /* elsewhere: chunks of BWD_ROWS positions (attention.cl), then their sums */
  const size_t chunks = ((size_t)N * (size_t)S + BWD_ROWS - 1) / BWD_ROWS;
  SQ_TRY(sq_ocl_fits_int(o, chunks * ((size_t)A + 1), "attn_bwd energy partial sums"));
  cl_mem part;
  SQ_TRY(sq_ocl_scratch(o, chunks * ((size_t)A + 1) * sizeof(float), &part));
  SQ_TRY(train_args(o, ATTN_FILE, "attn_bwd_energy_part", &a, NULL));
  arg_additive_bwd(&a, at, u, de);
  arg_int(&a, dbv.buf != NULL);
  arg_mem(&a, part);
  SQ_TRY(launch3(&a, (size_t)A + 1, chunks, 1, COL_WG));
  SQ_TRY(train_args(o, ATTN_FILE, "attn_bwd_energy_sum", &a, NULL));
  arg_int(&a, A);
  arg_int(&a, (int)chunks);
  arg_mem(&a, part);
  arg_ref(&a, dv);
  arg_opt(&a, dbv);
  return launch1(&a, (size_t)A + 1, COL_WG);
}

seqcl_status sq_ocl_attn_bwd(sq_backend *be, const sq_attn_args *at, sq_ref alpha, sq_ref u,
                               sq_ref dc, int ld_dc, sq_ref dqp, int ld_dqp, sq_ref dkeys,
                               sq_ref dpkeys, sq_ref dv, sq_ref dbv) {
  sq_ocl *o = sq_ocl_of(be);
  const size_t NS = (size_t)at->N * (size_t)at->S;
  SQ_TRY(sq_ocl_fits_int(o, NS * (size_t)at->He, "attn_bwd"));
  if (at->kind == SQ_SCORE_ADDITIVE) SQ_TRY(sq_ocl_fits_int(o, NS * (size_t)at->A, "attn_bwd"));
  /* the longest loops of one work-item on CPU-type devices: attn_bwd_de's two
   * passes over a row, attn_bwd_dalpha's dot product */
  if (o->cpu_device) {
    SQ_TRY(sq_ocl_loops_fit(o, 2ull * (unsigned long long)at->S, "attn_bwd_de"));
    SQ_TRY(sq_ocl_loops_fit(o, (unsigned long long)at->He, "attn_bwd_dalpha"));
  }
  /* de [N, S]: the gradient of the scores, shared by the later kernels */
  cl_int err;
  cl_mem de = clCreateBuffer(o->context, CL_MEM_READ_WRITE, NS * sizeof(float), NULL, &err);
  SQ_TRY(sq_ocl_check(o, err, "clCreateBuffer(attention score gradients)"));
  seqcl_status st =
      attn_bwd_launches(o, at, alpha, u, dc, ld_dc, dqp, ld_dqp, dkeys, dpkeys, dv, dbv, de);
  clReleaseMemObject(de);
  return st;
}
