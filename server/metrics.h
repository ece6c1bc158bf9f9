/* metrics.h - process-wide counters for GET /metrics.
 *
 * Updated from every I/O thread with relaxed atomics (no lock on the request
 * path); rendered in the Prometheus text format, version 0.0.4, as the
 * Prometheus client libraries do: requests by endpoint, method and status,
 * every series whose labels are known shown from the start (at 0), a build
 * info series, and the standard process_* metrics read from /proc.
 */
#ifndef SRV_METRICS_H
#define SRV_METRICS_H

#include <stddef.h>

#include "batch.h"
#include "budget.h"
#include "route.h"

typedef enum { SRV_M_GET, SRV_M_HEAD, SRV_M_POST, SRV_M_OPTIONS, SRV_M_OTHER, SRV_M_COUNT } srv_method;

/* The method label of a request method; SRV_M_OTHER for any other. */
srv_method srv_method_of(const char *method);

/* One request answered with `status` after `seconds`, bytes of body in/out. */
void srv_metrics_request(srv_route r, srv_method m, int status, double seconds, size_t bytes_in,
                         size_t bytes_out);
/* One request that ended without a reply (client gone, timeout, error). */
void srv_metrics_aborted(srv_route r, srv_method m);
/* A generation's step: n tokens written in `seconds` (one step's time, the
 * per-token latency a stream sees). */
void srv_metrics_tokens(int n, double seconds);
/* A generation's first token, `seconds` after its request's head came. */
void srv_metrics_first_token(double seconds);
/* Requests being handled: +1 when the headers arrive, -1 when finished. */
void srv_metrics_in_flight_add(int delta);
long srv_metrics_in_flight(void);

typedef struct {
    size_t queued, running;   /* from the worker pool */
    size_t gen_queued, gen_running; /* generations (gen.h) */
    srv_batch_stats batch;    /* their batched steps (batch.h; zeros: --batch off) */
    int workers, draining;
    unsigned connections;     /* open, idle keep-alive ones included */
    int lingering;            /* sockets in a lingering close (linger.h) */
    unsigned long long slow_heads_cut;   /* connections cut for a late request head */
    srv_budget_stats memory;
    struct {
        unsigned long long refused;   /* over --max-connections, answered 503 by the acceptor */
        unsigned long long hung_up;   /* closed because the client had hung up (conns.h) */
    } conn;
} srv_metrics_gauges;

/* Renders every metric into a fresh malloc'd text; *out is NULL on OOM. */
void srv_metrics_render(const srv_metrics_gauges *g, char **out, size_t *len);

#endif
