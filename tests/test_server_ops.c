/* test_server_ops.c - what clients and operators rely on, against the real
 * attention-server: the 413 that reaches a client sending its whole body
 * without "Expect: 100-continue" (lingering close), /metrics as Prometheus
 * client libraries make it (checked by promtool), CORS origin lists, ETag
 * and 304 on /openapi.json, gzip bodies and replies, 415 for other codings, and the memory budget
 * (--max-memory) under many concurrent large requests.
 */
#include <cblas.h>
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "api/api.h"
#include "core/attention.h"
#include "support/server_harness.h"
#include "support/server_requests.h"
#include "support/zref.h"
#include "tests/support/check_main.h"

static srvt_server srv;

static void start(const char *const *args) { srvt_must_start(&srv, args); }

static void stop(void) { srvt_must_stop(&srv); }

static void teardown(void) { srvt_release(&srv); }

static srvt_reply get_with(const char *path, const char *const *headers) {
    srvt_req rq = {.method = "GET", .headers = headers};
    srvt_reply r;
    ck_assert_int_eq(srvt_do(&srv, path, &rq, &r), 0);
    return r;
}

/* ==== Lingering close =================================================== */

/* Sends the headers, then the whole body without waiting, as urllib does,
 * then reads the reply until the server closes. Returns the status; -1 when
 * sending failed (reset or broken pipe: urllib raises there and never reads
 * the reply), 0 when no status line came. */
static int post_whole_body(size_t body_len) {
    int fd = srvt_connect(&srv);
    ck_assert_int_ge(fd, 0);
    struct timeval tv = {10, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    char head[256];
    int hn = snprintf(head, sizeof head,
                      "POST /attention/simple HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                      "Content-Type: application/json\r\nContent-Length: %zu\r\n\r\n", body_len);
    static char chunk[65536];
    memset(chunk, ' ', sizeof chunk);
    int ok = send(fd, head, (size_t)hn, MSG_NOSIGNAL) == hn;
    for (size_t sent = 0; ok && sent < body_len;) {
        size_t n = body_len - sent < sizeof chunk ? body_len - sent : sizeof chunk;
        ssize_t w = send(fd, chunk, n, MSG_NOSIGNAL);
        if (w <= 0) {
            fprintf(stderr, "send after %zu of %zu body bytes: %s\n", sent, body_len,
                    w < 0 ? strerror(errno) : "nothing sent");
            close(fd);
            return -1;
        }
        sent += (size_t)w;
    }
    char reply[4096];
    size_t got = 0;
    for (;;) {
        ssize_t n = recv(fd, reply + got, sizeof reply - 1 - got, 0);
        if (n <= 0) break;
        got += (size_t)n;
        if (got == sizeof reply - 1) break;
    }
    close(fd);
    reply[got] = '\0';
    int status = 0;
    if (sscanf(reply, "HTTP/1.1 %d", &status) != 1) status = 0;
    return status;
}

/* 100 of 100 clients that send 1.2 MB at a 1 MB limit without waiting get
 * the 413. Measured with a build without the lingering close (ATTN_SERVER=
 * that binary): 30 of these 100 failed to send with a reset, and Python's
 * urllib failed for 48 of 50. */
START_TEST(t_early_413_reaches_every_client) {
    const char *args[] = {"--max-body", "1000000", "--access-log", "off", NULL};
    start(args);
    int got413 = 0, other = 0;
    for (int i = 0; i < 100; i++) {
        int st = post_whole_body(1200000);
        if (st == 413) got413++;
        else if (other++ == 0) fprintf(stderr, "try %d: status %d instead of 413\n", i, st);
    }
    ck_assert_int_eq(got413, 100);
    /* Far over the limit too (8 MB, read and dropped within the bound). */
    for (int i = 0; i < 5; i++) ck_assert_int_eq(post_whole_body(8000000), 413);
    /* The lingering sockets close once the clients have gone. */
    int lingering = -1;
    for (int i = 0; i < 100 && lingering != 0; i++) {
        srvt_reply r;
        ck_assert_int_eq(srvt_get(&srv, "/metrics", &r), 0);
        const char *p = strstr(r.body, "\nattn_lingering_connections ");
        ck_assert_ptr_nonnull(p);
        lingering = atoi(p + strlen("\nattn_lingering_connections "));
        srvt_reply_free(&r);
        if (lingering) usleep(20000);
    }
    ck_assert_int_eq(lingering, 0);
    stop();
}
END_TEST

/* ==== Metrics =========================================================== */

/* promtool from Debian's prometheus package, installed on first use as
 * `make deps` installs packages (tools/apt-install.sh). */
static const char *promtool(void) {
    if (access("/usr/bin/promtool", X_OK) == 0) return "/usr/bin/promtool";
    int rc = system("tools/apt-install.sh prometheus");
    ck_assert_msg(rc == 0 && access("/usr/bin/promtool", X_OK) == 0,
                  "could not install promtool (Debian package prometheus): reason above");
    return "/usr/bin/promtool";
}

/* The value of the sample that starts with `series` ("name{labels} "). */
static double sample(const char *text, const char *series) {
    char at[512];
    snprintf(at, sizeof at, "\n%s", series);
    const char *p = strstr(text, at);
    ck_assert_msg(p != NULL, "no sample %s in:\n%s", series, text);
    return strtod(p + strlen(at), NULL);
}

START_TEST(t_metrics_as_client_libraries) {
    const char *tool = promtool();
    start(NULL);
    /* Before any request: every labelled series whose labels are known. */
    srvt_reply r;
    ck_assert_int_eq(srvt_get(&srv, "/metrics", &r), 0);
    const char *at_zero[] = {
        "attn_requests_total{endpoint=\"/attention/sdpa\",method=\"POST\",status=\"200\"} 0",
        "attn_requests_total{endpoint=\"/attention/sdpa\",method=\"POST\",status=\"503\"} 0",
        "attn_requests_total{endpoint=\"/attention/simple\",method=\"OPTIONS\",status=\"204\"} 0",
        "attn_requests_total{endpoint=\"/openapi.json\",method=\"GET\",status=\"304\"} 0",
        "attn_requests_total{endpoint=\"/readyz\",method=\"HEAD\",status=\"503\"} 0",
        "attn_requests_aborted_total{endpoint=\"/attention/causal\",method=\"POST\"} 0",
        "attn_request_duration_seconds_count{endpoint=\"/attention/self\",method=\"POST\"} 0",
        "attn_memory_refused_total{reason=\"never_fits\"} 0",
    };
    for (size_t i = 0; i < sizeof at_zero / sizeof at_zero[0]; i++)
        ck_assert_msg(strstr(r.body, at_zero[i]), "metrics lack '%s':\n%s", at_zero[i], r.body);
    srvt_reply_free(&r);

    /* Methods are told apart: a preflight, a HEAD and a 405 are not POSTs. */
    ck_assert_int_eq(srvt_post(&srv, "/attention/multihead", srvt_seed_mha, &r), 0);
    ck_assert_int_eq(srvt_check_seed_mha(&r), 0);
    srvt_reply_free(&r);
    srvt_req opt = {.method = "OPTIONS"}, head = {.method = "HEAD"}, put = {.method = "PUT"};
    ck_assert_int_eq(srvt_do(&srv, "/attention/multihead", &opt, &r), 0);
    srvt_reply_free(&r);
    ck_assert_int_eq(srvt_do(&srv, "/healthz", &head, &r), 0);
    srvt_reply_free(&r);
    ck_assert_int_eq(srvt_do(&srv, "/attention/multihead", &put, &r), 0);
    ck_assert_int_eq(r.status, 405);
    srvt_reply_free(&r);

    ck_assert_int_eq(srvt_get(&srv, "/metrics", &r), 0);
    const char *t = r.body;
    ck_assert_double_eq(sample(t, "attn_requests_total{endpoint=\"/attention/multihead\",method=\"POST\",status=\"200\"} "), 1);
    ck_assert_double_eq(sample(t, "attn_requests_total{endpoint=\"/attention/multihead\",method=\"OPTIONS\",status=\"204\"} "), 1);
    ck_assert_double_eq(sample(t, "attn_requests_total{endpoint=\"/attention/multihead\",method=\"other\",status=\"405\"} "), 1);
    ck_assert_double_eq(sample(t, "attn_requests_total{endpoint=\"/healthz\",method=\"HEAD\",status=\"200\"} "), 1);
    ck_assert_double_eq(sample(t, "attn_request_duration_seconds_count{endpoint=\"/attention/multihead\",method=\"POST\"} "), 1);

    /* Build info and the standard process metrics. */
    char build[128];
    snprintf(build, sizeof build, "attn_build_info{version=\"%s\",", ATTN_VERSION);
    ck_assert_msg(strstr(t, build), "no %s in:\n%s", build, t);
    double rss = sample(t, "process_resident_memory_bytes ");
    double vsz = sample(t, "process_virtual_memory_bytes ");
    double fds = sample(t, "process_open_fds ");
    double max_fds = sample(t, "process_max_fds ");
    double started = sample(t, "process_start_time_seconds ");
    double cpu = sample(t, "process_cpu_seconds_total ");
    ck_assert(rss > 1e6 && rss < 1e9 && vsz >= rss);
    ck_assert(fds >= 5 && fds <= max_fds);
    ck_assert(cpu >= 0 && cpu < 60);
    double now = (double)time(NULL);
    ck_assert_msg(started <= now + 1 && started > now - 120, "start time %f, now %f", started, now);
    ck_assert_double_eq(sample(t, "attn_memory_reserved_bytes "), 0);
    ck_assert(sample(t, "attn_memory_budget_bytes ") > 0);

    /* promtool's lint of the exposition format: nothing to say. */
    char path[] = "/tmp/attn-metrics-XXXXXX";
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(write(fd, r.body, r.len), (ssize_t)r.len);
    close(fd);
    char cmd[256];
    snprintf(cmd, sizeof cmd, "%s check metrics < %s 2>&1", tool, path);
    FILE *p = popen(cmd, "r");
    ck_assert_ptr_nonnull(p);
    char out[4096];
    size_t n = fread(out, 1, sizeof out - 1, p);
    out[n] = '\0';
    int rc = pclose(p);
    unlink(path);
    ck_assert_msg(rc == 0 && n == 0, "promtool check metrics (exit %d):\n%s", rc, out);
    srvt_reply_free(&r);
    stop();
}
END_TEST

/* ==== CORS ============================================================== */

START_TEST(t_cors_origin_list) {
    const char *args[] = {"--cors-origin", "https://a.example, http://localhost:5173", NULL};
    start(args);
    const char *from_a[] = {"Origin: https://a.example", NULL};
    const char *from_local[] = {"Origin: http://localhost:5173", NULL};
    const char *from_other[] = {"Origin: https://evil.example", NULL};
    srvt_reply r = get_with("/healthz", from_a);
    srvt_assert_header(&r, "Access-Control-Allow-Origin", "https://a.example");
    srvt_assert_header(&r, "Vary", "Origin");
    srvt_assert_header(&r, "Access-Control-Expose-Headers", "Retry-After, Server-Timing, ETag, Content-Encoding");
    srvt_reply_free(&r);
    r = get_with("/healthz", from_local);
    srvt_assert_header(&r, "Access-Control-Allow-Origin", "http://localhost:5173");
    srvt_reply_free(&r);
    /* Not on the list: no CORS grant, but the reply still varies by Origin. */
    r = get_with("/healthz", from_other);
    srvt_assert_header(&r, "Access-Control-Allow-Origin", NULL);
    srvt_assert_header(&r, "Vary", "Origin");
    srvt_reply_free(&r);
    /* A page can read Retry-After off a 503 (and the compute timing). */
    srvt_req rq = {.body = srvt_seed_mha, .len = strlen(srvt_seed_mha), .headers = from_a};
    ck_assert_int_eq(srvt_do(&srv, "/attention/multihead", &rq, &r), 0);
    ck_assert_int_eq(srvt_check_seed_mha(&r), 0);
    char buf[256];
    ck_assert_ptr_nonnull(srvt_header(&r, "Server-Timing", buf, sizeof buf));
    ck_assert_msg(strstr(buf, "compute;dur=") != NULL, "Server-Timing: %s", buf);
    srvt_reply_free(&r);
    stop();

    const char *any[] = {"--cors-origin", "*", NULL};
    start(any);
    r = get_with("/healthz", from_other);
    srvt_assert_header(&r, "Access-Control-Allow-Origin", "*");
    srvt_assert_header(&r, "Vary", NULL);
    srvt_reply_free(&r);
    stop();

    /* Not origins: refused at startup, exit 2. */
    const char *bad[][3] = {{"--cors-origin", "https://a.example/app", NULL},
                            {"--cors-origin", "*, https://a.example", NULL},
                            {"--cors-origin", "a.example", NULL}};
    for (int i = 0; i < 3; i++) {
        char *err = NULL;
        ck_assert_int_eq(srvt_run(bad[i], NULL, NULL, &err), 2);
        ck_assert_msg(err && strstr(err, "--cors-origin"), "stderr: %s", err ? err : "");
        free(err);
    }
}
END_TEST

/* ==== HTTP details ====================================================== */

START_TEST(t_openapi_etag_and_304) {
    start(NULL);
    srvt_reply r = get_with("/openapi.json", NULL);
    ck_assert_int_eq(r.status, 200);
    char etag[64];
    ck_assert_ptr_nonnull(srvt_header(&r, "ETag", etag, sizeof etag));
    ck_assert_msg(etag[0] == '"' && etag[strlen(etag) - 1] == '"', "ETag %s", etag);
    srvt_assert_header(&r, "Cache-Control", "no-cache");
    size_t full = r.len;
    ck_assert_uint_gt(full, 1000);
    srvt_reply_free(&r);

    char inm[128], weak[128], list[160];
    snprintf(inm, sizeof inm, "If-None-Match: %s", etag);
    snprintf(weak, sizeof weak, "If-None-Match: W/%s", etag);
    snprintf(list, sizeof list, "If-None-Match: \"0000\", %s", etag);
    const char *match[] = {inm, weak, list, "If-None-Match: *"};
    for (int i = 0; i < 4; i++) {
        const char *h[] = {match[i], NULL};
        r = get_with("/openapi.json", h);
        ck_assert_msg(r.status == 304, "%s: status %ld", match[i], r.status);
        ck_assert_uint_eq(r.len, 0);
        srvt_assert_header(&r, "ETag", etag);
        srvt_reply_free(&r);
    }
    const char *other[] = {"If-None-Match: \"0123456789abcdef\"", NULL};
    r = get_with("/openapi.json", other);
    ck_assert_int_eq(r.status, 200);
    ck_assert_uint_eq(r.len, full);
    srvt_reply_free(&r);
    stop();
}
END_TEST

static unsigned char *zgzip(const void *in, size_t n, size_t *out_len) {
    unsigned char *z = zref_gzip(in, n, out_len);
    ck_assert_ptr_nonnull(z);
    return z;
}

static char *zgunzip(const void *in, size_t n, size_t *out_len) {
    char *out = zref_gunzip(in, n, 64 << 20, out_len);
    ck_assert_ptr_nonnull(out);
    return out;
}

/* r's body is gzip (Content-Encoding: gzip) of want's len bytes. */
static void expect_gzip_of(const srvt_reply *r, const char *want, size_t len) {
    srvt_assert_header(r, "Content-Encoding", "gzip");
    size_t n;
    char *back = zgunzip(r->body, r->len, &n);
    ck_assert_uint_eq(n, len);
    ck_assert_int_eq(memcmp(back, want, n), 0);
    free(back);
}

static srvt_reply post_with(const char *path, const void *body, size_t len, const char *const *h) {
    srvt_req rq = {.body = body, .len = len, .headers = h};
    srvt_reply r;
    ck_assert_int_eq(srvt_do(&srv, path, &rq, &r), 0);
    return r;
}

/* A MultiHeadAttention request whose reply (about 60 KB) is worth compressing. */
static char *large_request(void) {
    size_t cap = 1 << 16, n = 0;
    char *b = malloc(cap);
    n += (size_t)snprintf(b + n, cap - n, "{\"module\": \"MultiHeadAttention\", \"d_in\": 8, \"d_out\": 8,"
                          " \"num_heads\": 2, \"init\": {\"seed\": 1}, \"inputs\": [");
    for (int t = 0; t < 64; t++) {
        n += (size_t)snprintf(b + n, cap - n, "%s[", t ? "," : "");
        for (int c = 0; c < 8; c++) n += (size_t)snprintf(b + n, cap - n, "%s%d.%d", c ? "," : "", (t * 7 + c) % 5, t % 9);
        n += (size_t)snprintf(b + n, cap - n, "]");
    }
    snprintf(b + n, cap - n, "]}");
    return b;
}

/* Request bodies in gzip are inflated (--max-body 100000 bounds the inflated
 * size); other codings are a 415. */
static void gzip_bodies(void) {
    const char *gz[] = {"Content-Encoding: gzip", NULL};
    size_t zn;
    unsigned char *z = zgzip(srvt_seed_mha, strlen(srvt_seed_mha), &zn);
    srvt_reply r = post_with("/attention/multihead", z, zn, gz);
    ck_assert_int_eq(srvt_check_seed_mha(&r), 0);
    srvt_reply_free(&r);
    z[zn / 2] ^= 0x55; /* corrupt */
    r = post_with("/attention/multihead", z, zn, gz);
    ck_assert_int_eq(srvt_check_error(&r, 400, "invalid_gzip"), 0);
    srvt_reply_free(&r);
    free(z);

    /* a 60 KB gzip body that inflates to 1 MB: over --max-body once inflated */
    char *big = malloc(1 << 20);
    memset(big, ' ', 1 << 20);
    z = zgzip(big, 1 << 20, &zn);
    ck_assert_uint_lt(zn, 100000);
    r = post_with("/attention/multihead", z, zn, gz);
    ck_assert_int_eq(srvt_check_error(&r, 413, "too_large"), 0);
    ck_assert_ptr_nonnull(strstr(r.body, "inflated"));
    srvt_reply_free(&r);
    free(z);
    free(big);

    const char *codings[] = {"Content-Encoding: br", "Content-Encoding: gzip, identity"};
    for (int i = 0; i < 2; i++) {
        const char *h[] = {codings[i], NULL};
        r = post_with("/attention/multihead", srvt_seed_mha, strlen(srvt_seed_mha), h);
        ck_assert_int_eq(srvt_check_error(&r, 415, "unsupported_encoding"), 0);
        srvt_assert_header(&r, "Accept-Encoding", "gzip, identity");
        srvt_reply_free(&r);
    }
    const char *identity[] = {"Content-Encoding: identity", NULL};
    r = post_with("/attention/multihead", srvt_seed_mha, strlen(srvt_seed_mha), identity);
    ck_assert_int_eq(srvt_check_seed_mha(&r), 0);
    srvt_reply_free(&r);
}

/* Replies are gzip for clients that take it (accept): the seed's (under 1
 * KB) stays plain; a large one (body's) is gzip, the same bytes inflated. */
static void gzip_replies(const char *body, const char *const *accept) {
    srvt_reply r = post_with("/attention/multihead", srvt_seed_mha, strlen(srvt_seed_mha), accept);
    ck_assert_int_eq(srvt_check_seed_mha(&r), 0);
    srvt_assert_header(&r, "Content-Encoding", NULL);
    srvt_assert_header(&r, "Vary", "Accept-Encoding");
    srvt_reply_free(&r);
    srvt_reply plain = post_with("/attention/multihead", body, strlen(body), NULL);
    ck_assert_int_eq(plain.status, 200);
    ck_assert_uint_gt(plain.len, 20000);
    r = post_with("/attention/multihead", body, strlen(body), accept);
    ck_assert_int_eq(r.status, 200);
    srvt_assert_header(&r, "Content-Encoding", "gzip");
    ck_assert_uint_lt(r.len, plain.len / 2);
    size_t n;
    char *back = zgunzip(r.body, r.len, &n);
    ck_assert_uint_eq(n, plain.len);
    ck_assert_str_eq(back, plain.body);
    free(back);
    srvt_reply_free(&r);
    const char *refuse[] = {"Accept-Encoding: gzip;q=0, identity", NULL};
    r = post_with("/attention/multihead", body, strlen(body), refuse);
    srvt_assert_header(&r, "Content-Encoding", NULL);
    ck_assert_str_eq(r.body, plain.body);
    srvt_reply_free(&r);
    srvt_reply_free(&plain);
}

/* safetensors: sent from the arrays the computation wrote (api_reply
 * parts), or made whole for gzip; the bytes of api_handle's copied file
 * either way */
static void safetensors_replies(const char *body) {
    api_limits lim = {.max_elements = 1 << 24, .prefer_format = 1 + API_FORMAT_SAFETENSORS};
    api_reply want;
    ck_assert_int_eq(api_handle(API_EP_MULTIHEAD, body, strlen(body), &lim, &want), 200);
    ck_assert_int_eq(want.n_parts, 0);
    const char *st[] = {"Accept: application/octet-stream", NULL};
    srvt_reply r = post_with("/attention/multihead", body, strlen(body), st);
    ck_assert_int_eq(r.status, 200);
    srvt_assert_header(&r, "Content-Type", "application/octet-stream");
    ck_assert_uint_eq(r.len, want.body.len);
    ck_assert_int_eq(memcmp(r.body, want.body.data, r.len), 0);
    srvt_reply_free(&r);
    const char *st_gzip[] = {"Accept: application/octet-stream", "Accept-Encoding: gzip", NULL};
    r = post_with("/attention/multihead", body, strlen(body), st_gzip);
    ck_assert_int_eq(r.status, 200);
    expect_gzip_of(&r, want.body.data, want.body.len);
    srvt_reply_free(&r);
    api_reply_free(&want);
}

/* Request bodies in gzip are inflated (--max-body bounds the inflated size);
 * replies are gzip for clients that take it; other codings are a 415. */
START_TEST(t_content_codings) {
    start((const char *const[]){"--max-body", "100000", NULL});
    gzip_bodies();
    const char *accept[] = {"Accept-Encoding: deflate, gzip;q=0.8", NULL};
    char *body = large_request();
    gzip_replies(body, accept);
    safetensors_replies(body);
    stop();

    /* --gzip-level 0: never */
    start((const char *const[]){"--gzip-level", "0", NULL});
    srvt_reply r = post_with("/attention/multihead", body, strlen(body), accept);
    ck_assert_int_eq(r.status, 200);
    srvt_assert_header(&r, "Content-Encoding", NULL);
    srvt_reply_free(&r);
    free(body);
    stop();
}
END_TEST

/* ==== Streamed replies =================================================== */

/* With --stream-min-size 16M, a JSON reply of 16 MiB or more goes out while
 * it is written (chunked) to a client that does not take gzip, and is the
 * same bytes as the reply written whole; with gzip, and under the default
 * 128 MiB, it is written whole. A client that hangs up in the middle leaves
 * a server that goes on answering (and, under AddressSanitizer, frees what
 * the stream held). */
START_TEST(t_large_json_streamed) {
    start((const char *const[]){"--stream-min-size", "16M", NULL});
    char *body = srvt_map_body(1024, NULL); /* 4 heads' weights over 1,024 tokens: 33 MB of reply */
    api_limits lim = {.max_elements = 1 << 26};
    api_reply want;
    ck_assert_int_eq(api_handle(API_EP_MULTIHEAD, body, strlen(body), &lim, &want), 200);
    ck_assert_uint_gt(want.body.len, (size_t)16 << 20);

    srvt_reply r = post_with("/attention/multihead", body, strlen(body), NULL);
    ck_assert_int_eq(r.status, 200);
    srvt_assert_header(&r, "Transfer-Encoding", "chunked");
    srvt_assert_header(&r, "Content-Length", NULL);
    char timing[128];
    ck_assert_ptr_nonnull(srvt_header(&r, "Server-Timing", timing, sizeof timing));
    ck_assert_ptr_nonnull(strstr(timing, "compute;dur="));
    ck_assert_uint_eq(r.len, want.body.len);
    ck_assert_int_eq(memcmp(r.body, want.body.data, r.len), 0);
    srvt_reply_free(&r);

    const char *gz[] = {"Accept-Encoding: gzip", NULL};
    r = post_with("/attention/multihead", body, strlen(body), gz);
    ck_assert_int_eq(r.status, 200);
    srvt_assert_header(&r, "Transfer-Encoding", NULL);
    expect_gzip_of(&r, want.body.data, want.body.len);
    srvt_reply_free(&r);

    /* hang up after the first bytes of the reply, three times, at once and
     * while the worker is still writing */
    for (int i = 0; i < 3; i++) {
        int fd = srvt_raw_post(&srv, "/attention/multihead", NULL, body, strlen(body));
        char buf[4096];
        ssize_t got = read(fd, buf, sizeof buf);
        ck_assert_int_gt(got, 0);
        ck_assert_ptr_nonnull(memmem(buf, (size_t)got, "chunked", 7));
        close(fd);
    }
    r = post_with("/attention/multihead", srvt_seed_mha, strlen(srvt_seed_mha), NULL);
    ck_assert_int_eq(srvt_check_seed_mha(&r), 0);
    srvt_reply_free(&r);
    ck_assert_int_eq(srvt_stop(&srv, 30), 0);
    ck_assert_msg(strstr(srv.log, "aborted") != NULL, "no hang-up in the log:\n%s", srv.log);
    srvt_release(&srv);

    /* the default (128 MiB) and 0 (never): the 33 MB reply goes whole */
    const char *const *whole[] = {NULL, (const char *const[]){"--stream-min-size", "0", NULL}};
    for (int i = 0; i < 2; i++) {
        start(whole[i]);
        r = post_with("/attention/multihead", body, strlen(body), NULL);
        ck_assert_int_eq(r.status, 200);
        srvt_assert_header(&r, "Transfer-Encoding", NULL);
        ck_assert_uint_eq(r.len, want.body.len);
        ck_assert_int_eq(memcmp(r.body, want.body.data, r.len), 0);
        srvt_reply_free(&r);
        stop();
    }
    api_reply_free(&want);
    free(body);
}
END_TEST

/* ==== Memory budget ===================================================== */

#define BUDGET_MIB 48
#define MARGIN_MIB 24    /* the process itself (8 MiB idle), bodies, allocator slack */
#define N_LARGE 16
#define LARGE_TOKENS 256

/* The server's peak resident memory (VmHWM), bytes. */
static double peak_rss(pid_t pid) {
    long kb = srvt_status_kb(pid, "VmHWM");
    ck_assert(kb > 0);
    return (double)kb * 1024;
}

/* 16 concurrent requests of about 34 MiB each by the server's estimate (a
 * 16 MiB out_proj, the projections, the reply) on 4 workers under a 48 MiB
 * budget, so that only one computes at a time: each is answered, 200 or 503,
 * and the peak resident memory stays under the budget plus a stated margin.
 * Measured here: 38 MiB peak; with OPS_BUDGET=4G in the environment (no
 * effective budget) the same load peaks at 123 MiB and this test fails. */
START_TEST(t_memory_budget_holds) {
    const char *args[] = {"--max-memory", getenv("OPS_BUDGET") ? getenv("OPS_BUDGET") : "48M", "--threads", "4", "--max-queue", "8",
                          "--access-log", "off", NULL};
    start(args);
    char *body = srvt_slow_body(LARGE_TOKENS);
    ck_assert_ptr_nonnull(body);
    srvt_reply replies[N_LARGE];
    srvt_post_concurrently(&srv, "/attention/multihead", body, 120000, N_LARGE, replies);
    int ok = 0, busy = 0;
    for (int i = 0; i < N_LARGE; i++) {
        srvt_reply *r = &replies[i];
        ck_assert_msg(r->curl_code == 0, "request %d lost: curl error %d", i, r->curl_code);
        int st = srvt_check_slow_or_busy(r, LARGE_TOKENS, NULL, 0);
        ck_assert_msg(st == 200 || st == 503, "request %d: reason above", i);
        ok += st == 200;
        busy += st == 503;
        srvt_reply_free(r);
    }
    ck_assert_int_eq(ok + busy, N_LARGE);
    ck_assert_int_ge(ok, 2);
    double peak = peak_rss(srv.pid);
    fprintf(stderr, "memory budget: %d x 200, %d x 503, peak RSS %.1f MiB (budget %d MiB)\n", ok,
            busy, peak / 1048576.0, BUDGET_MIB);
#ifndef __SANITIZE_ADDRESS__   /* ASan's shadow memory and quarantine are not the server's */
    ck_assert_msg(peak <= (BUDGET_MIB + MARGIN_MIB) * 1048576.0, "peak RSS %.1f MiB",
                  peak / 1048576.0);
#endif

    /* Released once each reply has been sent, which the server learns just
     * after the client has it. */
    srvt_reply r;
    for (int i = 0;; i++) {
        ck_assert_int_eq(srvt_get(&srv, "/metrics", &r), 0);
        if (sample(r.body, "attn_memory_reserved_bytes ") == 0) break;
        ck_assert_msg(i < 100, "memory still reserved 2 s after the last reply:\n%s", r.body);
        srvt_reply_free(&r);
        usleep(20000);
    }
    ck_assert_double_eq(sample(r.body, "attn_memory_budget_bytes "), BUDGET_MIB * 1048576.0);
    double rpeak = sample(r.body, "attn_memory_reserved_peak_bytes ");
    ck_assert(rpeak > 16 * 1048576.0 && rpeak <= BUDGET_MIB * 1048576.0);
    ck_assert(sample(r.body, "attn_memory_waits_total ") >= 1);
    srvt_reply_free(&r);

    /* One that could never fit is refused at once: 413, no Retry-After
     * (retrying would not help). */
    char *huge = srvt_slow_body(1024);   /* about 100 MiB */
    ck_assert_int_eq(srvt_post(&srv, "/attention/multihead", huge, &r), 0);
    ck_assert_int_eq(srvt_check_error(&r, 413, "too_large"), 0);
    srvt_assert_header(&r, "Retry-After", NULL);
    ck_assert_msg(strstr(r.body, "--max-memory"), "%s", r.body);
    srvt_reply_free(&r);
    free(huge);
    free(body);
    stop();
}
END_TEST

/* The server's minor page faults so far (/proc/PID/stat, field 10). */
static long minor_faults(pid_t pid) {
    char path[64], line[1024];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    ck_assert_ptr_nonnull(f);
    ck_assert_ptr_nonnull(fgets(line, sizeof line, f));
    fclose(f);
    const char *p = strrchr(line, ')'); /* the command name may hold spaces */
    ck_assert_ptr_nonnull(p);
    long v[8] = {0};
    ck_assert_int_eq(sscanf(p + 2, "%*c %ld %ld %ld %ld %ld %ld %ld %ld", &v[0], &v[1], &v[2], &v[3],
                            &v[4], &v[5], &v[6], &v[7]),
                     8);
    return v[6]; /* minflt: after state, ppid, pgrp, session, tty, tpgid, flags */
}

/* Under an ample budget, a repeated large request reuses the memory the one
 * before freed: no page fault per 4 KiB of its ~34 MiB of arrays (about
 * 8,000 faults when each array was a fresh mapping). One worker, so that
 * every request runs on the same arena. */
START_TEST(t_freed_memory_stays_warm) {
    const char *args[] = {"--threads", "1", "--access-log", "off", NULL};
    start(args);
    char *body = srvt_slow_body(LARGE_TOKENS);
    ck_assert_ptr_nonnull(body);
    srvt_reply r;
    long faults = 0;
    for (int i = 0; i < 4; i++) {
        long before = minor_faults(srv.pid);
        ck_assert_int_eq(srvt_post(&srv, "/attention/multihead", body, &r), 0);
        ck_assert_int_eq(r.status, 200);
        srvt_reply_free(&r);
        faults = minor_faults(srv.pid) - before;
        fprintf(stderr, "warm memory: request %d took %ld minor page faults\n", i + 1, faults);
        if (i == 0) ck_assert_msg(faults > 2000, "the first request should map its arrays: %ld", faults);
    }
#ifndef __SANITIZE_ADDRESS__ /* ASan's allocator maps and quarantines memory its own way */
    ck_assert_msg(faults < 500, "the 4th identical request took %ld page faults", faults);
#endif
    free(body);
    stop();
}
END_TEST

static Suite *ops_suite(void) {
    /* Replies computed here are compared byte for byte with the server's:
     * bits depend on OpenBLAS's thread count (core/attention.h), and the
     * server runs it on one (attn_pool_create). */
    openblas_set_num_threads(1);
    const TTest *tests[] = {t_early_413_reaches_every_client, t_metrics_as_client_libraries,
                            t_cors_origin_list, t_openapi_etag_and_304, t_content_codings,
                            t_large_json_streamed, t_memory_budget_holds, t_freed_memory_stays_warm, NULL};
    return suite_with("server_ops", "ops", 240, tests, NULL, teardown);
}

const test_program TEST_PROGRAM = {.suites = {ops_suite}};
