/* Fronts of the beam search slots (backend.h, "Beam search slots"): shape
 * checks, then the backend's implementation; SEQCL_ERR_UNSUPPORTED where a
 * backend has none. */
#ifndef SQ_MODEL_BEAM_OPS_H
#define SQ_MODEL_BEAM_OPS_H

#include "backend/backend.h"
#include "core/ctx.h"
#include "ops/ops.h"

seqcl_status sq_beam_topk(seqcl_ctx *ctx, int N, int V, sq_ref x, int ld, int K, sq_ref vals,
                          sq_ref ids);
seqcl_status sq_beam_select(seqcl_ctx *ctx, const sq_beam_args *a);
seqcl_status sq_gather_rows(seqcl_ctx *ctx, int N, int D, sq_ref src, sq_ref idx, sq_ref dst);

#endif
