/* golden.h - loads the PyTorch golden vectors of tests/golden/ (JSON, one
 * case per file, written by tests/golden/generate.py) and compares results.
 *
 *   golden_case gc;
 *   char why[256];
 *   if (golden_load("tests/golden/seed_mha_123.json", &gc, why, sizeof why)) fail(why);
 *   ... attn_plan_make(&gc.cfg, ...); attn_forward(&gc.cfg, &plan, &gc.in, ...) ...
 *   golden_free(&gc);
 *
 * Tensors are contiguous float arrays in row-major order. A JSON null (the
 * -inf of masked scores and additive masks) is read as -INFINITY.
 */
#ifndef TESTS_GOLDEN_H
#define TESTS_GOLDEN_H

#include <stddef.h>
#include <stdint.h>

#include "core/attention.h"

/* The stated tolerance: |got - want| <= GOLDEN_ATOL + GOLDEN_RTOL * |want|.
 * -inf matches only -inf; NaN matches nothing. */
#define GOLDEN_ATOL 1e-5
#define GOLDEN_RTOL 1e-5

typedef struct {
    int present;       /* 0 when the file has no such tensor */
    int rank;
    int shape[4];
    size_t count;      /* product of the shape */
    float *data;       /* count floats (masks: 0.0f / 1.0f) */
    uint8_t *bytes;    /* for integer tensors (masks): count bytes, else NULL */
} golden_tensor;

typedef struct {
    char name[ATTN_PARAM_NAME_MAX];
    int is_buffer;
    golden_tensor t;
} golden_param;

/* The outputs of attn_outputs, in this order. */
enum {
    GOLDEN_CONTEXT, GOLDEN_CONTEXT_HEADS, GOLDEN_QUERIES, GOLDEN_KEYS, GOLDEN_VALUES,
    GOLDEN_SCORES, GOLDEN_MASKED_SCORES, GOLDEN_MASK, GOLDEN_WEIGHTS, GOLDEN_WEIGHTS_AVG,
    GOLDEN_DROPOUT_MASK, GOLDEN_OUT_COUNT
};
extern const char *const golden_output_names[GOLDEN_OUT_COUNT];

typedef struct {
    char path[512];
    char name[128];
    char module_name[64];  /* "module" of the file, e.g. "torch.nn.MultiheadAttention" */
    attn_config cfg;
    int has_seed;          /* "seed" is an integer (else null: a fresh generator) */
    uint64_t seed;

    golden_tensor x, x_key, x_value, query, key, value;
    golden_tensor attn_mask_bool, attn_mask_add, key_padding_mask;
    attn_inputs in;        /* points into the tensors above; in.params is NULL */

    golden_param *params;  /* the state_dict, in order */
    int n_params;
    float *params_flat;    /* every param concatenated in state_dict order */
    size_t n_params_flat;

    golden_tensor out[GOLDEN_OUT_COUNT];
} golden_case;

/* Directory of the golden files: $GOLDEN_DIR, else "tests/golden". */
const char *golden_dir(void);

/* Loads one file. 0 on success; else -1 with a reason in why. On failure gc
 * is left freed. */
int golden_load(const char *path, golden_case *gc, char *why, size_t why_len);
void golden_free(golden_case *gc);

/* The paths (sorted) of the golden files whose "module" is one of the names
 * given (NULL-terminated list, matched exactly; NULL: every golden file,
 * whatever its module). Returns the count, or -1
 * when the directory cannot be read. Free with golden_list_free. */
int golden_list(const char *const *modules, char ***paths);
void golden_list_free(char **paths, int n);

/* Compares n floats. Returns -1 when every element is within tolerance, else
 * the index of the first mismatch, described in msg ("what[i]: got .., want
 * .. (|diff| .., tolerance ..)"). */
long golden_compare(const char *what, const float *got, const float *want, size_t n, char *msg,
                    size_t msg_len);
/* Same for byte masks. */
long golden_compare_bytes(const char *what, const uint8_t *got, const uint8_t *want, size_t n,
                          char *msg, size_t msg_len);

/* Every output of attn_outputs, allocated from a plan (calloc, NaN-free). */
typedef struct {
    float *f[GOLDEN_OUT_COUNT]; /* f[GOLDEN_MASK] unused (NULL) */
    uint8_t *mask;
    attn_outputs out;           /* points at the buffers above */
} golden_buffers;

/* Elements of output `which` (a GOLDEN_* index) for this plan. */
size_t golden_output_count(const attn_plan *plan, int which);
/* 0, or -1 when out of memory (then nothing is left allocated). */
int golden_buffers_alloc(const attn_plan *plan, golden_buffers *b);
void golden_buffers_free(golden_buffers *b);

/* Largest distance in units in the last place between two float arrays
 * (0 = bit-identical up to the sign of zero). */
uint32_t golden_max_ulp(const float *a, const float *b, size_t n);

#endif
