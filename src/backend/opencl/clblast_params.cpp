// See clblast_params.h. No exception leaves this file: CLBlast's API returns
// status codes, and anything else thrown (std::bad_alloc) becomes "unknown".
#ifndef CL_TARGET_OPENCL_VERSION
#define CL_TARGET_OPENCL_VERSION 120 // as the C files (meson.build)
#endif
#include "backend/opencl/clblast_params.h"

#include <clblast.h>

#include <string>
#include <unordered_map>

extern "C" size_t sq_clblast_min_indirect(cl_device_id device) {
  try {
    std::unordered_map<std::string, size_t> params;
    if (clblast::RetrieveParameters(device, "GemmRoutine", clblast::Precision::kSingle, params) !=
        clblast::StatusCode::kSuccess)
      return 0;
    const auto it = params.find("XGEMM_MIN_INDIRECT_SIZE");
    return it == params.end() ? 0 : it->second;
  } catch (...) {
    return 0;
  }
}
