/* test_server_memory.c - what the memory budget (--max-memory) counts
 * besides the computation: request bodies from their first byte (an upload
 * that cannot fit now is 503 with Retry-After at once, one larger than the
 * whole budget 413), a computation larger than the whole budget (413, not a
 * 503 that invites endless retries), and streamed replies, whose worker waits
 * for a client that does not read instead of piling up the whole reply.
 * (The parse estimate against jansson's real peak: test_server_units.)
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
#include "support/server_requests.h"

static srvt_server srv;

static void teardown(void) { srvt_release(&srv); }

/* A raw connection that sent the head of a POST of `length` bytes and
 * `part` bytes of its body. */
static int start_upload(size_t length, size_t part) {
    int fd = srvt_raw_post_head(&srv, "/attention/simple", NULL, length);
    char *body = malloc(part);
    ck_assert_ptr_nonnull(body);
    memset(body, ' ', part);
    srvt_raw_send_all(fd, body, part);
    free(body);
    return fd;
}

#define MiB ((size_t)1 << 20)

/* --max-memory 64M: an upload of 40 MiB holds 40 MiB from its first bytes;
 * a second one does not fit now (503, Retry-After, at once, while the first
 * is still uploading); one of 80 MiB never would (413). Before, bodies were
 * not counted at all: 20 uploads of 50 MB reached 1 GiB under 256M. */
START_TEST(t_bodies_count_in_the_budget) {
    const char *args[] = {"--max-memory", "64M", "--max-body", "100M", NULL};
    srvt_must_start(&srv, args);
    int a = start_upload(40 * MiB, 1024);
    procs_sleep_ms(200);
    ck_assert_double_ge(srvt_metric(&srv, "attn_memory_reserved_bytes"), 40.0 * MiB);

    int b = start_upload(40 * MiB, 1024);
    srvt_raw_reply r;
    srvt_raw_read(b, 2000, &r);
    close(b);
    ck_assert_int_eq(srvt_raw_check_error(&r, 503, "overloaded"), 0);
    ck_assert_ptr_nonnull(strstr(r.data, "\r\nRetry-After: 1\r\n"));
    srvt_raw_free(&r);

    int c = start_upload(80 * MiB, 1024);
    srvt_raw_read(c, 2000, &r);
    close(c);
    ck_assert_int_eq(srvt_raw_check_error(&r, 413, "too_large"), 0);
    ck_assert_ptr_null(strstr(r.data, "Retry-After"));
    ck_assert_ptr_nonnull(strstr(r.data, "memory budget"));
    srvt_raw_free(&r);

    close(a); /* the first upload's memory comes back when it ends */
    double held = -1;
    for (int i = 0; i < 40 && held != 0; i++, procs_sleep_ms(50))
        held = srvt_metric(&srv, "attn_memory_reserved_bytes");
    ck_assert_double_eq(held, 0);
    srvt_must_stop(&srv);
}
END_TEST

/* A chunked upload grows its reservation as it grows: past what the budget
 * has now, 503 at once in the middle of the upload (another upload holds 4
 * of the 8 MiB); past the whole budget, 413. */
static void chunked_over(size_t mib, int status, const char *code) {
    int fd = srvt_connect(&srv);
    ck_assert_int_ge(fd, 0);
    const char *head = "POST /attention/simple HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n";
    srvt_raw_send_all(fd, head, strlen(head));
    size_t piece = 1 << 20;
    char *chunk = malloc(piece + 32);
    ck_assert_ptr_nonnull(chunk);
    int n = snprintf(chunk, 32, "%zx\r\n", piece);
    memset(chunk + n, ' ', piece);
    memcpy(chunk + n + piece, "\r\n", 2);
    for (size_t i = 0; i < mib; i++)
        if (send(fd, chunk, (size_t)n + piece + 2, MSG_NOSIGNAL) < 0) break;
    free(chunk);
    srvt_raw_reply r;
    srvt_raw_read(fd, 3000, &r);
    close(fd);
    ck_assert_msg(srvt_raw_check_error(&r, status, code) == 0, "%zu MiB", mib);
    srvt_raw_free(&r);
}

START_TEST(t_chunked_body_counts_in_the_budget) {
    const char *args[] = {"--max-memory", "8M", "--max-body", "64M", NULL};
    srvt_must_start(&srv, args);
    int a = start_upload(4 * MiB, 1024);
    procs_sleep_ms(200);
    chunked_over(6, 503, "overloaded");
    close(a);
    procs_sleep_ms(300);
    chunked_over(12, 413, "too_large");
    srvt_must_stop(&srv);
}
END_TEST

/* A computation that needs more than the whole budget: 413 too_large and no
 * Retry-After (it was 503 with Retry-After: 1, which clients retry for ever). */
START_TEST(t_more_than_the_budget_is_413) {
    const char *args[] = {"--max-memory", "4M", NULL};
    srvt_must_start(&srv, args);
    char *body = srvt_slow_body(256);
    ck_assert_ptr_nonnull(body);
    srvt_reply r;
    ck_assert_int_eq(srvt_post(&srv, "/attention/multihead", body, &r), 0);
    ck_assert_int_eq(srvt_check_error(&r, 413, "too_large"), 0);
    srvt_assert_header(&r, "Retry-After", NULL);
    ck_assert_ptr_nonnull(strstr(r.body, "memory budget"));
    srvt_reply_free(&r);
    free(body);
    srvt_must_stop(&srv);
}
END_TEST

/* Streamed in pieces of 1 MiB (--stream-min-size 1M): a client that reads
 * nothing keeps the worker waiting with two pieces written (it wrote the
 * whole 33 MB reply and was gone before); once the client reads, the whole
 * reply comes; a client that never reads frees the worker after --timeout. */
START_TEST(t_stream_waits_for_the_client) {
    const char *args[] = {"--stream-min-size", "1M", "--threads", "1", "--timeout", "3", NULL};
    srvt_must_start(&srv, args);
    size_t len;
    char *body = srvt_map_body(1024, &len); /* about 33 MB of reply */
    int fd = srvt_raw_post(&srv, "/attention/multihead", "Connection: close\r\n", body, len);
    procs_sleep_ms(1500); /* computed, two pieces written, waiting */
    ck_assert_msg(srvt_metric(&srv, "attn_workers_busy") == 1,
                  "the worker is not waiting for the client");
    srvt_raw_reply r;
    srvt_raw_read(fd, 20000, &r); /* to the end: the request asked to close */
    close(fd);
    ck_assert_int_eq(srvt_raw_status(&r), 200);
    ck_assert_msg(r.end == SRVT_EOF && r.len > 30 * MiB, "%zu bytes of the reply", r.len);
    ck_assert_msg(r.len > 5 && memcmp(r.data + r.len - 5, "0\r\n\r\n", 5) == 0, "no last chunk");
    srvt_raw_free(&r);

    fd = srvt_raw_post(&srv, "/attention/multihead", "Connection: close\r\n", body, len);
    procs_sleep_ms(1000);
    ck_assert_double_eq(srvt_metric(&srv, "attn_workers_busy"), 1);
    double busy = 1;
    for (int i = 0; i < 100 && busy != 0; i++, procs_sleep_ms(100))
        busy = srvt_metric(&srv, "attn_workers_busy");
    ck_assert_msg(busy == 0, "the worker still waits for a client that never reads");
    close(fd);
    srvt_reply h;
    ck_assert_int_eq(srvt_get(&srv, "/healthz", &h), 0);
    ck_assert_int_eq(h.status, 200);
    srvt_reply_free(&h);
    free(body);
    srvt_must_stop(&srv);
}
END_TEST

static Suite *memory_suite(void) {
    const TTest *tests[] = {t_bodies_count_in_the_budget, t_chunked_body_counts_in_the_budget,
                            t_more_than_the_budget_is_413, t_stream_waits_for_the_client, NULL};
    return suite_with("server_memory", "memory", 90, tests, NULL, teardown);
}

const test_program TEST_PROGRAM = {.suites = {memory_suite}};
