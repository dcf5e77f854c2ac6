/* GRU gate op of the OpenCL backend (kernels/gru.cl): all three gates and the
 * state update of one time step in one launch. */
#include <limits.h>

#include "backend/opencl/kargs.h"


#define GRU_FILE "gru.cl"

#define GRU_WG_WANT 64

/* Kernel offsets and strides are ints (ocl.h convention): accept a buffer
 * only if every element index fits in an int. */
static seqcl_status gru_ref_off(sq_ocl *o, sq_ref r, const char *what, int *off) {
  *off = 0;
  if (!r.buf) return SEQCL_OK;
  if (r.buf->bytes / 4 > (size_t)INT_MAX || r.off > (size_t)INT_MAX)
    return sq_fail(o->ctx, SEQCL_ERR_UNSUPPORTED,
                   "opencl gru_gates: %s buffer of %zu bytes exceeds the 2^31-element kernel "
                   "index range", what, r.buf->bytes);
  *off = (int)r.off;
  return SEQCL_OK;
}

static seqcl_status gru_stride(sq_ocl *o, size_t s, const char *what, int *out) {
  if (s > (size_t)INT_MAX)
    return sq_fail(o->ctx, SEQCL_ERR_UNSUPPORTED, "opencl gru_gates: %s stride %zu exceeds int",
                   what, s);
  *out = (int)s;
  return SEQCL_OK;
}

/* Without lens every row is active and the time index is `step` itself, in
 * both directions: the caller walks the steps backwards for a reverse pass. */
seqcl_status sq_ocl_gru_fwd(sq_backend *be, const sq_gru_args *g, sq_ref saved, size_t sv_sn,
                            size_t sv_st) {
  sq_ocl *o = sq_ocl_of(be);
  /* CPU-type devices run 16 hidden units per work-item as float16 vectors
   * (gru.cl, GRU_VEC): PoCL does not vectorise the one-unit form across work-
   * items, and ran it at 8% of its copy bandwidth. */
  const int vec = o->cpu_device ? 16 : 1;
  cl_kernel gru_gates;
  SQ_TRY(sq_ocl_kernel(o, "gru.cl", vec == 16 ? "-DGRU_VEC=16" : "", "gru_gates", &gru_gates));
  size_t wg = sq_ocl_wg_size(o, gru_gates, GRU_WG_WANT);

  int N = g->N, H = g->H, ld_gh = g->ld_gh, step = g->step, reverse = g->reverse;
  int gi_off, gh_off, b_ih_off, b_hh_off, h_off, out_off, lens_off;
  int gi_sn, gi_st, out_sn = 0, out_st = 0;
  SQ_TRY(gru_ref_off(o, g->gi, "gi", &gi_off));
  SQ_TRY(gru_ref_off(o, g->gh, "gh", &gh_off));
  SQ_TRY(gru_ref_off(o, g->b_ih, "b_ih", &b_ih_off));
  SQ_TRY(gru_ref_off(o, g->b_hh, "b_hh", &b_hh_off));
  SQ_TRY(gru_ref_off(o, g->h, "h", &h_off));
  SQ_TRY(gru_ref_off(o, g->out, "out", &out_off));
  SQ_TRY(gru_ref_off(o, g->lens, "lens", &lens_off));
  SQ_TRY(gru_stride(o, g->gi_sn, "gi row", &gi_sn));
  SQ_TRY(gru_stride(o, g->gi_st, "gi time", &gi_st));
  if (g->out.buf) {
    SQ_TRY(gru_stride(o, g->out_sn, "out row", &out_sn));
    SQ_TRY(gru_stride(o, g->out_st, "out time", &out_st));
  }
  int sv_off, sv_sn_i = 0, sv_st_i = 0;
  SQ_TRY(gru_ref_off(o, saved, "saved gates", &sv_off));
  if (saved.buf) {
    SQ_TRY(gru_stride(o, sv_sn, "saved row", &sv_sn_i));
    SQ_TRY(gru_stride(o, sv_st, "saved time", &sv_st_i));
  }
  cl_mem sv = sq_ocl_mem_or_dummy(o, saved);
  int has_sv = saved.buf != NULL;
  cl_mem gi = sq_ocl_mem(g->gi), gh = sq_ocl_mem(g->gh), h = sq_ocl_mem(g->h);
  cl_mem b_ih = sq_ocl_mem_or_dummy(o, g->b_ih), b_hh = sq_ocl_mem_or_dummy(o, g->b_hh);
  cl_mem out = sq_ocl_mem_or_dummy(o, g->out), lens = sq_ocl_mem_or_dummy(o, g->lens);
  int has_b_ih = g->b_ih.buf != NULL, has_b_hh = g->b_hh.buf != NULL;
  int has_out = g->out.buf != NULL, has_lens = g->lens.buf != NULL;

  cl_uint i = 0;
  SQ_ARG(o, gru_gates, i++, N);
  SQ_ARG(o, gru_gates, i++, H);
  SQ_ARG(o, gru_gates, i++, gi);
  SQ_ARG(o, gru_gates, i++, gi_off);
  SQ_ARG(o, gru_gates, i++, gi_sn);
  SQ_ARG(o, gru_gates, i++, gi_st);
  SQ_ARG(o, gru_gates, i++, gh);
  SQ_ARG(o, gru_gates, i++, gh_off);
  SQ_ARG(o, gru_gates, i++, ld_gh);
  SQ_ARG(o, gru_gates, i++, b_ih);
  SQ_ARG(o, gru_gates, i++, b_ih_off);
  SQ_ARG(o, gru_gates, i++, has_b_ih);
  SQ_ARG(o, gru_gates, i++, b_hh);
  SQ_ARG(o, gru_gates, i++, b_hh_off);
  SQ_ARG(o, gru_gates, i++, has_b_hh);
  SQ_ARG(o, gru_gates, i++, h);
  SQ_ARG(o, gru_gates, i++, h_off);
  SQ_ARG(o, gru_gates, i++, out);
  SQ_ARG(o, gru_gates, i++, out_off);
  SQ_ARG(o, gru_gates, i++, out_sn);
  SQ_ARG(o, gru_gates, i++, out_st);
  SQ_ARG(o, gru_gates, i++, has_out);
  SQ_ARG(o, gru_gates, i++, lens);
  SQ_ARG(o, gru_gates, i++, lens_off);
  SQ_ARG(o, gru_gates, i++, has_lens);
  SQ_ARG(o, gru_gates, i++, step);
  SQ_ARG(o, gru_gates, i++, reverse);
  SQ_ARG(o, gru_gates, i++, sv);
  SQ_ARG(o, gru_gates, i++, sv_off);
  SQ_ARG(o, gru_gates, i++, sv_sn_i);
  SQ_ARG(o, gru_gates, i++, sv_st_i);
  SQ_ARG(o, gru_gates, i++, has_sv);

  const size_t local[2] = {wg, 1};
  const size_t units = ((size_t)H + (size_t)vec - 1) / (size_t)vec;
  const size_t global[2] = {sq_round_up(units, wg), (size_t)N};
  return sq_ocl_launch(o, gru_gates, 2, global, local, "gru_gates");
}

seqcl_status sq_ocl_gru_gates(sq_backend *be, const sq_gru_args *g) {
  return sq_ocl_gru_fwd(be, g, sq_none(), 0, 0);
}

/* ---- training: the forward pass that keeps its activations, and the backward ---- */

static seqcl_status check_strides(sq_ocl *o, const char *what, size_t a, size_t b, size_t c,
                                  size_t d) {
  if (a > (size_t)INT_MAX || b > (size_t)INT_MAX || c > (size_t)INT_MAX || d > (size_t)INT_MAX)
    return sq_fail(o->ctx, SEQCL_ERR_UNSUPPORTED, "opencl %s: a stride exceeds the kernels' int",
                   what);
  return SEQCL_OK;
}

seqcl_status sq_ocl_gru_gates_bwd(sq_backend *be, const sq_gru_bwd_args *g) {
  sq_ocl *o = sq_ocl_of(be);
  SQ_TRY(check_strides(o, "gru_gates_bwd", g->gi_sn, g->gi_st, g->dout_sn, g->dout_st));
  SQ_TRY(check_strides(o, "gru_gates_bwd", g->sv_sn, g->sv_st, 0, 0));
  kargs a;
  SQ_TRY(train_args(o, GRU_FILE, "gru_bwd", &a, NULL));
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
  arg_opt_strided(&a, g->dout, g->dout_sn, g->dout_st);
  arg_ref(&a, g->dgi);
  arg_ref(&a, g->dgh);
  arg_int(&a, g->ld_dgh);
  arg_opt(&a, g->lens);
  arg_int(&a, g->step);
  arg_int(&a, g->reverse);
  arg_opt_strided(&a, g->saved, g->sv_sn, g->sv_st);
  return launch3(&a, (size_t)g->H, (size_t)g->N, 1, COL_WG);
}
