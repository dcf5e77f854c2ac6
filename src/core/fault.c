#include "core/fault.h"

#ifdef SEQCL_FAULT_INJECTION
#include <stdatomic.h>

/* Remaining events before the failure, per kind; 0 = disarmed. */
static atomic_uint countdown[SQ_FAULT_KINDS_];

void sq_fault_arm(sq_fault_kind kind, unsigned n) {
  if ((unsigned)kind < SQ_FAULT_KINDS_) atomic_store(&countdown[kind], n);
}

int sq_fault_hit(sq_fault_kind kind) {
  if ((unsigned)kind >= SQ_FAULT_KINDS_) return 0;
  unsigned cur = atomic_load(&countdown[kind]);
  while (cur != 0) {
    if (atomic_compare_exchange_weak(&countdown[kind], &cur, cur - 1)) return cur == 1;
  }
  return 0;
}
#else
/* ISO C forbids an empty translation unit. */
typedef int sq_fault_unused_;
#endif
