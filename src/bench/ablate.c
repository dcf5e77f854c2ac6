/* Names of the optimisation switches of the decode path (ablate.h). */
#include <string.h>

#include "bench/ablate.h"

static const struct {
  unsigned bit;
  const char *name;
} names[] = {
    {SQ_ABL_STACK_QUERY, "stack_query"}, {SQ_ABL_FUSED_ATTN, "fused_attention"},
    {SQ_ABL_KEYS_ONCE, "keys_once"},     {SQ_ABL_ARGMAX, "argmax_no_softmax"},
    {SQ_ABL_NO_SYNC, "no_step_sync"},    {SQ_ABL_SMALL_GEMM, "small_gemm"},
    {SQ_ABL_THREADS, "host_threads"}, {SQ_ABL_FUSED_GREEDY, "fused_argmax_update"},
    {SQ_ABL_OUTPUT_ONE_GEMM, "output_one_gemm"}, {SQ_ABL_PACKED, "packed_weights"},
    {SQ_ABL_DEC_TABLE, "embedding_table"}, {SQ_ABL_SPLIT_BATCH, "split_batch"},
};

unsigned sq_ablate_bit(const char *name) {
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
    if (!strcmp(names[i].name, name)) return names[i].bit;
  return 0;
}

const char *sq_ablate_name(unsigned bit) {
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
    if (names[i].bit == bit) return names[i].name;
  return "?";
}
