/* Shared pieces of the op list entries: shape keys, input drawing, error bounds. */
#ifndef SQ_CHECK_OPDEFS_H
#define SQ_CHECK_OPDEFS_H

#include <math.h>

#include "check/arena.h"
#include "check/oplist.h"
#include "core/error.h"

/* Unit roundoff of float32 (u) and machine epsilon (eps = 2u). */
#define SQ_U (1.0 / 16777216.0)
#define SQ_EPS (1.0 / 8388608.0)

/* int var = shape key, checked to lie in [lo, hi]. */
#define SQ_DIM(c, var, key, dflt, lo, hi)                                                   \
  int var = sq_shape_int(&(c)->shape, key, dflt);                                           \
  do {                                                                                      \
    if (var < (lo) || var > (hi))                                                           \
      return sq_fail(NULL, SEQCL_ERR_INVALID_ARGUMENT, "%s: %s=%d is outside [%d, %d]",     \
                     (c)->op->name, key, var, (int)(lo), (int)(hi));                        \
  } while (0)

/* Shape key key of the case c in scope, dflt when absent: the run and tol
 * functions reread the keys that their gen function checked. */
#define SH(key, dflt) sq_shape_int(&c->shape, key, dflt)

#define SQ_NEED(p)                                                                          \
  do {                                                                                      \
    if (!(p)) return sq_fail(NULL, SEQCL_ERR_OUT_OF_MEMORY, "check: out of host memory");   \
  } while (0)

#define SQ_MAXDIM 1048576

/* A float input of n values uniform in [-scale, scale] (never 0). */
float *sq_gen_f(sq_case *c, sq_rng *r, const char *name, size_t n, float scale);
/* A logits input [N, V] uniform in [-scale, scale]; shape key big=1 puts row
 * 0 near +1e4 (a naive exp overflows) and row 1 at a mix of +-1e4 (half of
 * its exponentials underflow to 0 exactly). */
float *sq_gen_logits(sq_case *c, sq_rng *r, const char *name, int N, int V, float scale);
/* Lengths in [1, S]; vary = 0: all S; vary = 1: row 0 has S, the last row 1 (when
 * N > 1), the rest random. */
int32_t *sq_gen_lens(sq_case *c, sq_rng *r, const char *name, int N, int S, int vary);
/* The attention mask "mask" [N, S] (int32, 0/1) drawn at random, with at least
 * one valid position inside each row's length (the input "lens"). */
int32_t *sq_gen_mask(sq_case *c, sq_rng *r, int N, int S);
/* 1 when position j of row n takes part in an attention softmax: inside the
 * input "lens" of row n and not masked out by the optional input "mask". */
int sq_attn_valid(const sq_case *c, int S, int n, int j);
int sq_ceil_log2(long x);

/* The relative error of one softmax weight from the exponentials and a
 * tree-reduced sum of S terms: (8 + 2 ceil(log2 S)) eps (which also covers a
 * sequential sum at the sizes listed: 15 eps was seen at S = 1024). */
static inline double sq_softmax_rel(long S) { return (8 + 2 * sq_ceil_log2(S)) * SQ_EPS; }
/* That relative error of the sum Z as an absolute error of log Z, with the
 * roundings of the log and of the final subtraction: (10 + 2 ceil(log2 V)) eps. */
static inline double sq_log_sum_abs(long V) { return (10 + 2 * sq_ceil_log2(V)) * SQ_EPS; }
/* Row n's attention weight tolerances: rel |alpha_j| + eps at the valid
 * positions (sq_attn_valid), exactly 0 at the others. */
void sq_weights_tol(const sq_case *c, int S, int n, const double *alpha, double rel, double *tol);
/* The maximum mx of row[0, n) and the largest distance below it, mx - row[j],
 * short of 104 (e^-104 underflows in float32): the spread that the rounding
 * of x - max adds to a softmax's or log-softmax's error. */
void sq_row_spread(const float *row, int n, double *mx, double *dmax);

/* The part of an attention front's argument block that every attention entry
 * fills alike: the dims, the scale of the kind (1/sqrt(He) for scaled_dot),
 * and the device copies of the inputs "keys", "lens", "mask", "v" and "bv"
 * (those absent: none). The query side (qp, ld_qp, pkeys) is the caller's. */
void sq_attn_args_named(sq_arena *a, const sq_case *c, sq_score kind, int N, int S, int He, int A,
                        sq_attn_args *args);

/* Worst-case error factor of a K-term float dot product plus a bias and a scaling:
 * |fl(sum) - sum| <= 2(K+2)u * sum|terms| (Higham, Accuracy and Stability, §3.1,
 * with a factor 2 for FMA-free kernels and reassociation). */
static inline double sq_dot_factor(long K) { return 2.0 * (double)(K + 2) * SQ_U; }

/* Tolerance of row n's context c[n, i] = sum_j alpha[n, j] keys[n, j, i] (keys
 * [N, S, He]): the dot product's rounding over |alpha| |keys| plus the weights'
 * own tolerances alpha_tol[j] carried through |keys|. Writes tol_row[0, He). */
void sq_context_tol(const float *keys, int S, int He, int n, const double *alpha,
                    const double *alpha_tol, double *tol_row);

/* The magnitude sum m[r, o] = sum_i |x[r, i]| |W[o, i]| + |b[o]| of a linear layer
 * (x row stride ldx; b may be NULL). */
void sq_abs_linear(int rows, int in, int out, const float *x, int ldx, const float *W,
                   const float *b, double *m);

/* The tolerance of an output that must match exactly (0 everywhere). */
void sq_tol_exact(const sq_case *c, int k, double *const *ref, double *tol);

/* Waits for the run and verifies the arena's guards and inputs (a fault is
 * described in the arena's fault, status OK). */
seqcl_status sq_finish_run(sq_arena *a);
/* The tail of a run function: sq_finish_run, then every declared output k of
 * the case read from outs[k] into the arena's got[k] (c->out[k].n values of
 * its type). */
seqcl_status sq_finish_fetch(sq_arena *a, const sq_case *c, const sq_ref *outs);

#endif
