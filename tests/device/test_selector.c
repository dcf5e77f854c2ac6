/* The SEQCL_DEVICE grammar (SPEC §3) on synthetic device lists: every form,
 * malformed forms, no-match messages and the "auto" preference rules. Pure:
 * needs no OpenCL. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../common/test_main.h"
#include "device/selector.h"

/* host, then platform 0 = "Portable Computing Language" (CPU), platform 1 =
 * "Intel(R) OpenCL Graphics" with two GPUs, platform 2 = an accelerator. */
static size_t make_list(seqcl_device_info *d) {
  static const struct {
    int p, dev;
    seqcl_device_type type;
    const char *name, *platform, *version;
  } spec[] = {
      {0, 0, SEQCL_DEVICE_CPU, "pthread-skylake", "Portable Computing Language", "OpenCL 3.0 PoCL"},
      {1, 0, SEQCL_DEVICE_GPU, "Intel(R) Arc(TM) A770 Graphics", "Intel(R) OpenCL Graphics",
       "OpenCL 3.0 NEO"},
      {1, 1, SEQCL_DEVICE_GPU, "Intel(R) UHD Graphics 770", "Intel(R) OpenCL Graphics",
       "OpenCL 3.0 NEO"},
      {2, 0, SEQCL_DEVICE_ACCELERATOR, "FPGA Emulator", "Intel(R) FPGA Emulation Platform",
       "OpenCL 1.2"},
  };
  memset(d, 0, 5 * sizeof *d);
  d[0].index = d[0].platform_index = d[0].device_index = -1;
  d[0].type = SEQCL_DEVICE_HOST;
  strcpy(d[0].selector, "cpu");
  strcpy(d[0].name, "host (C + OpenBLAS)");
  strcpy(d[0].platform, "host");
  for (int i = 0; i < 4; i++) {
    seqcl_device_info *x = &d[i + 1];
    x->index = i;
    x->platform_index = spec[i].p;
    x->device_index = spec[i].dev;
    x->type = spec[i].type;
    snprintf(x->selector, sizeof x->selector, "opencl:%d", i);
    strcpy(x->name, spec[i].name);
    strcpy(x->platform, spec[i].platform);
    strcpy(x->opencl_version, spec[i].version);
  }
  return 5;
}

/* Selects and returns the selectors joined by ","; "" on failure (status in *st). */
static const char *sel(const seqcl_device_info *all, size_t n, const char *s, seqcl_status *st) {
  static char buf[512];
  seqcl_device_info *out = NULL;
  size_t count = 0;
  *st = sq_select(all, n, s, &out, &count);
  buf[0] = '\0';
  if (*st == SEQCL_OK) {
    for (size_t i = 0; i < count; i++) {
      if (i) strcat(buf, ",");
      strcat(buf, out[i].selector);
    }
  } else {
    assert_null(out);
    assert_int_equal(count, 0);
  }
  free(out);
  return buf;
}

/* The list of the test (make_list), fresh for each test: some change it. */
static seqcl_device_info devs[5];
static size_t ndevs;

static int fresh_list(void **state) {
  (void)state;
  ndevs = make_list(devs);
  return 0;
}

#define EXPECT(sel_text, want)                                   \
  do {                                                           \
    seqcl_status st_;                                            \
    const char *got_ = sel(devs, ndevs, (sel_text), &st_);       \
    if (st_ != SEQCL_OK) print_error("%s: %s\n", (sel_text), seqcl_last_message()); \
    assert_int_equal(st_, SEQCL_OK);                             \
    assert_string_equal(got_, (want));                           \
  } while (0)

#define EXPECT_FAIL(sel_text, status)                  \
  do {                                                 \
    seqcl_status st_;                                  \
    sel(devs, ndevs, (sel_text), &st_);                \
    if (st_ != (status)) print_error("selector '%s'\n", (sel_text)); \
    assert_int_equal(st_, (status));                   \
    assert_non_null(strstr(seqcl_last_message(), (sel_text))); \
  } while (0)

static void test_every_form(void **state) {
  (void)state;
  EXPECT("cpu", "cpu");
  EXPECT("opencl:0", "opencl:0");
  EXPECT("opencl:3", "opencl:3");
  EXPECT("opencl:0.0", "opencl:0");
  EXPECT("opencl:1.1", "opencl:2");
  EXPECT("opencl:2.0", "opencl:3");
  EXPECT("opencl:gpu", "opencl:1");
  EXPECT("opencl:gpu:1", "opencl:2");
  EXPECT("opencl:cpu", "opencl:0");
  EXPECT("opencl:cpu:0", "opencl:0");
  EXPECT("opencl:accelerator", "opencl:3");
  EXPECT("opencl:~arc", "opencl:1");
  EXPECT("opencl:~UHD", "opencl:2");
  EXPECT("opencl:~portable", "opencl:0");
  EXPECT("opencl:~intel", "opencl:1");   /* first match in list order */
  EXPECT("opencl:~pocl", "opencl:0");    /* only in the version string */
  EXPECT("opencl:~FPGA emulation", "opencl:3"); /* text may hold spaces */
  EXPECT("all", "cpu,opencl:0,opencl:1,opencl:2,opencl:3");
  EXPECT("opencl:2,cpu", "opencl:2,cpu");
  EXPECT("opencl:1,opencl:gpu,opencl:~arc,opencl:1.0", "opencl:1"); /* duplicates removed */
  EXPECT("cpu,all", "cpu,opencl:0,opencl:1,opencl:2,opencl:3");
  EXPECT("auto,cpu", "opencl:1,cpu");
}

static void test_leading_zero_index(void **state) {
  (void)state;
  EXPECT("opencl:02", "opencl:2");
  EXPECT("opencl:01.01", "opencl:2");
}

static void test_malformed(void **state) {
  (void)state;
  const char *bad[] = {"opencl:",   "opencl:x",     "opencl:1.",    "opencl:.1",  "gpu",
                       "opencl:-1", "opencl:1x",    "opencl:1.2.3", "opencl:gpu:", "opencl:gpux",
                       "opencl:gpu:-1", "opencl:gpu:1x", "opencl:~",  "cpu,",       ",cpu",
                       "cpu,,opencl:0", "CPU",      "auto ",        " cpu",       "opencl",
                       "opencl:+1", "opencl:1 ",    "cuda:0",       "all,"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) EXPECT_FAIL(bad[i], SEQCL_ERR_BAD_SELECTOR);
}

static void test_no_match_lists_devices(void **state) {
  (void)state;
  const char *none[] = {"opencl:4", "opencl:3.0", "opencl:1.2", "opencl:gpu:2",
                        "opencl:cpu:1", "opencl:accelerator:1", "opencl:~nosuch", "cpu,opencl:9"};
  for (size_t i = 0; i < sizeof none / sizeof none[0]; i++) {
    EXPECT_FAIL(none[i], SEQCL_ERR_NO_DEVICE);
    const char *msg = seqcl_last_message();
    /* one line per device: selector, name, platform */
    for (size_t k = 0; k < ndevs; k++) {
      assert_non_null(strstr(msg, devs[k].selector));
      assert_non_null(strstr(msg, devs[k].name));
      assert_non_null(strstr(msg, devs[k].platform));
    }
    size_t lines = 0;
    for (const char *p = msg; *p; p++) lines += *p == '\n';
    assert_int_equal(lines, ndevs);
  }
}

static void test_auto_preference(void **state) {
  (void)state;
  /* GPU first, even behind a CPU OpenCL device */
  EXPECT("auto", "opencl:1");
  EXPECT("", "opencl:1");
  {
    seqcl_status st;
    seqcl_device_info *out = NULL;
    size_t count = 0;
    st = sq_select(devs, ndevs, NULL, &out, &count);
    assert_int_equal(st, SEQCL_OK);
    assert_int_equal(count, 1);
    assert_string_equal(out[0].selector, "opencl:1");
    free(out);
  }
  sq_mark_default(devs, ndevs);
  for (size_t i = 0; i < ndevs; i++) assert_int_equal(devs[i].is_default, i == 2); /* devs[2] = opencl:1 */

  /* no GPU: the accelerator */
  devs[2].type = devs[3].type = SEQCL_DEVICE_OTHER;
  EXPECT("auto", "opencl:3");
  /* no GPU, no accelerator: the host, never the OpenCL CPU device */
  devs[4].type = SEQCL_DEVICE_CPU;
  EXPECT("auto", "cpu");
  assert_int_equal(sq_auto_index(devs, ndevs), 0);
  /* an accelerator listed before a GPU still loses to the GPU */
  ndevs = make_list(devs);
  devs[1].type = SEQCL_DEVICE_ACCELERATOR;
  devs[2].type = devs[3].type = SEQCL_DEVICE_OTHER;
  devs[4].type = SEQCL_DEVICE_GPU;
  EXPECT("auto", "opencl:3");
  /* only the host (a build without OpenCL) */
  ndevs = 1;
  EXPECT("auto", "cpu");
  EXPECT("all", "cpu");
  EXPECT_FAIL("opencl:0", SEQCL_ERR_NO_DEVICE);
  EXPECT_FAIL("opencl:gpu", SEQCL_ERR_NO_DEVICE);
}

static void test_empty_list_auto(void **state) {
  (void)state;
  seqcl_device_info *out = NULL;
  size_t count = 7;
  assert_int_equal(sq_select(NULL, 0, "auto", &out, &count), SEQCL_ERR_NO_DEVICE);
  assert_null(out);
  assert_int_equal(count, 0);
}

SQ_TEST_MAIN(NULL, NULL,
      cmocka_unit_test_setup(test_every_form, fresh_list),
      cmocka_unit_test_setup(test_leading_zero_index, fresh_list),
      cmocka_unit_test_setup(test_malformed, fresh_list),
      cmocka_unit_test_setup(test_no_match_lists_devices, fresh_list),
      cmocka_unit_test_setup(test_auto_preference, fresh_list),
      cmocka_unit_test(test_empty_list_auto))
