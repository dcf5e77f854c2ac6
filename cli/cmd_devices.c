/* seqcl devices: every device with its selector and properties. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "device/selector.h"

static void help(FILE *f) {
  fprintf(f,
          "usage: seqcl devices [--device SEL] [--json]\n\n"
          "Lists the host path and every OpenCL device with the selector that names it\n"
          "(for --device and SEQCL_DEVICE), its type, name, platform, driver version,\n"
          "compute units and memory. '*' marks the default (what \"auto\" picks).\n\n"
          "  --device SEL  list only the devices SEL selects (checks SEL)\n"
          "  --json        print a JSON array with every property\n"
          "  -h, --help    this text\n\n"
          "A SEQCL_DEVICE that matches nothing is reported (exit status 2).\n");
}

static void json_str(const char *s) {
  putchar('"');
  for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
    if (*p == '"' || *p == '\\')
      printf("\\%c", *p);
    else if (*p < 0x20)
      printf("\\u%04x", *p);
    else
      putchar(*p);
  }
  putchar('"');
}

static void print_json(const seqcl_device_info *d, size_t n) {
  printf("[");
  for (size_t i = 0; i < n; i++) {
    printf("%s\n  {\"selector\": ", i ? "," : "");
    json_str(d[i].selector);
    printf(", \"type\": \"%s\", \"index\": %d, \"platform_index\": %d, \"device_index\": %d,\n",
           sq_device_type_name(d[i].type), d[i].index, d[i].platform_index, d[i].device_index);
    printf("   \"name\": ");
    json_str(d[i].name);
    printf(", \"vendor\": ");
    json_str(d[i].vendor);
    printf(", \"platform\": ");
    json_str(d[i].platform);
    printf(",\n   \"driver_version\": ");
    json_str(d[i].driver_version);
    printf(", \"opencl_version\": ");
    json_str(d[i].opencl_version);
    printf(",\n   \"compute_units\": %u, \"global_mem_bytes\": %llu, \"local_mem_bytes\": %llu,"
           " \"max_work_group_size\": %zu,\n",
           d[i].compute_units, (unsigned long long)d[i].global_mem_bytes,
           (unsigned long long)d[i].local_mem_bytes, d[i].max_work_group_size);
    printf("   \"fp64\": %s, \"fp16\": %s, \"subgroups\": %s, \"default\": %s}",
           d[i].fp64 ? "true" : "false", d[i].fp16 ? "true" : "false",
           d[i].subgroups ? "true" : "false", d[i].is_default ? "true" : "false");
  }
  printf("%s]\n", n ? "\n" : "");
}

static void print_table(const seqcl_device_info *d, size_t n) {
  printf("  %-12s %-11s %-34s %-30s %-22s %5s %9s\n", "SELECTOR", "TYPE", "NAME", "PLATFORM",
         "DRIVER", "CUS", "MEMORY");
  for (size_t i = 0; i < n; i++) {
    char mem[32];
    snprintf(mem, sizeof mem, "%.1f GiB", (double)d[i].global_mem_bytes / (1024.0 * 1024 * 1024));
    printf("%c %-12s %-11s %-34.34s %-30.30s %-22.22s %5u %9s\n", d[i].is_default ? '*' : ' ',
           d[i].selector, sq_device_type_name(d[i].type), d[i].name, d[i].platform, d[i].driver_version,
           d[i].compute_units, mem);
  }
  printf("\n* = the default (SEQCL_DEVICE unset or \"auto\")\n");
}

int cmd_devices(int argc, char **argv) {
  const char *device = NULL;
  int json = 0;
  for (int i = 1; i < argc; i++) {
    if (cli_is_help(argv[i])) {
      help(stdout);
      return CLI_OK;
    } else if (!strcmp(argv[i], "--json")) {
      json = 1;
    } else if (!strcmp(argv[i], "--device")) {
      if (++i >= argc) return cli_usage_error("devices", "--device needs a selector");
      device = argv[i];
    } else if (!strncmp(argv[i], "--device=", 9)) {
      device = argv[i] + 9;
    } else {
      cli_usage_error("devices", "unknown option '%s'", argv[i]);
      help(stderr);
      return CLI_USAGE;
    }
  }
  seqcl_device_info *list = NULL;
  size_t n = 0;
  seqcl_status st;
  if (device) {
    st = seqcl_devices_select(device, &list, &n);
  } else {
    /* Without --device every device is listed, but a SEQCL_DEVICE that would
     * make every other command fail is reported here too. */
    const char *env = seqcl_device_env();
    if (env && *env) {
      seqcl_device_info *chosen = NULL;
      size_t m = 0;
      st = seqcl_devices_select(env, &chosen, &m);
      seqcl_devices_free(chosen);
      if (st != SEQCL_OK) return cli_fail("devices (SEQCL_DEVICE)", st);
    }
    st = seqcl_devices_list(&list, &n);
  }
  if (st != SEQCL_OK) return cli_fail("devices", st);
  if (json)
    print_json(list, n);
  else
    print_table(list, n);
  seqcl_devices_free(list);
  return CLI_OK;
}
