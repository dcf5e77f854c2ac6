/* Declarations of every entry of the op list (oplist.def). */
#ifndef SQ_CHECK_OPS_ALL_H
#define SQ_CHECK_OPS_ALL_H

#include "check/oplist.h"

#define SQ_OP(sym) extern const sq_op sq_op_##sym;
#include "check/oplist.def"
#undef SQ_OP

#endif
