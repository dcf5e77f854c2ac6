/* SPEC §3 selector grammar:
 *   list   := item ("," item)*
 *   item   := "auto" | "cpu" | "all" | "opencl:" spec
 *   spec   := NUM | NUM "." NUM | TYPE [":" NUM] | "~" TEXT
 *   TYPE   := "gpu" | "cpu" | "accelerator"
 *   NUM    := [0-9]+ (no sign)
 *   TEXT   := one or more characters other than "," (case-insensitive substring
 *             of the device or platform name; else of the vendor or version)
 * Anything else (empty items, trailing characters) is malformed. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "device/selector.h"

int sq_auto_index(const seqcl_device_info *all, size_t n) {
  static const seqcl_device_type preference[] = {SEQCL_DEVICE_GPU, SEQCL_DEVICE_ACCELERATOR,
                                                 SEQCL_DEVICE_HOST};
  for (size_t p = 0; p < sizeof preference / sizeof preference[0]; p++)
    for (size_t i = 0; i < n; i++)
      if (all[i].type == preference[p]) return (int)i;
  return -1;
}

void sq_mark_default(seqcl_device_info *all, size_t n) {
  int d = sq_auto_index(all, n);
  for (size_t i = 0; i < n; i++) all[i].is_default = ((int)i == d);
}

/* Parses a whole decimal number [0-9]+ of [s, end); -1 when malformed or too large. */
static long parse_num(const char *s, const char *end) {
  if (s == end) return -1;
  long v = 0;
  for (const char *p = s; p < end; p++) {
    if (*p < '0' || *p > '9') return -1;
    v = v * 10 + (*p - '0');
    if (v > 1000000) return -1;
  }
  return v;
}

static int contains_nocase(const char *hay, const char *needle, size_t nlen) {
  size_t hlen = strlen(hay);
  for (size_t i = 0; i + nlen <= hlen; i++) {
    size_t k = 0;
    while (k < nlen && tolower((unsigned char)hay[i + k]) == tolower((unsigned char)needle[k])) k++;
    if (k == nlen) return 1;
  }
  return 0;
}

/* Appends device i unless already chosen. */
static void add(size_t *chosen, size_t *count, size_t i) {
  for (size_t k = 0; k < *count; k++)
    if (chosen[k] == i) return;
  chosen[(*count)++] = i;
}

static seqcl_status bad(const char *selector, const char *item, size_t len, const char *why) {
  return sq_fail(NULL, SEQCL_ERR_BAD_SELECTOR,
                 "malformed device selector '%s': '%.*s' %s (expected auto, cpu, all, opencl:N, "
                 "opencl:P.D, opencl:gpu|cpu|accelerator[:N], opencl:~TEXT, or a comma-separated "
                 "list of these)",
                 selector, (int)len, item, why);
}

const char *sq_device_type_name(seqcl_device_type t) {
  switch (t) {
  case SEQCL_DEVICE_HOST: return "host";
  case SEQCL_DEVICE_CPU: return "cpu";
  case SEQCL_DEVICE_GPU: return "gpu";
  case SEQCL_DEVICE_ACCELERATOR: return "accelerator";
  default: return "other";
  }
}

static seqcl_status no_match(const seqcl_device_info *all, size_t n, const char *selector,
                             const char *item, size_t len) {
  char list[SQ_MSG_MAX / 2];
  size_t used = 0;
  list[0] = '\0';
  for (size_t i = 0; i < n && used < sizeof list; i++) {
    int w = snprintf(list + used, sizeof list - used, "\n  %-14s %-11s %s (%s)", all[i].selector,
                     sq_device_type_name(all[i].type), all[i].name, all[i].platform);
    if (w < 0) break;
    used += (size_t)w;
  }
  return sq_fail(NULL, SEQCL_ERR_NO_DEVICE,
                 "no device matches '%.*s' (device selector '%s'); the devices are:%s", (int)len,
                 item, selector, list);
}

/* Resolves one item [s, s+len) into chosen[]. */
static seqcl_status select_item(const seqcl_device_info *all, size_t n, const char *selector,
                                const char *s, size_t len, size_t *chosen, size_t *count) {
  const char *end = s + len;
#define IS(word) (len == strlen(word) && !memcmp(s, word, len))
  if (len == 0) return bad(selector, s, len, "is an empty item");
  if (IS("auto")) {
    int d = sq_auto_index(all, n);
    if (d < 0) return no_match(all, n, selector, s, len);
    add(chosen, count, (size_t)d);
    return SEQCL_OK;
  }
  if (IS("cpu") || IS("all")) {
    int any = 0;
    for (size_t i = 0; i < n; i++) {
      if (all[i].type == SEQCL_DEVICE_HOST || IS("all")) {
        add(chosen, count, i);
        any = 1;
        if (IS("cpu")) break;
      }
    }
    return any ? SEQCL_OK : no_match(all, n, selector, s, len);
  }
#undef IS
  static const char prefix[] = "opencl:";
  const size_t plen = sizeof prefix - 1;
  if (len < plen || memcmp(s, prefix, plen) != 0)
    return bad(selector, s, len, "is not a selector");
  const char *spec = s + plen;
  size_t slen = (size_t)(end - spec);
  if (slen == 0) return bad(selector, s, len, "names no device after 'opencl:'");

  if (spec[0] == '~') {
    size_t tlen = slen - 1;
    if (tlen == 0) return bad(selector, s, len, "has no text after '~'");
    /* Device and platform names first (SPEC §3). Some runtimes hide their
     * common name elsewhere (PoCL's platform is "Portable Computing Language";
     * "PoCL" is only in its version string), so when no name matches, the
     * vendor and the CL_DEVICE_VERSION string are tried as well. */
    for (int pass = 0; pass < 2; pass++)
      for (size_t i = 0; i < n; i++) {
        if (all[i].type == SEQCL_DEVICE_HOST) continue;
        int hit = pass == 0 ? contains_nocase(all[i].name, spec + 1, tlen) ||
                                  contains_nocase(all[i].platform, spec + 1, tlen)
                            : contains_nocase(all[i].vendor, spec + 1, tlen) ||
                                  contains_nocase(all[i].opencl_version, spec + 1, tlen);
        if (hit) {
          add(chosen, count, i);
          return SEQCL_OK;
        }
      }
    return no_match(all, n, selector, s, len);
  }

  if (spec[0] >= '0' && spec[0] <= '9') {
    const char *dot = memchr(spec, '.', slen);
    if (!dot) {
      long idx = parse_num(spec, end);
      if (idx < 0) return bad(selector, s, len, "is not opencl:N with N a number");
      for (size_t i = 0; i < n; i++)
        if (all[i].type != SEQCL_DEVICE_HOST && all[i].index == idx) {
          add(chosen, count, i);
          return SEQCL_OK;
        }
      return no_match(all, n, selector, s, len);
    }
    long p = parse_num(spec, dot), d = parse_num(dot + 1, end);
    if (p < 0 || d < 0) return bad(selector, s, len, "is not opencl:P.D with P and D numbers");
    for (size_t i = 0; i < n; i++)
      if (all[i].type != SEQCL_DEVICE_HOST && all[i].platform_index == p &&
          all[i].device_index == d) {
        add(chosen, count, i);
        return SEQCL_OK;
      }
    return no_match(all, n, selector, s, len);
  }

  static const struct {
    const char *word;
    seqcl_device_type type;
  } types[] = {{"gpu", SEQCL_DEVICE_GPU},
               {"cpu", SEQCL_DEVICE_CPU},
               {"accelerator", SEQCL_DEVICE_ACCELERATOR}};
  for (size_t t = 0; t < sizeof types / sizeof types[0]; t++) {
    size_t wlen = strlen(types[t].word);
    if (slen < wlen || memcmp(spec, types[t].word, wlen) != 0) continue;
    long nth = 0;
    if (slen > wlen) {
      if (spec[wlen] != ':') continue; /* e.g. "opencl:gpux": not this word */
      nth = parse_num(spec + wlen + 1, end);
      if (nth < 0) return bad(selector, s, len, "has no device number after the type");
    }
    long seen = 0;
    for (size_t i = 0; i < n; i++)
      if (all[i].type == types[t].type && seen++ == nth) {
        add(chosen, count, i);
        return SEQCL_OK;
      }
    return no_match(all, n, selector, s, len);
  }
  return bad(selector, s, len, "is not a device number, type or ~TEXT");
}

seqcl_status sq_select(const seqcl_device_info *all, size_t n, const char *selector,
                       seqcl_device_info **out, size_t *count) {
  if (!out || !count) return sq_fail(NULL, SEQCL_ERR_INVALID_ARGUMENT, "sq_select: NULL output");
  *out = NULL;
  *count = 0;
  if (!selector || !*selector) selector = "auto";
  size_t *chosen = malloc((n ? n : 1) * sizeof *chosen);
  if (!chosen) return sq_fail(NULL, SEQCL_ERR_OUT_OF_MEMORY, "device selection: out of memory");
  size_t k = 0;
  seqcl_status st = SEQCL_OK;
  for (const char *item = selector;;) {
    const char *comma = strchr(item, ',');
    size_t len = comma ? (size_t)(comma - item) : strlen(item);
    st = select_item(all, n, selector, item, len, chosen, &k);
    if (st != SEQCL_OK || !comma) break;
    item = comma + 1;
  }
  if (st == SEQCL_OK) {
    seqcl_device_info *res = malloc((k ? k : 1) * sizeof *res);
    if (!res) {
      st = sq_fail(NULL, SEQCL_ERR_OUT_OF_MEMORY, "device selection: out of memory");
    } else {
      for (size_t i = 0; i < k; i++) res[i] = all[chosen[i]];
      *out = res;
      *count = k;
    }
  }
  free(chosen);
  return st;
}
