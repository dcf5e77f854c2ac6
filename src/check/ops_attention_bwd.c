/* Op list entries of attention's training slots: the forward that keeps the
 * additive activations (grad.attn_fwd.*) and the backward (grad.attn.*), for
 * the four score kinds. The forward entries are in ops_attention.c; the
 * family's entries are split in two files only for length.
 *
 * Every output that a training slot accumulates into (+=) or updates in
 * place starts from random values (inputs named *0), so a kernel that
 * overwrites instead of accumulating fails. */
#include <stdlib.h>
#include <string.h>

#include "check/opdefs.h"
#include "check/ops_all.h"

/* ------------------------------------------ grad.attn_fwd.*, grad.attn.* ---- */
/* Shape keys: N S He A (additive), bv (default 1), lens (1 = varied, the
 * default), mask (1 = a random mask too), pad (extra row stride of qp, c, dc,
 * dqp), u (backward, additive: 1 = the kept tanh activations are given, random
 * in (-1, 1); 0 = recomputed). The slots take the projected query qp and the
 * projected keys pkeys directly. */
typedef struct gattn {
  sq_score kind;
  int N, S, He, A, W, pad; /* W: the width of qp (A for additive, else He) */
  float scale;
} gattn;

static gattn gattn_of(const sq_case *c) {
  gattn d;
  d.kind = (sq_score)c->op->variant;
  d.N = SH("N", 1), d.S = SH("S", 1), d.He = SH("He", 1), d.pad = SH("pad", 0);
  d.A = d.kind == SQ_SCORE_ADDITIVE ? SH("A", 1) : 0;
  d.W = d.kind == SQ_SCORE_ADDITIVE ? d.A : d.He;
  d.scale = d.kind == SQ_SCORE_SCALED_DOT ? 1.0f / sqrtf((float)d.He) : 1.0f;
  return d;
}

static seqcl_status gattn_gen_inputs(sq_case *c, sq_rng *r, gattn *d) {
  SQ_DIM(c, N, "N", 1, 1, SQ_MAXDIM);
  SQ_DIM(c, S, "S", 1, 1, SQ_MAXDIM);
  SQ_DIM(c, He, "He", 1, 1, SQ_MAXDIM);
  SQ_DIM(c, A, "A", 1, 1, SQ_MAXDIM);
  SQ_DIM(c, pad, "pad", 0, 0, 4096);
  (void)N, (void)S, (void)He, (void)A, (void)pad;
  *d = gattn_of(c);
  SQ_NEED(sq_gen_f(c, r, "keys", (size_t)d->N * d->S * d->He, 1.0f));
  SQ_NEED(sq_gen_f(c, r, "qp", (size_t)d->N * (d->W + d->pad), 1.0f));
  if (d->kind == SQ_SCORE_ADDITIVE) {
    SQ_NEED(sq_gen_f(c, r, "pkeys", (size_t)d->N * d->S * d->A, 1.0f));
    SQ_NEED(sq_gen_f(c, r, "v", (size_t)d->A, 1.0f));
    if (SH("bv", 1)) SQ_NEED(sq_gen_f(c, r, "bv", 1, 1.0f));
  }
  SQ_NEED(sq_gen_lens(c, r, "lens", d->N, d->S, SH("lens", 1)));
  if (SH("mask", 0)) SQ_NEED(sq_gen_mask(c, r, d->N, d->S));
  return SEQCL_OK;
}

static void gattn_args(sq_arena *a, const sq_case *c, const gattn *d, sq_attn_args *args) {
  sq_attn_args_named(a, c, d->kind, d->N, d->S, d->He, d->A, args);
  args->qp = sq_arena_in_named(a, c, "qp");
  args->ld_qp = d->W + d->pad;
  args->pkeys = sq_arena_in_named(a, c, "pkeys");
}

/* tanh(pkeys + qp) of (n, j, a) in double and its float error bound: the
 * rounding of the sum through tanh (slope <= 1) and tanh's 5 ulp (+1). */
static double gattn_u(const sq_case *c, const gattn *d, int n, int j, int a, double *du) {
  double s = (double)sq_case_inf(c, "pkeys")[((size_t)n * d->S + j) * d->A + a] +
             sq_case_inf(c, "qp")[(size_t)n * (d->W + d->pad) + a];
  if (du) *du = SQ_U * fabs(s) + 6 * SQ_EPS;
  return tanh(s);
}

/* The energy e[n, j] in double and its float error bound (as attn_scores). */
static double gattn_e(const sq_case *c, const gattn *d, int n, int j, double *err) {
  const float *qp = sq_case_inf(c, "qp") + (size_t)n * (d->W + d->pad);
  const float *h = sq_case_inf(c, "keys") + ((size_t)n * d->S + j) * d->He;
  double e = 0, m = 0, t = 0;
  if (d->kind == SQ_SCORE_ADDITIVE) {
    const float *v = sq_case_inf(c, "v"), *bv = sq_case_inf(c, "bv");
    for (int a = 0; a < d->A; a++) {
      double du, u = gattn_u(c, d, n, j, a, &du);
      e += v[a] * u;
      m += fabs(v[a]);
      t += fabs(v[a]) * du;
    }
    e += bv ? bv[0] : 0;
    t += sq_dot_factor(d->A + 1) * (m + (bv ? fabs(bv[0]) : 0));
  } else {
    for (int k = 0; k < d->He; k++) e += (double)h[k] * qp[k], m += fabs(h[k] * qp[k]);
    e *= d->scale;
    t = sq_dot_factor(d->He + 1) * m * d->scale;
  }
  if (err) *err = t;
  return e;
}

static seqcl_status gfw_gen(sq_case *c, sq_rng *r) {
  gattn d;
  SQ_TRY(gattn_gen_inputs(c, r, &d));
  SQ_NEED(sq_case_out(c, "c", (size_t)d.N * d.He, 0) >= 0);
  SQ_NEED(sq_case_out(c, "alpha", (size_t)d.N * d.S, 0) >= 0);
  if (d.kind == SQ_SCORE_ADDITIVE) SQ_NEED(sq_case_out(c, "u", (size_t)d.N * d.S * d.A, 0) >= 0);
  return SEQCL_OK;
}

static seqcl_status gfw_run(sq_arena *a, const sq_case *c) {
  gattn d = gattn_of(c);
  sq_attn_args args;
  gattn_args(a, c, &d, &args);
  sq_ref cr = sq_arena_out2d(a, "c", (size_t)d.N, (size_t)d.He, (size_t)d.He + d.pad, NULL);
  sq_ref al = sq_arena_out(a, "alpha", (size_t)d.N * d.S, NULL);
  /* positions past a row's length are left untouched */
  sq_ref u = d.kind == SQ_SCORE_ADDITIVE ? sq_arena_out_zeros(a, "u", (size_t)d.N * d.S * d.A)
                                         : sq_none();
  SQ_TRY(a->st);
  SQ_TRY(sq_attn_fwd(a->ctx, &args, u, cr, d.He + d.pad, al));
  return sq_finish_fetch(a, c, (sq_ref[]){cr, al, u});
}

/* alpha_j: the softmax's relative bound plus 2 max_k tol(e_k) (a score error
 * de shifts alpha_j by alpha_j (de_j - E[de])); c: 2(S+2)u sum_j |alpha_j h_j|
 * + sum_j tol(alpha_j) |h_j|; u: the tanh bound; invalid weights exactly 0. */
static void gfw_alpha_tol(const sq_case *c, const gattn *d, int n, const double *alpha,
                          double *tol) {
  double emax = 0, hi = -INFINITY, lo = INFINITY;
  for (int j = 0; j < d->S; j++)
    if (sq_attn_valid(c, d->S, n, j)) {
      double t, e = gattn_e(c, d, n, j, &t);
      emax = t > emax ? t : emax;
      hi = e > hi ? e : hi, lo = e < lo ? e : lo;
    }
  double rel = sq_softmax_rel(d->S) + 2 * emax + 2 * SQ_U * (hi - lo);
  sq_weights_tol(c, d->S, n, alpha, rel, tol);
}

static void gfw_tol(const sq_case *c, int k, double *const *ref, double *tol) {
  gattn d = gattn_of(c);
  const float *keys = sq_case_inf(c, "keys");
  double *at = malloc((size_t)d.S * sizeof *at);
  for (int n = 0; n < d.N; n++) {
    const double *an = ref[1] + (size_t)n * d.S;
    if (k == 1) {
      gfw_alpha_tol(c, &d, n, an, tol + (size_t)n * d.S);
    } else if (k == 2) {
      for (int j = 0; j < d.S; j++)
        for (int a = 0; a < d.A; a++) {
          double du;
          gattn_u(c, &d, n, j, a, &du);
          tol[((size_t)n * d.S + j) * d.A + a] = sq_attn_valid(c, d.S, n, j) ? du : INFINITY;
        }
    } else if (!at) {
      for (int i = 0; i < d.He; i++) tol[(size_t)n * d.He + i] = 1e-2; /* out of memory */
    } else {
      gfw_alpha_tol(c, &d, n, an, at);
      sq_context_tol(keys, d.S, d.He, n, an, at, tol + (size_t)n * d.He);
    }
  }
  free(at);
}

static const char *const gadd_shapes[] = {"N=1,S=1,He=1,A=1", "N=3,S=7,He=13,A=11,pad=2",
                                          "N=5,S=37,He=61,A=33,bv=0",
                                          "N=4,S=61,He=24,A=65,mask=1",
                                          "N=2,S=200,He=256,A=256", NULL};
static const char *const gdot_shapes[] = {"N=1,S=1,He=1", "N=3,S=7,He=13,pad=2", "N=5,S=37,He=61",
                                          "N=4,S=61,He=64,mask=1", "N=2,S=300,He=256",
                                          /* GPU forms: attn_bwd_de's rounds of 16
                                           * positions plus one; 33 attention chunks */
                                          "N=2,S=17,He=33", "N=1,S=2053,He=19", NULL};
static const char *const gadd_quick[] = {"N=3,S=7,He=13,A=11,pad=2", NULL};
static const char *const gdot_quick[] = {"N=3,S=7,He=13,pad=2", NULL};

#define GFW_TOL                                                                               \
  "alpha: ((8 + 2 ceil(log2 S)) eps + 2 max_k tol(e_k) + 2u (max e - min e)) |alpha_j| + eps, " \
  "tol(e) the attn_scores bound from qp and pkeys (a score error shifts alpha_j by alpha_j "    \
  "(de_j - E[de])), invalid weights exactly 0; c: 2(S+2)u sum_j |alpha_j h_j| + sum_j "         \
  "tol(alpha_j) |h_j|; u (additive): u |pkeys + qp| + 6 eps (tanh 5 ulp), any finite value at " \
  "invalid positions"

/* The four entries of one training slot: one tolerance text for every kind,
 * and general checked at the dot kinds' shapes (the slots take the projected
 * query, so Hd does not enter). */
#define GRAD_ATTN_OPS(var, name, gen, run, tol, text, add_shapes)                             \
  SQ_SCORE_OPS(var, name, gen, run, tol, text, add_shapes, gadd_quick, text, gdot_shapes,      \
               gdot_quick, text, gdot_shapes, gdot_quick)

GRAD_ATTN_OPS(sq_op_grad_attn_fwd, "grad.attn_fwd", gfw_gen, gfw_run, gfw_tol, GFW_TOL,
              gadd_shapes);

/* The backward: alpha is a valid weight row (>= 0, sum 1, 0 at invalid
 * positions); dc is random; dqp, dkeys, dpkeys, dv, dbv start random
 * (accumulated). */
static seqcl_status gbw_gen(sq_case *c, sq_rng *r) {
  gattn d;
  SQ_TRY(gattn_gen_inputs(c, r, &d));
  int add = d.kind == SQ_SCORE_ADDITIVE, bv = add && SH("bv", 1);
  float *alpha = sq_gen_f(c, r, "alpha", (size_t)d.N * d.S, 1.0f);
  SQ_NEED(alpha);
  for (int n = 0; n < d.N; n++) {
    double s = 0;
    float *an = alpha + (size_t)n * d.S;
    for (int j = 0; j < d.S; j++) s += sq_attn_valid(c, d.S, n, j) ? fabsf(an[j]) : 0;
    for (int j = 0; j < d.S; j++) an[j] = sq_attn_valid(c, d.S, n, j) ? (float)(fabsf(an[j]) / s) : 0;
  }
  SQ_NEED(sq_gen_f(c, r, "dc", (size_t)d.N * (d.He + d.pad), 1.0f));
  if (add && SH("u", 0)) SQ_NEED(sq_gen_f(c, r, "u", (size_t)d.N * d.S * d.A, 0.999f));
  SQ_NEED(sq_gen_f(c, r, "dqp0", (size_t)d.N * (d.W + d.pad), 1.0f));
  SQ_NEED(sq_gen_f(c, r, "dkeys0", (size_t)d.N * d.S * d.He, 1.0f));
  if (add) {
    SQ_NEED(sq_gen_f(c, r, "dpkeys0", (size_t)d.N * d.S * d.A, 1.0f));
    SQ_NEED(sq_gen_f(c, r, "dv0", (size_t)d.A, 1.0f));
    if (bv) SQ_NEED(sq_gen_f(c, r, "dbv0", 1, 1.0f));
  }
  SQ_NEED(sq_case_out(c, "dqp", (size_t)d.N * d.W, 0) >= 0);
  SQ_NEED(sq_case_out(c, "dkeys", (size_t)d.N * d.S * d.He, 0) >= 0);
  if (add) {
    SQ_NEED(sq_case_out(c, "dpkeys", (size_t)d.N * d.S * d.A, 0) >= 0);
    SQ_NEED(sq_case_out(c, "dv", (size_t)d.A, 0) >= 0);
    if (bv) SQ_NEED(sq_case_out(c, "dbv", 1, 0) >= 0);
  }
  return SEQCL_OK;
}

static seqcl_status gbw_run(sq_arena *a, const sq_case *c) {
  gattn d = gattn_of(c);
  int add = d.kind == SQ_SCORE_ADDITIVE, bv = add && SH("bv", 1);
  sq_attn_args args;
  gattn_args(a, c, &d, &args);
  sq_ref al = sq_arena_in_named(a, c, "alpha"), u = sq_arena_in_named(a, c, "u");
  sq_ref dc = sq_arena_in_named(a, c, "dc");
  sq_ref dqp = sq_arena_out2d(a, "dqp", (size_t)d.N, (size_t)d.W, (size_t)d.W + d.pad,
                              sq_case_inf(c, "dqp0"));
  sq_ref dk = sq_arena_out(a, "dkeys", (size_t)d.N * d.S * d.He, sq_case_inf(c, "dkeys0"));
  sq_ref dpk = add ? sq_arena_out(a, "dpkeys", (size_t)d.N * d.S * d.A, sq_case_inf(c, "dpkeys0"))
                   : sq_none();
  sq_ref dv = add ? sq_arena_out(a, "dv", (size_t)d.A, sq_case_inf(c, "dv0")) : sq_none();
  sq_ref dbv = bv ? sq_arena_out(a, "dbv", 1, sq_case_inf(c, "dbv0")) : sq_none();
  SQ_TRY(a->st);
  SQ_TRY(sq_attn_bwd(a->ctx, &args, al, u, dc, d.He + d.pad, dqp, d.W + d.pad, dk, dpk, dv, dbv));
  return sq_finish_fetch(a, c, (sq_ref[]){dqp, dk, dpk, dv, dbv});
}

/* Error propagation with f(K) = 2(K+2)u on magnitudes:
 *   dalpha_j = dc . h_j:  E_a = f(He) M_a, M_a = sum |dc h_j|
 *   s = sum alpha dalpha: E_s = sum alpha_j E_a,j + f(S) M_s, M_s = sum alpha |dalpha|
 *   de_j = scale alpha_j (dalpha_j - s): E_de = scale alpha_j (E_a + E_s + 3 eps (M_a + M_s)),
 *     magnitude M_de = scale alpha_j (M_a + M_s)
 * and each output is an accumulation of such terms: the terms' errors plus
 * f(terms + 1) times the magnitudes (the start value included). For additive
 * scores du = de v (1 - u^2) also carries u's error 2 |u| tol(u) + 3 eps. */
static void gbw_de(const sq_case *c, const gattn *d, int n, double *Ede, double *Mde) {
  const float *dc = sq_case_inf(c, "dc") + (size_t)n * (d->He + d->pad);
  const float *keys = sq_case_inf(c, "keys") + (size_t)n * d->S * d->He;
  const float *al = sq_case_inf(c, "alpha") + (size_t)n * d->S;
  double Es = 0, Ms = 0;
  for (int j = 0; j < d->S; j++) {
    Ede[j] = Mde[j] = 0;
    if (!sq_attn_valid(c, d->S, n, j)) continue;
    double Ma = 0, da = 0;
    for (int k = 0; k < d->He; k++) {
      Ma += fabs(dc[k] * keys[(size_t)j * d->He + k]);
      da += (double)dc[k] * keys[(size_t)j * d->He + k];
    }
    Mde[j] = Ma; /* M_a for now */
    Es += al[j] * sq_dot_factor(d->He) * Ma;
    Ms += al[j] * fabs(da);
  }
  Es += sq_dot_factor(d->S) * Ms;
  for (int j = 0; j < d->S; j++) {
    if (!sq_attn_valid(c, d->S, n, j)) continue;
    double Ma = Mde[j];
    Ede[j] = d->scale * al[j] * (sq_dot_factor(d->He) * Ma + Es + 3 * SQ_EPS * (Ma + Ms));
    Mde[j] = d->scale * al[j] * (Ma + Ms);
  }
}

static void gbw_tol(const sq_case *c, int k, double *const *ref, double *tol) {
  (void)ref;
  gattn d = gattn_of(c);
  int add = d.kind == SQ_SCORE_ADDITIVE;
  const float *keys = sq_case_inf(c, "keys"), *qp = sq_case_inf(c, "qp");
  const float *dc = sq_case_inf(c, "dc"), *al = sq_case_inf(c, "alpha");
  const float *v = sq_case_inf(c, "v"), *us = sq_case_inf(c, "u");
  const float *start = sq_case_inf(c, k == 0   ? "dqp0"
                                      : k == 1 ? "dkeys0"
                                      : k == 2 ? "dpkeys0"
                                      : k == 3 ? "dv0"
                                               : "dbv0");
  double *Ede = malloc((size_t)d.S * sizeof *Ede), *Mde = malloc((size_t)d.S * sizeof *Mde);
  if (!Ede || !Mde) {
    for (size_t e = 0; e < c->out[k].n; e++) tol[e] = 1e-2; /* out of memory */
    free(Ede), free(Mde);
    return;
  }
  /* dv, dbv: sums over every (n, j) */
  double sumE = 0;
  size_t terms = (size_t)d.N * d.S + 1;
  double mag_b = fabs(start[0]);
  if (k == 3)
    for (int a = 0; a < d.A; a++) tol[a] = sq_dot_factor((long)terms) * fabs(start[a]);
  for (int n = 0; n < d.N; n++) {
    gbw_de(c, &d, n, Ede, Mde);
    const float *q = qp + (size_t)n * (d.W + d.pad);
    if (k == 0) {
      for (int w = 0; w < d.W; w++) {
        double M = fabs(start[(size_t)n * (d.W + d.pad) + w]), E = 0;
        for (int j = 0; j < d.S; j++) {
          if (!sq_attn_valid(c, d.S, n, j)) continue;
          if (add) {
            double du = 0, u = us ? us[((size_t)n * d.S + j) * d.A + w] : gattn_u(c, &d, n, j, w, &du);
            if (us) du = 0;
            double g = fabs(v[w]) * (1 - u * u);
            M += Mde[j] * g;
            E += Ede[j] * g + Mde[j] * fabs(v[w]) * (2 * fabs(u) * du + 3 * SQ_EPS);
          } else {
            double h = fabs(keys[((size_t)n * d.S + j) * d.He + w]);
            M += Mde[j] * h;
            E += Ede[j] * h;
          }
        }
        tol[(size_t)n * d.W + w] = sq_dot_factor(d.S + 1) * M + E;
      }
    } else if (k == 1) {
      for (int j = 0; j < d.S; j++)
        for (int i = 0; i < d.He; i++) {
          size_t e = ((size_t)n * d.S + j) * d.He + i;
          if (!sq_attn_valid(c, d.S, n, j)) {
            tol[e] = 0; /* invalid positions contribute nothing */
            continue;
          }
          double cd = fabs(dc[(size_t)n * (d.He + d.pad) + i]);
          double qh = add ? 0 : fabs(q[i]);
          tol[e] = sq_dot_factor(3) * (fabs(start[e]) + al[(size_t)n * d.S + j] * cd + Mde[j] * qh) +
                   Ede[j] * qh;
        }
    } else {
      for (int j = 0; j < d.S; j++) {
        int valid = sq_attn_valid(c, d.S, n, j);
        if (k == 4) {
          if (valid) mag_b += Mde[j], sumE += Ede[j];
          continue;
        }
        for (int a = 0; a < d.A; a++) {
          size_t e = ((size_t)n * d.S + j) * d.A + a;
          double du = 0, u = us ? us[e] : gattn_u(c, &d, n, j, a, &du);
          if (us) du = 0;
          if (k == 2) {
            double g = fabs(v[a]) * (1 - u * u);
            tol[e] = valid ? sq_dot_factor(1) * (fabs(start[e]) + Mde[j] * g) + Ede[j] * g +
                                 Mde[j] * fabs(v[a]) * (2 * fabs(u) * du + 3 * SQ_EPS)
                           : 0;
          } else if (valid) {
            tol[a] += sq_dot_factor((long)terms) * Mde[j] * fabs(u) + Ede[j] * fabs(u) + Mde[j] * du;
          }
        }
      }
    }
  }
  if (k == 4) tol[0] = sq_dot_factor((long)terms) * mag_b + sumE;
  free(Ede), free(Mde);
}

static const char *const gbadd_shapes[] = {"N=1,S=1,He=1,A=1", "N=3,S=7,He=13,A=11,pad=2",
                                           "N=5,S=37,He=61,A=33,bv=0,u=1",
                                           "N=4,S=61,He=24,A=65,mask=1",
                                           "N=2,S=200,He=256,A=256,u=1",
                                           /* the GPU form's chunks of 64 positions of
                                            * N S: one short, exactly one, one more, 33 */
                                           "N=1,S=63,He=5,A=7", "N=2,S=32,He=3,A=9,u=1",
                                           "N=5,S=13,He=4,A=6,mask=1", "N=1,S=2053,He=3,A=5",
                                           NULL};

#define GBW_TOL                                                                               \
  "error propagation on magnitudes, 2(K+2)u per K-term sum: dalpha_j = dc.h_j, s = sum "        \
  "alpha dalpha, de_j = scale alpha_j (dalpha_j - s) (with 3 eps for its roundings), then each " \
  "output's accumulation of de-terms (additive: du = de v (1 - u^2) with 2|u| tol(u) + 3 eps); " \
  "invalid positions exactly unchanged; every output starts random (accumulated)"

GRAD_ATTN_OPS(sq_op_grad_attn, "grad.attn", gbw_gen, gbw_run, gbw_tol, GBW_TOL, gbadd_shapes);
