/* Every entry of the op list (defined in ops_*.c, listed in oplist.c). */
#ifndef SQ_CHECK_OPS_ALL_H
#define SQ_CHECK_OPS_ALL_H

#include "check/oplist.h"

extern const sq_op sq_op_gemm, sq_op_linear;
extern const sq_op sq_op_scores_additive, sq_op_scores_general, sq_op_scores_dot,
    sq_op_scores_scaled_dot;
extern const sq_op sq_op_masked_softmax, sq_op_context;
extern const sq_op sq_op_fused_additive, sq_op_fused_general, sq_op_fused_dot,
    sq_op_fused_scaled_dot;
extern const sq_op sq_op_attn_seed000;
extern const sq_op sq_op_gru_gates, sq_op_gru_cell, sq_op_gru_layer;
extern const sq_op sq_op_embedding, sq_op_argmax, sq_op_log_softmax, sq_op_cross_entropy;
extern const sq_op sq_op_argmax_greedy;
extern const sq_op sq_op_beam_topk;
extern const sq_op sq_op_dropout;
/* training slots (ops_<family>.c) */
extern const sq_op sq_op_grad_cross_entropy, sq_op_grad_bias, sq_op_grad_tanh,
    sq_op_grad_embedding, sq_op_grad_linear, sq_op_grad_sum_squares, sq_op_grad_scale,
    sq_op_grad_adam, sq_op_grad_gru_fwd, sq_op_grad_gru_gates;
extern const sq_op sq_op_grad_attn_fwd_additive, sq_op_grad_attn_fwd_general,
    sq_op_grad_attn_fwd_dot, sq_op_grad_attn_fwd_scaled_dot;
extern const sq_op sq_op_grad_attn_additive, sq_op_grad_attn_general, sq_op_grad_attn_dot,
    sq_op_grad_attn_scaled_dot;

#endif
