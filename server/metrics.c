/* metrics.c - counters and histograms, see metrics.h. */
#include "metrics.h"

#include <dirent.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "info.h"
#include "kernels.h"

/* Status codes the server can send; anything else is counted as "other". */
static const int statuses[] = {200, 204, 304, 400, 404, 405, 411, 413, 415, 500, 501, 503};
#define N_STATUS (sizeof statuses / sizeof statuses[0] + 1)

static const char *const method_names[SRV_M_COUNT] = {"GET", "HEAD", "POST", "OPTIONS", "other"};

/* Latency histogram upper bounds, seconds; the last bucket is +Inf. */
static const double bounds[] = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,
                                0.25,  0.5,    1,     2.5,  5,     10};
#define N_BUCKETS (sizeof bounds / sizeof bounds[0] + 1)

static atomic_ullong requests[SRV_R_COUNT][SRV_M_COUNT][N_STATUS];
static atomic_ullong aborted[SRV_R_COUNT][SRV_M_COUNT];
static atomic_ullong buckets[SRV_R_COUNT][SRV_M_COUNT][N_BUCKETS];   /* not cumulative */
static atomic_ullong latency_us[SRV_R_COUNT][SRV_M_COUNT];
static atomic_ullong bytes_in, bytes_out;
static atomic_long in_flight;
/* Generation: tokens written, and the time of each step (one token a row). */
static const double step_bounds[] = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5};
#define N_STEP_BUCKETS (sizeof step_bounds / sizeof step_bounds[0] + 1)
static atomic_ullong tokens_total, step_buckets[N_STEP_BUCKETS], step_us;
static const double ttft_bounds[] = {0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10};
#define N_TTFT_BUCKETS (sizeof ttft_bounds / sizeof ttft_bounds[0] + 1)
static atomic_ullong ttft_buckets[N_TTFT_BUCKETS], ttft_us;

srv_method srv_method_of(const char *method) {
    for (int m = 0; m < SRV_M_OTHER; m++)
        if (strcmp(method, method_names[m]) == 0) return (srv_method)m;
    return SRV_M_OTHER;
}

static size_t status_index(int status) {
    for (size_t i = 0; i < N_STATUS - 1; i++)
        if (statuses[i] == status) return i;
    return N_STATUS - 1;
}

static void clamp(srv_route *r, srv_method *m) {
    if ((unsigned)*r >= SRV_R_COUNT) *r = SRV_R_UNKNOWN;
    if ((unsigned)*m >= SRV_M_COUNT) *m = SRV_M_OTHER;
}

void srv_metrics_request(srv_route r, srv_method m, int status, double seconds, size_t in,
                         size_t out) {
    clamp(&r, &m);
    atomic_fetch_add_explicit(&requests[r][m][status_index(status)], 1, memory_order_relaxed);
    size_t b = 0;
    while (b < N_BUCKETS - 1 && seconds > bounds[b]) b++;
    atomic_fetch_add_explicit(&buckets[r][m][b], 1, memory_order_relaxed);
    unsigned long long us = seconds > 0 ? (unsigned long long)(seconds * 1e6 + 0.5) : 0;
    atomic_fetch_add_explicit(&latency_us[r][m], us, memory_order_relaxed);
    atomic_fetch_add_explicit(&bytes_in, in, memory_order_relaxed);
    atomic_fetch_add_explicit(&bytes_out, out, memory_order_relaxed);
}

void srv_metrics_tokens(int n, double seconds) {
    size_t b = 0;
    while (b < N_STEP_BUCKETS - 1 && seconds > step_bounds[b]) b++;
    atomic_fetch_add_explicit(&tokens_total, n > 0 ? (unsigned long long)n : 0, memory_order_relaxed);
    atomic_fetch_add_explicit(&step_buckets[b], 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&step_us, seconds > 0 ? (unsigned long long)(seconds * 1e6 + 0.5) : 0,
                              memory_order_relaxed);
}

void srv_metrics_first_token(double seconds) {
    size_t b = 0;
    while (b < N_TTFT_BUCKETS - 1 && seconds > ttft_bounds[b]) b++;
    atomic_fetch_add_explicit(&ttft_buckets[b], 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&ttft_us, seconds > 0 ? (unsigned long long)(seconds * 1e6 + 0.5) : 0,
                              memory_order_relaxed);
}

void srv_metrics_aborted(srv_route r, srv_method m) {
    clamp(&r, &m);
    atomic_fetch_add_explicit(&aborted[r][m], 1, memory_order_relaxed);
}

void srv_metrics_in_flight_add(int delta) {
    atomic_fetch_add_explicit(&in_flight, delta, memory_order_relaxed);
}

long srv_metrics_in_flight(void) { return atomic_load(&in_flight); }

/* ==== The series known from the start ==================================== */

/* Methods a route answers (OPTIONS always); the unknown paths answer 404 to
 * GET and POST, the methods they are usually asked with. */
static int method_known(srv_route r, srv_method m) {
    if (r == SRV_R_UNKNOWN) return m == SRV_M_GET || m == SRV_M_POST;
    if (m == SRV_M_OPTIONS) return 1;
    if (r <= SRV_R_LAST_COMPUTE) return m == SRV_M_POST;
    return m == SRV_M_GET || m == SRV_M_HEAD;
}

/* The method a route is there for: its histogram is shown from the start
 * (the others' once they have been asked). */
static int method_main(srv_route r, srv_method m) {
    return r <= SRV_R_LAST_COMPUTE ? m == SRV_M_POST : m == SRV_M_GET;
}

/* The statuses a route gives to a method it answers. */
static int status_known(srv_route r, srv_method m, int status) {
    if (!method_known(r, m)) return 0;
    if (r == SRV_R_UNKNOWN) return status == 404;
    if (m == SRV_M_OPTIONS) return status == 204;
    if (r <= SRV_R_LAST_COMPUTE)
        return status == 200 || status == 400 || status == 413 || status == 415 ||
               status == 500 || status == 503;
    if (r == SRV_R_READYZ) return status == 200 || status == 503;
    if (r == SRV_R_OPENAPI || r == SRV_R_VIEWER) return status == 200 || status == 304;
    return status == 200;
}

/* ==== Text output ======================================================= */

typedef struct {
    char *data;
    size_t len, cap;
    int failed;
} text;

static void put(text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
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

/* A label value with \, " and newline escaped, as the text format wants. */
static void put_escaped(text *t, const char *s) {
    for (; *s; s++) {
        if (*s == '\\') put(t, "\\\\");
        else if (*s == '"') put(t, "\\\"");
        else if (*s == '\n') put(t, "\\n");
        else put(t, "%c", *s);
    }
}

static void status_label(size_t i, char buf[8]) {
    if (i < N_STATUS - 1) snprintf(buf, 8, "%d", statuses[i]);
    else strcpy(buf, "other");
}

static void render_requests(text *t) {
    put(t, "# HELP attn_requests_total Requests answered, by endpoint, method and status.\n"
           "# TYPE attn_requests_total counter\n");
    for (int r = 0; r < SRV_R_COUNT; r++)
        for (int m = 0; m < SRV_M_COUNT; m++)
            for (size_t s = 0; s < N_STATUS; s++) {
                unsigned long long n = atomic_load_explicit(&requests[r][m][s], memory_order_relaxed);
                int known = s < N_STATUS - 1 && status_known((srv_route)r, (srv_method)m, statuses[s]);
                if (!n && !known) continue;
                char sl[8];
                status_label(s, sl);
                put(t, "attn_requests_total{endpoint=\"%s\",method=\"%s\",status=\"%s\"} %llu\n",
                    srv_route_label((srv_route)r), method_names[m], sl, n);
            }

    put(t, "# HELP attn_requests_aborted_total Requests that ended without a reply "
           "(client gone, timeout).\n# TYPE attn_requests_aborted_total counter\n");
    for (int r = 0; r < SRV_R_COUNT; r++)
        for (int m = 0; m < SRV_M_COUNT; m++) {
            unsigned long long n = atomic_load_explicit(&aborted[r][m], memory_order_relaxed);
            if (n || method_known((srv_route)r, (srv_method)m))
                put(t, "attn_requests_aborted_total{endpoint=\"%s\",method=\"%s\"} %llu\n",
                    srv_route_label((srv_route)r), method_names[m], n);
        }

    put(t, "# HELP attn_request_duration_seconds Time from request headers to the "
           "reply sent.\n# TYPE attn_request_duration_seconds histogram\n");
    for (int r = 0; r < SRV_R_COUNT; r++)
        for (int m = 0; m < SRV_M_COUNT; m++) {
            unsigned long long cum = 0, counts[N_BUCKETS];
            for (size_t b = 0; b < N_BUCKETS; b++)
                cum += counts[b] = atomic_load_explicit(&buckets[r][m][b], memory_order_relaxed);
            if (!cum && !method_main((srv_route)r, (srv_method)m)) continue;
            const char *ep = srv_route_label((srv_route)r), *mn = method_names[m];
            cum = 0;
            for (size_t b = 0; b < N_BUCKETS; b++) {
                cum += counts[b];
                if (b < N_BUCKETS - 1)
                    put(t, "attn_request_duration_seconds_bucket{endpoint=\"%s\",method=\"%s\","
                           "le=\"%g\"} %llu\n", ep, mn, bounds[b], cum);
                else
                    put(t, "attn_request_duration_seconds_bucket{endpoint=\"%s\",method=\"%s\","
                           "le=\"+Inf\"} %llu\n", ep, mn, cum);
            }
            put(t, "attn_request_duration_seconds_sum{endpoint=\"%s\",method=\"%s\"} %.6f\n", ep, mn,
                (double)atomic_load_explicit(&latency_us[r][m], memory_order_relaxed) / 1e6);
            put(t, "attn_request_duration_seconds_count{endpoint=\"%s\",method=\"%s\"} %llu\n", ep,
                mn, cum);
        }
}

static void render_memory(text *t, const srv_budget_stats *m) {
    put(t, "# HELP attn_memory_budget_bytes The memory budget of all requests (--max-memory).\n"
           "# TYPE attn_memory_budget_bytes gauge\nattn_memory_budget_bytes %zu\n", m->limit);
    put(t, "# HELP attn_memory_reserved_bytes Memory reserved by requests being handled.\n"
           "# TYPE attn_memory_reserved_bytes gauge\nattn_memory_reserved_bytes %zu\n", m->reserved);
    put(t, "# HELP attn_memory_reserved_peak_bytes The most memory reserved at once since start.\n"
           "# TYPE attn_memory_reserved_peak_bytes gauge\nattn_memory_reserved_peak_bytes %zu\n",
        m->peak);
    put(t, "# HELP attn_memory_waiting_requests Requests waiting for memory to be released.\n"
           "# TYPE attn_memory_waiting_requests gauge\nattn_memory_waiting_requests %d\n",
        m->waiting);
    put(t, "# HELP attn_memory_waits_total Requests that had to wait for memory.\n"
           "# TYPE attn_memory_waits_total counter\nattn_memory_waits_total %llu\n", m->waits);
    put(t, "# HELP attn_memory_trims_total Times freed memory kept warm for reuse was given back "
           "to the system to stay within the budget.\n"
           "# TYPE attn_memory_trims_total counter\nattn_memory_trims_total %llu\n", m->trims);
    put(t, "# HELP attn_memory_refused_total Requests refused (503) by the memory budget, by "
           "reason.\n# TYPE attn_memory_refused_total counter\n"
           "attn_memory_refused_total{reason=\"never_fits\"} %llu\n"
           "attn_memory_refused_total{reason=\"timeout\"} %llu\n"
           "attn_memory_refused_total{reason=\"deadlock\"} %llu\n",
        m->refused[SRV_BUDGET_NEVER], m->refused[SRV_BUDGET_TIMEOUT], m->refused[SRV_BUDGET_STUCK]);
}

/* The acceptor's and the connection watch's counters (acceptor.h, conns.h). */
static void render_connections(text *t, const srv_metrics_gauges *g) {
    put(t, "# HELP attn_connections_refused_total Connections over --max-connections, answered "
           "503 and closed before the HTTP library saw them.\n"
           "# TYPE attn_connections_refused_total counter\n"
           "attn_connections_refused_total %llu\n", g->conn.refused);
    put(t, "# HELP attn_connections_hung_up_total Connections closed because the client had "
           "hung up before its request was complete.\n"
           "# TYPE attn_connections_hung_up_total counter\n"
           "attn_connections_hung_up_total %llu\n", g->conn.hung_up);
}

/* A histogram in seconds: n buckets (the last +Inf, the others at bounds)
 * made cumulative, then its sum (kept in microseconds) and count. */
static void put_histogram(text *t, const char *name, atomic_ullong *buckets, const double *bounds,
                          size_t n, atomic_ullong *sum_us) {
    unsigned long long cum = 0;
    for (size_t b = 0; b < n; b++) {
        cum += atomic_load_explicit(&buckets[b], memory_order_relaxed);
        if (b < n - 1) put(t, "%s_bucket{le=\"%g\"} %llu\n", name, bounds[b], cum);
        else put(t, "%s_bucket{le=\"+Inf\"} %llu\n", name, cum);
    }
    put(t, "%s_sum %.6f\n%s_count %llu\n", name, (double)atomic_load(sum_us) / 1e6, name, cum);
}

/* Generation (gen.h): tokens written, each step's time, generations. */
static void render_generation(text *t, const srv_metrics_gauges *g) {
    put(t, "# HELP attn_generated_tokens_total Tokens written by generations (/model/gpt2 with "
           "generate, /v1/completions).\n# TYPE attn_generated_tokens_total counter\n"
           "attn_generated_tokens_total %llu\n", atomic_load(&tokens_total));
    put(t, "# HELP attn_generation_step_seconds Time of one generation step (one token for each "
           "row): the time per token a stream sees.\n"
           "# TYPE attn_generation_step_seconds histogram\n");
    put_histogram(t, "attn_generation_step_seconds", step_buckets, step_bounds, N_STEP_BUCKETS, &step_us);
    put(t, "# HELP attn_generations_running Generations on their threads now (--max-streams).\n"
           "# TYPE attn_generations_running gauge\nattn_generations_running %zu\n", g->gen_running);
    put(t, "# HELP attn_generations_queued Generations waiting for a thread.\n"
           "# TYPE attn_generations_queued gauge\nattn_generations_queued %zu\n", g->gen_queued);
}

/* Time to first token and the batched steps (batch.h). */
static void render_batch(text *t, const srv_metrics_gauges *g) {
    put(t, "# HELP attn_generation_first_token_seconds Time from a generation's request to its "
           "first token (queue and prefill included).\n"
           "# TYPE attn_generation_first_token_seconds histogram\n");
    put_histogram(t, "attn_generation_first_token_seconds", ttft_buckets, ttft_bounds, N_TTFT_BUCKETS,
                  &ttft_us);
    const srv_batch_stats *s = &g->batch;
    put(t, "# HELP attn_batch_step_rows Rows (one token of one sequence each) of each batched "
           "decode step.\n# TYPE attn_batch_step_rows histogram\n");
    unsigned long long cum = 0;
    for (int b = 0; b < 8; b++) {
        cum += s->by_rows[b];
        if (b < 7) put(t, "attn_batch_step_rows_bucket{le=\"%d\"} %llu\n", 1 << b, cum);
        else put(t, "attn_batch_step_rows_bucket{le=\"+Inf\"} %llu\n", cum);
    }
    put(t, "attn_batch_step_rows_sum %llu\nattn_batch_step_rows_count %llu\n", s->rows, s->steps);
    put(t, "# HELP attn_batch_sequences Generations in the batched steps: stepping (ready or "
           "between steps) or away (prefilling alone, or parked: their client is not reading).\n"
           "# TYPE attn_batch_sequences gauge\nattn_batch_sequences{state=\"stepping\"} %d\n"
           "attn_batch_sequences{state=\"away\"} %d\n", s->members - s->away, s->away);
    put(t, "# HELP attn_batch_cache_bytes Bytes of the key/value caches of the generations in the "
           "batched steps.\n# TYPE attn_batch_cache_bytes gauge\nattn_batch_cache_bytes %zu\n",
        s->cache_bytes);
}

/* ==== process_* as the Prometheus client libraries export them ========== */

static void render_process(text *t) {
    long tick = sysconf(_SC_CLK_TCK), page = sysconf(_SC_PAGESIZE);
    char buf[1024];
    FILE *f = fopen("/proc/self/stat", "r");
    size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
    if (f) fclose(f);
    buf[n] = '\0';
    /* After the command name in parentheses: field 3 (state) onwards. */
    char *p = strrchr(buf, ')');
    unsigned long long utime = 0, stime = 0, start = 0, vsize = 0;
    long long rss = 0;
    int ok = p && tick > 0 &&
             sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu %*d %*d %*d %*d "
                           "%*d %*d %llu %llu %lld", &utime, &stime, &start, &vsize, &rss) == 5;
    unsigned long long btime = 0;
    f = fopen("/proc/stat", "r");
    while (f && fgets(buf, sizeof buf, f))
        if (sscanf(buf, "btime %llu", &btime) == 1) break;
    if (f) fclose(f);
    if (ok) {
        put(t, "# HELP process_cpu_seconds_total Total user and system CPU time spent in seconds.\n"
               "# TYPE process_cpu_seconds_total counter\nprocess_cpu_seconds_total %.2f\n",
            (double)(utime + stime) / (double)tick);
        put(t, "# HELP process_resident_memory_bytes Resident memory size in bytes.\n"
               "# TYPE process_resident_memory_bytes gauge\nprocess_resident_memory_bytes %lld\n",
            rss * (long long)page);
        put(t, "# HELP process_virtual_memory_bytes Virtual memory size in bytes.\n"
               "# TYPE process_virtual_memory_bytes gauge\nprocess_virtual_memory_bytes %llu\n",
            vsize);
        if (btime)
            put(t, "# HELP process_start_time_seconds Start time of the process since unix epoch "
                   "in seconds.\n# TYPE process_start_time_seconds gauge\n"
                   "process_start_time_seconds %.2f\n",
                (double)btime + (double)start / (double)tick);
    }
    DIR *d = opendir("/proc/self/fd");
    if (d) {
        long fds = -1;   /* the directory's own descriptor */
        while (readdir(d)) fds++;
        fds -= 2;        /* "." and ".." */
        closedir(d);
        put(t, "# HELP process_open_fds Number of open file descriptors.\n"
               "# TYPE process_open_fds gauge\nprocess_open_fds %ld\n", fds);
    }
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0)
        put(t, "# HELP process_max_fds Maximum number of open file descriptors.\n"
               "# TYPE process_max_fds gauge\nprocess_max_fds %llu\n",
            (unsigned long long)rl.rlim_cur);
}

/* The OpenBLAS kernels in use and their start-up check (kernels.h). */
static void render_kernels(text *t) {
    const srv_kernels *k = srv_kernels_get();
    put(t, "# HELP attn_blas_kernels_info The OpenBLAS kernels in use (core), and the kernel "
           "sets that failed the start-up check before them (fallback_from, empty if none); "
           "always 1.\n# TYPE attn_blas_kernels_info gauge\nattn_blas_kernels_info{core=\"");
    put_escaped(t, k->report.core);
    put(t, "\",check=\"%s\",fallback_from=\"", k->report.passed ? "passed" : "not run");
    put_escaped(t, k->fallback_from);
    put(t, "\"} 1\n");
    put(t, "# HELP attn_blas_check_error_ratio The start-up check's largest error of an "
           "OpenBLAS product over its float32 bound (passes below 1).\n"
           "# TYPE attn_blas_check_error_ratio gauge\nattn_blas_check_error_ratio %g\n",
        k->report.worst);
}

void srv_metrics_render(const srv_metrics_gauges *g, char **out, size_t *len) {
    text t = {malloc(16384), 0, 16384, 0};
    if (!t.data) { *out = NULL; *len = 0; return; }
    t.data[0] = '\0';

    put(&t, "# HELP attn_build_info The server's version and build, as labels; always 1.\n"
            "# TYPE attn_build_info gauge\nattn_build_info{version=\"");
    put_escaped(&t, srv_info_version());
    put(&t, "\",compiler=\"");
    put_escaped(&t, srv_info_compiler());
    put(&t, "\",openblas=\"");
    put_escaped(&t, srv_info_openblas());
    put(&t, "\"} 1\n");
    render_kernels(&t);

    render_requests(&t);
    put(&t, "# HELP attn_request_bytes_total Request body bytes received.\n"
            "# TYPE attn_request_bytes_total counter\nattn_request_bytes_total %llu\n",
        atomic_load(&bytes_in));
    put(&t, "# HELP attn_response_bytes_total Response body bytes sent.\n"
            "# TYPE attn_response_bytes_total counter\nattn_response_bytes_total %llu\n",
        atomic_load(&bytes_out));
    put(&t, "# HELP attn_requests_in_flight Requests received and not yet finished.\n"
            "# TYPE attn_requests_in_flight gauge\nattn_requests_in_flight %ld\n",
        atomic_load(&in_flight));
    put(&t, "# HELP attn_connections Open client connections, idle keep-alive ones included.\n"
            "# TYPE attn_connections gauge\nattn_connections %u\n", g->connections);
    put(&t, "# HELP attn_lingering_connections Sockets still read and discarded after an early "
            "reply.\n# TYPE attn_lingering_connections gauge\nattn_lingering_connections %d\n",
        g->lingering);
    put(&t, "# HELP attn_connections_cut_total Connections closed because their request head "
            "took longer than --timeout.\n# TYPE attn_connections_cut_total counter\n"
            "attn_connections_cut_total %llu\n", g->slow_heads_cut);
    put(&t, "# HELP attn_queue_jobs Compute jobs waiting for a worker.\n"
            "# TYPE attn_queue_jobs gauge\nattn_queue_jobs %zu\n", g->queued);
    put(&t, "# HELP attn_workers_busy Workers computing (or waiting for memory) right now.\n"
            "# TYPE attn_workers_busy gauge\nattn_workers_busy %zu\n", g->running);
    put(&t, "# HELP attn_workers Compute worker threads.\n"
            "# TYPE attn_workers gauge\nattn_workers %d\n", g->workers);
    put(&t, "# HELP attn_draining 1 after SIGTERM while requests in flight finish.\n"
            "# TYPE attn_draining gauge\nattn_draining %d\n", g->draining);
    render_memory(&t, &g->memory);
    render_connections(&t, g);
    render_generation(&t, g);
    render_batch(&t, g);
    render_process(&t);

    if (t.failed) {
        free(t.data);
        *out = NULL;
        *len = 0;
        return;
    }
    *out = t.data;
    *len = t.len;
}
