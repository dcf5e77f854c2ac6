/* The fill kernel of the OpenCL backend's memory slots (fill, fill_i32).
 *
 * OpenCL C 1.2. Every buffer argument is followed by an int offset counted in
 * 4-byte elements; absent optional buffers arrive as a dummy buffer plus a
 * has_* flag. Global sizes are rounded up to the work-group size, so every
 * kernel checks its bounds. */

/* x[off + i] = v for i < n; floats and int32 share this through their bits. */
__kernel void fill_u32(__global uint *x, int off, int n, uint v) {
  size_t i = get_global_id(0);
  if (i < (size_t)n) x[off + i] = v;
}
