/* The attention loops that carry vectors from one iteration to the next,
 * written once over HOT_VF, a vector of HOT_W float lanes, and included by
 * host_attention.c once per width (host_widths.h): each function is named
 * HOT_NAME(f) and compiled with HOT_ATTR. Every loop keeps
 * sixteen logical lanes, 16 / HOT_W vectors of them, so the arithmetic per
 * lane and the order lanes are folded in are the same at every width. */
#define HOT_NV (16 / HOT_W)

/* e[j] = scale * (sum_a v_a tanh(pk[j, a] + q_a) + bv) for j < len, two
 * positions per pass so q and v are loaded once for both (an odd last position
 * is computed twice and stored once). Each of the 16 lanes sums ceil(A / 16)
 * products v_a * tanh(...) in float, then the lanes are added in order: at
 * most ceil(A / 16) + 17 roundings of terms bounded by |v_a| (|tanh| <= 1),
 * well inside the (A + 2)-term dot product bound the energy tolerance allows.
 * A short last block reads zero-padded copies, and v = 0 adds exactly 0. */
HOT_ATTR static void HOT_NAME(additive_energies)(int len, int A, const float *restrict pk,
                                                 const float *restrict q, const float *restrict v,
                                                 float bv, float scale, float *restrict e) {
  for (int j = 0; j < len; j += 2) {
    const float *p0 = pk + (size_t)j * (size_t)A;
    const float *p1 = j + 1 < len ? p0 + A : p0;
    HOT_VF s0[HOT_NV], s1[HOT_NV];
    for (int u = 0; u < HOT_NV; u++) s0[u] = s1[u] = (HOT_VF){0};
    int k = 0;
    for (; k + 16 <= A; k += 16)
      for (int u = 0; u < HOT_NV; u++) {
        const int o = k + u * HOT_W;
        const HOT_VF qk = HOT_FN(loadu)(q + o), vk = HOT_FN(loadu)(v + o);
        s0[u] += vk * HOT_FN(tanh)(HOT_FN(loadu)(p0 + o) + qk);
        s1[u] += vk * HOT_FN(tanh)(HOT_FN(loadu)(p1 + o) + qk);
      }
    if (k < A) {
      float t[4][16] = {{0}}; /* q, v and the two positions' keys, padded */
      const size_t tail = (size_t)(A - k) * sizeof(float);
      memcpy(t[0], q + k, tail);
      memcpy(t[1], v + k, tail);
      memcpy(t[2], p0 + k, tail);
      memcpy(t[3], p1 + k, tail);
      for (int u = 0; u < HOT_NV; u++) {
        const int o = u * HOT_W;
        const HOT_VF qk = HOT_FN(loadu)(t[0] + o), vk = HOT_FN(loadu)(t[1] + o);
        s0[u] += vk * HOT_FN(tanh)(HOT_FN(loadu)(t[2] + o) + qk);
        s1[u] += vk * HOT_FN(tanh)(HOT_FN(loadu)(t[3] + o) + qk);
      }
    }
    float h0 = 0.0f, h1 = 0.0f;
    for (int u = 0; u < HOT_NV; u++)
      for (int l = 0; l < HOT_W; l++) {
        h0 += s0[u][l];
        h1 += s1[u][l];
      }
    e[j] = scale * (h0 + bv);
    if (j + 1 < len) e[j + 1] = scale * (h1 + bv);
  }
}

/* e[j] = scale * (h_j . q) for j < len: 16 float partial sums per position
 * (as the additive energies), then the lanes in order: ceil(He / 16) + 16
 * roundings, inside the He-term dot product bound. Replaces cblas_sgemv on
 * these short blocks, where its call and blocking cost more than the dot. */
HOT_ATTR static void HOT_NAME(dot_energies)(int len, int He, const float *restrict h,
                                            const float *restrict q, float scale,
                                            float *restrict e) {
  for (int j = 0; j < len; j++) {
    const float *hj = h + (size_t)j * (size_t)He;
    HOT_VF acc[HOT_NV];
    for (int u = 0; u < HOT_NV; u++) acc[u] = (HOT_VF){0};
    int k = 0;
    for (; k + 16 <= He; k += 16)
      for (int u = 0; u < HOT_NV; u++)
        acc[u] += HOT_FN(loadu)(hj + k + u * HOT_W) * HOT_FN(loadu)(q + k + u * HOT_W);
    if (k < He) {
      float t[2][16] = {{0}};
      const size_t tail = (size_t)(He - k) * sizeof(float);
      memcpy(t[0], hj + k, tail);
      memcpy(t[1], q + k, tail);
      for (int u = 0; u < HOT_NV; u++)
        acc[u] += HOT_FN(loadu)(t[0] + u * HOT_W) * HOT_FN(loadu)(t[1] + u * HOT_W);
    }
    float sum = 0.0f;
    for (int u = 0; u < HOT_NV; u++)
      for (int l = 0; l < HOT_W; l++) sum += acc[u][l];
    e[j] = scale * sum;
  }
}

/* c += sum_i w[i] h_{idx[i]} over the cols elements of c for i < cnt (cnt <=
 * FUSED_BLOCK), keys ld floats apart, each element summed in i order with the
 * same multiply-add per key (fused at x86-64-v4 and v3), as adding the keys
 * one at a time would, whatever the width and whichever columns a call
 * covers. Four vectors of c are held in registers across the block, so c is
 * loaded and stored once per block instead of once per key. */
HOT_ATTR static void HOT_NAME(add_keys)(int cols, int ld, int cnt, const int *restrict idx,
                                        const float *restrict w, const float *restrict keys,
                                        float *restrict c) {
  int k = 0;
  for (; k + 4 * HOT_W <= cols; k += 4 * HOT_W) {
    HOT_VF a0 = HOT_FN(loadu)(c + k), a1 = HOT_FN(loadu)(c + k + HOT_W);
    HOT_VF a2 = HOT_FN(loadu)(c + k + 2 * HOT_W), a3 = HOT_FN(loadu)(c + k + 3 * HOT_W);
    for (int i = 0; i < cnt; i++) {
      const float *hk = keys + (size_t)idx[i] * (size_t)ld + k;
      const HOT_VF wv = (HOT_VF){0} + w[i];
      a0 += wv * HOT_FN(loadu)(hk);
      a1 += wv * HOT_FN(loadu)(hk + HOT_W);
      a2 += wv * HOT_FN(loadu)(hk + 2 * HOT_W);
      a3 += wv * HOT_FN(loadu)(hk + 3 * HOT_W);
    }
    HOT_FN(storeu)(c + k, a0);
    HOT_FN(storeu)(c + k + HOT_W, a1);
    HOT_FN(storeu)(c + k + 2 * HOT_W, a2);
    HOT_FN(storeu)(c + k + 3 * HOT_W, a3);
  }
  for (; k < cols; k += HOT_W) { /* the last vectors, the very last one partial */
    const size_t bytes = (size_t)(cols - k < HOT_W ? cols - k : HOT_W) * sizeof(float);
    HOT_VF acc = {0};
    memcpy(&acc, c + k, bytes);
    for (int i = 0; i < cnt; i++) {
      HOT_VF hv = {0};
      memcpy(&hv, keys + (size_t)idx[i] * (size_t)ld + k, bytes);
      acc += ((HOT_VF){0} + w[i]) * hv;
    }
    memcpy(c + k, &acc, bytes);
  }
}

#undef HOT_NV
