/* The copy kernel `seqcl bench` measures the device's memory bandwidth with:
 * each work-item moves one float4, so the kernel is bound by memory alone. */
__kernel void bench_copy(__global const float4 *src, __global float4 *dst, int n4) {
  int i = get_global_id(0);
  if (i < n4) dst[i] = src[i];
}
