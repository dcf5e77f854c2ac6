/* The growable arrays of the library (token ids, line offsets, tensor specs,
 * a program's kernels): room for one more element by doubling, in one place. */
#ifndef SQ_CORE_GROW_H
#define SQ_CORE_GROW_H

#include <stddef.h>

/* sq_grow: the array arr of *cap elements of elem bytes, count of them in use,
 * with room for one more: arr itself while count < *cap; else arr reallocated to
 * twice *cap elements (first when *cap is 0), *cap updated. NULL when out of
 * memory or when the size would overflow; arr and *cap are then as they were.
 * sq_grow_full is the reallocation, for an array with no room left. */
void *sq_grow_full(void *arr, size_t *cap, size_t elem, size_t first);
/* Inline: while there is room, a push (one per token read) costs one
 * comparison and no call. */
static inline void *sq_grow(void *arr, size_t *cap, size_t count, size_t elem, size_t first) {
  return count < *cap ? arr : sq_grow_full(arr, cap, elem, first);
}

#endif
