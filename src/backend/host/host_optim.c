/* The optimiser's slots on the host: the squared norm (gradient clipping),
 * scaling and the Adam step, split across the host pool where they are long. */
#include <limits.h>
#include <math.h>

#include "backend/host/gemm_nt.h"
#include "backend/host/host.h"
#include "backend/host/pool.h"

/* The squared norm in chunks whose size depends only on the count (at least
 * SQ_CHUNK elements, at most SQ_MAX_CHUNKS chunks), each summed into eight
 * double partial sums (element i into sum i % 8, added in a fixed tree), the
 * chunks' sums then added in chunk order: the bits depend on the count, never
 * on the thread count, and the chunks split across the pool. One chain of
 * dependent double additions on one thread was 2% of a G2P training step. */
enum { SQ_CHUNK = 4096, SQ_MAX_CHUNKS = 256 };

typedef struct squares_job {
  const float *x;
  size_t count, chunk;
  double *sums;
} squares_job;

static void squares_chunks(void *arg, int lo, int hi) {
  const squares_job *j = arg;
  for (int c = lo; c < hi; c++) {
    const size_t from = (size_t)c * j->chunk;
    const size_t to = j->count - from < j->chunk ? j->count : from + j->chunk;
    const float *x = j->x;
    double s[8] = {0};
    size_t i = from;
    for (; i + 8 <= to; i += 8)
      for (int k = 0; k < 8; k++) s[k] += (double)x[i + k] * x[i + k];
    for (int k = 0; i < to; i++, k++) s[k] += (double)x[i] * x[i];
    j->sums[c] = ((s[0] + s[4]) + (s[2] + s[6])) + ((s[1] + s[5]) + (s[3] + s[7]));
  }
}

seqcl_status sq_host_sum_squares(sq_backend *be, size_t count, sq_ref xr, sq_ref out) {
  double sums[SQ_MAX_CHUNKS];
  size_t chunk = (count + SQ_MAX_CHUNKS - 1) / SQ_MAX_CHUNKS;
  if (chunk < SQ_CHUNK) chunk = SQ_CHUNK;
  const int chunks = count ? (int)((count + chunk - 1) / chunk) : 0;
  squares_job j = {sq_host_f32(xr), count, chunk, sums};
  sq_pool_for(be, chunks, 2.0 * (double)count, squares_chunks, &j);
  double t = 0.0;
  for (int c = 0; c < chunks; c++) t += sums[c];
  sq_host_f32(out)[0] = (float)t;
  return SEQCL_OK;
}

seqcl_status sq_host_scale(sq_backend *be, size_t count, sq_ref xr, float s) {
  (void)be;
  float *x = sq_host_f32(xr);
  for (size_t i = 0; i < count; i++) x[i] *= s;
  return SEQCL_OK;
}

typedef struct adam_job {
  float *p, *m, *v;
  const float *g;
  float b1, b2, eps, step_size, bc2_sqrt;
} adam_job;

/* Elements [lo, hi) in plain C: the reference form, the tail of the vector
 * form and the whole loop where that does not run. */
static void adam_scalar(const adam_job *j, int lo, int hi) {
  float *restrict p = j->p, *restrict m = j->m, *restrict v = j->v;
  const float *restrict g = j->g;
  const float b1 = j->b1, b2 = j->b2, c1 = 1.f - b1, c2 = 1.f - b2;
  for (int i = lo; i < hi; i++) {
    const float mi = b1 * m[i] + c1 * g[i];
    const float vi = b2 * v[i] + c2 * g[i] * g[i];
    m[i] = mi;
    v[i] = vi;
    p[i] -= j->step_size * mi / (sqrtf(vi) / j->bc2_sqrt + j->eps);
  }
}

/* Sixteen lanes of AVX-512 where the CPU has it. Why by hand: sqrtf may set
 * errno, so without -fno-math-errno the compiler keeps that loop scalar, and
 * a scalar square root and division per parameter were 6% of a G2P training
 * step. Each lane does the scalar form's operations in its order (no fused
 * multiply-add; vector sqrt and division round as the scalar ones do), so
 * the bits are the same. */
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define ADAM_VECTOR 1
__attribute__((target("avx512f"))) static int adam_avx512(const adam_job *j, int lo, int hi) {
  const __m512 b1 = _mm512_set1_ps(j->b1), b2 = _mm512_set1_ps(j->b2);
  const __m512 c1 = _mm512_set1_ps(1.f - j->b1), c2 = _mm512_set1_ps(1.f - j->b2);
  const __m512 step = _mm512_set1_ps(j->step_size), bc2 = _mm512_set1_ps(j->bc2_sqrt);
  const __m512 eps = _mm512_set1_ps(j->eps);
  int i = lo;
  for (; i + 16 <= hi; i += 16) {
    const __m512 g = _mm512_loadu_ps(j->g + i);
    const __m512 m = _mm512_add_ps(_mm512_mul_ps(b1, _mm512_loadu_ps(j->m + i)),
                                   _mm512_mul_ps(c1, g));
    const __m512 v = _mm512_add_ps(_mm512_mul_ps(b2, _mm512_loadu_ps(j->v + i)),
                                   _mm512_mul_ps(_mm512_mul_ps(c2, g), g));
    const __m512 den = _mm512_add_ps(_mm512_div_ps(_mm512_sqrt_ps(v), bc2), eps);
    const __m512 p = _mm512_sub_ps(_mm512_loadu_ps(j->p + i),
                                   _mm512_div_ps(_mm512_mul_ps(step, m), den));
    _mm512_storeu_ps(j->m + i, m);
    _mm512_storeu_ps(j->v + i, v);
    _mm512_storeu_ps(j->p + i, p);
  }
  return i;
}
#endif

static void adam_range(void *arg, int lo, int hi) {
  const adam_job *j = arg;
#ifdef ADAM_VECTOR
  if (sq_gemm_nt_available()) lo = adam_avx512(j, lo, hi); /* the CPU runs AVX-512F */
#endif
  adam_scalar(j, lo, hi);
}

seqcl_status sq_host_adam(sq_backend *be, size_t count, sq_ref pr, sq_ref gr, sq_ref mr,
                           sq_ref vr, float b1, float b2, float eps, float step_size,
                           float bc2_sqrt) {
  (void)be;
  sq_host_packed_drop_range(pr.buf, pr.off, count); /* the weights change */
  adam_job j = {sq_host_f32(pr), sq_host_f32(mr), sq_host_f32(vr), sq_host_f32(gr), b1, b2, eps, step_size, bc2_sqrt};
  /* elementwise: any split gives the same bits */
  for (size_t at = 0; at < count;) {
    const int n = count - at > (size_t)INT_MAX ? INT_MAX : (int)(count - at);
    adam_job part = j;
    part.p += at, part.m += at, part.v += at, part.g += at;
    sq_pool_for(be, n, 20.0 * n, adam_range, &part);
    at += (size_t)n;
  }
  sq_host_packed_refresh(be, pr.buf);
  return SEQCL_OK;
}
