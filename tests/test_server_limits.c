/* test_server_limits.c - limits and options of the real attention-server:
 * 413 by Content-Length and while reading a chunked body (with the k suffix
 * of --max-body), --max-elements, 503 with Retry-After when the work queue is
 * full, a client that sends half a body (--timeout), bad flags, environment
 * variables, --help, --version and the probe mode.
 */
#include <check.h>
#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "api/api.h"
#include "core/attention.h"
#include "support/check_main.h"
#include "support/server_harness.h"
#include "support/server_requests.h"

static srvt_server srv;

static void start_env(const char *const *args, const char *const *env) {
    ck_assert_msg(srvt_start(&srv, args, env) == 0, "cannot start %s", srvt_binary());
}

static void start(const char *const *args) { start_env(args, NULL); }

static void stop(void) {
    int rc = srvt_stop(&srv, 30);
    ck_assert_msg(rc == 0, "server exit status %d, log:\n%s", rc, srv.log ? srv.log : "");
}

static void teardown(void) { srvt_release(&srv); }

static void assert_healthy(void) {
    srvt_reply r;
    ck_assert_int_eq(srvt_get(&srv, "/healthz", &r), 0);
    ck_assert_int_eq(r.status, 200);
    srvt_reply_free(&r);
}

/* n bytes: a JSON object padded with spaces, valid and harmless. */
static char *padded_body(const char *json, size_t n) {
    size_t len = strlen(json);
    ck_assert_uint_ge(n, len);
    char *b = malloc(n + 1);
    ck_assert_ptr_nonnull(b);
    memcpy(b, json, len);
    memset(b + len, ' ', n - len);
    b[n] = '\0';
    return b;
}

/* ==== Body limit ======================================================== */

/* --max-body 1k is 1024 bytes: 1024 pass, 1025 and 2048 are 413. */
START_TEST(t_max_body_content_length) {
    const char *args[] = {"--max-body", "1k", NULL};
    start(args);
    size_t sizes[] = {1024, 1025, 2048, 300000};
    for (size_t i = 0; i < 4; i++) {
        char *b = padded_body(srvt_seed_mha, sizes[i]);
        srvt_req rq = {.body = b, .len = sizes[i]};
        srvt_reply r;
        ck_assert_int_eq(srvt_do(&srv, "/attention/multihead", &rq, &r), 0);
        if (sizes[i] <= 1024) {
            ck_assert_int_eq(srvt_check_seed_mha(&r), 0);
        } else {
            ck_assert_msg(srvt_check_error(&r, 413, "too_large") == 0, "%zu bytes", sizes[i]);
            ck_assert_msg(strstr(r.body, "1024") != NULL, "%s", r.body);
        }
        srvt_reply_free(&r);
        free(b);
    }
    assert_healthy();
    stop();
}
END_TEST

START_TEST(t_max_body_chunked) {
    const char *args[] = {"--max-body", "1K", NULL};
    start(args);
    size_t sizes[] = {1000, 2048, 1500000};
    for (size_t i = 0; i < 3; i++) {
        char *b = padded_body(srvt_seed_mha, sizes[i]);
        srvt_req rq = {.body = b, .len = sizes[i], .chunked = 1};
        srvt_reply r;
        int rc = srvt_do(&srv, "/attention/multihead", &rq, &r);
        if (sizes[i] <= 1024) {
            ck_assert_int_eq(rc, 0);
            ck_assert_int_eq(srvt_check_seed_mha(&r), 0);
        } else if (sizes[i] < 2 * 1024 + (1 << 20)) {
            /* read and dropped up to another max(max_body, 1 MiB): 413 */
            ck_assert_int_eq(rc, 0);
            ck_assert_int_eq(srvt_check_error(&r, 413, "too_large"), 0);
        } else {
            /* far past the limit the server hangs up instead */
            ck_assert_msg(rc != 0 || r.status == 413, "curl %d status %ld", rc, r.status);
        }
        srvt_reply_free(&r);
        free(b);
    }
    assert_healthy();
    stop();
}
END_TEST

/* The same limit from the environment, with a MiB-style suffix. */
START_TEST(t_max_body_env) {
    const char *env[] = {"ATTN_MAX_BODY=1KiB", NULL};
    start_env(NULL, env);
    char *b = padded_body(srvt_seed_mha, 2000);
    srvt_req rq = {.body = b, .len = 2000};
    srvt_reply r;
    ck_assert_int_eq(srvt_do(&srv, "/attention/multihead", &rq, &r), 0);
    ck_assert_int_eq(srvt_check_error(&r, 413, "too_large"), 0);
    srvt_reply_free(&r);
    free(b);
    stop();
}
END_TEST

/* --max-elements reaches api_limits: the seed request needs more than 10. */
START_TEST(t_max_elements) {
    const char *args[] = {"--max-elements", "10", NULL};
    start(args);
    srvt_reply r;
    ck_assert_int_eq(srvt_post(&srv, "/attention/multihead", srvt_seed_mha, &r), 0);
    ck_assert_int_eq(srvt_check_error(&r, 413, NULL), 0);
    srvt_reply_free(&r);
    stop();
}
END_TEST

/* ==== Queue full ======================================================== */

#define N_SLOW 6
#define SLOW_TOKENS 256

typedef struct {
    const char *body;
    srvt_reply r;
} slow_call;

static void *post_slow(void *arg) {
    slow_call *c = arg;
    srvt_req rq = {.body = c->body, .len = strlen(c->body)};
    srvt_do(&srv, "/attention/multihead", &rq, &c->r);
    return NULL;
}

/* One worker, one queue slot: of six long requests at once, at most two are
 * computed; the others get 503 with Retry-After at once. */
START_TEST(t_queue_full_503) {
    const char *args[] = {"--threads", "1", "--max-queue", "1", NULL};
    start(args);
    char *body = srvt_slow_body(SLOW_TOKENS);
    slow_call calls[N_SLOW];
    pthread_t th[N_SLOW];
    for (int i = 0; i < N_SLOW; i++) {
        calls[i].body = body;
        ck_assert_int_eq(pthread_create(&th[i], NULL, post_slow, &calls[i]), 0);
    }
    int ok = 0, busy = 0;
    for (int i = 0; i < N_SLOW; i++) {
        pthread_join(th[i], NULL);
        srvt_reply *r = &calls[i].r;
        ck_assert_int_eq(r->curl_code, 0);
        if (r->status == 200) {
            ck_assert_int_eq(srvt_check_slow(r, SLOW_TOKENS), 0);
            ok++;
        } else {
            ck_assert_int_eq(srvt_check_error(r, 503, "overloaded"), 0);
            char buf[16];
            ck_assert_ptr_nonnull(srvt_header(r, "Retry-After", buf, sizeof buf));
            ck_assert_str_eq(buf, "1");
            busy++;
        }
        srvt_reply_free(r);
    }
    ck_assert_int_ge(ok, 1);
    ck_assert_int_ge(busy, 1);
    /* after the burst the server computes again */
    srvt_reply r;
    ck_assert_int_eq(srvt_post(&srv, "/attention/multihead", srvt_seed_mha, &r), 0);
    ck_assert_int_eq(srvt_check_seed_mha(&r), 0);
    srvt_reply_free(&r);
    ck_assert_int_eq(srvt_get(&srv, "/metrics", &r), 0);
    char want[96];
    snprintf(want, sizeof want, "attn_requests_total{endpoint=\"/attention/multihead\",method=\"POST\",status=\"503\"} %d\n", busy);
    ck_assert_msg(strstr(r.body, want) != NULL, "no '%s' in\n%s", want, r.body);
    srvt_reply_free(&r);
    free(body);
    stop();
}
END_TEST

/* ==== Slow clients ====================================================== */

/* Headers and half the announced body, then silence: --timeout 1 closes the
 * connection and the server keeps serving others meanwhile. */
START_TEST(t_half_body_times_out) {
    const char *args[] = {"--timeout", "1", NULL};
    start(args);
    int fd = srvt_connect(&srv);
    ck_assert_int_ge(fd, 0);
    const char req[] = "POST /attention/multihead HTTP/1.1\r\nHost: x\r\nContent-Length: 200\r\n\r\n"
                       "{\"module\":\"MultiHeadAttention\",\"d_out\":2,";
    ck_assert_int_eq(send(fd, req, sizeof req - 1, MSG_NOSIGNAL), (ssize_t)(sizeof req - 1));
    assert_healthy();   /* other clients are served meanwhile */

    struct timeval tv = {10, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    struct timeval t0, t1;
    gettimeofday(&t0, NULL);
    char buf[512];
    ssize_t n = recv(fd, buf, sizeof buf, 0);   /* 0: closed; no reply is owed */
    gettimeofday(&t1, NULL);
    double waited = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_usec - t0.tv_usec) / 1e6;
    ck_assert_msg(n <= 0, "got %zd bytes: %.*s", n, (int)(n > 0 ? n : 0), buf);
    ck_assert_msg(waited < 5.0, "connection closed only after %.1f s", waited);
    close(fd);

    assert_healthy();
    srvt_reply r;
    ck_assert_int_eq(srvt_post(&srv, "/attention/multihead", srvt_seed_mha, &r), 0);
    ck_assert_int_eq(srvt_check_seed_mha(&r), 0);
    srvt_reply_free(&r);
    ck_assert_int_eq(srvt_get(&srv, "/metrics", &r), 0);
    ck_assert_msg(strstr(r.body, "attn_requests_aborted_total{endpoint=\"/attention/multihead\",method=\"POST\"} 1\n"),
                  "%s", r.body);
    srvt_reply_free(&r);
    stop();
    ck_assert_msg(strstr(srv.log, "POST /attention/multihead - in=") && strstr(srv.log, "aborted:timeout"),
                  "log:\n%s", srv.log);
}
END_TEST

/* ==== Command line ====================================================== */

START_TEST(t_bad_flags_exit_2) {
    const char *cases[][3] = {{"--port", "http", NULL},     {"--port", "70000", NULL},
                              {"--bogus", NULL, NULL},      {"--max-body", "12x", NULL},
                              {"--max-body", "0", NULL},    {"--threads", "0", NULL},
                              {"--timeout", NULL, NULL},    {"--access-log", "maybe", NULL},
                              {"--max-body", "99999999999G", NULL}, {"--stream-min-size", "-1", NULL}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *out = NULL, *err = NULL;
        int rc = srvt_run(cases[i], NULL, &out, &err);
        ck_assert_msg(rc == 2, "%s %s: exit %d", cases[i][0], cases[i][1] ? cases[i][1] : "", rc);
        /* the error, then one line pointing at --help: not the whole usage */
        ck_assert_msg(err && strstr(err, "--help' lists every option") && !strstr(err, "usage:"),
                      "stderr: %s", err ? err : "");
        int lines = 0;
        for (const char *c = err; *c; c++) lines += *c == '\n';
        ck_assert_msg(lines == 2, "%d lines on stderr: %s", lines, err);
        ck_assert_msg(out && !*out, "stdout not empty: %s", out ? out : "");
        free(out);
        free(err);
    }
    const char *env[] = {"ATTN_PORT=eighty", NULL};
    char *err = NULL;
    ck_assert_int_eq(srvt_run(NULL, env, NULL, &err), 2);
    ck_assert_msg(err && strstr(err, "ATTN_PORT"), "%s", err ? err : "");
    free(err);
}
END_TEST

START_TEST(t_help_and_version) {
    const char *help[] = {"--help", NULL};
    char *out = NULL, *err = NULL;
    ck_assert_int_eq(srvt_run(help, NULL, &out, &err), 0);
    const char *flags[] = {"--host", "--port", "--threads", "--max-body", "--max-elements",
                           "--max-queue", "--timeout", "--cors-origin", "--probe", "--healthcheck",
                           "ATTN_PORT", "ATTN_MAX_BODY"};
    for (size_t i = 0; i < sizeof flags / sizeof flags[0]; i++)
        ck_assert_msg(strstr(out, flags[i]), "--help lacks %s", flags[i]);
    /* every path: the endpoints of the table and the server's own */
    for (int ep = 0; ep < API_EP_COUNT; ep++) {
        char want[80];
        snprintf(want, sizeof want, " %s", api_endpoint_path((api_endpoint)ep));
        ck_assert_msg(strstr(out, want), "--help lacks %s", want);
    }
    const char *own[] = {" /healthz", " /readyz", " /metrics", " /version", " /models", " /openapi.json",
                         "GET /"};
    for (size_t i = 0; i < sizeof own / sizeof own[0]; i++)
        ck_assert_msg(strstr(out, own[i]), "--help lacks %s", own[i]);
    free(out);
    free(err);
    const char *ver[] = {"--version", NULL};
    ck_assert_int_eq(srvt_run(ver, NULL, &out, &err), 0);
    ck_assert_msg(strstr(out, "attention-server " ATTN_VERSION), "%s", out);
    free(out);
    free(err);
}
END_TEST

/* The probe mode a container HEALTHCHECK uses: exit 0 on 2xx only. */
START_TEST(t_probe_mode) {
    start(NULL);
    char port[16];
    snprintf(port, sizeof port, "%d", srv.port);
    struct { const char *args[6]; int rc; } cases[] = {
        {{"--probe", NULL}, 0},                                  /* url filled below */
        {{"--healthcheck", "--port", port, NULL}, 0},
        {{"--healthcheck", "--host", "0.0.0.0", "--port", port, NULL}, 0},
        {{"--probe", NULL}, 1},                                  /* a 404 */
        {{"--probe", "http://127.0.0.1:1/healthz", NULL}, 1},    /* nothing listens */
        {{"--probe", "ftp://x", NULL}, 2},
    };
    char ok_url[128], missing_url[128];
    snprintf(ok_url, sizeof ok_url, "%s/healthz", srv.base);
    snprintf(missing_url, sizeof missing_url, "%s/nope", srv.base);
    cases[0].args[1] = ok_url;
    cases[3].args[1] = missing_url;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *out = NULL, *err = NULL;
        int rc = srvt_run(cases[i].args, NULL, &out, &err);
        ck_assert_msg(rc == cases[i].rc, "case %zu (%s %s): exit %d, stderr %s", i, cases[i].args[0],
                      cases[i].args[1] ? cases[i].args[1] : "", rc, err ? err : "");
        free(out);
        free(err);
    }
    /* from the environment, as in a container */
    char env_port[32];
    snprintf(env_port, sizeof env_port, "ATTN_PORT=%d", srv.port);
    const char *env[] = {env_port, "ATTN_HOST=0.0.0.0", NULL};
    const char *hc[] = {"--healthcheck", NULL};
    ck_assert_int_eq(srvt_run(hc, env, NULL, NULL), 0);
    stop();
    /* and 1 once the server is gone */
    ck_assert_int_eq(srvt_run(hc, env, NULL, NULL), 1);
}
END_TEST

/* --host 0.0.0.0 (every interface) is reachable on loopback. */
START_TEST(t_host_any) {
    const char *args[] = {"--host", "0.0.0.0", NULL};
    start(args);
    assert_healthy();
    stop();
}
END_TEST

static Suite *limits_suite(void) {
    Suite *s = suite_create("server_limits");
    const TTest *tests[] = {t_max_body_content_length, t_max_body_chunked, t_max_body_env,
                            t_max_elements, t_queue_full_503, t_half_body_times_out,
                            t_bad_flags_exit_2, t_help_and_version, t_probe_mode, t_host_any,
                            NULL};
    tcase_add_checked_fixture(tcase_with(s, "limits", 120, tests), NULL, teardown);
    return s;
}

const test_program TEST_PROGRAM = {.suites = {limits_suite}};
