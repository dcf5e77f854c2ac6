/* Standalone reproducer: llvmpipe (Mesa's rusticl on its software device)
 * stops a work-item's loops after 65535 iterations in all, without an error.
 *
 * One work-item copies n floats in a plain loop. Every OpenCL implementation
 * must copy all n; on rusticl 22.3.6 / llvmpipe the copy stops at element
 * 65535 (gallivm's loop limiter, LP_MAX_TGSI_LOOP_ITERATIONS, counts the
 * back-edges of every loop of a shader invocation together).
 *
 *   cc -std=c11 -Wall -Wextra -o loop_limit tools/repro/llvmpipe_loop_limit.c -lOpenCL
 *   RUSTICL_ENABLE=llvmpipe ./loop_limit rusticl 65536     # exit 1: 1 wrong
 *   ./loop_limit "Portable Computing" 65536                # exit 0
 *
 * Arguments: a substring of the platform name, the element count. */
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *SRC =
    "__kernel void copy(int n, __global const float *a, __global float *b) {\n"
    "  for (int i = 0; i < n; ++i) b[i] = a[i];\n"
    "}\n";

static int fail(const char *what, cl_int err) {
  fprintf(stderr, "%s failed: %d\n", what, (int)err);
  return 2;
}

int main(int argc, char **argv) {
  const char *want = argc > 1 ? argv[1] : "rusticl";
  const int n = argc > 2 ? atoi(argv[2]) : 65536;
  if (n <= 0) return fail("element count", 0);
  cl_platform_id plats[16], plat = NULL;
  cl_uint np = 0;
  cl_int err = clGetPlatformIDs(16, plats, &np);
  if (err != CL_SUCCESS) return fail("clGetPlatformIDs", err);
  for (cl_uint i = 0; i < np && !plat; i++) {
    char name[256] = "";
    clGetPlatformInfo(plats[i], CL_PLATFORM_NAME, sizeof name, name, NULL);
    if (strstr(name, want)) plat = plats[i];
  }
  if (!plat) {
    fprintf(stderr, "no platform matching \"%s\" (rusticl needs RUSTICL_ENABLE=llvmpipe)\n", want);
    return 2;
  }
  cl_device_id dev;
  if ((err = clGetDeviceIDs(plat, CL_DEVICE_TYPE_ALL, 1, &dev, NULL)) != CL_SUCCESS)
    return fail("clGetDeviceIDs", err);
  cl_context ctx = clCreateContext(NULL, 1, &dev, NULL, NULL, &err);
  if (err != CL_SUCCESS) return fail("clCreateContext", err);
  cl_command_queue q = clCreateCommandQueue(ctx, dev, 0, &err);
  if (err != CL_SUCCESS) return fail("clCreateCommandQueue", err);
  cl_program prog = clCreateProgramWithSource(ctx, 1, &SRC, NULL, &err);
  if (err != CL_SUCCESS) return fail("clCreateProgramWithSource", err);
  if ((err = clBuildProgram(prog, 1, &dev, "", NULL, NULL)) != CL_SUCCESS)
    return fail("clBuildProgram", err);
  cl_kernel k = clCreateKernel(prog, "copy", &err);
  if (err != CL_SUCCESS) return fail("clCreateKernel", err);

  const size_t bytes = (size_t)n * sizeof(float);
  float *a = malloc(bytes), *b = malloc(bytes);
  if (!a || !b) return fail("malloc", 0);
  for (int i = 0; i < n; i++) a[i] = (float)i + 1.0f, b[i] = 0.0f;
  cl_mem da = clCreateBuffer(ctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, bytes, a, &err);
  if (err != CL_SUCCESS) return fail("clCreateBuffer(a)", err);
  cl_mem db = clCreateBuffer(ctx, CL_MEM_WRITE_ONLY | CL_MEM_COPY_HOST_PTR, bytes, b, &err);
  if (err != CL_SUCCESS) return fail("clCreateBuffer(b)", err);
  clSetKernelArg(k, 0, sizeof n, &n);
  clSetKernelArg(k, 1, sizeof da, &da);
  clSetKernelArg(k, 2, sizeof db, &db);
  const size_t one = 1;
  if ((err = clEnqueueNDRangeKernel(q, k, 1, NULL, &one, &one, 0, NULL, NULL)) != CL_SUCCESS)
    return fail("clEnqueueNDRangeKernel", err);
  if ((err = clEnqueueReadBuffer(q, db, CL_TRUE, 0, bytes, b, 0, NULL, NULL)) != CL_SUCCESS)
    return fail("clEnqueueReadBuffer", err);

  int wrong = 0, first = -1;
  for (int i = 0; i < n; i++)
    if (b[i] != a[i]) {
      if (first < 0) first = i;
      wrong++;
    }
  char dname[256] = "", dver[256] = "";
  clGetDeviceInfo(dev, CL_DEVICE_NAME, sizeof dname, dname, NULL);
  clGetDeviceInfo(dev, CL_DRIVER_VERSION, sizeof dver, dver, NULL);
  printf("%s (driver %s): one work-item copied %d floats, %d wrong", dname, dver, n, wrong);
  if (wrong) printf(" (first at %d)", first);
  printf("\n");
  clReleaseMemObject(da);
  clReleaseMemObject(db);
  clReleaseKernel(k);
  clReleaseProgram(prog);
  clReleaseCommandQueue(q);
  clReleaseContext(ctx);
  free(a);
  free(b);
  return wrong ? 1 : 0;
}
