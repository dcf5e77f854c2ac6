/* The on-disk program cache as files: where it is, how big, how to empty it.
 * Used by `seqcl cache info|clear` and the tests; works without OpenCL. */
#ifndef SQ_DEVICE_CACHE_FILES_H
#define SQ_DEVICE_CACHE_FILES_H

#include <stddef.h>
#include <stdint.h>

#include <seqcl/seqcl.h>

/* Subfolder of sq_cache_dir() holding compiled program binaries. */
#define SQ_PROGRAMS_SUBDIR "programs"
/* File name suffix of a complete entry (temporary files never carry it). */
#define SQ_PROGRAM_SUFFIX ".clbin"
/* Suffix of a kept GEMM choice (src/backend/opencl/gemm_policy.c): an entry
 * too, so `seqcl cache clear` makes the next context measure again. */
#define SQ_POLICY_SUFFIX ".policy"

/* <cache>/programs/<stem><suffix> into path, the folders made first when
 * create; 0 when the cache is off or has no usable folder (the message is
 * cleared: an unusable cache only costs speed, so it never becomes a failure).
 * The program binaries and the kept GEMM choices are found this way. */
int sq_cache_entry_path(const char *stem, const char *suffix, int create, char *path, size_t cap);

typedef struct sq_cache_summary {
  char dir[4096];    /* the cache folder (sq_cache_dir) */
  int enabled;       /* 0 when SEQCL_CACHE=0 */
  size_t entries;    /* complete program entries */
  uint64_t bytes;    /* their total size */
} sq_cache_summary;

/* Fills *out; a cache folder that does not exist yet has 0 entries. */
seqcl_status sq_cache_summarize(sq_cache_summary *out);
/* Removes every program entry (and stale temporary files); *removed counts entries. */
seqcl_status sq_cache_clear(size_t *removed);

#endif
