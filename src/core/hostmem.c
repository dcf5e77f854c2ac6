/* Large host allocations on transparent huge pages (hostmem.h). */
#include "core/hostmem.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

enum { SQ_HOSTMEM_ALIGN = 64 };

void sq_hostmem_huge_span(size_t bytes, size_t *len) {
  *len = 0;
  if (bytes < SQ_HOSTMEM_HUGE_MIN) return;
  const size_t whole = bytes / SQ_HOSTMEM_HUGE * SQ_HOSTMEM_HUGE;
  const size_t tail = bytes - whole;
  *len = tail >= SQ_HOSTMEM_HUGE / 4 ? whole + SQ_HOSTMEM_HUGE : whole;
}

size_t sq_hostmem_capacity(size_t bytes) {
  if (bytes == 0) bytes = 1;
  size_t huge = 0;
  sq_hostmem_huge_span(bytes, &huge);
  return huge > bytes ? huge : bytes;
}

void *sq_hostmem_alloc(size_t bytes) {
  if (bytes == 0) bytes = 1;
  size_t huge = 0;
  sq_hostmem_huge_span(bytes, &huge);
  /* the allocation covers every byte the advice names, so that no huge page
   * spans memory that belongs to someone else (sq_hostmem_capacity) */
  const size_t want = huge > bytes ? huge : bytes;
  void *p = NULL;
  if (posix_memalign(&p, huge ? SQ_HOSTMEM_HUGE : SQ_HOSTMEM_ALIGN, want) != 0) return NULL;
#ifdef MADV_HUGEPAGE
  /* advice only: a kernel without huge pages (or with THP "never") refuses
   * it, and the memory works as it would have */
  if (huge) (void)madvise(p, huge, MADV_HUGEPAGE);
#endif
  return p;
}

void *sq_hostmem_zalloc(size_t bytes) {
  void *p = sq_hostmem_alloc(bytes);
  if (p) memset(p, 0, bytes ? bytes : 1);
  return p;
}
