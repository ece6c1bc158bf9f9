/* module.h - the attention modules (private to api/, prefix api__): the
 * kind of /attention/simple, /self, /causal, /multihead and /sdpa.
 *
 *   fields.c      the modules of each endpoint, the request fields of each module
 *   outputs.c     the output table and each output's shape rule
 *   parse.c       a request object into an api_request
 *   state_dict.c  "state_dict" into the parameter buffer
 *   view.c        the maps as the reply gives them: selection, averaging, top-k
 *   run.c         the kind's steps (api__module_kind): plan, parameters,
 *                 attn_forward, the selected maps, the reply's contents
 */
#ifndef API_MODULE_H
#define API_MODULE_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "api/maps/maps.h"
#include "api/request/request.h"
#include "core/attention.h"

/* The reply formats the modules write: every tensor format (their kind's
 * table and the parse read this one place). */
#define API_MODULE_FORMATS API_FORMATS_TENSORS

/* ==== Endpoints and fields ================================================ */

/* Modules an endpoint accepts, into mods, the first being its default;
 * returns how many (0: unknown endpoint). */
int api__endpoint_modules(api_endpoint ep, attn_module mods[ATTN_MODULE_COUNT]);
/* The top-level fields a module accepts (NULL-terminated). */
const char *const *api__module_fields(attn_module m);

/* ==== Outputs ============================================================= */

/* Every output a request can `return`, in reply order:
 *   XX(ID, name, element, map-shaped, core bit, where core writes it, description)
 * element: F32 or U8, a tensor that core writes into attn_outputs; JSON,
 *   made from the request (params, tokens, timing).
 * map-shaped: [B][H][L][S]-like, rows are queries and columns keys.
 * core bit: the ATTN_OUT_* that core must compute for it (0: none).
 * where: API_SLOT(field of attn_outputs), or API_NO_SLOT.
 * description: for the OpenAPI document (NULL: none).
 * The shape rules (how many elements the plan gives an output, its axes, and
 * the averaged attn_weights' own bit and field) are api__out_tensor's, in
 * outputs.c. */
#define API_OUTPUT_MAP(XX)                                                                         \
    XX(CONTEXT, "context", F32, 0, ATTN_OUT_CONTEXT, API_SLOT(context),                            \
       "The module's output [B][T][d_out]; sdpa: [B][H][L][Ev] as F.scaled_dot_product_attention " \
       "returns it.")                                                                              \
    XX(ATTN_WEIGHTS, "attn_weights", F32, 1, ATTN_OUT_WEIGHTS, API_SLOT(weights),                  \
       "Attention weights after dropout: [B][T][S] for single-head modules, [B][H][T][S] for "     \
       "multi-head ones, or [B][T][S] averaged with average_attn_weights.")                        \
    XX(ATTN_SCORES, "attn_scores", F32, 1, ATTN_OUT_SCORES, API_SLOT(scores),                      \
       "Raw Q·Kᵀ [B][H][T][S].")                                                                   \
    XX(MASKED_SCORES, "masked_scores", F32, 1, ATTN_OUT_MASKED_SCORES, API_SLOT(masked_scores),    \
       "Scaled and masked scores [B][H][T][S]; masked entries are null.")                          \
    XX(MASK, "mask", U8, 1, ATTN_OUT_MASK, API_SLOT(mask),                                         \
       "The boolean mask applied [B][T][S] as 0/1, 1 = masked out.")                               \
    XX(DROPOUT_MASK, "dropout_mask", F32, 1, ATTN_OUT_DROPOUT_MASK, API_SLOT(dropout_mask),        \
       "Dropout multipliers (0 or 1/(1-p); 1 when inactive): [B][H][T][S], or [B][T][d_out] for "  \
       "GPT2CausalSelfAttention (dropout on the output).")                                         \
    XX(QUERIES, "queries", F32, 0, ATTN_OUT_QUERIES, API_SLOT(queries),                            \
       "Per head, after projection: [B][H][T][head_dim].")                                         \
    XX(KEYS, "keys", F32, 0, ATTN_OUT_KEYS, API_SLOT(keys), "[B][Hkv][S][head_dim].")              \
    XX(VALUES, "values", F32, 0, ATTN_OUT_VALUES, API_SLOT(values), "[B][Hkv][S][head_dim].")      \
    XX(CONTEXT_HEADS, "context_heads", F32, 0, ATTN_OUT_CONTEXT_HEADS, API_SLOT(context_heads),    \
       "Heads concatenated, before the output projection: [B][T][H*head_dim].")                    \
    XX(PARAMS, "params", JSON, 0, 0, API_NO_SLOT,                                                  \
       "The state_dict used, buffers included, under PyTorch names: {k: torch.tensor(v)} loads "   \
       "back, and it is a valid state_dict field.")                                                \
    XX(TOKENS, "tokens", JSON, 0, 0, API_NO_SLOT,                                                  \
       "The request's tokens; null when \"tokens\" is asked for in return but the request gave "   \
       "none.")                                                                                    \
    XX(TIMING, "timing", JSON, 0, 0, API_NO_SLOT, NULL)

/* Where an output lives: the offset of its attn_outputs field (a float *
 * for F32, a uint8_t * for U8), or API_NO_SLOT. */
#define API_SLOT(field) offsetof(attn_outputs, field)
#define API_NO_SLOT ((size_t)-1)

typedef enum {
#define API_OUT_ID(id, name, elem, map, core, slot, doc) API_OUT_##id,
    API_OUTPUT_MAP(API_OUT_ID)
#undef API_OUT_ID
    API_OUT_COUNT
} api_out;

typedef enum { API_ELEM_F32, API_ELEM_U8, API_ELEM_JSON } api_elem;

typedef struct {
    const char *name;        /* in `return` and in the reply */
    api_elem elem;
    int map;                 /* [B][H][L][S]-like */
    unsigned core;           /* ATTN_OUT_* bit */
    size_t slot;             /* API_SLOT(...) or API_NO_SLOT */
    const char *doc;         /* NULL: no description in the document */
} api_output;

extern const api_output api__outputs[API_OUT_COUNT];

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
    api_params_source params; /* init.seed or the state_dict (borrowed from the tree) */
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

/* One output of one request: where core writes it and how big it is. */
typedef struct {
    size_t slot;       /* offsetof the attn_outputs field, or API_NO_SLOT */
    unsigned core;     /* the ATTN_OUT_* bit core computes it under (0: none) */
    size_t count;      /* elements, from the plan */
    int B, H, rows, cols;  /* its axes; H = 0: no head axis */
} api_out_tensor;

/* Fills t for output k of a parsed request with its plan: the shape rule of
 * each output, in outputs.c. */
void api__out_tensor(api_out k, const api_request *rq, const attn_plan *plan, api_out_tensor *t);

/* ==== The maps as the reply gives them (view.c) =========================== */

/* Checks the selection against the plan (heads < H, rows within L, pictures
 * only of attn_weights and not too large); 400 or 413 naming the field. */
int api__view_check(const api_request *rq, const attn_plan *plan, api_err *e);
/* Elements (values plus indices; a picture's pixels or text) the reply's
 * view of output k holds. */
size_t api__view_count(const api_request *rq, const attn_plan *plan, api_out k);
/* 1 if core must also write the mask for top-k (to skip masked entries). */
int api__view_needs_mask(const api_request *rq);
/* maps[k] for every requested map output: the computed tensor of out, or
 * its cut (heads, rows, average, top-k) in new arrays of a. */
int api__view_maps(const api_request *rq, const attn_plan *plan, const attn_outputs *out,
                   api_arrays *a, api_map maps[API_OUT_COUNT], api_err *e);

#endif
