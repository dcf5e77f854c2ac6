/* Host buffers kept for reuse instead of freed. A decode allocates its
 * encoder outputs and step workspaces again for every batch (and every part
 * of a split batch): at source length 100 and batch 64 the keys alone are
 * 6.5 MB, at batch 64 of 20 positions each part's encoder gates are just
 * under 2 MiB. Freed, such a block goes back to the kernel (glibc maps
 * blocks of this size on their own) and the next batch's is new memory,
 * every page of it faulted and zeroed again: on huge pages (core/hostmem.h)
 * that made an S 100 decode 10 % slower than glibc's reuse of its heap, and
 * on 4 KiB pages a batch-64 `seqcl decode` took 3 500 faults, two thirds of
 * them the GEMMs' first writes to new outputs. Kept, the next batch takes
 * the block as it is: buffers hold no promise of contents.
 *
 * Blocks of SQ_HOST_BLOCKS_MIN bytes or more are kept, at most
 * SQ_HOST_BLOCKS_MAX of them and KEEP_MAX_BYTES in all, the oldest freed
 * first; a take fits a request into a block at most a quarter larger than
 * what a new allocation for it would hold (sq_hostmem_capacity), so a smaller
 * last batch still reuses the full batches' blocks. Blocks are counted at
 * what they hold, huge pages' rounding included. */
#include "backend/host/host_blocks.h"

#include <stdlib.h>

#include "core/hostmem.h"

#define KEEP_MAX_BYTES ((size_t)256 << 20)

void sq_host_blocks_init(sq_host_blocks *b) {
  pthread_mutex_init(&b->lock, NULL);
  b->n = 0;
  b->total = 0;
}

/* Removes entry i, keeping the others in the order they were freed. */
static void *drop(sq_host_blocks *b, int i) {
  void *mem = b->kept[i].mem;
  b->total -= b->kept[i].bytes;
  for (int j = i + 1; j < b->n; j++) b->kept[j - 1] = b->kept[j];
  b->n--;
  return mem;
}

void *sq_host_blocks_take(sq_host_blocks *b, size_t bytes, size_t *capacity) {
  *capacity = 0;
  if (bytes < SQ_HOST_BLOCKS_MIN) return NULL;
  /* measured against what a new allocation would take: a 6.5 MB buffer
   * takes 8 MiB of huge pages, and its own block, handed back, must fit it */
  const size_t fresh = sq_hostmem_capacity(bytes);
  void *mem = NULL;
  pthread_mutex_lock(&b->lock);
  int best = -1;
  for (int i = 0; i < b->n; i++) {
    const size_t have = b->kept[i].bytes;
    if (have >= bytes && have <= fresh + fresh / 4 && (best < 0 || have < b->kept[best].bytes))
      best = i;
  }
  if (best >= 0) {
    *capacity = b->kept[best].bytes;
    mem = drop(b, best);
  }
  pthread_mutex_unlock(&b->lock);
  return mem;
}

void sq_host_blocks_give(sq_host_blocks *b, void *mem, size_t bytes) {
  if (!mem) return;
  if (bytes < SQ_HOST_BLOCKS_MIN || bytes > KEEP_MAX_BYTES) {
    free(mem);
    return;
  }
  void *evicted[SQ_HOST_BLOCKS_MAX];
  int ne = 0;
  pthread_mutex_lock(&b->lock);
  while (b->n && (b->n == SQ_HOST_BLOCKS_MAX || b->total + bytes > KEEP_MAX_BYTES))
    evicted[ne++] = drop(b, 0);
  b->kept[b->n++] = (sq_host_block){mem, bytes};
  b->total += bytes;
  pthread_mutex_unlock(&b->lock);
  for (int i = 0; i < ne; i++) free(evicted[i]);
}

void sq_host_blocks_release(sq_host_blocks *b) {
  pthread_mutex_lock(&b->lock);
  for (int i = 0; i < b->n; i++) free(b->kept[i].mem);
  b->n = 0;
  b->total = 0;
  pthread_mutex_unlock(&b->lock);
  pthread_mutex_destroy(&b->lock);
}
