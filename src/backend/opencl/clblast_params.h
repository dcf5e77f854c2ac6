/* CLBlast's own choice between its two GEMM paths, read from its database.
 *
 * CLBlast (1.5.x) runs a GEMM with its "direct" kernel when M*N*K < T^3 and
 * with its "indirect" one (operands copied and padded into tiles, then the
 * tuned Xgemm kernel) otherwise; T is XGEMM_MIN_INDIRECT_SIZE of its
 * "GemmRoutine" database entry for the device (896 for devices it has no
 * entry for, such as PoCL, rusticl and Oclgrind). The two paths are
 * different code with different bugs, so the self-check runs both. CLBlast
 * reads its database only through its C++ API, hence this one C++ file. */
#ifndef SQ_BACKEND_OPENCL_CLBLAST_PARAMS_H
#define SQ_BACKEND_OPENCL_CLBLAST_PARAMS_H

#include <CL/cl.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* T for single precision on `device`; 0 when CLBlast cannot say. */
size_t sq_clblast_min_indirect(cl_device_id device);

#ifdef __cplusplus
}
#endif

#endif
