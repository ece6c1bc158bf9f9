/* test_server_framing.c - request smuggling and framing over raw sockets, as
 * RFC 9112, nginx and HAProxy answer them: each malformed head gets one
 * JSON error reply from the server's own code (never libmicrohttpd's HTML
 * page, never the status line twice), the connection closed after it, the
 * reply logged and counted in /metrics; no "100 Continue" for a request
 * that will be refused; a chunked upload over --max-body is answered 413
 * while it is still being sent.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "support/check_main.h"
#include "support/procs.h"
#include "support/server_harness.h"

static srvt_server srv;

static void teardown(void) { srvt_release(&srv); }

#define BODY "{\"inputs\": [[1, 2]]}"
/* A second request hidden in the first one's body: served if the server
 * believes the shorter length. */
#define SMUGGLED "GET /version HTTP/1.1\r\nHost: t\r\n\r\n"

typedef struct {
    const char *name, *request;
    int status;
    const char *code;
} framing_case;

static const framing_case cases[] = {
    {"two different Content-Length",
     "POST /attention/simple HTTP/1.1\r\nHost: t\r\nContent-Length: 55\r\nContent-Length: 20\r\n"
     "\r\n" BODY SMUGGLED, 400, "bad_request"},
    {"the same Content-Length twice",
     "POST /attention/simple HTTP/1.1\r\nHost: t\r\nContent-Length: 20\r\nContent-Length: 20\r\n"
     "\r\n" BODY, 400, "bad_request"},
    {"Content-Length and Transfer-Encoding",
     "POST /attention/simple HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\n"
     "Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n" SMUGGLED, 400, "bad_request"},
    {"gzip, chunked",
     "POST /attention/simple HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: gzip, chunked\r\n\r\n"
     "0\r\n\r\n", 501, "not_implemented"},
    {"identity", "POST /attention/simple HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: identity\r\n"
     "\r\n" BODY, 400, "bad_request"},
    {"chunked twice", "POST /attention/simple HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n"
     "Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 400, "bad_request"},
    {"Transfer-Encoding in HTTP/1.0", "POST /attention/simple HTTP/1.0\r\n"
     "Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 400, "bad_request"},
    {"Content-Length -1", "POST /attention/simple HTTP/1.1\r\nHost: t\r\nContent-Length: -1\r\n\r\n",
     400, "bad_request"},
    {"Content-Length 0x18", "POST /attention/simple HTTP/1.1\r\nHost: t\r\nContent-Length: 0x18\r\n"
     "\r\n" BODY, 400, "bad_request"},
    {"Content-Length empty", "POST /attention/simple HTTP/1.1\r\nHost: t\r\nContent-Length: \r\n\r\n",
     400, "bad_request"},
    {"Content-Length 24, 24", "POST /attention/simple HTTP/1.1\r\nHost: t\r\n"
     "Content-Length: 24, 24\r\n\r\n" BODY, 400, "bad_request"},
    {"Content-Length over 2^64", "POST /attention/simple HTTP/1.1\r\nHost: t\r\n"
     "Content-Length: 99999999999999999999999\r\n\r\n", 413, "too_large"},
    {"POST without a length", "POST /attention/simple HTTP/1.1\r\nHost: t\r\n\r\n" BODY, 411,
     "length_required"},
    {"HTTP/1.1 without Host", "GET /healthz HTTP/1.1\r\n\r\n", 400, "bad_request"},
    {"Host twice", "GET /healthz HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", 400, "bad_request"},
    {"a terminal escape in the path", "GET /\x1b[31mred HTTP/1.1\r\n\r\n", 400, "bad_request"},
};
#define N_CASES (sizeof cases / sizeof cases[0])

START_TEST(t_framing_errors) {
    srvt_must_start(&srv, NULL);
    int by_status[600] = {0};
    for (size_t i = 0; i < N_CASES; i++) {
        srvt_raw_reply r;
        ck_assert_int_eq(srvt_raw(&srv, cases[i].request, strlen(cases[i].request), 3000, &r), 0);
        if (srvt_raw_check_error(&r, cases[i].status, cases[i].code) != 0)
            ck_abort_msg("%s: %.600s", cases[i].name, r.data);
        ck_assert_msg(strstr(r.data, "\r\nConnection: close\r\n"), "%s: %s", cases[i].name, r.data);
        by_status[cases[i].status]++;
        srvt_raw_free(&r);
    }
    /* The server still serves, and counted and logged every one. */
    srvt_raw_reply ok;
    const char *get = "GET /healthz HTTP/1.0\r\n\r\n";
    ck_assert_int_eq(srvt_raw(&srv, get, strlen(get), 3000, &ok), 0);
    ck_assert_int_eq(srvt_raw_status(&ok), 200);
    srvt_raw_free(&ok);
    int statuses[] = {400, 411, 413, 501};
    for (size_t k = 0; k < 4; k++) { /* each line once its connection is done (srvt_log_wait) */
        char needle[16];
        snprintf(needle, sizeof needle, " %d in=", statuses[k]);
        int logged = srvt_log_wait(&srv, needle, by_status[statuses[k]], 10);
        ck_assert_msg(logged == by_status[statuses[k]], "%d: %d logged of %d", statuses[k], logged,
                      by_status[statuses[k]]);
    }
    ck_assert_int_eq(srvt_log_count(&srv, "\x1b"), 0); /* the client's bytes are not echoed raw */
    ck_assert_double_eq(srvt_metric(&srv, "attn_requests_total{endpoint=\"/attention/simple\","
                                          "method=\"POST\",status=\"411\"}"), 1);
    ck_assert_double_eq(srvt_metric(&srv, "attn_requests_total{endpoint=\"/attention/simple\","
                                          "method=\"POST\",status=\"501\"}"), 1);
    ck_assert_double_eq(srvt_metric(&srv, "attn_requests_total{endpoint=\"/attention/simple\","
                                          "method=\"other\",status=\"400\"}"), 4);
    srvt_must_stop(&srv);
}
END_TEST

/* "Expect: 100-continue" to a path that does not exist or does not take
 * POST: the 404 or 405 comes at once, without "100 Continue", and the
 * connection closes (the body is not read). */
START_TEST(t_no_continue_when_refused) {
    srvt_must_start(&srv, NULL);
    const char *reqs[] = {"POST /nope HTTP/1.1\r\nHost: t\r\nContent-Length: 20\r\n"
                          "Expect: 100-continue\r\n\r\n",
                          "POST /healthz HTTP/1.1\r\nHost: t\r\nContent-Length: 20\r\n"
                          "Expect: 100-continue\r\n\r\n"};
    int want[] = {404, 405};
    for (int i = 0; i < 2; i++) {
        srvt_raw_reply r;
        ck_assert_int_eq(srvt_raw(&srv, reqs[i], strlen(reqs[i]), 3000, &r), 0);
        ck_assert_msg(strstr(r.data, "100 Continue") == NULL, "%s", r.data);
        ck_assert_int_eq(srvt_raw_check_error(&r, want[i], want[i] == 404 ? "not_found"
                                                                           : "method_not_allowed"), 0);
        srvt_raw_free(&r);
    }
    srvt_must_stop(&srv);
}
END_TEST

/* A chunked upload that passes --max-body 1k and goes on: 413 while the
 * client is still sending (it came only after the whole upload, or not at
 * all past twice the limit). */
START_TEST(t_chunked_over_limit_at_once) {
    const char *args[] = {"--max-body", "1k", NULL};
    srvt_must_start(&srv, args);
    int fd = srvt_connect(&srv);
    ck_assert_int_ge(fd, 0);
    const char *head = "POST /attention/simple HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n";
    char chunk[2100];
    int n = snprintf(chunk, sizeof chunk, "%x\r\n", 2000);
    memset(chunk + n, ' ', 2000);
    memcpy(chunk + n + 2000, "\r\n", 2);
    ck_assert_int_eq(send(fd, head, strlen(head), MSG_NOSIGNAL), (ssize_t)strlen(head));
    ck_assert_int_eq(send(fd, chunk, (size_t)n + 2002, MSG_NOSIGNAL), n + 2002);
    srvt_raw_reply r;
    srvt_raw_read(fd, 3000, &r); /* the upload is not finished: no last chunk */
    close(fd);
    ck_assert_int_eq(srvt_raw_check_error(&r, 413, "too_large"), 0);
    ck_assert_msg(r.ms < 1000, "413 after %.0f ms", r.ms);
    srvt_raw_free(&r);
    srvt_must_stop(&srv);
}
END_TEST

static Suite *framing_suite(void) {
    Suite *s = suite_create("server_framing");
    const TTest *tests[] = {t_framing_errors, t_no_continue_when_refused,
                            t_chunked_over_limit_at_once, NULL};
    tcase_add_checked_fixture(tcase_with(s, "framing", 60, tests), NULL, teardown);
    return s;
}

const test_program TEST_PROGRAM = {.suites = {framing_suite}};
