/* The host's own product for the nn.Linear layout (gemm_nt.c):
 * C[M, N] = alpha * A[M, K] B[N, K]^T + beta * C, all row-major. */
#ifndef SQ_BACKEND_HOST_GEMM_NT_H
#define SQ_BACKEND_HOST_GEMM_NT_H

#include <stddef.h>
#include <stdint.h>

/* Whether this CPU runs the own kernel, i.e. has AVX-512F (detected once;
 * the other AVX-512 loops of the host path ask here too). */
int sq_gemm_nt_available(void);

/* The product; only when sq_gemm_nt_available(). With beta = 0, C is not
 * read (it may hold anything). */
void sq_gemm_nt(int M, int N, int K, float alpha, const float *a, int lda, const float *b,
                int ldb, float beta, float *c, int ldc);

/* The same product with B held as 16-bit values (width: core/halfwidth.h's
 * SQ_HALF_BF16 or SQ_HALF_F16), widened exactly on load: the bits sq_gemm_nt
 * gives for a float32 B of the same values. */
void sq_gemm_nt_half(int M, int N, int K, float alpha, const float *a, int lda,
                     const uint16_t *b, int ldb, int width, float beta, float *c, int ldc);

/* Weights packed once for the products over them (gemm_nt.c): B [N, K] as
 * ceil(N / 16) panels of K x 16 floats (panel p holds columns 16p..16p+15,
 * k-major, zeros past N), so the product broadcasts A and reads B in the
 * order it uses it, with no packing per call. sq_gemm_panels_floats is the
 * size of the packed copy; sq_gemm_pack writes it (64-byte aligned panels). */
size_t sq_gemm_panels_floats(int N, int K);
void sq_gemm_pack(int N, int K, const float *b, int ldb, float *panels);
/* The same panels for C = A B with B stored [K, N] (row k at b + k ldb): the
 * backward's dX = dY W. Panel p's row k is B's row k, columns 16p..16p+15,
 * so sq_gemm_nt_panels then computes A B, with the same bits as
 * sq_gemm_nn (gemm_direct.h) reading B in place. */
void sq_gemm_pack_kn(int K, int N, const float *b, int ldb, float *panels);

/* C[M, N] = alpha A B^T + beta C with B given as panels (sq_gemm_pack of the
 * whole B; columns n0..n0+N of it, n0 a multiple of 16); only when
 * sq_gemm_nt_available(). Each element is one float sum over k in order, one
 * fused multiply-add per k, whatever the blocking and the row count: the
 * bits do not depend on how the product is split, nor on how many rows of A
 * it has. */
void sq_gemm_nt_panels(int M, int N, int K, float alpha, const float *a, int lda,
                       const float *panels, int n0, float beta, float *c, int ldc);

/* The same panels at 16 bits (bfloat16 or binary16 weights: width is
 * core/halfwidth.h's SQ_HALF_BF16 or SQ_HALF_F16), with k taken in pairs:
 * panel p holds ceil(K / 2) pairs of 64 bytes, pair t columns 16p..16p+15's
 * elements 2t and 2t + 1 (zeros past N and K): for bfloat16, 32-bit word j
 * holds column j's element 2t in its low half and 2t + 1 in its high half;
 * for binary16, 16-bit half j holds element 2t and half 16 + j element
 * 2t + 1. One 512-bit load then widens into two of the float32 panels' rows,
 * exactly (bfloat16: a shift and an AND; binary16: vcvtph2ps of each 256-bit
 * half), so the product reads half the bytes. b holds values representable at the width
 * (their bits are kept); sq_gemm_pack_half_panels writes
 * sq_gemm_half_panels_words(N, K) words. */
size_t sq_gemm_half_panels_words(int N, int K);
void sq_gemm_pack_half_panels(int N, int K, const float *b, int ldb, int width,
                              uint32_t *panels);
/* sq_gemm_nt_panels over 16-bit panels (columns n0..n0+N of the packed
 * copy, n0 a multiple of 16); only when sq_gemm_nt_available(). The bits of
 * sq_gemm_nt_panels over the float32 values: each element adds the same
 * products in the same order. */
void sq_gemm_nt_half_panels(int M, int N, int K, float alpha, const float *a, int lda,
                            const uint32_t *panels, int n0, int width, float beta, float *c,
                            int ldc);

#endif
