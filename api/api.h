/* api.h - JSON requests to core/ and results back to JSON.
 *
 * No HTTP here: the server hands over a path-free endpoint id and the raw
 * body, and gets back a status and a complete JSON reply body. Replies are
 * written straight into one growing byte buffer (no jansson tree on the way
 * out); requests are parsed with jansson, copied into contiguous float arrays
 * and the tree is freed before computing.
 */
#ifndef API_H
#define API_H

#include <stddef.h>

typedef enum {
    API_EP_SIMPLE,     /* POST /attention/simple */
    API_EP_SELF,       /* POST /attention/self */
    API_EP_CAUSAL,     /* POST /attention/causal */
    API_EP_MULTIHEAD,  /* POST /attention/multihead */
    API_EP_SDPA,       /* POST /attention/sdpa */
    API_EP_COUNT
} api_endpoint;

/* "/attention/simple" ... ; NULL for an out-of-range id */
const char *api_endpoint_path(api_endpoint ep);
/* Maps a path to an endpoint; returns 0 and sets *ep, or -1 if unknown. */
int api_endpoint_from_path(const char *path, api_endpoint *ep);

/* A growing byte buffer that owns its memory. */
typedef struct {
    char *data;
    size_t len, cap;
    int failed;        /* sticky: an allocation failed, contents are incomplete */
} api_buf;

void api_buf_free(api_buf *b);          /* accepts a zeroed or freed buffer */

struct attn_pool;

typedef struct {
    size_t max_elements;  /* most floats one request may make the server hold */
    struct attn_pool *compute; /* threads one request may share its work with
                                  (attn_pool_create); NULL = the calling thread */
} api_limits;

typedef struct {
    int status;           /* HTTP status: 200, 400, 413, 500 */
    api_buf body;         /* complete JSON body, owned by the caller after api_handle */
    double ms_parse, ms_compute, ms_serialise;
} api_reply;

/* Handles one request body for an endpoint. Always fills reply with a JSON
 * body (the result, or {"error": {...}}) and returns reply->status. */
int api_handle(api_endpoint ep, const char *body, size_t len, const api_limits *lim,
               api_reply *reply);

/* Writes {"error":{"status":S,"code":"...","message":"...","field":"..."}}
 * into a freshly initialised buf; field may be NULL. Returns 0, -1 on OOM. */
int api_error_body(api_buf *buf, int status, const char *code, const char *message,
                   const char *field);

/* The OpenAPI 3 document served at /openapi.json (static, NUL-terminated). */
const char *api_openapi_json(void);

#endif
