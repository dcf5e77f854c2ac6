/* Fuzz target: the SEQCL_DEVICE selector grammar (sq_select) over synthetic
 * device lists.
 *
 * Input: byte 0 is a mask choosing which of six fixed devices are present (so
 * lists without a host, without GPUs, or empty are covered), the rest is the
 * selector text. On success the result is non-empty, has no duplicates, every
 * entry is a listed device, "cpu" items yield the host and a selector without
 * "all" yields at most one device per item; on failure the out-pointer is NULL
 * and the message quotes the selector. "auto" never picks an OpenCL CPU device. */
#include <stdlib.h>
#include <string.h>

#include "device/selector.h"
#include "fuzz_check.h"

static seqcl_device_info make(int index, int plat, int dev, seqcl_device_type type,
                              const char *name, const char *vendor, const char *platform,
                              const char *version) {
  seqcl_device_info d;
  memset(&d, 0, sizeof d);
  d.index = index;
  d.platform_index = plat;
  d.device_index = dev;
  if (index < 0)
    snprintf(d.selector, sizeof d.selector, "cpu");
  else
    snprintf(d.selector, sizeof d.selector, "opencl:%d", index);
  snprintf(d.name, sizeof d.name, "%s", name);
  snprintf(d.vendor, sizeof d.vendor, "%s", vendor);
  snprintf(d.platform, sizeof d.platform, "%s", platform);
  snprintf(d.opencl_version, sizeof d.opencl_version, "%s", version);
  d.type = type;
  d.compute_units = 4;
  return d;
}

#define NDEV 6

static void all_devices(seqcl_device_info *d) {
  d[0] = make(-1, -1, -1, SEQCL_DEVICE_HOST, "host CPU", "GenuineIntel", "", "");
  d[1] = make(0, 0, 0, SEQCL_DEVICE_CPU, "cpu-haswell-Intel(R) Xeon(R)", "GenuineIntel",
              "Portable Computing Language", "OpenCL 3.0 PoCL HSTR: cpu-x86_64");
  d[2] = make(1, 1, 0, SEQCL_DEVICE_GPU, "NVIDIA H200", "NVIDIA Corporation", "NVIDIA CUDA",
              "OpenCL 3.0 CUDA");
  d[3] = make(2, 1, 1, SEQCL_DEVICE_GPU, "NVIDIA H200", "NVIDIA Corporation", "NVIDIA CUDA",
              "OpenCL 3.0 CUDA");
  d[4] = make(3, 2, 0, SEQCL_DEVICE_ACCELERATOR, "Oclgrind Simulator", "University of Bristol",
              "Oclgrind", "OpenCL 1.2 (Oclgrind 21.10)");
  d[5] = make(4, 3, 0, SEQCL_DEVICE_OTHER, "Intel(R) Arc(TM) A770", "Intel(R) Corporation",
              "Intel(R) OpenCL Graphics", "OpenCL 3.0 NEO");
}

/* Items of the selector (commas + 1), and whether any item is exactly word. */
static size_t count_items(const char *sel, const char *word, int *has_word) {
  size_t items = 1, wl = strlen(word);
  *has_word = 0;
  for (const char *item = sel;;) {
    const char *comma = strchr(item, ',');
    size_t len = comma ? (size_t)(comma - item) : strlen(item);
    if (len == wl && memcmp(item, word, wl) == 0) *has_word = 1;
    if (!comma) break;
    items++;
    item = comma + 1;
  }
  return items;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1) return 0;
  seqcl_device_info pool[NDEV], list[NDEV];
  all_devices(pool);
  size_t n = 0;
  for (int i = 0; i < NDEV; i++)
    if (data[0] & (1u << i)) list[n++] = pool[i];

  char *sel = malloc(size); /* size - 1 bytes of text and a NUL */
  if (!sel) return 0;
  memcpy(sel, data + 1, size - 1);
  sel[size - 1] = '\0';

  int def = sq_auto_index(list, n);
  FUZZ_CHECK(def >= -1 && def < (int)n);
  if (def >= 0) FUZZ_CHECK(list[def].type != SEQCL_DEVICE_CPU && list[def].type != SEQCL_DEVICE_OTHER);
  sq_mark_default(list, n);
  for (size_t i = 0; i < n; i++) FUZZ_CHECK(list[i].is_default == ((int)i == def));

  seqcl_device_info *out = (seqcl_device_info *)1;
  size_t count = 12345;
  seqcl_status st = sq_select(list, n, sel, &out, &count);
  if (st != SEQCL_OK) {
    FUZZ_CHECK(st == SEQCL_ERR_BAD_SELECTOR || st == SEQCL_ERR_NO_DEVICE ||
               st == SEQCL_ERR_OUT_OF_MEMORY);
    FUZZ_CHECK(out == NULL && count == 0);
    const char *msg = seqcl_last_message();
    FUZZ_CHECK(msg != NULL && msg[0] != '\0');
    if (st == SEQCL_ERR_NO_DEVICE) FUZZ_CHECK(strstr(msg, "the devices are:") != NULL);
    free(sel);
    return 0;
  }
  const char *effective = sel[0] ? sel : "auto";
  int has_all = 0, has_cpu = 0, has_auto = 0;
  size_t items = count_items(effective, "all", &has_all);
  count_items(effective, "cpu", &has_cpu);
  count_items(effective, "auto", &has_auto);

  FUZZ_CHECK(out != NULL && count >= 1 && count <= n);
  if (!has_all) FUZZ_CHECK(count <= items);
  if (has_all) FUZZ_CHECK(count == n);
  int saw_host = 0, saw_default = 0;
  for (size_t i = 0; i < count; i++) {
    size_t j = 0;
    while (j < n && memcmp(&out[i], &list[j], sizeof out[i]) != 0) j++;
    FUZZ_CHECK(j < n); /* a copy of a listed device */
    for (size_t k = 0; k < i; k++) FUZZ_CHECK(memcmp(&out[k], &out[i], sizeof out[i]) != 0);
    saw_host |= out[i].type == SEQCL_DEVICE_HOST;
    saw_default |= out[i].is_default;
  }
  if (has_cpu) FUZZ_CHECK(saw_host);
  if (has_auto) FUZZ_CHECK(saw_default);
  if (strcmp(effective, "auto") == 0)
    FUZZ_CHECK(count == 1 && def >= 0 && memcmp(&out[0], &list[def], sizeof out[0]) == 0);
  free(out);
  free(sel);
  return 0;
}
