/* http.c - libmicrohttpd handlers, see http.h for the thread model.
 *
 * Per-request state lives in *req_cls: the first handler call sets it up
 * (and answers 413 at once when Content-Length is over --max-body, handing
 * the socket to the lingering close, linger.h), body chunks are appended
 * with a cap, the last call answers or hands the body to a worker, which
 * reserves its memory in the budget (budget.h). Cleanup is in the completion
 * callback, which also runs for aborted requests, releases the reservation
 * and writes the access log line.
 */
#include "http.h"

#include <errno.h>
#include <microhttpd.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "acceptor.h"
#include "delivered.h"
#include "encoding.h"
#include "framing.h"
#include "gen.h"
#include "info.h"
#include "log.h"
#include "metrics.h"
#include "mhd_errors.h"
#include "route.h"
#include "stream.h"
#include "viewer.h"

/* Replies used when memory is short: built without allocating. The code is
 * API_E_OUT_OF_MEMORY's; the status is 500, not its 503, because not even the
 * error reply could be allocated (the document says so). */
static const char oom_body[] =
    "{\"error\":{\"status\":500,\"code\":\"out_of_memory\","
    "\"message\":\"the server is out of memory\",\"field\":null}}";
static const char ok_body[] = "{\"status\":\"ok\"}";

/* PH_STREAMING: the worker is writing a reply whose first pieces are ready
 * (api_limits.stream): the I/O thread starts sending it. */
typedef enum { PH_READING, PH_WORKING, PH_STREAMING, PH_DONE } phase;

/* A streamed reply (--stream-min-size) goes out in pieces of this size at
 * most; the first leaves when it is written. */
#define SRV_STREAM_PIECE ((size_t)16 << 20)
/* Server-sent events (a generation) may run this far ahead of the client. */
#define SRV_EVENTS_AHEAD ((size_t)1 << 20)

/* Requests answered on the I/O thread instead of a worker: bodies up to this
 * size whose plan holds at most this many floats (the seed examples hold a
 * few hundred; 16k floats is about 100 microseconds of work at most). */
#define SRV_INLINE_MAX_BODY 16384
#define SRV_INLINE_MAX_ELEMENTS 16384

typedef struct {
    srv_head head;           /* first: the request line is in, the handler not called yet */
    int begun;               /* the handler has been called (begin) */
    srv_http *srv;
    struct MHD_Connection *conn;
    srv_route route;
    char method[16];
    char path[256];
    srv_method m;            /* the method label in /metrics */
    struct timespec t0;
    char *body;              /* the POST body, len bytes of cap */
    size_t len, cap;
    size_t bytes_in;         /* body bytes received, kept or not */
    int too_large, no_memory;
    int bad_encoding;        /* a Content-Encoding other than identity or gzip: 415 */
    int framing_error;       /* answered for its framing (framing.h), connection closed */
    int budget_never;        /* needs more than the whole memory budget: 413 */
    atomic_int gone;         /* its client hung up while it was computed (conns.h) */
    char never_msg[256];
    int gzip_body;           /* Content-Encoding: gzip, inflated by the worker */
    int gzip_ok;             /* Accept-Encoding takes gzip */
    int want_format;         /* 1 + the reply format Accept prefers to JSON; 0: none */
    unsigned refuse_formats; /* the formats Accept rules out (api_limits.refuse_formats) */
    int gzipped;             /* the reply body is gzip */
    int static_gz;           /* a static document that has a gzip copy: Vary */
    double ms_gzip;          /* time the worker took to compress it */
    size_t held;             /* bytes reserved in the memory budget */
    double deadline;         /* CLOCK_MONOTONIC seconds: longest wait for memory */
    _Atomic phase ph;        /* PH_DONE is set by the worker before it resumes */
    api_reply reply;         /* the worker's result */
    srv_stream *stream;      /* the reply's pieces while the worker writes it, or NULL */
    size_t stream_piece;     /* their size */
    int gen;                 /* a generation: on the generation threads, taking turns (gen.h) */
    srv_batch_member *member;/* a generation's place in the batched steps (batch.h), or NULL */
    int first_token;         /* its first token is written (time to first token measured) */
    int events;              /* the stream is server-sent events (api_limits.events) */
    int status;              /* what was queued; 0 if nothing */
    size_t bytes_out;
    int measured;            /* wire_before and head_len are known (a large or streamed reply) */
    unsigned long long wire_before; /* bytes the socket had been given when the reply began */
    size_t head_len;         /* the reply's head, about (delivered.h) */
} request;

/* 1 + the reply format (api.h's API_FORMAT_MAP) that an Accept header
 * prefers to JSON: the highest q-value above JSON's, the earlier row on a
 * tie; 0 when JSON is preferred or nothing else is named. */
static int preferred_format(const char *accept) {
    double q_json = srv_accept_q(accept, "application/json"), best_q = 0;
    int best = 0;
    for (int f = 0; f < API_FORMAT_COUNT; f++) {
        const api_format_info *info = api_format_get((api_format)f);
        if (info->flags & API_FMT_JSON) continue;
        double q = srv_accept_q(accept, info->mime);
        if (q > 0 && q > q_json && q > best_q) {
            best_q = q;
            best = f + 1;
        }
    }
    return best;
}

/* The reply formats an Accept header rules out (q = 0, or not named and no
 * wildcard covers them): bits 1 << api_format; 0 without the header. */
static unsigned refused_formats(const char *accept) {
    unsigned out = 0;
    for (int f = 0; accept && f < API_FORMAT_COUNT; f++)
        if (!(srv_accept_q(accept, api_format_get((api_format)f)->mime) > 0)) out |= 1u << f;
    return out;
}

static double seconds_since(const struct timespec *t0) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)(t.tv_sec - t0->tv_sec) + (double)(t.tv_nsec - t0->tv_nsec) / 1e9;
}

/* ==== Replies =========================================================== */

/* A reply this large, or streamed, has what reached its client counted if it
 * is cut short (delivered.h); a smaller one is in the socket's buffer at
 * once, and two system calls a request are spared. */
#define SRV_MEASURE_ABOVE ((size_t)64 << 10)

static enum MHD_Result add_header_length(void *cls, enum MHD_ValueKind kind, const char *key,
                                         const char *value) {
    (void)kind;
    *(size_t *)cls += strlen(key) + 2 + (value ? strlen(value) : 0) + 2;
    return MHD_YES;
}

/* Where the reply begins on the wire, and its head's length: the status
 * line, r's headers, and libmicrohttpd's own (Date, the length or chunked,
 * the blank line). */
static void measure_start(request *q, struct MHD_Response *r, int status, size_t len) {
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(q->conn, MHD_CONNECTION_INFO_CONNECTION_FD);
    if (!ci) return;
    q->wire_before = srv_tcp_written(ci->connect_fd);
    const char *reason = MHD_get_reason_phrase_for((unsigned)status);
    size_t head = 13 + (reason ? strlen(reason) : 0) + 2 + 37 + 2;
    head += len ? 18 + (size_t)snprintf(NULL, 0, "%zu", len) : 28;
    MHD_get_response_headers(r, add_header_length, &head);
    q->head_len = head;
    q->measured = 1;
}

/* Adds the headers every reply gets and queues r, whose body is `len`
 * bytes; the caller's reference to r is dropped. */
static enum MHD_Result respond_with(request *q, int status, const char *content_type,
                                    struct MHD_Response *r, size_t len) {
    const srv_cors *cors = &q->srv->cors;
    if (content_type) MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, content_type);
    if (srv_cors_enabled(cors)) {
        const char *origin = MHD_lookup_connection_value(q->conn, MHD_HEADER_KIND, "Origin");
        const char *allow = srv_cors_allow(cors, origin);
        if (allow) {
            MHD_add_response_header(r, MHD_HTTP_HEADER_ACCESS_CONTROL_ALLOW_ORIGIN, allow);
            /* What a page may read besides the CORS-safelisted headers. */
            MHD_add_response_header(r, "Access-Control-Expose-Headers",
                                    "Retry-After, Server-Timing, ETag, Content-Encoding");
        }
    }
    /* One Vary header: what the reply depends on besides the URL. */
    int vary_origin = srv_cors_enabled(cors) && srv_cors_varies(cors);
    int vary_coding = (q->route <= SRV_R_LAST_COMPUTE && q->srv->opt->gzip_level > 0) || q->static_gz;
    if (vary_origin || vary_coding)
        MHD_add_response_header(r, MHD_HTTP_HEADER_VARY,
                                vary_origin && vary_coding ? "Origin, Accept-Encoding"
                                : vary_origin              ? "Origin"
                                                           : "Accept-Encoding");
    if (status == MHD_HTTP_METHOD_NOT_ALLOWED || status == MHD_HTTP_NO_CONTENT)
        MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, srv_route_allow(q->route));
    if (status == MHD_HTTP_SERVICE_UNAVAILABLE) MHD_add_response_header(r, MHD_HTTP_HEADER_RETRY_AFTER, "1");
    if (status == MHD_HTTP_UNSUPPORTED_MEDIA_TYPE)
        MHD_add_response_header(r, MHD_HTTP_HEADER_ACCEPT_ENCODING, "gzip, identity");
    if (q->gzipped) MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_ENCODING, "gzip");
    if (status == MHD_HTTP_NO_CONTENT) {
        MHD_add_response_header(r, "Access-Control-Allow-Methods", srv_route_allow(q->route));
        /* The request headers the documents use beyond the safelisted ones. */
        MHD_add_response_header(r, "Access-Control-Allow-Headers",
                                "Content-Type, Content-Encoding, Accept, If-None-Match");
        MHD_add_response_header(r, "Access-Control-Max-Age", "86400");
    }
    if (q->route <= SRV_R_LAST_COMPUTE && atomic_load(&q->ph) == PH_DONE && q->reply.status == 200) {
        char timing[192];
        int n = snprintf(timing, sizeof timing, "parse;dur=%.3f, compute;dur=%.3f, serialise;dur=%.3f",
                         q->reply.ms_parse, q->reply.ms_compute, q->reply.ms_serialise);
        if (q->gzipped && n > 0 && (size_t)n < sizeof timing)
            snprintf(timing + n, sizeof timing - (size_t)n, ", gzip;dur=%.3f", q->ms_gzip);
        MHD_add_response_header(r, "Server-Timing", timing);
    }
    /* While draining, tell keep-alive clients to go elsewhere. */
    if (atomic_load(&q->srv->draining)) MHD_add_response_header(r, MHD_HTTP_HEADER_CONNECTION, "close");
    q->status = status;
    q->bytes_out = len;
    if (len == 0 || len > SRV_MEASURE_ABOVE) measure_start(q, r, status, len);
    enum MHD_Result ret = MHD_queue_response(q->conn, (unsigned)status, r);
    MHD_destroy_response(r);
    return ret;
}

/* Queues `len` bytes of body. With `owned` the body is malloc'd and freed by
 * libmicrohttpd once sent (no copy); otherwise it is static. */
static enum MHD_Result respond(request *q, int status, const char *content_type, char *body,
                               size_t len, int owned) {
    struct MHD_Response *r =
        owned ? MHD_create_response_from_buffer_with_free_callback(len, body, free)
              : MHD_create_response_from_buffer(len, body, MHD_RESPMEM_PERSISTENT);
    if (!r) {
        if (owned) free(body);
        return MHD_NO;
    }
    return respond_with(q, status, content_type, r, len);
}

static enum MHD_Result respond_body(request *q, int status, const char *content_type, api_buf *b) {
    if (!b->data || b->failed) {
        api_buf_free(b);
        return respond(q, 500, "application/json", (char *)oom_body, sizeof oom_body - 1, 0);
    }
    char *data = b->data;
    size_t len = b->len;
    b->data = NULL;   /* now owned by the response */
    api_buf_free(b);
    return respond(q, status, content_type, data, len, 1);
}

static void free_reply(void *reply) {
    api_reply_free(reply);
    free(reply);
}

/* A reply whose tensors stay in the arrays the computation wrote
 * (api_reply.parts): libmicrohttpd sends the body and then each part, and
 * frees them all with the response. */
static enum MHD_Result respond_parts(request *q, int status, const char *content_type) {
    struct MHD_IoVec iov[API_REPLY_MAX_PARTS + 1];
    api_reply *keep = malloc(sizeof *keep);
    if (!keep || q->reply.n_parts > API_REPLY_MAX_PARTS) {
        free(keep);
        return respond(q, 500, "application/json", (char *)oom_body, sizeof oom_body - 1, 0);
    }
    *keep = q->reply; /* the memory goes with the response; the timings stay */
    q->reply.body = (api_buf){0};
    q->reply.parts = NULL;
    q->reply.n_parts = 0;
    q->reply.parts_owner = NULL;
    iov[0] = (struct MHD_IoVec){keep->body.data, keep->body.len};
    for (int i = 0; i < keep->n_parts; i++)
        iov[i + 1] = (struct MHD_IoVec){keep->parts[i].data, keep->parts[i].len};
    size_t len = api_reply_length(keep);
    struct MHD_Response *r =
        MHD_create_response_from_iovec(iov, (unsigned)keep->n_parts + 1, free_reply, keep);
    if (!r) {
        free_reply(keep);
        return MHD_NO;
    }
    return respond_with(q, status, content_type, r, len);
}

/* A 200 whose body the worker is still writing: sent as a chunked body
 * while the pieces come (stream.h). Server-Timing has what is known: the
 * parse and the computation. */
static enum MHD_Result respond_stream(request *q) {
    struct MHD_Response *r = MHD_create_response_from_callback(
        MHD_SIZE_UNKNOWN, 256 * 1024, srv_stream_read, q->stream, srv_stream_release);
    if (!r) {
        srv_stream_release(q->stream); /* the reader's hold: no reader */
        return MHD_NO;
    }
    char timing[96];
    snprintf(timing, sizeof timing, "parse;dur=%.3f, compute;dur=%.3f", q->reply.ms_parse,
             q->reply.ms_compute);
    if (!q->events) MHD_add_response_header(r, "Server-Timing", timing);
    else { /* as they come: no cache, no proxy buffering (nginx) */
        MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-cache");
        MHD_add_response_header(r, "X-Accel-Buffering", "no");
    }
    return respond_with(q, 200, q->events ? "text/event-stream" : "application/json", r, 0);
}

static enum MHD_Result respond_json(request *q, int status, api_buf *b) {
    return respond_body(q, status, "application/json", b);
}

/* {"error":{...}} through the api's writer, so every error looks the same. */
static enum MHD_Result respond_error(request *q, api_error err, const char *field,
                                     const char *fmt, ...) {
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    api_buf b = {0};
    if (api_error_reply(&b, err, msg, field) != 0) api_buf_free(&b);
    return respond_json(q, api_error_get(err)->status, &b);
}

/* ==== Routes ============================================================ */

/* A document that only changes with the binary (static_doc.h): an ETag,
 * "no-cache" (caches keep it but ask again each time), 304 Not Modified when
 * the client already has it, its gzip copy to a client that takes gzip. */
static enum MHD_Result answer_static(request *q, const char *content_type, const srv_static_doc *d) {
    q->static_gz = d->gz.len > 0;
    int gz = q->static_gz && srv_accepts_gzip(MHD_lookup_connection_value(
                                 q->conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_ACCEPT_ENCODING));
    const char *etag = gz ? d->gz_etag : d->etag;
    const char *inm = MHD_lookup_connection_value(q->conn, MHD_HEADER_KIND,
                                                  MHD_HTTP_HEADER_IF_NONE_MATCH);
    int unchanged = srv_etag_matches(inm, etag);
    size_t len = unchanged ? 0 : gz ? d->gz.len : d->len;
    void *body = unchanged ? (void *)"" : gz ? (void *)d->gz.data : (void *)d->text;
    struct MHD_Response *r = MHD_create_response_from_buffer(len, body, MHD_RESPMEM_PERSISTENT);
    if (!r) return MHD_NO;
    MHD_add_response_header(r, MHD_HTTP_HEADER_ETAG, etag);
    MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-cache");
    q->gzipped = gz && !unchanged;
    return respond_with(q, unchanged ? MHD_HTTP_NOT_MODIFIED : 200, unchanged ? NULL : content_type, r, len);
}

static enum MHD_Result answer_get(request *q) {
    srv_http *s = q->srv;
    switch (q->route) {
    case SRV_R_HEALTHZ:
        return respond(q, 200, "application/json", (char *)ok_body, sizeof ok_body - 1, 0);
    case SRV_R_READYZ:
        if (atomic_load(&s->draining))
            return respond_error(q, API_E_DRAINING, NULL, "the server is shutting down");
        return respond(q, 200, "application/json", (char *)ok_body, sizeof ok_body - 1, 0);
    case SRV_R_METRICS: {
        srv_metrics_gauges g = {.workers = s->opt->threads, .draining = atomic_load(&s->draining),
                                .connections = srv_http_connections(s),
                                .lingering = srv_linger_count(s->linger),
                                .slow_heads_cut = srv_conns_cut(s->conns)};
        g.conn.refused = atomic_load(&s->acceptor.refused);
        g.conn.hung_up = srv_conns_hung_up(s->conns);
        srv_pool_stats(s->pool, &g.queued, &g.running);
        srv_gen_stats(s->gen, &g.gen_queued, &g.gen_running);
        srv_batch_get_stats(s->batch, &g.batch);
        srv_budget_get_stats(s->budget, &g.memory);
        char *text;
        size_t len;
        srv_metrics_render(&g, &text, &len);
        if (!text) return respond(q, 500, "application/json", (char *)oom_body, sizeof oom_body - 1, 0);
        return respond(q, 200, "text/plain; version=0.0.4; charset=utf-8", text, len, 1);
    }
    case SRV_R_VERSION: {
        size_t len = 0;
        char *v = srv_info_version_json(&len);
        if (!v) return respond(q, 500, "application/json", (char *)oom_body, sizeof oom_body - 1, 0);
        return respond(q, 200, "application/json", v, len, 1);
    }
    case SRV_R_MODELS: { /* the models loaded at start (--model) and the tokenizers */
        api_buf b = {0};
        api_models_json(&s->limits, &b); /* respond_json answers 500 if it failed */
        return respond_json(q, 200, &b);
    }
    case SRV_R_V1_MODELS: { /* the same as OpenAI lists them */
        api_buf b = {0};
        api_openai_models_json(s->limits.models, s->started, &b);
        return respond_json(q, 200, &b);
    }
    case SRV_R_OPENAPI:
        return answer_static(q, "application/json", &s->openapi);
    case SRV_R_VIEWER:
        return answer_static(q, "text/html; charset=utf-8", &s->viewer);
    default:
        return respond_error(q, API_E_INTERNAL_ERROR, NULL, "no handler for %s", q->path);
    }
}

/* ==== Compute and the memory budget ===================================== */

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* An error reply stored for the I/O thread, as a worker's result would be. */
static void store_error(api_reply *rep, api_error err, const char *msg) {
    api_buf b = {0};
    if (api_error_reply(&b, err, msg, NULL) != 0) api_buf_free(&b);
    rep->status = api_error_get(err)->status;
    rep->body = b;
}

static double mib(size_t bytes) { return (double)bytes / (1024.0 * 1024.0); }

/* The whole memory budget (--max-memory) in MiB, for messages. */
static double budget_mib(const request *q) {
    srv_budget_stats st;
    srv_budget_get_stats(q->srv->budget, &st);
    return mib(st.limit);
}

static void budget_message(const request *q, srv_budget_result r, size_t bytes, char *msg,
                           size_t size) {
    if (r == SRV_BUDGET_NEVER)
        snprintf(msg, size, "this request needs about %.0f MiB of memory, more than the "
                 "server's memory budget of %.0f MiB (--max-memory)",
                 mib(q->held + bytes), budget_mib(q));
    else if (r == SRV_BUDGET_TIMEOUT)
        snprintf(msg, size, "no memory became free for this request within %d s (memory "
                 "budget %.0f MiB, --max-memory); retry later", q->srv->opt->timeout,
                 budget_mib(q));
    else
        snprintf(msg, size, "the memory budget (%.0f MiB, --max-memory) is held by requests "
                 "that wait for more; retry later", budget_mib(q));
}

/* api_limits.reserve: the second step, once the api knows the sizes. */
static int reserve_rest(void *ctx, size_t bytes, char *msg, size_t size) {
    request *q = ctx;
    srv_budget_result r = srv_budget_reserve(q->srv->budget, &q->held, bytes, q->deadline);
    if (r != SRV_BUDGET_OK) budget_message(q, r, bytes, msg, size);
    if (r == SRV_BUDGET_NEVER) {
        q->budget_never = 1;
        snprintf(q->never_msg, sizeof q->never_msg, "%s", msg);
    }
    return r != SRV_BUDGET_OK;
}

/* Content-Encoding: gzip: the body is replaced by its inflated bytes, which
 * --max-body bounds (checked from the gzip trailer before inflating). An
 * error is stored as the reply; returns -1 then. */
static int inflate_body(request *q) {
    char *plain, why[128];
    size_t len;
    /* The inflated text counts in the budget: its length as the gzip
     * trailer says it (ISIZE, the length mod 2^32; api_gunzip holds the
     * output to it and to --max-body). */
    size_t out = q->srv->opt->max_body;
    if (q->len >= 18) {
        const unsigned char *t = (const unsigned char *)q->body + q->len - 4;
        size_t isize = (size_t)t[0] | (size_t)t[1] << 8 | (size_t)t[2] << 16 | (size_t)t[3] << 24;
        if (isize < out) out = isize;
    }
    srv_budget_result r = srv_budget_reserve(q->srv->budget, &q->held, out, q->deadline);
    if (r != SRV_BUDGET_OK) {
        char msg[256];
        budget_message(q, r, out, msg, sizeof msg);
        store_error(&q->reply, r == SRV_BUDGET_NEVER ? API_E_TOO_LARGE : API_E_OVERLOADED, msg);
        return -1;
    }
    int rc = api_gunzip(q->body ? q->body : "", q->len, q->srv->opt->max_body, &plain, &len, why);
    if (rc == API_GZ_OK) {
        free(q->body);
        q->body = plain;
        q->len = q->cap = len;
        return 0;
    }
    char msg[256];
    snprintf(msg, sizeof msg, "%s%s", why,
             rc == API_GZ_TOO_LARGE ? " (--max-body applies to the inflated body)" : "");
    store_error(&q->reply, rc == API_GZ_TOO_LARGE ? API_E_TOO_LARGE
                           : rc == API_GZ_NOMEM   ? API_E_OUT_OF_MEMORY
                                                  : API_E_INVALID_GZIP, msg);
    return -1;
}

/* The reply in gzip when the client takes it and it is worth it; kept as
 * it is if compressing fails. */
static void compress_reply(request *q) {
    const srv_options *o = q->srv->opt;
    api_buf *b = &q->reply.body;
    if (!q->gzip_ok || o->gzip_level <= 0 || !b->data || b->failed ||
        api_reply_length(&q->reply) < o->gzip_min_size)
        return;
    double t0 = now_s();
    if (api_reply_flatten(&q->reply) != 0) return; /* sent as it is */
    api_buf z = {0};
    if (api_gzip(b->data, b->len, o->gzip_level, &z) != 0) return;
    api_buf_free(b);
    *b = z;
    q->gzipped = 1;
    q->ms_gzip = (now_s() - t0) * 1e3;
}

/* The worker's last steps: the reply is ready for the I/O thread. */
static void finish_job(request *q) {
    free(q->body);
    q->body = NULL;
    compress_reply(q);
    atomic_store(&q->ph, PH_DONE);
    MHD_resume_connection(q->conn);
}

/* Runs on a worker thread. The reservation is released when the reply has
 * been sent (on_completed). */
/* The server's limits with what this request's Accept header prefers. */
static api_limits request_limits(const request *q) {
    api_limits lim = q->srv->limits;
    lim.prefer_format = q->want_format;
    lim.refuse_formats = q->refuse_formats;
    return lim;
}

static api_endpoint ep_of(const request *q) {
    api_endpoint ep = API_EP_SIMPLE;
    srv_route_endpoint(q->route, &ep);
    return ep;
}

/* A piece of a reply sent while it is written: the first starts the reply,
 * which may run `ahead` bytes ahead of the client; a client that reads
 * nothing for --timeout seconds loses it. */
static int piece(request *q, char *data, size_t len, size_t ahead) {
    if (q->stream) { /* a client not reading: its generation is parked, the others go on */
        int park = q->member && srv_stream_full(q->stream);
        if (park) srv_batch_away(q->srv->batch, q->member);
        int rc = srv_stream_push(q->stream, data, len);
        if (park) srv_batch_back(q->srv->batch, q->member);
        return rc;
    }
    q->stream = srv_stream_create(q->conn, data, len, ahead, (double)q->srv->opt->timeout,
                                  &q->srv->stopping);
    if (!q->stream) return -1; /* the reply fails before it began: a 503, sent whole */
    atomic_store(&q->ph, PH_STREAMING);
    MHD_resume_connection(q->conn);
    return 0;
}

/* The worker's api_limits.stream: two pieces ahead of the client at most. */
static int stream_piece(void *ctx, char *data, size_t len) {
    request *q = ctx;
    return piece(q, data, len, 2 * q->stream_piece);
}

/* api_limits.events: a generation's events, each as it comes. */
static int events_piece(void *ctx, char *data, size_t len) {
    request *q = ctx;
    q->events = 1;
    return piece(q, data, len, SRV_EVENTS_AHEAD);
}

/* api_limits.token, after each step of a generation: the metrics, the
 * client (gone: stop), the clock (a whole reply's generation ends at the
 * request's deadline, --timeout; a stream's goes on while its client
 * reads), the server (stopping), and a turn for the others. */
static int gen_token(void *ctx, int n, double ms) {
    request *q = ctx;
    srv_metrics_tokens(n, ms / 1e3);
    if (n > 0 && !q->first_token) {
        q->first_token = 1;
        srv_metrics_first_token(seconds_since(&q->t0));
    }
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(q->conn, MHD_CONNECTION_INFO_CONNECTION_FD);
    if (atomic_load(&q->gone) || (ci && srv_gen_peer_gone(ci->connect_fd))) {
        atomic_store(&q->gone, 1);
        return API_TOKEN_GONE;
    }
    if (atomic_load(&q->srv->stopping) || srv_gen_is_stopping(q->srv->gen) ||
        (!q->stream && now_s() > q->deadline))
        return API_TOKEN_TIMEOUT;
    if (q->gen && !q->member) srv_gen_yield(q->srv->gen);
    return API_TOKEN_GO;
}

static int stopped(void *ctx);

/* api_limits.decode and away: a generation's steps batched (batch.h). The
 * step runs without this request's cancellation check: the thread that
 * leads it computes the others' rows too, which must not stop because this
 * client has gone (gen_token stops this generation after the step). */
static int gen_decode(void *ctx, struct attn_lm_cache *cache, const void *params,
                      const int32_t *tokens, float *logits, int vocab, struct attn_pool *pool,
                      void *err) {
    request *q = ctx;
    attn_cancel_set(NULL, NULL);
    int rc = srv_batch_decode(q->srv->batch, q->member, cache, params, tokens, logits, vocab, pool,
                              err);
    attn_cancel_set(stopped, q);
    return rc;
}

static void gen_away(void *ctx) {
    request *q = ctx;
    srv_batch_away(q->srv->batch, q->member);
}

static void request_free(request *q) {
    srv_budget_release(q->srv->budget, &q->held);
    api_reply_free(&q->reply);
    free(q->body);
    if (q->stream) srv_stream_release(q->stream); /* the request's hold */
    free(q);
}

/* The worker's last steps for a streamed reply: the rest of the body, or a
 * cut if it failed after it had begun. The connection may finish as soon as
 * the stream ends: q is then the I/O thread's to free, unless it finished
 * first. */
static void finish_stream(request *q) {
    free(q->body);
    q->body = NULL;
    int ok = q->reply.status == 200 || q->events; /* an event stream ends with its error event */
    if (ok && q->reply.body.len) {
        ok = srv_stream_push(q->stream, q->reply.body.data, q->reply.body.len) == 0;
        q->reply.body = (api_buf){0};
    }
    if (srv_stream_end(q->stream, ok)) request_free(q);
}

/* The reply replaced by an error (msg may be q's own text). */
static void replace_reply(request *q, api_error err, const char *msg) {
    char copy[256];
    snprintf(copy, sizeof copy, "%s", msg);
    api_reply_free(&q->reply);
    q->reply = (api_reply){0};
    store_error(&q->reply, err, copy);
}

/* attn_cancel_set's check, asked by every item of the computation: its
 * client has gone (conns.h), or the server must end (srv_http_stop_computing). */
static int stopped(void *ctx) {
    const request *q = ctx;
    return atomic_load(&q->gone) || atomic_load(&q->srv->stopping);
}

/* api_handle with the server's limits, on this worker. */
static void run_api(request *q, api_endpoint ep) {
    const srv_options *o = q->srv->opt;
    api_limits lim = request_limits(q);
    lim.zero_copy = 1;
    /* Streamed: the text is sent while it is written, and each piece
     * freed once sent. For a 197 MB map the first byte came 130 ms
     * sooner and the peak memory was 139 MB lower, but Python's
     * http.client, which reads a body of unknown length a chunk (16
     * KiB here) at a time, took 68 % longer. Hence a default of 128 MiB:
     * streaming for the replies whose text is the memory risk (README,
     * "Binary tensors"). */
    size_t min = o->stream_min_size;
    if (min && (!q->gzip_ok || o->gzip_level <= 0)) {
        lim.stream = stream_piece;
        lim.stream_ctx = q;
        lim.stream_above = min;
        lim.stream_piece = min < SRV_STREAM_PIECE ? min : SRV_STREAM_PIECE;
        q->stream_piece = lim.stream_piece;
    }
    lim.reserve = reserve_rest;
    lim.reserve_ctx = q;
    lim.token = gen_token;   /* a generation's steps (gen.h) */
    lim.events = events_piece;
    lim.gen_ctx = q;
    lim.defer_generation = !q->gen; /* found by the parse here: to the generation threads */
    attn_cancel_set(stopped, q);
    if (q->gen && q->srv->batch) q->member = srv_batch_join(q->srv->batch);
    if (q->member) lim.decode = gen_decode, lim.away = gen_away;
    else if (q->gen) srv_gen_enter(q->srv->gen); /* its turn: generations take them in order */
    api_handle(ep, q->body ? q->body : "", q->len, &lim, &q->reply);
    if (q->member) srv_batch_leave(q->srv->batch, q->member);
    else if (q->gen) srv_gen_leave(q->srv->gen);
    q->member = NULL;
    attn_cancel_set(NULL, NULL);
}

static void compute_job(void *arg);

/* A generation that the parse on a compute worker found (a body too large
 * or gzip for the I/O thread): queued on the generation threads, which run
 * compute_job again. 1 when queued; 0 with a 503 stored when their queue is
 * full, or when it is no such request. */
static int to_generation_threads(request *q) {
    if (q->gen || q->reply.status != 0 || !q->reply.generation) return 0;
    q->gen = 1;
    q->reply = (api_reply){0};
    if (srv_gen_submit(q->srv->gen, compute_job, q) == 0) return 1;
    store_error(&q->reply, API_E_OVERLOADED, "every generation thread is busy and their queue is "
                "full (--max-streams, --max-queue); retry later");
    return 0;
}

static void compute_job(void *arg) {
    request *q = arg;
    srv_http *s = q->srv;
    q->deadline = now_s() + s->opt->timeout;
    if (atomic_load(&s->stopping)) { /* queued past the drain's deadline */
        store_error(&q->reply, API_E_DRAINING, "the server stopped before this request was "
                    "computed (--drain-timeout)");
        finish_job(q);
        return;
    }
    if (q->gzip_body && inflate_body(q) != 0) {
        finish_job(q);
        return;
    }
    q->gzip_body = 0; /* inflated: a generation found below runs on it as it is */
    /* The body is held already (begin, take_chunk); the estimate counts it. */
    size_t parse = srv_budget_parse_estimate(q->body ? q->body : "", q->len);
    parse = parse > q->held ? parse - q->held : 0;
    srv_budget_result r = srv_budget_reserve(s->budget, &q->held, parse, q->deadline);
    if (r == SRV_BUDGET_OK) {
        run_api(q, ep_of(q));
        if (to_generation_threads(q)) return;
    } else {
        char msg[256];
        budget_message(q, r, parse, msg, sizeof msg);
        store_error(&q->reply, r == SRV_BUDGET_NEVER ? API_E_TOO_LARGE : API_E_OVERLOADED, msg);
    }
    /* More than the whole budget is no reason to retry: 413, not the api's
     * 503 with Retry-After. */
    if (q->budget_never && !q->stream)
        replace_reply(q, API_E_TOO_LARGE, q->never_msg);
    else if (stopped(q) && !q->stream && q->reply.status != 200)
        replace_reply(q, API_E_DRAINING, atomic_load(&s->stopping)
                      ? "the server stopped before this request's computation ended (--drain-timeout)"
                      : "the computation stopped: its client closed the connection");
    if (q->stream) finish_stream(q);
    else finish_job(q);
}

/* The body is complete: answer, or hand it to a worker. */
static enum MHD_Result answer(request *q) {
    srv_http *s = q->srv;
    if (strcmp(q->method, "OPTIONS") == 0) return respond(q, 204, NULL, (char *)"", 0, 0);
    if (q->route > SRV_R_LAST_COMPUTE) return answer_get(q);

    if (atomic_load(&q->ph) == PH_DONE) {
        int status = q->reply.status ? q->reply.status : 500;
        const char *type = q->reply.content_type ? q->reply.content_type : "application/json";
        if (q->reply.n_parts) return respond_parts(q, status, type);
        return respond_body(q, status, type, &q->reply.body);
    }
    if (atomic_load(&q->ph) == PH_STREAMING) {
        if (q->status) return MHD_YES; /* queued already */
        return respond_stream(q);
    }
    if (atomic_load(&q->ph) == PH_WORKING) return MHD_YES;   /* not resumed yet */
    if (q->too_large)
        return respond_error(q, API_E_TOO_LARGE, NULL,
                             "request body exceeds the limit of %zu bytes (--max-body)",
                             s->opt->max_body);
    if (q->no_memory) return respond(q, 500, "application/json", (char *)oom_body, sizeof oom_body - 1, 0);
    if (q->bad_encoding) {
        const char *ce = MHD_lookup_connection_value(q->conn, MHD_HEADER_KIND,
                                                     MHD_HTTP_HEADER_CONTENT_ENCODING);
        return respond_error(q, API_E_UNSUPPORTED_ENCODING, NULL,
                             "Content-Encoding '%.40s' is not supported: send the body as "
                             "gzip or uncompressed (identity)", ce ? ce : "");
    }

    /* A small request is answered here on the I/O thread, when its plan is
     * tiny too (microseconds of work): no hand-off to a worker and back.
     * Its memory is not reserved in the budget: at most one per I/O
     * thread, each under SRV_INLINE_MAX_ELEMENTS. A generation, as the
     * parse finds it, goes to the generation threads (gen.h); a larger
     * body is parsed on a compute worker, which hands a generation over. */
    q->gen = 0;
    if (q->len <= SRV_INLINE_MAX_BODY && !q->gzip_body) {
        api_limits lim = request_limits(q);
        lim.defer_above = SRV_INLINE_MAX_ELEMENTS;
        lim.defer_generation = 1;
        if (api_handle(ep_of(q), q->body ? q->body : "", q->len, &lim, &q->reply) != 0) {
            free(q->body);
            q->body = NULL;
            compress_reply(q);
            atomic_store(&q->ph, PH_DONE);
            int status = q->reply.status;
            return respond_body(q, status, q->reply.content_type, &q->reply.body);
        }
        q->gen = q->reply.generation;
        q->reply = (api_reply){0};
    }

    /* Suspend before the job can resume us; if the queue is full, resume at
     * once with a 503 stored as the reply. */
    atomic_store(&q->ph, PH_WORKING);
    MHD_suspend_connection(q->conn);
    if ((q->gen ? srv_gen_submit(s->gen, compute_job, q) : srv_pool_submit(s->pool, compute_job, q)) != 0) {
        store_error(&q->reply, API_E_OVERLOADED, q->gen
                    ? "every generation thread is busy and their queue is full (--max-streams, "
                      "--max-queue); retry later"
                    : "every worker is busy and the queue is full (--max-queue); retry later");
        atomic_store(&q->ph, PH_DONE);
        MHD_resume_connection(q->conn);
    }
    return MHD_YES;
}

/* Before an early reply: keep reading the socket after libmicrohttpd has
 * closed it, so that the client gets the reply instead of a reset. */
static void linger_after_reply(request *q) {
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(q->conn, MHD_CONNECTION_INFO_CONNECTION_FD);
    if (ci) srv_linger_add(q->srv->linger, ci->connect_fd);
}

/* 404 for an unknown path, 405 for a method the path does not take. */
static enum MHD_Result answer_unrouted(request *q) {
    if (q->route == SRV_R_UNKNOWN) {
        char paths[600];
        srv_route_list(paths, sizeof paths, "; ");
        return respond_error(q, API_E_NOT_FOUND, NULL, "no such path: %.200s (this server answers %s)",
                             q->path, paths);
    }
    return respond_error(q, API_E_METHOD_NOT_ALLOWED, NULL, "%.15s is not allowed on %s; allowed: %s",
                         q->method, q->path, srv_route_allow(q->route));
}

/* The head announces a body (a Content-Length other than 0, or chunks). */
static int declares_body(struct MHD_Connection *conn) {
    const char *cl = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
    return (cl && strcmp(cl, "0") != 0) ||
           MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_TRANSFER_ENCODING);
}

/* A head whose framing is unsound (framing.h): the JSON error, and the
 * connection closed after it, the rest of the upload read and dropped. */
static enum MHD_Result answer_framing(request *q, const srv_framing *f) {
    q->framing_error = 1;
    srv_log("%s %s: %s", q->method, q->path, f->message);
    linger_after_reply(q);
    api_buf b;
    if (srv_framing_body(f, &b) != 0) api_buf_free(&b); /* respond_body: 500 */
    if (!b.data || b.failed) return respond_body(q, f->status, "application/json", &b);
    struct MHD_Response *r =
        MHD_create_response_from_buffer_with_free_callback(b.len, b.data, free);
    if (!r) {
        api_buf_free(&b);
        return MHD_NO;
    }
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONNECTION, "close");
    return respond_with(q, f->status, "application/json", r, b.len);
}

/* The state of a request whose line has arrived (the URI log callback, or
 * the handler's first call when that one could not allocate). */
static request *new_request(srv_http *s, struct MHD_Connection *conn, const char *uri) {
    request *q = calloc(1, sizeof *q);
    if (!q) return NULL;
    clock_gettime(CLOCK_MONOTONIC, &q->t0);
    q->srv = s;
    q->conn = conn;
    snprintf(q->method, sizeof q->method, "-");
    q->m = SRV_M_OTHER;
    uri = srv_route_path_of(uri);
    snprintf(q->path, sizeof q->path, "%.*s", (int)strcspn(uri, "?"), uri);
    q->route = srv_route_find(q->path);
    atomic_init(&q->ph, PH_READING);
    srv_metrics_in_flight_add(1);
    return q;
}

/* MHD_OPTION_URI_LOG_CALLBACK: the request line is in; what it returns is
 * the request's *req_cls. Listed until its handler is called (mhd_errors.h). */
static void *on_uri(void *cls, const char *uri, struct MHD_Connection *conn) {
    request *q = new_request(cls, conn, uri ? uri : "");
    if (q) srv_heads_add(&q->head, conn);
    return q;
}

/* Writes a whole JSON error reply for f on q's socket ourselves, where
 * libmicrohttpd cannot queue one, and shuts the socket for writing: what
 * libmicrohttpd still sends then fails and it closes the connection; the
 * lingering close reads what the client still sends. A reply this small
 * fits in the socket's send buffer: nothing of the request's reply has
 * been sent before it. */
static void send_raw_error(request *q, const srv_framing *f) {
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(q->conn, MHD_CONNECTION_INFO_CONNECTION_FD);
    api_buf body;
    if (!ci || srv_framing_body(f, &body) != 0 || !body.data) {
        api_buf_free(&body);
        return; /* libmicrohttpd closes the connection without a reply */
    }
    char head[256];
    int n = snprintf(head, sizeof head, "HTTP/1.1 %d %s\r\nContent-Type: application/json\r\n"
                     "Content-Length: %zu\r\n%sConnection: close\r\n\r\n", f->status,
                     f->status == 413   ? "Content Too Large"
                     : f->status == 503 ? "Service Unavailable"
                                        : "Bad Request",
                     body.len, f->status == 503 ? "Retry-After: 1\r\n" : "");
    struct iovec iov[2] = {{head, (size_t)n}, {body.data, body.len}};
    struct msghdr m = {.msg_iov = iov, .msg_iovlen = 2};
    ssize_t w = sendmsg(ci->connect_fd, &m, MSG_NOSIGNAL | MSG_DONTWAIT);
    api_buf_free(&body);
    shutdown(ci->connect_fd, SHUT_WR);
    srv_linger_add(q->srv->linger, ci->connect_fd);
    q->status = f->status;
    q->bytes_out = w > 0 ? (size_t)w : 0;
    q->framing_error = 1;
}

/* A request libmicrohttpd was about to answer with its own page
 * (mhd_errors.h): our reply goes first. */
static void answer_for_mhd(srv_head *h, const srv_framing *f, void *ctx) {
    (void)ctx;
    request *q = (request *)h;
    srv_log("%s: %s", q->path, f->message);
    send_raw_error(q, f);
}

/* A body the memory budget cannot take now (503, Retry-After) or ever
 * (413: retrying would not help). The body counts in the budget from its
 * first byte (a thousand uploads of 64 MiB are 64 GiB), reserved on the I/O
 * thread without waiting. */
static void no_room_error(const request *q, srv_budget_result r, size_t bytes, srv_framing *f) {
    if (r == SRV_BUDGET_NEVER)
        srv_framing_fail(f, API_E_TOO_LARGE, "a request body of %.0f MiB is more than the "
                         "server's whole memory budget of %.0f MiB (--max-memory)",
                         mib(bytes), budget_mib(q));
    else
        srv_framing_fail(f, API_E_OVERLOADED, "no memory for a request body of %.0f MiB now "
                         "(memory budget %.0f MiB, --max-memory); retry later",
                         mib(bytes), budget_mib(q));
}

static enum MHD_Result answer_no_room(request *q, srv_budget_result r, size_t bytes) {
    srv_framing f;
    no_room_error(q, r, bytes, &f);
    return respond_error(q, f.err, NULL, "%s", f.message);
}

/* The first call: state, route, method check, early 413. */
static enum MHD_Result begin(srv_http *s, struct MHD_Connection *conn, const char *url,
                             const char *method, const char *version, void **req_cls) {
    request *q = *req_cls ? *req_cls : new_request(s, conn, url);
    if (!q) return MHD_NO;
    srv_heads_remove(&q->head);
    q->begun = 1;
    snprintf(q->method, sizeof q->method, "%s", method);
    q->m = srv_method_of(method);
    url = srv_route_path_of(url); /* absolute form: the path in it */
    snprintf(q->path, sizeof q->path, "%s", url);
    q->route = srv_route_find(url);
    *req_cls = q;
    srv_conns_head_done(s->conns, conn);

    srv_framing f;
    srv_framing_check(conn, version, method, &f);
    int unrouted = q->route == SRV_R_UNKNOWN || !srv_route_allows(q->route, method);
    if (f.status && !(f.status == 411 && unrouted)) return answer_framing(q, &f);
    /* A body is coming, or may be (411): refuse now, rather than after
     * "100 Continue" and the whole upload, and close the connection. */
    if (unrouted && (f.status || declares_body(conn))) {
        linger_after_reply(q);
        return answer_unrouted(q);
    }
    if (q->route > SRV_R_LAST_COMPUTE || strcmp(method, "POST") != 0) return MHD_YES;
    /* Read and dropped like an oversized body; 415 once it is in. */
    srv_coding coding = srv_content_coding(
        MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_ENCODING));
    q->bad_encoding = coding == SRV_CODING_OTHER;
    q->gzip_body = coding == SRV_CODING_GZIP;
    q->gzip_ok = srv_accepts_gzip(
        MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_ACCEPT_ENCODING));
    const char *accept = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_ACCEPT);
    q->want_format = preferred_format(accept);
    q->refuse_formats = refused_formats(accept);
    const char *cl = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
    if (!cl) return MHD_YES;   /* chunked: checked while reading */
    errno = 0;
    char *end;
    unsigned long long n = strtoull(cl, &end, 10);
    if (errno || *end || n > s->opt->max_body) {
        /* Answering now makes libmicrohttpd skip "100 Continue", discard the
         * body and close the connection after the reply; the lingering close
         * reads what the client still sends. */
        q->too_large = 1;
        linger_after_reply(q);
        return respond_error(q, API_E_TOO_LARGE, NULL,
                             "request body of %s bytes exceeds the limit of %zu bytes (--max-body)",
                             cl, s->opt->max_body);
    }
    if (n > 0) {
        srv_budget_result r = srv_budget_reserve(s->budget, &q->held, (size_t)n, 0.0);
        if (r != SRV_BUDGET_OK) {
            linger_after_reply(q);
            return answer_no_room(q, r, (size_t)n);
        }
        q->body = malloc((size_t)n);
        if (q->body) q->cap = (size_t)n;
    }
    return MHD_YES;
}

/* Appends a body chunk, or counts and drops it. Returns MHD_NO to close the
 * connection when a client keeps sending far past the limit. */
static enum MHD_Result take_chunk(request *q, const char *data, size_t size) {
    size_t max = q->srv->opt->max_body;
    q->bytes_in += size;
    int keep = q->route <= SRV_R_LAST_COMPUTE && strcmp(q->method, "POST") == 0 && !q->bad_encoding;
    if (keep && !q->too_large && !q->no_memory) {
        if (size > max - q->len) {
            q->too_large = 1;
        } else if (q->len + size > q->cap) {
            size_t need = q->len + size, cap = q->cap ? q->cap : 65536;
            while (cap < need) cap = cap > max / 2 ? max : cap * 2;
            srv_budget *budget = q->srv->budget;
            srv_budget_result r = srv_budget_reserve(budget, &q->held, cap - q->cap, 0.0);
            if (r != SRV_BUDGET_OK && cap > need) { /* without the doubling's slack */
                cap = need;
                r = srv_budget_reserve(budget, &q->held, cap - q->cap, 0.0);
            }
            if (r != SRV_BUDGET_OK) {
                srv_framing f;
                no_room_error(q, r, need, &f);
                send_raw_error(q, &f);
                return MHD_NO;
            }
            char *b = realloc(q->body, cap);
            if (!b) {
                q->no_memory = 1;
            } else {
                q->body = b;
                q->cap = cap;
            }
        }
        if (!q->too_large && !q->no_memory) {
            memcpy(q->body + q->len, data, size);
            q->len += size;
        }
        if (q->too_large || q->no_memory) {
            free(q->body);
            q->body = NULL;
            q->len = q->cap = 0;
        }
    }
    /* Over the limit (only a chunked body can be: a Content-Length over it
     * was refused at once): the 413 now, whatever follows. libmicrohttpd
     * cannot queue a reply in the middle of a body, so it is written here
     * and the connection closed (MHD_NO). */
    if (q->too_large && keep) {
        srv_framing f;
        srv_framing_fail(&f, API_E_TOO_LARGE, "request body exceeds the limit of %zu bytes "
                         "(--max-body)", max);
        send_raw_error(q, &f);
        return MHD_NO;
    }
    /* A body read only to be dropped (415): at most another max_body (at
     * least 1 MiB) past the limit, then we hang up. */
    size_t slack = max < ((size_t)1 << 20) ? ((size_t)1 << 20) : max;
    if (q->bytes_in > max && q->bytes_in - max > slack) return MHD_NO;
    return MHD_YES;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
                                  const char *method, const char *version,
                                  const char *upload_data, size_t *upload_data_size,
                                  void **req_cls) {
    request *q = *req_cls;
    if (!q || !q->begun) return begin(cls, conn, url, method, version, req_cls);
    if (*upload_data_size) {
        enum MHD_Result r = take_chunk(q, upload_data, *upload_data_size);
        *upload_data_size = 0;
        return r;
    }
    srv_conns_body_done(q->srv->conns, conn, &q->gone);
    if (q->route == SRV_R_UNKNOWN || !srv_route_allows(q->route, q->method))
        return answer_unrouted(q);
    return answer(q);
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **req_cls,
                         enum MHD_RequestTerminationCode toe) {
    srv_http *s = cls;
    request *q = *req_cls;
    if (!q) return;
    srv_heads_remove(&q->head);
    srv_conns_reply_done(s->conns, conn);
    double sec = seconds_since(&q->t0);
    static const char *const why[] = {
        [MHD_REQUEST_TERMINATED_COMPLETED_OK] = NULL,
        [MHD_REQUEST_TERMINATED_WITH_ERROR] = "aborted:error",
        [MHD_REQUEST_TERMINATED_TIMEOUT_REACHED] = "aborted:timeout",
        [MHD_REQUEST_TERMINATED_DAEMON_SHUTDOWN] = "aborted:shutdown",
        [MHD_REQUEST_TERMINATED_READ_ERROR] = "aborted:read-error",
        [MHD_REQUEST_TERMINATED_CLIENT_ABORT] = "aborted:client",
    };
    const char *note = (unsigned)toe < sizeof why / sizeof why[0] ? why[toe] : "aborted";
    if (q->framing_error) note = NULL; /* answered, then closed on purpose */
    if (q->stream) q->bytes_out = srv_stream_sent(q->stream);
    if (toe != MHD_REQUEST_TERMINATED_COMPLETED_OK && q->measured) { /* cut short: what arrived */
        const union MHD_ConnectionInfo *ci =
            MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
        if (ci) q->bytes_out = srv_delivered(srv_tcp_acked(ci->connect_fd), q->wire_before,
                                             q->head_len, q->bytes_out);
    }
    if (q->status) srv_metrics_request(q->route, q->m, q->status, sec, q->bytes_in, q->bytes_out);
    else srv_metrics_aborted(q->route, q->m);
    if (s->opt->access_log)
        srv_log_access(q->method, q->path, q->status, q->bytes_in, q->bytes_out, sec * 1e3, note);
    srv_metrics_in_flight_add(-1);
    *req_cls = NULL;
    /* A reply still being written: its worker frees the request. */
    if (q->stream && !srv_stream_detach(q->stream)) return;
    request_free(q);
}

static void on_mhd_log(void *cls, const char *fmt, va_list ap) {
    (void)cls;
    char msg[512];
    vsnprintf(msg, sizeof msg, fmt, ap);
    size_t n = strlen(msg);
    while (n && (msg[n - 1] == '\n' || msg[n - 1] == '\r')) msg[--n] = '\0';
    srv_log("libmicrohttpd: %s", msg);
    srv_heads_on_log(msg, answer_for_mhd, cls);
}

/* ==== Daemon ============================================================ */

/* The whole reply to a connection over --max-connections, which the
 * acceptor writes itself: 503, JSON, Retry-After, and the connection closed. */
static int make_refusal(srv_http *s) {
    char msg[160];
    snprintf(msg, sizeof msg, "the server has %d connections open, its limit "
             "(--max-connections); retry later", s->opt->max_connections);
    api_buf b = {0};
    int rc = api_error_reply(&b, API_E_OVERLOADED, msg, NULL);
    int n = rc == 0 && b.data ? snprintf(s->refusal, sizeof s->refusal,
                     "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n"
                     "Content-Length: %zu\r\nRetry-After: 1\r\nConnection: close\r\n\r\n%.*s",
                     b.len, (int)b.len, b.data) : -1;
    api_buf_free(&b);
    if (n < 0 || (size_t)n >= sizeof s->refusal) {
        srv_log("cannot make the reply to connections over --max-connections");
        return -1;
    }
    s->refusal_len = (size_t)n;
    return 0;
}

/* libmicrohttpd's own limit, which it splits evenly between its I/O
 * threads and hands connections to them by descriptor number: each thread
 * may hold every connection, and a few it is closing (reported closed, not
 * yet counted out). */
static unsigned mhd_connection_limit(const srv_options *opt) {
    unsigned per_thread = (unsigned)opt->max_connections + (unsigned)opt->io_threads + 16;
    return per_thread * (unsigned)opt->io_threads;
}

/* Stops what srv_http_start started besides libmicrohttpd (NULL-safe). */
static void stop_helpers(srv_http *s) {
    srv_gen_destroy(s->gen); /* runs what is queued: every connection resumed */
    s->gen = NULL;
    srv_batch_destroy(s->batch); /* every generation has left */
    s->batch = NULL;
    srv_conns_stop(s->conns);
    s->conns = NULL;
    srv_linger_stop(s->linger);
    s->linger = NULL;
    srv_budget_destroy(s->budget);
    s->budget = NULL;
    srv_static_doc_free(&s->openapi);
    srv_static_doc_free(&s->viewer);
}

/* The api's limits every request starts from. */
static void base_limits(srv_http *s, const srv_options *opt, attn_pool *compute,
                        const api_models *models, size_t budget) {
    s->limits.max_elements = opt->max_elements ? opt->max_elements : srv_budget_max_elements(budget);
    s->limits.max_work = (double)opt->max_work;
    s->limits.compute = compute;
    s->limits.tokenizers = opt->loaded_tokenizers;
    s->limits.n_tokenizers = (size_t)opt->n_tokenizers;
    s->limits.models = models;
    s->limits.max_new_tokens = opt->max_new_tokens;
}

int srv_http_start(srv_http *s, const srv_options *opt, srv_pool *pool, attn_pool *compute,
                   const api_models *models) {
    memset(s, 0, sizeof *s);
    s->opt = opt;
    s->pool = pool;
    s->started = (long long)time(NULL);
    atomic_init(&s->draining, 0);
    atomic_init(&s->stopping, 0);
    char why[160];
    if (srv_cors_parse(&s->cors, opt->cors_origin, why, sizeof why) != 0) {
        srv_log("--cors-origin: %s", why);
        return -1;
    }
    if (srv_static_doc_make(&s->openapi, api_openapi_json(), opt->gzip_level, opt->gzip_min_size) ||
        srv_static_doc_make(&s->viewer, srv_viewer_html(), opt->gzip_level, opt->gzip_min_size)) {
        srv_log("cannot compress the static documents");
        stop_helpers(s);
        return -1;
    }
    size_t budget = opt->max_memory;
    snprintf(why, sizeof why, "--max-memory");
    if (!budget) budget = srv_budget_default(why, sizeof why);
    base_limits(s, opt, compute, models, budget);
    /* The lingering close reads up to 4 bodies' worth (at least 16 MiB). */
    size_t linger_bytes = opt->max_body > SIZE_MAX / 4 ? SIZE_MAX : opt->max_body * 4;
    if (linger_bytes < ((size_t)16 << 20)) linger_bytes = (size_t)16 << 20;
    /* workers, their compute helpers, I/O threads, the acceptor and main */
    srv_budget_tune_malloc(budget, 2 * opt->threads + opt->io_threads + 2);
    s->budget = srv_budget_create(budget);
    s->linger = srv_linger_start(linger_bytes, opt->max_connections < 1024 ? opt->max_connections : 1024);
    s->conns = srv_conns_start(opt->timeout, opt->max_connections);
    s->gen = srv_gen_create(opt->max_streams, opt->max_queue, opt->threads);
    s->batch = opt->batch ? srv_batch_create(64) : NULL;
    if (!s->budget || !s->linger || !s->conns || !s->gen || (opt->batch && !s->batch)) {
        srv_log("cannot start the memory budget, the lingering close or the connection watch");
        goto fail;
    }
    srv_log("memory budget for requests: %.0f MiB (%s)", (double)budget / (1 << 20), why);
    if (make_refusal(s) != 0) goto fail;
    srv_acceptor_fd_room(opt->max_connections);
    if (srv_acceptor_listen(&s->acceptor, opt->host, opt->port) != 0) goto fail;
    s->port = s->acceptor.port;

    /* No listening socket of MHD's own: the acceptor hands connections over
     * (see acceptor.h); MHD_USE_ITC wakes the I/O thread that gets one. */
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME |
                     MHD_USE_ITC | MHD_USE_ERROR_LOG | MHD_USE_NO_LISTEN_SOCKET;
    s->daemon = MHD_start_daemon(
        flags, 0, NULL, NULL, on_request, s,
        MHD_OPTION_EXTERNAL_LOGGER, on_mhd_log, NULL,   /* first, to catch every message */
        MHD_OPTION_THREAD_POOL_SIZE, (unsigned)opt->io_threads,
        /* Never reached (conns.h): the acceptor keeps to --max-connections,
         * and each I/O thread may take all of them and a few closing. */
        MHD_OPTION_CONNECTION_LIMIT, mhd_connection_limit(opt),
        /* libmicrohttpd zeroes a connection's memory pool for every request:
         * its default 32 KiB was a fifth of the instructions of a small
         * request (callgrind). 16 KiB still holds any browser's headers. */
        MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)16384,
        MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)opt->timeout,
        MHD_OPTION_NOTIFY_COMPLETED, on_completed, s,
        MHD_OPTION_URI_LOG_CALLBACK, on_uri, s,
        MHD_OPTION_NOTIFY_CONNECTION, srv_conns_notify, s->conns,
        MHD_OPTION_END);
    if (!s->daemon) {
        srv_log("cannot start the HTTP daemon (%d I/O threads)", opt->io_threads);
        srv_acceptor_close(&s->acceptor);
        goto fail;
    }
    if (srv_acceptor_start(&s->acceptor, s->daemon, s->conns, s->linger, s->refusal,
                           s->refusal_len) != 0) {
        srv_acceptor_close(&s->acceptor);
        MHD_stop_daemon(s->daemon);
        s->daemon = NULL;
        goto fail;
    }
    return 0;
fail:
    stop_helpers(s);
    return -1;
}

void srv_http_stop_computing(srv_http *s) {
    atomic_store(&s->stopping, 1);
    srv_budget_stop(s->budget);
}

void srv_http_quiesce(srv_http *s) {
    atomic_store(&s->draining, 1);
    srv_acceptor_close(&s->acceptor);
}

unsigned srv_http_connections(srv_http *s) {
    if (!s->daemon) return 0;
    const union MHD_DaemonInfo *i = MHD_get_daemon_info(s->daemon, MHD_DAEMON_INFO_CURRENT_CONNECTIONS);
    return i ? i->num_connections : 0;
}

void srv_http_stop(srv_http *s) {
    srv_acceptor_close(&s->acceptor);
    srv_gen_stopping(s->gen);   /* generations end at their next token... */
    srv_gen_destroy(s->gen);    /* ...and reply; queued ones run: connections resumed */
    s->gen = NULL;
    if (s->daemon) MHD_stop_daemon(s->daemon);
    s->daemon = NULL;
    stop_helpers(s);
}
