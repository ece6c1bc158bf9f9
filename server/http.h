/* http.h - the libmicrohttpd daemon: routing, request bodies, replies.
 *
 * Thread model: libmicrohttpd's internal thread pool (epoll, --io-threads)
 * reads requests and writes replies and never computes. When a POST body is
 * complete the I/O thread suspends the connection and queues a job on the
 * worker pool (--threads workers, --max-queue waiting jobs); the worker runs
 * api_handle, stores the reply and resumes the connection; the I/O thread is
 * then called again and queues the stored reply. A full queue answers 503
 * with Retry-After at once. Each compute request reserves its memory in the
 * budget (budget.h) on its worker, and releases it when its reply is sent. Connections are accepted by a thread of our own
 * (acceptor.h), which is what makes the drain safe.
 */
#ifndef SRV_HTTP_H
#define SRV_HTTP_H

#include <stdatomic.h>

#include "acceptor.h"
#include "api/api.h"
#include "core/attention.h"
#include "budget.h"
#include "conns.h"
#include "cors.h"
#include "etag.h"
#include "batch.h"
#include "gen.h"
#include "linger.h"
#include "options.h"
#include "pool.h"
#include "static_doc.h"

typedef struct {
    const srv_options *opt;
    srv_pool *pool;
    api_limits limits;
    srv_cors cors;                /* --cors-origin, parsed */
    srv_budget *budget;           /* --max-memory */
    srv_linger *linger;           /* lingering close after an early 413 */
    srv_conns *conns;             /* the deadline for request heads */
    srv_gen *gen;                 /* generations' threads and turns (gen.h) */
    srv_batch *batch;             /* their decode steps together (batch.h), NULL: --batch off */
    long long started;            /* Unix time of the start (GET /v1/models) */
    srv_static_doc openapi;       /* GET /openapi.json */
    srv_static_doc viewer;        /* GET /: the viewer page */
    atomic_int draining;          /* set on SIGTERM: /readyz says 503 */
    atomic_int stopping;          /* past the drain's deadline: computations stop */
    struct MHD_Daemon *daemon;
    srv_acceptor acceptor;        /* the listening socket and its thread */
    char refusal[640];            /* the reply over --max-connections (acceptor.h) */
    size_t refusal_len;
    int port;                     /* the port actually bound */
} srv_http;

/* Binds opt->host:opt->port and starts the I/O threads. The pool must be
 * running; compute (may be NULL) is the core's thread pool that requests
 * share their work with; models (may be NULL) are the checkpoints loaded at
 * start, read by requests until srv_http_stop. Returns 0, or -1 with the
 * reason logged. */
int srv_http_start(srv_http *s, const srv_options *opt, srv_pool *pool, attn_pool *compute,
                   const api_models *models);

/* Closes the listening socket (new connections are refused) and marks the
 * server not ready; connections already open are still served (with
 * "Connection: close"). */
void srv_http_quiesce(srv_http *s);

/* The drain's deadline has passed: every computation stops within an item
 * of its work (attn_cancel_set) and answers 503 draining, jobs still queued
 * are answered so without computing, waits for memory and for slow readers
 * end. Then srv_pool_stop returns at once. */
void srv_http_stop_computing(srv_http *s);

/* Open connections, idle keep-alive ones included. */
unsigned srv_http_connections(srv_http *s);

/* Closes every connection and joins the I/O threads. Every job must have
 * finished (srv_pool_stop) so that no connection is still suspended. */
void srv_http_stop(srv_http *s);

#endif
