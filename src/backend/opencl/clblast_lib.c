/* clblast_lib.h: dlopen of CLBlast under the names Debian and the upstream
 * build install it as, its entry points looked up once. */
#include "backend/opencl/clblast_lib.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "core/fault.h"

static pthread_once_t once = PTHREAD_ONCE_INIT;
static void *handle;
static sq_clblast api;
static int loaded;
static char why_not[512];

/* dlsym's void * into a function pointer: POSIX guarantees it converts; the
 * memcpy keeps -Wpedantic quiet about the cast. */
#define SQ_LOOKUP(field, sym)                                                      \
  do {                                                                             \
    void *p_ = dlsym(handle, sym);                                                 \
    if (!p_) {                                                                     \
      snprintf(why_not, sizeof why_not, "CLBlast has no %s: %s", sym, dlerror());  \
      return;                                                                      \
    }                                                                              \
    memcpy(&api.field, &p_, sizeof p_);                                            \
  } while (0)

static void load(void) {
  static const char *const names[] = {"libclblast.so.1", "libclblast.so"};
  /* the test hook (core/fault.h) asks for a library no system has */
  static const char *const missing[] = {"libclblast-seqcl-test-missing.so.1"};
  const int fail = sq_fault_gemm("unloadable");
  const size_t n = fail ? 1 : sizeof names / sizeof names[0];
  for (size_t i = 0; i < n && !handle; i++) {
    handle = dlopen(fail ? missing[i] : names[i], RTLD_NOW | RTLD_LOCAL);
    if (!handle)
      snprintf(why_not, sizeof why_not, "cannot load CLBlast (libclblast.so.1): %s", dlerror());
  }
  if (!handle) return;
  SQ_LOOKUP(sgemm, "CLBlastSgemm");
  SQ_LOOKUP(sgemm_strided_batched, "CLBlastSgemmStridedBatched");
  SQ_LOOKUP(override_parameters, "CLBlastOverrideParameters");
  SQ_LOOKUP(clear_cache, "CLBlastClearCache");
  loaded = 1;
}

const sq_clblast *sq_clblast_get(const char **why) {
  pthread_once(&once, load);
  if (why) *why = loaded ? NULL : why_not;
  return loaded ? &api : NULL;
}

void *sq_clblast_symbol(const char *name) {
  pthread_once(&once, load);
  return loaded ? dlsym(handle, name) : NULL;
}
