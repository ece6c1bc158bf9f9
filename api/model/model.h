/* model.h - whole models (private to api/, prefix api__): POST /model/gpt2.
 *
 *   config.c      the family ("module") and its config under the family's names
 *   request.c     a /model/gpt2 request into a model_rq
 *   state_dict.c  its state_dict into core's parameter buffer (either family)
 *   groups.c      the outputs that are groups of tensors: params (the
 *                 state_dict) and dropout_masks (one per dropout call)
 *   run.c         the kind's steps (api__model_kind): plan, parameters,
 *                 attn_gpt2_forward, the selected maps, the reply's contents
 *   gen*.c        "generate": the loop of api/generate/ on this request (gen.h)
 *   inside*.c     hooks, ablations, patching and the logit lens (inside.h)
 *
 * The models loaded at start are ckpt.h's.
 */
#ifndef API_MODEL_H
#define API_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "api/maps/maps.h"
#include "api/reply/reply.h"
#include "api/model/ckpt.h"
#include "api/model/inside.h"
#include "api/request/request.h"
#include "core/attention.h"

/* ==== POST /model/gpt2 ==================================================== */

/* The outputs of /model/gpt2, in reply order: XX(ID, name). */
#define MODEL_OUTPUT_MAP(XX)                                                                       \
    XX(IDX, "idx")                                                                                 \
    XX(TOKENS, "tokens")                                                                           \
    XX(LOGITS, "logits")                                                                           \
    XX(NEXT_TOKEN, "next_token")                                                                   \
    XX(ATTN_WEIGHTS, "attn_weights")                                                               \
    XX(HIDDEN_STATES, "hidden_states")                                                             \
    XX(DROPOUT_MASKS, "dropout_masks")                                                             \
    XX(PARAMS, "params")                                                                           \
    XX(TIMING, "timing")

enum {
#define M_OUT_ID(id, name) M_OUT_##id,
    MODEL_OUTPUT_MAP(M_OUT_ID)
#undef M_OUT_ID
    M_OUT_COUNT
};

/* The reply formats a whole model writes (no pictures yet); a generation
 * also streams events. */
#define API_MODEL_FORMATS                                                                          \
    (1u << API_FORMAT_NESTED | 1u << API_FORMAT_FLAT | 1u << API_FORMAT_BASE64 |                   \
     1u << API_FORMAT_SAFETENSORS)
#define API_MODEL_GEN_FORMATS (API_MODEL_FORMATS | 1u << API_FORMAT_EVENTS)

typedef struct {
    attn_gpt2_config cfg;
    int batched, B, T;
    int32_t *idx;
    const api_tokenizer *tok;  /* named in "tokenizer", or the only one loaded; may be NULL */
    int from_text;             /* idx is the tokens of "text" */
    int training;
    api_params_source params;  /* init.seed or the state_dict (borrowed from the tree) */
    const api_model *model;    /* "model": a checkpoint loaded at start */
    int has_dropout_seed;
    uint64_t dropout_seed;
    unsigned returns;          /* bits of M_OUT_* */
    int *layers, n_layers;     /* the layers whose maps are returned, increasing */
    api_select sel;            /* heads, query_rows, top_k of those maps */
    api_fmt fmt;
    struct model_gen *gen;     /* "generate" (gen.h), or NULL */
    inside_rq in;              /* hooks in "return", ablate, patch, logit_lens (inside.h) */
} model_rq;

/* ==== The family and its config (config.c) ================================ */

/* The family's names of those columns (NULL where it has no such option). */
void api__model_config_names(const attn_family_info *f, const char *out[API_MODEL_CONFIG_COLS]);
/* 1 for the family that takes "activation" (GPT2; GPTModel's GELU is the tanh form). */
int api__model_takes_activation(attn_family f);
/* The column of key among fam's config fields (API_MODEL_CONFIG_COLS for
 * "activation"), or -1. */
int api__model_config_field(attn_family fam, const char *key);
/* "module" (a family's class name; absent: GPT2) into *out: 0 or -1. */
int api__model_family_read(const json_t *root, attn_family *out, api_err *e);
/* fam's config fields into c (required vocab and context, defaults 12, 12,
 * 768, 0.1, no qkv_bias, gelu): 0 or -1. */
int api__model_config_read(const json_t *root, attn_family fam, attn_gpt2_config *c, api_err *e);
/* c as a JSON object under its family's names (and "activation" for GPT2). */
void api__model_config_json(api_buf *b, const attn_gpt2_config *c);
/* 1 with e filled (unknown_field) when key is another family's config field
 * ("block_size is GPT2's name: GPTModel calls it context_length"); else 0. */
int api__model_config_other(attn_family fam, const char *key, api_err *e);

/* ==== Groups of tensors (groups.c) ========================================= */

/* Items of "params": the state_dict entries in core's order (buffers
 * included), and for a tied family "lm_head.weight" again at the token
 * embedding's values, so that load_state_dict(strict=True) takes them. */
int api__model_params_count(const attn_gpt2_plan *plan);
/* Fills items[0..api__model_params_count) with views into params, their
 * names in names[] (the same count). */
void api__model_params_items(const attn_gpt2_plan *plan, const float *params,
                             char (*names)[ATTN_PARAM_NAME_MAX], api_item *items);
/* Items of "dropout_masks": one per dropout call in draw order, named after
 * the nn.Dropout module ("drop_emb", "trf_blocks.0.att.dropout",
 * "trf_blocks.0.drop_shortcut.0" and ".1": its calls after the attention
 * and after the feed-forward; GPT2: "drop", "h.0.attn.resid_drop",
 * "h.0.mlp.drop"); names[] holds their text (API_MODEL_DROP_NAME bytes
 * each). masks: core's attn_gpt2_outputs.dropout_masks. batched 0: no B axis. */
#define API_MODEL_DROP_NAME 48
int api__model_dropout_count(const attn_gpt2_plan *plan);
void api__model_dropout_items(const attn_gpt2_plan *plan, const float *masks, int batched,
                              char (*names)[API_MODEL_DROP_NAME], api_item *items);

/* How many tokenizers a request may name (api__tokenizer_at's). */
size_t api__tokenizer_count(const api_limits *lim);
/* The tokenizer a "tokenizer" field v names into *out, or a 400 naming the
 * field and listing those loaded (request.c). */
int api__tokenizer_named(const json_t *v, const api_limits *lim, const api_tokenizer **out, api_err *e);

/* Reads every field of a /model/gpt2 request (request.c); the caller calls
 * api__model_rq_free either way. */
int api__model_parse(const json_t *root, const api_limits *lim, model_rq *rq, api_err *e);
void api__model_rq_free(model_rq *rq);
/* "state_dict" into params (state_dict.c) under the family's names: every
 * parameter, the buffers optional; for the tied GPT2, lm_head.weight
 * optional but equal to wte.weight. */
/* "ablate", "patch" and "logit_lens" (inside_parse.c), once the rest is read. */
int api__inside_parse(const json_t *root, const api_limits *lim, model_rq *rq, api_err *e);
/* "state_dict" into params (state_dict.c): every parameter, the buffers
 * optional, lm_head.weight optional but equal to wte.weight. */
int api__model_state_dict_read(const json_t *sd, const attn_gpt2_plan *plan, float *params,
                               api_err *e);

#endif
