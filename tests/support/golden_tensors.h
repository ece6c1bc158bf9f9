/* golden_tensors.h - a "gpt2-golden 1" file (tests/golden/golden_io.py's
 * write_gpt2: `key value` header lines, then `tensor NAME DTYPE COUNT`
 * lines each followed by COUNT little-endian i32 or f32 values) read whole,
 * as the model tests read their PyTorch goldens.
 *
 *   gt_file g;
 *   gt_load("tests/golden/families/llama_gqa/expected.gpt2", &g);
 *   const gt_tensor *logits = gt_find(&g, "logits");
 *   ... gt_value(&g, "family") ...
 *   gt_free(&g);
 */
#ifndef TESTS_SUPPORT_GOLDEN_TENSORS_H
#define TESTS_SUPPORT_GOLDEN_TENSORS_H

#include <stddef.h>
#include <stdint.h>

#define GT_MAX_KEYS 32

typedef struct {
    char name[96];
    size_t n;
    int is_int;     /* i32 values, else f32 */
    void *data;     /* n values, malloc'd */
} gt_tensor;

typedef struct {
    char path[512];
    char key[GT_MAX_KEYS][96], value[GT_MAX_KEYS][192];
    int n_keys;
    gt_tensor *t;   /* in file order */
    int n, cap;
} gt_file;

/* Reads path whole into *g; the test fails on a file it cannot read. */
void gt_load(const char *path, gt_file *g);
/* The tensor called name, or NULL. */
const gt_tensor *gt_find(const gt_file *g, const char *name);
/* The value of header key, or NULL. */
const char *gt_value(const gt_file *g, const char *key);
void gt_free(gt_file *g);

#endif
