/* The JSON readers' allocations, made cheap for fuzzing.
 *
 * Profiling fuzz_safetensors (perf, call graphs) showed 58% of the time in
 * jansson's json_loadb and most of that in ASan's malloc/free: every JSON value
 * (each object, string, shape entry, offset) is its own allocation, and ASan
 * unwinds and records a stack for each. A 4 KB model header is some 200 values,
 * parsed twice per input (I32 off and on), so the target ran at a tenth of the
 * speed of the others. Here jansson allocates from a bump arena instead, reset
 * after every input. Overflows stay visible: each block is followed by a
 * poisoned redzone and a freed block is poisoned again (use after free inside
 * one input is caught; across inputs the arena is reused). Leaks inside
 * jansson are no longer seen by LeakSanitizer; ours (strdup'd names, tensor
 * arrays) still are, since seqcl's own allocations do not go through here.
 * Only with ASan (the fuzz build); the ordinary replay build keeps malloc. */
#ifndef SQ_FUZZ_JSON_ARENA_H
#define SQ_FUZZ_JSON_ARENA_H

#include <stdlib.h>

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SQ_FUZZ_ARENA 1
#endif
#endif

#ifdef SQ_FUZZ_ARENA
#include <jansson.h>
#include <sanitizer/asan_interface.h>
#include <stdint.h>

#define ARENA_BYTES ((size_t)64 << 20)
#define ARENA_RED 16

typedef struct arena_hdr {
  size_t size;   /* user bytes */
  size_t malloced; /* 1: the arena was full, this block came from malloc */
} arena_hdr;

static unsigned char *arena_mem;
static size_t arena_used;

/* not instrumented for coverage: the allocator's branches are no feedback */
__attribute__((no_sanitize("coverage"))) static void *arena_malloc(size_t n) {
  const size_t need = sizeof(arena_hdr) + ((n + 15) & ~(size_t)15) + ARENA_RED;
  arena_hdr *h;
  if (!arena_mem || arena_used + need > ARENA_BYTES) {
    h = malloc(sizeof *h + n);
    if (!h) return NULL;
    h->malloced = 1;
  } else {
    h = (arena_hdr *)(arena_mem + arena_used);
    arena_used += need;
    ASAN_UNPOISON_MEMORY_REGION(h, sizeof *h + n);
    h->malloced = 0;
  }
  h->size = n;
  return h + 1;
}

__attribute__((no_sanitize("coverage"))) static void arena_free(void *p) {
  if (!p) return;
  arena_hdr *h = (arena_hdr *)p - 1;
  if (h->malloced) {
    free(h);
  } else {
    ASAN_POISON_MEMORY_REGION(p, h->size); /* the header stays readable for a double free */
  }
}

/* jansson's lexer saves every byte it reads with a 1-byte memcpy; jansson is
 * not instrumented, so each call lands in ASan's memcpy interceptor, whose
 * range checks were the next largest cost (a fifth of the time on a model
 * header). ASan's interceptors are weak symbols: this definition takes their
 * place for uninstrumented callers (jansson, libFuzzer itself), while seqcl's
 * instrumented code calls __asan_memcpy and stays fully checked. jansson only
 * ever copies between its own buffers, which ASan never saw the inside of. */
__attribute__((no_sanitize("address", "coverage"), no_builtin("memcpy"))) void *memcpy(
    void *restrict dst, const void *restrict src, size_t n) {
  unsigned char *d = dst;
  const unsigned char *s = src;
  for (; n >= sizeof(uint64_t); n -= sizeof(uint64_t), d += sizeof(uint64_t), s += sizeof(uint64_t)) {
    uint64_t w;
    __builtin_memcpy_inline(&w, s, sizeof w);
    __builtin_memcpy_inline(d, &w, sizeof w);
  }
  while (n--) *d++ = *s++;
  return dst;
}

/* Call once (LLVMFuzzerInitialize or the first input). */
static void sq_fuzz_arena_install(void) {
  if (arena_mem) return;
  arena_mem = malloc(ARENA_BYTES);
  if (!arena_mem) return; /* jansson then simply allocates with malloc */
  ASAN_POISON_MEMORY_REGION(arena_mem, ARENA_BYTES);
  json_set_alloc_funcs(arena_malloc, arena_free);
}

/* Frees what jansson handed out (json_dumps text): with the arena installed
 * that memory is the arena's. */
static inline void sq_fuzz_json_free(void *p) { arena_free(p); }

/* After each input: everything jansson allocated has been freed. */
static void sq_fuzz_arena_reset(void) {
  if (!arena_mem) return;
  ASAN_POISON_MEMORY_REGION(arena_mem, arena_used);
  arena_used = 0;
}
#else
static inline void sq_fuzz_json_free(void *p) { free(p); }
static inline void sq_fuzz_arena_install(void) {}
static inline void sq_fuzz_arena_reset(void) {}
#endif

#endif
