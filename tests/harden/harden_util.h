/* Shared pieces of the hardening tests (the model-area tests use some): a
 * tiny random model written to a temporary folder (config.json through
 * sq_config_to_json, weights through sq_st_write), token files, temporary
 * folders and their clean-up, and the device list. */
#ifndef SEQCL_TESTS_HARDEN_UTIL_H
#define SEQCL_TESTS_HARDEN_UTIL_H

#include <stddef.h>
#include <stdint.h>

#include <seqcl/seqcl.h>

#include "model/config.h"

/* V_src 7, V_tgt 9, D 5, bidirectional H 6 (H_e 12), H_d 8, bridge init,
 * additive attention (A 7, every bias), output "state", BOS 7, EOS 8: one
 * layer and "state" so that the same model also trains. */
void hu_tiny_config(sq_config *c);

/* Writes dir/config.json and dir/model.safetensors for c with seeded weights in
 * [-1, 1). When poison_tensor is not NULL, its element poison_index (every
 * element with HU_ALL) is set to poison_value (NaN / Inf / overflow tests).
 * Returns 0 on success. */
#define HU_ALL ((size_t)-1)
int hu_write_model(const char *dir, const sq_config *c, uint64_t seed, const char *poison_tensor,
                   size_t poison_index, float poison_value);
/* The same into a new folder dir (made 0755 first), c NULL for hu_tiny_config's
 * model: the model folders the tests make. Returns 0 on success. */
int hu_make_model_dir(const char *dir, const sq_config *c, uint64_t seed,
                      const char *poison_tensor, size_t poison_index, float poison_value);

/* The tensors hu_write_model writes for c: names[i] and element counts;
 * returns how many (at most cap). */
int hu_tensor_names(const sq_config *c, char names[][80], size_t *sizes, int cap);

/* A named tensor (one or two dimensions) of float values. */
#define HU_MAXT 32
typedef struct hu_tensor {
  char name[80];
  int ndim;
  int64_t shape[2];
  float *data;
} hu_tensor;

/* Appends t[*n] (then ++*n): name, shape [d0] (ndim 1) or [d0, d1], values
 * in [-1, 1) from the 64-bit LCG whose state is *state (malloc'd; NULL data
 * when out of memory). */
void hu_add_tensor(hu_tensor *t, int *n, const char *name, int ndim, int64_t d0, int64_t d1,
                   uint64_t *state);

/* mkdtemp("/tmp/seqcl-harden-TAG-XXXXXX") into buf; 0 on success. */
int hu_mkdtemp(char *buf, size_t cap, const char *tag);
/* Removes a folder tree, read-only folders in it too (ignores errors). */
void hu_rmtree(const char *dir);
/* A fresh folder for each cmocka test: hu_tmpdir, made by the setup fixture
 * hu_setup_tmpdir (hu_mkdtemp, tag "tmp") and removed with all it holds by
 * the teardown fixture hu_teardown_tmpdir. */
extern char hu_tmpdir[64];
int hu_setup_tmpdir(void **state);
int hu_teardown_tmpdir(void **state);
/* Number of entries in a folder (not counting . and ..); -1 if it does not exist. */
int hu_count_entries(const char *dir);
/* Writes text to dir/name; returns the joined path in a static ring buffer. */
const char *hu_write_text(const char *dir, const char *name, const char *text);
const char *hu_join(const char *dir, const char *name);

/* Every device: the host, then each OpenCL device. *count >= 1. */
seqcl_device_info *hu_devices(size_t *count);

/* The fixed inputs every test decodes: 5 source lines, 1..5 ids < 7, and their
 * targets (BOS ... EOS, ids < 9). */
extern const char hu_src_text[];
extern const char hu_tgt_text[];

#endif
