/* model.h - whole models (private to api/, prefix api__): POST /model/gpt2
 * and the checkpoints loaded at start.
 *
 *   request.c     a /model/gpt2 request into a model_rq
 *   state_dict.c  its state_dict into core's GPT2 parameter buffer
 *   run.c         the kind's steps (api__model_kind): plan, parameters,
 *                 attn_gpt2_forward, the selected maps, the reply's contents
 *   st_read.c     a safetensors file: mapped read-only, its header parsed with
 *                 jansson and validated in full before any tensor is used
 *   checkpoint.c  the Hugging Face GPT-2 layout of such a file into core's
 *                 GPT2 parameter buffer; the registry of loaded models
 *   inside*.c     hooks, ablations, patching and the logit lens (inside.h)
 */
#ifndef API_MODEL_H
#define API_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "api/maps/maps.h"
#include "api/model/inside.h"
#include "api/request/request.h"
#include "core/attention.h"

/* ==== safetensors (st_read.c) ============================================= */

/* Writes the message into why (size bytes, when given) and returns -1: how
 * the loaders below say what is wrong with a file. */
int api__ckpt_fail(char *why, size_t size, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#define API_ST_MAX_RANK 8
/* Largest header accepted (the Rust safetensors crate's limit too). */
#define API_ST_MAX_HEADER ((size_t)100 << 20)

typedef struct {
    const char *name;               /* a key of the header tree */
    const char *dtype;              /* "F32", "F16", "BF16", "U8", ... */
    size_t elem_size;               /* bytes per element of dtype */
    int rank;
    size_t shape[API_ST_MAX_RANK];
    size_t count;                   /* product of the shape */
    const uint8_t *data;            /* count * elem_size bytes in the mapping (any alignment) */
    size_t begin, end;              /* data_offsets */
} api_st_tensor;

typedef struct {
    void *map;                      /* the whole file, PROT_READ, MAP_SHARED */
    size_t size;
    json_t *header;                 /* owns the names and dtypes */
    const json_t *metadata;         /* "__metadata__": {string: string}, or NULL */
    api_st_tensor *tensors;         /* in header order */
    size_t count;
} api_st_file;

/* Maps path and validates it: the 8-byte length within the file, the header
 * one JSON object of {dtype, shape, data_offsets} entries (and an optional
 * __metadata__ of strings), every dtype known, every size product(shape) x
 * dtype size without overflow and equal to end - begin, the tensors covering
 * the data exactly (sorted by offset: no gap, no overlap, nothing past the
 * end). Returns 0, or -1 with the reason in why. */
int api__st_open(api_st_file *f, const char *path, char *why, size_t why_size);
/* The same for a file's bytes in memory (the built-in model), which must
 * outlive f; nothing is mapped. */
int api__st_open_mem(api_st_file *f, const void *data, size_t bytes, char *why, size_t why_size);
/* The tensor called name, or NULL. */
const api_st_tensor *api__st_find(const api_st_file *f, const char *name);
/* Writes t (F32, F16 or BF16, rank 1 or 2) as float32 into out, transposed
 * ([cols][rows]) when transpose is set and t has rank 2. Returns 0, or -1
 * for any other dtype. */
int api__st_to_f32(const api_st_tensor *t, float *out, int transpose);
/* 1 if t (F32, F16 or BF16) holds exactly the float32 values x[0..count). */
int api__st_equals_f32(const api_st_tensor *t, const float *x);
/* Unmaps and frees; accepts a zeroed or closed file. */
void api__st_close(api_st_file *f);

/* ==== Loaded models (checkpoint.c) ======================================== */

typedef struct {
    char name[64];
    char file[256];                 /* the file's base name, for GET /models */
    attn_gpt2_config cfg;
    float *params;                  /* core's GPT2 buffer (attn_gpt2_param_get order), read-only
                                       after the load, shared by every worker */
    size_t n_params;                /* floats in params */
    size_t n_weights;               /* floats the checkpoint itself holds (lm_head excluded) */
    const char *n_head_from;        /* "option", "metadata" or "n_embd/64" */
    char dtype[8];                  /* the dtype of the file's weights */
    int prefixed;                   /* names started with "transformer." */
    int has_lm_head;                /* lm_head.weight was there (equal to wte.weight) */
} api_model;

/* The model called name, or NULL. */
const api_model *api__models_find(const api_models *m, const char *name);
/* Loaded names for an error message: "a, b" (or "none"). */
void api__models_names(const api_models *m, char *out, size_t size);

/* ==== POST /model/gpt2 ==================================================== */

/* The outputs of /model/gpt2, in reply order: XX(ID, name). */
#define MODEL_OUTPUT_MAP(XX)                                                                       \
    XX(IDX, "idx")                                                                                 \
    XX(TOKENS, "tokens")                                                                           \
    XX(LOGITS, "logits")                                                                           \
    XX(NEXT_TOKEN, "next_token")                                                                   \
    XX(ATTN_WEIGHTS, "attn_weights")                                                               \
    XX(HIDDEN_STATES, "hidden_states")                                                             \
    XX(TIMING, "timing")

enum {
#define M_OUT_ID(id, name) M_OUT_##id,
    MODEL_OUTPUT_MAP(M_OUT_ID)
#undef M_OUT_ID
    M_OUT_COUNT
};

/* The reply formats a whole model writes (no pictures yet). */
#define API_MODEL_FORMATS                                                                          \
    (1u << API_FORMAT_NESTED | 1u << API_FORMAT_FLAT | 1u << API_FORMAT_BASE64 |                   \
     1u << API_FORMAT_SAFETENSORS)

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
    inside_rq in;              /* hooks in "return", ablate, patch, logit_lens (inside.h) */
} model_rq;

/* Reads every field of a /model/gpt2 request (request.c); the caller calls
 * api__model_rq_free either way. */
int api__model_parse(const json_t *root, const api_limits *lim, model_rq *rq, api_err *e);
void api__model_rq_free(model_rq *rq);
/* "ablate", "patch" and "logit_lens" (inside_parse.c), once the rest is read. */
int api__inside_parse(const json_t *root, const api_limits *lim, model_rq *rq, api_err *e);
/* "state_dict" into params (state_dict.c): every parameter, the buffers
 * optional, lm_head.weight optional but equal to wte.weight. */
int api__model_state_dict_read(const json_t *sd, const attn_gpt2_plan *plan, float *params,
                               api_err *e);

#endif
