/* Host memory for the library's large arrays: weights, their packed and 16-bit
 * copies, workspaces, a model file's bytes. Each new page of an allocation is
 * a page fault the first time it is written, and in a virtual machine a fault
 * costs microseconds: before this, loading a 5.7 MB model into a `seqcl
 * decode` process took 7 700 faults and most of the process's start-up
 * (bench/RESULTS.md). From SQ_HOSTMEM_HUGE_MIN bytes on, an allocation is aligned
 * to 2 MiB and advised to the kernel's transparent huge pages, one fault per
 * 2 MiB where the kernel allows them (Linux, THP "madvise" or "always");
 * elsewhere it is an ordinary aligned allocation and nothing changes. */
#ifndef SQ_CORE_HOSTMEM_H
#define SQ_CORE_HOSTMEM_H

#include <stddef.h>

/* One huge page on x86-64 and most arm64 kernels, and the size from which
 * an allocation is aligned to it and advised to huge pages: half of one. An
 * allocation between the two takes a whole huge page (at most 1 MiB unused)
 * for one fault instead of up to 512: a batch-64 decode's encoder gates of
 * just under 2 MiB per part took a thousand faults on 4 KiB pages. */
#define SQ_HOSTMEM_HUGE ((size_t)2 << 20)
#define SQ_HOSTMEM_HUGE_MIN (SQ_HOSTMEM_HUGE / 2)

/* bytes (at least one) of uninitialised memory, aligned to 64 bytes (to 2 MiB
 * from SQ_HOSTMEM_HUGE_MIN on), or NULL when out of memory. Released with free();
 * realloc() may move it and lose the larger alignment. The huge pages span
 * whole 2 MiB units of the allocation: its last partial unit too when that is
 * at least a quarter of a unit (a decoder's 3 MB table took 238 faults for its
 * last 0.93 MB), so rounding never costs more than 1.5 MiB. */
void *sq_hostmem_alloc(size_t bytes);

/* The bytes sq_hostmem_alloc(bytes) really allocates: bytes, or the huge
 * pages' span when that is larger (a 1.2 MiB buffer takes 2 MiB). */
size_t sq_hostmem_capacity(size_t bytes);

/* As sq_hostmem_alloc, zero-filled. */
void *sq_hostmem_zalloc(size_t bytes);

/* Where sq_hostmem_alloc(bytes) advises huge pages: *len bytes from its start
 * (0: none). Exposed for the tests. */
void sq_hostmem_huge_span(size_t bytes, size_t *len);

#endif
