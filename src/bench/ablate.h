/* Switches that turn single optimisations of the decode path off, so that
 * `seqcl bench --ablate` can show what each one is worth. Default: none set
 * (every optimisation on). Not thread-safe: set before decoding. */
#ifndef SQ_BENCH_ABLATE_H
#define SQ_BENCH_ABLATE_H

enum {
  SQ_ABL_STACK_QUERY = 1u << 0, /* query GEMM stacked under W_hh (one GEMM on s_{t-1}) */
  SQ_ABL_FUSED_ATTN = 1u << 1,  /* score + mask + softmax + context in one kernel */
  SQ_ABL_KEYS_ONCE = 1u << 2,   /* attention keys projected once per batch */
  SQ_ABL_ARGMAX = 1u << 3,      /* argmax without a softmax over the vocabulary */
  SQ_ABL_NO_SYNC = 1u << 4,     /* finished flags read every few steps, not every step */
  /* the own GEMM kernel: the device's small-GEMM kernel (OpenCL), the
   * AVX-512 nn.Linear-layout product (host); off: CLBlast, OpenBLAS */
  SQ_ABL_SMALL_GEMM = 1u << 5,
  SQ_ABL_THREADS = 1u << 6, /* host work split across the cores (off: one thread) */
  SQ_ABL_FUSED_GREEDY = 1u << 8, /* argmax and the EOS bookkeeping in one launch */
  /* Not an ablation: the own small-GEMM kernel for every product it supports,
   * whatever the shape and device (bench compares it with CLBlast). */
  SQ_FORCE_SMALL_GEMM = 1u << 7
};

/* The switches now off (a bitwise OR of SQ_ABL_*). */
unsigned sq_ablated(void);
void sq_ablate_set(unsigned mask);
/* "stack_query" etc. -> its bit; 0 when unknown. */
unsigned sq_ablate_bit(const char *name);
const char *sq_ablate_name(unsigned bit);

#endif
