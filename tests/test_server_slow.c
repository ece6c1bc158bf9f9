/* test_server_slow.c - slow clients against the real attention-server, on
 * loopback and bounded in count and time: hundreds of connections that
 * trickle their request heads or bodies do not slow anyone else down, and a
 * request head that takes longer than --timeout is cut (a body is not).
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "support/server_harness.h"
#include "support/server_requests.h"
#include "tests/support/check_main.h"

static srvt_server srv;

static void start(const char *const *args) { srvt_must_start(&srv, args); }

static void stop(void) { srvt_must_stop(&srv); }

static void teardown(void) { srvt_release(&srv); }

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static void sleep_ms(int ms) {
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

/* A nonblocking connection that has sent `prefix`. */
static int open_with(const char *prefix) {
    int fd = srvt_connect(&srv);
    ck_assert_msg(fd >= 0, "connect: %s", strerror(errno));
    ck_assert_int_eq(send(fd, prefix, strlen(prefix), MSG_NOSIGNAL), (ssize_t)strlen(prefix));
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
    return fd;
}

/* A request head that never ends: one more byte of a header value each time. */
static const char head_prefix[] = "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ";
/* A complete head, then a body of 100000 bytes that comes a byte at a time. */
static const char body_prefix[] = "POST /attention/simple HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                                  "Content-Type: application/json\r\nContent-Length: 100000\r\n\r\n";

/* ==== Trickling clients ================================================= */

#define N_SLOW 300          /* half trickle heads, half bodies */
#define TRICKLE_MS 50       /* one byte per connection this often */
#define RUN_S 4.0
#define LIMIT_MS 100.0

typedef struct {
    int *fds;
    int n;
    atomic_int stop;
    atomic_int alive;       /* connections still open at the last round */
} trickler;

static void *trickle(void *arg) {
    trickler *t = arg;
    while (!atomic_load(&t->stop)) {
        int alive = 0;
        for (int i = 0; i < t->n; i++) {
            if (t->fds[i] < 0) continue;
            ssize_t w = send(t->fds[i], "a", 1, MSG_NOSIGNAL);
            if (w < 0 && errno != EAGAIN && errno != EWOULDBLOCK) {
                close(t->fds[i]);
                t->fds[i] = -1;
                continue;
            }
            alive++;
        }
        atomic_store(&t->alive, alive);
        sleep_ms(TRICKLE_MS);
    }
    return NULL;
}

START_TEST(t_trickling_clients_do_not_slow_others) {
    const char *args[] = {"--access-log", "off", NULL};
    start(args);
    int fds[N_SLOW];
    for (int i = 0; i < N_SLOW; i++) fds[i] = open_with(i % 2 ? body_prefix : head_prefix);
    trickler t = {.fds = fds, .n = N_SLOW};
    atomic_init(&t.stop, 0);
    atomic_init(&t.alive, N_SLOW);
    pthread_t th;
    ck_assert_int_eq(pthread_create(&th, NULL, trickle, &t), 0);

    /* Meanwhile, normal clients on fresh connections: the seed request and a
     * health check, one after the other, each timed from connect to reply. */
    double end = now_s() + RUN_S, worst = 0, sum = 0;
    int n = 0, slow = 0;
    char worst_what[64] = "";
    while (now_s() < end) {
        srvt_reply r;
        int post = n % 2 == 0;
        if (post) {
            ck_assert_int_eq(srvt_post(&srv, "/attention/multihead", srvt_seed_mha, &r), 0);
            ck_assert_int_eq(srvt_check_seed_mha(&r), 0);
        } else {
            ck_assert_int_eq(srvt_get(&srv, "/healthz", &r), 0);
            ck_assert_int_eq(r.status, 200);
        }
        if (r.ms > worst) {
            worst = r.ms;
            snprintf(worst_what, sizeof worst_what, "%s", post ? "POST /attention/multihead" : "GET /healthz");
        }
        slow += r.ms > LIMIT_MS;
        sum += r.ms;
        n++;
        srvt_reply_free(&r);
        sleep_ms(20);
    }
    /* The trickling connections were all still open, and counted. */
    srvt_reply r;
    ck_assert_int_eq(srvt_get(&srv, "/metrics", &r), 0);
    const char *c = strstr(r.body, "\nattn_connections ");
    ck_assert_ptr_nonnull(c);
    long open = atol(c + strlen("\nattn_connections "));
    srvt_reply_free(&r);
    atomic_store(&t.stop, 1);
    pthread_join(th, NULL);
    fprintf(stderr, "%d slow connections: %d requests, mean %.1f ms, worst %.1f ms (%s), "
            "%d over %.0f ms; %ld connections open\n", atomic_load(&t.alive), n, sum / n, worst,
            worst_what, slow, LIMIT_MS, open);
    ck_assert_int_eq(atomic_load(&t.alive), N_SLOW);
    ck_assert_int_ge(open, N_SLOW);
    ck_assert_int_ge(n, 20);
    ck_assert_msg(slow == 0, "%d of %d requests took over %.0f ms (worst %.1f ms)", slow, n,
                  LIMIT_MS, worst);
    for (int i = 0; i < N_SLOW; i++)
        if (fds[i] >= 0) close(fds[i]);
    stop();
}
END_TEST

/* ==== The request head deadline ========================================= */

/* 1 once the peer has closed the connection (or reset it). */
static int closed_by_peer(int fd) {
    char b[4096];
    ssize_t n = recv(fd, b, sizeof b, 0);
    return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK);
}

START_TEST(t_slow_head_is_cut_slow_body_is_not) {
    const char *args[] = {"--timeout", "2", "--access-log", "off", NULL};
    start(args);
    int head = open_with(head_prefix);
    /* A body of 20 bytes at 5 bytes a second: 4 s, never idle. */
    const char small_body[] = "POST /attention/simple HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                              "Content-Length: 20\r\n\r\n";
    int body = open_with(small_body);
    double t0 = now_s(), cut_at = 0;
    int sent = 0;
    while (now_s() - t0 < 6.0 && sent < 20) {
        if (!cut_at) {
            if (closed_by_peer(head)) cut_at = now_s() - t0;
            else send(head, "a", 1, MSG_NOSIGNAL);
        }
        ck_assert_msg(!closed_by_peer(body), "the slow body was cut after %.1f s", now_s() - t0);
        ck_assert_int_eq(send(body, "[", 1, MSG_NOSIGNAL), 1);   /* 20 x '[': a 400 */
        sent++;
        sleep_ms(200);
    }
    ck_assert_msg(cut_at >= 2.0 && cut_at < 3.5, "the slow head was cut after %.2f s (want 2-3.5)",
                  cut_at);
    /* The slow body got its answer. */
    fcntl(body, F_SETFL, fcntl(body, F_GETFL) & ~O_NONBLOCK);
    struct timeval tv = {5, 0};
    setsockopt(body, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    char reply[512] = "";
    ssize_t n = recv(body, reply, sizeof reply - 1, 0);
    ck_assert_int_gt(n, 0);
    ck_assert_msg(strncmp(reply, "HTTP/1.1 400", 12) == 0, "reply: %.80s", reply);
    close(head);
    close(body);

    srvt_reply r;
    ck_assert_int_eq(srvt_get(&srv, "/metrics", &r), 0);
    ck_assert_msg(strstr(r.body, "\nattn_connections_cut_total 1\n"), "%s", r.body);
    srvt_reply_free(&r);
    stop();
}
END_TEST

static Suite *slow_suite(void) {
    Suite *s = suite_create("server_slow");
    const TTest *tests[] = {t_trickling_clients_do_not_slow_others, t_slow_head_is_cut_slow_body_is_not, NULL};
    tcase_add_checked_fixture(tcase_with(s, "slow", 60, tests), NULL, teardown);
    return s;
}

const test_program TEST_PROGRAM = {.suites = {slow_suite}};
