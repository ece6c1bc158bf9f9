/* model.h - the whole-model kind (private to api/model/, prefix api__):
 * POST /model (and its alias /model/gpt2) for any architecture of core's
 * ATTN_ARCH_MAP, from a seed, a state_dict or a model loaded at start.
 *
 *   config.c      the architecture ("module") and its config under the row's names
 *   request.c     a request into a model_rq (batch.c: ids; text.c: texts)
 *   encoder.c     fill_mask, embeddings, pooler_output; padding as null
 *   state_dict.c  its state_dict into core's parameter buffer
 *   groups.c      the outputs that are groups of tensors: params (the
 *                 state_dict) and dropout_masks (one per dropout call)
 *   run.c         the kind's steps (api__model_kind): plan, parameters,
 *                 attn_lm_run, the selected maps, the reply's contents
 *   gen.c         "generate": api/generate/'s loop on this request, and the
 *   gen_io.c      events and "generation" object it writes
 *
 * The models loaded at start are api/weights/'s; the look inside (hooks,
 * ablation, patching, the lens) is api/inside/'s. */
#ifndef API_MODEL_H
#define API_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "api/generate/generate.h"
#include "api/inside/inside.h"
#include "api/maps/maps.h"
#include "api/pipeline.h"
#include "api/reply/reply.h"
#include "api/request/request.h"
#include "api/weights/weights.h"
#include "core/lm.h"

/* The outputs of POST /model, in reply order: XX(ID, name). */
#define MODEL_OUTPUT_MAP(XX)                                                                       \
    XX(IDX, "idx")                                                                                 \
    XX(TOKENS, "tokens")                                                                           \
    XX(LOGITS, "logits")                                                                           \
    XX(NEXT_TOKEN, "next_token")                                                                   \
    XX(ATTN_WEIGHTS, "attn_weights")                                                               \
    XX(HIDDEN_STATES, "hidden_states")                                                             \
    XX(ATTENTION_MASK, "attention_mask")                                                           \
    XX(TOKEN_TYPE_IDS, "token_type_ids")                                                           \
    XX(EMBEDDINGS, "embeddings")                                                                   \
    XX(POOLER_OUTPUT, "pooler_output")                                                             \
    XX(DROPOUT_MASKS, "dropout_masks")                                                             \
    XX(PARAMS, "params")                                                                           \
    XX(TIMING, "timing")

enum {
#define M_OUT_ID(id, name) M_OUT_##id,
    MODEL_OUTPUT_MAP(M_OUT_ID)
#undef M_OUT_ID
    M_OUT_COUNT
};

/* The reply formats a whole model writes (no pictures yet): its kind's
 * table and its parse read this one place; events are a generation's only. */
#define API_MODEL_GEN_FORMATS                                                                      \
    (1u << API_FORMAT_NESTED | 1u << API_FORMAT_FLAT | 1u << API_FORMAT_BASE64 |                   \
     1u << API_FORMAT_SAFETENSORS | 1u << API_FORMAT_EVENTS)

typedef struct {
    attn_lm_config cfg;
    int batched, B, T;
    int32_t *idx;
    uint8_t *mask;             /* [B][T] attention_mask, 1 a token; NULL: no padding */
    int32_t *types;            /* [B][T] token_type_ids; NULL: none given (all 0) */
    int *b_start;              /* [B] where sentence B starts (text pairs, -1: none), or NULL */
    int fill_k;                /* fill_mask's top_k (0: no fill_mask) */
    int32_t fill_id;           /* and its mask token */
    attn_lm_pooling pooling;   /* "embeddings": the model folder's pooling, else the mean */
    const api_tokenizer *tok;  /* api__tokenizer_pick's (named, the model's, the default) or NULL */
    int tok_default;           /* tok is the server's default: no text of its own added */
    int from_text;             /* idx is the tokens of "text" */
    unsigned text_flags;       /* api_bpe_encode_ex's: API_BPE_ADD_SPECIAL unless add_special false */
    int text_max;              /* > 0: texts cut to it, longest first (max_seq_length); 0: the file says */
    int training;
    api_params_source params;  /* init.seed or the state_dict (borrowed from the tree) */
    const api_model *model;    /* "model": a checkpoint loaded at start */
    int has_dropout_seed;
    uint64_t dropout_seed;
    unsigned returns;          /* bits of M_OUT_* */
    int *layers, n_layers;     /* the layers whose maps are returned, increasing */
    api_select sel;            /* heads, query_rows, top_k of those maps */
    api_fmt fmt;
    struct model_gen *gen;     /* "generate", or NULL */
    inside_rq in;              /* hooks in "return", ablate, patch, logit_lens (inside.h) */
} model_rq;

/* ==== The architecture and its config (config.c) ========================== */

/* "module" (an architecture's class name; absent: GPT2) into *out: 0 or -1. */
int api__model_arch_read(const json_t *root, attn_arch *out, api_err *e);
/* 1 if key is one of arch's config fields (its row's request names). */
int api__model_config_field(attn_arch arch, const char *key);
/* arch's config fields of root into c (the row's defaults): 0 or -1. */
int api__model_config_read(const json_t *root, attn_arch arch, attn_lm_config *c, api_err *e);
/* 1 with e filled (unknown_field) when key is another architecture's config
 * field ("block_size is GPT2's name: GPTModel calls it context_length"); else 0. */
int api__model_config_other(attn_arch arch, const char *key, api_err *e);

/* ==== Groups of tensors (groups.c) ========================================= */

/* Items of "params": the state_dict entries in core's order (buffers
 * included; a tied head's name again at the token embedding's values, for
 * load_state_dict(strict=True)), as views into params, names in names[]. */
int api__model_params_count(const attn_lm_plan *plan);
void api__model_params_items(const attn_lm_plan *plan, const float *params,
                             char (*names)[ATTN_PARAM_NAME_MAX], api_item *items);
/* Items of "dropout_masks": one per dropout call in draw order, named after
 * its nn.Dropout module (names[]); batched 0: no B axis. */
#define API_MODEL_DROP_NAME 48
int api__model_dropout_count(const attn_lm_plan *plan);
void api__model_dropout_items(const attn_lm_plan *plan, const float *masks, int batched,
                              char (*names)[API_MODEL_DROP_NAME], api_item *items);

/* ==== The request (request.c, state_dict.c) ================================ */

/* The tokenizer that adds text the request did not ask for (next_token_text,
 * a generation's text): tok unless it is only the server's default and the
 * request read no text; NULL otherwise. */
static inline const api_bpe *api__model_text_bpe(const model_rq *rq) {
    return rq->tok && (!rq->tok_default || rq->from_text) ? rq->tok->bpe : NULL;
}
/* Reads every field of a request; api__model_rq_free either way. */
int api__model_parse(const json_t *root, const api_limits *lim, model_rq *rq, api_err *e);
void api__model_rq_free(model_rq *rq);
/* batch.c: idx (rows_read: ids of field name; rows may differ in length), attention_mask,
 * token_type_ids into rq; text.c: texts of field name (strings or [a, b] pairs) likewise. */
int api__model_ids_read(const json_t *root, model_rq *rq, size_t *budget, api_err *e);
int api__model_rows_read(const json_t *v, const char *name, model_rq *rq, size_t *budget, api_err *e);
int api__model_text_read(const json_t *v, const char *name, const api_limits *lim, model_rq *rq, api_err *e);
/* tok's mask token id ([MASK], <mask>) or -1. */
int32_t api__model_mask_token(const api_tokenizer *tok);

/* "state_dict" into params: every parameter, the buffers optional, a tied
 * head optional but equal to the token embedding. */
int api__model_state_dict_read(const json_t *sd, const attn_lm_plan *plan, float *params, api_err *e);

/* ==== Encoders and padding (encoder.c) ====================================== */

typedef struct model_enc model_enc; /* an encoder's outputs besides the forward's */
/* A plan of rq's model for one token (its spec, head, hooks). */
int api__model_plan1(const model_rq *rq, attn_lm_plan *p, api_err *e);
/* fill_mask, and what the model cannot give (logits without an MLM head,
 * an encoder's next_token, a missing pooler, patching a padded batch). */
int api__model_enc_parse(const json_t *root, model_rq *rq, api_err *e);
/* Its floats; its arrays (out's last_hidden, pooler_output); after the
 * run the embeddings, fill_mask, and padded positions as null (-inf). */
size_t api__model_enc_floats(const model_rq *rq, const attn_lm_plan *p);
int api__model_enc_alloc(const model_rq *rq, const attn_lm_plan *p, api_arrays *a, model_enc **x,
                         attn_lm_outputs *out, api_err *e);
int api__model_enc_after(const model_rq *rq, const attn_lm_plan *p, model_enc *x, float *logits,
                         int last_only, float *attn, float *hidden, inside_out *io, api_err *e);
/* The reply's items (attention_mask, token_type_ids, sentence_b_start,
 * embeddings, pooler_output, fill_mask): how many. */
int api__model_enc_items(const model_rq *rq, const attn_lm_plan *p, model_enc *x, api_item *items, api_err *e);
void api__model_enc_free(model_enc *x);

/* ==== "generate" (gen.c, gen_io.c) ========================================= */

/* The model writes max_new_tokens after the prompt (idx or text) with
 * api/generate/'s loop, then the request's outputs are computed over the
 * final text. With output_format "events" the reply is server-sent events:
 * "start" (the prompt), one "token" per written token, then "done" with
 * the whole reply but its steps. */
struct model_gen {
    api_gen_opts opt;
    api_gen_plan plan;
    api_gen_out out;
    int T0;                 /* the prompt's length */
    int T_max;              /* the final window's length at most: the forward's plan */
    int window_start;       /* where the final window (idx of the reply) starts in the text */
    int seeded;             /* 1: torch.manual_seed(seed) first; 0: init's generator */
    uint64_t seed;
    int streaming;          /* output_format events */
    const api_bpe *bpe;     /* the tokenizer, or NULL */
    api_job *job;           /* the request (its limits, its error event) while the loop runs */
    api_buf events;         /* events written and not handed over */
    api_buf json;           /* the "generation" item's text */
};

/* "generate" of root into rq->gen (allocated), after rq's other fields:
 * one row, eval mode, stop strings with a tokenizer. Absent: NULL. */
int api__model_gen_parse(const json_t *root, const api_limits *lim, model_rq *rq, api_err *e);
void api__model_gen_free(model_rq *rq);
/* Its sizes added to the job's; the final window's length. */
int api__model_gen_plan(model_rq *rq, api_job *j, api_err *e);
/* The loop on params (rng: init's, or NULL); rq->idx the final window. */
int api__model_gen_run(model_rq *rq, api_job *j, const void *params, attn_rng *rng, api_err *e);
/* The "generation" item into it, and the events' parts of c. */
int api__model_gen_items(model_rq *rq, api_item *it, api_contents *c, api_err *e);
/* The "start" event, a token's event (api_gen_in.on_token), the object. */
int api__model_gen_start(struct model_gen *g, const model_rq *rq);
int api__model_gen_on_token(void *ctx, const api_gen_out *o, int b, int k);
void api__model_gen_object(struct model_gen *g, int with_steps);

#endif
