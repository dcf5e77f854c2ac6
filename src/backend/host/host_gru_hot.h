/* The GRU gates of one row over HOT_VF, a vector of HOT_W float lanes,
 * included by host_gru.c once per width (host_widths.h): HOT_NAME(gates_row)
 * compiled with HOT_ATTR. Every lane runs gates_chunk's operations in its
 * order, so every width gives the same bits where multiply-adds fuse alike. */
static inline __attribute__((always_inline)) HOT_VF HOT_NAME(load)(const float *p) {
  HOT_VF v;
  memcpy(&v, p, sizeof v);
  return v;
}

/* zeros for an absent bias */
static inline __attribute__((always_inline)) HOT_VF HOT_NAME(load_opt)(const float *p) {
  return p ? HOT_NAME(load)(p) : (HOT_VF){0};
}

/* h' for one row: HOT_W lanes at a time, then 4, then the rest. */
HOT_ATTR static void HOT_NAME(gates_row)(int H, const float *gi, const float *gh, const float *bi,
                                         const float *bh, float *h, float *out) {
  int j = 0;
  for (; j + HOT_W <= H; j += HOT_W) {
    const float *b0 = bi ? bi + j : NULL, *c0 = bh ? bh + j : NULL;
    /* the sums in gates_chunk's order */
    HOT_VF r = HOT_FN(sigmoid)(HOT_NAME(load)(gi + j) + HOT_NAME(load_opt)(b0) +
                               HOT_NAME(load)(gh + j) + HOT_NAME(load_opt)(c0));
    HOT_VF z = HOT_FN(sigmoid)(HOT_NAME(load)(gi + H + j) + HOT_NAME(load_opt)(b0 ? b0 + H : NULL) +
                               HOT_NAME(load)(gh + H + j) + HOT_NAME(load_opt)(c0 ? c0 + H : NULL));
    HOT_VF n = HOT_FN(tanh)(HOT_NAME(load)(gi + 2 * H + j) +
                            HOT_NAME(load_opt)(b0 ? b0 + 2 * H : NULL) +
                            r * (HOT_NAME(load)(gh + 2 * H + j) +
                                 HOT_NAME(load_opt)(c0 ? c0 + 2 * H : NULL)));
    HOT_VF hn = n + z * (HOT_NAME(load)(h + j) - n);
    memcpy(h + j, &hn, sizeof hn);
    if (out) memcpy(out + j, &hn, sizeof hn);
  }
  for (; j + SQ_VW <= H; j += SQ_VW) gates_chunk(H, j, SQ_VW, gi, gh, bi, bh, h, out);
  if (j < H) gates_chunk(H, j, H - j, gi, gh, bi, bh, h, out);
}

