/* Attention on the host: energies, masked softmax, context, and the fused
 * per-row pass; rows are split across the host pool (pool.c). Accumulation:
 *  - dot-type energies (general, dot, scaled_dot): 16 float partial sums per
 *    position (dot_energies in host_attention_hot.h; the GEMM tolerance
 *    applies);
 *  - additive energies: tanh runs 16 lanes at a time (host_math.h,
 *    within 1.5 ulp) and the products v_a * tanh(...) are summed in float,
 *    one partial sum per lane (additive_energies states the bound);
 *  - the softmax denominator is summed in double, so the weights are within a
 *    few ulp whatever S; the fused step does it in one pass over the keys
 *    (fused_row: an online softmax);
 *  - the context sums alpha_j * h_j in float, 16 lanes at a time, a
 *    multiply-add per key in position order (add_keys); the GEMM tolerance
 *    applies. */
#include <cblas.h>
#include <float.h>
#include <limits.h>
#include <math.h>
#include <string.h>

#include "backend/host/host.h"
#include "backend/host/host_math.h"
#include "backend/host/host_softmax.h"
#include "backend/host/pool.h"
#include "core/error.h"

/* The loops that carry vectors (the two energies and the context) compiled
 * per width (host_math.h, SQ_HOT_BY_WIDTH): AVX-512, AVX2, and the 16-byte
 * baseline, the same bits at the first two. */
SQ_IGNORE_PSABI /* static code only: no ABI is exposed */
enum { FUSED_BLOCK = 32 }; /* positions per block of the fused step */

#define SQ_HOT_TEMPLATE "backend/host/host_attention_hot.h"
#include "backend/host/host_widths.h"

/* Energies of row n for positions j0 .. j0+nb-1 (score_block), and for
 * j < len with positions len..S-1 set to 0 (score_row: finite, as the
 * contract allows, and never read by the softmax). Row n's query meets the
 * keys of source n / group. */
static void score_block(const sq_attn_args *a, int n, int j0, int nb, float *restrict e) {
  const int S = a->S, He = a->He;
  const size_t src = (size_t)(n / sq_attn_group(a));
  const float *qp = sq_host_f32(a->qp) + (size_t)n * (size_t)a->ld_qp;
  if (a->kind == SQ_SCORE_ADDITIVE) {
    const int A = a->A;
    const float *pk = sq_host_f32(a->pkeys) + (src * (size_t)S + (size_t)j0) * (size_t)A;
    const float *v = sq_host_f32(a->v);
    const float bv = a->bv.buf ? sq_host_f32(a->bv)[0] : 0.0f;
    SQ_HOT_PICK(additive_energies)(nb, A, pk, qp, v, bv, a->scale, e);
  } else {
    const float *keys = sq_host_f32(a->keys) + (src * (size_t)S + (size_t)j0) * (size_t)He;
    SQ_HOT_PICK(dot_energies)(nb, He, keys, qp, a->scale, e);
  }
}

static void score_row(const sq_attn_args *a, int n, int len, float *restrict e) {
  if (len > 0) score_block(a, n, 0, len, e);
  for (int j = len; j < a->S; j++) e[j] = 0.0f;
}

/* y = softmax of x over the valid positions (j < len and mask[j] != 0), exact
 * zeros elsewhere (no_softmax's rows: NaN at the valid positions). x and y may
 * be the same row. The maximum is subtracted first, so logits far beyond +-88
 * stay finite. */
static void softmax_row(int S, int len, const int32_t *restrict mask, const float *x, float *y) {
  float mx = -INFINITY;
  for (int j = 0; j < len; j++)
    if (!mask || mask[j]) mx = max_score(mx, x[j]);
  if (mx == -INFINITY) { /* no valid position: rejected by the fronts; stay finite */
    for (int j = 0; j < S; j++) y[j] = 0.0f;
    return;
  }
  if (no_softmax(mx, 1.0)) {
    nan_row(S, len, mask, y);
    return;
  }
  double sum = 0.0;
  for (int j = 0; j < len; j++) {
    float ej = (!mask || mask[j]) ? expf(x[j] - mx) : 0.0f;
    y[j] = ej;
    sum += ej;
  }
  if (no_softmax(mx, sum)) { /* valid scores all -inf */
    nan_row(S, len, mask, y);
    return;
  }
  const double inv = 1.0 / sum; /* sum >= 1: the maximum contributes exp(0) */
  for (int j = 0; j < len; j++) y[j] = (float)((double)y[j] * inv);
  for (int j = len; j < S; j++) y[j] = 0.0f;
}

/* c = sum_j alpha_j h_j. Positions with alpha exactly 0 (every invalid one) are
 * skipped, so whatever padding the keys hold never reaches the context. */
static void context_row(int S, int He, const float *restrict alpha, const float *restrict h,
                        float *restrict c) {
  int idx[FUSED_BLOCK];
  float w[FUSED_BLOCK];
  for (int k = 0; k < He; k++) c[k] = 0.0f;
  for (int j0 = 0; j0 < S; j0 += FUSED_BLOCK) {
    int cnt = 0;
    for (int j = j0; j < S && j < j0 + FUSED_BLOCK; j++)
      if (alpha[j] != 0.0f) {
        idx[cnt] = j;
        w[cnt++] = alpha[j];
      }
    if (cnt) SQ_HOT_PICK(add_keys)(He, He, cnt, idx, w, h, c);
  }
}

/* Work of one row of energies, in multiply-add equivalents (a tanh costs
 * about twenty), for sizing the split across the pool. */
static double energy_work(const sq_attn_args *a) {
  return a->kind == SQ_SCORE_ADDITIVE ? 20.0 * a->S * a->A : (double)a->S * a->He;
}

/* Row-parallel slots: each runs rows [lo, hi) (sq_pool_for); the fused one
 * splits itself so that each part has its own scratch row. Row n reads lens,
 * mask and keys of source n / group (group 1 but for attn_scores and
 * attn_fused), so that consecutive rows of one source find its keys in cache. */
typedef struct attn_job {
  const sq_attn_args *a;
  int N, S, He, ld_c, parts, group; /* parts: attn_fused only */
  const float *x, *keys;
  const int32_t *lens, *mask;
  float *y, *c, *scratch; /* scratch: S floats per part, or NULL */
} attn_job;

static void scores_rows(void *arg, int lo, int hi) {
  const attn_job *j = arg;
  for (int n = lo; n < hi; n++)
    score_row(j->a, n, j->lens[n / j->group], j->y + (size_t)n * (size_t)j->S);
}

static void softmax_rows(void *arg, int lo, int hi) {
  const attn_job *j = arg;
  for (int n = lo; n < hi; n++) {
    size_t row = (size_t)n * (size_t)j->S;
    softmax_row(j->S, j->lens[n], j->mask ? j->mask + row : NULL, j->x + row, j->y + row);
  }
}

static void context_rows(void *arg, int lo, int hi) {
  const attn_job *j = arg;
  for (int n = lo; n < hi; n++)
    context_row(j->S, j->He, j->x + (size_t)n * (size_t)j->S,
                j->keys + (size_t)n * (size_t)j->S * (size_t)j->He,
                j->c + (size_t)n * (size_t)j->ld_c);
}

/* The fused step of row n in one pass over its keys, for the columns
 * [k0, k1) of its context c: positions go in blocks of FUSED_BLOCK; a block's
 * energies are computed (unless `scored`: a split's first pass has put all of
 * them in e already), then its keys (still in cache) are added into c
 * weighted by exp(e_j - m), m the running maximum; when a block raises the
 * maximum, c and the double sum are scaled by exp(m_old - m_new) first (the
 * online softmax). At the end c is scaled by 1 / sum and, when wout is given
 * (it may be e itself), the weights exp(e_j - m) / sum go there, as
 * softmax_row computes them. Every column is computed the same way whichever
 * range a call covers, so a row split by columns gives the bits of the whole
 * row. Against softmax_row + context_row, each context element takes one
 * extra rounding per rescale and one for the final scaling, inside the fused
 * tolerance (the op list checks both paths). Invalid positions are skipped,
 * never multiplied by 0. */
static void fused_cols(const sq_attn_args *a, int n, int len, const int32_t *restrict mask,
                       const float *restrict keys, int scored, float *e, float *wout, int k0,
                       int k1, float *restrict c) {
  const int S = a->S, He = a->He;
  for (int k = k0; k < k1; k++) c[k] = 0.0f;
  float m = -INFINITY;
  double sum = 0.0;
  int failed = 0; /* a NaN or +inf score: no softmax */
  for (int j0 = 0; j0 < len && !failed; j0 += FUSED_BLOCK) {
    const int nb = len - j0 < FUSED_BLOCK ? len - j0 : FUSED_BLOCK;
    if (!scored) score_block(a, n, j0, nb, e + j0);
    float bm = -INFINITY;
    for (int j = j0; j < j0 + nb; j++)
      if (!mask || mask[j]) bm = max_score(bm, e[j]);
    if (bm == -INFINITY) continue;
    failed = no_softmax(bm, 1.0);
    if (failed) break;
    if (bm > m) {
      if (m != -INFINITY) {
        const float r = expf(m - bm);
        sum *= r;
        for (int k = k0; k < k1; k++) c[k] *= r;
      }
      m = bm;
    }
    int idx[FUSED_BLOCK], cnt = 0;
    float w[FUSED_BLOCK];
    for (int j = j0; j < j0 + nb; j++) {
      if ((mask && !mask[j]) || e[j] == -INFINITY) continue;
      const float p = expf(e[j] - m);
      sum += p;
      idx[cnt] = j;
      w[cnt++] = p;
    }
    SQ_HOT_PICK(add_keys)(k1 - k0, He, cnt, idx, w, keys + k0, c + k0);
  }
  if (failed || no_softmax(m, sum)) {
    for (int k = k0; k < k1; k++) c[k] = NAN;
    if (wout) nan_row(S, len, mask, wout);
    return;
  }
  if (m == -INFINITY) { /* no valid position: rejected by the fronts; stay finite */
    if (wout)
      for (int j = 0; j < S; j++) wout[j] = 0.0f;
    return;
  }
  const double inv = 1.0 / sum; /* sum >= 1: the maximum contributes exp(0) */
  for (int k = k0; k < k1; k++) c[k] = (float)((double)c[k] * inv);
  if (!wout) return;
  for (int j = 0; j < len; j++)
    wout[j] = (!mask || mask[j]) ? (float)((double)expf(e[j] - m) * inv) : 0.0f;
  for (int j = len; j < S; j++) wout[j] = 0.0f;
}

/* Row n's source, its mask (or NULL) and its keys. */
typedef struct fused_src {
  int len;
  const int32_t *mask;
  const float *keys;
} fused_src;

static fused_src source_of(const attn_job *j, int n) {
  const int src = n / j->group;
  const size_t src_off = (size_t)src * (size_t)j->S;
  return (fused_src){j->lens[src], j->mask ? j->mask + src_off : NULL,
                     j->keys + src_off * (size_t)j->He};
}

/* Rows [lo, hi) of the fused step, whole; the weights go to alpha (y) when
 * the caller wants them, else to this part's scratch row. */
static void fused_part(void *arg, int p) {
  const attn_job *j = arg;
  int lo, hi;
  sq_pool_range(j->N, j->parts, p, &lo, &hi);
  for (int n = lo; n < hi; n++) {
    const fused_src s = source_of(j, n);
    const size_t off = (size_t)n * (size_t)j->S;
    float *e = j->y ? j->y + off : j->scratch + (size_t)p * (size_t)j->S;
    fused_cols(j->a, n, s.len, s.mask, s.keys, 0, e, j->y ? e : NULL, 0, j->He,
               j->c + (size_t)n * (size_t)j->ld_c);
  }
}

/* When the rows do not share out evenly (one row at batch 1, five hypotheses
 * of beam search), the fused step runs in two passes instead: every row's
 * energies, the valid positions of all rows cut into one part per thread
 * (energies_part, into scratch rows of S); then each part takes a range of
 * context columns of every row (columns_part), each part doing the row's
 * softmax again (S exponentials beside S x A tanh). Each energy and each
 * context column is computed as the one-pass step computes it, so the two
 * give the same bits. */
enum { COLUMN_UNIT = 16 }; /* columns per unit of a part's range */

static void energies_part(void *arg, int p) {
  const attn_job *j = arg;
  size_t total = 0;
  for (int n = 0; n < j->N; n++) total += (size_t)source_of(j, n).len;
  size_t lo, hi; /* this part's flat positions */
  sq_pool_range_size(total, j->parts, p, &lo, &hi);
  /* row n's positions are the flat ones [first, first + len) */
  for (size_t n = 0, first = 0; n < (size_t)j->N && first < hi; n++) {
    const size_t len = (size_t)source_of(j, (int)n).len, end = first + len;
    if (lo < end) {
      const int j0 = (int)((lo > first ? lo : first) - first);
      const int j1 = (int)((hi < end ? hi : end) - first);
      score_block(j->a, (int)n, j0, j1 - j0, j->scratch + n * (size_t)j->S + (size_t)j0);
    }
    first = end;
  }
}

static void columns_part(void *arg, int p) {
  const attn_job *j = arg;
  const int units = (j->He + COLUMN_UNIT - 1) / COLUMN_UNIT;
  int lo, hi;
  sq_pool_range(units, j->parts, p, &lo, &hi);
  const int k0 = lo * COLUMN_UNIT, k1 = hi * COLUMN_UNIT < j->He ? hi * COLUMN_UNIT : j->He;
  for (int n = 0; n < j->N; n++) {
    const fused_src s = source_of(j, n);
    const size_t off = (size_t)n * (size_t)j->S;
    float *wout = j->y && p == 0 ? j->y + off : NULL;
    fused_cols(j->a, n, s.len, s.mask, s.keys, 1, j->scratch + off, wout, k0, k1,
               j->c + (size_t)n * (size_t)j->ld_c);
  }
}

static double fused_work(const sq_attn_args *a) {
  return a->N * (energy_work(a) + (double)a->S * a->He);
}

/* The fused step splits each row (two passes) rather than whole rows when
 * whole rows would leave threads waiting on an uneven share (fewer rows than
 * parts, or a remainder), the rows are few enough for that share to matter,
 * and the work pays for as many parts as if any position could go to any
 * part; then into that many parts, else 0. */
int sq_host_attn_split_parts(const sq_backend *be, const sq_attn_args *a) {
  const long long positions = (long long)a->N * a->S;
  const int wide = sq_pool_parts(be, positions > INT_MAX ? INT_MAX : (int)positions, fused_work(a));
  const int uneven = a->N % wide != 0 && a->N < 4 * wide;
  return wide > 1 && uneven && a->He >= wide * COLUMN_UNIT ? wide : 0;
}

seqcl_status sq_host_attn_scores(sq_backend *be, const sq_attn_args *a, sq_ref scores) {
  (void)be;
  attn_job j = {.a = a, .N = a->N, .S = a->S, .group = sq_attn_group(a),
                .lens = sq_host_i32(a->lens), .y = sq_host_f32(scores)};
  sq_pool_for(be, a->N, a->N * energy_work(a), scores_rows, &j);
  return SEQCL_OK;
}

seqcl_status sq_host_masked_softmax(sq_backend *be, int N, int S, sq_ref x, sq_ref lens,
                                    sq_ref mask, sq_ref y) {
  (void)be;
  attn_job j = {.N = N, .S = S, .lens = sq_host_i32(lens), .mask = sq_host_i32_opt(mask),
                .x = sq_host_f32(x), .y = sq_host_f32(y)};
  sq_pool_for(be, N, 10.0 * N * S, softmax_rows, &j);
  return SEQCL_OK;
}

seqcl_status sq_host_context(sq_backend *be, int N, int S, int He, sq_ref alpha, sq_ref keys,
                             sq_ref c, int ld_c) {
  (void)be;
  attn_job j = {.N = N, .S = S, .He = He, .ld_c = ld_c, .x = sq_host_f32(alpha),
                .keys = sq_host_f32(keys), .c = sq_host_f32(c)};
  sq_pool_for(be, N, (double)N * S * He, context_rows, &j);
  return SEQCL_OK;
}

seqcl_status sq_host_attn_fused(sq_backend *be, const sq_attn_args *a, sq_ref c, int ld_c,
                                sq_ref alpha) {
  attn_job j = {.a = a, .N = a->N, .S = a->S, .He = a->He, .ld_c = ld_c,
                .group = sq_attn_group(a), .lens = sq_host_i32(a->lens),
                .mask = sq_host_i32_opt(a->mask),
                .keys = sq_host_f32(a->keys), .c = sq_host_f32(c),
                .y = sq_host_f32_opt(alpha)};
  const int split = sq_host_attn_split_parts(be, a);
  if (split) {
    j.parts = split;
    SQ_TRY(sq_host_scratch(be, (size_t)a->N * (size_t)a->S, &j.scratch));
    sq_pool_run(j.parts, energies_part, &j);
    sq_pool_run(j.parts, columns_part, &j);
    return SEQCL_OK;
  }
  j.parts = sq_pool_parts(be, a->N, fused_work(a));
  if (!alpha.buf) SQ_TRY(sq_host_scratch(be, (size_t)j.parts * (size_t)a->S, &j.scratch));
  sq_pool_run(j.parts, fused_part, &j);
  return SEQCL_OK;
}
