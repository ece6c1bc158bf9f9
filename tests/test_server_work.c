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


/* Waits up to timeout_s for attn_workers_busy to be `busy`; returns the
 * seconds it took, or -1. */
static double busy_within(double busy, double timeout_s) {
    double t0 = procs_now();
    while (procs_now() - t0 < timeout_s) {
        if (srvt_metric(&srv, "attn_workers_busy") == busy) return procs_now() - t0;
        procs_sleep_ms(20);
    }
    return -1;
}

/* Starts the server with args and sends it 150,000 tokens of width 1 (tens
 * of seconds of work under no --max-work); returns the socket once a worker
 * computes the request. */
static int start_computing(const char *const *args) {
    srvt_must_start(&srv, args);
    size_t len;
    char *body = wide_body(150000, &len);
    int fd = srvt_raw_post(&srv, "/attention/simple", NULL, body, len);
    free(body);
    ck_assert_msg(busy_within(1, 10) >= 0, "the request never reached the worker");
    return fd;
}

/* 150,000 tokens of width 1 under no --max-work (tens of seconds of work):
 * the client hangs up once its request is computing, and the worker is free
 * again within a second (a tile of the attention), ready for the next
 * request. Before, it computed to the end for nobody. */
START_TEST(t_hang_up_frees_the_worker) {
    int fd = start_computing((const char *const[]){"--threads", "1", "--max-work", "0", NULL});
    procs_sleep_ms(500);
    close(fd);
    double t = busy_within(0, 10);
    ck_assert_msg(t >= 0 && t < 1.5, "the worker was still busy %.1f s after the client left", t);
    srvt_reply r;
    ck_assert_int_eq(srvt_post(&srv, "/attention/multihead", srvt_seed_mha, &r), 0);
    ck_assert_int_eq(srvt_check_seed_mha(&r), 0);
    srvt_reply_free(&r);
    char *log = srvt_read_log(&srv);
    /* its 503 went to a socket the client had closed */
    ck_assert_msg(log && strstr(log, "POST /attention/simple 503 "), "log:\n%s", log ? log : "");
    free(log);
    srvt_must_stop(&srv);
}
END_TEST

/* SIGTERM with such a computation running and its client waiting, under
 * --drain-timeout 2: the computation stops at the deadline, the client gets
 * 503 draining, and the process exits 0 about then. Before, SIGTERM (even
 * twice) left it running until the computation ended. */
START_TEST(t_sigterm_stops_the_computation) {
    int fd = start_computing((const char *const[]){"--threads", "1", "--max-work", "0", "--drain-timeout", "2",
                                                    NULL});
    double t0 = procs_now();
    kill(srv.pid, SIGTERM);
    int st = 0;
    ck_assert_msg(procs_wait(srv.pid, 15, &st), "still running 15 s after SIGTERM");
    double took = procs_now() - t0;
    srv.pid = 0;
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "status %d", st);
    ck_assert_msg(took < 5, "exit %.1f s after SIGTERM under --drain-timeout 2", took);
    srvt_raw_reply r;
    srvt_raw_read(fd, 2000, &r);
    close(fd);
    ck_assert_int_eq(srvt_raw_check_error(&r, 503, "draining"), 0);
    srvt_raw_free(&r);
}
END_TEST

static Suite *work_suite(void) {
    const TTest *tests[] = {t_max_work_413, t_hang_up_frees_the_worker, t_sigterm_stops_the_computation,
                            NULL};
    return suite_with("server_work", "work", 120, tests, NULL, teardown);
}

const test_program TEST_PROGRAM = {.suites = {work_suite}};
