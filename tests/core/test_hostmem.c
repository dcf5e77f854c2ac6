/* The library's large host allocations (core/hostmem.h): alignment, zero
 * filling, where huge pages are advised, and that they take: with the kernel's
 * transparent huge pages on ("madvise" or "always"), writing all of an 8 MiB
 * allocation costs a few page faults where 4 KiB pages would cost 2 048. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include <cmocka.h>

#include "../common/test_main.h"
#include "core/hostmem.h"

#if defined(__SANITIZE_ADDRESS__)
#define HOSTMEM_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define HOSTMEM_SANITIZED 1
#endif
#endif

static const size_t MIB = (size_t)1 << 20;

/* The span rule: nothing below 1 MiB; one unit from 1 MiB to 2 MiB; whole
 * units; the last partial unit when it is at least a quarter of a unit. */
static void huge_span_rule(void **state) {
  (void)state;
  static const struct {
    size_t bytes, span;
  } cases[] = {
      {1, 0},
      {MIB - 1, 0},
      {MIB, 2 * MIB},
      {MIB + 12345, 2 * MIB},
      {2 * MIB - 1, 2 * MIB},
      {2 * MIB, 2 * MIB},
      {2 * MIB + 1, 2 * MIB},
      {2 * MIB + MIB / 2 - 1, 2 * MIB},
      {2 * MIB + MIB / 2, 4 * MIB},
      {3 * MIB, 4 * MIB},
      {4 * MIB - 64, 4 * MIB},
      {4 * MIB + 12345, 4 * MIB},
      {5 * MIB + 12345, 6 * MIB},
      {6 * MIB + MIB / 2 - 4096, 6 * MIB},
      {7 * MIB, 8 * MIB},
      {8 * MIB + MIB / 2 - 1, 8 * MIB},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    size_t len = 99;
    sq_hostmem_huge_span(cases[i].bytes, &len);
    if (len != cases[i].span)
      fail_msg("%zu bytes: huge span %zu, want %zu", cases[i].bytes, len, cases[i].span);
  }
}

/* Alignment (64 bytes, 2 MiB from 1 MiB on), every byte writable and kept,
 * zalloc zero-filled, free() releases it; sizes 0, 1, primes and the edges. */
static void alignment_and_contents(void **state) {
  (void)state;
  static const size_t sizes[] = {0,           1,       63,          4099,           1000003,
                                 MIB + 4099, 2 * MIB, 2 * MIB - 1, 3 * MIB + 7, 5 * MIB + 12345};
  for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
    const size_t n = sizes[i], align = n >= SQ_HOSTMEM_HUGE_MIN ? SQ_HOSTMEM_HUGE : 64;
    unsigned char *p = sq_hostmem_alloc(n), *z = sq_hostmem_zalloc(n);
    assert_non_null(p);
    assert_non_null(z);
    assert_int_equal((uintptr_t)p % align, 0);
    assert_int_equal((uintptr_t)z % align, 0);
    for (size_t k = 0; k < n; k++)
      if (z[k]) fail_msg("%zu bytes: zalloc byte %zu is %d", n, k, z[k]);
    for (size_t k = 0; k < n; k++) p[k] = (unsigned char)(k * 131u + 7u);
    for (size_t k = 0; k < n; k++)
      if (p[k] != (unsigned char)(k * 131u + 7u)) fail_msg("%zu bytes: byte %zu changed", n, k);
    free(p);
    free(z);
  }
}

static long minor_faults(void) {
  struct rusage r;
  getrusage(RUSAGE_SELF, &r);
  return r.ru_minflt;
}

/* Linux with THP "always" or "madvise": an 8 MiB allocation written whole
 * takes at most a quarter of the faults of 4 KiB pages (4 huge pages: a few
 * faults; the limit leaves room for a kernel that falls back on some). Skipped
 * where THP is off, absent, or under AddressSanitizer (its allocator). */
static void huge_pages_take(void **state) {
  (void)state;
#ifdef HOSTMEM_SANITIZED
  skip();
#endif
  FILE *f = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
  if (!f) skip();
  char mode[128] = {0};
  const int got = fgets(mode, sizeof mode, f) != NULL;
  fclose(f);
  if (!got || (!strstr(mode, "[always]") && !strstr(mode, "[madvise]"))) skip();
  const size_t n = 8 * MIB;
  const long small_pages = (long)(n / 4096);
  const long f0 = minor_faults();
  unsigned char *p = sq_hostmem_alloc(n);
  assert_non_null(p);
  memset(p, 0x5a, n);
  const long faults = minor_faults() - f0;
  free(p);
  if (faults > small_pages / 4)
    fail_msg("writing %zu bytes took %ld page faults (4 KiB pages: %ld): no huge pages", n,
             faults, small_pages);
}

SQ_TEST_MAIN(NULL, NULL, cmocka_unit_test(huge_span_rule),
             cmocka_unit_test(alignment_and_contents), cmocka_unit_test(huge_pages_take))
