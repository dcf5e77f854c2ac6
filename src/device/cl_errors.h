/* OpenCL error codes as names, for every message that reports an OpenCL call
 * (device enumeration and the OpenCL backend). Built only with OpenCL. */
#ifndef SQ_DEVICE_CL_ERRORS_H
#define SQ_DEVICE_CL_ERRORS_H

#include <CL/cl.h>

/* "CL_OUT_OF_RESOURCES" etc.; "CL_UNKNOWN_ERROR(-N)" style for unknown codes
 * (returns a static string for known codes, a thread-local buffer otherwise). */
const char *sq_cl_error_name(cl_int err);

#endif
