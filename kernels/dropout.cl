/* Inverted dropout (src/backend/backend.h, sq_dropout_args): one work-item
 * per element, its keep bit from Philox4x32-10 in 32-bit integer arithmetic,
 * the same as src/backend/host/host_dropout.c, so every device draws the
 * host's mask. Element e = r * cols + c uses word e % 4 of the block at
 * counter {e / 4, c1, c2, c3}. */

static uint philox_word(uint c0, uint c1, uint c2, uint c3, uint k0, uint k1, uint lane) {
  for (int i = 0; i < 10; i++) {
    const uint n0 = mul_hi(0xCD9E8D57u, c2) ^ c1 ^ k0, n2 = mul_hi(0xD2511F53u, c0) ^ c3 ^ k1;
    c1 = 0xCD9E8D57u * c2;
    c3 = 0xD2511F53u * c0;
    c0 = n0;
    c2 = n2;
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  /* an indexed array, not a chain of ?: (Oclgrind returned c3 for lanes 0
   * and 1 of that chain for some blocks) */
  const uint w[4] = {c0, c1, c2, c3};
  return w[lane];
}

__kernel void dropout(int rows, int cols, __global const float *x, int x_off, int ldx,
                      __global float *y, int y_off, int ldy, uint k0, uint k1, uint c1, uint c2,
                      uint c3, uint threshold, float scale) {
  const int c = get_global_id(0), r = get_global_id(1);
  if (c >= cols || r >= rows) return;
  const ulong e = (ulong)r * (ulong)cols + (ulong)c;
  const uint w = philox_word((uint)(e >> 2), c1, c2, c3, k0, k1, (uint)(e & 3));
  const float v = x[x_off + (size_t)r * ldx + c];
  y[y_off + (size_t)r * ldy + c] = w >= threshold ? v * scale : 0.0f;
}
