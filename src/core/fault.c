#include "core/fault.h"

#ifdef SEQCL_FAULT_INJECTION
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Remaining events before the failure, per kind; 0 = disarmed. */
static atomic_uint countdown[SQ_FAULT_KINDS_];

/* Test-only: SEQCL_FAULT=alloc:N, build:N or launch:N arms the hook once per
 * process, before the first event, so that a test can make the Nth event of an
 * unmodified program (the seqcl CLI) fail. Builds without fault injection
 * ignore the variable. */
static pthread_once_t env_once = PTHREAD_ONCE_INIT;

static void check_gemm_env(void);

static void arm_from_env(void) {
  check_gemm_env();
  const char *v = getenv("SEQCL_FAULT");
  if (!v || !*v) return;
  static const char *const names[SQ_FAULT_KINDS_] = {"alloc", "build", "launch"};
  for (int k = 0; k < SQ_FAULT_KINDS_; k++) {
    size_t n = strlen(names[k]);
    if (strncmp(v, names[k], n) != 0 || v[n] != ':') continue;
    char *end = NULL;
    unsigned long count = strtoul(v + n + 1, &end, 10);
    if (end != v + n + 1 && *end == '\0' && count > 0 && count <= 0xffffffffUL) {
      atomic_store(&countdown[k], (unsigned)count);
      return;
    }
    break;
  }
  fprintf(stderr, "seqcl: ignoring SEQCL_FAULT='%s' (expected alloc:N, build:N or launch:N)\n", v);
}

void sq_fault_arm(sq_fault_kind kind, unsigned n) {
  pthread_once(&env_once, arm_from_env);
  if ((unsigned)kind < SQ_FAULT_KINDS_) atomic_store(&countdown[kind], n);
}

int sq_fault_hit(sq_fault_kind kind) {
  pthread_once(&env_once, arm_from_env);
  if ((unsigned)kind >= SQ_FAULT_KINDS_) return 0;
  unsigned cur = atomic_load(&countdown[kind]);
  while (cur != 0) {
    if (atomic_compare_exchange_weak(&countdown[kind], &cur, cur - 1)) return cur == 1;
  }
  return 0;
}

unsigned sq_fault_pending(sq_fault_kind kind) {
  pthread_once(&env_once, arm_from_env);
  return (unsigned)kind < SQ_FAULT_KINDS_ ? atomic_load(&countdown[kind]) : 0;
}

/* SEQCL_FAULT_GEMM names a GEMM path; another value would break nothing and
 * let the test that set it pass for the wrong reason, so it is reported the
 * way SEQCL_FAULT is (once, with the first fault event of the process). */
static void check_gemm_env(void) {
  const char *v = getenv("SEQCL_FAULT_GEMM");
  if (!v || !*v) return;
  static const char *const paths[] = {"small", "direct", "indirect", "batched", "unloadable"};
  for (size_t i = 0; i < sizeof paths / sizeof paths[0]; i++)
    if (!strcmp(v, paths[i])) return;
  fprintf(stderr,
          "seqcl: ignoring SEQCL_FAULT_GEMM='%s' (expected small, direct, indirect, batched or "
          "unloadable)\n",
          v);
}

int sq_fault_gemm(const char *path) {
  const char *v = getenv("SEQCL_FAULT_GEMM");
  return v && !strcmp(v, path);
}
#else
/* ISO C forbids an empty translation unit. */
typedef int sq_fault_unused_;
#endif
