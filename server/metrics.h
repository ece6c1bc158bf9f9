/* metrics.h - process-wide request counters for GET /metrics.
 *
 * Updated from every I/O thread with relaxed atomics (no lock on the request
 * path); rendered in the Prometheus text format, version 0.0.4.
 */
#ifndef SRV_METRICS_H
#define SRV_METRICS_H

#include <stddef.h>

#include "route.h"

/* One request answered with `status` after `seconds`, bytes of body in/out. */
void srv_metrics_request(srv_route r, int status, double seconds, size_t bytes_in,
                         size_t bytes_out);
/* One request that ended without a reply (client gone, timeout, error). */
void srv_metrics_aborted(srv_route r);
/* Requests being handled: +1 when the headers arrive, -1 when finished. */
void srv_metrics_in_flight_add(int delta);
long srv_metrics_in_flight(void);

typedef struct {
    size_t queued, running;   /* from the worker pool */
    int workers, draining;
} srv_metrics_gauges;

/* Renders every metric into a fresh malloc'd text; *out is NULL on OOM. */
void srv_metrics_render(const srv_metrics_gauges *g, char **out, size_t *len);

#endif
