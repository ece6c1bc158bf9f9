/* http.c - libmicrohttpd handlers, see http.h for the thread model.
 *
 * Per-request state lives in *req_cls: the first handler call sets it up
 * (and answers 413 at once when Content-Length is over --max-body), body
 * chunks are appended with a cap, the last call answers or hands the body to
 * a worker. Cleanup is in the completion callback, which also runs for
 * aborted requests and writes the access log line.
 */
#include "http.h"

#include <errno.h>
#include <microhttpd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "acceptor.h"
#include "info.h"
#include "log.h"
#include "metrics.h"
#include "route.h"

/* Replies used when memory is short: built without allocating. */
static const char oom_body[] =
    "{\"error\":{\"status\":500,\"code\":\"out_of_memory\","
    "\"message\":\"the server is out of memory\",\"field\":null}}";
static const char ok_body[] = "{\"status\":\"ok\"}";

typedef enum { PH_READING, PH_WORKING, PH_DONE } phase;

typedef struct {
    srv_http *srv;
    struct MHD_Connection *conn;
    srv_route route;
    char method[16];
    char path[256];
    struct timespec t0;
    char *body;              /* the POST body, len bytes of cap */
    size_t len, cap;
    size_t bytes_in;         /* body bytes received, kept or not */
    int too_large, no_memory;
    _Atomic phase ph;        /* PH_DONE is set by the worker before it resumes */
    api_reply reply;         /* the worker's result */
    int status;              /* what was queued; 0 if nothing */
    size_t bytes_out;
} request;

static double seconds_since(const struct timespec *t0) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)(t.tv_sec - t0->tv_sec) + (double)(t.tv_nsec - t0->tv_nsec) / 1e9;
}

/* ==== Replies =========================================================== */

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
    const srv_options *o = q->srv->opt;
    if (content_type) MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, content_type);
    if (o->cors_origin[0]) {
        MHD_add_response_header(r, MHD_HTTP_HEADER_ACCESS_CONTROL_ALLOW_ORIGIN, o->cors_origin);
        if (strcmp(o->cors_origin, "*") != 0) MHD_add_response_header(r, MHD_HTTP_HEADER_VARY, "Origin");
    }
    if (status == MHD_HTTP_METHOD_NOT_ALLOWED || status == MHD_HTTP_NO_CONTENT)
        MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, srv_route_allow(q->route));
    if (status == MHD_HTTP_SERVICE_UNAVAILABLE) MHD_add_response_header(r, MHD_HTTP_HEADER_RETRY_AFTER, "1");
    if (status == MHD_HTTP_NO_CONTENT) {
        MHD_add_response_header(r, "Access-Control-Allow-Methods", srv_route_allow(q->route));
        MHD_add_response_header(r, "Access-Control-Allow-Headers", "Content-Type");
        MHD_add_response_header(r, "Access-Control-Max-Age", "86400");
    }
    /* While draining, tell keep-alive clients to go elsewhere. */
    if (atomic_load(&q->srv->draining)) MHD_add_response_header(r, MHD_HTTP_HEADER_CONNECTION, "close");
    q->status = status;
    q->bytes_out = len;
    enum MHD_Result ret = MHD_queue_response(q->conn, (unsigned)status, r);
    MHD_destroy_response(r);
    return ret;
}

static enum MHD_Result respond_json(request *q, int status, api_buf *b) {
    if (!b->data || b->failed) {
        api_buf_free(b);
        return respond(q, 500, "application/json", (char *)oom_body, sizeof oom_body - 1, 0);
    }
    char *data = b->data;
    size_t len = b->len;
    b->data = NULL;   /* now owned by the response */
    api_buf_free(b);
    return respond(q, status, "application/json", data, len, 1);
}

/* {"error":{...}} through the api's writer, so every error looks the same. */
static enum MHD_Result respond_error(request *q, int status, const char *code, const char *field,
                                     const char *fmt, ...) {
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    api_buf b = {0};
    if (api_error_body(&b, status, code, msg, field) != 0) api_buf_free(&b);
    return respond_json(q, status, &b);
}

/* ==== Routes ============================================================ */

static enum MHD_Result answer_get(request *q) {
    srv_http *s = q->srv;
    switch (q->route) {
    case SRV_R_HEALTHZ:
        return respond(q, 200, "application/json", (char *)ok_body, sizeof ok_body - 1, 0);
    case SRV_R_READYZ:
        if (atomic_load(&s->draining))
            return respond_error(q, 503, "draining", NULL, "the server is shutting down");
        return respond(q, 200, "application/json", (char *)ok_body, sizeof ok_body - 1, 0);
    case SRV_R_METRICS: {
        srv_metrics_gauges g = {.workers = s->opt->threads, .draining = atomic_load(&s->draining)};
        srv_pool_stats(s->pool, &g.queued, &g.running);
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
    case SRV_R_OPENAPI: {
        const char *doc = api_openapi_json();
        return respond(q, 200, "application/json", (char *)doc, strlen(doc), 0);
    }
    default:
        return respond_error(q, 500, "internal", NULL, "no handler for %s", q->path);
    }
}

/* Runs on a worker thread. */
static void compute_job(void *arg) {
    request *q = arg;
    api_endpoint ep = API_EP_SIMPLE;
    srv_route_endpoint(q->route, &ep);
    api_handle(ep, q->body ? q->body : "", q->len, &q->srv->limits, &q->reply);
    free(q->body);
    q->body = NULL;
    atomic_store(&q->ph, PH_DONE);
    MHD_resume_connection(q->conn);
}

/* The body is complete: answer, or hand it to a worker. */
static enum MHD_Result answer(request *q) {
    srv_http *s = q->srv;
    if (strcmp(q->method, "OPTIONS") == 0) return respond(q, 204, NULL, (char *)"", 0, 0);
    if (q->route > SRV_R_SDPA) return answer_get(q);

    if (atomic_load(&q->ph) == PH_DONE) {
        int status = q->reply.status ? q->reply.status : 500;
        return respond_json(q, status, &q->reply.body);
    }
    if (atomic_load(&q->ph) == PH_WORKING) return MHD_YES;   /* not resumed yet */
    if (q->too_large)
        return respond_error(q, 413, "too_large", NULL,
                             "request body exceeds the limit of %zu bytes (--max-body)",
                             s->opt->max_body);
    if (q->no_memory) return respond(q, 500, "application/json", (char *)oom_body, sizeof oom_body - 1, 0);

    /* Suspend before the job can resume us; if the queue is full, resume at
     * once with a 503 stored as the reply. */
    atomic_store(&q->ph, PH_WORKING);
    MHD_suspend_connection(q->conn);
    if (srv_pool_submit(s->pool, compute_job, q) != 0) {
        api_buf b = {0};
        if (api_error_body(&b, 503, "overloaded", "every worker is busy and the queue is full "
                           "(--max-queue); retry later", NULL) != 0)
            api_buf_free(&b);
        q->reply.status = 503;
        q->reply.body = b;
        atomic_store(&q->ph, PH_DONE);
        MHD_resume_connection(q->conn);
    }
    return MHD_YES;
}

/* The first call: state, route, method check, early 413. */
static enum MHD_Result begin(srv_http *s, struct MHD_Connection *conn, const char *url,
                             const char *method, void **req_cls) {
    request *q = calloc(1, sizeof *q);
    if (!q) return MHD_NO;
    clock_gettime(CLOCK_MONOTONIC, &q->t0);
    q->srv = s;
    q->conn = conn;
    snprintf(q->method, sizeof q->method, "%s", method);
    snprintf(q->path, sizeof q->path, "%s", url);
    q->route = srv_route_find(url);
    atomic_init(&q->ph, PH_READING);
    *req_cls = q;
    srv_metrics_in_flight_add(1);

    if (q->route > SRV_R_SDPA || strcmp(method, "POST") != 0) return MHD_YES;
    const char *cl = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
    if (!cl) return MHD_YES;   /* chunked: checked while reading */
    errno = 0;
    char *end;
    unsigned long long n = strtoull(cl, &end, 10);
    if (errno || *end || n > s->opt->max_body) {
        /* Answering now makes libmicrohttpd skip "100 Continue", discard the
         * body and close the connection after the reply. */
        q->too_large = 1;
        return respond_error(q, 413, "too_large", NULL,
                             "request body of %s bytes exceeds the limit of %zu bytes (--max-body)",
                             cl, s->opt->max_body);
    }
    if (n > 0) {
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
    int keep = q->route <= SRV_R_SDPA && strcmp(q->method, "POST") == 0;
    if (keep && !q->too_large && !q->no_memory) {
        if (size > max - q->len) {
            q->too_large = 1;
        } else if (q->len + size > q->cap) {
            size_t cap = q->cap ? q->cap : 65536;
            while (cap < q->len + size) cap = cap > max / 2 ? max : cap * 2;
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
    /* The rest of an oversized body is read and dropped so that the client
     * gets its 413, up to another max_body (at least 1 MiB); then we hang up. */
    size_t slack = max < ((size_t)1 << 20) ? ((size_t)1 << 20) : max;
    if (q->bytes_in > max && q->bytes_in - max > slack) return MHD_NO;
    return MHD_YES;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
                                  const char *method, const char *version,
                                  const char *upload_data, size_t *upload_data_size,
                                  void **req_cls) {
    (void)version;
    request *q = *req_cls;
    if (!q) return begin(cls, conn, url, method, req_cls);
    if (*upload_data_size) {
        enum MHD_Result r = take_chunk(q, upload_data, *upload_data_size);
        *upload_data_size = 0;
        return r;
    }
    if (q->route == SRV_R_UNKNOWN)
        return respond_error(q, 404, "not_found", NULL,
                             "no such path: %.200s (POST /attention/{simple,self,causal,"
                             "multihead,sdpa}; GET /healthz /readyz /metrics /version "
                             "/openapi.json)", q->path);
    if (!srv_route_allows(q->route, q->method))
        return respond_error(q, 405, "method_not_allowed", NULL, "%.15s is not allowed on %s; allowed: %s",
                             q->method, q->path, srv_route_allow(q->route));
    return answer(q);
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **req_cls,
                         enum MHD_RequestTerminationCode toe) {
    (void)conn;
    srv_http *s = cls;
    request *q = *req_cls;
    if (!q) return;
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
    if (q->status) srv_metrics_request(q->route, q->status, sec, q->bytes_in, q->bytes_out);
    else srv_metrics_aborted(q->route);
    if (s->opt->access_log)
        srv_log_access(q->method, q->path, q->status, q->bytes_in, q->bytes_out, sec * 1e3, note);
    srv_metrics_in_flight_add(-1);
    api_buf_free(&q->reply.body);
    free(q->body);
    free(q);
    *req_cls = NULL;
}

static void on_mhd_log(void *cls, const char *fmt, va_list ap) {
    (void)cls;
    char msg[512];
    vsnprintf(msg, sizeof msg, fmt, ap);
    size_t n = strlen(msg);
    while (n && (msg[n - 1] == '\n' || msg[n - 1] == '\r')) msg[--n] = '\0';
    srv_log("libmicrohttpd: %s", msg);
}

/* ==== Daemon ============================================================ */

int srv_http_start(srv_http *s, const srv_options *opt, srv_pool *pool, attn_pool *compute) {
    memset(s, 0, sizeof *s);
    s->opt = opt;
    s->pool = pool;
    s->limits.max_elements = opt->max_elements;
    s->limits.compute = compute;
    atomic_init(&s->draining, 0);
    if (srv_acceptor_listen(&s->acceptor, opt->host, opt->port) != 0) return -1;
    s->port = s->acceptor.port;

    /* No listening socket of MHD's own: the acceptor hands connections over
     * (see acceptor.h); MHD_USE_ITC wakes the I/O thread that gets one. */
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME |
                     MHD_USE_ITC | MHD_USE_ERROR_LOG | MHD_USE_NO_LISTEN_SOCKET;
    s->daemon = MHD_start_daemon(
        flags, 0, NULL, NULL, on_request, s,
        MHD_OPTION_EXTERNAL_LOGGER, on_mhd_log, NULL,   /* first, to catch every message */
        MHD_OPTION_THREAD_POOL_SIZE, (unsigned)opt->io_threads,
        MHD_OPTION_CONNECTION_LIMIT, (unsigned)opt->max_connections,
        MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)opt->timeout,
        MHD_OPTION_NOTIFY_COMPLETED, on_completed, s,
        MHD_OPTION_END);
    if (!s->daemon) {
        srv_log("cannot start the HTTP daemon (%d I/O threads)", opt->io_threads);
        srv_acceptor_close(&s->acceptor);
        return -1;
    }
    if (srv_acceptor_start(&s->acceptor, s->daemon) != 0) {
        srv_acceptor_close(&s->acceptor);
        MHD_stop_daemon(s->daemon);
        s->daemon = NULL;
        return -1;
    }
    return 0;
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
    if (s->daemon) MHD_stop_daemon(s->daemon);
    s->daemon = NULL;
}
