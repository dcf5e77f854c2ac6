/* The list itself: one line per operation, in the order the table prints. */
#include <string.h>

#include "check/ops_all.h"

static const sq_op *const sq_ops[] = {
    &sq_op_gemm,           &sq_op_linear,
    &sq_op_scores_additive, &sq_op_scores_general, &sq_op_scores_dot, &sq_op_scores_scaled_dot,
    &sq_op_masked_softmax, &sq_op_context,
    &sq_op_fused_additive, &sq_op_fused_general,  &sq_op_fused_dot,  &sq_op_fused_scaled_dot,
    &sq_op_attn_seed000,
    &sq_op_gru_gates,      &sq_op_gru_cell,       &sq_op_gru_layer,
    &sq_op_embedding,      &sq_op_argmax,         &sq_op_log_softmax, &sq_op_cross_entropy,
    &sq_op_argmax_greedy,
    &sq_op_beam_topk,
    &sq_op_dropout,
    &sq_op_grad_cross_entropy, &sq_op_grad_bias, &sq_op_grad_tanh, &sq_op_grad_embedding,
    &sq_op_grad_linear, &sq_op_grad_sum_squares, &sq_op_grad_scale, &sq_op_grad_adam,
    &sq_op_grad_gru_fwd, &sq_op_grad_gru_gates,
    &sq_op_grad_attn_fwd_additive, &sq_op_grad_attn_fwd_general, &sq_op_grad_attn_fwd_dot,
    &sq_op_grad_attn_fwd_scaled_dot,
    &sq_op_grad_attn_additive, &sq_op_grad_attn_general, &sq_op_grad_attn_dot,
    &sq_op_grad_attn_scaled_dot,
};

const sq_op *const *sq_op_list(size_t *count) {
  *count = sizeof sq_ops / sizeof sq_ops[0];
  return sq_ops;
}

const sq_op *sq_op_find(const char *name) {
  size_t n;
  const sq_op *const *ops = sq_op_list(&n);
  for (size_t i = 0; i < n; i++)
    if (!strcmp(ops[i]->name, name)) return ops[i];
  return NULL;
}

int sq_op_matches(const sq_op *op, const char *pattern) {
  if (!pattern || !*pattern || !strcmp(op->name, pattern)) return 1;
  size_t n = strlen(pattern);
  return !strncmp(op->name, pattern, n) && op->name[n] == '.';
}
