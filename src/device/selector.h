/* The SEQCL_DEVICE selector grammar (SPEC §3) as pure functions over a device
 * list, so the rules can be tested on synthetic lists without any OpenCL. */
#ifndef SQ_DEVICE_SELECTOR_H
#define SQ_DEVICE_SELECTOR_H

#include <stddef.h>

#include <seqcl/seqcl.h>

/* The word for a device type in listings and messages: host, cpu, gpu,
 * accelerator or other. */
const char *sq_device_type_name(seqcl_device_type t);

/* Index in `all` of the device "auto" picks: the first GPU, else the first
 * accelerator, else the host. OpenCL CPU devices are never picked (on a CPU the
 * host path is faster). -1 when the list has none of those. */
int sq_auto_index(const seqcl_device_info *all, size_t n);

/* Sets is_default on exactly the device sq_auto_index names. */
void sq_mark_default(seqcl_device_info *all, size_t n);

/* The devices of `all` that `selector` names, in selector order, duplicates
 * removed; *out is malloc'd (free with free()). NULL or "" means "auto".
 * SEQCL_ERR_BAD_SELECTOR for malformed text, SEQCL_ERR_NO_DEVICE (message lists
 * every device) when a well-formed item matches nothing. */
seqcl_status sq_select(const seqcl_device_info *all, size_t n, const char *selector,
                       seqcl_device_info **out, size_t *count);

#endif
