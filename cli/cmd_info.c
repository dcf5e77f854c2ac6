/* seqcl info: what a model folder holds, without opening a device: its
 * config, the parameters per tensor group (encoder.embedding, decoder.rnn, ...),
 * the dtypes on disk and the file sizes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "cli_model.h"
#include "model/safetensors.h"

static void help(FILE *f) {
  fprintf(f,
          "usage: seqcl info --model DIR\n\n"
          "Prints the model's config (as seqcl reads it), the number of parameters of each\n"
          "tensor group (the first two parts of the tensor names) with their dtypes on\n"
          "disk, the total, and the size of the files. Reads the files only: no device is\n"
          "opened, and a malformed model is reported as `decode` would report it.\n");
}

static const char *dtype_name(sq_dtype d) {
  return d == SQ_DT_F32 ? "F32" : d == SQ_DT_F16 ? "F16" : d == SQ_DT_BF16 ? "BF16" : "I32";
}

/* "decoder.attention.key.weight" -> "decoder.attention" */
static size_t group_len(const char *name) {
  const char *dot = strchr(name, '.');
  if (!dot) return strlen(name);
  const char *second = strchr(dot + 1, '.');
  return second ? (size_t)(second - name) : strlen(name);
}

static long long file_size(const char *path) {
  struct stat sb;
  return stat(path, &sb) == 0 ? (long long)sb.st_size : -1;
}

static void print_size(const char *label, long long bytes) {
  if (bytes < 0) return;
  printf("%-22s %lld bytes (%.2f MiB)\n", label, bytes, (double)bytes / (1024.0 * 1024.0));
}

static int print_tensors(const sq_st_file *f) {
  printf("\n%-22s %12s  %s\n", "tensor group", "parameters", "dtypes");
  size_t total = 0;
  unsigned char *done = calloc(f->count + 1, 1);
  if (!done) return cli_usage_error("info", "out of memory"), CLI_RUNTIME;
  for (size_t i = 0; i < f->count; i++) {
    if (done[i]) continue;
    const char *g = f->tensors[i].name;
    size_t len = group_len(g), count = 0;
    int dtypes = 0;
    for (size_t k = i; k < f->count; k++) {
      const char *n = f->tensors[k].name;
      if (group_len(n) != len || strncmp(n, g, len)) continue;
      done[k] = 1;
      count += f->tensors[k].nelem;
      dtypes |= 1 << f->tensors[k].dtype;
    }
    char types[32] = "";
    for (int d = SQ_DT_F32; d <= SQ_DT_I32; d++)
      if (dtypes & (1 << d)) {
        if (types[0]) strcat(types, ",");
        strcat(types, dtype_name((sq_dtype)d));
      }
    printf("%-22.*s %12zu  %s\n", (int)len, g, count, types);
    total += count;
  }
  free(done);
  printf("%-22s %12zu  (%zu tensors)\n\n", "total", total, f->count);
  return CLI_OK;
}

int cmd_info(int argc, char **argv) {
  static const char cmd[] = "info";
  const char *dir = NULL;
  for (int i = 1; i < argc; i++) {
    if (cli_is_help(argv[i])) {
      help(stdout);
      return CLI_OK;
    } else if (!strcmp(argv[i], "--model")) {
      if (!(dir = cli_value(cmd, argc, argv, &i))) return CLI_USAGE;
    } else {
      return cli_usage_error(cmd, "unknown option '%s' (see seqcl info --help)", argv[i]);
    }
  }
  if (!dir) return cli_usage_error(cmd, "--model DIR is required");
  sq_config cfg;
  int rc = cli_read_config(cmd, dir, &cfg);
  if (rc != CLI_OK) return rc;
  char *json = NULL;
  seqcl_status st = sq_config_to_json(&cfg, &json);
  if (st != SEQCL_OK) return cli_fail(cmd, st);
  size_t n = strlen(dir) + 32;
  char *cpath = malloc(n), *wpath = malloc(n);
  if (!cpath || !wpath) {
    free(json), free(cpath), free(wpath);
    return cli_usage_error(cmd, "out of memory"), CLI_RUNTIME;
  }
  snprintf(cpath, n, "%s/config.json", dir);
  snprintf(wpath, n, "%s/model.safetensors", dir);
  sq_st_file *f = NULL;
  st = sq_st_read(wpath, 0, &f);
  if (st != SEQCL_OK) {
    rc = cli_fail(cmd, st);
  } else {
    printf("model %s\n\nconfig (%s):\n%s\n", dir, cpath, json);
    rc = print_tensors(f);
    print_size("config.json", file_size(cpath));
    print_size("model.safetensors", file_size(wpath));
    snprintf(cpath, n, "%s/checkpoint", dir);
    struct stat sb;
    if (stat(cpath, &sb) == 0 && S_ISDIR(sb.st_mode))
      printf("%-22s present (continue training with seqcl train --resume %s)\n", "checkpoint",
             dir);
  }
  sq_st_free(f);
  free(json), free(cpath), free(wpath);
  return rc;
}
