/* weights.h - the weights registry: models loaded once at start (private
 * to api/weights/, prefix api__; the kinds read api_model and the registry's
 * lookups): safetensors files, model folders, each architecture's tensor
 * names, the registry.
 *
 *   st_read.c    a safetensors file: mapped read-only, its header parsed with
 *                jansson and validated in full before use; sets (shards)
 *   folder.c     a model folder: config.json (read through the architecture's
 *                row: its config names and defaults), the weights, the tokenizer
 *   load.c       what every layout shares: the heads, the buffer, copies
 *   hparams.c    a config by its row: names, the JSON object of replies
 *   generic.c    a checkpoint under its row's own names (Llama, Qwen, Gemma, BERT, ...);
 *                names.c: those names, the base model's prefix, the parts a file has
 *   pooling.c    a sentence-transformers folder's pooling (modules.json)
 *   gpt2.c       Hugging Face's GPT-2 names (transformer., c_fc, Conv1D) into
 *                core's GPT2, and its config from the shapes
 *   book.c       the book's GPTModel state_dict, and its config from the shapes
 *   registry.c   the spec (NAME=DIR or NAME=FILE), the architectures' loaders
 *                (API_WEIGHTS_MAP), the registry, GET /models
 */
#ifndef API_WEIGHTS_H
#define API_WEIGHTS_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "api/api.h"
#include "core/lm.h"

/* ==== safetensors (st_read.c) ============================================= */

/* Writes the message into why (size bytes) and returns -1: a file's fault. */
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
 * __metadata__ of strings), every dtype known, every size without overflow
 * and equal to end - begin, the data covered exactly. 0, or -1 (why). */
int api__st_open(api_st_file *f, const char *path, char *why, size_t why_size);
/* The same for a file's bytes in memory (the built-in model), outliving f. */
int api__st_open_mem(api_st_file *f, const void *data, size_t bytes, char *why, size_t why_size);
/* The tensor called name, or NULL. */
const api_st_tensor *api__st_find(const api_st_file *f, const char *name);
/* t (F32, F16 or BF16, rank 1 or 2) into out as dtype `to` (attn_dtype_convert),
 * [cols][rows] with transpose and rank 2. 0, -1 (dtype, rank), -2 (memory). */
int api__st_convert(const api_st_tensor *t, void *out, attn_dtype to, int transpose);
/* 1 if t converted to dtype `as` holds exactly the values x[0..count). */
int api__st_equals(const api_st_tensor *t, const void *x, attn_dtype as);
/* Unmaps and frees; accepts a zeroed or closed file. */
void api__st_close(api_st_file *f);

/* A model's tensors: one file, or the shards an index names. */
#define API_ST_MAX_SHARDS 64
typedef struct {
    api_st_file file[API_ST_MAX_SHARDS];
    int count;
} api_st_set;
/* The tensor called name in any file of s, or NULL. */
const api_st_tensor *api__st_set_find(const api_st_set *s, const char *name);
/* Closes every file; accepts a zeroed set. */
void api__st_set_close(api_st_set *s);

/* ==== Loaded models ============================================= */

typedef struct {
    char name[64];
    char file[256];                 /* the weights' file name (model.safetensors, FILE's base
                                       name, or the shards' index), for GET /models */
    char folder[256];               /* the folder's base name; "" for a file */
    int shards;                     /* files the weights came from */
    attn_lm_config cfg;             /* cfg.weights_dtype: how params holds the matrices */
    void *params;                   /* core's buffer (attn_lm_param_get's layout), read-only
                                       after the load, shared by every worker */
    size_t n_params, param_bytes;   /* values in params, and its bytes (held in memory) */
    int lossy;                      /* matrices rounded below the file's dtype (bf16 of F32) */
    size_t n_weights;               /* values the checkpoint holds (no buffers, no tied head) */
    char n_head_from[32];           /* "option", "config.json", "metadata" or "<width>/64" */
    const char *layout;             /* the file's layout, for people: "GPT-2", "GPTModel" */
    char dtype[8];                  /* the dtype of the file's weights */
    int prefixed;                   /* names started with "transformer." */
    int has_lm_head;                /* a tied head was there (equal to the token embedding) */
    api_bpe *bpe;                   /* the folder's tokenizer (owned), or NULL */
    api_tokenizer tok;              /* {name, bpe}: what requests for this model read text with */
    attn_lm_pooling pooling;        /* sentence embeddings: the folder's pooling, else mean */
    int max_tokens;                 /* sentence_bert_config.json's max_seq_length; 0: none */
    int builtin;                    /* the folder's files came from memory (api_models_load_mem) */
    struct api_chat_folder *chat;   /* the folder's chat template (api/chat/), or NULL */
} api_model;

/* What is known of a model before its tensors: the spec's ":heads=N", its config.json. */
typedef struct {
    int arch_known;                 /* cfg.arch is set (a folder's config.json says it) */
    int n_head;                     /* 0: not given (then __metadata__, then width / 64) */
    const char *n_head_from;        /* where n_head came from */
    int checked;                    /* cfg's sizes are config.json's: the tensors must agree */
    attn_lm_config cfg;             /* the architecture, and with checked the whole config */
    api_weights_mode mode;          /* how the weights are to be held */
} api_ckpt_hints;

/* Each architecture's loader: its tensors (a single file: its config from their shapes)
 * into m (cfg, params, n_params, n_weights, dtype, n_head_from). 0, or -1 with the fault
 * in why. XX(ARCH, loader, probe): a single file is the first row whose probe it has. */
#define API_WEIGHTS_MAP(XX)                                                                        \
    XX(GPTMODEL, api__ckpt_book_load, "tok_emb.weight")                                            \
    XX(GPT2, api__ckpt_gpt2_load, NULL)

int api__ckpt_gpt2_load(const api_st_set *set, const api_ckpt_hints *h, api_model *m, char *why,
                        size_t size);
int api__ckpt_book_load(const api_st_set *set, const api_ckpt_hints *h, api_model *m, char *why,
                        size_t size);
/* Every other architecture (generic.c): its folder's config.json gives the
 * config, its tensors carry the row's own state_dict names. */
int api__ckpt_generic_load(const api_st_set *set, const api_ckpt_hints *h, api_model *m, char *why,
                           size_t size);
/* names.c: the file's tensor of entry `name` (bare of the base prefix, or
 * LayerNorm's old gamma/beta, too); 1 if a file's tensor belongs (an entry,
 * the tied head, a name the row ignores); cfg's parts as the file has them. */
const api_st_tensor *api__ckpt_find(const api_st_set *set, const attn_lm_plan *plan, const char *name);
int api__ckpt_belongs(const attn_lm_plan *plan, const char *name);
void api__ckpt_parts(const api_st_set *set, attn_lm_config *cfg);
/* load.c: n_head from the hints, __metadata__[key] of any file or width / 64; then
 * the plan of cfg, m->params allocated, the buffers filled. */
int api__ckpt_finish_config(const api_st_set *set, const api_ckpt_hints *h, const char *key,
                            api_model *m, attn_lm_plan *plan, char *why, size_t size);
/* The dtype the matrices are held in for mode (KEEP: the one half-size dtype of every
 * rank-2 tensor, else F32); m->params allocated in plan's layout, buffers filled. */
attn_dtype api__ckpt_weights_dtype(const api_st_set *set, api_weights_mode mode);
int api__ckpt_alloc(const attn_lm_plan *plan, api_model *m, char *why, size_t size);
/* A tensor of the set into entry p of m->params (its dtype, transposed when
 * asked), its shape checked against want[rank]; m->dtype, m->lossy follow. */
int api__ckpt_copy(const api_st_tensor *t, const char *name, int rank, const size_t *want,
                   int transpose, const attn_param *p, api_model *m, char *why, size_t size);
/* A block number (decimal, no sign or leading 0, below 100,000), its end in *end; or -1. */
int api__ckpt_layer_number(const char *s, const char **end);
/* The config.json values the tensors disagree with (checked hints): 0 or -1. */
int api__ckpt_check_config(const api_ckpt_hints *h, const attn_lm_config *got, char *why, size_t size);
/* hparams.c: the request name of hyperparameter id in arch's row (core's
 * field name when the row has none), its config.json name, and a config as
 * a JSON object under the row's request names, in its order. */
const char *api__hparam_name(attn_arch arch, attn_hparam id);
const char *api__hparam_config_name(attn_arch arch, attn_hparam id);
void api__config_json(api_buf *b, const attn_lm_config *c);
/* Hugging Face's rope_scaling (null, or {"rope_type" or "type": "default",
 * "linear" or "llama3", "factor", "low_freq_factor", "high_freq_factor",
 * "original_max_position_embeddings"}) into c's rope_* fields; Gemma's
 * layer_types list into c's local_layers. 0, or -1 with the fault in why. */
int api__rope_scaling_read(const json_t *v, attn_lm_config *c, char *why, size_t size);
int api__layer_types_read(const json_t *v, attn_lm_config *c, char *why, size_t size);

/* A Hugging Face folder (folder.c): config.json into h, the weights
 * (model.safetensors, or model.safetensors.index.json and its shards) into
 * set (m->file, m->shards), each file named in the fault. 0 or -1. */
int api__folder_open(const char *dir, api_ckpt_hints *h, api_st_set *set, api_model *m, char *why, size_t size);
/* config.json's tree into h: the architecture ("model_type", "architectures",
 * or the book's keys), then its row's hyperparameters under their
 * config.json names; -1 with the fault in why. */
int api__folder_config(const json_t *cfg, api_ckpt_hints *h, char *why, size_t size);
/* The tokenizer files beside the weights (vocab.json + merges.txt, or
 * encoder.json + vocab.bpe) into m->bpe; none at all is fine (NULL). */
int api__folder_tokenizer(const char *dir, api_model *m, char *why, size_t size);
/* pooling.c: modules.json's Pooling and Normalize, sentence_bert_config.json. */
int api__folder_pooling(const char *dir, api_model *m, char *why, size_t size);

/* The model called name, or NULL. */
const api_model *api__models_find(const api_models *m, const char *name);
/* The i-th model loaded (in --model order), or NULL; loaded names ("a, b" or "none"). */
const api_model *api__models_at(const api_models *m, int i);
void api__models_names(const api_models *m, char *out, size_t size);
/* The loaded folders' tokenizers (load order); those a request may name:
 * --tokenizer's, then the model folders' (named after their models). */
const api_tokenizer *api__models_tokenizer(const api_models *m, int i);
const api_tokenizer *api__tokenizer_at(const api_limits *lim, size_t i);

#endif
