/* Shared pieces of the op list entries (opdefs.h). */
#include <stdlib.h>
#include <string.h>

#include "check/opdefs.h"

float *sq_gen_f(sq_case *c, sq_rng *r, const char *name, size_t n, float scale) {
  float *p = sq_case_f(c, name, n);
  if (p)
    for (size_t i = 0; i < n; i++) p[i] = scale * sq_rng_unit(r);
  return p;
}

float *sq_gen_logits(sq_case *c, sq_rng *r, const char *name, int N, int V, float scale) {
  float *x = sq_gen_f(c, r, name, (size_t)N * V, scale);
  if (x && sq_shape_int(&c->shape, "big", 0)) {
    for (int v = 0; v < V; v++) x[v] += 1e4f;
    if (N > 1)
      for (int v = 0; v < V; v++) x[V + v] += sq_rng_int(r, 0, 1) ? 1e4f : -1e4f;
  }
  return x;
}

int32_t *sq_gen_lens(sq_case *c, sq_rng *r, const char *name, int N, int S, int vary) {
  int32_t *lens = sq_case_i(c, name, (size_t)N);
  if (!lens) return NULL;
  for (int n = 0; n < N; n++) lens[n] = vary ? sq_rng_int(r, 1, S) : S;
  if (vary) {
    lens[0] = S;
    if (N > 1) lens[N - 1] = 1;
  }
  return lens;
}

int32_t *sq_gen_mask(sq_case *c, sq_rng *r, int N, int S) {
  const int32_t *lens = sq_case_ini(c, "lens");
  int32_t *mask = sq_case_i(c, "mask", (size_t)N * S);
  if (!mask) return NULL;
  for (int n = 0; n < N; n++) {
    for (int j = 0; j < S; j++) mask[(size_t)n * S + j] = sq_rng_int(r, 0, 2) != 0;
    mask[(size_t)n * S + sq_rng_int(r, 0, lens[n] - 1)] = 1;
  }
  return mask;
}

int sq_attn_valid(const sq_case *c, int S, int n, int j) {
  const int32_t *lens = sq_case_ini(c, "lens"), *mask = sq_case_ini(c, "mask");
  if (j >= lens[n]) return 0;
  return !mask || mask[(size_t)n * S + j] != 0;
}

void sq_context_tol(const float *keys, int S, int He, int n, const double *alpha,
                    const double *alpha_tol, double *tol_row) {
  for (int i = 0; i < He; i++) {
    double m = 0, da = 0;
    for (int j = 0; j < S; j++) {
      double h = fabs(keys[((size_t)n * S + j) * He + i]);
      m += fabs(alpha[j]) * h;
      da += alpha_tol[j] * h;
    }
    tol_row[i] = sq_dot_factor(S) * m + da;
  }
}

void sq_attn_args_named(sq_arena *a, const sq_case *c, sq_score kind, int N, int S, int He, int A,
                        sq_attn_args *args) {
  memset(args, 0, sizeof *args);
  args->kind = kind;
  args->N = N, args->S = S, args->He = He, args->A = A;
  args->scale = kind == SQ_SCORE_SCALED_DOT ? 1.0f / sqrtf((float)He) : 1.0f;
  args->keys = sq_arena_in_named(a, c, "keys");
  args->lens = sq_arena_in_named(a, c, "lens");
  args->mask = sq_arena_in_named(a, c, "mask");
  args->v = sq_arena_in_named(a, c, "v");
  args->bv = sq_arena_in_named(a, c, "bv");
}

void sq_row_spread(const float *row, int n, double *mx, double *dmax) {
  double m = -INFINITY, d = 0;
  for (int v = 0; v < n; v++) m = row[v] > m ? row[v] : m;
  for (int v = 0; v < n; v++)
    if (m - row[v] < 104 && m - row[v] > d) d = m - row[v];
  *mx = m, *dmax = d;
}

void sq_weights_tol(const sq_case *c, int S, int n, const double *alpha, double rel, double *tol) {
  for (int j = 0; j < S; j++)
    tol[j] = sq_attn_valid(c, S, n, j) ? rel * fabs(alpha[j]) + SQ_EPS : 0;
}

int sq_ceil_log2(long x) {
  int k = 0;
  while ((1L << k) < x) k++;
  return k;
}

void sq_abs_linear(int rows, int in, int out, const float *x, int ldx, const float *W,
                   const float *b, double *m) {
  for (int r = 0; r < rows; r++)
    for (int o = 0; o < out; o++) {
      double s = b ? fabs(b[o]) : 0;
      for (int i = 0; i < in; i++) s += fabs(x[(size_t)r * ldx + i]) * fabs(W[(size_t)o * in + i]);
      m[(size_t)r * out + o] = s;
    }
}

seqcl_status sq_finish_run(sq_arena *a) {
  SQ_TRY(a->st);
  SQ_TRY(sq_finish(a->ctx));
  return sq_arena_verify(a, a->fault, a->fault_cap);
}

seqcl_status sq_finish_fetch(sq_arena *a, const sq_case *c, const sq_ref *outs) {
  SQ_TRY(sq_finish_run(a));
  for (int k = 0; k < c->n_out; k++)
    SQ_TRY(sq_arena_fetch(a, outs[k], c->out[k].n, c->out[k].is_int, a->got[k]));
  return SEQCL_OK;
}

void sq_tol_exact(const sq_case *c, int k, double *const *ref, double *tol) {
  (void)ref;
  memset(tol, 0, c->out[k].n * sizeof *tol);
}
