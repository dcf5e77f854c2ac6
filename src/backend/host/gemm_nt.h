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

/* Weights packed once for products with many rows (gemm_nt.c): B [N, K] as
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
 * fused multiply-add per k, whatever the blocking: the bits do not depend on
 * how the product is split. */
void sq_gemm_nt_panels(int M, int N, int K, float alpha, const float *a, int lda,
                       const float *panels, int n0, float beta, float *c, int ldc);

/* bfloat16 weights paired for the one-row product (decoding at batch 1):
 * B [N, K] in groups of eight rows (zero rows past N), each group stored
 * block by block: for each 32 elements of k (K rounded up to
 * sq_gemm_pairs_row(K), zeros past K), the eight rows' 32 words in turn, and
 * a row's 32 words are 16 pairs: word j holds element j in its low half and
 * element 16 + j in its high half. One 512-bit load then widens into the two
 * vectors of k the float32 product reads, by one shift and one AND (plain
 * bfloat16 takes a shuffle and a shift per 16), and the product reads the
 * copy front to back, one stream. b holds values representable in bfloat16
 * (their bits are kept); sq_gemm_pack_pairs writes sq_gemm_pairs_words(N, K)
 * words. */
int sq_gemm_pairs_row(int K);
size_t sq_gemm_pairs_words(int N, int K);
void sq_gemm_pack_pairs(int N, int K, const float *b, int ldb, uint16_t *pairs);
/* C[M, N] = alpha A B^T + beta C over pairs (rows n0 .. n0 + N - 1 of
 * sq_gemm_pack_pairs's copy, n0 a multiple of 8); only when
 * sq_gemm_nt_available(). The bits of sq_gemm_nt over the float32 values:
 * each lane adds its k in the same order, and the lanes fold in the same
 * tree. */
void sq_gemm_nt_pairs(int M, int N, int K, float alpha, const float *a, int lda,
                      const uint16_t *pairs, int n0, float beta, float *c, int ldc);

#endif
