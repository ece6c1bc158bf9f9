/* api.h - JSON requests to core/ and results back to JSON.
 *
 * No HTTP here: the server hands over an endpoint id and the raw body, and
 * gets back a status and a reply body. Every endpoint goes through one
 * pipeline (api/handle.c): the body is read (tensor arrays by a fast
 * scanner, the rest by jansson), the endpoint's kind parses and plans it,
 * the limits admit it, the kind computes it and lists what the reply holds,
 * and the row of the requested format writes that list. What differs
 * between endpoints is a row of API_ENDPOINT_MAP; between formats, a row of
 * API_FORMAT_MAP.
 */
#ifndef API_H
#define API_H

#include <stddef.h>
#include <stdint.h>

struct attn_lm_cache;
struct attn_pool;

/* ==== Endpoints ========================================================== */

/* What an endpoint computes (the kind's steps are in api/pipeline.h). */
typedef enum {
    API_KIND_MODULE, /* an attention module of core's ATTN_MODULE_MAP (the rows whose
                        endpoint column is this path): api/module/ */
    API_KIND_MODEL,  /* a whole model: api/model/ */
    API_KIND_OPENAI, /* OpenAI's completions and chat completions APIs: api/openai/ */
    API_KIND_EMBED,  /* OpenAI's embeddings API: api/openai/embed.c */
    API_KIND_TOKENS, /* text to token ids and back: api/tokens/ */
    API_KIND_COUNT
} api_kind;

/* Every endpoint that computes, in the OpenAPI document's order:
 *   XX(ID, method, path, kind)
 * The server routes these paths to api_handle (server/route.c) and the
 * document lists them (api/openapi/); adding an endpoint is a row here, and
 * a kind's steps (api/pipeline.h) when it is a new kind. */
#define API_ENDPOINT_MAP(XX)                                                                       \
    XX(SIMPLE, "POST", "/attention/simple", MODULE)                                                \
    XX(SELF, "POST", "/attention/self", MODULE)                                                    \
    XX(CAUSAL, "POST", "/attention/causal", MODULE)                                                \
    XX(MULTIHEAD, "POST", "/attention/multihead", MODULE)                                          \
    XX(SDPA, "POST", "/attention/sdpa", MODULE)                                                    \
    XX(MODEL, "POST", "/model", MODEL)                                                             \
    XX(MODEL_GPT2, "POST", "/model/gpt2", MODEL)                                                   \
    XX(V1_COMPLETIONS, "POST", "/v1/completions", OPENAI)                                          \
    XX(V1_CHAT_COMPLETIONS, "POST", "/v1/chat/completions", OPENAI)                                \
    XX(V1_EMBEDDINGS, "POST", "/v1/embeddings", EMBED)                                             \
    XX(TOKENIZE, "POST", "/tokenize", TOKENS)                                                      \
    XX(DETOKENIZE, "POST", "/detokenize", TOKENS)

typedef enum {
#define API_EP_ID(id, method, path, kind) API_EP_##id,
    API_ENDPOINT_MAP(API_EP_ID)
#undef API_EP_ID
    API_EP_COUNT
} api_endpoint;

typedef struct {
    const char *method; /* "POST", "GET" */
    const char *path;   /* "/attention/simple" */
    api_kind kind;
} api_endpoint_info;

/* The row of ep; NULL for an id out of range. */
const api_endpoint_info *api_endpoint_get(api_endpoint ep);
/* "/attention/simple" ... ; NULL for an out-of-range id */
const char *api_endpoint_path(api_endpoint ep);
/* Maps a path to an endpoint; returns 0 and sets *ep, or -1 if unknown. */
int api_endpoint_from_path(const char *path, api_endpoint *ep);

/* ==== Reply formats ====================================================== */

/* Properties of a format (the flags column of API_FORMAT_MAP). */
enum {
    API_FMT_JSON = 1 << 0,    /* a JSON document (application/json) */
    API_FMT_STREAMS = 1 << 1, /* may be sent while it is written (api_limits.stream) */
    API_FMT_HALF = 1 << 2,    /* takes "dtype": "float16" */
    API_FMT_PARTS = 1 << 3,   /* float32 tensors may stay where they were computed
                                 (api_limits.zero_copy, api_reply.parts) */
    API_FMT_IMAGE = 1 << 4,   /* a picture of the attention maps */
    API_FMT_EVENTS = 1 << 5,  /* server-sent events, sent as they come (a generation) */
};

/* Every reply format, the single place one is named:
 *   XX(ID, name, MIME type, flags, bytes of reply per value, writer)
 * name: the request's "output_format"; MIME type: the reply's Content-Type,
 * and what an Accept header names to prefer it (server/http.c); bytes per
 * value: the first reservation of the reply buffer (0: a fixed 4 KiB, the
 * writer reserves its own); writer: the api/ function that writes a reply in
 * it (private). The first row is the default. */
#define API_FORMAT_MAP(XX)                                                                         \
    XX(NESTED, "nested", "application/json", API_FMT_JSON | API_FMT_STREAMS, 10, api__write_json)  \
    XX(FLAT, "flat", "application/json", API_FMT_JSON | API_FMT_STREAMS, 10, api__write_json)      \
    XX(BASE64, "base64", "application/json", API_FMT_JSON | API_FMT_STREAMS | API_FMT_HALF, 6,     \
       api__write_json)                                                                            \
    XX(SAFETENSORS, "safetensors", "application/octet-stream", API_FMT_HALF | API_FMT_PARTS, 0,    \
       api__write_safetensors)                                                                     \
    XX(PNG, "png", "image/png", API_FMT_IMAGE, 0, api__write_png)                                  \
    XX(SVG, "svg", "image/svg+xml", API_FMT_IMAGE, 0, api__write_svg)                             \
    XX(EVENTS, "events", "text/event-stream", API_FMT_EVENTS, 0, api__write_events)

typedef enum {
#define API_FORMAT_ID(id, name, mime, flags, per_value, writer) API_FORMAT_##id,
    API_FORMAT_MAP(API_FORMAT_ID)
#undef API_FORMAT_ID
    API_FORMAT_COUNT
} api_format;

typedef struct {
    const char *name;     /* "nested", "safetensors", ... */
    const char *mime;     /* "application/json", "image/png", ... */
    unsigned flags;       /* API_FMT_* */
    size_t per_value;     /* bytes of reply per value, for the first reservation */
} api_format_info;

/* The row of f; NULL for an id out of range. */
const api_format_info *api_format_get(api_format f);

/* The formats of a reply of tensors (all but the event stream, which only a
 * generation writes), as bits 1 << api_format. */
#define API_FORMATS_TENSORS (((1u << API_FORMAT_COUNT) - 1) & ~(1u << API_FORMAT_EVENTS))

/* A growing byte buffer that owns its memory. */
typedef struct {
    char *data;
    size_t len, cap;
    int failed;        /* sticky: an allocation failed, contents are incomplete */
    /* Optional: once the buffer holds drain_at bytes or more, the next write
     * first hands them to drain(drain_ctx, data, len), which takes the
     * malloc'd data and returns 0, or refuses (nonzero; the data is still
     * taken) and the buffer fails. The buffer then starts empty. */
    int (*drain)(void *ctx, char *data, size_t len);
    void *drain_ctx;
    size_t drain_at;
} api_buf;

void api_buf_free(api_buf *b);          /* accepts a zeroed or freed buffer */

/* A model folder's tokenizer (api/bpe/; encoding, decoding and special
 * tokens in api/bpe/bpe.h). A loaded one is read-only and shared by every
 * thread. */
typedef struct api_bpe api_bpe;

/* Loads dir/tokenizer.json (with dir/tokenizer_config.json when present)
 * when it exists, else dir/vocab.json + dir/merges.txt (Hugging Face's names)
 * or dir/encoder.json + dir/vocab.bpe (OpenAI's). Returns 0, or a negative
 * code with *out NULL and err (err_size bytes) naming the file and the fault. */
int api_bpe_load(const char *dir, api_bpe **out, char *err, size_t err_size);
/* The same from the two files' bytes in memory (vocab.json, merges.txt). */
int api_bpe_load_mem(const char *vocab_json, size_t vocab_len, const char *merges_txt,
                     size_t merges_len, api_bpe **out, char *err, size_t err_size);
void api_bpe_free(api_bpe *t); /* NULL is fine */
size_t api_bpe_vocab_size(const api_bpe *t);

/* A tokenizer the server loaded (--tokenizer NAME=DIR): requests name it in
 * their "tokenizer" field. */
typedef struct {
    const char *name;
    const api_bpe *bpe;
} api_tokenizer;

/* The checkpoints loaded at start (api/checkpoint.c): POST /model/gpt2 with
 * "model": NAME runs one of them. Read-only once loaded; shared by every
 * worker thread. */
typedef struct api_models api_models;

/* Loads model NAME from spec "NAME=DIR" (a Hugging Face folder: config.json,
 * model.safetensors or its shards, the tokenizer files) or
 * "NAME=FILE[:heads=N]" (one safetensors file of GPT-2 or of the book's
 * GPTModel), validated in full, into *models (created when NULL). Returns
 * 0, or -1 with the reason (naming the file and the problem) in why. Call
 * before any thread reads *models. */
int api_models_load(api_models **models, const char *spec, char *why, size_t why_size);

/* How a loaded model holds its weight matrices (--weights-dtype; norms and
 * biases are float32 in every case):
 *   KEEP  as its checkpoint stores them: F16 and BF16 matrices stay half-size
 *         in memory, widened to float32 inside the products, so results are
 *         those of the float32 copy of the same values; anything else (F32,
 *         or matrices of mixed dtypes) float32
 *   F32   float32 whatever the file holds (exact; twice a half-size file)
 *   BF16  BF16: float32 (or F16) values rounded to nearest even, lossy (8
 *         significant bits; GET /models says "weights_lossy": true) */
typedef enum {
    API_WEIGHTS_KEEP = 0,
    API_WEIGHTS_F32 = 1,
    API_WEIGHTS_BF16 = 2,
} api_weights_mode;
/* "keep", "f32" or "bf16" (any case) into *out: 0, or -1 for anything else. */
int api_weights_mode_parse(const char *s, api_weights_mode *out);
/* api_models_load with the weights held as mode says (api_models_load: KEEP). */
int api_models_load_as(api_models **models, const char *spec, api_weights_mode mode, char *why,
                       size_t why_size);
/* A model folder's files in memory (the demo model built into the server):
 * config.json, model.safetensors, vocab.json and merges.txt, which must
 * outlive the models. */
typedef struct {
    const char *name;    /* the model's name in requests */
    const char *folder;  /* the folder it was made from, for GET /models */
    const void *config, *weights, *vocab, *merges;
    size_t config_len, weights_len, vocab_len, merges_len;
    api_weights_mode mode; /* how its weights are held (0: KEEP) */
} api_model_files;
/* Loads such a folder as api_models_load loads one from disk. */
int api_models_load_mem(api_models **models, const api_model_files *files, char *why, size_t why_size);
/* Accepts NULL. */
void api_models_free(api_models *models);

struct attn_pool;

typedef struct {
    size_t max_elements;  /* most floats one request may make the server hold */
    double max_work;      /* most work one request may take (0: no limit), in
                             multiply-adds, each softmax element counted as 64 (the
                             quadratic terms, the projections, a model's layers and
                             lm_head): over it, 413 naming the field that sets the length */
    /* The loaded tokenizers (NULL, 0: none): /model/gpt2 takes "text". */
    const api_tokenizer *tokenizers;
    size_t n_tokenizers;
    const api_models *models; /* loaded checkpoints, or NULL for none */
    int prefer_format;    /* 1 + the api_format the client's Accept prefers to JSON
                             (server/http.c), used when the request names no
                             output_format; 0: none */
    unsigned refuse_formats; /* bits 1 << api_format of the formats the client's Accept rules
                             out; when the request names no output_format and its format
                             is one, another the endpoint writes, or 406 when none */
    size_t defer_above;   /* nonzero: a request that would hold more elements than this is
                             not computed; api_handle returns 0 (reply status 0, no body)
                             after parsing it, for the caller to run it elsewhere */
    int defer_generation; /* nonzero: a request that generates ("generate" on /model/gpt2,
                             /v1/completions), as its parse finds it, is not run either:
                             api_handle returns 0 with reply->generation set */
    /* Optional (NULL: none). Called once per request when its sizes are known
     * (after the parse, before its parameters, intermediates, outputs and
     * reply are allocated) with the bytes those will take at most. A nonzero
     * return refuses the request: 503 "overloaded" with the message the hook
     * wrote into msg (msg_size bytes, NUL-terminated). The server uses it for
     * its memory budget (it may wait there for memory to be released). */
    int (*reserve)(void *ctx, size_t bytes, char *msg, size_t msg_size);
    void *reserve_ctx;
    struct attn_pool *compute; /* threads one request may share its work with
                                  (attn_pool_create); NULL = the calling thread */
    int zero_copy;          /* the caller takes a reply in parts (api_reply.parts) */
    /* Optional (NULL: off): a 200 reply in JSON (not safetensors or an image)
     * of about stream_above bytes or more (estimated) is handed over while it
     * is written, in pieces of about stream_piece bytes (0: stream_above):
     * stream(stream_ctx, data, len) takes each malloc'd piece (a nonzero
     * return stops the writing: the reply then fails). reply->body is what
     * is left after the last piece.
     * Streaming starts only once the reply is known to hold no NaN or
     * infinity; after a piece has gone out, only a failed allocation (or the
     * refusal) can still turn the reply into an error, which the caller then
     * has to cut short. */
    int (*stream)(void *ctx, char *data, size_t len);
    void *stream_ctx;
    size_t stream_above, stream_piece;
    /* Generation ("generate" on /model/gpt2, /v1/completions; optional, NULL:
     * none). token(gen_ctx, n, ms): a generation wrote n tokens in a step of
     * ms milliseconds; the caller may wait there for its turn among
     * concurrent generations, and returns API_TOKEN_GO to go on,
     * API_TOKEN_GONE when the client has gone (the generation stops; nothing
     * will be sent) or API_TOKEN_TIMEOUT when the request is out of time (it
     * stops and replies with what it wrote). events(gen_ctx, data, len): a
     * reply of server-sent events (text/event-stream) is handed over as
     * each event is written: the malloc'd piece is taken in any case; a
     * nonzero return means the client has gone. Without it the events are
     * the reply's body, sent whole. */
    int (*token)(void *ctx, int n, double ms);
    int (*events)(void *ctx, char *data, size_t len);
    /* A generation's decode steps with other generations' (NULL: each its
     * own attn_lm_decode): decode(gen_ctx, cache, params, tokens, logits,
     * vocab, pool, err) is attn_lm_decode giving logits only (err: an
     * attn_error *); away(gen_ctx) before the generation computes alone (a
     * prefill, a step that keeps attention rows): no step waits for it. */
    int (*decode)(void *ctx, struct attn_lm_cache *cache, const void *params,
                  const int32_t *tokens, float *logits, int vocab, struct attn_pool *pool,
                  void *err);
    void (*away)(void *ctx);
    void *gen_ctx;
    int max_new_tokens;     /* most tokens one request may write (--max-new-tokens); 0: no cap */
} api_limits;

enum { API_TOKEN_GO = 0, API_TOKEN_GONE = 1, API_TOKEN_TIMEOUT = 2 };

/* A piece of a reply body left where the computation wrote it; a reply has
 * at most API_REPLY_MAX_PARTS. */
#define API_REPLY_MAX_PARTS 128

typedef struct {
    const void *data;
    size_t len;
} api_part;

typedef struct {
    int status;           /* HTTP status: 200, 400, 413, 500 */
    api_buf body;         /* complete body, owned by the caller after api_handle */
    const char *content_type; /* static: "application/json", "application/octet-stream"
                                 for a safetensors reply, "image/png", "image/svg+xml" */
    double ms_parse, ms_compute, ms_serialise;
    /* With api_limits.zero_copy, a safetensors reply in float32 leaves its
     * tensors in the arrays the computation wrote (no copy of a 50 MB map):
     * the body is `body` followed by parts[0], ..., parts[n_parts - 1], whose
     * memory parts_owner keeps. n_parts is 0 for every other reply. */
    const api_part *parts;
    int n_parts;
    void *parts_owner;
    int generation;       /* deferred (status 0) and a generation (api_limits.defer_generation) */
} api_reply;

/* Frees the body and whatever the parts point into; the reply is then empty. */
void api_reply_free(api_reply *reply);
/* The body's length, parts included. */
size_t api_reply_length(const api_reply *reply);
/* Copies the parts onto the end of the body, which is then the whole reply
 * (for gzip, say). 0, or -1 when memory ran out (the reply unchanged). */
int api_reply_flatten(api_reply *reply);

/* Handles one request body for an endpoint. Fills reply with a body (the
 * result, or {"error": {...}}) and returns reply->status; or returns 0 with
 * no body when lim->defer_above says the request is too big to run here, or
 * lim->defer_generation that it generates (reply->generation). */
int api_handle(api_endpoint ep, const char *body, size_t len, const api_limits *lim,
               api_reply *reply);

/* GET /models: {"models": [{"name", "file", "module", "config", "tokenizer",
 * ...}], "tokenizers": [{"name", "tokens"}]} into out: lim's models and every
 * tokenizer a request may name (--tokenizer's, then the model folders'); lim
 * may be NULL (empty lists). 0, or -1 when memory ran out. */
int api_models_json(const api_limits *lim, api_buf *out);
/* GET /v1/models as OpenAI's Models API lists them: {"object": "list",
 * "data": [{"id": NAME, "object": "model", "created", "owned_by"}]}, created
 * the Unix time the server started. 0, or -1 when memory ran out. */
int api_openai_models_json(const api_models *models, long long created, api_buf *out);

/* Every error a reply can carry, api/'s and the server's alike, in the order
 * the OpenAPI document lists them: XX(ID, HTTP status, code, description).
 * Failure sites name the row (API_E_INVALID_SHAPE), never the status or the
 * code text; api/openapi/gen.py builds the document's Error schema from it. */
#define API_ERROR_MAP(XX)                                                                          \
    XX(INVALID_JSON, 400, "invalid_json",                                                          \
       "The body is not JSON; the message gives the line and column.")                             \
    XX(MISSING_FIELD, 400, "missing_field", "A required field is absent.")                         \
    XX(UNKNOWN_FIELD, 400, "unknown_field", "A field that the module does not take.")              \
    XX(INVALID_TYPE, 400, "invalid_type", "A field or element of the wrong JSON type.")            \
    XX(INVALID_ARGUMENT, 400, "invalid_argument",                                                  \
       "A bad value or configuration, e.g. a module the endpoint does not serve.")                 \
    XX(INVALID_SHAPE, 400, "invalid_shape",                                                        \
       "Sizes disagree: ragged arrays, d_out not divisible by num_heads, T over context_length.")  \
    XX(NON_FINITE, 400, "non_finite", "NaN, infinity or a value beyond float32.")                  \
    XX(INVALID_BASE64, 400, "invalid_base64",                                                      \
       "A binary tensor's text is not base64 (RFC 4648 alphabet, '=' padding optional).")         \
    XX(INVALID_GZIP, 400, "invalid_gzip",                                                          \
       "A body sent with Content-Encoding: gzip is not one well-formed gzip member.")             \
    XX(BAD_REQUEST, 400, "bad_request",                                                            \
       "The HTTP framing is unsound (Content-Length twice or not a number, with Transfer-"        \
       "Encoding, a coding not ending in chunked, HTTP/1.1 without Host): the connection closes.") \
    XX(TOO_LARGE, 413, "too_large",                                                                \
       "The body is over --max-body, the request needs more than --max-elements values or "      \
       "more memory than the whole --max-memory, or more work than --max-work.")                  \
    XX(NOT_FOUND, 404, "not_found", "No such path, or (POST /v1/completions) no such model.")                                               \
    XX(METHOD_NOT_ALLOWED, 405, "method_not_allowed",                                              \
       "The path does not take this method; the Allow header lists those it takes.")               \
    XX(NOT_ACCEPTABLE, 406, "not_acceptable",                                                      \
       "The Accept header takes none of the formats the endpoint writes, and the body names no "  \
       "output_format.")                                                                           \
    XX(LENGTH_REQUIRED, 411, "length_required",                                                    \
       "A POST with neither Content-Length nor Transfer-Encoding: chunked.")                       \
    XX(UNSUPPORTED_ENCODING, 415, "unsupported_encoding",                                          \
       "A Content-Encoding other than gzip or identity.")                                          \
    XX(OVERLOADED, 503, "overloaded",                                                              \
       "Every worker is busy and the queue is full, the memory budget is taken, or "              \
       "--max-connections are open; retry later (Retry-After).")                                   \
    XX(DRAINING, 503, "draining", "The server is shutting down.")                                  \
    XX(OUT_OF_MEMORY, 503, "out_of_memory",                                                        \
       "Memory ran out (status 500 when even the error reply could not be allocated).")            \
    XX(INTERNAL_ERROR, 500, "internal_error",                                                      \
       "A bug: a result holding NaN or infinity, or a route without a handler.")                   \
    XX(NOT_IMPLEMENTED, 501, "not_implemented",                                                    \
       "A transfer coding other than chunked (gzip, chunked): send Content-Encoding: gzip.")

typedef enum {
#define API_E_ID(id, status, code, description) API_E_##id,
    API_ERROR_MAP(API_E_ID)
#undef API_E_ID
    API_E_COUNT
} api_error;

typedef struct {
    int status;              /* HTTP status */
    const char *code;        /* "invalid_json", ... */
    const char *description; /* one line, for the document */
} api_error_info;

/* The row of an error; NULL for an id out of range. */
const api_error_info *api_error_get(api_error err);

/* Writes {"error":{"status":S,"code":"...","message":"...","field":"..."}}
 * into a freshly initialised buf; field may be NULL. Returns 0, -1 on OOM.
 * api_error_reply takes the status and code from the row of err. */
int api_error_body(api_buf *buf, int status, const char *code, const char *message,
                   const char *field);
int api_error_reply(api_buf *buf, api_error err, const char *message, const char *field);

/* The OpenAPI 3 document served at /openapi.json (static, NUL-terminated):
 * build/gen/openapi.json, made by `make` from the tables and embedded by
 * api/openapi/doc.S. Only programs that call this link that object. */
static inline const char *api_openapi_json(void) {
    extern const char api__openapi_doc[];
    return api__openapi_doc;
}

/* ==== gzip bodies and replies (libdeflate) ================================ */

typedef enum {
    API_GZ_OK = 0,
    API_GZ_TOO_LARGE = -1,  /* inflates to more than the limit */
    API_GZ_INVALID = -2,    /* not one well-formed gzip member */
    API_GZ_NOMEM = -3,
} api_gz_status;

/* Inflates the gzip member in[0..n) into a new buffer *out (NUL-terminated,
 * *out_len bytes, free() it) if it inflates to at most max bytes. At most
 * min(the trailer's size, max) + 1 bytes are allocated, and inflating stops
 * there: a member that lies about its size, is cut short or is followed by
 * other bytes is invalid (API_GZ_INVALID, also when its broken trailer
 * claims more than max); API_GZ_TOO_LARGE only when it really inflates past
 * max. why (optional, 128 bytes) says what is wrong. */
int api_gunzip(const void *in, size_t n, size_t max, char **out, size_t *out_len, char *why);

/* Compresses in[0..n) as one gzip member at level 1 (fastest) to 12 into
 * out (reset first). 0, or -1 when memory runs out. */
int api_gzip(const void *in, size_t n, int level, api_buf *out);

#endif
