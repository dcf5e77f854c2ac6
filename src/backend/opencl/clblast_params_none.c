/* clblast_params.h without C++ (fuzz builds, src/backend/opencl/meson.build):
 * the threshold is unknown, so the self-check leaves CLBlast's indirect path
 * out rather than guess which products take it. */
#include "backend/opencl/clblast_params.h"

size_t sq_clblast_min_indirect(cl_device_id device) {
  (void)device;
  return 0;
}
