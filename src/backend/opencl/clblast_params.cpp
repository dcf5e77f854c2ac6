// See clblast_params.h. No exception leaves this file: CLBlast's API returns
// status codes, and anything else thrown (std::bad_alloc) becomes "unknown".
#ifndef CL_TARGET_OPENCL_VERSION
#define CL_TARGET_OPENCL_VERSION 120 // as the C files (meson.build)
#endif
#include "backend/opencl/clblast_params.h"

#include <clblast.h>

#include <cstring>
#include <string>
#include <unordered_map>

// RetrieveParameters by its symbol in the CLBlast that clblast_lib.c loaded
// (1.5.x, the C++11 std::string ABI): decltype names its type without linking
// it; a library that spells it otherwise leaves the threshold unknown, which
// the self-check's test of the indirect path would show.
extern "C" void *sq_clblast_symbol(const char *name); // clblast_lib.h

static const char retrieve_symbol[] =
    "_ZN7clblast18RetrieveParametersEP13_cl_device_idRKNSt7__cxx1112basic_stringIcSt11char_"
    "traitsIcESaIcEEENS_9PrecisionERSt13unordered_mapIS7_mSt4hashIS7_ESt8equal_toIS7_ESaISt4pairIS8_"
    "mEEE";

extern "C" size_t sq_clblast_min_indirect(cl_device_id device) {
  try {
    using retrieve_fn = decltype(&clblast::RetrieveParameters);
    void *sym = sq_clblast_symbol(retrieve_symbol);
    if (!sym) return 0;
    retrieve_fn retrieve;
    std::memcpy(&retrieve, &sym, sizeof sym);
    std::unordered_map<std::string, size_t> params;
    if (retrieve(device, "GemmRoutine", clblast::Precision::kSingle, params) !=
        clblast::StatusCode::kSuccess)
      return 0;
    const auto it = params.find("XGEMM_MIN_INDIRECT_SIZE");
    return it == params.end() ? 0 : it->second;
  } catch (...) {
    return 0;
  }
}
