/* The benchmark harness behind `seqcl bench` (SPEC §4): what is measured, on
 * which shapes, in which order and how often. The command line
 * (cli/cmd_bench.c) parses options, opens the context and prints; every
 * figure comes from here, row by row, through a sink of callbacks, so a long
 * run shows each row as soon as it is measured. Every timing is a median of
 * cfg->reps repetitions after a warm-up (micro.c's rules, bench.h). */
#ifndef SQ_BENCH_HARNESS_H
#define SQ_BENCH_HARNESS_H

#include <seqcl/seqcl.h>

#include "model/seq2seq.h"

/* The random models' embedding width and vocabularies (bench_model.c). */
enum { SQ_BENCH_EMBED = 128, SQ_BENCH_VOCAB = 1000 };

typedef struct sq_bench_cfg {
  int quick;     /* the subset of shapes */
  int reps;      /* repetitions per figure (at most 64 count) */
  int steps;     /* decoder steps per decode run */
  const char *exe; /* the seqcl executable the cold-start runs spawn */
  char tmp_root[4096]; /* sq_bench_begin: models and caches live here */
} sq_bench_cfg;

/* Creates the temporary folder under $TMPDIR (else /tmp). */
seqcl_status sq_bench_begin(sq_bench_cfg *cfg);
/* Removes it with everything in it. */
void sq_bench_end(sq_bench_cfg *cfg);

/* What the GEMM table compares on this backend. */
typedef struct sq_bench_backend_info {
  const char *blas; /* "OpenBLAS", "CLBlast" */
  int own_gemm;     /* 1 when an own GEMM kernel is timed beside it */
  /* 1 when the "own" column is the backend's default choice rather than its
   * own kernel forced (the host: own kernel up to 256 rows, OpenBLAS beyond) */
  int own_default;
} sq_bench_backend_info;
void sq_bench_info(seqcl_ctx *ctx, sq_bench_backend_info *out);

typedef enum sq_bench_table {
  SQ_BENCH_KERNELS, /* copy bandwidth, then kernel rows */
  SQ_BENCH_GEMM,
  SQ_BENCH_DECODE,
  SQ_BENCH_ABLATION
} sq_bench_table;

typedef struct sq_bench_kernel_row {
  char label[96]; /* "attention additive N4 S2048 He512", "gru gates N64 H512" */
  double ms, gbps, fraction_of_copy;
} sq_bench_kernel_row;

typedef struct sq_bench_gemm_row {
  int M, N, K;
  double own_gflops; /* 0 when the backend has no own kernel */
  double lib_gflops, best_gflops;
} sq_bench_gemm_row;

typedef struct sq_bench_decode_row {
  const char *score;
  int hidden, src_len, batch, steps;
  double seconds, tokens_per_s, step_ms;
  double launches, blas_calls, syncs; /* per decoder step */
  double enc_seconds, enc_tokens_per_s;
} sq_bench_decode_row;

typedef struct sq_bench_ablation_row {
  const char *off; /* the switch turned off; NULL: none (all on) */
  int batch;
  double tokens_per_s, ratio_to_all_on;
  double launches, blas_calls, syncs;
} sq_bench_ablation_row;

/* Called as results come; any may be NULL. */
typedef struct sq_bench_sink {
  void *user;
  void (*table)(void *user, sq_bench_table t);       /* a table's rows follow */
  void (*copy)(void *user, int mib, double gbps);     /* before the kernel rows */
  void (*kernel)(void *user, const sq_bench_kernel_row *r);
  void (*gemm)(void *user, const sq_bench_gemm_row *r);
  void (*decode)(void *user, const sq_bench_decode_row *r);
  void (*ablation)(void *user, const sq_bench_ablation_row *r);
} sq_bench_sink;

/* Copy bandwidth, the fused attention and GRU gates against it, GEMM at the
 * model's shapes (own kernel and library). */
seqcl_status sq_bench_kernels(seqcl_ctx *ctx, const sq_bench_cfg *cfg, const sq_bench_sink *s);
/* Greedy decoding and the encoder over the grid of scores, sizes, lengths and
 * batches. */
seqcl_status sq_bench_decode(seqcl_ctx *ctx, const sq_bench_cfg *cfg, const sq_bench_sink *s);
/* Decoding with each optimisation the backend has switched off alone (in the
 * context's settings, restored after), the configurations timed in turns. */
seqcl_status sq_bench_ablation(seqcl_ctx *ctx, const sq_bench_cfg *cfg,
                               const sq_bench_sink *s);
/* Adam steps of the reversal task: *steps of them, *ms_per_step. */
seqcl_status sq_bench_train(seqcl_ctx *ctx, const sq_bench_cfg *cfg, int *steps,
                            double *ms_per_step);
/* Wall time of `seqcl decode` in a new process (one line, one step) with an
 * empty program cache, and the median with a warm one. */
seqcl_status sq_bench_cold(seqcl_ctx *ctx, const sq_bench_cfg *cfg, double *empty_s,
                           double *warm_s);

/* ---- one grid point: a model, a token file, a batch and beam ---- */

/* Rows per step from which a step's products are compared with the GEMM
 * ceiling; below it, with the copy bandwidth over the weights. */
enum { SQ_BENCH_GEMM_ROWS = 16 };

typedef struct sq_bench_point_in {
  seqcl_model *m;
  const seqcl_seqs *src; /* the lines, decoded in batches of `batch` */
  int batch, beam, steps, reps;
  /* the whole-process run: exe decode --model model_dir --src src_path (the
   * same lines as text); exe NULL: not run */
  const char *exe, *model_dir, *src_path;
} sq_bench_point_in;

typedef struct sq_bench_point_row {
  char label[32]; /* the grid's name for the factor varied ("base", "bi", "V 8000") */
  const char *score;
  int hidden, enc_hidden, enc_layers, bidirectional, state_context, vocab, src_len;
  int batch, beam, steps;
  size_t lines, tokens; /* tokens: the steps of every line (all steps when EOS is blocked) */
  double seconds, tokens_per_s;                 /* in this process, median */
  double process_seconds, process_tokens_per_s; /* a whole `seqcl decode`; 0: not run */
  double step_ms;        /* a decoder step over one batch, the encoder taken out (median) */
  double step_mflop;     /* counted from the shapes (sq_bench_step_work) */
  double step_weight_mb; /* bytes of weights and keys a step reads */
  double gflops, weight_gbps; /* achieved by the step */
  const char *bound;     /* "gemm": ceiling in GFLOP/s; "copy": in GB/s */
  /* the ceiling's median, and the median over the rounds of each round's
   * step against the ceiling measured right after it (sq_bench_point) */
  double ceiling, fraction;
} sq_bench_point_row;

seqcl_status sq_bench_point(seqcl_ctx *ctx, const sq_bench_point_in *in, sq_bench_point_row *row);

/* FLOPs and bytes read (weights, keys) of one decoder step over R rows with
 * sources of length S: the three products, the attention. */
void sq_bench_step_work(const seqcl_model *m, int R, int S, double *flops, double *bytes);
/* A repetition lasts at least this long (a batch-1 decode takes milliseconds:
 * one scheduler hiccup on a shared machine would otherwise be the median). */
#define SQ_BENCH_MIN_REP_S 0.25
/* One decode of src with at most `steps` steps; *tokens (may be NULL): the
 * steps of every line together, *batch_steps: decoder steps run over all
 * batches. */
seqcl_status sq_bench_decode_once(seqcl_model *m, const seqcl_seqs *src, int batch, int beam,
                                  int steps, size_t *tokens, size_t *batch_steps);
/* Median seconds of decoding src (warm-up first; short runs repeated); the
 * warm-up's *tokens and *batch_steps (either may be NULL). */
seqcl_status sq_bench_time_decode(seqcl_model *m, const seqcl_seqs *src, int batch, int beam,
                                  int steps, int reps, double *sec, size_t *tokens,
                                  size_t *batch_steps);
/* Seconds per decoder step of a decode that took `seconds` over batch_steps
 * steps: the same decode at one step a batch is timed too and taken off, so
 * that encoding, start-up of each batch and the first step go out the way
 * the decode runs them (a split batch encodes each part on its own thread;
 * the encoder timed alone as one batch over the pool overstated its share,
 * up to a 2-layer encoder's steps reading 160 % of the GEMM ceiling). */
seqcl_status sq_bench_step_seconds(seqcl_model *m, const seqcl_seqs *src, int batch, int beam,
                                   int reps, double seconds, size_t batch_steps, double *step);
/* Median seconds of encoding the first n lines of src as one batch. */
seqcl_status sq_bench_time_encode(seqcl_ctx *ctx, seqcl_model *m, const seqcl_seqs *src, int n,
                                  int reps, double *sec);

/* The grid (--grid): one factor at a time around the base point (H 256, embed
 * 128, A = H, S 20, V 1000, one-way one-layer encoder, output "state",
 * additive, greedy), each at batch 1 and 64 (the base also at 16); --quick a
 * subset. Each row goes to cb as it is measured. */
seqcl_status sq_bench_grid(seqcl_ctx *ctx, const sq_bench_cfg *cfg,
                           void (*cb)(void *user, const sq_bench_point_row *r), void *user);

/* The peer mode: the grid's columns for decoding a token file with model m
 * (loaded from model_dir; exe runs the whole-process figure). max_steps 0:
 * decode's default; batch 0: every line in one batch. */
seqcl_status sq_bench_file(seqcl_model *m, const char *model_dir, const char *src_path,
                           int max_steps, int batch, int beam, int reps, const char *exe,
                           sq_bench_point_row *row);

/* A random model of hidden size H with this score under cfg->tmp_root
 * (written once, then loaded). */
seqcl_status sq_bench_model(seqcl_ctx *ctx, const sq_bench_cfg *cfg, const char *score, int H,
                            seqcl_model **m);

#endif
