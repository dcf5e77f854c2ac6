/* Includes the template named by SQ_HOT_TEMPLATE once per width this build
 * compiles (host_math.h, SQ_HOT_BY_WIDTH): AVX-512, AVX2, then the 16-byte
 * baseline, each time with
 *   HOT_VF, HOT_VI  the float and int vector types,
 *   HOT_W           their lane count,
 *   HOT_ATTR        the target attribute of the functions it defines,
 *   HOT_NAME(f)     f with the width's suffix (f_v4, f_v3, f_base),
 *   HOT_FN(f)       host_math.h's function f at that width (sq_v16_tanh...).
 * A template defines its functions over these; the including file calls them
 * through SQ_HOT_PICK. No include guard: it is meant to be included again. */
#ifndef SQ_HOT_TEMPLATE
#error "host_widths.h: define SQ_HOT_TEMPLATE as the template to include"
#endif

#if SQ_HOT_BY_WIDTH
#define HOT_VF sq_vf16
#define HOT_VI sq_vi16
#define HOT_W SQ_VW16
#define HOT_ATTR SQ_HOT_V4
#define HOT_NAME(f) f##_v4
#define HOT_FN(f) sq_v16_##f
#include "backend/host/host_widths_one.h"

#define HOT_VF sq_vf8
#define HOT_VI sq_vi8
#define HOT_W SQ_VW8
#define HOT_ATTR SQ_HOT_V3
#define HOT_NAME(f) f##_v3
#define HOT_FN(f) sq_v8_##f
#include "backend/host/host_widths_one.h"
#endif

#define HOT_VF sq_vf
#define HOT_VI sq_vi
#define HOT_W SQ_VW
#define HOT_ATTR
#define HOT_NAME(f) f##_base
#define HOT_FN(f) sq_v_##f
#include "backend/host/host_widths_one.h"

#undef SQ_HOT_TEMPLATE
