/* test_server_units.c - the server's small modules without a server: the
 * memory budget (waits, deadlines, who goes first, the deadlock it refuses),
 * the worker pool's capacity,
 * the --cors-origin list, If-None-Match against an ETag, and content codings.
 *
 * The modules are compiled into this program from their sources (the server
 * is a program, not a library).
 */
#include <check.h>
#include <jansson.h>
#include <malloc.h>
#include <stdio.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "server/budget.c"
#include "server/cors.c"
#include "server/encoding.c"
#include "server/etag.c"
#include "server/pool.c"
#include "tests/support/check_main.h"

#define MiB ((size_t)1 << 20)

static double in(double s) { return now_s() + s; }

/* ==== Memory budget ===================================================== */

/* The estimate's parts counted byte by byte, as budget.h defines them,
 * with the longest token outside strings exact (the estimate may take up
 * to 32 bytes more: it counts whole 16-byte blocks and a block either side). */
static size_t estimate_by_bytes(const char *body, size_t len) {
    size_t open = 0, sep = 0, quote = 0, total = 0, longest = 0, cur = 0, run = 0, longest_run = 0;
    int in = 0, esc = 0;
    for (size_t i = 0; i < len; i++) {
        char c = body[i];
        open += c == '[' || c == '{';
        sep += c == ',' || c == ':';
        quote += c == '"';
        int brk = (signed char)c <= ' ' || (c && strchr(",:[]{}\"\\|", c));
        run = brk ? 0 : run + 1;
        if (run > longest_run) longest_run = run;
        if (!in) {
            if (c == '"') in = 1, cur = 0;
        } else if (esc) {
            esc = 0, cur++;
        } else if (c == '\\') {
            esc = 1, cur++;
        } else if (c == '"') {
            in = 0, total += cur;
            if (cur > longest) longest = cur;
        } else {
            cur++;
        }
    }
    if (in) {
        total += cur;
        if (cur > longest) longest = cur;
    }
    size_t token = longest > longest_run ? longest : longest_run;
    return len + open * SRV_PARSE_PER_OPEN + (sep + 1) * SRV_PARSE_PER_SEP +
           quote * SRV_PARSE_PER_QUOTE + total + 3 * token + SRV_PARSE_BASE;
}

START_TEST(t_budget_parse_estimate) {
    /* lengths around the 16-byte steps and 127-step blocks; texts made of
     * the counted characters only, and of one of them (so that a lane that
     * overflowed or a tail counted twice would show); an unaligned start */
    static const char alphabet[] = "[{,:]}\"\\ 0123456789.e-aaaaaaaaaaaaaaaa";
    size_t max = 16 * 127 * 3 + 40;
    char *text = malloc(max + 1);
    ck_assert_ptr_nonnull(text);
    unsigned seed = 7;
    int checked = 0;
    for (size_t len = 0; len <= max; len += len < 64 ? 1 : len % 2032 < 40 || len % 2032 > 1990 ? 1 : 97) {
        for (int kind = 0; kind < 5; kind++) { /* JSON-like, counted only, all '[', all ',', strings */
            for (size_t i = 0; i < len + 1; i++) {
                seed = seed * 1103515245u + 12345u;
                unsigned r = seed >> 16;
                text[i] = kind == 0   ? alphabet[r % (sizeof alphabet - 1)]
                          : kind == 1 ? "[{,:"[r % 4]
                          : kind == 4 ? (r % 37 == 0 ? '"' : r % 41 == 0 ? '\\' : 'x')
                                      : "[,"[kind - 2];
            }
            size_t want = estimate_by_bytes(text + 1, len), got = srv_budget_parse_estimate(text + 1, len);
            ck_assert_msg(got >= want && got <= want + 96, "len %zu kind %d: %zu against %zu", len,
                          kind, got, want);
            checked++;
        }
    }
    ck_assert_int_gt(checked, 900);
    free(text);
}
END_TEST

/* ==== The estimate against jansson's real peak ========================== */

static size_t heap_now, heap_peak;

/* Each block costs its usable size and malloc's 8-byte header. */
static void *count_malloc(size_t n) {
    void *p = malloc(n);
    if (p) {
        heap_now += malloc_usable_size(p) + 8;
        if (heap_now > heap_peak) heap_peak = heap_now;
    }
    return p;
}

static void count_free(void *p) {
    if (p) heap_now -= malloc_usable_size(p) + 8;
    free(p);
}

/* `open`, then n copies of `unit` (a printf format given the index, for
 * unique keys) joined by `sep`, then `close`. malloc'd. */
static char *repeat(const char *open, const char *unit, const char *sep, const char *close,
                    size_t n, size_t *len) {
    size_t cap = strlen(open) + n * (strlen(unit) + 24 + strlen(sep)) + strlen(close) + 1;
    char *b = malloc(cap);
    ck_assert_ptr_nonnull(b);
    size_t k = (size_t)sprintf(b, "%s", open);
    for (size_t i = 0; i < n; i++) {
        if (i) k += (size_t)sprintf(b + k, "%s", sep);
        k += (size_t)snprintf(b + k, cap - k, unit, i);
    }
    k += (size_t)sprintf(b + k, "%s", close);
    *len = k;
    return b;
}

/* Every kind of item jansson builds, many of them: the body plus jansson's
 * peak stays within the estimate; for arrays of numbers (the tensors every
 * request sends) the estimate is within 1.5 times of it. Before, a body of
 * empty strings peaked at 1.8 times its estimate and a long string at 2.7. */
START_TEST(t_budget_parse_estimate_bounds_jansson) {
    static const struct { const char *open, *unit, *sep, *close; size_t n; int numbers; } k[] = {
        {"[", "\"\"", ",", "]", 100000, 0},           {"[", "\"a\"", ",", "]", 100000, 0},
        {"[", "\"abcdefgh\"", ", ", "]", 100000, 0},   {"[", "\"\\u0041\\n\"", ",", "]", 100000, 0},
        {"[", "0", ",", "]", 200000, 1},              {"[", "0.123456789", ",", "]", 200000, 1},
        {"[[", "-1.5e-7", ",", "]]", 200000, 1},      {"[", "[]", ",", "]", 100000, 0},
        {"[", "[0]", ",", "]", 100000, 0},            {"[", "{}", ",", "]", 100000, 0},
        {"[", "{\"a\":0}", ",", "]", 100000, 0},      {"{", "\"%zx\":0", ",", "}", 100000, 0},
        {"{", "\"%zx\":\"\"", ",", "}", 100000, 0},   {"{", "\"%zx\":{}", ",", "}", 100000, 0},
        {"[", "null", ",", "]", 100000, 0},           {"[\"", "a", "", "\"]", 3000000, 0},
        {"[\"", "\\\"", "", "\"]", 1500000, 0},       {"[", "1", "", "]", 3000000, 0},
        {"[", "t", "", "]", 3000000, 0},              {"[\"", "a b, c: [d] ", "", "\"]", 200000, 0},
        {"", "[", "", "", 2000, 0},
    };
    json_set_alloc_funcs(count_malloc, count_free);
    for (size_t i = 0; i < sizeof k / sizeof k[0]; i++) {
        size_t len;
        char *body = repeat(k[i].open, k[i].unit, k[i].sep, k[i].close, k[i].n, &len);
        heap_now = heap_peak = 0;
        json_error_t e;
        json_t *j = json_loadb(body, len, 0, &e); /* some fail (a long number, "ttt..."): peaks all the same */
        json_decref(j);
        size_t need = len + heap_peak, est = srv_budget_parse_estimate(body, len);
        ck_assert_msg(need <= est, "%s%s...: needs %zu, estimated %zu", k[i].open, k[i].unit, need, est);
        if (k[i].numbers)
            ck_assert_msg(est <= need + need / 2, "%s%s...: needs %zu, estimated %zu", k[i].open,
                          k[i].unit, need, est);
        free(body);
    }
    json_set_alloc_funcs(malloc, free);
}
END_TEST

START_TEST(t_budget_reserve_release) {
    srv_budget *b = srv_budget_create(100 * MiB);
    ck_assert_ptr_nonnull(b);
    size_t a = 0, c = 0;
    ck_assert_int_eq(srv_budget_reserve(b, &a, 60 * MiB, in(1)), SRV_BUDGET_OK);
    ck_assert_uint_eq(a, 60 * MiB);
    ck_assert_int_eq(srv_budget_reserve(b, &a, 40 * MiB, in(1)), SRV_BUDGET_OK);   /* exactly full */
    ck_assert_uint_eq(a, 100 * MiB);
    /* More than the whole budget: refused at once, whatever is free. */
    ck_assert_int_eq(srv_budget_reserve(b, &c, 101 * MiB, in(5)), SRV_BUDGET_NEVER);
    ck_assert_int_eq(srv_budget_reserve(b, &a, 1, in(5)), SRV_BUDGET_NEVER);   /* 100 MiB + 1 */
    ck_assert_int_eq(srv_budget_reserve(b, &c, SIZE_MAX, in(5)), SRV_BUDGET_NEVER);
    /* Full: a new request waits until its deadline. */
    double t0 = now_s();
    ck_assert_int_eq(srv_budget_reserve(b, &c, 1 * MiB, in(0.2)), SRV_BUDGET_TIMEOUT);
    ck_assert(now_s() - t0 >= 0.19);
    ck_assert_uint_eq(c, 0);
    srv_budget_release(b, &a);
    ck_assert_uint_eq(a, 0);
    srv_budget_stats st;
    srv_budget_get_stats(b, &st);
    ck_assert_uint_eq(st.reserved, 0);
    ck_assert_uint_eq(st.peak, 100 * MiB);
    ck_assert_uint_eq(st.refused[SRV_BUDGET_NEVER], 3);
    ck_assert_uint_eq(st.refused[SRV_BUDGET_TIMEOUT], 1);
    ck_assert_uint_eq(st.waits, 1);
    srv_budget_destroy(b);
}
END_TEST

typedef struct {
    srv_budget *b;
    size_t held, want;
    double deadline;
    atomic_int result;   /* -1 while waiting */
} waiter;

static void *reserve_thread(void *arg) {
    waiter *w = arg;
    atomic_store(&w->result, (int)srv_budget_reserve(w->b, &w->held, w->want, w->deadline));
    return NULL;
}

static int waiting(srv_budget *b) {
    srv_budget_stats st;
    srv_budget_get_stats(b, &st);
    return st.waiting;
}

static void wait_for_waiters(srv_budget *b, int n) {
    for (int i = 0; i < 500 && waiting(b) != n; i++) usleep(2000);
    ck_assert_int_eq(waiting(b), n);
}

/* A request that waits for memory (a grower: it holds some already) does
 * not keep out the ones that fit beside it: a new body of 1 MiB is taken at
 * once (the I/O thread does not wait: deadline 0), and so is a new request
 * of 5 MiB; the grower gets its memory when it is released. */
START_TEST(t_budget_admits_what_fits_beside_a_waiter) {
    srv_budget *b = srv_budget_create(100 * MiB);
    size_t big = 0, body = 0, fresh = 0;
    ck_assert_int_eq(srv_budget_reserve(b, &big, 70 * MiB, in(1)), SRV_BUDGET_OK);
    waiter grow = {.b = b, .want = 40 * MiB, .deadline = in(5)};
    ck_assert_int_eq(srv_budget_reserve(b, &grow.held, 20 * MiB, in(1)), SRV_BUDGET_OK);
    atomic_init(&grow.result, -1);
    pthread_t tg;
    ck_assert_int_eq(pthread_create(&tg, NULL, reserve_thread, &grow), 0);
    wait_for_waiters(b, 1);
    /* 10 MiB are free */
    ck_assert_int_eq(srv_budget_reserve(b, &body, 1 * MiB, 0.0), SRV_BUDGET_OK);
    ck_assert_int_eq(srv_budget_reserve(b, &fresh, 5 * MiB, in(1)), SRV_BUDGET_OK);
    /* 4 MiB free now: 5 more do not fit, and the I/O thread's body is refused */
    ck_assert_int_eq(srv_budget_reserve(b, &body, 5 * MiB, 0.0), SRV_BUDGET_TIMEOUT);
    ck_assert_int_eq(atomic_load(&grow.result), -1);
    srv_budget_release(b, &big);
    pthread_join(tg, NULL);
    ck_assert_int_eq(atomic_load(&grow.result), SRV_BUDGET_OK);
    ck_assert_uint_eq(grow.held, 60 * MiB);
    srv_budget_release(b, &grow.held);
    srv_budget_release(b, &body);
    srv_budget_release(b, &fresh);
    srv_budget_destroy(b);
}
END_TEST

/* Memory released goes first to the requests waiting for it, those that
 * hold memory already before new ones, whatever their order of arrival;
 * a waiter it cannot serve yet waits on. */
START_TEST(t_budget_release_serves_growers_first) {
    srv_budget *b = srv_budget_create(100 * MiB);
    size_t big = 0;
    ck_assert_int_eq(srv_budget_reserve(b, &big, 50 * MiB, in(1)), SRV_BUDGET_OK);
    waiter fresh = {.b = b, .want = 50 * MiB, .deadline = in(5)};
    waiter grow = {.b = b, .want = 35 * MiB, .deadline = in(5)};
    ck_assert_int_eq(srv_budget_reserve(b, &grow.held, 20 * MiB, in(1)), SRV_BUDGET_OK);
    atomic_init(&fresh.result, -1);
    atomic_init(&grow.result, -1);
    pthread_t tf, tg;
    ck_assert_int_eq(pthread_create(&tf, NULL, reserve_thread, &fresh), 0); /* first */
    wait_for_waiters(b, 1);
    ck_assert_int_eq(pthread_create(&tg, NULL, reserve_thread, &grow), 0);
    wait_for_waiters(b, 2);
    srv_budget_release(b, &big);   /* 80 MiB free: the grower's 35, then 45 left: not 50 */
    pthread_join(tg, NULL);
    ck_assert_int_eq(atomic_load(&grow.result), SRV_BUDGET_OK);
    ck_assert_uint_eq(grow.held, 55 * MiB);
    wait_for_waiters(b, 1);
    ck_assert_int_eq(atomic_load(&fresh.result), -1);
    srv_budget_release(b, &grow.held);
    pthread_join(tf, NULL);
    ck_assert_int_eq(atomic_load(&fresh.result), SRV_BUDGET_OK);
    ck_assert_uint_eq(fresh.held, 50 * MiB);
    srv_budget_release(b, &fresh.held);
    srv_budget_destroy(b);
}
END_TEST

/* Two requests that hold memory and both wait for more would wait for ever:
 * the second one to find that out is refused at once. */
START_TEST(t_budget_refuses_deadlock) {
    srv_budget *b = srv_budget_create(100 * MiB);
    waiter a = {.b = b, .want = 50 * MiB, .deadline = in(10)};
    atomic_init(&a.result, -1);
    size_t held_b = 0;
    ck_assert_int_eq(srv_budget_reserve(b, &a.held, 40 * MiB, in(1)), SRV_BUDGET_OK);
    ck_assert_int_eq(srv_budget_reserve(b, &held_b, 40 * MiB, in(1)), SRV_BUDGET_OK);
    pthread_t t;
    ck_assert_int_eq(pthread_create(&t, NULL, reserve_thread, &a), 0);
    wait_for_waiters(b, 1);
    double t0 = now_s();
    ck_assert_int_eq(srv_budget_reserve(b, &held_b, 50 * MiB, in(10)), SRV_BUDGET_STUCK);
    ck_assert(now_s() - t0 < 1.0);
    ck_assert_uint_eq(held_b, 40 * MiB);
    /* Its reply sent, it releases, and the first one goes on. */
    srv_budget_release(b, &held_b);
    pthread_join(t, NULL);
    ck_assert_int_eq(atomic_load(&a.result), SRV_BUDGET_OK);
    ck_assert_uint_eq(a.held, 90 * MiB);
    srv_budget_release(b, &a.held);
    srv_budget_destroy(b);
}
END_TEST

/* --max-elements by default: half the budget in floats, at least 2^27; a
 * 4 GiB machine's default budget (half of it, less a quarter: 1.5 GiB)
 * takes the book's GPT_CONFIG_124M from a seed (176,122,146 values). */
START_TEST(t_budget_max_elements) {
    ck_assert_uint_eq(srv_budget_max_elements(64 * MiB), SRV_MIN_MAX_ELEMENTS);
    ck_assert_uint_eq(srv_budget_max_elements(1024 * MiB), SRV_MIN_MAX_ELEMENTS);
    ck_assert_uint_eq(srv_budget_max_elements(8192 * MiB), (size_t)1 << 30);
    ck_assert_uint_ge(srv_budget_max_elements(1536 * MiB), 176122146);
}
END_TEST

START_TEST(t_budget_default_is_stated) {
    char how[160] = "";
    size_t d = srv_budget_default(how, sizeof how);
    ck_assert_uint_ge(d, 64 * MiB);
    ck_assert_msg(strstr(how, "cgroup") || strstr(how, "physical"), "%s", how);
    ck_assert_msg(strstr(how, "minus a margin"), "%s", how);
}
END_TEST

/* ==== Worker pool ======================================================= */

static pthread_mutex_t gate_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t gate_cv = PTHREAD_COND_INITIALIZER;
static int gate_open;
static atomic_int jobs_done;

static void gated_job(void *arg) {
    (void)arg;
    pthread_mutex_lock(&gate_mu);
    while (!gate_open) pthread_cond_wait(&gate_cv, &gate_mu);
    pthread_mutex_unlock(&gate_mu);
    atomic_fetch_add(&jobs_done, 1);
}

static void set_gate(int open) {
    pthread_mutex_lock(&gate_mu);
    gate_open = open;
    pthread_cond_broadcast(&gate_cv);
    pthread_mutex_unlock(&gate_mu);
}

/* 4 threads and a queue of 4 take 8 jobs at once, however soon after one
 * another they come (jobs the idle threads have not picked up yet are not
 * waiting for a thread), and refuse the 9th while the 8 run. Many rounds:
 * submitting right after the pool starts is when the threads are slowest
 * to pick up. */
START_TEST(t_pool_capacity) {
    for (int round = 0; round < 50; round++) {
        set_gate(0);
        atomic_store(&jobs_done, 0);
        srv_pool *p = srv_pool_create(4, 4);
        ck_assert_ptr_nonnull(p);
        int taken = 0;
        for (int i = 0; i < 8; i++) taken += srv_pool_submit(p, gated_job, NULL) == 0;
        ck_assert_msg(taken == 8, "round %d: %d of 8 jobs taken by 4 threads and a queue of 4",
                      round, taken);
        ck_assert_int_eq(srv_pool_submit(p, gated_job, NULL), -1);
        size_t queued, running;
        srv_pool_stats(p, &queued, &running);
        ck_assert_uint_eq(queued + running, 8);
        set_gate(1);
        srv_pool_destroy(p);
        ck_assert_int_eq(atomic_load(&jobs_done), 8);
    }
}
END_TEST

/* ==== CORS ============================================================== */

START_TEST(t_cors_lists) {
    srv_cors c;
    char err[160];
    ck_assert_int_eq(srv_cors_parse(&c, "", err, sizeof err), 0);
    ck_assert(!srv_cors_enabled(&c));
    ck_assert_int_eq(srv_cors_parse(&c, "*", err, sizeof err), 0);
    ck_assert(srv_cors_enabled(&c) && !srv_cors_varies(&c));
    ck_assert_str_eq(srv_cors_allow(&c, NULL), "*");

    ck_assert_int_eq(srv_cors_parse(&c, " https://a.example ,http://localhost:5173,http://[::1]:8000 ",
                                    err, sizeof err), 0);
    ck_assert_int_eq(c.n, 3);
    ck_assert(srv_cors_varies(&c));
    const char *o = "http://localhost:5173";
    ck_assert_ptr_eq(srv_cors_allow(&c, o), o);   /* echoed as the browser sent it */
    ck_assert_ptr_nonnull(srv_cors_allow(&c, "https://a.example"));
    ck_assert_ptr_nonnull(srv_cors_allow(&c, "HTTPS://A.example"));
    ck_assert_ptr_nonnull(srv_cors_allow(&c, "http://[::1]:8000"));
    ck_assert_ptr_null(srv_cors_allow(&c, "https://a.example:443"));
    ck_assert_ptr_null(srv_cors_allow(&c, "https://a.example.evil"));
    ck_assert_ptr_null(srv_cors_allow(&c, "null"));
    ck_assert_ptr_null(srv_cors_allow(&c, NULL));

    const char *bad[] = {"https://a.example/", "a.example", "https://", "https://a.example:99999",
                         "*, https://a.example", "https://a b", "ftp//x"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        ck_assert_msg(srv_cors_parse(&c, bad[i], err, sizeof err) == -1, "accepted %s", bad[i]);
    char many[SRV_CORS_MAX * 24 + 64] = "";
    for (int i = 0; i <= SRV_CORS_MAX; i++) {
        char one[32];
        snprintf(one, sizeof one, "%shttp://h%d.example", i ? "," : "", i);
        strcat(many, one);
    }
    ck_assert_int_eq(srv_cors_parse(&c, many, err, sizeof err), -1);
    ck_assert_msg(strstr(err, "more than"), "%s", err);
}
END_TEST

/* ==== ETag ============================================================== */

START_TEST(t_etag_if_none_match) {
    char e[SRV_ETAG_SIZE], f[SRV_ETAG_SIZE];
    srv_etag_of("abc", 3, e);
    srv_etag_of("abd", 3, f);
    ck_assert_uint_eq(strlen(e), 18);
    ck_assert(e[0] == '"' && e[17] == '"');
    ck_assert_str_ne(e, f);
    char list[64], weak[32];
    snprintf(list, sizeof list, "\"x\", %s", e);
    snprintf(weak, sizeof weak, "W/%s", e);
    ck_assert(srv_etag_matches(e, e));
    ck_assert(srv_etag_matches(list, e));
    ck_assert(srv_etag_matches(weak, e));
    ck_assert(srv_etag_matches("*", e));
    ck_assert(!srv_etag_matches(NULL, e));
    ck_assert(!srv_etag_matches("", e));
    ck_assert(!srv_etag_matches(f, e));
    ck_assert(!srv_etag_matches("\"abc", e));   /* unterminated */
    ck_assert(!srv_etag_matches(e + 1, e));      /* not quoted */
}
END_TEST

/* ==== Content codings ==================================================== */

START_TEST(t_codings) {
    ck_assert_int_eq(srv_content_coding(NULL), SRV_CODING_IDENTITY);
    ck_assert_int_eq(srv_content_coding(" Identity "), SRV_CODING_IDENTITY);
    ck_assert_int_eq(srv_content_coding(""), SRV_CODING_IDENTITY);
    ck_assert_int_eq(srv_content_coding("GZIP"), SRV_CODING_GZIP);
    ck_assert_int_eq(srv_content_coding("x-gzip"), SRV_CODING_GZIP);
    ck_assert_int_eq(srv_content_coding("gzip, identity"), SRV_CODING_OTHER);
    ck_assert_int_eq(srv_content_coding("br"), SRV_CODING_OTHER);
    static const struct { const char *ae; int gzip; } cases[] = {
        {NULL, 0}, {"", 0}, {"gzip", 1}, {"GZip", 1}, {"deflate, gzip;q=0.8", 1},
        {"gzip;q=0", 0}, {"gzip; q=0.0", 0}, {"*", 1}, {"*;q=0", 0}, {"br, *;q=0.1", 1},
        {"gzip;q=0, *", 0}, {"identity", 0}, {"x-gzip", 1}, {"br,deflate", 0},
        {"gzip;level=1;q=0.5", 1}, {"gzipper", 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
        ck_assert_msg(srv_accepts_gzip(cases[i].ae) == cases[i].gzip, "%s", cases[i].ae);
}
END_TEST

static Suite *units_suite(void) {
    Suite *s = suite_create("server_units");
    const TTest *tests[] = {t_budget_parse_estimate, t_budget_parse_estimate_bounds_jansson, t_budget_reserve_release, t_budget_admits_what_fits_beside_a_waiter, t_budget_release_serves_growers_first, t_budget_refuses_deadlock, t_budget_max_elements, t_budget_default_is_stated, t_pool_capacity, t_cors_lists, t_etag_if_none_match, t_codings, NULL};
    tcase_with(s, "units", 120, tests); /* under ASan on a loaded 2-core machine the jansson bound took over 30 s */
    return s;
}

const test_program TEST_PROGRAM = {.suites = {units_suite}};
