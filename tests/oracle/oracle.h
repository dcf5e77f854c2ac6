/* The double-precision oracle: naive loops of every operation, slow and
 * obviously right. Row-major throughout; lengths follow SPEC §1. Both backends
 * are measured against these in the test suite (never linked into the library). */
#ifndef SQ_TESTS_ORACLE_H
#define SQ_TESTS_ORACLE_H

#include <stddef.h>
#include <stdint.h>

#include "check/oplist.h"

double oracle_sigmoid(double x);
/* Philox4x32-10 and the dropout factor (0 or the kept scale) of element e of
 * the mask keyed (seed, step, tensor) at probability p. */
void oracle_philox4x32_10(const uint32_t ctr[4], const uint32_t key[2], uint32_t out[4]);
double oracle_dropout_factor(double p, uint64_t seed, uint64_t step, uint32_t tensor,
                             uint64_t e);

/* C = alpha op(A) op(B) + beta C for one matrix. */
void oracle_gemm(int ta, int tb, int M, int N, int K, double alpha, const double *A, int lda,
                 const double *B, int ldb, double beta, double *C, int ldc);
/* y[r, o] = sum_i x[r, i] W[o, i] + b[o] (b may be NULL). */
void oracle_linear(int rows, int in, int out, const double *x, int ldx, const double *W,
                   const double *b, double *y, int ldy);

/* Raw attention energies e[N, S] from the unprojected query q [N, Hd]
 * (SPEC §1 table); optional biases may be NULL. scale for scaled_dot is
 * 1/sqrt(He), applied here. */
void oracle_attn_scores(sq_score kind, int N, int S, int He, int Hd, int A, const double *keys,
                        const double *q, const double *Wk, const double *bk, const double *Wq,
                        const double *bq, const double *v, const double *bv, double *e);
/* Softmax over j < lens[n] (and mask[n, j] != 0 when mask is given); 0 elsewhere.
 * A row with a NaN or +inf valid score, or only -inf ones, is NaN where valid. */
void oracle_masked_softmax(int N, int S, const double *x, const int32_t *lens,
                           const int32_t *mask, double *y);
void oracle_context(int N, int S, int He, const double *alpha, const double *keys, double *c);

/* One GRU update of a row from its input-side and hidden-side pre-activations
 * (gi, gh: [3H] without biases, gate order r, z, n). h is updated in place. */
void oracle_gru_update(int H, const double *gi, const double *gh, const double *b_ih,
                       const double *b_hh, double *h);
/* h <- GRUCell(x, h) for N rows; x row stride ldx. */
void oracle_gru_cell(int N, int In, int H, const double *x, int ldx, const double *W_ih,
                     const double *W_hh, const double *b_ih, const double *b_hh, double *h);
/* One direction of a layer over time with pack_padded_sequence semantics:
 * row n runs t = 0..len-1 (or len-1..0 when reverse) from h[n]; writes
 * out[n, t, out_col + i] (row width out_width) for t < len only. */
void oracle_gru_layer(int N, int T, int In, int H, const double *x, const double *W_ih,
                      const double *W_hh, const double *b_ih, const double *b_hh,
                      const int32_t *lens, int reverse, double *h, double *out, int out_width,
                      int out_col);

void oracle_embedding(int N, int D, const int32_t *ids, const double *table, double *out);
/* The lowest index of the largest float32 sum x + bias (the sum is rounded to
 * float as the devices round it; SPEC §1 argmax on float32 logits); the first
 * NaN where there is one, as torch.argmax. */
void oracle_argmax(int N, int V, const float *x, int ld, const float *bias, double *ids);
void oracle_log_softmax(int N, int V, const double *x, double *y);
/* Mean over rows with labels >= 0 of -log_softmax(x)[label]; 0 when none. */
double oracle_cross_entropy(int N, int V, const double *x, const int32_t *labels);

/* The references of the backward entries (grad.*; oracle_grad.c). */
seqcl_status oracle_grad_reference(const sq_case *c, double *const *ref);

/* The oracle as a reference for the op list (sq_reference.fn). */
seqcl_status oracle_reference(void *user, const sq_case *c, double *const *ref);
sq_reference oracle_as_reference(void);

#endif
