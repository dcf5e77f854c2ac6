/* The devices a test program runs on: SEQCL_TEST_DEVICES (a selector) when
 * set, else every device ("all": the host and each OpenCL device). Use
 * test_devices_setup / test_devices_teardown as the cmocka group fixtures, or
 * call them from main in a program that builds its tests per device. */
#ifndef SEQCL_TEST_DEVICES_H
#define SEQCL_TEST_DEVICES_H

#include <stddef.h>

#include <seqcl/seqcl.h>

extern seqcl_device_info *devices;
extern size_t device_count;

int test_devices_setup(void **state);
int test_devices_teardown(void **state);

/* "selector/what" (malloc'd; NULL when out of memory): the name of the test
 * of `what` on device d, for a program that builds a test per device. */
char *test_unit_name(const seqcl_device_info *d, const char *what);

#endif
