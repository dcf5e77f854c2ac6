/* The vector exp, tanh and sigmoid of host_math.h compiled once per
 * instruction set (SQ_HOT_CLONES), so a test measures the accuracy of the
 * clone this CPU picks, FMA contraction included: the same per-lane
 * operations, hence the same bits, as the hot loops' forms at that level
 * (sq_v16_* at v4, sq_v8_* at v3). */
#ifndef SQ_BACKEND_HOST_VMATH_H
#define SQ_BACKEND_HOST_VMATH_H

typedef enum sq_vmath_fn { SQ_VMATH_EXP, SQ_VMATH_TANH, SQ_VMATH_SIGMOID } sq_vmath_fn;

/* y[i] = fn(x[i]) for i < n, sixteen lanes at a time (a short last vector
 * padded with zeros). */
void sq_host_vmath16(sq_vmath_fn fn, int n, const float *x, float *y);

/* Tests only: the per-width loops run at most at this level (4, 3 or 0, see
 * sq_host_isa) from now on, so that a test can compare the widths this CPU
 * runs; -1 lifts the limit. Not thread-safe against running decodes. */
void sq_host_isa_limit(int level);

#endif
