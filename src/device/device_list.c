/* Device enumeration: the host path first, then every OpenCL device in platform
 * order (clinfo -l numbering). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifdef SEQCL_HAVE_OPENCL
#include <CL/cl.h>
#endif

#include "core/error.h"
#include "device/selector.h"

/* cl_ext.h spelling of the ICD loader's "no platform installed". */
#define CL_PLATFORM_NOT_FOUND_KHR_ (-1001)

#ifdef SEQCL_HAVE_OPENCL
#include "device/cl_errors.h"
#endif

static void copy_str(char *dst, size_t cap, const char *src) {
  snprintf(dst, cap, "%s", src ? src : "");
}

/* The first "model name" line of /proc/cpuinfo, for the host's vendor field. */
static void host_cpu_model(char *buf, size_t cap) {
  copy_str(buf, cap, "host CPU");
  FILE *f = fopen("/proc/cpuinfo", "r");
  if (!f) return;
  char line[512];
  while (fgets(line, sizeof line, f)) {
    if (strncmp(line, "model name", 10) != 0) continue;
    char *colon = strchr(line, ':');
    if (!colon) break;
    colon++;
    while (*colon == ' ' || *colon == '\t') colon++;
    colon[strcspn(colon, "\n")] = '\0';
    copy_str(buf, cap, colon);
    break;
  }
  fclose(f);
}

static void host_info(seqcl_device_info *d) {
  memset(d, 0, sizeof *d);
  d->index = -1;
  d->platform_index = -1;
  d->device_index = -1;
  copy_str(d->selector, sizeof d->selector, "cpu");
  copy_str(d->name, sizeof d->name, "host (C + OpenBLAS)");
  host_cpu_model(d->vendor, sizeof d->vendor);
  copy_str(d->platform, sizeof d->platform, "host");
  copy_str(d->driver_version, sizeof d->driver_version, "seqcl " SEQCL_VERSION_STRING);
  d->type = SEQCL_DEVICE_HOST;
  long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  d->compute_units = cpus > 0 ? (unsigned)cpus : 1;
  long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  d->global_mem_bytes = (pages > 0 && page > 0) ? (uint64_t)pages * (uint64_t)page : 0;
  d->local_mem_bytes = 0;
  d->max_work_group_size = 1;
  d->fp64 = 1;
}

#ifdef SEQCL_HAVE_OPENCL
static void dev_str(cl_device_id dev, cl_device_info what, char *buf, size_t cap) {
  buf[0] = '\0';
  if (clGetDeviceInfo(dev, what, cap, buf, NULL) != CL_SUCCESS) {
    /* Too long for the field: read it whole and truncate. */
    size_t need = 0;
    if (clGetDeviceInfo(dev, what, 0, NULL, &need) == CL_SUCCESS && need > 0) {
      char *tmp = malloc(need);
      if (tmp && clGetDeviceInfo(dev, what, need, tmp, NULL) == CL_SUCCESS) copy_str(buf, cap, tmp);
      free(tmp);
    }
  }
  buf[cap - 1] = '\0';
}

static int has_extension(cl_device_id dev, const char *ext) {
  size_t need = 0;
  if (clGetDeviceInfo(dev, CL_DEVICE_EXTENSIONS, 0, NULL, &need) != CL_SUCCESS || need == 0)
    return 0;
  char *all = malloc(need + 1);
  if (!all) return 0;
  int found = 0;
  if (clGetDeviceInfo(dev, CL_DEVICE_EXTENSIONS, need, all, NULL) == CL_SUCCESS) {
    all[need] = '\0';
    size_t elen = strlen(ext);
    for (char *p = strstr(all, ext); p; p = strstr(p + 1, ext)) {
      int starts = (p == all || p[-1] == ' ');
      int ends = (p[elen] == ' ' || p[elen] == '\0');
      if (starts && ends) {
        found = 1;
        break;
      }
    }
  }
  free(all);
  return found;
}

static void opencl_info(cl_device_id dev, const char *platform_name, int index, int p, int d,
                        seqcl_device_info *out) {
  memset(out, 0, sizeof *out);
  out->index = index;
  out->platform_index = p;
  out->device_index = d;
  snprintf(out->selector, sizeof out->selector, "opencl:%d", index);
  dev_str(dev, CL_DEVICE_NAME, out->name, sizeof out->name);
  dev_str(dev, CL_DEVICE_VENDOR, out->vendor, sizeof out->vendor);
  copy_str(out->platform, sizeof out->platform, platform_name);
  dev_str(dev, CL_DRIVER_VERSION, out->driver_version, sizeof out->driver_version);
  dev_str(dev, CL_DEVICE_VERSION, out->opencl_version, sizeof out->opencl_version);
  cl_device_type t = 0;
  clGetDeviceInfo(dev, CL_DEVICE_TYPE, sizeof t, &t, NULL);
  out->type = (t & CL_DEVICE_TYPE_GPU)           ? SEQCL_DEVICE_GPU
              : (t & CL_DEVICE_TYPE_ACCELERATOR) ? SEQCL_DEVICE_ACCELERATOR
              : (t & CL_DEVICE_TYPE_CPU)         ? SEQCL_DEVICE_CPU
                                                 : SEQCL_DEVICE_OTHER;
  cl_uint cu = 0;
  clGetDeviceInfo(dev, CL_DEVICE_MAX_COMPUTE_UNITS, sizeof cu, &cu, NULL);
  out->compute_units = cu;
  cl_ulong gmem = 0, lmem = 0;
  clGetDeviceInfo(dev, CL_DEVICE_GLOBAL_MEM_SIZE, sizeof gmem, &gmem, NULL);
  clGetDeviceInfo(dev, CL_DEVICE_LOCAL_MEM_SIZE, sizeof lmem, &lmem, NULL);
  out->global_mem_bytes = gmem;
  out->local_mem_bytes = lmem;
  size_t wg = 0;
  clGetDeviceInfo(dev, CL_DEVICE_MAX_WORK_GROUP_SIZE, sizeof wg, &wg, NULL);
  out->max_work_group_size = wg;
  out->fp64 = has_extension(dev, "cl_khr_fp64");
  out->fp16 = has_extension(dev, "cl_khr_fp16");
  out->subgroups = has_extension(dev, "cl_khr_subgroups") || has_extension(dev, "cl_intel_subgroups");
}

/* Appends the devices of every platform; a failing platform is skipped and its
 * error recorded as the thread's message. */
static seqcl_status list_opencl(seqcl_device_info **list, size_t *count, size_t *cap) {
  cl_uint np = 0;
  cl_int err = clGetPlatformIDs(0, NULL, &np);
  if (err == CL_PLATFORM_NOT_FOUND_KHR_ || np == 0) return SEQCL_OK;
  if (err != CL_SUCCESS) {
    sq_fail(NULL, SEQCL_ERR_OPENCL, "clGetPlatformIDs: %s (OpenCL devices skipped)",
            sq_cl_error_name(err));
    return SEQCL_OK;
  }
  cl_platform_id *plats = malloc(np * sizeof *plats);
  if (!plats) return sq_fail(NULL, SEQCL_ERR_OUT_OF_MEMORY, "device list: out of memory");
  err = clGetPlatformIDs(np, plats, NULL);
  if (err != CL_SUCCESS) {
    free(plats);
    sq_fail(NULL, SEQCL_ERR_OPENCL, "clGetPlatformIDs: %s (OpenCL devices skipped)",
            sq_cl_error_name(err));
    return SEQCL_OK;
  }
  int index = 0;
  seqcl_status st = SEQCL_OK;
  for (cl_uint p = 0; p < np && st == SEQCL_OK; p++) {
    char pname[256] = "";
    clGetPlatformInfo(plats[p], CL_PLATFORM_NAME, sizeof pname, pname, NULL);
    pname[sizeof pname - 1] = '\0';
    cl_uint nd = 0;
    err = clGetDeviceIDs(plats[p], CL_DEVICE_TYPE_ALL, 0, NULL, &nd);
    if (err == CL_DEVICE_NOT_FOUND || (err == CL_SUCCESS && nd == 0)) continue;
    if (err != CL_SUCCESS) {
      sq_fail(NULL, SEQCL_ERR_OPENCL, "platform %u (%s): clGetDeviceIDs: %s (platform skipped)", p,
              pname, sq_cl_error_name(err));
      continue;
    }
    cl_device_id *devs = malloc(nd * sizeof *devs);
    if (!devs) {
      st = sq_fail(NULL, SEQCL_ERR_OUT_OF_MEMORY, "device list: out of memory");
      break;
    }
    err = clGetDeviceIDs(plats[p], CL_DEVICE_TYPE_ALL, nd, devs, NULL);
    if (err != CL_SUCCESS) {
      sq_fail(NULL, SEQCL_ERR_OPENCL, "platform %u (%s): clGetDeviceIDs: %s (platform skipped)", p,
              pname, sq_cl_error_name(err));
      free(devs);
      continue;
    }
    for (cl_uint d = 0; d < nd; d++) {
      if (*count == *cap) {
        size_t ncap = *cap * 2;
        seqcl_device_info *grown = realloc(*list, ncap * sizeof **list);
        if (!grown) {
          st = sq_fail(NULL, SEQCL_ERR_OUT_OF_MEMORY, "device list: out of memory");
          break;
        }
        *list = grown;
        *cap = ncap;
      }
      opencl_info(devs[d], pname, index++, (int)p, (int)d, &(*list)[(*count)++]);
    }
    free(devs);
  }
  free(plats);
  return st;
}
#endif

seqcl_status seqcl_devices_list(seqcl_device_info **out, size_t *count) {
  if (!out || !count)
    return sq_fail(NULL, SEQCL_ERR_INVALID_ARGUMENT, "seqcl_devices_list: NULL output");
  *out = NULL;
  *count = 0;
  sq_clear_message();
  size_t cap = 8, n = 0;
  seqcl_device_info *list = malloc(cap * sizeof *list);
  if (!list) return sq_fail(NULL, SEQCL_ERR_OUT_OF_MEMORY, "device list: out of memory");
  host_info(&list[n++]);
#ifdef SEQCL_HAVE_OPENCL
  seqcl_status st = list_opencl(&list, &n, &cap);
  if (st != SEQCL_OK) {
    free(list);
    return st;
  }
#endif
  sq_mark_default(list, n);
  *out = list;
  *count = n;
  return SEQCL_OK;
}

static pthread_once_t env_once = PTHREAD_ONCE_INIT;
static char *env_value;

static void read_env(void) {
  const char *v = getenv("SEQCL_DEVICE");
  env_value = v ? strdup(v) : NULL;
}

const char *seqcl_device_env(void) {
  pthread_once(&env_once, read_env);
  return env_value;
}

/* 1 when every item of the selector is "cpu": the host path, whatever the
 * OpenCL platforms hold. */
static int host_only(const char *selector) {
  if (!selector || !*selector) return 0;
  for (const char *s = selector;;) {
    const char *comma = strchr(s, ',');
    const size_t len = comma ? (size_t)(comma - s) : strlen(s);
    if (len != 3 || memcmp(s, "cpu", 3) != 0) return 0;
    if (!comma) return 1;
    s = comma + 1;
  }
}

seqcl_status seqcl_devices_select(const char *selector, seqcl_device_info **out, size_t *count) {
  if (!out || !count)
    return sq_fail(NULL, SEQCL_ERR_INVALID_ARGUMENT, "seqcl_devices_select: NULL output");
  *out = NULL;
  *count = 0;
  if (!selector || !*selector) selector = seqcl_device_env();
  seqcl_device_info *all = NULL;
  size_t n = 0;
  if (host_only(selector)) {
    /* Loading the OpenCL loader's every installed runtime to list their
     * devices costs about 0.1 s of each process's start-up; "cpu" needs none
     * of them. is_default stays 0: which device "auto" would pick is not
     * known without that list. */
    sq_clear_message();
    all = calloc(1, sizeof *all);
    if (!all) return sq_fail(NULL, SEQCL_ERR_OUT_OF_MEMORY, "device list: out of memory");
    host_info(&all[0]);
    n = 1;
  } else {
    SQ_TRY(seqcl_devices_list(&all, &n));
  }
  seqcl_status st = sq_select(all, n, selector, out, count);
  free(all);
  return st;
}

void seqcl_devices_free(seqcl_device_info *list) { free(list); }
