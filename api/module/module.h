/* module.h - the attention modules' requests (private to api/, prefix
 * api__): /attention/simple, /self, /causal, /multihead and /sdpa.
 *
 *   outputs.c     the output table and each output's shape rule
 *   parse.c       a request object into an api_request
 *   state_dict.c  "state_dict" into the parameter buffer
 */
#ifndef API_MODULE_H
#define API_MODULE_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "api/maps/maps.h"
#include "api/request/request.h"

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

/* ==== Replies (respond.c, safetensors.c, png.c, svg.c) ================== */

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

#endif
