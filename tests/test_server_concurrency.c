/* test_server_concurrency.c - the real attention-server under concurrent
 * clients and on SIGTERM: 16 clients sending mixed requests with every reply
 * checked, and graceful shutdown with a request in flight (being computed,
 * or still being uploaded): it gets its full 200, /readyz turns 503 on open
 * connections, new connections are refused, and the server exits 0.
 */
#include <check.h>
#include <jansson.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "support/check_main.h"
#include "support/server_harness.h"
#include "support/server_requests.h"

static srvt_server srv;

static void stop(void) {
    int rc = srvt_stop(&srv, 60);
    ck_assert_msg(rc == 0, "server exit status %d, log:\n%s", rc, srv.log ? srv.log : "");
}

static void teardown(void) { srvt_release(&srv); }

static void sleep_ms(int ms) {
    struct timespec t = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&t, NULL);
}

/* ==== 16 clients ======================================================== */

#define N_CLIENTS 16
#define PER_CLIENT 24

typedef struct {
    int id;
    int done, failed;
    char why[256];
} client;

static int record_failure(client *c, int kind, const srvt_reply *r) {
    c->failed++;
    snprintf(c->why, sizeof c->why, "client %d kind %d: curl %d status %ld %.150s", c->id, kind,
             r->curl_code, r->status, r->body ? r->body : "");
    return -1;
}

static void *client_main(void *arg) {
    client *c = arg;
    /* Half the clients keep one connection alive, half open a new one each time. */
    CURL *h = c->id % 2 ? curl_easy_init() : NULL;
    for (int i = 0; i < PER_CLIENT; i++) {
        int kind = (c->id + i) % 6;
        srvt_reply r;
        srvt_req rq = {.handle = h};
        int bad = 0;
        switch (kind) {
        case 0: case 1:   /* the seed, twice as often */
            rq.body = srvt_seed_mha;
            rq.len = strlen(rq.body);
            srvt_do(&srv, "/attention/multihead", &rq, &r);
            bad = srvt_check_seed_mha(&r);
            break;
        case 2:
            rq.body = srvt_seed_simple;
            rq.len = strlen(rq.body);
            srvt_do(&srv, "/attention/simple", &rq, &r);
            bad = srvt_check_seed_simple(&r);
            break;
        case 3:
            rq.body = "{\"module\": [";
            rq.len = strlen(rq.body);
            srvt_do(&srv, "/attention/causal", &rq, &r);
            bad = srvt_check_error(&r, 400, "invalid_json");
            break;
        case 4:
            srvt_do(&srv, "/attention/none", &rq, &r);
            bad = srvt_check_error(&r, 404, "not_found");
            break;
        default:
            srvt_do(&srv, i % 2 ? "/healthz" : "/version", &rq, &r);
            bad = r.curl_code != 0 || r.status != 200 || !strchr(r.body, '{');
            break;
        }
        if (bad) record_failure(c, kind, &r);
        c->done++;
        srvt_reply_free(&r);
    }
    if (h) curl_easy_cleanup(h);
    return NULL;
}

START_TEST(t_sixteen_clients) {
    const char *args[] = {"--threads", "2", "--io-threads", "2", NULL};
    ck_assert(srvt_start(&srv, args, NULL) == 0);
    client cl[N_CLIENTS];
    pthread_t th[N_CLIENTS];
    for (int i = 0; i < N_CLIENTS; i++) {
        cl[i] = (client){.id = i};
        ck_assert_int_eq(pthread_create(&th[i], NULL, client_main, &cl[i]), 0);
    }
    int done = 0, failed = 0;
    for (int i = 0; i < N_CLIENTS; i++) {
        pthread_join(th[i], NULL);
        done += cl[i].done;
        failed += cl[i].failed;
        if (cl[i].failed) fprintf(stderr, "%s\n", cl[i].why);
    }
    ck_assert_int_eq(done, N_CLIENTS * PER_CLIENT);
    ck_assert_int_eq(failed, 0);

    /* Every request counted once, none left in flight but /metrics itself. */
    srvt_reply r;
    ck_assert_int_eq(srvt_get(&srv, "/metrics", &r), 0);
    long mha = 0;
    const char *p = strstr(r.body, "attn_requests_total{endpoint=\"/attention/multihead\",method=\"POST\",status=\"200\"} ");
    ck_assert_ptr_nonnull(p);
    mha = atol(strchr(p, '}') + 2);
    int want = 0;
    for (int c = 0; c < N_CLIENTS; c++)
        for (int i = 0; i < PER_CLIENT; i++) want += (c + i) % 6 < 2;
    ck_assert_int_eq(mha, want);
    ck_assert_msg(strstr(r.body, "\nattn_requests_in_flight 1\n"), "%s", r.body);
    srvt_reply_free(&r);
    stop();
}
END_TEST

/* ==== SIGTERM with a request in flight ================================== */

typedef struct {
    const char *body;
    srvt_req rq;
    srvt_reply r;
    atomic_int signalled;
} inflight;

static void *post_inflight(void *arg) {
    inflight *f = arg;
    f->rq.body = f->body;
    f->rq.len = strlen(f->body);
    srvt_do(&srv, "/attention/multihead", &f->rq, &f->r);
    return NULL;
}

/* Waits until /metrics shows a worker busy. */
static int wait_busy(void) {
    for (int i = 0; i < 2000; i++) {
        srvt_reply r;
        srvt_get(&srv, "/metrics", &r);
        int busy = r.body && strstr(r.body, "\nattn_workers_busy 1\n");
        srvt_reply_free(&r);
        if (busy) return 0;
        sleep_ms(2);
    }
    return -1;
}

START_TEST(t_sigterm_while_computing) {
    const char *args[] = {"--threads", "1", NULL};
    ck_assert(srvt_start(&srv, args, NULL) == 0);
    inflight f = {.body = srvt_slow_body(1024)};
    pthread_t th;
    ck_assert_int_eq(pthread_create(&th, NULL, post_inflight, &f), 0);
    ck_assert_msg(wait_busy() == 0, "the request never reached a worker");
    kill(srv.pid, SIGTERM);
    pthread_join(th, NULL);
    ck_assert_int_eq(srvt_check_slow(&f.r, 1024), 0);
    srvt_reply_free(&f.r);
    free((char *)f.body);
    stop();   /* already terminating: waits for exit 0 */
    /* The POST, and maybe the GET /metrics that saw it busy if its
     * completion had not been counted yet when the signal came. */
    const char *d = strstr(srv.log, ": draining ");
    int n = d ? atoi(d + strlen(": draining ")) : 0;
    ck_assert_msg(n == 1 || n == 2, "log:\n%s", srv.log);
}
END_TEST

static void on_pause(void *arg) {
    inflight *f = arg;
    kill(srv.pid, SIGTERM);
    atomic_store(&f->signalled, 1);
}

/* SIGTERM while the body is half uploaded; the upload then completes. */
START_TEST(t_sigterm_while_uploading) {
    ck_assert(srvt_start(&srv, NULL, NULL) == 0);
    /* A kept-alive connection opened before the signal. */
    CURL *keep = curl_easy_init();
    srvt_req get = {.handle = keep};
    srvt_reply r;
    ck_assert_int_eq(srvt_do(&srv, "/readyz", &get, &r), 0);
    ck_assert_int_eq(r.status, 200);
    srvt_reply_free(&r);

    inflight f = {.body = srvt_seed_mha};
    f.rq.pause_after = 100;
    f.rq.pause_ms = 1500;
    f.rq.on_pause = on_pause;
    f.rq.pause_arg = &f;
    pthread_t th;
    ck_assert_int_eq(pthread_create(&th, NULL, post_inflight, &f), 0);
    while (!atomic_load(&f.signalled)) sleep_ms(5);
    sleep_ms(200);

    /* Draining: not ready on the open connection, told to close it ... */
    ck_assert_int_eq(srvt_do(&srv, "/readyz", &get, &r), 0);
    ck_assert_int_eq(srvt_check_error(&r, 503, "draining"), 0);
    char buf[32];
    ck_assert_ptr_nonnull(srvt_header(&r, "Connection", buf, sizeof buf));
    ck_assert_str_eq(buf, "close");
    srvt_reply_free(&r);
    curl_easy_cleanup(keep);
    /* ... and no new connections. */
    ck_assert_int_lt(srvt_connect(&srv), 0);

    pthread_join(th, NULL);
    ck_assert_int_eq(srvt_check_seed_mha(&f.r), 0);
    srvt_reply_free(&f.r);
    stop();
}
END_TEST

/* SIGINT is handled the same way; an idle server exits at once. */
START_TEST(t_sigint_idle) {
    ck_assert(srvt_start(&srv, NULL, NULL) == 0);
    kill(srv.pid, SIGINT);
    stop();
    ck_assert_msg(strstr(srv.log, "stopped"), "log:\n%s", srv.log);
}
END_TEST

static Suite *concurrency_suite(void) {
    Suite *s = suite_create("server_concurrency");
    const TTest *tests[] = {t_sixteen_clients, t_sigterm_while_computing,
                            t_sigterm_while_uploading, t_sigint_idle, NULL};
    tcase_add_checked_fixture(tcase_with(s, "concurrency", 180, tests), NULL, teardown);
    return s;
}

const test_program TEST_PROGRAM = {.suites = {concurrency_suite}};
