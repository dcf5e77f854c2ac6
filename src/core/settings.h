/* Per-context settings: the switches that change which code runs (kernel
 * forms, the GEMM choice, the host thread cap, the benchmark's ablations).
 * Read once from the environment when a context opens (sq_settings_from_env)
 * and kept in the context, so two contexts in one process never see each
 * other's switches; `seqcl bench` changes a context's ablations through
 * sq_ctx_set_ablated (core/ctx.h), not through a global. */
#ifndef SQ_CORE_SETTINGS_H
#define SQ_CORE_SETTINGS_H

#include <seqcl/seqcl.h>

/* SEQCL_KERNELS: which form of the kernels that have two (fused attention,
 * GRU gates, decode-step GEMM, beam_topk, cross_entropy) an OpenCL device
 * runs; auto follows the device type. */
typedef enum sq_kernel_forms {
  SQ_FORMS_AUTO = 0,
  SQ_FORMS_CPU = 1,
  SQ_FORMS_GPU = 2
} sq_kernel_forms;

/* SEQCL_GEMM: which GEMM an OpenCL device runs the products the own small-GEMM
 * kernel supports with (backend/opencl/gemm_small.c); measured: the faster
 * of the two at first use, kept in the cache folder (gemm_policy.c), which
 * auto does on devices that are not CPUs. */
typedef enum sq_gemm_choice {
  SQ_GEMM_AUTO = 0,
  SQ_GEMM_SMALL = 1,
  SQ_GEMM_CLBLAST = 2,
  SQ_GEMM_MEASURED = 3
} sq_gemm_choice;

/* Switches that turn single optimisations of the decode path off, so that
 * `seqcl bench --ablate` can show what each one is worth. Default: none set
 * (every optimisation on). Names: bench/ablate.c. */
enum {
  SQ_ABL_STACK_QUERY = 1u << 0, /* query GEMM stacked under W_hh (one GEMM on s_{t-1}) */
  SQ_ABL_FUSED_ATTN = 1u << 1,  /* score + mask + softmax + context in one kernel */
  SQ_ABL_KEYS_ONCE = 1u << 2,   /* attention keys projected once per batch */
  SQ_ABL_ARGMAX = 1u << 3,      /* argmax without a softmax over the vocabulary */
  SQ_ABL_NO_SYNC = 1u << 4,     /* finished flags read every few steps, not every step */
  /* the own GEMM kernel: the device's small-GEMM kernel (OpenCL), the
   * AVX-512 nn.Linear-layout product and the backward's in-place products
   * (host, gemm_direct.c); off: CLBlast, OpenBLAS */
  SQ_ABL_SMALL_GEMM = 1u << 5,
  SQ_ABL_THREADS = 1u << 6, /* host work split across the cores (off: one thread) */
  SQ_ABL_FUSED_GREEDY = 1u << 8, /* argmax and the EOS bookkeeping in one launch */
  /* output over [s ; c] as one product over the row [s | c | e] (else two) */
  SQ_ABL_OUTPUT_ONE_GEMM = 1u << 9,
  /* the host's products with many rows read the frozen weights packed once
   * (host_packed.c); off: OpenBLAS packs them in every product */
  SQ_ABL_PACKED = 1u << 10,
  /* the decoder's embedding read through its per-token share of the GRU
   * input product (model/dec_table.c); off: embedded, then multiplied */
  SQ_ABL_DEC_TABLE = 1u << 11,
  /* beam search's K hypotheses of a sentence read its one encoding
   * (sq_encoded_group); off: the encoding copied K times. Not in the greedy
   * ablation table: the model tests compare beam outputs both ways */
  SQ_ABL_BEAM_SHARED = 1u << 12,
  /* a batch's lines decoded as one independent part per host thread, each
   * part's slots on its thread alone (model/decode.c); off: the batch as one,
   * each slot split across the threads */
  SQ_ABL_SPLIT_BATCH = 1u << 13,
  /* Not an ablation: the own small-GEMM kernel for every product it supports,
   * whatever the shape and device (bench compares it with CLBlast). */
  SQ_FORCE_SMALL_GEMM = 1u << 7
};

typedef struct sq_settings {
  sq_kernel_forms kernels; /* SEQCL_KERNELS=auto|cpu|gpu */
  sq_gemm_choice gemm;     /* SEQCL_GEMM=auto|small|clblast|measured */
  /* SEQCL_THREADS=1..64, 0 when unset. The host worker pool is process-wide
   * (one set of threads serves every context), so it is sized once from the
   * variable at its first use (backend/host/threads.c); a context can only
   * use fewer threads than the pool has, never more. */
  int threads;
  unsigned ablated; /* the SQ_ABL_* switches now off; set by the benchmark only */
} sq_settings;

/* What SEQCL_THREADS may hold, for messages. */
#define SQ_THREADS_WANT "an integer from 1 to 64"
/* SEQCL_THREADS: 0 when unset or empty, its value when valid (1..64), -1 for
 * anything else; *value (optional) receives the text. The one reading of the
 * variable: the settings, the host worker pool and the command line's
 * start-up check all take it from here. */
int sq_threads_env(const char **value);

#define SQ_HOST_ISA_WANT "auto, v4, v3 or base"
/* SEQCL_HOST_ISA: the highest instruction set level the host's loops that
 * are compiled per vector width may run at (backend/host/host_math.h,
 * SQ_HOT_BY_WIDTH): 4 for v4 (AVX-512), 3 for v3 (AVX2), 0 for base (16-byte
 * vectors); -1 when unset, empty or auto (the CPU's own level), -2 for
 * anything else. Process-wide, like SEQCL_THREADS; for tests and for
 * measuring the narrower forms on a wider CPU. *value (optional) receives
 * the text. */
int sq_host_isa_env(const char **value);

/* Every switch at its default: the same as an empty environment. */
void sq_settings_default(sq_settings *s);

/* Reads SEQCL_KERNELS, SEQCL_GEMM, SEQCL_THREADS and (to check it)
 * SEQCL_HOST_ISA. Unset or empty means the
 * default; any other value that is not one of the documented ones is
 * SEQCL_ERR_INVALID_ARGUMENT with a message naming the variable and the value.
 * ctx (may be NULL) only receives the message. */
seqcl_status sq_settings_from_env(seqcl_ctx *ctx, sq_settings *out);

#endif
