/* Large buffers kept for reuse (host_blocks.c). */
#ifndef SQ_BACKEND_HOST_BLOCKS_H
#define SQ_BACKEND_HOST_BLOCKS_H

#include <pthread.h>
#include <stddef.h>

/* Blocks kept at most, and the smallest size kept (host_blocks.c). */
enum { SQ_HOST_BLOCKS_MAX = 64 };
#define SQ_HOST_BLOCKS_MIN ((size_t)64 << 10)

typedef struct sq_host_block {
  void *mem;
  size_t bytes; /* what it was allocated for (sq_hostmem_alloc) */
} sq_host_block;

typedef struct sq_host_blocks {
  pthread_mutex_t lock;
  sq_host_block kept[SQ_HOST_BLOCKS_MAX];
  int n;
  size_t total; /* bytes kept */
} sq_host_blocks;

void sq_host_blocks_init(sq_host_blocks *b);
/* A kept block for a buffer of `bytes` (removed from the list), its size in
 * *capacity; or NULL. The block is the smallest that holds `bytes` and is at
 * most a quarter larger than sq_hostmem_capacity(bytes). */
void *sq_host_blocks_take(sq_host_blocks *b, size_t bytes, size_t *capacity);
/* Frees mem (of `bytes`: sq_hostmem_capacity of what sq_hostmem_alloc was
 * asked, or a take's *capacity) or keeps it for a later take. */
void sq_host_blocks_give(sq_host_blocks *b, void *mem, size_t bytes);
/* Frees every kept block. */
void sq_host_blocks_release(sq_host_blocks *b);

#endif
