/* The tail of a greedy decoder step (decoder.c), shared with the op list. */
#ifndef SQ_MODEL_GREEDY_TAIL_H
#define SQ_MODEL_GREEDY_TAIL_H

#include "backend/backend.h"

/* ids = argmax_v (x + bias) then the greedy_update bookkeeping: one launch on a
 * backend with argmax_greedy, else argmax and greedy_update. x [N, V] stride ld. */
seqcl_status sq_argmax_greedy(seqcl_ctx *ctx, int N, int V, sq_ref x, int ld, sq_ref bias,
                              sq_ref ids, sq_ref finished, int eos, sq_ref hist);

#endif
