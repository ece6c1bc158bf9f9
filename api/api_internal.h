/* api_internal.h - private helpers shared by the files of api/ (prefix api__).
 *
 *   buf.c        growing byte buffer, JSON string escaping, error bodies
 *   fmt.c        the float printer (shortest round-trip float32, or N digits)
 *   emit.c       tensors as nested arrays or {"shape","data"}
 *   tensor_in.c  JSON (nested or flat) into contiguous float arrays
 *   endpoints.c  paths, modules per endpoint, fields per module
 *   parse.c      a request object into an api_request (config, tensors, options)
 *   state_dict.c "state_dict" into the parameter buffer
 *   respond.c    the 200 reply
 *   handle.c     api_handle: parse, limits, compute, serialise
 *   openapi.c    the OpenAPI document
 */
#ifndef API_INTERNAL_H
#define API_INTERNAL_H

#include <stdint.h>

#include <jansson.h>

#include "api/api.h"
#include "core/attention.h"

/* ==== Errors ============================================================== */

/* Longest piece of user text echoed in an error message or field. */
#define API_ECHO_MAX 128

typedef struct {
    int status;          /* HTTP status */
    const char *code;    /* static string: "invalid_json", "invalid_shape", ... */
    char field[192];     /* "" = none (null in the body) */
    char message[512];
} api_err;

/* Fills e and returns -1. field may be NULL. printf-style message. */
int api__fail(api_err *e, int status, const char *code, const char *field, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

/* Copies at most API_ECHO_MAX bytes of user text into dst (size >= API_ECHO_MAX + 4),
 * control characters replaced by '?', cut on a UTF-8 boundary, "..." when cut.
 * Returns dst. */
char *api__echo(char *dst, size_t size, const char *src);

/* Maps an attn_error to an api_err: status, code, field renamed to the
 * request's own names (GPT2 n_head, torch embed_dim, ...). */
void api__from_attn(api_err *e, const attn_error *ae, attn_module m);

/* ==== Output buffer ======================================================= */

/* Makes room for extra more bytes; 0, or -1 (and b->failed) on failure. */
int api__buf_reserve(api_buf *b, size_t extra);
void api__buf_put(api_buf *b, const char *s, size_t n);
void api__buf_puts(api_buf *b, const char *s);
void api__buf_printf(api_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A JSON string: quoted, escaped; NULL writes null. */
void api__buf_json_string(api_buf *b, const char *s);

/* ==== Floats ============================================================== */

/* Longest text api__format_float writes ("-1.17549435e-38" is 15). */
#define API_FLOAT_MAX 24

/* Writes v as a JSON number into out (not NUL-terminated) and returns the
 * length. precision 0: the shortest decimal that strtof reads back as v;
 * 1..9: that many significant digits, trailing zeros dropped. Returns 0 for
 * NaN or infinity (not representable in JSON). */
int api__format_float(char *out, float v, int precision);

/* ==== Tensors out ========================================================= */

typedef struct {
    int precision;  /* 0 = round-trip */
    int flat;       /* {"shape":[...],"data":[...]} instead of nested arrays */
} api_fmt;

#define API_MAX_RANK 4

/* Writes a [shape] tensor. -inf is written as null (masked scores); any other
 * non-finite value marks the buffer failed with *nonfinite set. */
void api__emit_floats(api_buf *b, const float *x, int rank, const int *shape, const api_fmt *f,
                      int *nonfinite);
/* Writes a [shape] tensor of 0/1 bytes as integers. */
void api__emit_bytes(api_buf *b, const uint8_t *x, int rank, const int *shape, const api_fmt *f);

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

/* ==== Endpoints and fields ================================================ */

/* Modules an endpoint accepts, into mods, the first being its default;
 * returns how many (0: unknown endpoint). */
int api__endpoint_modules(api_endpoint ep, attn_module mods[ATTN_MODULE_COUNT]);
/* The top-level fields a module accepts (NULL-terminated). */
const char *const *api__module_fields(attn_module m);
/* 1 if field is in the list. */
int api__has_field(const char *const *fields, const char *field);

/* `return` names, one bit each. */
typedef enum {
    API_OUT_CONTEXT, API_OUT_ATTN_WEIGHTS, API_OUT_ATTN_SCORES, API_OUT_MASKED_SCORES,
    API_OUT_MASK, API_OUT_DROPOUT_MASK, API_OUT_QUERIES, API_OUT_KEYS, API_OUT_VALUES,
    API_OUT_CONTEXT_HEADS, API_OUT_PARAMS, API_OUT_TOKENS, API_OUT_TIMING, API_OUT_COUNT
} api_out;
extern const char *const api__out_names[API_OUT_COUNT];

/* ==== Requests ============================================================ */

typedef struct {
    api_endpoint ep;
    attn_config cfg;
    int batched;         /* the inputs had a batch axis */
    int headed;          /* SDPA: the query had a head axis */
    int multi_head;      /* per-head tensors keep a head axis */
    api_tensor x, x_key, x_value, query, key, value, attn_mask, kpm;
    uint8_t *mask_bool;  /* attn_mask as 0/1 bytes, when boolean */
    uint8_t *kpm_bool;   /* key_padding_mask as bytes [B][S] */
    int has_init;
    uint64_t init_seed;
    const json_t *state_dict; /* borrowed from the tree, valid until it is freed */
    char *tokens;        /* n_tokens NUL-separated labels, malloc'd */
    int n_tokens;
    unsigned returns;    /* bits of api_out */
    int average;         /* average_attn_weights */
    api_fmt fmt;
} api_request;

/* Reads every field of root for an endpoint. lim->max_elements bounds the
 * input tensors. On failure fills e; the caller calls api__request_free either way. */
int api__request_parse(api_endpoint ep, const json_t *root, const api_limits *lim,
                       api_request *rq, api_err *e);
void api__request_free(api_request *rq);

/* Copies "state_dict" into params (plan->n_params floats), checking names,
 * shapes and buffers. */
int api__state_dict_read(const json_t *sd, const attn_config *cfg, const attn_plan *plan,
                         float *params, api_err *e);

/* ==== Results ============================================================= */

typedef struct {
    const api_request *rq;
    const attn_plan *plan;
    const float *params;
    attn_outputs out;
    float *context_bhld;   /* SDPA: context as PyTorch returns it, [B][H][L][Ev] */
} api_result;

/* Writes the 200 body. Returns 0, or -1 with e filled (allocation, NaN). */
int api__respond(api_buf *b, const api_result *r, const api_reply *timing_so_far,
                 double t_serialise_start, api_err *e);

/* Monotonic milliseconds. */
double api__now_ms(void);

#endif
