/* The GRU gates of one row over HOT_VF, a vector of HOT_W float lanes,
 * included by host_gru.c once per width (host_widths.h): HOT_NAME(gates_row)
 * compiled with HOT_ATTR. Every lane runs gates_chunk's operations in its
 * order, so every width gives the same bits where multiply-adds fuse alike. */

/* zeros for an absent bias */
static inline __attribute__((always_inline)) HOT_VF HOT_NAME(load_opt)(const float *p) {
  return p ? HOT_FN(loadu)(p) : (HOT_VF){0};
}

/* h' for one row: HOT_W lanes at a time, then 4, then the rest. */
HOT_ATTR static void HOT_NAME(gates_row)(int H, const float *gi, const float *gh, const float *bi,
                                         const float *bh, float *h, float *out) {
  int j = 0;
  for (; j + HOT_W <= H; j += HOT_W) {
    const float *b0 = bi ? bi + j : NULL, *c0 = bh ? bh + j : NULL;
    /* the sums in gates_chunk's order */
    HOT_VF r = HOT_FN(sigmoid)(HOT_FN(loadu)(gi + j) + HOT_NAME(load_opt)(b0) +
                               HOT_FN(loadu)(gh + j) + HOT_NAME(load_opt)(c0));
    HOT_VF z = HOT_FN(sigmoid)(HOT_FN(loadu)(gi + H + j) +
                               HOT_NAME(load_opt)(b0 ? b0 + H : NULL) +
                               HOT_FN(loadu)(gh + H + j) +
                               HOT_NAME(load_opt)(c0 ? c0 + H : NULL));
    HOT_VF n = HOT_FN(tanh)(HOT_FN(loadu)(gi + 2 * H + j) +
                            HOT_NAME(load_opt)(b0 ? b0 + 2 * H : NULL) +
                            r * (HOT_FN(loadu)(gh + 2 * H + j) +
                                 HOT_NAME(load_opt)(c0 ? c0 + 2 * H : NULL)));
    HOT_VF hn = n + z * (HOT_FN(loadu)(h + j) - n);
    HOT_FN(storeu)(h + j, hn);
    if (out) HOT_FN(storeu)(out + j, hn);
  }
  for (; j + SQ_VW <= H; j += SQ_VW) gates_chunk(H, j, SQ_VW, gi, gh, bi, bh, h, out);
  if (j < H) gates_chunk(H, j, H - j, gi, gh, bi, bh, h, out);
}

