/* host_vmath.h: the 16-lane functions of host_math.h behind one clone-compiled
 * loop, the way additive_energies and gates_row call them; the instruction
 * set level the per-width loops run at (host_math.h, sq_host_isa). */
#include "backend/host/host_vmath.h"

#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

#include "backend/host/host_math.h"
#include "core/settings.h"

SQ_IGNORE_PSABI /* static code only: no ABI is exposed */

SQ_HOT_CLONES
void sq_host_vmath16(sq_vmath_fn fn, int n, const float *x, float *y) {
  for (int i = 0; i < n; i += SQ_VW16) {
    const size_t lanes = (size_t)(n - i < SQ_VW16 ? n - i : SQ_VW16);
    sq_vf16 v = {0}, r;
    memcpy(&v, x + i, lanes * sizeof(float));
    switch (fn) {
    case SQ_VMATH_EXP: r = sq_v16_exp(v); break;
    case SQ_VMATH_TANH: r = sq_v16_tanh(v); break;
    default: r = sq_v16_sigmoid(v); break;
    }
    memcpy(y + i, &r, lanes * sizeof(float));
  }
}

static _Atomic int isa_limit = -1;

void sq_host_isa_limit(int level) { atomic_store_explicit(&isa_limit, level, memory_order_relaxed); }

static pthread_once_t level_once = PTHREAD_ONCE_INIT;
static int cpu_level; /* the CPU's level capped by SEQCL_HOST_ISA, set once */

static void read_level(void) {
#if SQ_HOT_BY_WIDTH
  __builtin_cpu_init();
  int level = __builtin_cpu_supports("x86-64-v4")   ? 4
              : __builtin_cpu_supports("x86-64-v3") ? 3
                                                    : 0;
#else
  int level = 0;
#endif
  const int env = sq_host_isa_env(NULL); /* an invalid value fails at the context */
  if (env >= 0 && env < level) level = env;
  cpu_level = level;
}

int sq_host_isa(void) {
  pthread_once(&level_once, read_level);
  const int limit = atomic_load_explicit(&isa_limit, memory_order_relaxed);
  return limit >= 0 && limit < cpu_level ? limit : cpu_level;
}
