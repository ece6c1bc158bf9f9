/* test_server_generate.c - the server's side of generation, against the real
 * attention-server of this build:
 *
 *   - Accept: text/event-stream streams the events of /model/gpt2 as they
 *     come (Content-Type text/event-stream, Cache-Control no-cache, a token
 *     event before the last token is written), and they say what the whole
 *     JSON reply says; /v1/completions streams data: chunks and [DONE];
 *     GET /v1/models; /tokenize;
 *   - a client that goes away stops its generation at the next token, be it
 *     streamed (curl hangs up after five events) or whole (the socket closed
 *     while the server computes): attn_generated_tokens_total stops growing
 *     far below max_new_tokens;
 *   - --timeout covers a whole reply's generation: it ends with
 *     finish_reason "timeout" and what was written; --max-new-tokens caps a
 *     request (413);
 *   - concurrent streams are served in turn: with one compute thread
 *     (--threads 1), three streams each write their first token before any
 *     of them has finished, and a small request is answered meanwhile;
 *   - /metrics counts the tokens written and the time of each step;
 *   - a generation is told by its parsed body, not its bytes: an escaped
 *     key ("gen\u0065rate") or a gzip body runs on the generation threads,
 *     and a request for the single compute worker is answered meanwhile.
 */
#include <check.h>
#include <curl/curl.h>
#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "support/check_main.h"
#include "support/server_harness.h"
#include "support/sse.h"
#include "support/tiny_server.h"
#include "support/tmpdir.h"
#include "support/zref.h"

/* A model slow enough to watch (about a millisecond or more a token here):
 * 24M parameters built from a seed. */
#define SLOW_MODEL "\"vocab_size\": 8000, \"block_size\": 1100, \"n_layer\": 6, \"n_head\": 8, " \
                   "\"n_embd\": 512, \"init\": {\"seed\": 1}, \"idx\": [1, 2, 3]"

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* The SLOW_MODEL request that generates max_new tokens, into body. */
static void slow_body(char body[512], int max_new) {
    snprintf(body, 512, "{" SLOW_MODEL ", \"generate\": {\"max_new_tokens\": %d}}", max_new);
}

/* Starts s with args (may be NULL); slow_body(body, max_new). */
static void start_slow(srvt_server *s, const char *const *args, char body[512], int max_new) {
    srvt_must_start(s, args);
    slow_body(body, max_new);
}

/* ==== A streaming client =================================================== */

typedef struct {
    const srvt_server *srv;
    const char *path, *body;
    int accept_events;      /* send Accept: text/event-stream */
    int stop_after;         /* hang up after this many token events (0: read all) */
    char *text;             /* what arrived */
    size_t len, cap;
    int tokens;             /* token events (or data chunks) seen */
    double t0, first, done; /* when it began, the first token event, the end */
    long status;
} stream_client;

static size_t on_data(char *p, size_t size, size_t n, void *ctx) {
    stream_client *c = ctx;
    size_t k = size * n;
    if (c->len + k + 1 > c->cap) {
        c->cap = (c->len + k + 1) * 2;
        c->text = realloc(c->text, c->cap);
    }
    memcpy(c->text + c->len, p, k);
    c->len += k;
    c->text[c->len] = '\0';
    int tokens = 0;
    for (const char *q = c->text; (q = strstr(q, "event: token")) != NULL; q++) tokens++;
    for (const char *q = c->text; (q = strstr(q, "\"text_completion\"")) != NULL; q++) tokens++;
    if (tokens && !c->first) c->first = now_s() - c->t0;
    c->tokens = tokens;
    return c->stop_after && tokens >= c->stop_after ? 0 : k; /* 0: curl hangs up */
}

static void *stream_run(void *arg) {
    stream_client *c = arg;
    CURL *h = curl_easy_init();
    char url[256];
    snprintf(url, sizeof url, "%s%s", c->srv->base, c->path);
    struct curl_slist *hd = c->accept_events ? curl_slist_append(NULL, "Accept: text/event-stream") : NULL;
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_POSTFIELDS, c->body);
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, hd);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, c);
    curl_easy_setopt(h, CURLOPT_NOPROXY, "*");
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, 120000L);
    c->t0 = now_s();
    curl_easy_perform(h);
    c->done = now_s() - c->t0;
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &c->status);
    curl_slist_free_all(hd);
    curl_easy_cleanup(h);
    return NULL;
}

static json_t *parse(const char *s) {
    json_error_t je;
    json_t *j = json_loads(s, JSON_ALLOW_NUL, &je);
    ck_assert_msg(j != NULL, "not JSON (%s): %.300s", je.text, s);
    return j;
}

/* ==== Streams ============================================================== */

START_TEST(streams_over_http) {
    srvt_server s;
    tiny_server_start(&s);
    const char *body = "{\"model\": \"tiny\", \"text\": \"Hello\", \"generate\": {\"max_new_tokens\": 8, "
                       "\"temperature\": 1, \"seed\": 4, \"logprobs\": 3}}";
    stream_client c = {.srv = &s, .path = "/model/gpt2", .body = body, .accept_events = 1};
    stream_run(&c);
    ck_assert_int_eq(c.status, 200);
    static sse_list ev;
    sse_parse(c.text, c.len, &ev);
    ck_assert(ev.complete);
    ck_assert_int_eq(ev.n, 1 + 8 + 1);
    ck_assert_str_eq(ev.ev[0].event, "start");
    ck_assert_str_eq(ev.ev[9].event, "done");
    srvt_reply r;
    srvt_post(&s, "/model/gpt2", body, &r); /* the whole reply: the same steps */
    ck_assert_int_eq(r.status, 200);
    json_t *whole = parse(r.body);
    const json_t *steps = json_object_get(json_object_get(whole, "generation"), "steps");
    for (int k = 0; k < 8; k++) {
        json_t *t = parse(ev.ev[1 + k].data);
        ck_assert_msg(json_equal(t, json_array_get(steps, (size_t)k)), "event %d", k);
        json_decref(t);
    }
    json_decref(whole);
    srvt_reply_free(&r);
    sse_free(&ev);
    free(c.text);
    /* the headers of a stream */
    srvt_req rq = {.body = body, .len = strlen(body),
                   .headers = (const char *const[]){"Accept: text/event-stream", NULL}};
    srvt_do(&s, "/model/gpt2", &rq, &r);
    srvt_assert_header(&r, "Content-Type", "text/event-stream");
    srvt_assert_header(&r, "Cache-Control", "no-cache");
    srvt_reply_free(&r);
    /* OpenAI's stream; GET /v1/models; /tokenize */
    srvt_post(&s, "/v1/completions", "{\"model\": \"tiny\", \"prompt\": \"Hi\", \"max_tokens\": 4, "
              "\"stream\": true}", &r);
    srvt_assert_header(&r, "Content-Type", "text/event-stream");
    ck_assert_ptr_nonnull(strstr(r.body, "data: [DONE]\n\n"));
    srvt_reply_free(&r);
    srvt_get(&s, "/v1/models", &r);
    ck_assert_ptr_nonnull(strstr(r.body, "\"id\":\"tiny\""));
    srvt_reply_free(&r);
    srvt_post(&s, "/tokenize", "{\"content\": \"Hi\"}", &r);
    ck_assert_str_eq(r.body, "{\"tokens\":[72,105]}\n");
    srvt_reply_free(&r);
    ck_assert_int_ge(srvt_metric(&s, "attn_generated_tokens_total"), 8 + 8 + 4);
    ck_assert_int_ge(srvt_metric(&s, "attn_generation_step_seconds_count"), 20);
    srvt_must_stop(&s);
}
END_TEST

/* The tokens written so far, once no generation runs any more (60 s at most). */
static double settled_tokens(const srvt_server *s) {
    for (int i = 0; i < 600 && srvt_metric(s, "attn_generations_running") != 0; i++) usleep(100000);
    return srvt_metric(s, "attn_generated_tokens_total");
}

START_TEST(client_gone_stops) {
    srvt_server s;
    char body[512];
    start_slow(&s, NULL, body, 1000);
    stream_client c = {.srv = &s, .path = "/model/gpt2", .body = body, .accept_events = 1,
                       .stop_after = 5};
    stream_run(&c); /* hangs up after five token events */
    ck_assert_int_ge(c.tokens, 5);
    free(c.text);
    double after_stream = settled_tokens(&s);
    printf("stream: the client left after %d tokens, the server wrote %.0f of 1000\n", c.tokens,
           after_stream);
    ck_assert_msg(after_stream < 500, "%.0f tokens written after the client left", after_stream);
    /* a whole reply: the socket closed while the server computes */
    int fd = srvt_raw_post(&s, "/model/gpt2", NULL, body, strlen(body));
    usleep(800000);
    close(fd);
    double after_whole = settled_tokens(&s) - after_stream;
    printf("whole reply: the client left after 0.8 s, the server wrote %.0f of 1000\n", after_whole);
    ck_assert_msg(after_whole < 900, "%.0f tokens written after the client left", after_whole);
    /* both end early: the stream cut, the whole reply's computation stopped */
    char *log = srvt_read_log(&s);
    srvt_log_wait(&s, "POST /model/gpt2 ", 2, 10);
    ck_assert_msg(srvt_log_count(&s, "POST /model/gpt2 200") + srvt_log_count(&s, "POST /model/gpt2 503") >= 2,
                  "the log: %s", log);
    free(log);
    srvt_must_stop(&s);
}
END_TEST

START_TEST(timeout_and_cap) {
    srvt_server s;
    char body[512];
    start_slow(&s, (const char *const[]){"--timeout", "1", "--max-new-tokens", "1000", NULL}, body, 1000);
    srvt_reply r;
    double t0 = now_s();
    srvt_post(&s, "/model/gpt2", body, &r);
    double took = now_s() - t0;
    ck_assert_int_eq(r.status, 200);
    json_t *j = parse(r.body);
    const json_t *g = json_object_get(j, "generation");
    printf("--timeout 1: the reply came after %.2f s with %lld tokens\n", took,
           json_integer_value(json_object_get(g, "completion_tokens")));
    ck_assert_str_eq(json_string_value(json_object_get(g, "finish_reason")), "timeout");
    ck_assert_int_lt(json_integer_value(json_object_get(g, "completion_tokens")), 1000);
    json_decref(j);
    srvt_reply_free(&r);
    slow_body(body, 1001);
    srvt_post(&s, "/model/gpt2", body, &r);
    ck_assert_int_eq(srvt_check_error(&r, 413, "too_large"), 0);
    ck_assert_ptr_nonnull(strstr(r.body, "--max-new-tokens"));
    srvt_reply_free(&r);
    srvt_must_stop(&s);
}
END_TEST

/* Three streams on one compute thread take turns. */
START_TEST(streams_take_turns) {
    srvt_server s;
    char body[512];
    start_slow(&s, (const char *const[]){"--threads", "1", "--max-streams", "4", NULL}, body, 60);
    stream_client c[3];
    pthread_t th[3];
    for (int i = 0; i < 3; i++) {
        c[i] = (stream_client){.srv = &s, .path = "/model/gpt2", .body = body, .accept_events = 1};
        pthread_create(&th[i], NULL, stream_run, &c[i]);
        usleep(100000);
    }
    usleep(300000);
    srvt_reply small;
    double t0 = now_s();
    srvt_post(&s, "/attention/simple", "{\"inputs\": [[1, 2], [3, 4]]}", &small);
    double small_s = now_s() - t0;
    double first_max = 0, done_min = 1e9;
    for (int i = 0; i < 3; i++) {
        pthread_join(th[i], NULL);
        ck_assert_int_eq(c[i].status, 200);
        ck_assert_int_eq(c[i].tokens, 60);
        double first = c[i].first + 0.1 * i, done = c[i].done + 0.1 * i; /* from the first's start */
        printf("stream %d: first token %.3f s, done %.3f s\n", i, first, done);
        first_max = first > first_max ? first : first_max;
        done_min = done < done_min ? done : done_min;
        free(c[i].text);
    }
    printf("a small request during the streams: %.3f s\n", small_s);
    ck_assert_int_eq(small.status, 200);
    ck_assert_msg(small_s < 2.0, "a small request waited %.2f s behind the streams", small_s);
    ck_assert_msg(first_max < done_min, "a stream began after another had finished (%.3f >= %.3f)",
                  first_max, done_min);
    srvt_reply_free(&small);
    srvt_must_stop(&s);
}
END_TEST

/* The generations running now, once the written tokens have grown by
 * `more` since `before` (30 s at most). */
static double running_once_written(const srvt_server *s, double before, double more) {
    for (int i = 0; i < 3000 && srvt_metric(s, "attn_generated_tokens_total") < before + more; i++)
        usleep(10000);
    return srvt_metric(s, "attn_generations_running");
}

/* One compute worker; a generation whose key is escaped, then one whose
 * body is gzip: each runs on the generation threads, and a request for the
 * compute worker (gzip: never answered on the I/O thread) is answered while
 * it writes. Before, both ran on the worker and the small request waited
 * for the whole generation. */
START_TEST(generation_routed_by_parse) {
    srvt_server s;
    srvt_must_start(&s, (const char *const[]){"--threads", "1", NULL});
    char body[512];
    snprintf(body, sizeof body, "{" SLOW_MODEL ", \"gen\\u0065rate\": {\"max_new_tokens\": 1000}}");
    size_t zlen, small_len;
    unsigned char *z = zref_gzip(body, strlen(body), &zlen);
    const char small[] = "{\"inputs\": [[1, 2], [3, 4]]}";
    unsigned char *zsmall = zref_gzip(small, sizeof small - 1, &small_len);
    ck_assert(z && zsmall);
    for (int gz = 0; gz < 2; gz++) {
        double before = srvt_metric(&s, "attn_generated_tokens_total");
        int fd = gz ? srvt_raw_post(&s, "/model/gpt2", "Content-Encoding: gzip\r\n", (const char *)z, zlen)
                    : srvt_raw_post(&s, "/model/gpt2", NULL, body, strlen(body));
        ck_assert_msg(running_once_written(&s, before, 5) == 1, "%s: not on the generation threads",
                      gz ? "a gzip body" : "an escaped key");
        srvt_req rq = {.body = (const char *)zsmall, .len = small_len,
                       .headers = (const char *const[]){"Content-Encoding: gzip", NULL}};
        srvt_reply r;
        srvt_do(&s, "/attention/simple", &rq, &r);
        ck_assert_int_eq(r.status, 200);
        ck_assert_msg(srvt_metric(&s, "attn_generations_running") == 1,
                      "%s: the small request was answered after the generation",
                      gz ? "a gzip body" : "an escaped key");
        srvt_reply_free(&r);
        close(fd); /* the generation stops at its next token */
        settled_tokens(&s);
    }
    free(z);
    free(zsmall);
    srvt_must_stop(&s);
}
END_TEST

static Suite *server_generate_suite(void) {
    const TTest *tests[] = {streams_over_http, client_gone_stops, timeout_and_cap, streams_take_turns,
                            generation_routed_by_parse, NULL};
    return suite_with("server_generate", "generate", 120, tests, NULL, ttmp_remove);
}

const test_program TEST_PROGRAM = {.suites = {server_generate_suite}};
