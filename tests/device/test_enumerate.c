/* Enumeration on this machine: the host first with sane properties, then every
 * OpenCL device numbered as SPEC §3 says; the selector forms resolve to the
 * same devices; SEQCL_DEVICE is read once. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "../common/test_main.h"

#include <seqcl/seqcl.h>

/* 1 when a shared object whose path contains `name` is mapped into this process. */
static int mapped(const char *name) {
  FILE *f = fopen("/proc/self/maps", "r");
  if (!f) return -1;
  char line[4096];
  int found = 0;
  while (!found && fgets(line, sizeof line, f)) found = strstr(line, name) != NULL;
  fclose(f);
  return found;
}

/* The full device list (the host first) into *n; the test fails when it cannot be listed. */
static seqcl_device_info *listed(size_t *n) {
  seqcl_device_info *d = NULL;
  assert_int_equal(seqcl_devices_list(&d, n), SEQCL_OK);
  return d;
}

/* "cpu" is the host path: selecting it loads no OpenCL runtime (each costs
 * start-up time) and gives the host entry of the full list. Runs first, before
 * anything here has listed the OpenCL devices. */
static void test_cpu_loads_no_runtime(void **state) {
  (void)state;
  const char *runtimes[] = {"libpocl", "RusticlOpenCL", "MesaOpenCL"};
  int before[3];
  for (int i = 0; i < 3; i++) before[i] = mapped(runtimes[i]);
  if (before[0] < 0) skip(); /* no /proc */
  seqcl_device_info *s = NULL;
  size_t m = 0;
  assert_int_equal(seqcl_devices_select("cpu", &s, &m), SEQCL_OK);
  assert_int_equal(m, 1);
  seqcl_devices_free(s);
  assert_int_equal(seqcl_devices_select("cpu,cpu", &s, &m), SEQCL_OK);
  assert_int_equal(m, 1); /* one device, named twice */
  for (int i = 0; i < 3; i++)
    if (!before[i] && mapped(runtimes[i])) fail_msg("selecting \"cpu\" loaded %s", runtimes[i]);
  size_t n = 0;
  seqcl_device_info *d = listed(&n);
  for (size_t k = 0; k < m; k++) {
    assert_int_equal(s[k].type, SEQCL_DEVICE_HOST);
    assert_string_equal(s[k].selector, d[0].selector);
    assert_string_equal(s[k].name, d[0].name);
    assert_int_equal(s[k].compute_units, d[0].compute_units);
    assert_int_equal(s[k].index, -1);
  }
  seqcl_devices_free(s);
  seqcl_devices_free(d);
}

static void test_host_first(void **state) {
  (void)state;
  size_t n = 0;
  seqcl_device_info *d = listed(&n);
  assert_true(n >= 1);
  assert_int_equal(d[0].type, SEQCL_DEVICE_HOST);
  assert_string_equal(d[0].selector, "cpu");
  assert_int_equal(d[0].index, -1);
  assert_int_equal(d[0].platform_index, -1);
  assert_int_equal(d[0].device_index, -1);
  assert_true(d[0].compute_units >= 1);
  assert_true(d[0].global_mem_bytes > (64u << 20));
  assert_true(strlen(d[0].name) > 0);
  int defaults = 0;
  for (size_t i = 0; i < n; i++) defaults += d[i].is_default;
  assert_int_equal(defaults, 1);
  seqcl_devices_free(d);
}

static void test_opencl_numbering(void **state) {
  (void)state;
  size_t n = 0;
  seqcl_device_info *d = listed(&n);
  if (!seqcl_has_opencl()) {
    assert_int_equal(n, 1);
    seqcl_devices_free(d);
    skip();
  }
  int prev_p = -1, prev_d = -1;
  for (size_t i = 1; i < n; i++) {
    char want[32];
    snprintf(want, sizeof want, "opencl:%zu", i - 1);
    assert_string_equal(d[i].selector, want);
    assert_int_equal(d[i].index, (int)(i - 1));
    assert_true(d[i].type != SEQCL_DEVICE_HOST);
    assert_true(d[i].platform_index >= prev_p);
    if (d[i].platform_index == prev_p)
      assert_int_equal(d[i].device_index, prev_d + 1);
    else
      assert_int_equal(d[i].device_index, 0);
    prev_p = d[i].platform_index;
    prev_d = d[i].device_index;
    assert_true(strlen(d[i].name) > 0);
    assert_true(strlen(d[i].platform) > 0);
    assert_true(strncmp(d[i].opencl_version, "OpenCL ", 7) == 0);
    assert_true(d[i].compute_units >= 1);
    assert_true(d[i].global_mem_bytes > 0);
    assert_true(d[i].local_mem_bytes >= 16 * 1024); /* OpenCL 1.2 minimum for devices */
    assert_true(d[i].max_work_group_size >= 1);
    /* "auto" never picks an OpenCL CPU device */
    if (d[i].type == SEQCL_DEVICE_CPU) assert_false(d[i].is_default);

    /* every selector form that names this device finds it */
    char forms[2][64];
    snprintf(forms[0], sizeof forms[0], "opencl:%d", d[i].index);
    snprintf(forms[1], sizeof forms[1], "opencl:%d.%d", d[i].platform_index, d[i].device_index);
    for (int f = 0; f < 2; f++) {
      seqcl_device_info *s = NULL;
      size_t m = 0;
      assert_int_equal(seqcl_devices_select(forms[f], &s, &m), SEQCL_OK);
      assert_int_equal(m, 1);
      assert_string_equal(s[0].selector, d[i].selector);
      seqcl_devices_free(s);
    }
  }
  /* PoCL is installed on the machines this suite runs on; it must be seen. */
  if (access("/etc/OpenCL/vendors/pocl.icd", R_OK) == 0) {
    seqcl_device_info *s = NULL;
    size_t m = 0;
    assert_int_equal(seqcl_devices_select("opencl:~pocl", &s, &m), SEQCL_OK);
    assert_int_equal(m, 1);
    assert_int_equal(s[0].type, SEQCL_DEVICE_CPU);
    seqcl_devices_free(s);
    assert_int_equal(seqcl_devices_select("opencl:cpu", &s, &m), SEQCL_OK);
    seqcl_devices_free(s);
  }
  size_t all_n = 0;
  seqcl_device_info *all = NULL;
  assert_int_equal(seqcl_devices_select("all", &all, &all_n), SEQCL_OK);
  assert_int_equal(all_n, n);
  seqcl_devices_free(all);
  seqcl_devices_free(d);
  if (n == 1) skip(); /* OpenCL built, but this machine has no OpenCL device */
}

static void *read_env(void *arg) {
  (void)arg;
  return (void *)seqcl_device_env();
}

/* SEQCL_DEVICE is read once per process, from any thread. */
static void test_env_read_once(void **state) {
  (void)state;
  setenv("SEQCL_DEVICE", "cpu", 1);
  pthread_t t[4];
  for (int i = 0; i < 4; i++) assert_int_equal(pthread_create(&t[i], NULL, read_env, NULL), 0);
  const char *first = NULL;
  for (int i = 0; i < 4; i++) {
    void *r = NULL;
    pthread_join(t[i], &r);
    if (i == 0) first = r;
    assert_ptr_equal(r, first);
  }
  assert_string_equal(seqcl_device_env(), "cpu");
  setenv("SEQCL_DEVICE", "opencl:~nosuch", 1); /* ignored: already read */
  assert_string_equal(seqcl_device_env(), "cpu");
  seqcl_device_info *s = NULL;
  size_t m = 0;
  assert_int_equal(seqcl_devices_select(NULL, &s, &m), SEQCL_OK);
  assert_int_equal(m, 1);
  assert_string_equal(s[0].selector, "cpu");
  seqcl_devices_free(s);
  assert_int_equal(seqcl_devices_select("", &s, &m), SEQCL_OK);
  assert_string_equal(s[0].selector, "cpu");
  seqcl_devices_free(s);
  /* an explicit selector wins over the variable */
  assert_int_equal(seqcl_devices_select("all", &s, &m), SEQCL_OK);
  assert_true(m >= 1);
  seqcl_devices_free(s);
  /* bad selectors through the public API */
  assert_int_equal(seqcl_devices_select("opencl:", &s, &m), SEQCL_ERR_BAD_SELECTOR);
  assert_null(s);
  assert_int_equal(seqcl_devices_select("opencl:99", &s, &m), SEQCL_ERR_NO_DEVICE);
  assert_non_null(strstr(seqcl_last_message(), "host (C + OpenBLAS)"));
}

SQ_TEST_MAIN(NULL, NULL,
      cmocka_unit_test(test_cpu_loads_no_runtime),
      cmocka_unit_test(test_host_first),
      cmocka_unit_test(test_opencl_numbering),
      cmocka_unit_test(test_env_read_once))
