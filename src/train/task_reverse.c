/* The digit-reversal task of the chapter 8 script: sources are `length`
 * random digits 0-9 (no BOS/EOS), targets BOS + the reversed digits + EOS. */
#include "train/task.h"

void sq_task_reverse_batch(sq_trng *r, int n, int length, int bos, int eos, int32_t *src,
                           int32_t *lens, int32_t *tgt) {
  for (int i = 0; i < n; i++) {
    int32_t *s = src + (size_t)i * length;
    int32_t *t = tgt + (size_t)i * (length + 2);
    for (int j = 0; j < length; j++) s[j] = sq_trng_below(r, 10);
    t[0] = bos;
    for (int j = 0; j < length; j++) t[1 + j] = s[length - 1 - j];
    t[length + 1] = eos;
    lens[i] = length;
  }
}
