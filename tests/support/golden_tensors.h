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
 *
 * and what the golden tests of the model families share: their case
 * folders, the tolerance, a flat reply tensor against a golden one.
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

/* ==== Golden case folders and comparisons ==== */

/* Every comparison with PyTorch: |got - want| <= GT_ATOL + GT_RTOL |want|. */
#define GT_ATOL 1e-4
#define GT_RTOL 1e-3
int gt_near(double got, double want);

typedef char gt_case_name[256];

/* The folders of root that hold an expected.gpt2, sorted, at most max of
 * them in names; their count. */
int gt_list_cases(const char *root, gt_case_name *names, int max);

/* Fails the test unless each of families[0..n) is the "family" of some
 * case's expected.gpt2, so that a missing golden folder cannot make a
 * program pass with nothing run. */
void gt_expect_families(const char *root, const gt_case_name *names, int n_names,
                        const char *const *families, size_t n);

struct json_t;

/* A flat reply tensor ({"shape", "data"}) against want: null where PyTorch
 * has -inf and where padded(ctx, i) says element i is at a padded position
 * (padded may be NULL), else within the tolerance. The largest difference. */
double gt_expect_flat(const char *what, const struct json_t *got, const gt_tensor *want,
                      int (*padded)(const void *ctx, size_t i), const void *ctx);

#endif
