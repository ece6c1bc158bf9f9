/* test_server_soak.c - the soak and attack suite: the real server under a
 * mixed load for SOAK_SECONDS (5 in `make test`, 300 in `make soak`), on
 * loopback only, every loop bounded by that deadline:
 *
 *   good    clients sending the seed request, checked against the chapter
 *   http    raw malformed heads: smuggling, bad lengths and codings, garbage,
 *           oversized heads, cut-off request lines, pipelining
 *   json    mutated bodies: cut, bytes flipped, deep nesting, huge numbers,
 *           thousands of short strings, random bytes
 *   slow    clients that read a streamed 8 MB reply slowly and leave
 *   abort   uploads cut off, at once or a moment later
 *   flood   more connections than --max-connections, held and dropped
 *
 * while a monitor asks /healthz four times a second and samples the
 * server's resident memory. At the end every connection and reservation
 * must be back, SIGTERM must end the server with status 0, and the report
 * says: requests served, refused (503, the server's own limits), failures
 * (a wrong reply, or none within 10 s), /healthz misses, peak RSS against
 * --max-memory. Any failure or miss fails the test.
 */
#include <check.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "support/check_main.h"
#include "support/procs.h"
#include "support/server_harness.h"
#include "support/server_requests.h"

#define MAX_MEMORY_MIB 128
#define MAX_CONNECTIONS 48
/* What resident memory may exceed --max-memory by: the process itself
 * (code, OpenBLAS's buffers, thread stacks: about 30 MiB idle here), the
 * I/O buffers of MAX_CONNECTIONS connections, and the allocator's slack. */
#define RSS_MARGIN_MIB 64

enum { GOOD, HTTP, JSON, SLOW, ABORT, FLOOD, N_KINDS };
static const char *const kind_names[N_KINDS] = {"good", "http", "json", "slow", "abort", "flood"};

typedef struct {
    atomic_ullong served, refused, failed;
} tally;

static srvt_server srv;
static tally tallies[N_KINDS];
static double deadline;
static pthread_mutex_t why_mu = PTHREAD_MUTEX_INITIALIZER;
static char first_failure[600];
static atomic_int healthz_misses;
static atomic_ullong healthz_asked;
static double peak_rss_mib;

static void teardown(void) { srvt_release(&srv); }

static void failed(int kind, const char *fmt, const char *detail) {
    atomic_fetch_add(&tallies[kind].failed, 1);
    pthread_mutex_lock(&why_mu);
    if (!first_failure[0])
        snprintf(first_failure, sizeof first_failure, "%s: %s %.400s", kind_names[kind], fmt,
                 detail ? detail : "");
    pthread_mutex_unlock(&why_mu);
}

static unsigned next_rand(unsigned *s) {
    *s = *s * 1103515245u + 12345u;
    return *s >> 8;
}

/* A reply the server may give to anything: 503 from its own limits. */
static int refused(const srvt_reply *r) {
    return r->curl_code == 0 && r->status == 503 && srvt_check_error(r, 503, NULL) == 0;
}

/* ==== Clients =========================================================== */

static void *good_client(void *arg) {
    (void)arg;
    CURL *keep = curl_easy_init();
    for (unsigned i = 0; procs_now() < deadline; i++) {
        srvt_req rq = {.body = srvt_seed_mha, .len = strlen(srvt_seed_mha), .timeout_ms = 10000,
                       .handle = i % 2 ? keep : NULL};
        srvt_reply r;
        srvt_do(&srv, "/attention/multihead", &rq, &r);
        if (r.status == 200 && srvt_check_seed_mha(&r) == 0) atomic_fetch_add(&tallies[GOOD].served, 1);
        else if (refused(&r)) atomic_fetch_add(&tallies[GOOD].refused, 1), procs_sleep_ms(20);
        else failed(GOOD, r.error, r.body);
        srvt_reply_free(&r);
    }
    curl_easy_cleanup(keep);
    return NULL;
}

static const char *const bad_heads[] = {
    "POST /attention/simple HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\nContent-Length: 9\r\n\r\n{}",
    "POST /attention/simple HTTP/1.1\r\nHost: t\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
    "POST /attention/simple HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n",
    "POST /attention/simple HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: identity\r\n\r\n{}",
    "POST /attention/simple HTTP/1.1\r\nHost: t\r\nContent-Length: -1\r\n\r\n",
    "POST /attention/simple HTTP/1.1\r\nHost: t\r\nContent-Length: 0x18\r\n\r\n",
    "POST /attention/simple HTTP/1.1\r\nHost: t\r\nContent-Length: 24, 24\r\n\r\n",
    "POST /attention/simple HTTP/1.1\r\nHost: t\r\n\r\n{\"inputs\": [[1]]}",
    "GET /healthz HTTP/1.1\r\n\r\n",
    "POST /attention/simple HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nxx\r\n",
    "POST /attention/simple HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\nfffffffffffffffff\r\n",
    "GET /healthz HTTP/1.1\r\nHost: t\r\n\r\nGET /version HTTP/1.1\r\nHost: t\r\n\r\nGET /nope HTTP/1.1\r\nHost: t\r\n\r\n",
    "BREW /coffee HTCPCP/1.0\r\n\r\n",
    "GET /healthz HTTP/9.9\r\nHost: t\r\n\r\n",
    "GET /healthz",
    "\r\n\r\n\r\n",
    "POST /attention/simple HTTP/1.1\r\nHost: t\r\nContent-Length: 100\r\nExpect: 100-continue\r\n\r\n",
    "POST /attention/simple HTTP/1.1\r\nHost: t\r\nContent-Encoding: br\r\nContent-Length: 2\r\n\r\n{}",
    "POST /attention/simple HTTP/1.1\r\nHost: t\r\nContent-Encoding: gzip\r\nContent-Length: 20\r\n\r\n"
    "\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03garbage!!",
};

/* Sends data, closes the writing side, and reads for up to 10 s: any reply
 * or close is fine, silence is a failure (a hang). */
static void raw_once(int kind, const char *data, size_t len) {
    int fd = srvt_connect(&srv);
    if (fd < 0) {
        failed(kind, "cannot connect", NULL);
        return;
    }
    for (size_t off = 0; off < len;) {
        ssize_t w = send(fd, data + off, len - off, MSG_NOSIGNAL);
        if (w <= 0) break;
        off += (size_t)w;
    }
    shutdown(fd, SHUT_WR);
    srvt_raw_reply r;
    srvt_raw_read(fd, 10000, &r);
    close(fd);
    if (r.end == SRVT_TIMEOUT) failed(kind, "no reply and no close in 10 s to", data);
    else if (srvt_raw_status(&r) == 503) atomic_fetch_add(&tallies[kind].refused, 1);
    else atomic_fetch_add(&tallies[kind].served, 1);
    srvt_raw_free(&r);
}

static void *http_attacker(void *arg) {
    unsigned seed = (unsigned)(size_t)arg;
    char junk[24000];
    for (unsigned i = 0; procs_now() < deadline; i++) {
        unsigned pick = next_rand(&seed) % (sizeof bad_heads / sizeof bad_heads[0] + 2);
        if (pick < sizeof bad_heads / sizeof bad_heads[0]) {
            raw_once(HTTP, bad_heads[pick], strlen(bad_heads[pick]));
        } else if (pick == sizeof bad_heads / sizeof bad_heads[0]) { /* random bytes */
            size_t n = 1 + next_rand(&seed) % 2000;
            for (size_t k = 0; k < n; k++) junk[k] = (char)next_rand(&seed);
            raw_once(HTTP, junk, n);
        } else { /* a head larger than libmicrohttpd's buffer */
            size_t n = (size_t)snprintf(junk, sizeof junk, "GET /healthz HTTP/1.1\r\nHost: t\r\nX-Big: ");
            memset(junk + n, 'a', sizeof junk - n - 4);
            memcpy(junk + sizeof junk - 4, "\r\n\r\n", 4);
            raw_once(HTTP, junk, sizeof junk);
        }
    }
    return NULL;
}

/* The seed request, mutated one way or another. malloc'd, *len set. */
static char *mutant(unsigned *seed, size_t *len) {
    size_t n = strlen(srvt_seed_mha);
    char *b = NULL;
    switch (next_rand(seed) % 6) {
    case 0: /* cut */
        b = strdup(srvt_seed_mha);
        *len = next_rand(seed) % n;
        return b;
    case 1: /* bytes flipped */
        b = strdup(srvt_seed_mha);
        for (int k = 0; k < 3; k++) b[next_rand(seed) % n] = (char)next_rand(seed);
        *len = n;
        return b;
    case 2: { /* nested past jansson's depth */
        size_t d = 3000;
        b = malloc(2 * d + 32);
        *len = (size_t)sprintf(b, "{\"inputs\":");
        memset(b + *len, '[', d);
        memset(b + *len + d, ']', d);
        *len += 2 * d;
        b[(*len)++] = '}';
        return b;
    }
    case 3: /* numbers beyond float32 */
        b = strdup("{\"inputs\": [[3.4028236e38, 1e999], [-1e400, 0]]}");
        *len = strlen(b);
        return b;
    case 4: { /* thousands of short strings */
        size_t k = 20000;
        b = malloc(k * 4 + 32);
        *len = (size_t)sprintf(b, "{\"inputs\": [");
        for (size_t i = 0; i < k; i++) *len += (size_t)sprintf(b + *len, "%s\"\"", i ? "," : "");
        *len += (size_t)sprintf(b + *len, "]}");
        return b;
    }
    default: /* random bytes */
        *len = 1 + next_rand(seed) % 512;
        b = malloc(*len);
        for (size_t i = 0; i < *len; i++) b[i] = (char)next_rand(seed);
        return b;
    }
}

static void *json_attacker(void *arg) {
    unsigned seed = (unsigned)(size_t)arg;
    while (procs_now() < deadline) {
        size_t len;
        char *body = mutant(&seed, &len);
        srvt_req rq = {.body = body, .len = len, .timeout_ms = 10000};
        srvt_reply r;
        srvt_do(&srv, "/attention/multihead", &rq, &r);
        int ok = r.curl_code == 0 &&
                 (r.status == 200 || (r.status >= 400 && r.status < 500 &&
                                      srvt_check_error(&r, r.status, NULL) == 0));
        if (ok) atomic_fetch_add(&tallies[JSON].served, 1);
        else if (refused(&r)) atomic_fetch_add(&tallies[JSON].refused, 1);
        else failed(JSON, r.error, r.body);
        srvt_reply_free(&r);
        free(body);
    }
    return NULL;
}

/* MultiHeadAttention's weights over 512 tokens: a reply of about 8 MB. */
static char *map_body(size_t *len) {
    int tokens = 512;
    size_t cap = (size_t)tokens * 64 * 8 + 512, n = 0;
    char *b = malloc(cap);
    n += (size_t)snprintf(b, cap, "{\"module\": \"MultiHeadAttention\", \"d_in\": 64, \"d_out\": 64, "
                          "\"num_heads\": 4, \"context_length\": %d, \"init\": {\"seed\": 5}, "
                          "\"return\": [\"attn_weights\"], \"inputs\": [", tokens);
    for (int t = 0; t < tokens; t++) {
        n += (size_t)snprintf(b + n, cap - n, "%s[", t ? "," : "");
        for (int c = 0; c < 64; c++) n += (size_t)snprintf(b + n, cap - n, "%s0.%d", c ? "," : "", (t + c) % 10);
        n += (size_t)snprintf(b + n, cap - n, "]");
    }
    n += (size_t)snprintf(b + n, cap - n, "]}");
    *len = n;
    return b;
}

static void *slow_reader(void *arg) {
    (void)arg;
    size_t len;
    char *body = map_body(&len);
    char head[256];
    int hn = snprintf(head, sizeof head, "POST /attention/multihead HTTP/1.1\r\nHost: t\r\n"
                      "Content-Length: %zu\r\n\r\n", len);
    while (procs_now() < deadline) {
        int fd = srvt_connect(&srv);
        if (fd < 0) {
            failed(SLOW, "cannot connect", NULL);
            break;
        }
        send(fd, head, (size_t)hn, MSG_NOSIGNAL);
        for (size_t off = 0; off < len;) {
            ssize_t w = send(fd, body + off, len - off, MSG_NOSIGNAL);
            if (w <= 0) break;
            off += (size_t)w;
        }
        char buf[16384];
        ssize_t got = 0;
        for (int k = 0; k < 20; k++, procs_sleep_ms(50)) { /* 16 KiB every 50 ms, for a second */
            ssize_t n = recv(fd, buf, sizeof buf, 0);
            if (n <= 0) break;
            if (got == 0 && strncmp(buf, "HTTP/1.1 503", 12) == 0) got = -1;
            else got += n;
        }
        close(fd);
        if (got > 0) atomic_fetch_add(&tallies[SLOW].served, 1);
        else if (got < 0) atomic_fetch_add(&tallies[SLOW].refused, 1);
        else failed(SLOW, "no reply in a second", NULL);
    }
    free(body);
    return NULL;
}

static void *aborter(void *arg) {
    unsigned seed = (unsigned)(size_t)arg;
    static const char head[] = "POST /attention/multihead HTTP/1.1\r\nHost: t\r\n"
                               "Content-Length: 100000\r\n\r\n{\"inputs\": [[1, 2, 3], ";
    while (procs_now() < deadline) {
        int fd = srvt_connect(&srv);
        if (fd < 0) {
            failed(ABORT, "cannot connect", NULL);
            break;
        }
        send(fd, head, strlen(head), MSG_NOSIGNAL);
        if (next_rand(&seed) % 2) procs_sleep_ms(100);
        close(fd);
        atomic_fetch_add(&tallies[ABORT].served, 1);
        procs_sleep_ms(5);
    }
    return NULL;
}

static void *flooder(void *arg) {
    (void)arg;
    int fds[MAX_CONNECTIONS + 8];
    while (procs_now() + 1 < deadline) {
        int n = 0;
        for (; n < MAX_CONNECTIONS + 8; n++)
            if ((fds[n] = srvt_connect(&srv)) < 0) break;
        procs_sleep_ms(500);
        for (int i = 0; i < n; i++) close(fds[i]);
        atomic_fetch_add(&tallies[FLOOD].served, 1);
        procs_sleep_ms(1000);
    }
    return NULL;
}

/* ==== Monitor =========================================================== */

static double rss_mib(const char *field) {
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/%d/status", (int)srv.pid);
    FILE *f = fopen(path, "r");
    double kb = -1;
    size_t n = strlen(field);
    while (f && fgets(line, sizeof line, f))
        if (strncmp(line, field, n) == 0) kb = strtod(line + n, NULL);
    if (f) fclose(f);
    return kb / 1024;
}

static void *monitor(void *arg) {
    (void)arg;
    while (procs_now() < deadline) {
        srvt_req rq = {.timeout_ms = 2000};
        srvt_reply r;
        srvt_do(&srv, "/healthz", &rq, &r);
        atomic_fetch_add(&healthz_asked, 1);
        if (r.curl_code != 0 || (r.status != 200 && r.status != 503)) {
            atomic_fetch_add(&healthz_misses, 1);
            failed(GOOD, "/healthz did not answer:", r.error);
        }
        srvt_reply_free(&r);
        double hwm = rss_mib("VmHWM:");
        if (hwm > peak_rss_mib) peak_rss_mib = hwm;
        procs_sleep_ms(250);
    }
    return NULL;
}

/* ==== The run =========================================================== */

static double soak_seconds(void) {
    const char *v = getenv("SOAK_SECONDS");
    double s = v && *v ? atof(v) : 5;
    return s > 0 ? s : 5;
}

/* Waits until /metrics shows one connection (the asking one) and nothing
 * reserved; returns 1, or 0 after 10 s. */
static int settled(void) {
    for (int i = 0; i < 100; i++, procs_sleep_ms(100))
        if (srvt_metric(&srv, "attn_connections") == 1 &&
            srvt_metric(&srv, "attn_memory_reserved_bytes") == 0 &&
            srvt_metric(&srv, "attn_requests_in_flight") == 1)
            return 1;
    return 0;
}

START_TEST(t_soak) {
    char mem[16], conns[16];
    snprintf(mem, sizeof mem, "%dM", MAX_MEMORY_MIB);
    snprintf(conns, sizeof conns, "%d", MAX_CONNECTIONS);
    const char *args[] = {"--max-memory", mem, "--max-connections", conns, "--max-body", "8M",
                          "--timeout", "5", "--threads", "2", "--stream-min-size", "1M",
                          "--access-log", "off", NULL};
    srvt_must_start(&srv, args);
    double seconds = soak_seconds(), t0 = procs_now();
    deadline = t0 + seconds;
    void *(*fns[])(void *) = {good_client, good_client, http_attacker, json_attacker, slow_reader,
                              aborter, flooder, monitor};
    enum { N = sizeof fns / sizeof fns[0] };
    pthread_t th[N];
    for (size_t i = 0; i < N; i++)
        ck_assert_int_eq(pthread_create(&th[i], NULL, fns[i], (void *)(i + 1)), 0);
    for (size_t i = 0; i < N; i++) pthread_join(th[i], NULL);
    int quiet = settled();
    double rss_now = rss_mib("VmRSS:");
    int status = srvt_stop(&srv, 30);

    unsigned long long served = 0, refusals = 0, failures = 0;
    fprintf(stderr, "soak: %.0f s, --max-memory %d MiB, --max-connections %d\n",
            procs_now() - t0, MAX_MEMORY_MIB, MAX_CONNECTIONS);
    for (int k = 0; k < N_KINDS; k++) {
        unsigned long long s = atomic_load(&tallies[k].served), r = atomic_load(&tallies[k].refused),
                           f = atomic_load(&tallies[k].failed);
        fprintf(stderr, "soak:   %-5s served %6llu  refused %5llu  failed %llu\n", kind_names[k], s, r, f);
        served += s, refusals += r, failures += f;
    }
    fprintf(stderr, "soak: requests served %llu, refused %llu, failures %llu; /healthz asked %llu, "
            "missed %d; peak RSS %.1f MiB (limit %d + margin %d), after %.1f MiB; settled %s; "
            "exit status %d\n", served, refusals, failures, atomic_load(&healthz_asked),
            atomic_load(&healthz_misses), peak_rss_mib, MAX_MEMORY_MIB, RSS_MARGIN_MIB, rss_now,
            quiet ? "yes" : "no", status);
    ck_assert_msg(failures == 0, "first failure: %s", first_failure);
    ck_assert_int_eq(atomic_load(&healthz_misses), 0);
    ck_assert_msg(quiet, "connections, reservations or requests left over after the load");
    ck_assert_msg(status == 0, "exit status %d on SIGTERM", status);
    ck_assert_uint_gt(atomic_load(&tallies[GOOD].served), 0);
#ifndef __SANITIZE_ADDRESS__ /* ASan's shadow memory is not the server's */
    ck_assert_msg(peak_rss_mib <= MAX_MEMORY_MIB + RSS_MARGIN_MIB, "peak RSS %.1f MiB", peak_rss_mib);
#endif
}
END_TEST

static Suite *soak_suite(void) {
    Suite *s = suite_create("server_soak");
    const TTest *tests[] = {t_soak, NULL};
    tcase_add_checked_fixture(tcase_with(s, "soak", soak_seconds() + 120, tests), NULL, teardown);
    return s;
}

const test_program TEST_PROGRAM = {.suites = {soak_suite}};
