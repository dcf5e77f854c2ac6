/* Two decode results the same, byte for byte: ids, steps, scores, every
 * hypothesis of every n-best list, and the alignments when align is set. For
 * the tests that decode one batch two ways (shared or copied beam encodings,
 * a batch split into parts or whole). Include it after <cmocka.h>. */
#ifndef SEQCL_TEST_RESULTS_H
#define SEQCL_TEST_RESULTS_H

#include <seqcl/seqcl.h>

static inline void tr_expect_same(const seqcl_decode_result *a, const seqcl_decode_result *b,
                                  int align) {
  assert_int_equal(a->count, b->count);
  assert_int_equal(a->nbest, b->nbest);
  assert_memory_equal(a->offsets, b->offsets, (a->count + 1) * sizeof *a->offsets);
  assert_memory_equal(a->ids, b->ids, a->offsets[a->count] * sizeof *a->ids);
  assert_memory_equal(a->steps, b->steps, a->count * sizeof *a->steps);
  assert_memory_equal(a->scores, b->scores, a->count * sizeof *a->scores);
  assert_memory_equal(a->hyp_counts, b->hyp_counts, a->count * sizeof *a->hyp_counts);
  for (size_t i = 0; i < a->count * (size_t)a->nbest; i++) {
    if (i % (size_t)a->nbest >= (size_t)a->hyp_counts[i / (size_t)a->nbest]) continue;
    assert_int_equal(a->hyps[i].len, b->hyps[i].len);
    assert_memory_equal(a->hyps[i].ids, b->hyps[i].ids, a->hyps[i].len * sizeof(int32_t));
    assert_memory_equal(&a->hyps[i].logprob, &b->hyps[i].logprob, sizeof(double));
    assert_memory_equal(&a->hyps[i].score, &b->hyps[i].score, sizeof(double));
  }
  if (align) {
    assert_non_null(a->alignments);
    assert_int_equal(a->T, b->T);
    assert_int_equal(a->S, b->S);
    assert_memory_equal(a->alignments, b->alignments,
                        a->count * (size_t)a->T * (size_t)a->S * sizeof(float));
  }
}

#endif
