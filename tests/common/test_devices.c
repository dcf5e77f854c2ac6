#include "test_devices.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

seqcl_device_info *devices;
size_t device_count;

int test_devices_setup(void **state) {
  (void)state;
  const char *sel = getenv("SEQCL_TEST_DEVICES");
  if (seqcl_devices_select(sel && *sel ? sel : "all", &devices, &device_count) != SEQCL_OK) {
    fprintf(stderr, "%s\n", seqcl_last_message());
    return -1;
  }
  return 0;
}

int test_devices_teardown(void **state) {
  (void)state;
  seqcl_devices_free(devices);
  devices = NULL;
  device_count = 0;
  return 0;
}

char *test_unit_name(const seqcl_device_info *d, const char *what) {
  size_t len = strlen(d->selector) + strlen(what) + 2;
  char *name = malloc(len);
  if (name) snprintf(name, len, "%s/%s", d->selector, what);
  return name;
}
