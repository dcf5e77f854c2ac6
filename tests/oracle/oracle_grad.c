/* The oracle of the backward entries (grad.*): the same definitions as
 * backend.h (the training slots) in double precision, from the entries' named inputs. */
#include <math.h>
#include <string.h>

#include "core/error.h"
#include "oracle.h"

#define SH(key, dflt) sq_shape_int(&c->shape, key, dflt)

/* Shared with the entries so both sides use the same float parameters. */
float sq_grad_ce_scale(const sq_case *c);
void sq_grad_adam_params(const sq_case *c, float *b1, float *b2, float *eps, float *step_size,
                         float *bc2_sqrt);

static void ref_ce(const sq_case *c, double *const *ref) {
  int N = SH("N", 1), V = SH("V", 1);
  const float *x = sq_case_inf(c, "x");
  const int32_t *labels = sq_case_ini(c, "labels");
  double scale = sq_grad_ce_scale(c);
  for (int n = 0; n < N; n++) {
    const float *row = x + (size_t)n * V;
    double *d = ref[0] + (size_t)n * V;
    if (labels[n] < 0) {
      memset(d, 0, sizeof *d * (size_t)V);
      continue;
    }
    double mx = row[0], z = 0;
    for (int v = 1; v < V; v++) mx = row[v] > mx ? row[v] : mx;
    for (int v = 0; v < V; v++) z += exp(row[v] - mx);
    for (int v = 0; v < V; v++) d[v] = scale * (exp(row[v] - mx) / z - (v == labels[n]));
  }
}

static void ref_bias(const sq_case *c, double *const *ref) {
  int R = SH("R", 1), C = SH("C", 1), ld = C + SH("pad", 0);
  const float *dy = sq_case_inf(c, "dy"), *db0 = sq_case_inf(c, "db0");
  for (int j = 0; j < C; j++) {
    double s = db0[j];
    for (int r = 0; r < R; r++) s += dy[(size_t)r * ld + j];
    ref[0][j] = s;
  }
}

static void ref_tanh(const sq_case *c, double *const *ref) {
  const float *y = sq_case_inf(c, "y"), *dy = sq_case_inf(c, "dy");
  for (size_t i = 0; i < c->out[0].n; i++) ref[0][i] = (double)dy[i] * (1.0 - (double)y[i] * y[i]);
}

static void ref_embedding(const sq_case *c, double *const *ref) {
  int N = SH("N", 1), D = SH("D", 1), V = SH("V", 1), ld = D + SH("pad", 0), pid = SH("pid", -1);
  const int32_t *ids = sq_case_ini(c, "ids");
  const float *dy = sq_case_inf(c, "dy"), *dt0 = sq_case_inf(c, "dtable0");
  for (size_t e = 0; e < (size_t)V * D; e++) ref[0][e] = dt0[e];
  for (int n = 0; n < N; n++)
    if (ids[n] != pid)
      for (int d = 0; d < D; d++) ref[0][(size_t)ids[n] * D + d] += dy[(size_t)n * ld + d];
}

static void ref_linear(const sq_case *c, double *const *ref) {
  int R = SH("R", 1), I = SH("I", 1), O = SH("O", 1), pad = SH("pad", 0);
  int lx = I + pad, ly = O + pad;
  double beta = (float)sq_shape_get(&c->shape, "beta", 1);
  const float *x = sq_case_inf(c, "x"), *W = sq_case_inf(c, "W"), *dy = sq_case_inf(c, "dy");
  const float *dx0 = sq_case_inf(c, "dx0"), *dW0 = sq_case_inf(c, "dW0");
  const float *db0 = sq_case_inf(c, "db0");
  for (int r = 0; r < R; r++)
    for (int i = 0; i < I; i++) {
      double s = beta * dx0[(size_t)r * lx + i];
      for (int o = 0; o < O; o++) s += (double)dy[(size_t)r * ly + o] * W[(size_t)o * I + i];
      ref[0][(size_t)r * I + i] = s;
    }
  for (int o = 0; o < O; o++)
    for (int i = 0; i < I; i++) {
      double s = dW0[(size_t)o * I + i];
      for (int r = 0; r < R; r++) s += (double)dy[(size_t)r * ly + o] * x[(size_t)r * lx + i];
      ref[1][(size_t)o * I + i] = s;
    }
  if (db0)
    for (int o = 0; o < O; o++) {
      double s = db0[o];
      for (int r = 0; r < R; r++) s += dy[(size_t)r * ly + o];
      ref[2][o] = s;
    }
}

static void ref_sum_squares(const sq_case *c, double *const *ref) {
  const float *x = sq_case_inf(c, "x");
  double s = 0;
  for (int i = 0; i < SH("n", 1); i++) s += (double)x[i] * x[i];
  ref[0][0] = s;
}

static void ref_scale(const sq_case *c, double *const *ref) {
  const float *x = sq_case_inf(c, "x0");
  double s = (float)sq_shape_get(&c->shape, "s", 0.37);
  for (size_t i = 0; i < c->out[0].n; i++) ref[0][i] = x[i] * s;
}

static void ref_adam(const sq_case *c, double *const *ref) {
  float b1, b2, eps, step, bc2;
  sq_grad_adam_params(c, &b1, &b2, &eps, &step, &bc2);
  const float *p = sq_case_inf(c, "p0"), *g = sq_case_inf(c, "g");
  const float *m0 = sq_case_inf(c, "m0"), *v0 = sq_case_inf(c, "v0");
  for (size_t i = 0; i < c->out[0].n; i++) {
    double m = b1 * (double)m0[i] + (1.0 - b1) * g[i];
    double v = b2 * (double)v0[i] + (1.0 - b2) * (double)g[i] * g[i];
    ref[1][i] = m;
    ref[2][i] = v;
    ref[0][i] = p[i] - (double)step * m / (sqrt(v) / bc2 + eps);
  }
}

/* Row n's time index at the case's step (as backend.h defines it), or -1 when
 * the row has already ended (step >= its length). */
static int gru_row_time(const sq_case *c, int n) {
  const int32_t *lens = sq_case_ini(c, "lens");
  int step = SH("step", 0), len = lens ? lens[n] : step + 1;
  if (step >= len) return -1;
  return SH("rev", 0) ? len - 1 - step : step;
}

/* The gates r, z, n and hn = gh_n + b_hn of row n at time t. */
static void gru_gates_of(const sq_case *c, int n, int t, int i, double *r, double *z, double *nn,
                         double *hn) {
  int T = SH("T", 1), H = SH("H", 1), ld = 3 * H + SH("pad", 0);
  const float *gi = sq_case_inf(c, "gi") + ((size_t)n * T + t) * 3 * H;
  const float *gh = sq_case_inf(c, "gh") + (size_t)n * ld;
  const float *bi = sq_case_inf(c, "b_ih"), *bh = sq_case_inf(c, "b_hh");
  double bir = bi ? bi[i] : 0, biz = bi ? bi[H + i] : 0, bin = bi ? bi[2 * H + i] : 0;
  double bhr = bh ? bh[i] : 0, bhz = bh ? bh[H + i] : 0, bhn = bh ? bh[2 * H + i] : 0;
  *r = oracle_sigmoid(gi[i] + bir + gh[i] + bhr);
  *z = oracle_sigmoid(gi[H + i] + biz + gh[H + i] + bhz);
  *hn = gh[2 * H + i] + bhn;
  *nn = tanh(gi[2 * H + i] + bin + *r * *hn);
}

static void ref_gru_fwd(const sq_case *c, double *const *ref) {
  int N = SH("N", 1), T = SH("T", 1), H = SH("H", 1);
  const float *h = sq_case_inf(c, "h");
  memset(ref[1], 0, c->out[1].n * sizeof(double));
  memset(ref[2], 0, c->out[2].n * sizeof(double));
  for (int n = 0; n < N; n++) {
    const int t = gru_row_time(c, n);
    const int active = t >= 0;
    for (int i = 0; i < H; i++) {
      double hv = h[(size_t)n * H + i];
      if (active) {
        double r, z, nn, hn;
        gru_gates_of(c, n, t, i, &r, &z, &nn, &hn);
        hv = (1 - z) * nn + z * hv;
        double *sv = ref[2] + ((size_t)n * T + t) * 4 * H;
        sv[i] = r, sv[H + i] = z, sv[2 * H + i] = nn, sv[3 * H + i] = hn;
        ref[1][((size_t)n * T + t) * H + i] = hv;
      }
      ref[0][(size_t)n * H + i] = hv;
    }
  }
}

static void ref_gru_bwd(const sq_case *c, double *const *ref) {
  int N = SH("N", 1), T = SH("T", 1), H = SH("H", 1), ld = 3 * H + SH("pad", 0);
  const float *dh0 = sq_case_inf(c, "dh0"), *dout = sq_case_inf(c, "dout");
  const float *hp = sq_case_inf(c, "h"), *sv = sq_case_inf(c, "saved");
  const float *dgi0 = sq_case_inf(c, "dgi0"), *dgh0 = sq_case_inf(c, "dgh0");
  (void)dgh0;
  for (size_t e = 0; e < c->out[1].n; e++) ref[1][e] = dgi0[e];
  for (int n = 0; n < N; n++) {
    const int t = gru_row_time(c, n);
    const int active = t >= 0;
    for (int i = 0; i < H; i++) {
      double *dh = ref[0] + (size_t)n * H + i, *dgh = ref[2] + (size_t)n * 3 * H;
      *dh = dh0[(size_t)n * H + i];
      if (!active) {
        dgh[i] = dgh[H + i] = dgh[2 * H + i] = 0;
        continue;
      }
      double r, z, nn, hn;
      if (sv) {
        const float *s = sv + ((size_t)n * T + t) * 4 * H;
        r = s[i], z = s[H + i], nn = s[2 * H + i], hn = s[3 * H + i];
      } else {
        gru_gates_of(c, n, t, i, &r, &z, &nn, &hn);
      }
      double d = *dh + (dout ? dout[((size_t)n * T + t) * H + i] : 0);
      double dan = d * (1 - z) * (1 - nn * nn);
      double daz = d * (hp[(size_t)n * H + i] - nn) * z * (1 - z);
      double dar = dan * hn * r * (1 - r);
      double *dgi = ref[1] + ((size_t)n * T + t) * 3 * H;
      dgi[i] = dar, dgi[H + i] = daz, dgi[2 * H + i] = dan;
      dgh[i] = dar, dgh[H + i] = daz, dgh[2 * H + i] = dan * r;
      *dh = d * z;
    }
  }
  (void)ld;
}

/* ---- attention (grad.attn_fwd.*, grad.attn.*): qp and pkeys are inputs ---- */
typedef struct gattn {
  sq_score kind;
  int N, S, He, A, W, ldq;
  double scale;
} gattn;

static gattn gattn_of(const sq_case *c) {
  gattn d;
  d.kind = (sq_score)c->op->variant;
  d.N = SH("N", 1), d.S = SH("S", 1), d.He = SH("He", 1);
  d.A = d.kind == SQ_SCORE_ADDITIVE ? SH("A", 1) : 0;
  d.W = d.kind == SQ_SCORE_ADDITIVE ? d.A : d.He;
  d.ldq = d.W + SH("pad", 0);
  d.scale = d.kind == SQ_SCORE_SCALED_DOT ? (double)(1.0f / sqrtf((float)d.He)) : 1.0;
  return d;
}

static int gattn_valid(const sq_case *c, int S, int n, int j) {
  const int32_t *lens = sq_case_ini(c, "lens"), *mask = sq_case_ini(c, "mask");
  if (j >= lens[n]) return 0;
  return !mask || mask[(size_t)n * S + j] != 0;
}

static double gattn_u(const sq_case *c, const gattn *d, int n, int j, int a) {
  size_t e = ((size_t)n * d->S + j) * d->A + a;
  return tanh((double)sq_case_inf(c, "pkeys")[e] + sq_case_inf(c, "qp")[(size_t)n * d->ldq + a]);
}

static double gattn_e(const sq_case *c, const gattn *d, int n, int j) {
  const float *qp = sq_case_inf(c, "qp") + (size_t)n * d->ldq;
  const float *h = sq_case_inf(c, "keys") + ((size_t)n * d->S + j) * d->He;
  double e = 0;
  if (d->kind == SQ_SCORE_ADDITIVE) {
    const float *v = sq_case_inf(c, "v"), *bv = sq_case_inf(c, "bv");
    for (int a = 0; a < d->A; a++) e += v[a] * gattn_u(c, d, n, j, a);
    return e + (bv ? bv[0] : 0);
  }
  for (int k = 0; k < d->He; k++) e += (double)h[k] * qp[k];
  return e * d->scale;
}

static void ref_attn_fwd(const sq_case *c, double *const *ref) {
  gattn d = gattn_of(c);
  const float *keys = sq_case_inf(c, "keys");
  for (int n = 0; n < d.N; n++) {
    double *al = ref[1] + (size_t)n * d.S, mx = -INFINITY, z = 0;
    for (int j = 0; j < d.S; j++) {
      al[j] = gattn_valid(c, d.S, n, j) ? gattn_e(c, &d, n, j) : -INFINITY;
      mx = al[j] > mx ? al[j] : mx;
    }
    for (int j = 0; j < d.S; j++) z += al[j] == -INFINITY ? 0 : exp(al[j] - mx);
    for (int j = 0; j < d.S; j++) al[j] = al[j] == -INFINITY ? 0 : exp(al[j] - mx) / z;
    for (int i = 0; i < d.He; i++) {
      double s = 0;
      for (int j = 0; j < d.S; j++) s += al[j] * keys[((size_t)n * d.S + j) * d.He + i];
      ref[0][(size_t)n * d.He + i] = s;
    }
    if (d.kind == SQ_SCORE_ADDITIVE)
      for (int j = 0; j < d.S; j++)
        for (int a = 0; a < d.A; a++)
          ref[2][((size_t)n * d.S + j) * d.A + a] =
              gattn_valid(c, d.S, n, j) ? gattn_u(c, &d, n, j, a) : 0;
  }
}

static void ref_attn_bwd(const sq_case *c, double *const *ref) {
  gattn d = gattn_of(c);
  int add = d.kind == SQ_SCORE_ADDITIVE;
  const float *keys = sq_case_inf(c, "keys"), *qp = sq_case_inf(c, "qp");
  const float *dc = sq_case_inf(c, "dc"), *al = sq_case_inf(c, "alpha");
  const float *v = sq_case_inf(c, "v"), *us = sq_case_inf(c, "u");
  int ldc = d.He + SH("pad", 0);
  const char *starts[5] = {"dqp0", "dkeys0", "dpkeys0", "dv0", "dbv0"};
  for (int k = 0; k < c->n_out; k++) {
    const float *s0 = sq_case_inf(c, starts[k]);
    if (k == 0) {
      for (int n = 0; n < d.N; n++)
        for (int w = 0; w < d.W; w++) ref[0][(size_t)n * d.W + w] = s0[(size_t)n * d.ldq + w];
    } else {
      for (size_t e = 0; e < c->out[k].n; e++) ref[k][e] = s0[e];
    }
  }
  for (int n = 0; n < d.N; n++) {
    const float *dcn = dc + (size_t)n * ldc, *q = qp + (size_t)n * d.ldq;
    double sdot = 0;
    for (int j = 0; j < d.S; j++)
      if (gattn_valid(c, d.S, n, j)) {
        double da = 0;
        for (int k = 0; k < d.He; k++) da += (double)dcn[k] * keys[((size_t)n * d.S + j) * d.He + k];
        sdot += al[(size_t)n * d.S + j] * da;
      }
    for (int j = 0; j < d.S; j++) {
      if (!gattn_valid(c, d.S, n, j)) continue;
      const float *h = keys + ((size_t)n * d.S + j) * d.He;
      double aj = al[(size_t)n * d.S + j], da = 0;
      for (int k = 0; k < d.He; k++) da += (double)dcn[k] * h[k];
      double de = aj * (da - sdot) * d.scale;
      double *dk = ref[1] + ((size_t)n * d.S + j) * d.He;
      for (int k = 0; k < d.He; k++) dk[k] += aj * dcn[k];
      if (!add) {
        for (int k = 0; k < d.He; k++) {
          ref[0][(size_t)n * d.W + k] += de * h[k];
          dk[k] += de * q[k];
        }
        continue;
      }
      for (int a = 0; a < d.A; a++) {
        size_t e = ((size_t)n * d.S + j) * d.A + a;
        double u = us ? us[e] : gattn_u(c, &d, n, j, a);
        double du = de * v[a] * (1 - u * u);
        ref[2][e] += du;
        ref[0][(size_t)n * d.W + a] += du;
        ref[3][a] += de * u;
      }
      if (c->n_out > 4) ref[4][0] += de;
    }
  }
}

static const struct {
  const char *name;
  void (*fn)(const sq_case *, double *const *);
} grad_refs[] = {
    {"grad.cross_entropy", ref_ce},   {"grad.bias", ref_bias},
    {"grad.tanh", ref_tanh},          {"grad.embedding", ref_embedding},
    {"grad.linear", ref_linear},      {"grad.sum_squares", ref_sum_squares},
    {"grad.scale", ref_scale},        {"grad.adam", ref_adam},
    {"grad.gru_fwd", ref_gru_fwd},    {"grad.gru_gates", ref_gru_bwd},
    {"grad.attn_fwd.additive", ref_attn_fwd}, {"grad.attn_fwd.general", ref_attn_fwd},
    {"grad.attn_fwd.dot", ref_attn_fwd},      {"grad.attn_fwd.scaled_dot", ref_attn_fwd},
    {"grad.attn.additive", ref_attn_bwd},     {"grad.attn.general", ref_attn_bwd},
    {"grad.attn.dot", ref_attn_bwd},          {"grad.attn.scaled_dot", ref_attn_bwd},
};

seqcl_status oracle_grad_reference(const sq_case *c, double *const *ref) {
  for (size_t i = 0; i < sizeof grad_refs / sizeof grad_refs[0]; i++)
    if (!strcmp(c->op->name, grad_refs[i].name)) {
      grad_refs[i].fn(c, ref);
      return SEQCL_OK;
    }
  return sq_fail(NULL, SEQCL_ERR_UNSUPPORTED, "the oracle has no reference for %s", c->op->name);
}
