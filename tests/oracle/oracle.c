/* Naive double-precision loops. No blocking, no tricks: each line follows the
 * formula in SPEC §1. */
#include <math.h>
#include <string.h>

#include "oracle.h"

double oracle_sigmoid(double x) { return 1.0 / (1.0 + exp(-x)); }

void oracle_gemm(int ta, int tb, int M, int N, int K, double alpha, const double *A, int lda,
                 const double *B, int ldb, double beta, double *C, int ldc) {
  for (int i = 0; i < M; i++)
    for (int j = 0; j < N; j++) {
      double s = 0;
      for (int p = 0; p < K; p++) {
        double a = ta ? A[(size_t)p * lda + i] : A[(size_t)i * lda + p];
        double b = tb ? B[(size_t)j * ldb + p] : B[(size_t)p * ldb + j];
        s += a * b;
      }
      double *c = &C[(size_t)i * ldc + j];
      *c = alpha * s + (beta != 0 ? beta * *c : 0);
    }
}

void oracle_linear(int rows, int in, int out, const double *x, int ldx, const double *W,
                   const double *b, double *y, int ldy) {
  for (int r = 0; r < rows; r++)
    for (int o = 0; o < out; o++) {
      double s = b ? b[o] : 0;
      for (int i = 0; i < in; i++) s += x[(size_t)r * ldx + i] * W[(size_t)o * in + i];
      y[(size_t)r * ldy + o] = s;
    }
}

void oracle_attn_scores(sq_score kind, int N, int S, int He, int Hd, int A, const double *keys,
                        const double *q, const double *Wk, const double *bk, const double *Wq,
                        const double *bq, const double *v, const double *bv, double *e) {
  for (int n = 0; n < N; n++)
    for (int j = 0; j < S; j++) {
      const double *h = keys + ((size_t)n * S + j) * He;
      const double *qn = q + (size_t)n * Hd;
      double s = 0;
      if (kind == SQ_SCORE_ADDITIVE) {
        for (int a = 0; a < A; a++) {
          double u = (bk ? bk[a] : 0) + (bq ? bq[a] : 0);
          for (int i = 0; i < He; i++) u += Wk[(size_t)a * He + i] * h[i];
          for (int i = 0; i < Hd; i++) u += Wq[(size_t)a * Hd + i] * qn[i];
          s += v[a] * tanh(u);
        }
        s += bv ? bv[0] : 0;
      } else if (kind == SQ_SCORE_GENERAL) {
        for (int i = 0; i < He; i++) {
          double p = bq ? bq[i] : 0;
          for (int k = 0; k < Hd; k++) p += Wq[(size_t)i * Hd + k] * qn[k];
          s += h[i] * p;
        }
      } else {
        for (int i = 0; i < He; i++) s += h[i] * qn[i];
        if (kind == SQ_SCORE_SCALED_DOT) s /= sqrt((double)He);
      }
      e[(size_t)n * S + j] = s;
    }
}

void oracle_masked_softmax(int N, int S, const double *x, const int32_t *lens,
                           const int32_t *mask, double *y) {
  for (int n = 0; n < N; n++) {
    const double *xr = x + (size_t)n * S;
    double *yr = y + (size_t)n * S;
    double mx = -INFINITY, z = 0;
    int valid_n = 0, nan_or_inf = 0, minus_inf = 0;
    for (int j = 0; j < S; j++) {
      int valid = j < lens[n] && (!mask || mask[(size_t)n * S + j]);
      if (!valid) continue;
      valid_n++;
      nan_or_inf += isnan(xr[j]) || xr[j] == INFINITY;
      minus_inf += xr[j] == -INFINITY;
      if (xr[j] > mx) mx = xr[j];
    }
    /* No softmax (PyTorch's gives NaN): a NaN or +inf score, or valid scores
     * all -inf. NaN at the valid positions, 0 elsewhere. */
    if (valid_n > 0 && (nan_or_inf > 0 || minus_inf == valid_n)) {
      for (int j = 0; j < S; j++)
        yr[j] = j < lens[n] && (!mask || mask[(size_t)n * S + j]) ? NAN : 0;
      continue;
    }
    for (int j = 0; j < S; j++) {
      int valid = j < lens[n] && (!mask || mask[(size_t)n * S + j]);
      yr[j] = valid ? exp(xr[j] - mx) : 0;
      z += yr[j];
    }
    for (int j = 0; j < S; j++) yr[j] /= z;
  }
}

void oracle_context(int N, int S, int He, const double *alpha, const double *keys, double *c) {
  for (int n = 0; n < N; n++)
    for (int i = 0; i < He; i++) {
      double s = 0;
      for (int j = 0; j < S; j++)
        s += alpha[(size_t)n * S + j] * keys[((size_t)n * S + j) * He + i];
      c[(size_t)n * He + i] = s;
    }
}

void oracle_gru_update(int H, const double *gi, const double *gh, const double *b_ih,
                       const double *b_hh, double *h) {
  for (int i = 0; i < H; i++) {
    double bir = b_ih ? b_ih[i] : 0, biz = b_ih ? b_ih[H + i] : 0, bin = b_ih ? b_ih[2 * H + i] : 0;
    double bhr = b_hh ? b_hh[i] : 0, bhz = b_hh ? b_hh[H + i] : 0, bhn = b_hh ? b_hh[2 * H + i] : 0;
    double r = oracle_sigmoid(gi[i] + bir + gh[i] + bhr);
    double z = oracle_sigmoid(gi[H + i] + biz + gh[H + i] + bhz);
    double nn = tanh(gi[2 * H + i] + bin + r * (gh[2 * H + i] + bhn));
    h[i] = (1 - z) * nn + z * h[i];
  }
}

/* gi = W_ih x (no bias) and gh = W_hh h for one row, then the update. */
static void gru_row(int In, int H, const double *x, const double *W_ih, const double *W_hh,
                    const double *b_ih, const double *b_hh, double *h, double *gi, double *gh) {
  oracle_linear(1, In, 3 * H, x, In, W_ih, NULL, gi, 3 * H);
  oracle_linear(1, H, 3 * H, h, H, W_hh, NULL, gh, 3 * H);
  oracle_gru_update(H, gi, gh, b_ih, b_hh, h);
}

void oracle_gru_cell(int N, int In, int H, const double *x, int ldx, const double *W_ih,
                     const double *W_hh, const double *b_ih, const double *b_hh, double *h) {
  double gi[3 * 4096], gh[3 * 4096]; /* the op list keeps H <= 4096 in the tests */
  for (int n = 0; n < N; n++)
    gru_row(In, H, x + (size_t)n * ldx, W_ih, W_hh, b_ih, b_hh, h + (size_t)n * H, gi, gh);
}

void oracle_gru_layer(int N, int T, int In, int H, const double *x, const double *W_ih,
                      const double *W_hh, const double *b_ih, const double *b_hh,
                      const int32_t *lens, int reverse, double *h, double *out, int out_width,
                      int out_col) {
  double gi[3 * 4096], gh[3 * 4096];
  for (int n = 0; n < N; n++) {
    int len = lens ? lens[n] : T;
    for (int s = 0; s < len; s++) {
      int t = reverse ? len - 1 - s : s;
      double *hn = h + (size_t)n * H;
      gru_row(In, H, x + ((size_t)n * T + t) * In, W_ih, W_hh, b_ih, b_hh, hn, gi, gh);
      memcpy(out + ((size_t)n * T + t) * out_width + out_col, hn, (size_t)H * sizeof *hn);
    }
  }
}

void oracle_embedding(int N, int D, const int32_t *ids, const double *table, double *out) {
  for (int n = 0; n < N; n++)
    for (int d = 0; d < D; d++) out[(size_t)n * D + d] = table[(size_t)ids[n] * D + d];
}

void oracle_argmax(int N, int V, const float *x, int ld, const float *bias, double *ids) {
  for (int n = 0; n < N; n++) {
    int best = 0;
    float bv = 0;
    for (int v = 0; v < V; v++) {
      float s = x[(size_t)n * ld + v] + (bias ? bias[v] : 0.0f);
      if (s != s) { /* NaN counts as the largest, the first one winning (torch.argmax) */
        best = v;
        break;
      }
      if (v == 0 || s > bv) best = v, bv = s;
    }
    ids[n] = best;
  }
}

void oracle_log_softmax(int N, int V, const double *x, double *y) {
  for (int n = 0; n < N; n++) {
    const double *xr = x + (size_t)n * V;
    double mx = -INFINITY, z = 0;
    for (int v = 0; v < V; v++) mx = xr[v] > mx ? xr[v] : mx;
    for (int v = 0; v < V; v++) z += exp(xr[v] - mx);
    for (int v = 0; v < V; v++) y[(size_t)n * V + v] = xr[v] - mx - log(z);
  }
}

double oracle_cross_entropy(int N, int V, const double *x, const int32_t *labels) {
  double sum = 0;
  int valid = 0;
  for (int n = 0; n < N; n++) {
    if (labels[n] < 0) continue;
    const double *xr = x + (size_t)n * V;
    double mx = -INFINITY, z = 0;
    for (int v = 0; v < V; v++) mx = xr[v] > mx ? xr[v] : mx;
    for (int v = 0; v < V; v++) z += exp(xr[v] - mx);
    sum += -(xr[labels[n]] - mx - log(z));
    valid++;
  }
  return valid ? sum / valid : 0;
}
