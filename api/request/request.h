/* request.h - reading a request object (private to api/, prefix api__):
 * typed top-level fields, tensors (nested arrays, {"shape","data"} or
 * base64) into contiguous float arrays, and the options every endpoint
 * reads the same way.
 *
 *   fields.c     typed field getters with the service's error messages
 *   tensor_in.c  JSON tensors into float arrays, with the budget and shapes
 *   options.c    output_format, dtype, precision (and the formats' table);
 *                where trainable parameters come from (init or state_dict)
 */
#ifndef API_REQUEST_H
#define API_REQUEST_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "api/reply/reply.h"

/* ==== Tensors in ========================================================== */

typedef enum {
    API_VAL_NUMBER,   /* numbers only */
    API_VAL_BOOL,     /* true/false or 0/1 (a boolean mask) */
    API_VAL_MASK,     /* booleans, or numbers with "-inf", "-Infinity" or null as -inf */
} api_val_kind;

typedef struct {
    int rank;
    int shape[API_MAX_RANK];
    size_t count;
    float *data;       /* count floats, malloc'd; booleans as 0/1 */
    int any_bool;      /* API_VAL_MASK: some value was a JSON boolean */
    int all_binary;    /* every value is 0 or 1 */
} api_tensor;

/* Reads a nested array or {"shape","data"} of rank min_rank..max_rank into a
 * new array. *budget (elements) bounds the count before anything is
 * allocated and is decreased by it. name is the field path used in errors. */
int api__tensor_read(const json_t *j, const char *name, int min_rank, int max_rank,
                     api_val_kind kind, size_t *budget, api_tensor *t, api_err *e);
/* Reads into dst a tensor that must have exactly the given shape (state_dict
 * entries); the error names the expected shape. */
int api__tensor_read_into(const json_t *j, const char *name, int rank, const int *shape,
                          float *dst, api_err *e);
void api__tensor_free(api_tensor *t);
/* "[2, 3]" into out. */
void api__shape_str(char *out, size_t size, int rank, const int *shape);

/* ==== Typed fields of a request object (fields.c) ========================= */

/* A JSON null is the same as an absent field (Python's None). The getters
 * return 1 when the field is there and read into *out, 0 when it is absent
 * (*out untouched), -1 after filling e (wrong type, out of range). */
const json_t *api__field(const json_t *root, const char *name);
/* "NAME must be WANT, got a string" (invalid_type); returns -1. */
int api__field_wrong_type(api_err *e, const char *name, const json_t *v, const char *want);
int api__field_int(const json_t *root, const char *name, long long min, long long max, int *out,
                   api_err *e);
/* As api__field_int, absent being an error (missing_field): 0 or -1. */
int api__field_required_int(const json_t *root, const char *name, long long min, long long max,
                            int *out, api_err *e);
int api__field_bool(const json_t *root, const char *name, int *out, api_err *e);
int api__field_number(const json_t *root, const char *name, double *out, api_err *e);
/* The first top-level key of root that is not in fields (NULL-terminated),
 * or NULL. */
const char *api__unknown_key(const json_t *root, const char *const *fields);
/* 1 if field is in the NULL-terminated list. */
int api__has_field(const char *const *fields, const char *field);
/* One of the NULL-terminated choices; *out is its index. */
int api__field_choice(const json_t *root, const char *name, const char *const *choices, int *out,
                      api_err *e);

/* ==== Options every endpoint reads (options.c) ============================ */

/* "output_format" (one of the formats whose bit, 1 << api_format, is in
 * `allowed`; else the one the client's Accept prefers, lim->prefer_format,
 * when allowed; else nested), "dtype" (float16 only for the formats that take
 * it) and "precision" into f; f->pool is lim's compute pool. */
int api__options_read(const json_t *root, const api_limits *lim, unsigned allowed, api_fmt *f,
                      api_err *e);

/* "return": an array of output names among names[0..n) (at most 32) into
 * bits (1 << index); *tokens_at (may be NULL; start it at -1): the index in
 * the array of "tokens", for a kind that needs a tokenizer for it. 1 when
 * read, 0 when absent (bits untouched), -1 with e filled. */
int api__return_read(const json_t *root, const char *const *names, int n, unsigned *bits,
                     int *tokens_at, api_err *e);
/* The same, each name first offered to other(ctx, name, index, e) when
 * given: 1 it took the name, 0 it did not (names[] are tried), -1 error. */
int api__return_read_with(const json_t *root, const char *const *names, int n, unsigned *bits,
                          int *tokens_at, int (*other)(void *, const char *, int, api_err *),
                          void *ctx, api_err *e);

/* ==== Parameters ========================================================== */

/* Where a trainable module's parameters come from: "init": {"seed": N} or
 * "state_dict" (left in the tree), never both; `what` names the module in
 * the message when both are missing ("the module", "GPT2(config)"). */
typedef struct {
    const json_t *state_dict;
    int has_init;
    uint64_t seed;
} api_params_source;
int api__params_source(const json_t *root, const char *what, api_params_source *out, api_err *e);

#endif
