/* Beam search on the device (backend.h, "Beam search slots"; the host
 * backend's src/backend/host/host_beam.c computes the same).
 * Every buffer argument is followed by its element offset (ocl.h convention).
 * K <= BEAM_MAX_K: the kernels keep K entries in private arrays. */

#define BEAM_MAX_K 16

/* Is (v, i) ranked ahead of (bv, bi)? Higher value first, NaN below every
 * number, lower index on ties; an empty slot (bi < 0) loses to anything. */
static int topk_better(float v, int i, float bv, int bi) {
  if (bi < 0) return 1;
  if (isnan(v)) return isnan(bv) && i < bi;
  if (isnan(bv)) return 1;
  return v > bv || (v == bv && i < bi);
}

/* The larger of two maxima, NaN if either is (fmax would drop a NaN logit,
 * and the log-sum-exp would then rest on what exp makes of NaN). */
static float max_nan(float a, float b) { return isnan(a) || isnan(b) ? NAN : fmax(a, b); }

/* Inserts (v, i) into the sorted list (bv, bi) of K entries when it ranks high enough. */
static void topk_insert(float *bv, int *bi, int K, float v, int i) {
  if (!topk_better(v, i, bv[K - 1], bi[K - 1])) return;
  int pos = K - 1;
  while (pos > 0 && topk_better(v, i, bv[pos - 1], bi[pos - 1])) {
    bv[pos] = bv[pos - 1];
    bi[pos] = bi[pos - 1];
    pos--;
  }
  bv[pos] = v;
  bi[pos] = i;
}

/* One work-group per row (the host launches exactly N groups, so no work-item
 * leaves before a barrier); the local size is a power of two. Each work-item
 * keeps the K best of its strided slice; then they are merged into the K best
 * of the row. lv, li hold wg * K entries, red wg floats (the max and the sum
 * of the log-sum-exp).
 *
 * Two forms of the merge, with equal results (the ranking is a strict order
 * and every id is in one slice, so the K best are one set in one order):
 * work-item 0 inserts all wg * K entries itself (CPU-type devices, where a
 * work-group runs on one core anyway), or, with -DTOPK_TREE (GPUs), a tree:
 * at each of log2(wg) levels, work-item i < h merges its sorted list with
 * that of i + h, K steps each, so no work-item does more than K log2(wg). */
__kernel void beam_topk(__global const float *x, int x_off, int ld, int V, int K,
                        __global float *vals, int vals_off, __global int *ids, int ids_off,
                        __local float *lv, __local int *li, __local float *red) {
  const int r = get_group_id(0), lid = get_local_id(0), wg = get_local_size(0);
  __global const float *row = x + x_off + (size_t)r * (size_t)ld;
  float bv[BEAM_MAX_K];
  int bi[BEAM_MAX_K];
  for (int i = 0; i < K; i++) {
    bv[i] = -INFINITY;
    bi[i] = -1;
  }
  float mx = -INFINITY;
  for (int v = lid; v < V; v += wg) {
    const float xv = row[v];
    mx = max_nan(mx, xv);
    topk_insert(bv, bi, K, xv, v);
  }
  for (int i = 0; i < K; i++) {
    lv[lid * K + i] = bv[i];
    li[lid * K + i] = bi[i];
  }
  red[lid] = mx;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int h = wg / 2; h > 0; h >>= 1) {
    if (lid < h) red[lid] = max_nan(red[lid], red[lid + h]);
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  mx = red[0];
  barrier(CLK_LOCAL_MEM_FENCE);
  float sum = 0.0f;
  for (int v = lid; v < V; v += wg) sum += exp(row[v] - mx);
  red[lid] = sum;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int h = wg / 2; h > 0; h >>= 1) {
    if (lid < h) red[lid] = red[lid] + red[lid + h];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
#ifdef TOPK_TREE
  for (int h = wg / 2; h > 0; h >>= 1) {
    if (lid < h) {
      __local const float *av = lv + lid * K, *bvv = lv + (lid + h) * K;
      __local const int *ai = li + lid * K, *bii = li + (lid + h) * K;
      /* ia + ib = the entries taken so far < K, so both stay in range */
      int ia = 0, ib = 0;
      for (int i = 0; i < K; i++) {
        /* an empty slot (id < 0) ranks last on either side */
        if (ai[ia] >= 0 && topk_better(av[ia], ai[ia], bvv[ib], bii[ib])) {
          bv[i] = av[ia];
          bi[i] = ai[ia];
          ia++;
        } else {
          bv[i] = bvv[ib];
          bi[i] = bii[ib];
          ib++;
        }
      }
    }
    barrier(CLK_LOCAL_MEM_FENCE); /* every read of this level before any write */
    if (lid < h)
      for (int i = 0; i < K; i++) {
        lv[lid * K + i] = bv[i];
        li[lid * K + i] = bi[i];
      }
    barrier(CLK_LOCAL_MEM_FENCE);
  }
#endif
  if (lid == 0) {
    /* a row holding a NaN logit: every value NaN, reported by the decoder */
    const float lse = isnan(mx) ? mx : mx + log(red[0]);
#ifdef TOPK_TREE
    for (int i = 0; i < K; i++) {
      bv[i] = lv[i];
      bi[i] = li[i];
    }
#else
    for (int i = 0; i < K; i++) {
      bv[i] = -INFINITY;
      bi[i] = -1;
    }
    for (int j = 0; j < wg * K; j++)
      if (li[j] >= 0) topk_insert(bv, bi, K, lv[j], li[j]);
#endif
    for (int i = 0; i < K; i++) {
      vals[vals_off + r * K + i] = bi[i] >= 0 ? bv[i] - lse : -INFINITY;
      ids[ids_off + r * K + i] = bi[i];
    }
  }
}

/* cand_better and beam_pick: beam_pick.h, compiled in front of this file. */

/* One work-item per sentence (no barriers, so the range guard may return).
 * The K x K candidates are ranked by repeated selection: each pick is the best
 * candidate ranked after the previous pick (the order is strict). */
__kernel void beam_select(int n, int K, int step, int max_steps, int eos,
                          __global const float *vals, int vals_off,
                          __global const int *toks, int toks_off,
                          __global float *cum, int cum_off, __global int *live, int live_off,
                          __global int *ids, int ids_off, __global int *parent, int par_off,
                          __global int *tok_hist, int th_off, __global int *par_hist, int ph_off,
                          __global float *fin_lp, int flp_off, __global int *fin_step, int fst_off,
                          __global int *fin_par, int fpa_off, __global int *fin_count, int fc_off,
                          __global int *done, int done_off) {
  const int s = get_global_id(0);
  if (s >= n) return;
  const int R = n * K, row0 = s * K;
  if (done[done_off + s]) {
    for (int i = 0; i < K; i++) parent[par_off + row0 + i] = row0 + i;
    return;
  }
  int f = fin_count[fc_off + s], nl = 0;
  const int keep = K - f;
  float ncum[BEAM_MAX_K];
  int ntok[BEAM_MAX_K], npar[BEAM_MAX_K];
  float ps = 0.0f;
  int ptok = -1, pk = -1;
  for (int c = 0; c < keep; c++) {
    float bs;
    int btok, bk;
    if (!beam_pick(K, row0, live + live_off, toks + toks_off, cum + cum_off, vals + vals_off, ps,
                   ptok, pk, &bs, &btok, &bk))
      break;
    ps = bs;
    ptok = btok;
    pk = bk;
    if (btok == eos) {
      const int at = s * K + f;
      fin_lp[flp_off + at] = bs;
      fin_step[fst_off + at] = step;
      fin_par[fpa_off + at] = row0 + bk;
      f++;
    } else {
      ncum[nl] = bs;
      ntok[nl] = btok;
      npar[nl] = row0 + bk;
      nl++;
    }
  }
  fin_count[fc_off + s] = f;
  const int d = f >= K || nl == 0 || step + 1 >= max_steps;
  const int h0 = step * R;
  for (int i = 0; i < K; i++) {
    const int r = row0 + i;
    if (i < nl) {
      tok_hist[th_off + h0 + r] = ntok[i];
      par_hist[ph_off + h0 + r] = npar[i];
      cum[cum_off + r] = ncum[i];
      live[live_off + r] = 1;
      ids[ids_off + r] = d ? eos : ntok[i];
      parent[par_off + r] = npar[i];
    } else {
      live[live_off + r] = 0;
      ids[ids_off + r] = eos;
      parent[par_off + r] = r;
    }
  }
  done[done_off + s] = d;
}

/* dst[r, d] = src[idx[r], d]; global (>= D, N), 2-D (no flattened i / D, i % D). */
__kernel void gather_rows(int N, int D, __global const float *src, int src_off,
                          __global const int *idx, int idx_off, __global float *dst,
                          int dst_off) {
  const size_t d = get_global_id(0), r = get_global_id(1);
  if (d >= (size_t)D || r >= (size_t)N) return;
  const int from = idx[idx_off + r];
  const size_t row = from >= 0 && from < N ? (size_t)from : r;
  dst[dst_off + r * (size_t)D + d] = src[src_off + row * (size_t)D + d];
}
