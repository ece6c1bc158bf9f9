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
 *   outputs.c    the output table: where each output is and its shape
 *   tables.c     the module, output and error tables as JSON (for the document)
 *   model.c      POST /model/gpt2: the whole GPT2 of seed 003 (core's attn_gpt2_*)
 *   bpe.c        GPT-2's byte-level BPE tokenizer (api/bpe.h); bpe_split.c its
 *                pre-tokenizer, bpe_unicode.c its Unicode classes (generated)
 *   st_read.c    safetensors files read and validated (checkpoint.h)
 *   checkpoint.c Hugging Face GPT-2 checkpoints loaded at start (--model), GET /models
 *   openapi_doc.S  embeds build/gen/openapi.json (made from tables.c's JSON)
 *   maps.c       selection (heads, query_rows), head averaging and top-k of the maps
 *   topk.c       the k largest entries of each row
 *   image.c      attn_weights as a PNG heat map (libspng), the viridis table
 *   svg.c        the same as SVG with token labels
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
    api_error code;      /* its row in API_ERROR_MAP: status and code text */
    char field[192];     /* "" = none (null in the body) */
    char message[512];
} api_err;

/* Fills e and returns -1. field may be NULL. printf-style message. */
int api__fail(api_err *e, api_error code, const char *field, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Copies at most API_ECHO_MAX bytes of user text into dst (size >= API_ECHO_MAX + 4),
 * control characters replaced by '?', cut on a UTF-8 boundary, "..." when cut.
 * Returns dst. */
char *api__echo(char *dst, size_t size, const char *src);

/* Maps an attn_error to an api_err: status, code, field renamed to the
 * request's own names (GPT2 n_head, torch embed_dim, ...). */
void api__from_attn(api_err *e, const attn_error *ae, attn_module m);

/* ==== Output buffer ======================================================= */

/* Asks for 2 MiB pages over the whole 2 MiB blocks of p[0..bytes) when it
 * is 32 MiB or more (malloc maps such blocks afresh for each call: a 50 MB
 * map takes 12,800 page faults in 4 KiB pages, 25 in huge pages). Nothing
 * happens where the kernel's transparent huge pages are off; where they are
 * "always" it changes nothing either. */
void api__huge_pages(void *p, size_t bytes);

/* Makes room for extra more bytes; 0, or -1 (and b->failed) on failure. */
int api__buf_reserve(api_buf *b, size_t extra);
void api__buf_put(api_buf *b, const char *s, size_t n);
void api__buf_puts(api_buf *b, const char *s);
void api__buf_printf(api_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A JSON string: quoted, escaped; NULL writes null. */
void api__buf_json_string(api_buf *b, const char *s);
/* The same for n bytes that may hold NUL (written \u0000); s[n] must be NUL. */
void api__buf_json_stringn(api_buf *b, const char *s, size_t n);

/* ==== Floats ============================================================== */

/* Longest text api__format_float writes ("-1.17549435e-38" is 15). */
#define API_FLOAT_MAX 24
/* Bytes past the text api__format_float may write (fixed-size copies): a
 * buffer for one number has API_FLOAT_MAX + API_FLOAT_SLACK bytes. */
#define API_FLOAT_SLACK 40

/* Writes v as a JSON number into out (not NUL-terminated; out has room for
 * API_FLOAT_MAX + API_FLOAT_SLACK bytes) and returns the length. precision
 * 0: the shortest decimal that strtof reads back as v; 1..9: that many
 * significant digits, trailing zeros dropped. Returns 0 for
 * NaN or infinity (not representable in JSON). */
int api__format_float(char *out, float v, int precision);
/* The floats x[0..n) as "v,v,...,v" (as api__format_float writes them) into
 * out, which has room for n * (API_FLOAT_MAX + 1) + API_FLOAT_SLACK bytes;
 * stops before the first NaN or infinity. *done: the floats written (n when
 * all were finite). Returns the length. */
size_t api__format_row(char *out, const float *x, size_t n, int precision, size_t *done);

/* ==== Tensors out ========================================================= */

/* How a reply carries its tensors ("output_format"). */
typedef enum {
    API_FORMAT_NESTED,       /* nested arrays, as tensor.tolist() gives */
    API_FORMAT_FLAT,         /* {"shape":[...],"data":[...]} */
    API_FORMAT_BASE64,       /* {"shape":[...],"dtype":"float32","base64":"..."} */
    API_FORMAT_SAFETENSORS,  /* the whole reply is one safetensors file (safetensors.c) */
    API_FORMAT_PNG,          /* attn_weights as a PNG heat map (image.c) */
    API_FORMAT_SVG,          /* attn_weights as SVG panels with labels (svg.c) */
} api_format;

typedef struct {
    int precision;  /* 0 = round-trip */
    int flat;       /* {"shape":[...],"data":[...]} instead of nested arrays */
    api_format format;
    int half;       /* "dtype": "float16" (binary formats only) */
    struct attn_pool *pool; /* threads that may share the text of a large tensor; NULL = one */
} api_fmt;

#define API_MAX_RANK 4

/* Writes a [shape] tensor. -inf is written as null (masked scores); any other
 * non-finite value marks the buffer failed with *nonfinite set. */
void api__emit_floats(api_buf *b, const float *x, int rank, const int *shape, const api_fmt *f,
                      int *nonfinite);
/* Writes a [shape] tensor of 0/1 bytes as integers. */
void api__emit_bytes(api_buf *b, const uint8_t *x, int rank, const int *shape, const api_fmt *f);
/* Writes a [shape] tensor of int32 (top-k indices); binary formats as "int32". */
void api__emit_ints(api_buf *b, const int32_t *x, int rank, const int *shape, const api_fmt *f);
/* The little-endian bytes of n floats (float32, or float16 with half) at out;
 * returns how many were written (4n or 2n). */
size_t api__float_bytes(uint8_t *out, const float *x, size_t n, int half);

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
/* One of the NULL-terminated choices; *out is its index. */
int api__field_choice(const json_t *root, const char *name, const char *const *choices, int *out,
                      api_err *e);

/* ==== Endpoints and fields ================================================ */

/* Modules an endpoint accepts, into mods, the first being its default;
 * returns how many (0: unknown endpoint). */
int api__endpoint_modules(api_endpoint ep, attn_module mods[ATTN_MODULE_COUNT]);
/* The top-level fields a module accepts (NULL-terminated). */
const char *const *api__module_fields(attn_module m);
/* 1 if field is in the list. */
int api__has_field(const char *const *fields, const char *field);

/* ==== Outputs ============================================================= */

/* Every output a request can `return`, in reply order:
 *   XX(ID, name, element, map-shaped, description)
 * element: F32 or U8, a tensor that core writes into attn_outputs; JSON,
 *   written by respond.c from the request (params, tokens, timing).
 * map-shaped: [B][H][L][S]-like, rows are queries and columns keys.
 * description: for the OpenAPI document (NULL: none).
 * The shape rules (where core writes an output, how many elements the plan
 * gives it, its axes) are api__out_tensor's, in outputs.c. */
#define API_OUTPUT_MAP(XX)                                                                         \
    XX(CONTEXT, "context", F32, 0,                                                                 \
       "The module's output [B][T][d_out]; sdpa: [B][H][L][Ev] as F.scaled_dot_product_attention " \
       "returns it.")                                                                              \
    XX(ATTN_WEIGHTS, "attn_weights", F32, 1,                                                       \
       "Attention weights after dropout: [B][T][S] for single-head modules, [B][H][T][S] for "     \
       "multi-head ones, or [B][T][S] averaged with average_attn_weights.")                        \
    XX(ATTN_SCORES, "attn_scores", F32, 1, "Raw Q·Kᵀ [B][H][T][S].")                               \
    XX(MASKED_SCORES, "masked_scores", F32, 1,                                                     \
       "Scaled and masked scores [B][H][T][S]; masked entries are null.")                          \
    XX(MASK, "mask", U8, 1, "The boolean mask applied [B][T][S] as 0/1, 1 = masked out.")          \
    XX(DROPOUT_MASK, "dropout_mask", F32, 1,                                                       \
       "Dropout multipliers (0 or 1/(1-p); 1 when inactive): [B][H][T][S], or [B][T][d_out] for "  \
       "GPT2CausalSelfAttention (dropout on the output).")                                         \
    XX(QUERIES, "queries", F32, 0, "Per head, after projection: [B][H][T][head_dim].")             \
    XX(KEYS, "keys", F32, 0, "[B][Hkv][S][head_dim].")                                             \
    XX(VALUES, "values", F32, 0, "[B][Hkv][S][head_dim].")                                         \
    XX(CONTEXT_HEADS, "context_heads", F32, 0,                                                     \
       "Heads concatenated, before the output projection: [B][T][H*head_dim].")                    \
    XX(PARAMS, "params", JSON, 0,                                                                  \
       "The state_dict used, buffers included, under PyTorch names: {k: torch.tensor(v)} loads "   \
       "back, and it is a valid state_dict field.")                                                \
    XX(TOKENS, "tokens", JSON, 0,                                                                  \
       "The request's tokens; null when \"tokens\" is asked for in return but the request gave "   \
       "none.")                                                                                    \
    XX(TIMING, "timing", JSON, 0, NULL)

typedef enum {
#define API_OUT_ID(id, name, elem, map, doc) API_OUT_##id,
    API_OUTPUT_MAP(API_OUT_ID)
#undef API_OUT_ID
    API_OUT_COUNT
} api_out;

typedef enum { API_ELEM_F32, API_ELEM_U8, API_ELEM_JSON } api_elem;

typedef struct {
    const char *name;        /* in `return` and in the reply */
    api_elem elem;
    int map;                 /* [B][H][L][S]-like */
    const char *doc;         /* NULL: no description in the document */
} api_output;

extern const api_output api__outputs[API_OUT_COUNT];

/* The index of a `return` name, or -1. */
int api__out_find(const char *name);

/* ==== Selection, top-k and images (maps.c) =============================== */

/* How an image maps a weight to a colour ("color_scale"). */
typedef enum {
    API_COLOR_UNIT,  /* 0..1 as they are (clamped) */
    API_COLOR_ROW,   /* each query row divided by its largest value */
    API_COLOR_MAX,   /* each panel divided by its largest value */
} api_color_scale;

/* What of the map-shaped outputs a request wants. The selection is applied
 * in api/ to the maps core computed (maps.c); rows [row_start, row_stop) are
 * the range core can later compute alone. */
typedef struct {
    int n_heads;           /* 0: every head */
    int *heads;            /* n_heads distinct head indices in the request's order, malloc'd */
    int has_rows;          /* "query_rows" given */
    int row_start, row_stop; /* query rows [start, stop) */
    int top_k;             /* 0: whole rows */
    int cell;              /* image pixels per entry; 0: the default */
    api_color_scale color;
} api_select;

/* Reads "heads", "query_rows", "top_k", "cell" and "color_scale" (parse.c
 * calls it); their ranges are checked against the plan by api__select_check. */
int api__select_parse(const json_t *root, api_select *sel, api_err *e);
/* Where a trainable module's parameters come from: "init": {"seed": N} or
 * "state_dict" (left in the tree), never both; `what` names the module in
 * the message when both are missing ("the module", "GPT2(config)"). */
typedef struct {
    const json_t *state_dict;
    int has_init;
    uint64_t seed;
} api_params_source;
int api__params_source(const json_t *root, const char *what, api_params_source *out, api_err *e);
void api__select_free(api_select *sel);

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
    api_select sel;      /* heads, query_rows, top_k, image options */
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

/* Marks "no attn_outputs field" in api_out_tensor.slot. */
#define API_NO_SLOT ((size_t)-1)

/* One output of one request: where core writes it and how big it is. */
typedef struct {
    size_t slot;       /* offsetof the attn_outputs field (a float * for F32, a
                          uint8_t * for U8), or API_NO_SLOT */
    size_t count;      /* elements, from the plan */
    int B, H, rows, cols;  /* its axes; H = 0: no head axis */
} api_out_tensor;

/* Fills t for output k of a parsed request with its plan: the shape rule of
 * each output, in outputs.c. */
void api__out_tensor(api_out k, const api_request *rq, const attn_plan *plan, api_out_tensor *t);

/* A map-shaped output as the reply gives it, after selection, averaging and
 * top-k (maps.c). */
typedef struct {
    void *data;            /* float, or uint8_t for U8 outputs; top-k: the values */
    int32_t *indices;      /* top-k: the key index of each value, -1 = padding; else NULL */
    int B, H, rows, cols;  /* H = 0: no head axis; cols = k with top-k */
} api_map;

typedef struct {
    const api_request *rq;
    const attn_plan *plan;
    const float *params;
    attn_outputs out;      /* as api__out_tensor describes them (sdpa's context
                              already in PyTorch's [B][H][L][Ev]) */
    unsigned mapped;       /* bits of api_out whose reply is maps[k], not out */
    api_map maps[API_OUT_COUNT];
} api_result;

/* 1 if the request selects, averages selected heads or takes top-k, so the
 * maps are reshaped after computing. */
int api__select_active(const api_request *rq);
/* Checks the selection against the plan (heads < H, rows within L, images
 * only of attn_weights); 400 naming the field. */
int api__select_check(const api_request *rq, const attn_plan *plan, api_err *e);
/* Elements (values plus indices) the reply's view of output k holds. */
size_t api__select_count(const api_request *rq, const attn_plan *plan, api_out k);
/* 1 if core must also write the mask for top-k (to skip masked entries). */
int api__select_needs_mask(const api_request *rq);
/* Builds r->maps for every requested map output; mask is core's [B][L][S]
 * mask (NULL if none). 0, or -1 with e filled (allocation). */
int api__select_apply(api_result *r, const uint8_t *mask, api_err *e);
void api__select_release(api_result *r);

/* Top-k of rows x n floats: for each row the k largest entries not masked
 * (mask[j] != 0, or -inf), in descending order, ties to the lower index;
 * padding index -1 and value 0. mask is one [n] row shared by every row
 * when mask_step is 0, else row r uses mask + r * mask_step (NULL: none).
 * scratch holds n ints. (topk.c) */
void api__topk_f32(const float *x, size_t rows, int n, const uint8_t *mask, size_t mask_step,
                   int k, float *values, int32_t *indices, int *scratch);
void api__topk_u8(const uint8_t *x, size_t rows, int n, const uint8_t *mask, size_t mask_step,
                  int k, uint8_t *values, int32_t *indices, int *scratch);

/* ==== Images (image.c, svg.c) ============================================= */

/* viridis as 256 RGB triples (matplotlib's table). */
extern const uint8_t api__viridis[256][3];

/* The layout of an image of attn_weights: panels [B*H] in a grid of
 * cols x rows, each panel_w x panel_h pixels, gap pixels between them. */
typedef struct {
    int panels, grid_cols, grid_rows;
    int cell, gap, panel_w, panel_h;
    int width, height;
} api_image_layout;

/* The layout of the image of map m with the request's cell size. */
void api__image_layout(const api_map *m, int cell, api_image_layout *lay);
/* The colour-map index (0..255) of value v of row `row` of a panel, after
 * the colour scale: row_max and panel_max are the row's and panel's largest
 * values. */
int api__image_level(float v, float row_max, float panel_max, api_color_scale scale);
/* Writes attn_weights (r->maps, or out) as a PNG into b. */
int api__respond_png(api_buf *b, const api_result *r, api_err *e);
int api__respond_svg(api_buf *b, const api_result *r, api_err *e);
/* The map of output k as the reply gives it (the selected view, or the whole
 * computed tensor). */
void api__map_of(const api_result *r, api_out k, api_map *m);

/* The most tensors one safetensors reply holds. */
#define API_ST_MAX_ENTRIES (2 * API_OUT_COUNT + 64)
_Static_assert(API_ST_MAX_ENTRIES <= API_REPLY_MAX_PARTS, "a reply's parts are its tensors");

/* Where a safetensors reply may leave its tensors' bytes in place (float32
 * on a little-endian machine: the file's bytes are the arrays' own): the
 * body then ends after the header, and the data is parts[0..n) (api_reply.parts). */
typedef struct {
    api_part part[API_ST_MAX_ENTRIES];
    int n;
} api_st_parts;

/* 1 if one of x[0..n) is NaN or +inf, which a reply cannot carry (-inf is a
 * masked score). */
int api__has_nan_or_inf(const float *x, size_t n);
/* 1 if a float the reply would carry is NaN or +inf: the reply would be an
 * error (checked before a reply is streamed). */
int api__reply_has_nonfinite(const api_result *r);

/* Writes the 200 body. Returns 0, or -1 with e filled (allocation, NaN). */
int api__respond(api_buf *b, const api_result *r, const api_reply *timing_so_far,
                 double t_serialise_start, api_st_parts *parts, api_err *e);
/* The same as one safetensors file (safetensors.c). */
int api__respond_safetensors(api_buf *b, const api_result *r, const api_reply *timing_so_far,
                             double t_serialise_start, api_st_parts *parts, api_err *e);

/* One tensor of a safetensors file. */
typedef enum { API_ST_FLOAT, API_ST_BYTES, API_ST_INT32 } api_st_kind;
#define API_ST_OUT_RANK 6
typedef struct {
    char name[ATTN_PARAM_NAME_MAX + 16];
    const void *data;     /* float (F32, or F16 with half), uint8_t (BOOL), int32_t (I32) */
    api_st_kind kind;
    int rank;
    int shape[API_ST_OUT_RANK];
    size_t count;         /* filled by api__safetensors_write */
} api_st_entry;
/* A __metadata__ entry: JSON text stored as a string. */
typedef struct {
    const char *key;
    const api_buf *json;
} api_st_meta;
/* Writes the n tensors of t (reordered: 4-byte elements first) as one
 * safetensors file into b, with "format": "pt", "module" and the metadata.
 * 0, or -1 with e filled (allocation, NaN or infinity). */
int api__safetensors_write(api_buf *b, api_st_entry *t, int n, int half, const char *module,
                           const api_st_meta *metas, int n_meta, api_st_parts *parts, api_err *e);
/* The axes of tensor output k as the reply gives them (no batch axis when the
 * inputs had none, no head axis for single-head requests) into shape; its
 * data (float or uint8_t) into *data. Returns the rank. */
int api__out_dims(const api_result *r, api_out k, int *shape, const void **data);
/* The reply's "shape" object, and its "tokens" array (null if none). */
void api__shape_json(api_buf *b, const attn_plan *p);
void api__tokens_json(api_buf *b, const api_request *rq);

/* ==== Models ============================================================== */

/* POST /model/gpt2 (model.c): the parsed body *root_ref to the 200 reply in
 * reply->body (and its timings and content type; t0 is when the request
 * started). Frees the tree and sets *root_ref to NULL before computing.
 * Returns 0, 1 when lim->defer_above says the request is too big to run
 * here (nothing computed, no body), or -1 with e filled. */
int api__model_gpt2(json_t **root_ref, const api_limits *lim, api_reply *reply, double t0,
                    api_err *e);

/* ==== The document ======================================================== */

/* The endpoint, module, output and error tables as JSON text for
 * api/openapi-gen.py (tables.c); malloc'd, NULL on failure. */
char *api__tables_json(void);

/* Monotonic milliseconds. */
double api__now_ms(void);

#endif
