/* CLBlast, loaded when the first OpenCL device opens instead of with every
 * process. Linked, its C++ relocations and static tables cost about 5 ms of
 * each process's start-up (bench/RESULTS.md), paid by `seqcl decode --device
 * cpu` too, which never calls it. clblast_c.h still gives the types and the
 * codes; only the entry points come from here. */
#ifndef SQ_BACKEND_OPENCL_CLBLAST_LIB_H
#define SQ_BACKEND_OPENCL_CLBLAST_LIB_H

#include <clblast_c.h>

typedef struct sq_clblast {
  __typeof__(CLBlastSgemm) *sgemm;
  __typeof__(CLBlastSgemmStridedBatched) *sgemm_strided_batched;
  __typeof__(CLBlastOverrideParameters) *override_parameters;
  __typeof__(CLBlastClearCache) *clear_cache;
} sq_clblast;

/* The entry points, the library loaded on the first call (once per process,
 * thread-safe, never unloaded); NULL when it or one of them is missing, with
 * *why saying which (the loader's own message). */
const sq_clblast *sq_clblast_get(const char **why);

/* Another symbol of the loaded library (clblast_params.cpp's C++ one), or
 * NULL when it is missing or the library is not loaded. */
void *sq_clblast_symbol(const char *name);

#endif
