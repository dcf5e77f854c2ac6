/* Attention on the host: energies, masked softmax, context, and the fused
 * per-row pass; rows are split across the host pool (pool.c). Accumulation:
 *  - dot-type energies (general, dot, scaled_dot): 16 float partial sums per
 *    position (dot_energies; the GEMM tolerance applies);
 *  - additive energies: tanh runs 16 lanes at a time (host_math.h,
 *    within 1.5 ulp) and the products v_a * tanh(...) are summed in float,
 *    one partial sum per lane (additive_energies states the bound);
 *  - the softmax denominator is summed in double, so the weights are within a
 *    few ulp whatever S; the fused step does it in one pass over the keys
 *    (fused_row: an online softmax);
 *  - the context sums alpha_j * h_j in float, 16 lanes at a time (add_keys); the GEMM
 *    tolerance applies. */
#include <cblas.h>
#include <float.h>
#include <math.h>
#include <string.h>

#include "backend/host/host.h"
#include "backend/host/host_math.h"
#include "backend/host/host_softmax.h"
#include "backend/host/pool.h"
#include "core/error.h"

/* The additive energies run EW = 16 lanes wide with one float partial sum per
 * lane, compiled once per instruction set (SQ_HOT_CLONES: x86-64-v4 and v3,
 * which fuse multiply-adds and compute the same bits, and the baseline). */
SQ_IGNORE_PSABI /* static code only: no ABI is exposed */
#define EW SQ_VW16
typedef sq_vf16 ew_vf;
#define ew_tanh sq_v16_tanh

/* e[j] = scale * (sum_a v_a tanh(pk[j, a] + q_a) + bv) for j < len, two
 * positions per pass so q and v are loaded once for both (an odd last position
 * is computed twice and stored once). Each lane sums ceil(A / EW) products
 * v_a * tanh(...) in float, then the EW lanes are added in float: at most
 * ceil(A / EW) + EW + 1 roundings of terms bounded by |v_a| (|tanh| <= 1), well
 * inside the (A + 2)-term dot product bound the energy tolerance allows.
 * Missing lanes of a short last vector load 0, and v = 0 adds exactly 0. */
SQ_HOT_CLONES
static void additive_energies(int len, int A, const float *restrict pk, const float *restrict q,
                              const float *restrict v, float bv, float scale, float *restrict e) {
  for (int j = 0; j < len; j += 2) {
    const float *p0 = pk + (size_t)j * (size_t)A;
    const float *p1 = j + 1 < len ? p0 + A : p0;
    ew_vf s0 = {0}, s1 = {0};
    int k = 0;
    for (; k + EW <= A; k += EW) {
      ew_vf qk, vk, a0, a1;
      memcpy(&qk, q + k, sizeof qk);
      memcpy(&vk, v + k, sizeof vk);
      memcpy(&a0, p0 + k, sizeof a0);
      memcpy(&a1, p1 + k, sizeof a1);
      s0 += vk * ew_tanh(a0 + qk);
      s1 += vk * ew_tanh(a1 + qk);
    }
    if (k < A) {
      const size_t tail = (size_t)(A - k) * sizeof(float);
      ew_vf qk = {0}, vk = {0}, a0 = {0}, a1 = {0};
      memcpy(&qk, q + k, tail);
      memcpy(&vk, v + k, tail);
      memcpy(&a0, p0 + k, tail);
      memcpy(&a1, p1 + k, tail);
      s0 += vk * ew_tanh(a0 + qk);
      s1 += vk * ew_tanh(a1 + qk);
    }
    float h0 = 0.0f, h1 = 0.0f;
    for (int l = 0; l < EW; l++) {
      h0 += s0[l];
      h1 += s1[l];
    }
    e[j] = scale * (h0 + bv);
    if (j + 1 < len) e[j + 1] = scale * (h1 + bv);
  }
}

/* e[j] = scale * (h_j . q) for j < len: 16 float partial sums per position
 * (as the additive energies), then the lanes in order: ceil(He / 16) + 16
 * roundings, inside the He-term dot product bound. Replaces cblas_sgemv on
 * these short blocks, where its call and blocking cost more than the dot. */
SQ_HOT_CLONES
static void dot_energies(int len, int He, const float *restrict h, const float *restrict q,
                         float scale, float *restrict e) {
  for (int j = 0; j < len; j++) {
    const float *hj = h + (size_t)j * (size_t)He;
    ew_vf acc = {0};
    int k = 0;
    for (; k + EW <= He; k += EW) {
      ew_vf a, b;
      memcpy(&a, hj + k, sizeof a);
      memcpy(&b, q + k, sizeof b);
      acc += a * b;
    }
    if (k < He) {
      const size_t tail = (size_t)(He - k) * sizeof(float);
      ew_vf a = {0}, b = {0};
      memcpy(&a, hj + k, tail);
      memcpy(&b, q + k, tail);
      acc += a * b;
    }
    float sum = 0.0f;
    for (int l = 0; l < EW; l++) sum += acc[l];
    e[j] = scale * sum;
  }
}

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
    additive_energies(nb, A, pk, qp, v, bv, a->scale, e);
  } else {
    const float *keys = sq_host_f32(a->keys) + (src * (size_t)S + (size_t)j0) * (size_t)He;
    dot_energies(nb, He, keys, qp, a->scale, e);
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

/* Keys added into a context per call of add_keys: a fused block's positions. */
enum { FUSED_BLOCK = 32, CTX_VECS = 8 };

/* c += sum_i w[i] h_{idx[i]} over He for i < cnt (cnt <= FUSED_BLOCK), each
 * element summed in i order, so the bits are those of adding the keys one by
 * one. CTX_VECS 16-lane vectors of c stay in registers across the block: c is
 * loaded and stored once per block instead of once per key, and the loop runs
 * at the multiply-add rate rather than the store rate. Compiled per
 * instruction set like the energies (SQ_HOT_CLONES). */
SQ_HOT_CLONES
static void add_keys(int He, int cnt, const int *restrict idx, const float *restrict w,
                     const float *restrict keys, float *restrict c) {
  int k = 0;
  for (; k + CTX_VECS * EW <= He; k += CTX_VECS * EW) {
    ew_vf acc[CTX_VECS];
    memcpy(acc, c + k, sizeof acc);
    for (int i = 0; i < cnt; i++) {
      const float *h = keys + (size_t)idx[i] * (size_t)He + k;
#pragma GCC unroll 8
      for (int u = 0; u < CTX_VECS; u++) {
        ew_vf hv;
        memcpy(&hv, h + u * EW, sizeof hv);
        acc[u] += w[i] * hv;
      }
    }
    memcpy(c + k, acc, sizeof acc);
  }
  for (; k < He; k += EW) { /* the last vectors, the very last one partial */
    const size_t bytes = (size_t)(He - k < EW ? He - k : EW) * sizeof(float);
    ew_vf acc = {0};
    memcpy(&acc, c + k, bytes);
    for (int i = 0; i < cnt; i++) {
      ew_vf hv = {0};
      memcpy(&hv, keys + (size_t)idx[i] * (size_t)He + k, bytes);
      acc += w[i] * hv;
    }
    memcpy(c + k, &acc, bytes);
  }
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
    add_keys(He, cnt, idx, w, h, c);
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

/* The fused step of row n in one pass over its keys: positions go in blocks
 * of FUSED_BLOCK; a block's energies are computed, then its keys (still in
 * cache) are added into c weighted by exp(e_j - m), m the running maximum;
 * when a block raises the maximum, c and the double sum are scaled by
 * exp(m_old - m_new) first (the online softmax). At the end c is scaled by
 * 1 / sum and, when the caller wants them (weights), the energies in e become
 * the weights exp(e_j - m) / sum, as softmax_row computes them; otherwise e is
 * scratch and left as it is. Against softmax_row + context_row, each context
 * element takes one extra rounding per rescale and one for the final scaling,
 * inside the fused tolerance (the op list checks both paths). Invalid
 * positions are skipped, never multiplied by 0. */

static void fused_row(const sq_attn_args *a, int n, int len, const int32_t *restrict mask,
                      const float *restrict keys, int weights, float *restrict e,
                      float *restrict c) {
  const int S = a->S, He = a->He;
  for (int k = 0; k < He; k++) c[k] = 0.0f;
  float m = -INFINITY;
  double sum = 0.0;
  int failed = 0; /* a NaN or +inf score: no softmax */
  for (int j0 = 0; j0 < len && !failed; j0 += FUSED_BLOCK) {
    const int nb = len - j0 < FUSED_BLOCK ? len - j0 : FUSED_BLOCK;
    score_block(a, n, j0, nb, e + j0);
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
        for (int k = 0; k < He; k++) c[k] *= r;
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
    add_keys(He, cnt, idx, w, keys, c);
  }
  if (failed || no_softmax(m, sum)) {
    for (int k = 0; k < He; k++) c[k] = NAN;
    if (weights) nan_row(S, len, mask, e);
    return;
  }
  if (m == -INFINITY) { /* no valid position: rejected by the fronts; stay finite */
    if (weights)
      for (int j = 0; j < S; j++) e[j] = 0.0f;
    return;
  }
  const double inv = 1.0 / sum; /* sum >= 1: the maximum contributes exp(0) */
  for (int k = 0; k < He; k++) c[k] = (float)((double)c[k] * inv);
  if (!weights) return;
  for (int j = 0; j < len; j++)
    e[j] = (!mask || mask[j]) ? (float)((double)expf(e[j] - m) * inv) : 0.0f;
  for (int j = len; j < S; j++) e[j] = 0.0f;
}

/* Rows [lo, hi) of the fused step; the weights go to alpha (y) when the
 * caller wants them, else to this part's scratch row. */
static void fused_part(void *arg, int p) {
  const attn_job *j = arg;
  int lo, hi;
  sq_pool_range(j->N, j->parts, p, &lo, &hi);
  for (int n = lo; n < hi; n++) {
    const int src = n / j->group;
    const size_t off = (size_t)n * (size_t)j->S, src_off = (size_t)src * (size_t)j->S;
    float *e = j->y ? j->y + off : j->scratch + (size_t)p * (size_t)j->S;
    fused_row(j->a, n, j->lens[src], j->mask ? j->mask + src_off : NULL,
              j->keys + src_off * (size_t)j->He, j->y != NULL, e,
              j->c + (size_t)n * (size_t)j->ld_c);
  }
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
  j.parts = sq_pool_parts(be, a->N, a->N * (energy_work(a) + (double)a->S * a->He));
  if (!alpha.buf) SQ_TRY(sq_host_scratch(be, (size_t)j.parts * (size_t)a->S, &j.scratch));
  sq_pool_run(j.parts, fused_part, &j);
  return SEQCL_OK;
}
