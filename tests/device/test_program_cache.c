/* The program cache and program building: disk hits across contexts, SEQCL_CACHE=0,
 * corrupt entries falling back to source, build failures carrying the build log,
 * SEQCL_KERNEL_DIR, cache info/clear, and the fault-injection hook.
 * Uses a tiny kernel file in a temporary SEQCL_KERNEL_DIR so compiles are quick. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "../common/test_tmpdir.h"
#include "backend/opencl/ocl.h"
#include "backend/opencl/program.h"
#include "core/fault.h"
#include "device/cache_files.h"
#include "test_util.h"

static seqcl_device_info device;
static char base[256], kdir[300], cdir[300];

static const char *probe_src =
    "#ifndef VAL\n#define VAL 1\n#endif\n"
    "__kernel void probe(__global int *x, int off) { x[off + get_global_id(0)] = VAL; }\n";

static void write_text(const char *dir, const char *name, const char *text) {
  char path[600];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  fputs(text, f);
  fclose(f);
}

/* Builds probe.cl with options in a fresh context, runs it, checks every element == want. */
static seqcl_status build_and_run(const char *options, int want) {
  seqcl_ctx *ctx = NULL;
  assert_int_equal(test_open(&device, &ctx), SEQCL_OK);
  sq_ocl *o = sq_ocl_of(ctx->be);
  cl_kernel k = NULL;
  seqcl_status st = sq_ocl_kernel(o, "probe.cl", options, "probe", &k);
  if (st == SEQCL_OK) {
    /* a second request in the same context is served from memory */
    cl_kernel again = NULL;
    sq_program_stats before, after;
    sq_program_stats_get(&before);
    assert_int_equal(sq_ocl_kernel(o, "probe.cl", options, "probe", &again), SEQCL_OK);
    sq_program_stats_get(&after);
    assert_ptr_equal(k, again);
    assert_memory_equal(&before, &after, sizeof before);

    sq_buf *b = NULL;
    assert_int_equal(ctx->be->ops->buf_alloc(ctx->be, 7 * 4, &b), SEQCL_OK);
    int zero = 0, got[7], init[7] = {-5, -5, -5, -5, -5, -5, -5};
    /* a plain write, not a fill: the counters must see probe.cl only */
    assert_int_equal(ctx->be->ops->write(ctx->be, sq_at(b, 0), init, sizeof init), SEQCL_OK);
    SQ_ARG(o, k, 0, b->ptr);
    SQ_ARG(o, k, 1, zero);
    size_t global = 7;
    assert_int_equal(sq_ocl_launch(o, k, 1, &global, NULL, "probe"), SEQCL_OK);
    assert_int_equal(ctx->be->ops->read(ctx->be, sq_at(b, 0), got, sizeof got), SEQCL_OK);
    for (int i = 0; i < 7; i++) assert_int_equal(got[i], want);
    ctx->be->ops->buf_free(ctx->be, b);
  }
  test_close(ctx);
  return st;
}

static size_t entries(void) {
  sq_cache_summary s;
  assert_int_equal(sq_cache_summarize(&s), SEQCL_OK);
  assert_non_null(strstr(s.dir, cdir));
  return s.entries;
}

static int setup(void **state) {
  (void)state;
  snprintf(base, sizeof base, "%s/seqcl-cache-test-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
  if (!mkdtemp(base)) return -1;
  snprintf(kdir, sizeof kdir, "%s/kernels", base);
  snprintf(cdir, sizeof cdir, "%s/cache", base);
  if (mkdir(kdir, 0755) != 0) return -1;
  write_text(kdir, "probe.cl", probe_src);
  /* the fault test's fills come from memory.cl, which must be in the folder too */
  for (size_t i = 0; i < sq_embedded_kernel_count; i++)
    write_text(kdir, sq_embedded_kernels[i].name, sq_embedded_kernels[i].source);
  setenv("SEQCL_KERNEL_DIR", kdir, 1);
  setenv("SEQCL_CACHE_DIR", cdir, 1);
  unsetenv("SEQCL_CACHE");
  return 0;
}

static int teardown(void **state) {
  (void)state;
  return test_remove_tree(base);
}

static void test_disk_hit_across_contexts(void **state) {
  (void)state;
  sq_program_stats s;
  sq_program_stats_reset();
  assert_int_equal(entries(), 0);
  assert_int_equal(build_and_run("-DVAL=3", 3), SEQCL_OK);
  sq_program_stats_get(&s);
  assert_int_equal(s.disk_misses, 1);
  assert_int_equal(s.disk_hits, 0);
  assert_int_equal(s.source_builds, 1);
  assert_int_equal(s.disk_writes, 1);
  assert_int_equal(entries(), 1);

  /* a new context: loaded from disk, not compiled */
  assert_int_equal(build_and_run("-DVAL=3", 3), SEQCL_OK);
  sq_program_stats_get(&s);
  assert_int_equal(s.disk_hits, 1);
  assert_int_equal(s.source_builds, 1);
  assert_int_equal(entries(), 1);

  /* other options: another entry */
  assert_int_equal(build_and_run("-DVAL=4", 4), SEQCL_OK);
  sq_program_stats_get(&s);
  assert_int_equal(s.disk_misses, 2);
  assert_int_equal(s.source_builds, 2);
  assert_int_equal(entries(), 2);

  /* changed source: a new key, never the stale binary */
  write_text(kdir, "probe.cl",
             "__kernel void probe(__global int *x, int off) { x[off + get_global_id(0)] = 9; }\n");
  assert_int_equal(build_and_run("-DVAL=3", 9), SEQCL_OK);
  write_text(kdir, "probe.cl", probe_src);
  assert_int_equal(entries(), 3);
}

/* Overwrites the middle of every entry, or truncates it. */
static void damage_entries(int truncate_them) {
  char dir[600];
  snprintf(dir, sizeof dir, "%s/%s", cdir, SQ_PROGRAMS_SUBDIR);
  DIR *d = opendir(dir);
  assert_non_null(d);
  struct dirent *e;
  int n = 0;
  while ((e = readdir(d)) != NULL) {
    if (e->d_name[0] == '.') continue;
    char path[1200];
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    if (truncate_them) {
      assert_int_equal(truncate(path, 20), 0);
    } else {
      FILE *f = fopen(path, "r+b");
      assert_non_null(f);
      fseek(f, 0, SEEK_END);
      long size = ftell(f);
      fseek(f, size / 2, SEEK_SET);
      static const char junk[64] = "this is not a program binary at all, not at all, no.";
      fwrite(junk, 1, sizeof junk, f);
      fclose(f);
    }
    n++;
  }
  closedir(d);
  assert_true(n > 0);
}

static void test_corrupt_entry_falls_back(void **state) {
  (void)state;
  for (int mode = 0; mode < 2; mode++) {
    sq_program_stats s;
    assert_int_equal(build_and_run("-DVAL=5", 5), SEQCL_OK); /* make sure an entry exists */
    damage_entries(mode);
    sq_program_stats_reset();
    assert_int_equal(build_and_run("-DVAL=5", 5), SEQCL_OK);
    sq_program_stats_get(&s);
    assert_int_equal(s.disk_rejected, 1);
    assert_int_equal(s.source_builds, 1);
    assert_int_equal(s.disk_writes, 1); /* the entry is replaced */
    sq_program_stats_reset();
    assert_int_equal(build_and_run("-DVAL=5", 5), SEQCL_OK);
    sq_program_stats_get(&s);
    assert_int_equal(s.disk_hits, 1);
  }
}

static void test_cache_disabled_and_clear(void **state) {
  (void)state;
  size_t removed = 0;
  assert_true(entries() > 0);
  assert_int_equal(sq_cache_clear(&removed), SEQCL_OK);
  assert_true(removed > 0);
  assert_int_equal(entries(), 0);
  setenv("SEQCL_CACHE", "0", 1);
  sq_program_stats_reset();
  assert_int_equal(build_and_run("-DVAL=6", 6), SEQCL_OK);
  assert_int_equal(build_and_run("-DVAL=6", 6), SEQCL_OK);
  sq_program_stats s;
  sq_program_stats_get(&s);
  assert_int_equal(s.source_builds, 2);
  assert_int_equal(s.disk_hits + s.disk_misses + s.disk_writes, 0);
  assert_int_equal(entries(), 0);
  sq_cache_summary sum;
  assert_int_equal(sq_cache_summarize(&sum), SEQCL_OK);
  assert_int_equal(sum.enabled, 0);
  unsetenv("SEQCL_CACHE");
}

static void test_build_failure_has_log(void **state) {
  (void)state;
  write_text(kdir, "broken.cl",
             "__kernel void broken(__global float *x) { x[0] = undefined_thing_42; }\n");
  seqcl_ctx *ctx = NULL;
  assert_int_equal(test_open(&device, &ctx), SEQCL_OK);
  sq_ocl *o = sq_ocl_of(ctx->be);
  cl_kernel k = (cl_kernel)1;
  seqcl_status st = sq_ocl_kernel(o, "broken.cl", "-DWG=64", "broken", &k);
  assert_int_equal(st, SEQCL_ERR_BUILD);
  assert_null(k);
  const char *msg = seqcl_last_message();
  assert_non_null(strstr(msg, "broken.cl"));
  assert_non_null(strstr(msg, "-cl-std=CL1.2 -DWG=64"));
  assert_non_null(strstr(msg, "CL_BUILD_PROGRAM_FAILURE"));
  assert_non_null(strstr(msg, "undefined_thing_42")); /* the compiler's own text */
  assert_string_equal(seqcl_ctx_message(ctx), msg);

  /* a file missing from SEQCL_KERNEL_DIR names the path */
  st = sq_ocl_kernel(o, "nosuch.cl", "", "x", &k);
  assert_int_equal(st, SEQCL_ERR_IO);
  assert_non_null(strstr(seqcl_last_message(), "nosuch.cl"));
  /* a kernel name the program lacks */
  st = sq_ocl_kernel(o, "probe.cl", "", "no_such_kernel", &k);
  assert_int_equal(st, SEQCL_ERR_OPENCL);
  assert_non_null(strstr(seqcl_last_message(), "CL_INVALID_KERNEL_NAME"));
  assert_non_null(strstr(seqcl_last_message(), "no_such_kernel"));
  test_close(ctx);
}

static void test_embedded_sources(void **state) {
  (void)state;
  assert_true(sq_embedded_kernel_count >= 3);
  int memory = 0;
  for (size_t i = 0; i < sq_embedded_kernel_count; i++) {
    assert_int_equal(strlen(sq_embedded_kernels[i].source), sq_embedded_kernels[i].length);
    memory += !strcmp(sq_embedded_kernels[i].name, "memory.cl");
  }
  assert_int_equal(memory, 1);
  /* without SEQCL_KERNEL_DIR the embedded memory.cl is used */
  unsetenv("SEQCL_KERNEL_DIR");
  seqcl_ctx *ctx = NULL;
  assert_int_equal(test_open(&device, &ctx), SEQCL_OK);
  cl_kernel k = NULL;
  assert_int_equal(sq_ocl_kernel(sq_ocl_of(ctx->be), "memory.cl", "", "fill_u32", &k), SEQCL_OK);
  assert_int_equal(sq_ocl_kernel(sq_ocl_of(ctx->be), "probe.cl", "", "probe", &k),
                   SEQCL_ERR_INTERNAL);
  test_close(ctx);
  setenv("SEQCL_KERNEL_DIR", kdir, 1);
}

/* A fault that surfaces at the next finish (NVIDIA reports kernel faults and
 * oversized launches as CL_OUT_OF_RESOURCES there) names the last kernel and
 * its sizes, and is not called out of memory. */
static void test_sync_error_names_last_kernel(void **state) {
  (void)state;
  seqcl_ctx *ctx = NULL;
  assert_int_equal(test_open(&device, &ctx), SEQCL_OK);
  sq_backend *be = ctx->be;
  sq_ocl *o = sq_ocl_of(be);
  sq_buf *a = NULL;
  assert_int_equal(be->ops->buf_alloc(be, 64, &a), SEQCL_OK);
  assert_int_equal(be->ops->fill(be, sq_at(a, 0), 16, 1.0f), SEQCL_OK);
  assert_int_equal(be->ops->finish(be), SEQCL_OK);
  assert_int_equal(sq_ocl_check_sync(o, CL_OUT_OF_RESOURCES, "clFinish"), SEQCL_ERR_OPENCL);
  const char *msg = seqcl_last_message();
  printf("  %s\n", msg);
  assert_non_null(strstr(msg, "fill_u32 (global "));
  assert_non_null(strstr(msg, "local "));
  assert_non_null(strstr(msg, "not a lack of memory"));
  assert_null(strstr(msg, "out of memory"));
  /* a CLBlast call recorded as the last work is named as such */
  sq_ocl_note_work(o, "CLBlast gemm (M=3 N=4 K=5, batch 1)");
  assert_int_equal(sq_ocl_check_sync(o, -9999, "clEnqueueReadBuffer"), SEQCL_ERR_OPENCL);
  assert_non_null(strstr(seqcl_last_message(), "CLBlast gemm (M=3 N=4 K=5, batch 1)"));
  /* other errors keep their usual mapping */
  assert_int_equal(sq_ocl_check_sync(o, CL_MEM_OBJECT_ALLOCATION_FAILURE, "clFinish"),
                   SEQCL_ERR_DEVICE_OUT_OF_MEMORY);
  be->ops->buf_free(be, a);
  test_close(ctx);
}

#ifdef SEQCL_FAULT_INJECTION
static void test_fault_injection(void **state) {
  (void)state;
  seqcl_ctx *ctx = NULL;
  assert_int_equal(test_open(&device, &ctx), SEQCL_OK);
  sq_backend *be = ctx->be;
  sq_buf *a = NULL, *b = NULL;
  sq_fault_arm(SQ_FAULT_ALLOC, 2);
  assert_int_equal(be->ops->buf_alloc(be, 64, &a), SEQCL_OK);
  assert_int_equal(be->ops->buf_alloc(be, 64, &b), SEQCL_ERR_DEVICE_OUT_OF_MEMORY);
  assert_null(b);
  assert_non_null(strstr(seqcl_last_message(), "64 bytes"));
  assert_int_equal(be->ops->buf_alloc(be, 64, &b), SEQCL_OK); /* disarmed after firing */

  sq_fault_arm(SQ_FAULT_BUILD, 1);
  cl_kernel k = NULL;
  assert_int_equal(sq_ocl_kernel(sq_ocl_of(be), "probe.cl", "-DVAL=7", "probe", &k),
                   SEQCL_ERR_BUILD);
  assert_int_equal(sq_ocl_kernel(sq_ocl_of(be), "probe.cl", "-DVAL=7", "probe", &k), SEQCL_OK);

  sq_fault_arm(SQ_FAULT_LAUNCH, 1);
  assert_int_equal(be->ops->fill(be, sq_at(a, 0), 16, 1.0f), SEQCL_ERR_OPENCL);
  assert_non_null(strstr(seqcl_last_message(), "fill_u32"));
  assert_non_null(strstr(seqcl_last_message(), "not a lack of memory"));
  assert_int_equal(be->ops->fill(be, sq_at(a, 0), 16, 1.0f), SEQCL_OK);
  assert_int_equal(be->ops->finish(be), SEQCL_OK);
  be->ops->buf_free(be, a);
  be->ops->buf_free(be, b);
  test_close(ctx);
}
#endif

int main(void) {
  TEST_FIRST_OPENCL_DEVICE_OR_SKIP(device);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_disk_hit_across_contexts),
      cmocka_unit_test(test_corrupt_entry_falls_back),
      cmocka_unit_test(test_cache_disabled_and_clear),
      cmocka_unit_test(test_build_failure_has_log),
      cmocka_unit_test(test_embedded_sources),
      cmocka_unit_test(test_sync_error_names_last_kernel),
#ifdef SEQCL_FAULT_INJECTION
      cmocka_unit_test(test_fault_injection),
#endif
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
