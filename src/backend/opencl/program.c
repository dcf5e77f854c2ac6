/* Programs: built lazily from the files of kernels/ (embedded, or read from
 * SEQCL_KERNEL_DIR), cached in memory per context (file + options) and on disk
 * per (platform, device, driver version, source hash, options) as the driver's
 * binary. Disk entries are written to a temporary file in the same folder,
 * fsync'ed and renamed, so a concurrent process sees either nothing or a whole
 * entry; each entry also carries a checksum, and anything that fails to load
 * falls back to building from source. Some files are compiled with a
 * shared prelude in front (prelude_of). */
#include <fcntl.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend/opencl/program.h"
#include "core/error.h"
#include "core/fault.h"
#include "core/fileio.h"
#include "core/grow.h"
#include "core/hash.h"
#include "core/paths.h"
#include "device/cache_files.h"

typedef struct kernel_entry {
  char *name;
  cl_kernel kernel;
} kernel_entry;

typedef struct program_entry {
  char *file;
  char *options;
  cl_program program;
  kernel_entry *kernels;
  size_t nkernels, cap;
  struct program_entry *next;
} program_entry;

struct sq_program_cache {
  program_entry *head;
  char device_key[1024]; /* platform, device, driver and OpenCL versions */
};

static atomic_ulong st_hits, st_misses, st_rejected, st_writes, st_builds;

void sq_program_stats_get(sq_program_stats *out) {
  out->disk_hits = atomic_load(&st_hits);
  out->disk_misses = atomic_load(&st_misses);
  out->disk_rejected = atomic_load(&st_rejected);
  out->disk_writes = atomic_load(&st_writes);
  out->source_builds = atomic_load(&st_builds);
}

void sq_program_stats_reset(void) {
  atomic_store(&st_hits, 0);
  atomic_store(&st_misses, 0);
  atomic_store(&st_rejected, 0);
  atomic_store(&st_writes, 0);
  atomic_store(&st_builds, 0);
}

/* ---- hashing: the 128-bit key of core/hash.h ---- */
typedef sq_hash128 hash128;
#define hash_init sq_hash128_init
#define hash_bytes sq_hash128_bytes

/* Hashes the string and its terminator, so "ab"+"c" differs from "a"+"bc". */
static void hash_str(hash128 *h, const char *s) { hash_bytes(h, s, strlen(s) + 1); }

/* The text of kernels file `file`: from SEQCL_KERNEL_DIR when set, else embedded.
 * *owned is set when the caller must free *text. */
static seqcl_status load_source(sq_ocl *o, const char *file, const char **text, size_t *len,
                                char **owned) {
  *owned = NULL;
  if (strchr(file, '/') || !*file)
    return sq_fail(o->ctx, SEQCL_ERR_INVALID_ARGUMENT, "invalid kernels file name '%s'", file);
  const char *dir = getenv("SEQCL_KERNEL_DIR");
  if (dir && *dir) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, file);
    unsigned char *bytes = NULL;
    seqcl_status st = sq_file_read_all(path, &bytes, len);
    *owned = (char *)bytes;
    if (st != SEQCL_OK)
      return sq_fail_wrap(o->ctx, st, "kernels file '%s' (SEQCL_KERNEL_DIR=%s)", file, dir);
    *text = *owned;
    return SEQCL_OK;
  }
  for (size_t i = 0; i < sq_embedded_kernel_count; i++) {
    if (!strcmp(sq_embedded_kernels[i].name, file)) {
      *text = sq_embedded_kernels[i].source;
      *len = sq_embedded_kernels[i].length;
      return SEQCL_OK;
    }
  }
  return sq_fail(o->ctx, SEQCL_ERR_INTERNAL, "no kernels file '%s' is embedded in this library",
                 file);
}

/* ---- the disk cache ---- */
static const char entry_magic[8] = {'S', 'Q', 'C', 'L', 'B', 'I', 'N', '1'};

typedef struct entry_header {
  char magic[8];
  uint64_t key_a, key_b;   /* the entry's own key, against misplaced files */
  uint64_t binary_bytes;
  uint64_t sum_a, sum_b;   /* hash of the binary, against corruption */
} entry_header;

/* <cache>/programs/<key>.clbin; 0 when the cache is off or unusable. */
static int entry_path(hash128 key, int create, char *path, size_t cap) {
  char stem[40];
  snprintf(stem, sizeof stem, "%016llx%016llx", (unsigned long long)key.a,
           (unsigned long long)key.b);
  return sq_cache_entry_path(stem, SQ_PROGRAM_SUFFIX, create, path, cap);
}

/* Tries the cached binary; returns a built program or NULL (counted as miss/reject). */
static cl_program load_cached(sq_ocl *o, hash128 key, const char *options) {
  char path[4200];
  if (!entry_path(key, 0, path, sizeof path)) return NULL;
  unsigned char *data = NULL;
  size_t len = 0;
  if (sq_file_read_all(path, &data, &len) != SEQCL_OK) {
    sq_clear_message(); /* a missing entry is an ordinary miss */
    atomic_fetch_add(&st_misses, 1);
    return NULL;
  }
  cl_program prog = NULL;
  entry_header h;
  int valid = len >= sizeof h;
  if (valid) {
    memcpy(&h, data, sizeof h);
    valid = !memcmp(h.magic, entry_magic, sizeof entry_magic) && h.key_a == key.a &&
            h.key_b == key.b && h.binary_bytes == len - sizeof h && h.binary_bytes > 0;
  }
  if (valid) {
    hash128 sum;
    hash_init(&sum);
    hash_bytes(&sum, data + sizeof h, (size_t)h.binary_bytes);
    valid = sum.a == h.sum_a && sum.b == h.sum_b;
  }
  if (valid) {
    const unsigned char *bin = (const unsigned char *)data + sizeof h;
    size_t bin_len = (size_t)h.binary_bytes;
    cl_int bin_status = CL_SUCCESS, err = CL_SUCCESS;
    prog = clCreateProgramWithBinary(o->context, 1, &o->device, &bin_len, &bin, &bin_status, &err);
    if (err != CL_SUCCESS || bin_status != CL_SUCCESS) {
      if (prog) clReleaseProgram(prog);
      prog = NULL;
    } else if (clBuildProgram(prog, 1, &o->device, options, NULL, NULL) != CL_SUCCESS) {
      clReleaseProgram(prog);
      prog = NULL;
    }
  }
  free(data);
  if (prog)
    atomic_fetch_add(&st_hits, 1);
  else
    atomic_fetch_add(&st_rejected, 1);
  return prog;
}

/* Stores the program's binary; failures are silent (the cache only saves time). */
static void store_cached(sq_ocl *o, hash128 key, cl_program prog) {
  char path[4200];
  if (!entry_path(key, 1, path, sizeof path)) return;
  size_t bin_len = 0;
  if (clGetProgramInfo(prog, CL_PROGRAM_BINARY_SIZES, sizeof bin_len, &bin_len, NULL) !=
          CL_SUCCESS ||
      bin_len == 0)
    return;
  unsigned char *bin = malloc(bin_len);
  if (!bin) return;
  if (clGetProgramInfo(prog, CL_PROGRAM_BINARIES, sizeof bin, &bin, NULL) != CL_SUCCESS) {
    free(bin);
    return;
  }
  (void)o;
  entry_header h;
  memset(&h, 0, sizeof h);
  memcpy(h.magic, entry_magic, sizeof entry_magic);
  h.key_a = key.a;
  h.key_b = key.b;
  h.binary_bytes = bin_len;
  hash128 sum;
  hash_init(&sum);
  hash_bytes(&sum, bin, bin_len);
  h.sum_a = sum.a;
  h.sum_b = sum.b;

  /* the shared writer: a temporary file in the same folder, fsync'ed and renamed */
  sq_outfile f;
  int ok = sq_outfile_open(path, &f) == SEQCL_OK;
  if (ok) {
    if (fwrite(&h, sizeof h, 1, f.f) == 1 && fwrite(bin, 1, bin_len, f.f) == bin_len) {
      ok = sq_outfile_commit(&f) == SEQCL_OK;
    } else {
      sq_outfile_abort(&f);
      ok = 0;
    }
  }
  if (ok)
    atomic_fetch_add(&st_writes, 1);
  else
    sq_clear_message(); /* failures are silent: the cache only saves time */
  free(bin);
}

/* ---- building ---- */
static seqcl_status build_failure(sq_ocl *o, cl_program prog, cl_int err, const char *file,
                                  const char *options) {
  char *log = NULL;
  size_t n = 0;
  if (clGetProgramBuildInfo(prog, o->device, CL_PROGRAM_BUILD_LOG, 0, NULL, &n) == CL_SUCCESS &&
      n > 0 && (log = malloc(n + 1)) != NULL) {
    if (clGetProgramBuildInfo(prog, o->device, CL_PROGRAM_BUILD_LOG, n, log, NULL) != CL_SUCCESS)
      n = 0;
    log[n] = '\0';
  }
  seqcl_status st =
      sq_fail(o->ctx, SEQCL_ERR_BUILD,
              "building kernels file '%s' with options '%s' for device %s (%s): %s\nbuild log:\n%s",
              file, options, o->ctx->info.selector, o->ctx->info.name, sq_cl_error_name(err),
              log && *log ? log : "(empty)");
  free(log);
  return st;
}

/* The kernels file compiled in front of file's own text, or NULL: a
 * training program's shared prelude, the small-GEMM files' row block, the
 * beam search's candidate pick. The
 * in-memory cache keys on (file, options), which decide the prelude too. */
static const char *prelude_of(const char *file, const char *options) {
  if (options && strstr(options, SQ_OCL_TRAIN_OPTION)) return SQ_OCL_TRAIN_PRELUDE;
  if (!strcmp(file, "gemv.cl") || !strcmp(file, "gemm_lanes.cl")) return "gemm_rows.cl";
  if (!strcmp(file, "beam.cl")) return "beam_pick.h"; /* shared with the host path */
  return NULL;
}

static seqcl_status build_program(sq_ocl *o, const char *file, const char *user_options,
                                  cl_program *out) {
  *out = NULL;
  /* texts[0]: the file's prelude (prelude_of), when it has one; texts[1]: the file */
  const char *texts[2] = {NULL, NULL};
  size_t lens[2] = {0, 0};
  char *owned[2] = {NULL, NULL};
  const char *prelude = prelude_of(file, user_options);
  const int first = prelude ? 0 : 1;
  if (prelude) SQ_TRY(load_source(o, prelude, &texts[0], &lens[0], &owned[0]));
  seqcl_status lst = load_source(o, file, &texts[1], &lens[1], &owned[1]);
  if (lst != SEQCL_OK) {
    free(owned[0]);
    return lst;
  }

  size_t olen = strlen(SQ_OCL_BASE_OPTIONS) + 2 + (user_options ? strlen(user_options) : 0);
  char *options = malloc(olen);
  if (!options) {
    free(owned[0]);
    free(owned[1]);
    return sq_fail(o->ctx, SEQCL_ERR_OUT_OF_MEMORY, "building '%s': out of memory", file);
  }
  snprintf(options, olen, "%s%s%s", SQ_OCL_BASE_OPTIONS, user_options && *user_options ? " " : "",
           user_options ? user_options : "");

  hash128 src; /* both texts, each with its length: the key changes with either */
  hash_init(&src);
  for (int t = first; t < 2; t++) {
    const uint64_t n = lens[t];
    hash_bytes(&src, &n, sizeof n);
    hash_bytes(&src, texts[t], lens[t]);
  }
  hash128 key;
  hash_init(&key);
  hash_str(&key, "seqcl-program-v1");
  hash_str(&key, o->programs->device_key);
  hash_bytes(&key, &src, sizeof src);
  hash_str(&key, options);

  seqcl_status st = SEQCL_OK;
  if (sq_fault_hit(SQ_FAULT_BUILD)) {
    st = sq_fail(o->ctx, SEQCL_ERR_BUILD,
                 "building kernels file '%s' with options '%s' for device %s: injected failure",
                 file, options, o->ctx->info.selector);
    goto done;
  }
  cl_program prog = load_cached(o, key, options);
  if (!prog) {
    cl_int err = CL_SUCCESS;
    prog = clCreateProgramWithSource(o->context, (cl_uint)(2 - first), texts + first,
                                     lens + first, &err);
    if (err != CL_SUCCESS) {
      char what[300];
      snprintf(what, sizeof what, "clCreateProgramWithSource(%s)", file);
      st = sq_ocl_check(o, err, what);
      goto done;
    }
    atomic_fetch_add(&st_builds, 1);
    err = clBuildProgram(prog, 1, &o->device, options, NULL, NULL);
    if (err != CL_SUCCESS) {
      st = build_failure(o, prog, err, file, options);
      clReleaseProgram(prog);
      goto done;
    }
    store_cached(o, key, prog);
  }
  *out = prog;
done:
  free(options);
  free(owned[0]);
  free(owned[1]);
  return st;
}

seqcl_status sq_program_cache_create(sq_ocl *o, sq_program_cache **out) {
  *out = NULL;
  sq_program_cache *pc = calloc(1, sizeof *pc);
  if (!pc) return sq_fail(o->ctx, SEQCL_ERR_OUT_OF_MEMORY, "program cache: out of memory");
  char platform[256] = "";
  clGetPlatformInfo(o->platform, CL_PLATFORM_NAME, sizeof platform, platform, NULL);
  platform[sizeof platform - 1] = '\0';
  const seqcl_device_info *d = &o->ctx->info;
  snprintf(pc->device_key, sizeof pc->device_key, "%s\n%s\n%s\n%s", platform, d->name,
           d->driver_version, d->opencl_version);
  *out = pc;
  return SEQCL_OK;
}

void sq_program_cache_destroy(sq_program_cache *pc) {
  if (!pc) return;
  for (program_entry *e = pc->head; e;) {
    program_entry *next = e->next;
    for (size_t i = 0; i < e->nkernels; i++) {
      clReleaseKernel(e->kernels[i].kernel);
      free(e->kernels[i].name);
    }
    free(e->kernels);
    if (e->program) clReleaseProgram(e->program);
    free(e->file);
    free(e->options);
    free(e);
    e = next;
  }
  free(pc);
}

seqcl_status sq_ocl_kernel(sq_ocl *o, const char *file, const char *options, const char *name,
                           cl_kernel *out) {
  *out = NULL;
  if (!options) options = "";
  program_entry *e = o->programs->head;
  while (e && (strcmp(e->file, file) != 0 || strcmp(e->options, options) != 0)) e = e->next;
  if (!e) {
    cl_program prog = NULL;
    SQ_TRY(build_program(o, file, options, &prog));
    e = calloc(1, sizeof *e);
    if (e) {
      e->file = strdup(file);
      e->options = strdup(options);
    }
    if (!e || !e->file || !e->options) {
      if (e) {
        free(e->file);
        free(e->options);
        free(e);
      }
      clReleaseProgram(prog);
      return sq_fail(o->ctx, SEQCL_ERR_OUT_OF_MEMORY, "program cache: out of memory");
    }
    e->program = prog;
    e->next = o->programs->head;
    o->programs->head = e;
  }
  for (size_t i = 0; i < e->nkernels; i++)
    if (!strcmp(e->kernels[i].name, name)) {
      *out = e->kernels[i].kernel;
      return SEQCL_OK;
    }
  kernel_entry *grown = sq_grow(e->kernels, &e->cap, e->nkernels, sizeof *grown, 4);
  if (!grown) return sq_fail(o->ctx, SEQCL_ERR_OUT_OF_MEMORY, "program cache: out of memory");
  e->kernels = grown;
  cl_int err = CL_SUCCESS;
  cl_kernel k = clCreateKernel(e->program, name, &err);
  if (err != CL_SUCCESS) {
    char what[300];
    snprintf(what, sizeof what, "clCreateKernel('%s' of '%s')", name, file);
    return sq_ocl_check(o, err, what);
  }
  char *kname = strdup(name);
  if (!kname) {
    clReleaseKernel(k);
    return sq_fail(o->ctx, SEQCL_ERR_OUT_OF_MEMORY, "program cache: out of memory");
  }
  e->kernels[e->nkernels].name = kname;
  e->kernels[e->nkernels].kernel = k;
  e->nkernels++;
  *out = k;
  return SEQCL_OK;
}
