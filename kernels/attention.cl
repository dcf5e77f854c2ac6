/* Attention kernels: raw scores, masked softmax, context, and the fused step
 * (scores + mask + softmax + context in one launch per decoder step).
 *
 * OpenCL C 1.2. Every buffer argument is followed by an int offset counted in
 * elements, because 1.2 has no sub-buffer-free way to pass a pointer offset.
 * Absent optional buffers arrive as a dummy buffer plus a has_* flag.
 *
 * The row kernel (masked_softmax) runs one work-group of WG work-items per
 * batch row: each work-item sums its strided share of the row with
 * compensation, then a local-memory tree combines the WG partials, so a row
 * sum of S terms carries about 2 + log2(WG) roundings instead of S.
 *
 * The fused step has two forms, each checked by the op list on every device:
 * attn_fused_chunk + attn_fused_combine (GPUs: a row split over work-groups)
 * and attn_fused_row (CPU-type devices: a work-item per row). Both share the
 * helpers below with the unfused kernels, and agree with them within the
 * fused tolerance rather than to the bit: their scores and sums run in other
 * orders. */

#ifndef SQ_TRAIN

#ifndef WG
#define WG 64 /* work-group size of the row kernels; a power of two */
#endif
/* The row kernels run exactly N work-groups of WG work-items, so they need no
 * "n >= N" guard, and must not have one: under PoCL 3.1 a return ahead of a
 * barrier, even one taken by the whole work-group, corrupts memory. */

/* Score kinds, as sq_score in backend.h. */
#define SCORE_ADDITIVE 0
#define SCORE_GENERAL 1
#define SCORE_DOT 2
#define SCORE_SCALED_DOT 3

/* Sum of a[i] * b[i]: four partial sums over float4 loads (vload4 needs only
 * float alignment) and one for the tail, added at the end. At most
 * len / 4 + 5 roundings per term, inside the dot product bound. The lanes are
 * summed with dot(acc, 1) and the tail kept apart because Oclgrind 21.10's
 * uninitialised-value checker crashes on reading or updating acc.x etc. */
static float dot_row(__global const float *a, __global const float *b, int len) {
  float4 acc = (float4)(0.0f);
  float tail = 0.0f;
  int i = 0;
  for (; i + 4 <= len; i += 4) acc += vload4(0, a + i) * vload4(0, b + i);
  for (; i < len; ++i) tail += a[i] * b[i];
  return dot(acc, (float4)(1.0f)) + tail;
}

/* The raw energy of key j of source src for the query of row n (no mask).
 * Dot-type scores read the key itself; the additive score reads the
 * precomputed key projection pk. The additive terms run four at a time (a
 * float4 tanh, per-lane float partial sums, the same bound as dot_row with
 * |tanh| <= 1). */
static float score_at(int kind, int src, int n, int j, int S, int He, int A,
                      __global const float *qp, int ld_qp,
                      __global const float *keys, __global const float *pkeys,
                      __global const float *v, __global const float *bv, int has_bv,
                      float scale) {
  float e;
  if (kind == SCORE_ADDITIVE) {
    __global const float *pk = pkeys + ((size_t)src * S + j) * A;
    __global const float *q = qp + (size_t)n * ld_qp;
    float4 acc = (float4)(0.0f);
    float tail = 0.0f;
    int a = 0;
    for (; a + 4 <= A; a += 4)
      acc += vload4(0, v + a) * tanh(vload4(0, pk + a) + vload4(0, q + a));
    for (; a < A; ++a) tail += v[a] * tanh(pk[a] + q[a]);
    e = dot(acc, (float4)(1.0f)) + tail;
    if (has_bv) e += bv[0];
  } else {
    e = dot_row(keys + ((size_t)src * S + j) * He, qp + (size_t)n * ld_qp, He);
  }
  return e * scale;
}

/* Position j of source n takes part in the softmax iff it is inside the
 * sequence and, when a mask is given, not masked out. */
static int is_valid(int n, int j, int S, __global const int *lens,
                    __global const int *mask, int has_mask) {
  if (j >= lens[n]) return 0;
  return !has_mask || mask[(size_t)n * S + j] != 0;
}

/* The larger of two row maxima, NaN if either is: fmax(NaN, x) is x, which
 * let a NaN score drop out of its row unseen (a zero context instead of an
 * error, or whatever exp made of NaN). */
static float max_nan(float a, float b) { return isnan(a) || isnan(b) ? NAN : fmax(a, b); }

/* The row maximum m after valid score x. A valid -inf counts as -FLT_MAX, so
 * that m stays -INFINITY only for a row without valid positions, and a row
 * whose valid scores are all -inf is seen (its sum of exp(x - m) is then 0). */
static float max_score(float m, float x) { return max_nan(m, isnan(x) ? x : fmax(x, -FLT_MAX)); }

/* Whether a row with maximum m (max_score's) and sum of exp(x - m) has no
 * softmax: a NaN or +inf score, or valid scores all -inf. Its weights (at
 * valid positions) and its context are then NaN, as PyTorch's softmax gives,
 * written as such rather than left to exp, so that every device reports the
 * same non-finite result. A row without valid positions (m = -INFINITY) is
 * rejected by the fronts; it gives zeros. */
static int no_softmax(float m, float sum) {
  return isnan(m) || m == INFINITY || (m != -INFINITY && !(sum > 0.0f));
}

/* Work-group reductions over one value per work-item (wg_max NaN-aware). The
 * trailing barrier lets the caller reuse red right away. */
static float wg_max(__local float *red, float x) {
  const int lid = get_local_id(0);
  red[lid] = x;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int s = WG / 2; s > 0; s >>= 1) {
    if (lid < s) red[lid] = max_nan(red[lid], red[lid + s]);
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  const float r = red[0];
  barrier(CLK_LOCAL_MEM_FENCE);
  return r;
}

static float wg_sum(__local float *red, float x) {
  const int lid = get_local_id(0);
  red[lid] = x;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int s = WG / 2; s > 0; s >>= 1) {
    if (lid < s) red[lid] += red[lid + s];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  const float r = red[0];
  barrier(CLK_LOCAL_MEM_FENCE);
  return r;
}

/* Compensated (Kahan) accumulation of a work-item's strided partial sum: its
 * error stays a few ulp however many terms S / WG it takes, so the whole row
 * sum keeps the tree's ~log2(WG) rounding depth for any S. */
static void kahan_add(float *sum, float *comp, float x) {
  const float y = x - *comp;
  const float t = *sum + y;
  *comp = (t - *sum) - y;
  *sum = t;
}

/* exp(x - m) for a valid position. m is the row maximum, so the argument is
 * <= 0 and exp never overflows, whatever the magnitude of the logits. */
static float shifted_exp(float x, float m) { return exp(x - m); }

/* The program is built in two forms: the default one holds every kernel
 * below but attn_fused_row; -DATTN_ROW_FORM (CPU-type devices) holds
 * attn_fused_row alone. PoCL compiles a program's whole module again for each
 * kernel it creates, so the 16-lane row code made every other attention kernel
 * slower to build (0.5 s each on first use) while it shared their program. */
#ifndef ATTN_ROW_FORM
/* e[n, j]; global (>= S, N). Row n attends to source n / group (backend.h).
 * Positions j >= that source's length get 0: the contract lets them hold
 * anything finite, and the keys there need not be read at all. */
__kernel void attn_scores(int kind, int N, int S, int He, int A, int group,
                          __global const float *qp, int qp_off, int ld_qp,
                          __global const float *keys, int keys_off,
                          __global const float *pkeys, int pkeys_off,
                          __global const float *v, int v_off,
                          __global const float *bv, int bv_off, int has_bv,
                          float scale,
                          __global const int *lens, int lens_off,
                          __global float *e, int e_off) {
  const int j = get_global_id(0);
  const int n = get_global_id(1);
  if (j >= S || n >= N) return;
  lens += lens_off;
  const int src = n / group;
  float r = 0.0f;
  if (j < lens[src])
    r = score_at(kind, src, n, j, S, He, A, qp + qp_off, ld_qp, keys + keys_off,
                 pkeys + pkeys_off, v + v_off, bv + bv_off, has_bv, scale);
  e[e_off + (size_t)n * S + j] = r;
}

/* y[n, :] = softmax of x[n, :] over the valid positions, exactly 0 elsewhere.
 * One work-group of WG work-items per row; work-item lid owns j = lid + k*WG.
 * A row without any valid position (possible only through the mask) gives
 * all zeros rather than NaN. */
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void masked_softmax(int N, int S,
                    __global const float *x, int x_off,
                    __global const int *lens, int lens_off,
                    __global const int *mask, int mask_off, int has_mask,
                    __global float *y, int y_off) {
  __local float red[WG];
  const int n = get_group_id(0); /* < N: the grid has exactly N groups */
  const int lid = get_local_id(0);
  (void)N;
  lens += lens_off;
  mask += mask_off;
  x += x_off + (size_t)n * S;
  y += y_off + (size_t)n * S;

  float m = -INFINITY;
  for (int j = lid; j < S; j += WG)
    if (is_valid(n, j, S, lens, mask, has_mask)) m = max_score(m, x[j]);
  m = wg_max(red, m);
  const int finite_m = !isnan(m) && m != INFINITY && m != -INFINITY;

  float sum = 0.0f, comp = 0.0f;
  for (int j = lid; j < S; j += WG) {
    float p = 0.0f;
    if (finite_m && is_valid(n, j, S, lens, mask, has_mask)) p = shifted_exp(x[j], m);
    y[j] = p;
    kahan_add(&sum, &comp, p);
  }
  sum = wg_sum(red, sum);

  /* Each work-item rescales only the positions it wrote itself. */
  if (no_softmax(m, sum))
    for (int j = lid; j < S; j += WG) y[j] = is_valid(n, j, S, lens, mask, has_mask) ? NAN : 0.0f;
  else if (sum > 0.0f)
    for (int j = lid; j < S; j += WG) y[j] = y[j] / sum;
}

/* c[n, d] = sum_j alpha[n, j] keys[n, j, d]; global (>= He, N). Neighbouring
 * work-items read neighbouring d, so the key reads coalesce. Positions with
 * weight exactly 0 (every invalid one) are skipped, so whatever the padding
 * of the keys holds never reaches the context; the test is uniform across
 * the work-items of a row. */
__kernel void attn_context(int N, int S, int He,
                           __global const float *alpha, int alpha_off,
                           __global const float *keys, int keys_off,
                           __global float *c, int c_off, int ld_c) {
  const int d = get_global_id(0);
  const int n = get_global_id(1);
  if (d >= He || n >= N) return;
  alpha += alpha_off + (size_t)n * S;
  keys += keys_off + (size_t)n * S * He + d;
  float acc = 0.0f;
  for (int j = 0; j < S; ++j) {
    const float w = alpha[j];
    if (w != 0.0f) acc += w * keys[(size_t)j * He];
  }
  c[c_off + (size_t)n * ld_c + d] = acc;
}

#endif /* !ATTN_ROW_FORM */

/* The arguments both fused forms take first (attn_fused_chunk adds its
 * partial results): attn_scores's, then the mask, the context output and the
 * optional weights output. Row n reads source n / group's keys, pkeys, length
 * and mask. */
#define FUSED_ARGS                                                              \
  int kind, int N, int S, int He, int A, int group, __global const float *qp,   \
      int qp_off, int ld_qp, __global const float *keys, int keys_off,          \
      __global const float *pkeys, int pkeys_off, __global const float *v,      \
      int v_off, __global const float *bv, int bv_off, int has_bv, float scale, \
      __global const int *lens, int lens_off, __global const int *mask,         \
      int mask_off, int has_mask, __global float *c, int c_off, int ld_c,       \
      __global float *alpha, int alpha_off, int has_alpha

/* How both fused forms start: FUSED_ARGS' inputs moved to their offsets (the
 * outputs are indexed with theirs where they are written). */
#define FUSED_INPUTS_AT_OFFSETS() \
  do {                            \
    lens += lens_off;             \
    mask += mask_off;             \
    keys += keys_off;             \
    pkeys += pkeys_off;           \
    v += v_off;                   \
    bv += bv_off;                 \
  } while (0)

#ifndef ATTN_ROW_FORM
/* ---- The fused step for GPUs: the source axis split over work-groups. ----
 *
 * A work-group per row would leave all but N compute units idle at batch 1,
 * so the row is cut into chunks of CHUNK positions, one work-group each:
 * grid (ceil(S / CHUNK) WG, N). A chunk's group computes its scores with
 * SL lanes along H_e (dot scores: lane l reads d = l, l + SL, ..., so a
 * position's key row is read in SL-wide coalesced runs) or along A (the
 * additive score's projected key row), WG / SL positions at once; the SL
 * partial sums of a position are then added in lane order by one work-item.
 * Then its maximum m_c, p_j = exp(e_j - m_c), s_c = sum p_j (a tree) and the
 * partial context ctx_c = sum_j p_j k_j with lanes along H_e (coalesced),
 * positions in order, skipping p_j = 0 (every invalid position, whose keys
 * are never read). attn_fused_combine then merges the chunks of a row in
 * chunk order: m = max m_c, r_c = exp(m_c - m), sum = sum_c r_c s_c,
 * c = (sum_c r_c ctx_c) / sum, alpha_j = exp(e_j - m) / sum from the raw
 * scores the chunks left in alpha. A row of one chunk (S <= CHUNK) finishes
 * in the chunk kernel: weights p_j / s_c, context sum_j (p_j / s_c) k_j,
 * as masked_softmax and attn_context compute them.
 *
 * Rounding against the one-pass forms: each weight gets the rounding of
 * exp(m_c - m) and of a sum of chunk sums (ceil(S / CHUNK) terms) instead of
 * one sum of S terms; each context term one more product. Inside the fused
 * tolerance, which bounds the dot products in any order; the op list checks
 * S = 1, CHUNK - 1, CHUNK, CHUNK + 1 and 2053 (33 chunks). */
#ifndef CHUNK
#define CHUNK 64 /* source positions per work-group */
#endif
#define SL (WG < 16 ? WG : 16) /* lanes per position for the scores */
#define SPOS (WG / SL)          /* positions scored at once */

__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void attn_fused_chunk(FUSED_ARGS, __global float *part, int part_off, int direct) {
  __local float lane_sums[CHUNK * SL];
  __local float w[CHUNK];
  __local float red[WG];
  const int ch = get_group_id(0), nch = get_num_groups(0);
  const int n = get_group_id(1); /* < N: the grid has exactly N rows of groups */
  const int src = n / group;
  const int lid = get_local_id(0);
  /* from the unsigned id: the signed lid % SL and lid / SL compile to an
   * instruction (freeze) that Oclgrind 21.10 cannot simulate */
  const int lane = (int)(get_local_id(0) % SL), slot = (int)(get_local_id(0) / SL);
  (void)N;
  FUSED_INPUTS_AT_OFFSETS();
  __global const float *q = qp + qp_off + (size_t)n * ld_qp;
  const int j0 = ch * CHUNK;
  /* positions of this chunk inside the row (0 for a chunk past its end) */
  const int nb = clamp(min(lens[src], S) - j0, 0, CHUNK);

  for (int t = slot; t < CHUNK; t += SPOS) {
    const int j = j0 + t;
    float x = 0.0f;
    if (t < nb && is_valid(src, j, S, lens, mask, has_mask)) {
      if (kind == SCORE_ADDITIVE) {
        __global const float *pk = pkeys + ((size_t)src * S + j) * A;
        for (int a = lane; a < A; a += SL) x += v[a] * tanh(pk[a] + q[a]);
      } else {
        __global const float *kr = keys + ((size_t)src * S + j) * He;
        for (int d = lane; d < He; d += SL) x += kr[d] * q[d];
      }
    }
    lane_sums[t * SL + lane] = x;
  }
  barrier(CLK_LOCAL_MEM_FENCE);

  /* Work-item t (t < CHUNK, strided when WG < CHUNK) owns position j0 + t. */
  float m = -INFINITY;
  for (int t = lid; t < CHUNK; t += WG) {
    const int j = j0 + t;
    float e = -INFINITY, raw = -INFINITY;
    if (t < nb && is_valid(src, j, S, lens, mask, has_mask)) {
      e = 0.0f;
      for (int l = 0; l < SL; ++l) e += lane_sums[t * SL + l];
      if (kind == SCORE_ADDITIVE && has_bv) e += bv[0];
      e *= scale;
      m = max_score(m, e);
      /* a valid -inf as -FLT_MAX, so that attn_fused_combine tells it from an
       * invalid position when the row has no softmax; otherwise its weight is
       * exp(-FLT_MAX - m) = 0 all the same, unless the row's largest score is
       * -FLT_MAX itself */
      raw = isnan(e) ? e : fmax(e, -FLT_MAX);
    }
    w[t] = e;
    /* raw scores for attn_fused_combine; -inf past the row (and past S) */
    if (has_alpha && !direct && j < S) alpha[alpha_off + (size_t)n * S + j] = raw;
  }
  m = wg_max(red, m);
  const int finite_m = !isnan(m) && m != INFINITY;
  float sum = 0.0f;
  for (int t = lid; t < CHUNK; t += WG) {
    const float e = w[t];
    const float p = e == -INFINITY || !finite_m ? 0.0f : shifted_exp(e, m);
    w[t] = p;
    sum += p;
  }
  sum = wg_sum(red, sum);
  const int failed = direct && no_softmax(m, sum);
  if (direct) {
    for (int t = lid; t < CHUNK; t += WG) {
      float p = sum > 0.0f ? w[t] / sum : 0.0f;
      if (failed) p = t < nb && is_valid(src, j0 + t, S, lens, mask, has_mask) ? NAN : 0.0f;
      w[t] = p;
      if (has_alpha && j0 + t < S) alpha[alpha_off + (size_t)n * S + j0 + t] = p;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
  }

  /* The context (or its part) of the chunk, lanes along H_e. */
  __global const float *kr = keys + ((size_t)src * S + j0) * He;
  __global float *out = direct ? c + c_off + (size_t)n * ld_c
                               : part + part_off + ((size_t)n * nch + ch) * (He + 2) + 2;
  for (int d = lid; d < He; d += WG) {
    float acc = 0.0f;
    for (int t = 0; t < nb; ++t) {
      const float p = w[t];
      if (p != 0.0f) acc += p * kr[(size_t)t * He + d];
    }
    out[d] = failed ? NAN : acc;
  }
  if (!direct && lid == 0) {
    out[-2] = m;
    out[-1] = sum;
  }
}

/* Merges the chunks of row n = get_global_id(1) (see above); global (WG, N).
 * Every work-item computes m and sum itself, in the same order, so no barrier
 * is needed: part holds, per chunk, m_c, s_c and the H_e partial context. */
__kernel void attn_fused_combine(int N, int S, int He, int nch,
                                 __global const float *part, int part_off,
                                 __global float *c, int c_off, int ld_c,
                                 __global float *alpha, int alpha_off, int has_alpha) {
  const int n = get_global_id(1);
  const int lid = get_local_id(0), wg = get_local_size(0);
  if (n >= N) return;
  __global const float *pr = part + part_off + (size_t)n * nch * (He + 2);
  float m = -INFINITY;
  for (int k = 0; k < nch; ++k) m = max_nan(m, pr[(size_t)k * (He + 2)]);
  const int finite_m = !isnan(m) && m != INFINITY;
  float sum = 0.0f;
  for (int k = 0; k < nch; ++k) {
    const float mk = pr[(size_t)k * (He + 2)];
    if (mk != -INFINITY && finite_m) sum += exp(mk - m) * pr[(size_t)k * (He + 2) + 1];
  }
  const int failed = no_softmax(m, sum);
  __global float *cr = c + c_off + (size_t)n * ld_c;
  for (int d = lid; d < He; d += wg) {
    float acc = 0.0f;
    for (int k = 0; k < nch && !failed; ++k) {
      const float mk = pr[(size_t)k * (He + 2)];
      if (mk != -INFINITY) acc += exp(mk - m) * pr[(size_t)k * (He + 2) + 2 + d];
    }
    cr[d] = failed ? NAN : sum > 0.0f ? acc / sum : 0.0f;
  }
  if (has_alpha) {
    /* the chunks left a valid position's raw score above -inf */
    __global float *ar = alpha + alpha_off + (size_t)n * S;
    for (int j = lid; j < S; j += wg) {
      const float x = ar[j];
      ar[j] = failed ? (x != -INFINITY ? NAN : 0.0f)
                     : (sum > 0.0f && x != -INFINITY) ? shifted_exp(x, m) / sum : 0.0f;
    }
  }
}
#endif /* !ATTN_ROW_FORM */

#ifdef ATTN_ROW_FORM
/* ---- The fused step for CPU-type devices: one work-item per row. ----
 *
 * attn_fused_chunk above spreads a row over work-groups, which suits a GPU; a CPU
 * device (PoCL) runs a work-group's items one after another on one core and
 * vectorises poorly across them, so that kernel reached 8-13% of PoCL's copy
 * bandwidth. Here each row is plain sequential code with explicit 16-wide
 * vectors along He and A, and it reads every key once from memory: source
 * positions go in blocks of ROW_JB; a block's scores are computed, then its
 * keys (still in cache) are added into the context, weighted by
 * exp(e_j - m) with m the running maximum; when a block raises the maximum,
 * the context so far and the running sum are scaled by exp(m_old - m_new)
 * first (the online softmax). The context is divided by the sum at the end.
 * The weights, when wanted, are the raw scores until the end, then
 * exp(e_j - m) / sum. Rounding against the one-pass sum: each weight and context
 * element carries at most one extra rounding per block that raised the
 * maximum, inside the fused tolerance; the op list checks both kernels.
 * No barrier anywhere, so the early return is safe on PoCL. */
#ifndef ROW_JB
#define ROW_JB 16
#endif

/* The sum of the 16 lanes: four float4 quarters added, then dot(., 1). The
 * lanes go through private memory because Oclgrind 21.10's uninitialised-value
 * checker reports the .lo/.hi halves of a float16 (as it crashes on acc.x). */
static float lane_sum16(float16 acc) {
  float l[16];
  vstore16(acc, 0, l);
  return dot(vload4(0, l) + vload4(1, l) + vload4(2, l) + vload4(3, l), (float4)(1.0f));
}

/* Sum of a[i] * b[i] over 16-lane vectors (16 partial sums, then
 * lane_sum16), the tail apart. */
static float dot_row16(__global const float *a, __global const float *b, int len) {
  float16 acc = (float16)(0.0f);
  float tail = 0.0f;
  int i = 0;
  for (; i + 16 <= len; i += 16) acc += vload16(0, a + i) * vload16(0, b + i);
  for (; i < len; ++i) tail += a[i] * b[i];
  return lane_sum16(acc) + tail;
}

/* tanh for the row kernel's additive energies: the [13/6] rational
 * approximation x P(x^2) / Q(x^2) on |x| <= 7.905 (beyond, tanh is 1 in
 * float), x itself below |x| = 0.0004 (Eigen's float tanh). Absolute error
 * at most 5.7 u (u = 2^-24; measured in float against double tanh at 2M
 * points of [-12, 12]), which the energy bound 2(A+2)u sum|v_a| covers: only
 * full 16-lane groups use it, so A >= 16 and the bound gives each term
 * v_a tanh(.) 36 u |v_a|. Thirteen vector operations instead of the
 * forty-odd of PoCL's exact tanh, which bounded this kernel. */
static float16 tanh16(float16 x0) {
  const float16 x = clamp(x0, -7.90531110763549805f, 7.90531110763549805f);
  const float16 x2 = x * x;
  float16 p = x2 * -2.76076847742355e-16f + 2.00018790482477e-13f;
  p = p * x2 - 8.60467152213735e-11f;
  p = p * x2 + 5.12229709037114e-08f;
  p = p * x2 + 1.48572235717979e-05f;
  p = p * x2 + 6.37261928875436e-04f;
  p = p * x2 + 4.89352455891786e-03f;
  p = x * p;
  float16 q = x2 * 1.19825839466702e-06f + 1.18534705686654e-04f;
  q = q * x2 + 2.26843463243900e-03f;
  q = q * x2 + 4.89352518554385e-03f;
  /* the clamp made a NaN lane finite: it is put back */
  return select(select(p / q, x, fabs(x) < 0.0004f), x0, isnan(x0));
}

/* The raw energy of key j of source src for the row kernel (q: the row's
 * query): score_at's expressions, 16 lanes wide. */
static float score_row16(int kind, int src, int j, int S, int He, int A,
                         __global const float *q, __global const float *keys,
                         __global const float *pkeys, __global const float *v,
                         __global const float *bv, int has_bv, float scale) {
  float e;
  if (kind == SCORE_ADDITIVE) {
    __global const float *pk = pkeys + ((size_t)src * S + j) * A;
    float16 acc = (float16)(0.0f);
    float tail = 0.0f;
    int a = 0;
    for (; a + 16 <= A; a += 16)
      acc += vload16(0, v + a) * tanh16(vload16(0, pk + a) + vload16(0, q + a));
    for (; a < A; ++a) tail += v[a] * tanh(pk[a] + q[a]);
    e = lane_sum16(acc) + tail;
    if (has_bv) e += bv[0];
  } else {
    e = dot_row16(keys + ((size_t)src * S + j) * He, q, He);
  }
  return e * scale;
}

/* c[0..He) = c * s, or c / s when div (the final normalisation divides, as
 * masked_softmax does). */
static void row_scale(__global float *c, int He, float s, int div) {
  int d = 0;
  for (; d + 16 <= He; d += 16) {
    const float16 x = vload16(0, c + d);
    vstore16(div ? x / s : x * s, 0, c + d);
  }
  for (; d < He; ++d) c[d] = div ? c[d] / s : c[d] * s;
}

/* c[0..He) += sum_t p[t] k[t] over the nb positions of a block whose score
 * is not -INFINITY (invalid positions are skipped, never multiplied by 0, so
 * whatever the padding of the keys holds never reaches the context). The
 * terms are added in t order, as one position at a time would add them,
 * with c held in registers across the block. */
static void row_axpy_block(__global float *c, int He, int nb, const float *e, const float *p,
                           __global const float *k) {
  int d = 0;
  for (; d + 16 <= He; d += 16) {
    float16 acc = vload16(0, c + d);
    for (int t = 0; t < nb; ++t)
      if (e[t] != -INFINITY) acc += p[t] * vload16(0, k + (size_t)t * He + d);
    vstore16(acc, 0, c + d);
  }
  for (; d < He; ++d) {
    float acc = c[d];
    for (int t = 0; t < nb; ++t)
      if (e[t] != -INFINITY) acc += p[t] * k[(size_t)t * He + d];
    c[d] = acc;
  }
}

__kernel void attn_fused_row(FUSED_ARGS) {
  const int n = get_global_id(0);
  if (n >= N) return;
  const int src = n / group;
  FUSED_INPUTS_AT_OFFSETS();
  __global const float *q = qp + qp_off + (size_t)n * ld_qp;
  __global const float *kr = keys + (size_t)src * S * He;
  __global float *cr = c + c_off + (size_t)n * ld_c;
  __global float *ar = alpha + alpha_off + (size_t)n * S;
  const int len = lens[src];

  for (int d = 0; d < He; ++d) cr[d] = 0.0f;
  float m = -INFINITY, sum = 0.0f, comp = 0.0f;
  float e[ROW_JB];
  int failed = 0; /* a NaN or +inf score: no softmax (no_softmax) */
  for (int j0 = 0; j0 < len && !failed; j0 += ROW_JB) {
    const int nb = min(ROW_JB, len - j0);
    float bm = -INFINITY;
    for (int t = 0; t < nb; ++t) {
      const int j = j0 + t;
      float x = -INFINITY;
      if (is_valid(src, j, S, lens, mask, has_mask)) {
        x = score_row16(kind, src, j, S, He, A, q, keys, pkeys, v, bv, has_bv, scale);
        bm = max_score(bm, x);
      }
      e[t] = x;
      if (has_alpha) ar[j] = x;
    }
    if (bm == -INFINITY) continue; /* nothing valid in this block */
    failed = isnan(bm) || bm == INFINITY;
    if (failed) break;
    if (bm > m) {
      if (m != -INFINITY) {
        const float r = exp(m - bm);
        sum *= r;
        comp *= r;
        row_scale(cr, He, r, 0);
      }
      m = bm;
    }
    float p[ROW_JB];
    for (int t = 0; t < nb; ++t) {
      p[t] = 0.0f;
      if (e[t] == -INFINITY) continue;
      p[t] = shifted_exp(e[t], m);
      kahan_add(&sum, &comp, p[t]);
    }
    row_axpy_block(cr, He, nb, e, p, kr + (size_t)j0 * He);
  }
  failed = failed || no_softmax(m, sum);
  if (failed) {
    for (int d = 0; d < He; ++d) cr[d] = NAN;
    if (has_alpha) {
      for (int j = 0; j < len; ++j) ar[j] = is_valid(src, j, S, lens, mask, has_mask) ? NAN : 0.0f;
      for (int j = len; j < S; ++j) ar[j] = 0.0f;
    }
    return;
  }
  /* sum >= 1 when anything was valid: the maximum contributes exp(0) */
  if (sum > 0.0f) row_scale(cr, He, sum, 1);
  if (has_alpha) {
    for (int j = 0; j < len; ++j) {
      const float x = ar[j];
      ar[j] = (sum > 0.0f && x != -INFINITY) ? shifted_exp(x, m) / sum : 0.0f;
    }
    for (int j = len; j < S; ++j) ar[j] = 0.0f;
  }
}
#endif /* ATTN_ROW_FORM */

#else /* SQ_TRAIN */

/* ---- training: built with train_prelude.cl in front (acc_t, wg_sum, no
 * contraction; how the kernels stay deterministic) ---- */

#define SCORE_ADDITIVE 0

/* The validity arguments of every training kernel here (the host's
 * arg_valid): lengths, and the optional mask with its flag. */
#define VALID_ARGS                                                                           \
  __global const int *lens, int lens_off, __global const int *mask, int mask_off, int has_mask

/* Position j of row n takes part in the attention iff j < min(lens[n], S)
 * and the mask (when given) does not exclude it. */
static int attn_valid(int n, int j, int S, __global const int *lens,
                      __global const int *mask, int has_mask) {
  const int len = lens[n] < S ? lens[n] : S;
  if (j >= len) return 0;
  return !has_mask || mask[(size_t)n * S + j] != 0;
}
/* attn_valid on the arguments VALID_ARGS declared (and S), as every training
 * kernel here asks it. */
#define VALID_AT(n, j) attn_valid((n), (j), S, lens + lens_off, mask + mask_off, has_mask)

/* The work-item (x, j, n) of a global (>= X, S, N) grid over the elements of
 * each position: 1 when it is inside the grid and at a valid position (the
 * kernels that own one element there). */
static int grid_element(int X, int S, int N, int *x, int *j, int *n, __global const int *lens,
                        __global const int *mask, int has_mask) {
  *x = get_global_id(0);
  *j = get_global_id(1);
  *n = get_global_id(2);
  return *x < X && *j < S && *n < N && attn_valid(*n, *j, S, lens, mask, has_mask);
}

/* u[n, j, k] = tanh(pkeys[n, j, k] + qp[n, k]) at valid positions (the
 * expression attention.cl's score evaluates); others are left alone.
 * global (>= A, S, N). */
__kernel void attn_keep_u(int N, int S, int A,
                          __global const float *qp, int qp_off, int ld_qp,
                          __global const float *pkeys, int pk_off,
                          VALID_ARGS,
                          __global float *u, int u_off) {
  int k, j, n;
  if (!grid_element(A, S, N, &k, &j, &n, lens + lens_off, mask + mask_off, has_mask)) return;
  const size_t at = ((size_t)n * S + j) * A + k;
  u[u_off + at] = tanh(pkeys[pk_off + at] + qp[qp_off + (size_t)n * ld_qp + k]);
}

/* dalpha[n, j] = dc[n] . keys[n, j] at valid positions, 0 elsewhere, written
 * into de for attn_bwd_de to finish. global (>= S, N): one dot product of
 * length He per work-item. The products get work-items of their own (rather
 * than a loop over j inside attn_bwd_de) because llvmpipe silently stops a
 * work-item after 65535 loop iterations in all (KNOWN_ISSUES.md). */
__kernel void attn_bwd_dalpha(int N, int S, int He,
                              __global const float *dc, int dc_off, int ld_dc,
                              __global const float *keys, int keys_off,
                              VALID_ARGS,
                              __global float *de, int de_off) {
  const int j = get_global_id(0);
  const int n = get_global_id(1);
  if (j >= S || n >= N) return;
  float s = 0.0f;
  if (VALID_AT(n, j)) {
    __global const float *c = dc + dc_off + (size_t)n * ld_dc;
    __global const float *h = keys + keys_off + ((size_t)n * S + j) * He;
    for (int k = 0; k < He; ++k) s += c[k] * h[k];
  }
  de[de_off + (size_t)n * S + j] = s;
}

/* de[n, j] = scale * alpha_j (dalpha_j - sum_k alpha_k dalpha_k), dalpha from
 * attn_bwd_dalpha (already in de); 0 at invalid positions. One work-item per
 * row (global >= N): the row sum then needs no barrier at all. */
__kernel void attn_bwd_de(int N, int S,
                          __global const float *alpha, int alpha_off,
                          VALID_ARGS,
                          float scale, __global float *de, int de_off) {
  const int n = get_global_id(0);
  if (n >= N) return;
  __global const float *al = alpha + alpha_off + (size_t)n * S;
  __global float *out = de + de_off + (size_t)n * S;
  acc_t sdot = 0;
  for (int j = 0; j < S; ++j)
    if (VALID_AT(n, j)) sdot += (acc_t)al[j] * out[j];
  const float sd = (float)sdot;
  for (int j = 0; j < S; ++j) {
    float e = 0.0f;
    if (VALID_AT(n, j)) e = al[j] * (out[j] - sd) * scale;
    out[j] = e;
  }
}

/* dkeys[n, j, d] += alpha_j dc[d] (+ de_j qp[d] for dot-type scores) at valid
 * positions. global (>= He, S, N); each work-item owns one element. */
__kernel void attn_bwd_keys(int N, int S, int He,
                            __global const float *alpha, int alpha_off,
                            __global const float *dc, int dc_off, int ld_dc,
                            __global const float *qp, int qp_off, int ld_qp, int dot_score,
                            __global const float *de, int de_off,
                            VALID_ARGS,
                            __global float *dkeys, int dk_off) {
  int d, j, n;
  if (!grid_element(He, S, N, &d, &j, &n, lens + lens_off, mask + mask_off, has_mask)) return;
  __global float *p = dkeys + dk_off + ((size_t)n * S + j) * He + d;
  float acc = p[0];
  acc += alpha[alpha_off + (size_t)n * S + j] * dc[dc_off + (size_t)n * ld_dc + d];
  if (dot_score) acc += de[de_off + (size_t)n * S + j] * qp[qp_off + (size_t)n * ld_qp + d];
  p[0] = acc;
}

/* Dot-type scores: dqp[n, d] += sum over valid j of de_j keys[n, j, d], in
 * order of j. global (>= He, N). */
__kernel void attn_bwd_dqp(int N, int S, int He,
                           __global const float *de, int de_off,
                           __global const float *keys, int keys_off,
                           VALID_ARGS,
                           __global float *dqp, int dqp_off, int ld_dqp) {
  const int d = get_global_id(0);
  const int n = get_global_id(1);
  if (d >= He || n >= N) return;
  __global float *p = dqp + dqp_off + (size_t)n * ld_dqp + d;
  __global const float *kr = keys + keys_off + (size_t)n * S * He + d;
  float acc = p[0];
  for (int j = 0; j < S; ++j)
    if (VALID_AT(n, j))
      acc += de[de_off + (size_t)n * S + j] * kr[(size_t)j * He];
  p[0] = acc;
}

/* The leading arguments of the additive score's backward kernels
 * (attn_bwd_additive, attn_bwd_energy, attn_bwd_energy_part): what u and de
 * are computed from and where positions are valid. */
#define ADDITIVE_BWD_ARGS                                                                    \
  int N, int S, int A, __global const float *qp, int qp_off, int ld_qp,                    \
      __global const float *pkeys, int pk_off, __global const float *u, int u_off,         \
      int has_u, __global const float *de, int de_off, VALID_ARGS

/* tanh activation of the additive score at (n, j, k): kept, or recomputed. */
static float additive_u(int n, int j, int k, int S, int A, __global const float *u, int has_u,
                        __global const float *pkeys, __global const float *qp, int ld_qp) {
  const size_t at = ((size_t)n * S + j) * A + k;
  if (has_u) return u[at];
  return tanh(pkeys[at] + qp[(size_t)n * ld_qp + k]);
}
/* additive_u on the arguments ADDITIVE_BWD_ARGS declared. */
#define ADDITIVE_U(n, j, k)                                                                  \
  additive_u((n), (j), (k), S, A, u + u_off, has_u, pkeys + pk_off, qp + qp_off, ld_qp)

/* Additive scores: du = de_j v[k] (1 - u^2); dpkeys[n, j, k] += du and
 * dqp[n, k] += sum over valid j of du, in order of j. global (>= A, N). */
__kernel void attn_bwd_additive(ADDITIVE_BWD_ARGS, __global const float *v, int v_off,
                                __global float *dpkeys, int dpk_off,
                                __global float *dqp, int dqp_off, int ld_dqp) {
  const int k = get_global_id(0);
  const int n = get_global_id(1);
  if (k >= A || n >= N) return;
  const float vk = v[v_off + k];
  __global float *p = dqp + dqp_off + (size_t)n * ld_dqp + k;
  float acc = p[0];
  for (int j = 0; j < S; ++j) {
    if (!VALID_AT(n, j)) continue;
    const float uu = ADDITIVE_U(n, j, k);
    const float du = de[de_off + (size_t)n * S + j] * vk * (1.0f - uu * uu);
    dpkeys[dpk_off + ((size_t)n * S + j) * A + k] += du;
    acc += du;
  }
  p[0] = acc;
}

/* Additive scores: dv[k] += sum over rows n and valid j of de u (k < A) and
 * dbv[0] += sum of de (work-item A, when has_dbv), in the host's order (n,
 * then j). global (>= A + 1). */
__kernel void attn_bwd_energy(ADDITIVE_BWD_ARGS, __global float *dv, int dv_off,
                              __global float *dbv, int dbv_off, int has_dbv) {
  const int k = get_global_id(0);
  if (k > A || (k == A && !has_dbv)) return;
  __global float *p = k < A ? dv + dv_off + k : dbv + dbv_off;
  float acc = p[0];
  for (int n = 0; n < N; ++n)
    for (int j = 0; j < S; ++j) {
      if (!VALID_AT(n, j)) continue;
      const float e = de[de_off + (size_t)n * S + j];
      if (k < A)
        acc += e * ADDITIVE_U(n, j, k);
      else
        acc += e;
    }
  p[0] = acc;
}

/* ---- GPU forms of attn_bwd_de and attn_bwd_energy ----
 * The two kernels above run a row (attn_bwd_de) or all N S positions
 * (attn_bwd_energy) on one work-item each, which suits a CPU core; these
 * spread the same sums over work-groups, in a fixed order, so that every run
 * gives the same bits. */

/* attn_bwd_de with a work-group per row: BWD_SL lanes along H_e per position
 * (dalpha_j's key row read in coalesced runs), wg / BWD_SL positions at once.
 * Work-item i < wg / BWD_SL adds the lane partial sums of positions
 * j = i, i + wg / BWD_SL, ... in lane order, keeps dalpha_j in de and its own
 * part of sum_j alpha_j dalpha_j in order of j; a tree adds the parts; the
 * same work-item then turns its own positions into de_j. lane_sums holds wg
 * floats, red wg acc_t. */
#define BWD_SL 16
__kernel void attn_bwd_de_wg(int N, int S, int He,
                             __global const float *alpha, int alpha_off,
                             __global const float *dc, int dc_off, int ld_dc,
                             __global const float *keys, int keys_off,
                             VALID_ARGS,
                             float scale, __global float *de, int de_off,
                             __local float *lane_sums, __local acc_t *red) {
  const int n = get_group_id(0); /* < N: the grid has exactly N groups */
  const int lid = get_local_id(0), wg = get_local_size(0);
  const int sl = wg < BWD_SL ? wg : BWD_SL, np = wg / sl;
  /* a mask and a shift (sl is a power of two): the pair lid % sl, lid / sl
   * compiles to an instruction (freeze) that Oclgrind 21.10 cannot simulate */
  int shift = 0;
  while ((1 << shift) < sl) ++shift;
  const int lane = lid & (sl - 1), slot = lid >> shift;
  (void)N;
  __global const float *al = alpha + alpha_off + (size_t)n * S;
  __global const float *c = dc + dc_off + (size_t)n * ld_dc;
  __global const float *kr = keys + keys_off + (size_t)n * S * He;
  __global float *out = de + de_off + (size_t)n * S;
  acc_t sdot = 0;
  for (int j0 = 0; j0 < S; j0 += np) {
    const int j = j0 + slot;
    float s = 0.0f;
    if (j < S && VALID_AT(n, j)) {
      __global const float *h = kr + (size_t)j * He;
      for (int k = lane; k < He; k += sl) s += c[k] * h[k];
    }
    lane_sums[lid] = s;
    barrier(CLK_LOCAL_MEM_FENCE);
    const int jj = j0 + lid;
    if (lid < np && jj < S) {
      float t = 0.0f;
      for (int l = 0; l < sl; ++l) t += lane_sums[lid * sl + l];
      if (VALID_AT(n, jj)) sdot += (acc_t)al[jj] * t;
      out[jj] = t; /* dalpha for now (0 at invalid positions) */
    }
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  const float sd = (float)wg_sum(red, sdot);
  if (lid < np)
    for (int j = lid; j < S; j += np) {
      float e = 0.0f;
      if (VALID_AT(n, j)) e = al[j] * (out[j] - sd) * scale;
      out[j] = e;
    }
}

/* attn_bwd_energy in two passes. Pass 1: work-item (k, ch) adds, in order,
 * the terms of the BWD_ROWS positions r = n S + j of chunk ch (k < A: de u_k;
 * k = A: de, when has_dbv) into part[ch (A + 1) + k]; global (>= A + 1,
 * chunks). Pass 2 (attn_bwd_energy_sum): work-item k adds its chunks' sums
 * in chunk order to dv[k] (dbv). Neighbouring work-items read neighbouring
 * k of u. */
#define BWD_ROWS 64
__kernel void attn_bwd_energy_part(ADDITIVE_BWD_ARGS, int has_dbv, __global float *part) {
  const int k = get_global_id(0);
  const int ch = get_global_id(1);
  if (k > A || (k == A && !has_dbv)) return;
  const int r0 = ch * BWD_ROWS, r1 = min(r0 + BWD_ROWS, N * S);
  int n = r0 / S, j = r0 - n * S;
  float acc = 0.0f;
  for (int r = r0; r < r1; ++r) {
    if (VALID_AT(n, j)) {
      const float e = de[de_off + r];
      if (k < A)
        acc += e * ADDITIVE_U(n, j, k);
      else
        acc += e;
    }
    if (++j == S) {
      j = 0;
      ++n;
    }
  }
  part[(size_t)ch * (A + 1) + k] = acc;
}

__kernel void attn_bwd_energy_sum(int A, int chunks, __global const float *part,
                                  __global float *dv, int dv_off,
                                  __global float *dbv, int dbv_off, int has_dbv) {
  const int k = get_global_id(0);
  if (k > A || (k == A && !has_dbv)) return;
  __global float *p = k < A ? dv + dv_off + k : dbv + dbv_off;
  float acc = p[0];
  for (int ch = 0; ch < chunks; ++ch) acc += part[(size_t)ch * (A + 1) + k];
  p[0] = acc;
}

#endif /* SQ_TRAIN */
