/* metrics.c - counters and histograms, see metrics.h. */
#include "metrics.h"

#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Status codes the server can send; anything else is counted as "other". */
static const int statuses[] = {200, 204, 400, 404, 405, 413, 500, 503};
#define N_STATUS (sizeof statuses / sizeof statuses[0] + 1)

/* Latency histogram upper bounds, seconds; the last bucket is +Inf. */
static const double bounds[] = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,
                                0.25,  0.5,    1,     2.5,  5,     10};
#define N_BUCKETS (sizeof bounds / sizeof bounds[0] + 1)

static atomic_ullong requests[SRV_R_COUNT][N_STATUS];
static atomic_ullong aborted[SRV_R_COUNT];
static atomic_ullong buckets[SRV_R_COUNT][N_BUCKETS];   /* not cumulative */
static atomic_ullong latency_us[SRV_R_COUNT];
static atomic_ullong bytes_in, bytes_out;
static atomic_long in_flight;

static size_t status_index(int status) {
    for (size_t i = 0; i < N_STATUS - 1; i++)
        if (statuses[i] == status) return i;
    return N_STATUS - 1;
}

void srv_metrics_request(srv_route r, int status, double seconds, size_t in, size_t out) {
    if ((unsigned)r >= SRV_R_COUNT) r = SRV_R_UNKNOWN;
    atomic_fetch_add_explicit(&requests[r][status_index(status)], 1, memory_order_relaxed);
    size_t b = 0;
    while (b < N_BUCKETS - 1 && seconds > bounds[b]) b++;
    atomic_fetch_add_explicit(&buckets[r][b], 1, memory_order_relaxed);
    unsigned long long us = seconds > 0 ? (unsigned long long)(seconds * 1e6 + 0.5) : 0;
    atomic_fetch_add_explicit(&latency_us[r], us, memory_order_relaxed);
    atomic_fetch_add_explicit(&bytes_in, in, memory_order_relaxed);
    atomic_fetch_add_explicit(&bytes_out, out, memory_order_relaxed);
}

void srv_metrics_aborted(srv_route r) {
    if ((unsigned)r >= SRV_R_COUNT) r = SRV_R_UNKNOWN;
    atomic_fetch_add_explicit(&aborted[r], 1, memory_order_relaxed);
}

void srv_metrics_in_flight_add(int delta) {
    atomic_fetch_add_explicit(&in_flight, delta, memory_order_relaxed);
}

long srv_metrics_in_flight(void) { return atomic_load(&in_flight); }

/* ==== Text output ======================================================= */

typedef struct {
    char *data;
    size_t len, cap;
    int failed;
} text;

static void put(text *t, const char *fmt, ...) {
    if (t->failed) return;
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(t->data + t->len, t->cap - t->len, fmt, ap);
        va_end(ap);
        if (n < 0) { t->failed = 1; return; }
        if ((size_t)n < t->cap - t->len) { t->len += (size_t)n; return; }
        size_t cap = t->cap * 2 + (size_t)n + 1;
        char *d = realloc(t->data, cap);
        if (!d) { t->failed = 1; return; }
        t->data = d;
        t->cap = cap;
    }
}

static void status_label(size_t i, char buf[8]) {
    if (i < N_STATUS - 1) snprintf(buf, 8, "%d", statuses[i]);
    else strcpy(buf, "other");
}

void srv_metrics_render(const srv_metrics_gauges *g, char **out, size_t *len) {
    text t = {malloc(4096), 0, 4096, 0};
    if (!t.data) { *out = NULL; *len = 0; return; }
    t.data[0] = '\0';

    put(&t, "# HELP attn_requests_total Requests answered, by endpoint and status.\n"
            "# TYPE attn_requests_total counter\n");
    for (int r = 0; r < SRV_R_COUNT; r++)
        for (size_t s = 0; s < N_STATUS; s++) {
            unsigned long long n = atomic_load_explicit(&requests[r][s], memory_order_relaxed);
            if (!n) continue;
            char sl[8];
            status_label(s, sl);
            put(&t, "attn_requests_total{endpoint=\"%s\",status=\"%s\"} %llu\n",
                srv_route_label((srv_route)r), sl, n);
        }

    put(&t, "# HELP attn_requests_aborted_total Requests that ended without a reply "
            "(client gone, timeout).\n# TYPE attn_requests_aborted_total counter\n");
    for (int r = 0; r < SRV_R_COUNT; r++) {
        unsigned long long n = atomic_load_explicit(&aborted[r], memory_order_relaxed);
        if (n) put(&t, "attn_requests_aborted_total{endpoint=\"%s\"} %llu\n",
                   srv_route_label((srv_route)r), n);
    }

    put(&t, "# HELP attn_request_duration_seconds Time from request headers to the "
            "reply sent.\n# TYPE attn_request_duration_seconds histogram\n");
    for (int r = 0; r < SRV_R_COUNT; r++) {
        unsigned long long cum = 0, counts[N_BUCKETS];
        for (size_t b = 0; b < N_BUCKETS; b++)
            cum += counts[b] = atomic_load_explicit(&buckets[r][b], memory_order_relaxed);
        if (!cum) continue;
        const char *ep = srv_route_label((srv_route)r);
        cum = 0;
        for (size_t b = 0; b < N_BUCKETS; b++) {
            cum += counts[b];
            if (b < N_BUCKETS - 1)
                put(&t, "attn_request_duration_seconds_bucket{endpoint=\"%s\",le=\"%g\"} %llu\n",
                    ep, bounds[b], cum);
            else
                put(&t, "attn_request_duration_seconds_bucket{endpoint=\"%s\",le=\"+Inf\"} %llu\n",
                    ep, cum);
        }
        put(&t, "attn_request_duration_seconds_sum{endpoint=\"%s\"} %.6f\n", ep,
            (double)atomic_load_explicit(&latency_us[r], memory_order_relaxed) / 1e6);
        put(&t, "attn_request_duration_seconds_count{endpoint=\"%s\"} %llu\n", ep, cum);
    }

    put(&t, "# HELP attn_request_bytes_total Request body bytes received.\n"
            "# TYPE attn_request_bytes_total counter\nattn_request_bytes_total %llu\n",
        atomic_load(&bytes_in));
    put(&t, "# HELP attn_response_bytes_total Response body bytes sent.\n"
            "# TYPE attn_response_bytes_total counter\nattn_response_bytes_total %llu\n",
        atomic_load(&bytes_out));
    put(&t, "# HELP attn_requests_in_flight Requests received and not yet finished.\n"
            "# TYPE attn_requests_in_flight gauge\nattn_requests_in_flight %ld\n",
        atomic_load(&in_flight));
    put(&t, "# HELP attn_queue_jobs Compute jobs waiting for a worker.\n"
            "# TYPE attn_queue_jobs gauge\nattn_queue_jobs %zu\n", g->queued);
    put(&t, "# HELP attn_workers_busy Workers computing right now.\n"
            "# TYPE attn_workers_busy gauge\nattn_workers_busy %zu\n", g->running);
    put(&t, "# HELP attn_workers Compute worker threads.\n"
            "# TYPE attn_workers gauge\nattn_workers %d\n", g->workers);
    put(&t, "# HELP attn_draining 1 after SIGTERM while requests in flight finish.\n"
            "# TYPE attn_draining gauge\nattn_draining %d\n", g->draining);

    if (t.failed) {
        free(t.data);
        *out = NULL;
        *len = 0;
        return;
    }
    *out = t.data;
    *len = t.len;
}
