#include <stdint.h>
#include <stdlib.h>

#include "core/grow.h"

void *sq_grow_full(void *arr, size_t *cap, size_t elem, size_t first) {
  if (*cap > SIZE_MAX / 2 / elem) return NULL;
  const size_t want = *cap ? 2 * *cap : first;
  void *p = realloc(arr, want * elem);
  if (p) *cap = want;
  return p;
}
