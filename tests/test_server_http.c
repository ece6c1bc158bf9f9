/* test_server_http.c - the real attention-server over HTTP: every endpoint,
 * every error status with its JSON body, CORS, the access log.
 *
 * Each test starts its own server of this build ($BUILD/attention-server) on
 * a free loopback port, talks to it with libcurl, and stops it with SIGTERM,
 * asserting exit status 0 and no process left behind.
 */
#include <check.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "api/api.h"
#include "core/attention.h"
#include "support/check_main.h"
#include "support/server_harness.h"
#include "support/server_requests.h"
#include "support/zref.h"

static srvt_server srv;

static void start(const char *const *args) { srvt_must_start(&srv, args); }

static void stop(void) { srvt_must_stop(&srv); }

static void teardown(void) { srvt_release(&srv); }

static json_t *body_json(const srvt_reply *r) {
    json_error_t e;
    json_t *j = json_loadb(r->body, r->len, 0, &e);
    ck_assert_msg(j != NULL, "not JSON: %s", r->body);
    return j;
}

/* GET path, answered 200. */
static void get_200(const char *path, srvt_reply *r) {
    ck_assert_int_eq(srvt_get(&srv, path, r), 0);
    ck_assert_msg(r->status == 200, "GET %s: %ld %s", path, r->status, r->body);
}

/* ==== GET endpoints ===================================================== */

START_TEST(t_health_and_ready) {
    start(NULL);
    const char *paths[] = {"/healthz", "/readyz"};
    for (int i = 0; i < 2; i++) {
        srvt_reply r;
        get_200(paths[i], &r);
        ck_assert_str_eq(r.body, "{\"status\":\"ok\"}");
        srvt_assert_header(&r, "Content-Type", "application/json");
        srvt_reply_free(&r);
    }
    srvt_reply r;
    srvt_req head = {.method = "HEAD"};
    ck_assert_int_eq(srvt_do(&srv, "/healthz", &head, &r), 0);
    ck_assert_int_eq(r.status, 200);
    ck_assert_uint_eq(r.len, 0);
    srvt_reply_free(&r);
    stop();
}
END_TEST

START_TEST(t_version) {
    start(NULL);
    srvt_reply r;
    get_200("/version", &r);
    json_t *j = body_json(&r);
    ck_assert_str_eq(json_string_value(json_object_get(j, "name")), "attention-server");
    ck_assert_str_eq(json_string_value(json_object_get(j, "version")), ATTN_VERSION);
    json_t *build = json_object_get(j, "build");
    ck_assert(json_is_string(json_object_get(build, "date")));
    ck_assert(json_is_string(json_object_get(build, "compiler")));
    json_t *blas = json_object_get(j, "openblas");
    ck_assert(json_string_length(json_object_get(blas, "core")) > 0);
    /* One OpenBLAS thread per worker: the server's documented choice. */
    ck_assert_int_eq(json_integer_value(json_object_get(blas, "threads")), 1);
    json_decref(j);
    srvt_reply_free(&r);
    stop();
}
END_TEST

START_TEST(t_openapi) {
    start(NULL);
    srvt_reply r;
    get_200("/openapi.json", &r);
    srvt_assert_header(&r, "Content-Type", "application/json");
    json_t *j = body_json(&r);
    ck_assert(json_is_string(json_object_get(j, "openapi")));
    json_t *paths = json_object_get(j, "paths");
    const char *want[] = {"/attention/simple", "/attention/self", "/attention/causal",
                          "/attention/multihead", "/attention/sdpa", "/healthz", "/readyz",
                          "/metrics", "/version"};
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
        ck_assert_msg(json_object_get(paths, want[i]) != NULL, "openapi lacks %s", want[i]);
    json_decref(j);
    /* replies over 1 KiB go gzipped to clients that take it, these too: the
     * same bytes inflated, under an ETag of their own (a 304 for it) */
    const char *docs[] = {"/openapi.json", "/"};
    for (int d = 0; d < 2; d++) {
        srvt_reply plain, gz, again;
        get_200(docs[d], &plain);
        srvt_req rq = {.method = "GET", .headers = (const char *const[]){"Accept-Encoding: gzip", NULL}};
        ck_assert_int_eq(srvt_do(&srv, docs[d], &rq, &gz), 0);
        ck_assert_int_eq(gz.status, 200);
        srvt_assert_header(&gz, "Content-Encoding", "gzip");
        srvt_assert_header(&gz, "Vary", "Accept-Encoding");
        size_t n;
        char *inflated = zref_gunzip(gz.body, gz.len, (size_t)1 << 26, &n);
        ck_assert_msg(inflated && n == plain.len && memcmp(inflated, plain.body, n) == 0,
                      "%s: gzip body of %zu bytes is not the document", docs[d], gz.len);
        ck_assert_uint_lt(gz.len, plain.len / 2);
        char etag[64], etag_gz[64], inm[96];
        ck_assert_ptr_nonnull(srvt_header(&plain, "ETag", etag, sizeof etag));
        ck_assert_ptr_nonnull(srvt_header(&gz, "ETag", etag_gz, sizeof etag_gz));
        ck_assert_str_ne(etag, etag_gz);
        snprintf(inm, sizeof inm, "If-None-Match: %s", etag_gz);
        srvt_req rq2 = {.method = "GET", .headers = (const char *const[]){"Accept-Encoding: gzip", inm, NULL}};
        ck_assert_int_eq(srvt_do(&srv, docs[d], &rq2, &again), 0);
        ck_assert_int_eq(again.status, 304);
        free(inflated);
        srvt_reply_free(&plain), srvt_reply_free(&gz), srvt_reply_free(&again);
    }
    srvt_reply_free(&r);
    stop();
}
END_TEST

START_TEST(t_metrics_count_requests) {
    start(NULL);
    srvt_reply r;
    for (int i = 0; i < 3; i++) {
        ck_assert_int_eq(srvt_post(&srv, "/attention/multihead", srvt_seed_mha, &r), 0);
        ck_assert_int_eq(srvt_check_seed_mha(&r), 0);
        srvt_reply_free(&r);
    }
    ck_assert_int_eq(srvt_get(&srv, "/nowhere", &r), 0);
    srvt_reply_free(&r);
    get_200("/metrics", &r);
    srvt_assert_header(&r, "Content-Type", "text/plain; version=0.0.4; charset=utf-8");
    const char *want[] = {
        "attn_requests_total{endpoint=\"/attention/multihead\",method=\"POST\",status=\"200\"} 3\n",
        "attn_requests_total{endpoint=\"other\",method=\"GET\",status=\"404\"} 1\n",
        "attn_requests_total{endpoint=\"/healthz\",method=\"GET\",status=\"200\"} ",
        "# TYPE attn_request_duration_seconds histogram\n",
        "attn_request_duration_seconds_bucket{endpoint=\"/attention/multihead\",method=\"POST\",le=\"+Inf\"} 3\n",
        "attn_request_duration_seconds_count{endpoint=\"/attention/multihead\",method=\"POST\"} 3\n",
        "attn_request_duration_seconds_sum{endpoint=\"/attention/multihead\",method=\"POST\"} ",
        "attn_requests_in_flight 1\n",   /* this request */
        "attn_request_bytes_total ", "attn_response_bytes_total ", "attn_queue_jobs 0\n",
        "attn_workers_busy 0\n", "attn_draining 0\n",
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
        ck_assert_msg(strstr(r.body, want[i]) != NULL, "metrics lack '%s':\n%.2000s", want[i],
                      r.body);   /* clamped: Check drops longer messages */
    /* bytes in: three seed bodies at least */
    const char *b = strstr(r.body, "\nattn_request_bytes_total ");
    ck_assert_ptr_nonnull(b);
    ck_assert_int_ge(atol(b + strlen("\nattn_request_bytes_total ")), 3 * (long)strlen(srvt_seed_mha));
    srvt_reply_free(&r);
    stop();
}
END_TEST

/* ==== POST endpoints ==================================================== */

/* POSTs the seed request with that Content-Type header (NULL: none): the
 * chapter's numbers come back, as JSON. */
static void expect_seed_mha(const char *content_type) {
    const char *h[] = {content_type, NULL};
    srvt_req rq = {.body = srvt_seed_mha, .len = strlen(srvt_seed_mha),
                   .headers = content_type ? h : NULL};
    srvt_reply r;
    ck_assert_int_eq(srvt_do(&srv, "/attention/multihead", &rq, &r), 0);
    ck_assert_msg(srvt_check_seed_mha(&r) == 0, "content type %s",
                  content_type ? content_type : "none");
    srvt_assert_header(&r, "Content-Type", "application/json");
    srvt_reply_free(&r);
}

/* The status of a request sent as raw bytes (its target in absolute form). */
static int raw_status(const char *request) {
    srvt_raw_reply r;
    ck_assert_int_eq(srvt_raw(&srv, request, strlen(request), 10000, &r), 0);
    int status = srvt_raw_status(&r);
    srvt_raw_free(&r);
    return status;
}

/* The seed request; then targets in absolute form (RFC 9112, 3.2.2: a
 * server accepts them; the path is what routes), which were 404s. */
START_TEST(t_seed_multihead) {
    start(NULL);
    expect_seed_mha(NULL);
    char req[4096];
    snprintf(req, sizeof req, "POST http://127.0.0.1:%d/attention/multihead HTTP/1.1\r\nHost: 127.0.0.1\r\n"
             "Content-Length: %zu\r\nConnection: close\r\n\r\n%s", srv.port, strlen(srvt_seed_mha), srvt_seed_mha);
    ck_assert_int_eq(raw_status(req), 200);
    ck_assert_int_eq(raw_status("GET HTTP://example.com/healthz?x=1 HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n"), 200);
    ck_assert_int_eq(raw_status("GET https://example.com HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n"), 200);
    ck_assert_int_eq(raw_status("GET http://example.com/nope HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n"), 404);
    stop();
}
END_TEST

/* curl -d sends application/x-www-form-urlencoded: parsed as JSON anyway;
 * so are text/plain and no content type at all. */
/* The status of POST /model/gpt2 (the demo model) with an Accept header. */
static long model_with_accept(const char *accept, const char *extra, srvt_reply *r) {
    char body[256], head[160];
    snprintf(body, sizeof body, "{\"model\": \"shakespeare\", \"text\": \"Hi\"%s}", extra);
    snprintf(head, sizeof head, "Accept: %s", accept);
    srvt_req rq = {.body = body, .len = strlen(body), .headers = (const char *const[]){head, NULL}};
    ck_assert_int_eq(srvt_do(&srv, "/model/gpt2", &rq, r), 0);
    return r->status;
}

START_TEST(t_content_type_ignored) {
    start(NULL);
    const char *types[] = {NULL, "Content-Type: application/x-www-form-urlencoded",
                           "Content-Type: text/plain", "Content-Type: application/json"};
    for (size_t i = 0; i < 4; i++) expect_seed_mha(types[i]);
    /* Accept: a format /model/gpt2 cannot write is 406 (as output_format png
     * is a 400), not ignored; JSON when Accept takes it too; another it takes;
     * output_format in the body wins */
    srvt_reply r;
    ck_assert_int_eq(model_with_accept("image/png", "", &r), 406);
    ck_assert_int_eq(srvt_check_error(&r, 406, "not_acceptable"), 0);
    ck_assert_msg(strstr(r.body, "safetensors"), "%s", r.body);
    srvt_reply_free(&r);
    ck_assert_int_eq(model_with_accept("image/png, application/json;q=0.5", "", &r), 200);
    srvt_assert_header(&r, "Content-Type", "application/json");
    srvt_reply_free(&r);
    ck_assert_int_eq(model_with_accept("image/png, */*;q=0.1", "", &r), 200);
    srvt_reply_free(&r);
    ck_assert_int_eq(model_with_accept("image/png, application/octet-stream;q=0.2", "", &r), 200);
    srvt_assert_header(&r, "Content-Type", "application/octet-stream");
    srvt_reply_free(&r);
    ck_assert_int_eq(model_with_accept("image/png", ", \"output_format\": \"nested\"", &r), 200);
    srvt_reply_free(&r);
    stop();
}
END_TEST

START_TEST(t_every_post_endpoint) {
    start(NULL);
    srvt_reply r;
    ck_assert_int_eq(srvt_post(&srv, "/attention/simple", srvt_seed_simple, &r), 0);
    ck_assert_int_eq(srvt_check_seed_simple(&r), 0);
    srvt_reply_free(&r);

    const char *bodies[][2] = {
        {"/attention/self", "{\"d_out\":2,\"init\":{\"seed\":789},\"inputs\":[[0.43,0.15,0.89],"
                            "[0.55,0.87,0.66]]}"},
        {"/attention/causal", "{\"d_out\":2,\"context_length\":6,\"dropout\":0.0,\"init\":{\"seed\":"
                              "123},\"inputs\":[[0.43,0.15,0.89],[0.55,0.87,0.66]]}"},
        {"/attention/sdpa", "{\"query\":[[1,0],[0,1]],\"key\":[[1,0],[0,1]],"
                            "\"value\":[[1,2],[3,4]]}"},
    };
    for (size_t i = 0; i < 3; i++) {
        ck_assert_int_eq(srvt_post(&srv, bodies[i][0], bodies[i][1], &r), 0);
        ck_assert_msg(r.status == 200, "%s: %ld %s", bodies[i][0], r.status, r.body);
        json_t *j = body_json(&r);
        json_t *ctx = json_object_get(j, "context");
        ck_assert_msg(json_array_size(ctx) == 2, "%s: context %s", bodies[i][0], r.body);
        ck_assert(json_is_array(json_object_get(j, "attn_weights")));
        json_decref(j);
        srvt_reply_free(&r);
    }
    /* sdpa on orthonormal keys: softmax([1,0]/sqrt(2)) weights the first value */
    ck_assert_int_eq(srvt_post(&srv, "/attention/sdpa", bodies[2][1], &r), 0);
    json_t *j = body_json(&r);
    double w = json_number_value(json_array_get(json_array_get(json_object_get(j, "attn_weights"), 0), 0));
    ck_assert_double_eq_tol(w, 0.66976, 1e-4);
    json_decref(j);
    srvt_reply_free(&r);
    stop();
}
END_TEST

/* ==== Errors ============================================================ */

START_TEST(t_malformed_json_400) {
    start(NULL);
    const char *bad[] = {"{\"module\": ", "not json", "", "[1,2", "{\"inputs\": [[1, 2], [3]]}"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        srvt_reply r;
        srvt_req rq = {.body = bad[i], .len = strlen(bad[i])};
        ck_assert_int_eq(srvt_do(&srv, "/attention/simple", &rq, &r), 0);
        ck_assert_msg(srvt_check_error(&r, 400, NULL) == 0, "body '%s'", bad[i]);
        srvt_reply_free(&r);
    }
    srvt_reply r;
    ck_assert_int_eq(srvt_post(&srv, "/attention/multihead", "{\"module\": ", &r), 0);
    ck_assert_int_eq(srvt_check_error(&r, 400, "invalid_json"), 0);
    ck_assert_msg(strstr(r.body, "line 1") && strstr(r.body, "column"), "%s", r.body);
    srvt_reply_free(&r);
    stop();
}
END_TEST

/* The server's own paths besides API_ENDPOINT_MAP's (server/route.c). */
static const char *const SERVER_PATHS[] = {" /healthz", " /readyz", " /metrics", " /version",
                                           " /models", " /openapi.json", "GET /"};

START_TEST(t_not_found_404) {
    start(NULL);
    /* The path is echoed in the message: bytes that are not UTF-8, and a
     * long path of 2-byte characters cut mid-character by the message's
     * 200-byte bound, must still give a body that parses. */
    char long_path[1024] = "/";
    for (int i = 0; i < 150; i++) strcat(long_path, "%C3%A9");
    const char *paths[][2] = {{"GET", "/index.html"}, {"GET", "/attention"}, {"POST", "/attention/unknown"},
                              {"GET", "/healthz/"}, {"OPTIONS", "/nope"}, {"DELETE", "/x"},
                              {"GET", "/%ff%c3"}, {"GET", long_path}};
    for (size_t i = 0; i < sizeof paths / sizeof paths[0]; i++) {
        srvt_reply r;
        srvt_req rq = {.method = paths[i][0]};
        if (strcmp(paths[i][0], "POST") == 0) { rq.body = "{}"; rq.len = 2; }
        ck_assert_int_eq(srvt_do(&srv, paths[i][1], &rq, &r), 0);
        ck_assert_msg(srvt_check_error(&r, 404, "not_found") == 0, "%s %s", paths[i][0], paths[i][1]);
        srvt_assert_header(&r, "Content-Type", "application/json");
        /* the message lists every path: each endpoint of the table, the server's own */
        for (int ep = 0; ep < API_EP_COUNT; ep++) {
            char want[80];
            snprintf(want, sizeof want, " %s", api_endpoint_path((api_endpoint)ep));
            ck_assert_msg(strstr(r.body, want), "404 message lacks %s: %s", want, r.body);
        }
        for (int k = 0; k < 7; k++) ck_assert_msg(strstr(r.body, SERVER_PATHS[k]), "404 lacks %s", SERVER_PATHS[k]);
        srvt_reply_free(&r);
    }
    stop();
}
END_TEST

START_TEST(t_method_not_allowed_405) {
    start(NULL);
    struct { const char *method, *path, *allow; } cases[] = {
        {"GET", "/attention/multihead", "POST, OPTIONS"},
        {"PUT", "/attention/sdpa", "POST, OPTIONS"},
        {"POST", "/healthz", "GET, HEAD, OPTIONS"},
        {"DELETE", "/metrics", "GET, HEAD, OPTIONS"},
        {"PATCH", "/version", "GET, HEAD, OPTIONS"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        srvt_reply r;
        srvt_req rq = {.method = cases[i].method};
        if (strcmp(cases[i].method, "POST") == 0) { rq.body = "{}"; rq.len = 2; }
        ck_assert_int_eq(srvt_do(&srv, cases[i].path, &rq, &r), 0);
        ck_assert_msg(srvt_check_error(&r, 405, "method_not_allowed") == 0, "%s %s",
                      cases[i].method, cases[i].path);
        srvt_assert_header(&r, "Allow", cases[i].allow);
        srvt_reply_free(&r);
    }
    stop();
}
END_TEST

/* ==== CORS ============================================================== */

START_TEST(t_cors_preflight) {
    const char *args[] = {"--cors-origin", "https://viz.example", NULL};
    start(args);
    const char *h[] = {"Origin: https://viz.example", "Access-Control-Request-Method: POST",
                       "Access-Control-Request-Headers: content-type", NULL};
    const char *paths[] = {"/attention/multihead", "/attention/simple", "/metrics", "/healthz"};
    for (int i = 0; i < 4; i++) {
        srvt_req rq = {.method = "OPTIONS", .headers = h};
        srvt_reply r;
        ck_assert_int_eq(srvt_do(&srv, paths[i], &rq, &r), 0);
        ck_assert_int_eq(r.status, 204);
        ck_assert_uint_eq(r.len, 0);
        srvt_assert_header(&r, "Access-Control-Allow-Origin", "https://viz.example");
        srvt_assert_header(&r, "Access-Control-Allow-Methods", i < 2 ? "POST, OPTIONS" : "GET, HEAD, OPTIONS");
        srvt_assert_header(&r, "Access-Control-Allow-Headers",
                       "Content-Type, Content-Encoding, Accept, If-None-Match");
        srvt_assert_header(&r, "Access-Control-Max-Age", "86400");
        srvt_reply_free(&r);
    }
    /* ... and on normal replies from that origin, errors included */
    const char *origin[] = {"Origin: https://viz.example", NULL};
    srvt_req rq = {.body = srvt_seed_mha, .len = strlen(srvt_seed_mha), .headers = origin};
    srvt_reply r;
    ck_assert_int_eq(srvt_do(&srv, "/attention/multihead", &rq, &r), 0);
    ck_assert_int_eq(srvt_check_seed_mha(&r), 0);
    srvt_assert_header(&r, "Access-Control-Allow-Origin", "https://viz.example");
    srvt_assert_header(&r, "Vary", "Origin, Accept-Encoding"); /* gzip replies too */
    srvt_reply_free(&r);
    srvt_req get = {.method = "GET", .headers = origin};
    ck_assert_int_eq(srvt_do(&srv, "/missing", &get, &r), 0);
    ck_assert_int_eq(r.status, 404);
    srvt_assert_header(&r, "Access-Control-Allow-Origin", "https://viz.example");
    srvt_reply_free(&r);
    stop();
}
END_TEST

START_TEST(t_no_cors_by_default) {
    start(NULL);
    srvt_req rq = {.method = "OPTIONS"};
    srvt_reply r;
    ck_assert_int_eq(srvt_do(&srv, "/attention/multihead", &rq, &r), 0);
    ck_assert_int_eq(r.status, 204);
    srvt_assert_header(&r, "Allow", "POST, OPTIONS");
    srvt_assert_header(&r, "Access-Control-Allow-Origin", NULL);
    srvt_reply_free(&r);
    stop();
}
END_TEST

/* ==== Access log ======================================================== */

/* The out= of the access log line that contains needle; -1 if none. */
static long long logged_out(const char *needle) {
    const char *line = strstr(srv.log, needle), *out = line ? strstr(line, " out=") : NULL;
    return out ? strtoll(out + 5, NULL, 10) : -1;
}

/* A request whose reply is about 36 MB of safetensors (the 3000 x 3000
 * weights of 3000 tokens). */
static char *big_reply_body(void) {
    size_t cap = 3000 * 16 + 64, n = 0;
    char *b = malloc(cap);
    n += (size_t)snprintf(b + n, cap - n, "{\"output_format\":\"safetensors\",\"inputs\":[");
    for (int t = 0; t < 3000; t++) n += (size_t)snprintf(b + n, cap - n, "%s[%d,1]", t ? "," : "", t % 7);
    snprintf(b + n, cap - n, "]}");
    return b;
}

START_TEST(t_access_log) {
    start(NULL);
    srvt_reply r;
    ck_assert_int_eq(srvt_post(&srv, "/attention/multihead", srvt_seed_mha, &r), 0);
    srvt_reply_free(&r);
    ck_assert_int_eq(srvt_get(&srv, "/nope", &r), 0);
    srvt_reply_free(&r);
    /* out= is what the client got: a large reply whole, then one whose client
     * read 64 KiB of it and hung up */
    char *big = big_reply_body();
    ck_assert_int_eq(srvt_post(&srv, "/attention/simple", big, &r), 0);
    ck_assert_int_eq(r.status, 200);
    size_t whole = r.len;
    srvt_reply_free(&r);
    int fd = srvt_raw_post(&srv, "/attention/simple", NULL, big, strlen(big));
    char buf[4096];
    for (size_t got = 0; got < 65536;) {
        ssize_t k = recv(fd, buf, sizeof buf, 0);
        ck_assert_int_gt(k, 0);
        got += (size_t)k;
    }
    close(fd); /* unread data: a reset */
    srvt_log_wait(&srv, "POST /attention/simple 200", 2, 10);
    free(big);
    ck_assert_int_eq(srvt_stop(&srv, 30), 0); /* keeps srv.log, freed by the teardown */
    ck_assert_int_eq(logged_out("POST /attention/simple 200"), (long long)whole);
    const char *second = strstr(strstr(srv.log, "POST /attention/simple 200") + 1, "POST /attention/simple 200");
    ck_assert_ptr_nonnull(second);
    long long cut = logged_out(second);
    printf("access log: a reply of %zu bytes whole out=%zu; its client gone after 64 KiB: out=%lld\n",
           whole, whole, cut);
    ck_assert_msg(cut >= 0 && cut < (long long)whole / 4, "out=%lld of a %zu-byte reply whose client "
                  "read 64 KiB", cut, whole);
    char want[128];
    snprintf(want, sizeof want, " POST /attention/multihead 200 in=%zu out=", strlen(srvt_seed_mha));
    ck_assert_msg(strstr(srv.log, want) != NULL, "no '%s' in log:\n%s", want, srv.log);
    ck_assert_msg(strstr(srv.log, " GET /nope 404 in=0 out=") != NULL, "log:\n%s", srv.log);
    ck_assert_msg(strstr(srv.log, "ms\n") != NULL, "log:\n%s", srv.log);
}
END_TEST

static Suite *http_suite(void) {
    Suite *s = suite_create("server_http");
    const TTest *tests[] = {
        t_health_and_ready, t_version, t_openapi, t_metrics_count_requests, t_seed_multihead,
        t_content_type_ignored, t_every_post_endpoint, t_malformed_json_400, t_not_found_404,
        t_method_not_allowed_405, t_cors_preflight, t_no_cors_by_default, t_access_log, NULL};
    tcase_add_checked_fixture(tcase_with(s, "http", 120, tests), NULL, teardown);
    return s;
}

const test_program TEST_PROGRAM = {.suites = {http_suite}};
