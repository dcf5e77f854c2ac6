/* Beam search's passes over a row of logits, written once over HOT_VF (HOT_W
 * float lanes, HOT_VI its int mask type) and included by host_beam.c once per
 * width (host_widths.h): each function is HOT_NAME(f), compiled with
 * HOT_ATTR.
 * Every pass keeps sixteen logical lanes, 16 / HOT_W vectors of them, so the
 * lanes' maxima, sums and the order they are folded in are the same at every
 * width. */
#define HOT_NV (16 / HOT_W)
#define HOT_LANE(a, i) ((a)[(i) / HOT_W][(i) % HOT_W]) /* logical lane i */

/* The K best of a row, given a bound `least` no higher than its K-th best number:
 * only the logits not below max(least, the K-th best so far) go through
 * topk_offer, in index order (a NaN fails `<` and is offered too); a block of
 * 16 all below it is passed over with one compare per vector. Every logit
 * passed over is below the K best numbers, or ties the K-th with a higher
 * index, so topk_offer would turn it away: the result is the one-by-one
 * scan's exactly. */
HOT_ATTR static void HOT_NAME(row_topk)(const float *row, int V, int K, float least, float *bv,
                                        int *bi) {
  int full = 0, v = 0;
  for (; v + 16 <= V; v += 16) {
    const float t = full && bv[K - 1] > least ? bv[K - 1] : least;
    HOT_VI below[HOT_NV];
    int all = -1;
    for (int u = 0; u < HOT_NV; u++) {
      below[u] = HOT_FN(loadu)(row + v + u * HOT_W) < t;
      for (int i = 0; i < HOT_W; i++) all &= below[u][i];
    }
    if (all) continue;
    for (int i = 0; i < 16; i++)
      if (!HOT_LANE(below, i)) topk_offer(row, v + i, 1, K, bv, bi, &full);
  }
  for (; v < V; v++)
    if (!(row[v] < least)) topk_offer(row, v, 1, K, bv, bi, &full);
}

/* The row's maximum, NaN when any logit is NaN (as beam.cl): sixteen lanes'
 * maxima, then across the lanes. The maximum of the same values in any order
 * is the same number (a tie of -0 and +0 only changes the sign of a zero
 * maximum, which the log-sum-exp below does not see). *least gets the K-th
 * largest of the lanes' maxima over the full blocks (K <= 16 lanes): K
 * different logits are at least that large, all of them numbers, so each of
 * the row's K best numbers is too; -inf when the row has no full block. */
HOT_ATTR static float HOT_NAME(row_max)(const float *row, int V, int K, float *least) {
  HOT_VF m[HOT_NV];
  HOT_VI nan[HOT_NV];
  for (int u = 0; u < HOT_NV; u++) {
    m[u] = (HOT_VF){0} - INFINITY;
    nan[u] = (HOT_VI){0};
  }
  int v = 0;
  for (; v + 16 <= V; v += 16)
    for (int u = 0; u < HOT_NV; u++) {
      const HOT_VF x = HOT_FN(loadu)(row + v + u * HOT_W);
      m[u] = HOT_FN(select)(x > m[u], x, m[u]);
      nan[u] |= x != x;
    }
  float lanes[16], mx = -INFINITY;
  int any_nan = 0;
  for (int i = 0; i < 16; i++) {
    const float mi = HOT_LANE(m, i);
    mx = mi > mx ? mi : mx;
    any_nan |= HOT_LANE(nan, i) != 0;
    /* insertion, largest first: sixteen numbers (-inf where no block) */
    int pos = i;
    while (pos > 0 && lanes[pos - 1] < mi) {
      lanes[pos] = lanes[pos - 1];
      pos--;
    }
    lanes[pos] = mi;
  }
  *least = lanes[K - 1];
  for (; v < V; v++) {
    mx = row[v] > mx ? row[v] : mx;
    any_nan |= row[v] != row[v];
  }
  return any_nan ? NAN : mx;
}

/* log sum_v exp(x_v - mx) + mx with host_math.h's vector exp: sixteen
 * partial sums, folded in lane order (the same bits at any thread count and
 * width). A NaN maximum (a NaN logit) gives NaN, as beam.cl. */
HOT_ATTR static float HOT_NAME(row_lse)(const float *row, int V, float mx) {
  HOT_VF acc[HOT_NV];
  for (int u = 0; u < HOT_NV; u++) acc[u] = (HOT_VF){0};
  int v = 0;
  for (; v + 16 <= V; v += 16)
    for (int u = 0; u < HOT_NV; u++) acc[u] += HOT_FN(exp)(HOT_FN(loadu)(row + v + u * HOT_W) - mx);
  if (v < V) {
    float x[16] = {0};
    memcpy(x, row + v, (size_t)(V - v) * sizeof(float));
    HOT_VF t[HOT_NV];
    for (int u = 0; u < HOT_NV; u++) t[u] = HOT_FN(exp)(HOT_FN(loadu)(x + u * HOT_W) - mx);
    for (int i = 0; i < V - v; i++) HOT_LANE(acc, i) += HOT_LANE(t, i);
  }
  float sum = 0.0f;
  for (int i = 0; i < 16; i++) sum += HOT_LANE(acc, i);
  return isnan(mx) ? mx : mx + logf(sum);
}

#undef HOT_LANE
#undef HOT_NV
