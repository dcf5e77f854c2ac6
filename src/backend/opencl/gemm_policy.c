/* Own kernel or CLBlast for the decode step's products, by measurement.
 *
 * Why measure: on CPU devices the own kernel won at every shape (gemm_small.c),
 * but on a GPU the answer depends on the chip, the driver and CLBlast's tuning
 * database, and no rule read from device properties predicts it. So the first
 * decode-sized product in a context (SEQCL_GEMM unset on a device that is not
 * CPU-type, or SEQCL_GEMM=measured anywhere) times both on three
 * representative products, M = 1, 8 and 64 rows of a [1024, 512] weight, and
 * every product with M <= 64 then takes the faster one for its bucket
 * (M = 1; 2..8; 9..64).
 *
 * Why keep it: timings vary from run to run, and a choice that flipped between
 * runs would make results differ in the last bits from one run to the next.
 * The choice is written next to the program binaries
 * (<cache>/programs/<key>.policy, removed by `seqcl cache clear`) keyed by
 * everything that changes the code timed: platform, device, driver, OpenCL
 * version, seqcl version and the kernel form (SEQCL_KERNELS). Later contexts
 * read it back and measure nothing. With the disk cache off (SEQCL_CACHE=0)
 * each context measures again; a file that cannot be written only costs that.
 * A measurement that fails (a build error, no memory) is not kept, and leaves
 * the product to CLBlast, the choice before measurements existed.
 * SEQCL_GEMM=small|clblast pins the choice and skips all of this. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "backend/opencl/gemm_small.h"
#include "backend/opencl/ops_internal.h"
#include "core/fileio.h"
#include "core/hash.h"
#include "core/paths.h"
#include "device/cache_files.h"
#include "seqcl/seqcl.h"

#define BUCKETS 3
static const int bucket_rows[BUCKETS] = {1, 8, 64};
static const char *const bucket_key[BUCKETS] = {"m1", "m8", "m64"};
/* The weight of the measured products: a GRU-sized [1024, 512]. */
#define PROBE_N 1024
#define PROBE_K 512
/* Calls per timed trial, and trials per candidate (the fastest trial counts:
 * the others met interference). */
#define PROBE_CALLS 10
#define PROBE_TRIALS 3

static int bucket_of(int M) { return M <= 1 ? 0 : M <= 8 ? 1 : 2; }

/* Everything whose change can change the timings. */
static void policy_key(const sq_ocl *o, char *buf, size_t cap) {
  const seqcl_device_info *info = &o->ctx->info;
  snprintf(buf, cap, "gemm-policy|%s|%s|%s|%s|seqcl %s|forms %s", info->platform, info->name,
           info->driver_version, info->opencl_version, seqcl_version(),
           o->cpu_device ? "cpu" : "gpu");
  for (char *p = buf; *p; p++)
    if (*p == '\n' || *p == '\r') *p = ' ';
}

/* <cache>/programs/<hash of key>.policy; 0 when the cache is off or unusable. */
static int policy_path(const char *key, int create, char *path, size_t cap) {
  char stem[24];
  snprintf(stem, sizeof stem, "%016llx", (unsigned long long)sq_hash_str(0, key));
  return sq_cache_entry_path(stem, SQ_POLICY_SUFFIX, create, path, cap);
}

/* Reads a kept choice into o->gemm_choice; a missing, foreign or malformed
 * file leaves every bucket unknown. */
static void load_choice(sq_ocl *o, const char *key) {
  char path[4200];
  if (!policy_path(key, 0, path, sizeof path)) return;
  FILE *f = fopen(path, "r");
  if (!f) return;
  char line[1200];
  int header = 0, key_ok = 0, got[BUCKETS] = {0};
  while (fgets(line, sizeof line, f)) {
    line[strcspn(line, "\n")] = '\0';
    if (!strcmp(line, "seqcl-gemm-policy 1")) header = 1;
    else if (!strncmp(line, "key=", 4)) key_ok = !strcmp(line + 4, key);
    for (int b = 0; b < BUCKETS; b++) {
      size_t n = strlen(bucket_key[b]);
      if (strncmp(line, bucket_key[b], n) || line[n] != '=') continue;
      const char *v = line + n + 1;
      if (!strncmp(v, "small", 5)) got[b] = 1;
      else if (!strncmp(v, "clblast", 7)) got[b] = 2;
    }
  }
  fclose(f);
  if (!header || !key_ok) return;
  for (int b = 0; b < BUCKETS; b++)
    if (!got[b]) return;
  memcpy(o->gemm_choice, got, sizeof got);
}

static void store_choice(const sq_ocl *o, const char *key, const double *t_small,
                         const double *t_blas) {
  char path[4200];
  if (!policy_path(key, 1, path, sizeof path)) return;
  /* the shared writer (core/fileio.h): a concurrent context reads the old
   * choice or the new one, never half of one; a failure only costs a
   * measurement next time, so it stays silent */
  sq_outfile f;
  if (sq_outfile_open(path, &f) != SEQCL_OK) {
    sq_clear_message();
    return;
  }
  fprintf(f.f, "seqcl-gemm-policy 1\nkey=%s\n", key);
  for (int b = 0; b < BUCKETS; b++)
    fprintf(f.f, "%s=%s own %.1f us clblast %.1f us (M=%d N=%d K=%d)\n", bucket_key[b],
            o->gemm_choice[b] == 1 ? "small" : "clblast", t_small[b] * 1e6, t_blas[b] * 1e6,
            bucket_rows[b], PROBE_N, PROBE_K);
  if (ferror(f.f)) sq_outfile_abort(&f);
  else if (sq_outfile_commit(&f) != SEQCL_OK) sq_clear_message();
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

typedef struct probe {
  sq_backend *be;
  sq_buf a, b, c;
} probe;

/* calls products of M rows on one candidate and waits; < 0 on failure. */
static double run_calls(probe *p, int small, int M, int calls) {
  sq_ocl *o = sq_ocl_of(p->be);
  sq_ref A = sq_at(&p->a, 0), B = sq_at(&p->b, 0), C = sq_at(&p->c, 0);
  const double t0 = now_s();
  for (int i = 0; i < calls; i++) {
    seqcl_status st =
        small ? sq_ocl_gemm_small(p->be, M, PROBE_N, PROBE_K, 1.0f, A, PROBE_K, 0, B, PROBE_K, 0,
                                  0.0f, C, PROBE_N, 0, 1)
              : sq_ocl_gemm_clblast(p->be, 0, 1, M, PROBE_N, PROBE_K, 1.0f, A, PROBE_K, 0, B,
                                    PROBE_K, 0, 0.0f, C, PROBE_N, 0, 1);
    if (st != SEQCL_OK) return -1;
  }
  if (clFinish(o->queue) != CL_SUCCESS) return -1;
  return now_s() - t0;
}

/* The best trial of each candidate in each bucket, alternating candidates so
 * that a burst of interference hits both; a failed candidate gets +inf. */
static void measure(probe *p, double *t_small, double *t_blas) {
  for (int b = 0; b < BUCKETS; b++) {
    const int M = bucket_rows[b];
    double *t[2] = {&t_blas[b], &t_small[b]};
    for (int small = 0; small < 2; small++) /* first calls build the kernels */
      *t[small] = run_calls(p, small, M, 1) < 0 ? -1 : 1e30;
    for (int trial = 0; trial < PROBE_TRIALS; trial++)
      for (int small = 0; small < 2; small++) {
        if (*t[small] < 0) continue;
        const double dt = run_calls(p, small, M, PROBE_CALLS);
        if (dt < 0) *t[small] = -1;
        else if (dt < *t[small]) *t[small] = dt;
      }
    for (int small = 0; small < 2; small++)
      *t[small] = *t[small] < 0 ? 1e30 : *t[small] / PROBE_CALLS;
  }
}

static int make_buf(sq_backend *be, sq_buf *out, size_t floats) {
  sq_ocl *o = sq_ocl_of(be);
  cl_int err;
  cl_mem m = clCreateBuffer(o->context, CL_MEM_READ_WRITE, floats * sizeof(float), NULL, &err);
  if (err != CL_SUCCESS) return -1;
  const float zero = 0.0f;
  if (clEnqueueFillBuffer(o->queue, m, &zero, sizeof zero, 0, floats * sizeof(float), 0, NULL,
                          NULL) != CL_SUCCESS) {
    clReleaseMemObject(m);
    return -1;
  }
  out->be = be;
  out->bytes = floats * sizeof(float);
  out->ptr = m;
  return 0;
}

/* Measures every bucket; keeps the choice only when both candidates ran in
 * at least one bucket (a broken candidate must not be written down). */
static void decide(sq_backend *be, const char *key) {
  sq_ocl *o = sq_ocl_of(be);
  const sq_backend_counts before = {o->n_launches, o->n_blas_calls, o->n_syncs};
  probe p = {be, {0}, {0}, {0}};
  double t_small[BUCKETS], t_blas[BUCKETS];
  int ok = clFinish(o->queue) == CL_SUCCESS &&
           make_buf(be, &p.a, (size_t)SQ_GEMM_DECODE_MAX_M * PROBE_K) == 0 &&
           make_buf(be, &p.b, (size_t)PROBE_N * PROBE_K) == 0 &&
           make_buf(be, &p.c, (size_t)SQ_GEMM_DECODE_MAX_M * PROBE_N) == 0;
  int ran_small = 0, ran_blas = 0;
  if (ok) {
    measure(&p, t_small, t_blas);
    for (int b = 0; b < BUCKETS; b++) {
      ran_small |= t_small[b] < 1e30;
      ran_blas |= t_blas[b] < 1e30;
      o->gemm_choice[b] = t_small[b] < t_blas[b] ? 1 : 2;
    }
  }
  if (p.a.ptr) clReleaseMemObject((cl_mem)p.a.ptr);
  if (p.b.ptr) clReleaseMemObject((cl_mem)p.b.ptr);
  if (p.c.ptr) clReleaseMemObject((cl_mem)p.c.ptr);
  if (ok && ran_small && ran_blas) {
    store_choice(o, key, t_small, t_blas);
  } else {
    for (int b = 0; b < BUCKETS; b++) o->gemm_choice[b] = 2;
  }
  /* the measurement is not the caller's work: `seqcl bench` counts that */
  o->n_launches = before.launches;
  o->n_blas_calls = before.blas_calls;
  o->n_syncs = before.syncs;
  sq_clear_message();
}

int sq_ocl_gemm_policy_path(sq_backend *be, char *buf, size_t cap) {
  char key[1200];
  policy_key(sq_ocl_of(be), key, sizeof key);
  return policy_path(key, 0, buf, cap);
}

int sq_ocl_gemm_small_measured(sq_backend *be, int M) {
  if (M > SQ_GEMM_DECODE_MAX_M) return 0;
  sq_ocl *o = sq_ocl_of(be);
  const int b = bucket_of(M);
  if (!o->gemm_choice[b]) {
    char key[1200];
    policy_key(o, key, sizeof key);
    load_choice(o, key);
    if (!o->gemm_choice[b]) decide(be, key);
  }
  return o->gemm_choice[b] == 1;
}
