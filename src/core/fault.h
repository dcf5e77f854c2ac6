/* Fault injection for tests: make the Nth allocation, program build or kernel
 * enqueue fail, so error paths can be exercised without a broken driver.
 * Compiled in only when the fault_injection option is on (SEQCL_FAULT_INJECTION:
 * its auto default follows the build type, on in debug and debugoptimized builds,
 * off in release ones); otherwise sq_fault_hit is a constant 0 and costs nothing. */
#ifndef SQ_CORE_FAULT_H
#define SQ_CORE_FAULT_H

typedef enum sq_fault_kind {
  SQ_FAULT_ALLOC = 0,  /* buffer allocation */
  SQ_FAULT_BUILD = 1,  /* program build */
  SQ_FAULT_LAUNCH = 2, /* kernel enqueue */
  SQ_FAULT_KINDS_ = 3
} sq_fault_kind;

#ifdef SEQCL_FAULT_INJECTION
/* The nth (1-based) next event of this kind fails; n = 0 disarms. Process-wide.
 * The environment variable SEQCL_FAULT=alloc:N|build:N|launch:N (test-only; see
 * fault.c) arms one kind the same way before the process's first event. */
void sq_fault_arm(sq_fault_kind kind, unsigned n);
/* Counts one event of this kind; 1 when it is the armed one (which disarms it). */
int sq_fault_hit(sq_fault_kind kind);
/* Events of this kind still to come before the armed failure (0: disarmed, or
 * the armed failure already happened): tells a test whether its fault was hit. */
unsigned sq_fault_pending(sq_fault_kind kind);
/* Test-only: SEQCL_FAULT_GEMM=small|direct|indirect|batched makes every GEMM
 * that takes that path (the device's own kernel; CLBlast's direct or indirect
 * path; a CLBlast strided-batched call) come back with a wrong C, so a test
 * can show the self-check runs that path and fails on it. Read at every call;
 * but "unloadable", which makes loading CLBlast fail, is read once, when the
 * process first loads it (backend/opencl/clblast_lib.c). */
int sq_fault_gemm(const char *path);
#else
static inline int sq_fault_hit(sq_fault_kind kind) {
  (void)kind;
  return 0;
}
static inline int sq_fault_gemm(const char *path) {
  (void)path;
  return 0;
}
#endif

#endif
