/* The candidate pick of beam_select, one text for both backends: the host
 * path includes it (src/backend/host/host_beam.c) and kernels/beam.cl is
 * compiled with it in front (src/backend/opencl/program.c), so the two rank
 * the K x K candidates of a sentence by the same code, in the same float32
 * order (score = cum + val). Written in the common subset of C11 and OpenCL
 * C 1.2; BEAM_GLOBAL is the inputs' address space (__global in the kernel). */
#ifndef SQ_BEAM_PICK_H
#define SQ_BEAM_PICK_H

#ifdef __OPENCL_VERSION__
#define BEAM_GLOBAL __global
#else
#include <math.h>
#include <stddef.h>
#define BEAM_GLOBAL
#endif

/* Candidate order of beam_select: score (NaN last), lower token, lower hypothesis. */
static int cand_better(float s, int tok, int k, float bs, int btok, int bk) {
  if (isnan(s) != isnan(bs)) return isnan(bs);
  if (!isnan(s) && s != bs) return s > bs;
  if (tok != btok) return tok < btok;
  return k < bk;
}

/* The best candidate of hypotheses row0 .. row0 + K - 1 (live ones only;
 * candidate j of row r: token toks[r K + j], none when < 0, score cum[r] +
 * vals[r K + j]) ranked after the previous pick (ps, ptok, pk; pk < 0: none
 * yet). 1 with it in *bs, *btok and *bk (its hypothesis k), 0 when no
 * candidate is left. Repeated, it ranks them all: the order is strict. */
static int beam_pick(int K, int row0, BEAM_GLOBAL const int *live, BEAM_GLOBAL const int *toks,
                     BEAM_GLOBAL const float *cum, BEAM_GLOBAL const float *vals, float ps,
                     int ptok, int pk, float *bs, int *btok, int *bk) {
  *bs = 0.0f;
  *btok = -1;
  *bk = -1;
  for (int k = 0; k < K; k++) {
    const int r = row0 + k;
    if (!live[r]) continue;
    for (int j = 0; j < K; j++) {
      const int tok = toks[(size_t)r * K + j];
      if (tok < 0) continue;
      const float sc = cum[r] + vals[(size_t)r * K + j];
      if (pk >= 0 && !cand_better(ps, ptok, pk, sc, tok, k)) continue;
      if (*bk < 0 || cand_better(sc, tok, k, *bs, *btok, *bk)) {
        *bs = sc;
        *btok = tok;
        *bk = k;
      }
    }
  }
  return *bk >= 0;
}

#endif
