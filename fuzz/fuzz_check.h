/* Shared by the fuzz targets and their replay test: the libFuzzer entry points
 * and the invariant check. A failed invariant traps (SIGILL), which libFuzzer
 * reports as a crash with the input saved, and which fails the replay test.
 * The message goes to stdout: scripts/fuzz.sh closes the targets' stderr
 * (-close_fd_mask=2) to mute the readers' warnings. */
#ifndef SQ_FUZZ_CHECK_H
#define SQ_FUZZ_CHECK_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* For a target's own checking loops (per element of a tensor, per byte):
 * their branches are no feedback for the fuzzer, and instrumenting them for
 * coverage cost a sixth of the safetensors target's time. */
#if defined(__clang__)
#define FUZZ_NO_COVERAGE __attribute__((no_sanitize("coverage")))
#else
#define FUZZ_NO_COVERAGE
#endif

#define FUZZ_CHECK(cond)                                                               \
  do {                                                                                 \
    if (!(cond)) {                                                                     \
      printf("%s:%d: invariant violated: %s\n", __FILE__, __LINE__, #cond);            \
      fflush(stdout);                                                                  \
      __builtin_trap();                                                                \
    }                                                                                  \
  } while (0)

#endif
