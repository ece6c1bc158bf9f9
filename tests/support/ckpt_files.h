/* ckpt_files.h - safetensors files for the checkpoint tests: variants of the
 * golden checkpoints (tests/golden/ckpt/) with a broken header or missing
 * tensors, random GPT-2 checkpoints of any size, and the two calls the
 * checkpoint and folder tests share (a load refused, a request answered). */
#ifndef TESTS_SUPPORT_CKPT_FILES_H
#define TESTS_SUPPORT_CKPT_FILES_H

#include <jansson.h>
#include <stddef.h>

#include "api/api.h"

/* Writes len bytes to path. 0 or -1. */
int ckf_write(const char *path, const void *data, size_t len);

/* A safetensors file from a header text (padded to 8 bytes here) and data. */
int ckf_write_raw(const char *path, const char *header, const void *data, size_t data_len);

/* Copies src to dst with edit applied to its parsed header (which may be
 * NULL: no change). With recompute, data_offsets are laid out again from
 * the edited header (tensors removed from it lose their bytes; others keep
 * their bytes, whatever their new shape or dtype says): a consistent file.
 * Without, the header is written as edited and the data as it was. */
int ckf_variant(const char *src, const char *dst, void (*edit)(json_t *hdr, void *arg), void *arg,
                int recompute);

/* Overwrites the float32 value at index i of tensor name in the file. */
int ckf_patch_f32(const char *path, const char *name, size_t i, float v);

/* api_models_load(spec) must fail, its reason saying text. */
void ckf_expect_refused(const char *spec, const char *text);

/* POST /model/gpt2 body in the test's process with models loaded; the
 * status checked, the parsed reply. */
json_t *ckf_call(const api_models *models, const char *body, int want_status);

/* A random GPT-2 checkpoint in the Hugging Face layout, F32, no prefix,
 * __metadata__ n_head: vocab V, n_positions P, L blocks, width C, H heads. */
int ckf_write_random(const char *path, int V, int P, int L, int C, int H, unsigned seed);

/* The same layout with every value 0, its data a hole in the file (written
 * at once whatever its size: a model as large as a real one to load). */
int ckf_write_zeros(const char *path, int V, int P, int L, int C, int H);

/* The golden checkpoint file rel ("tiny_f32.safetensors") as a path into out. */
char *ckf_golden(char *out, size_t size, const char *rel);

/* The reference of golden checkpoint name (tests/golden/ckpt/NAME.json,
 * written with it by PyTorch): fails the test when it cannot be read. The
 * caller owns it. */
json_t *ckf_golden_ref(const char *name);

/* Loads the golden checkpoint file or folder rel as model name (spec
 * NAME=PATH+suffix, suffix "" or ":heads=N") into *models; fails the test
 * with the reason when it is refused. */
void ckf_load_golden(api_models **models, const char *name, const char *rel, const char *suffix);

/* The reply's flat logits ("logits": {"data": [...]}) against the
 * reference's "logits": as many, more than min_count, each within
 * 1e-4 + 1e-3 |PyTorch's|; prints the largest difference. */
void ckf_expect_logits(const json_t *reply, const json_t *ref, const char *name, size_t min_count);

#endif
