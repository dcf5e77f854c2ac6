/* 16-bit float formats (halfwidth.c): IEEE binary16 ("f16") and bfloat16
 * (the top half of a binary32), both ways. Used by the safetensors reader
 * (F16/BF16 tensors) and by the reduced-precision mode, which rounds a
 * model's weights to one of them and keeps a 16-bit copy for the products. */
#ifndef SQ_CORE_HALFWIDTH_H
#define SQ_CORE_HALFWIDTH_H

#include <stddef.h>
#include <stdint.h>

typedef enum sq_halfwidth { SQ_HALF_NONE = 0, SQ_HALF_BF16 = 1, SQ_HALF_F16 = 2 } sq_halfwidth;

/* Exact widenings (subnormals normalised, inf kept, NaN payload kept in the
 * high mantissa bits). */
float sq_half_to_float(uint16_t h);
float sq_bf16_to_float(uint16_t h);

/* Round to nearest, ties to even (the rounding PyTorch's .to(torch.bfloat16)
 * and .half() use). NaN stays NaN (quiet); values beyond the format's range
 * become inf (binary16: |x| >= 65520). */
uint16_t sq_float_to_bf16(float x);
uint16_t sq_float_to_half(float x);

/* x rounded to the width and widened back (x itself for SQ_HALF_NONE). */
float sq_round_halfwidth(float x, sq_halfwidth w);
/* The 16 bits of x in the width; x must already be representable in it
 * (sq_round_halfwidth's result), so the conversion is exact. */
uint16_t sq_halfwidth_bits(float x, sq_halfwidth w);

/* Whole arrays: x[0, n) rounded in place as sq_round_halfwidth does, up to
 * the first element whose rounded value is not finite, whose index is
 * returned (n: every element was rounded), that element and those after it
 * left as they were; out[i] = sq_halfwidth_bits(x[i], w) for i < n. */
size_t sq_round_halfwidth_n(float *x, size_t n, sq_halfwidth w);
void sq_halfwidth_bits_n(const float *x, uint16_t *out, size_t n, sq_halfwidth w);

/* The largest finite value of the width (65504 for binary16). */
float sq_halfwidth_max(sq_halfwidth w);

#endif
