/* test_server_batch.c - the batched decode steps of concurrent generations
 * (server/batch.h) through the real server of this build:
 *
 *   - eight generations at once (greedy and seeded sampling, different
 *     prompts and lengths, so that they join and leave the batch at
 *     different steps; some past the context window, whose recompute runs
 *     outside the batch; streamed and whole; /model/gpt2 and
 *     /v1/completions) write the same tokens as each alone, their
 *     log-probabilities within 1e-4, while a ninth hangs up after three
 *     tokens (a step of 4 rows or more groups the
 *     sums of its products otherwise: see docs/generation.md), and steps of
 *     more than one row were run (/metrics' attn_batch_step_rows);
 *   - a client that does not read its stream is parked (away in /metrics)
 *     while another stream is written to its end;
 *   - /metrics has the time to first token, the step rows, the sequences
 *     and the cache bytes.
 */
#include <check.h>
#include <curl/curl.h>
#include <jansson.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "support/check_main.h"
#include "support/server_harness.h"
#include "support/tiny_server.h"
#include "support/tmpdir.h"

enum { N = 8 };

/* Request i: its path and body (tiny's golden model, 64 positions). */
static void request_of(int i, const char **path, char body[512]) {
    static const char *texts[] = {"Hello", "The cat", "a", "Once upon a time", "xyz", "Hi there",
                                  "12345", "Dear"};
    int n = 20 + 9 * i; /* 20 .. 83: the longer ones pass the 64-position window */
    if (i == 6) {
        *path = "/v1/completions";
        snprintf(body, 512, "{\"model\": \"tiny\", \"prompt\": \"%s\", \"max_tokens\": %d, "
                 "\"temperature\": 0.9, \"seed\": 17, \"logprobs\": 2, \"stream\": true}", texts[i], 40);
        return;
    }
    *path = "/model/gpt2";
    const char *sampling = i % 3 == 0 ? "\"temperature\": 0" : i % 3 == 1 ? "\"temperature\": 1, \"seed\": 5"
                                                                        : "\"temperature\": 0.8, \"top_k\": 20, \"seed\": 9";
    snprintf(body, 512, "{\"model\": \"tiny\", \"text\": \"%s\", \"generate\": {\"max_new_tokens\": %d, "
             "%s, \"logprobs\": 2}}", texts[i], n, sampling);
}

/* The chosen tokens and their log-probabilities of a reply (whole JSON, or
 * OpenAI's stream of chunks). Their count. */
static int tokens_of(const char *path, const char *body, int *ids, double *lps, int most) {
    int n = 0;
    if (strcmp(path, "/v1/completions") == 0) { /* data: {...} chunks: logprobs.token_logprobs */
        for (const char *p = body; (p = strstr(p, "data: {")) != NULL && n < most; p += 6) {
            json_t *j = json_loadb(p + 6, strcspn(p + 6, "\n"), JSON_ALLOW_NUL, NULL);
            ck_assert_ptr_nonnull(j);
            const json_t *lp = json_object_get(json_array_get(json_object_get(j, "choices"), 0), "logprobs");
            const json_t *tl = json_object_get(lp, "token_logprobs");
            for (size_t k = 0; k < json_array_size(tl) && n < most; k++, n++) {
                lps[n] = json_number_value(json_array_get(tl, k));
                ids[n] = (int)json_array_size(tl); /* the text is compared below */
            }
            json_decref(j);
        }
        return n;
    }
    json_error_t je;
    json_t *j = json_loads(body, JSON_ALLOW_NUL, &je);
    ck_assert_msg(j != NULL, "not JSON (%s at %d): %.300s", je.text, je.position, body);
    const json_t *steps = json_object_get(json_object_get(j, "generation"), "steps");
    for (size_t k = 0; k < json_array_size(steps) && n < most; k++, n++) {
        ids[n] = (int)json_integer_value(json_object_get(json_array_get(steps, k), "id"));
        lps[n] = json_number_value(json_object_get(json_array_get(steps, k), "logprob"));
    }
    json_decref(j);
    return n;
}

/* The text of an OpenAI stream: every chunk's choices[0].text joined. */
static void stream_text(const char *body, char *out, size_t cap) {
    size_t len = 0;
    out[0] = '\0';
    for (const char *p = body; (p = strstr(p, "data: {")) != NULL; p += 6) {
        json_t *j = json_loadb(p + 6, strcspn(p + 6, "\n"), JSON_ALLOW_NUL, NULL);
        const char *t = json_string_value(json_object_get(json_array_get(json_object_get(j, "choices"), 0), "text"));
        if (t && len + strlen(t) < cap) memcpy(out + len, t, strlen(t) + 1), len += strlen(t);
        json_decref(j);
    }
}

typedef struct {
    const srvt_server *s;
    int i;
    pthread_barrier_t *go;
    srvt_reply r;
} job;

static void *run_job(void *arg) {
    job *jb = arg;
    const char *path;
    char body[512];
    request_of(jb->i, &path, body);
    pthread_barrier_wait(jb->go);
    usleep((useconds_t)(jb->i % 4) * 2000); /* some join a few steps later */
    srvt_post(jb->s, path, body, &jb->r);
    return NULL;
}

/* Reply i of a concurrent round against its solo reply. */
static void compare(int i, const srvt_reply *solo, const srvt_reply *got) {
    const char *path;
    char body[512];
    request_of(i, &path, body);
    ck_assert_int_eq(got->status, 200);
    int ids_a[128], ids_b[128];
    double lp_a[128], lp_b[128];
    int na = tokens_of(path, solo->body, ids_a, lp_a, 128), nb = tokens_of(path, got->body, ids_b, lp_b, 128);
    ck_assert_int_eq(na, nb);
    ck_assert_int_gt(na, 0);
    for (int k = 0; k < na; k++) {
        ck_assert_msg(ids_a[k] == ids_b[k], "request %d token %d: %d alone, %d batched", i, k, ids_a[k], ids_b[k]);
        ck_assert_msg(fabs(lp_a[k] - lp_b[k]) <= 1e-4, "request %d token %d: logprob %.9g alone, %.9g batched",
                      i, k, lp_a[k], lp_b[k]);
    }
    if (strcmp(path, "/v1/completions") == 0) {
        char ta[4096], tb[4096];
        stream_text(solo->body, ta, sizeof ta);
        stream_text(got->body, tb, sizeof tb);
        ck_assert_str_eq(ta, tb);
    }
}

/* A stream that hangs up after its third token event, beside the others:
 * the steps it leads must still give the others their rows. */
static size_t hang_up(char *p, size_t size, size_t n, void *ctx) {
    int *events = ctx;
    for (const char *q = p; (q = memchr(q, 'e', (size_t)(p + size * n - q))) != NULL; q++)
        *events += strncmp(q, "event: token", (size_t)(p + size * n - q) < 12 ? (size_t)(p + size * n - q) : 12) == 0;
    return *events >= 3 ? 0 : size * n;
}

static void *leaving(void *arg) {
    job *jb = arg;
    char url[256];
    const char *body = "{\"model\": \"tiny\", \"text\": \"Bye\", \"generate\": {\"max_new_tokens\": 60}}";
    snprintf(url, sizeof url, "%s/model/gpt2", jb->s->base);
    CURL *h = curl_easy_init();
    struct curl_slist *hd = curl_slist_append(NULL, "Accept: text/event-stream");
    int events = 0;
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, hd);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, hang_up);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &events);
    curl_easy_setopt(h, CURLOPT_NOPROXY, "*");
    pthread_barrier_wait(jb->go);
    curl_easy_perform(h);
    curl_slist_free_all(hd);
    curl_easy_cleanup(h);
    return NULL;
}

/* One round of N generations at once; 1 when a step took more than one row. */
static int concurrent_round(const srvt_server *s, const srvt_reply *solo, int round) {
    double rows0 = srvt_metric(s, "attn_batch_step_rows_sum"), steps0 = srvt_metric(s, "attn_batch_step_rows_count");
    pthread_barrier_t go;
    pthread_barrier_init(&go, NULL, N + 1);
    job jobs[N + 1];
    pthread_t th[N + 1];
    for (int i = 0; i <= N; i++) {
        jobs[i] = (job){.s = s, .i = i, .go = &go};
        pthread_create(&th[i], NULL, i < N ? run_job : leaving, &jobs[i]);
    }
    for (int i = 0; i <= N; i++) pthread_join(th[i], NULL);
    pthread_barrier_destroy(&go);
    for (int i = 0; i < N; i++) {
        compare(i, &solo[i], &jobs[i].r);
        srvt_reply_free(&jobs[i].r);
    }
    double rows = srvt_metric(s, "attn_batch_step_rows_sum") - rows0;
    double steps = srvt_metric(s, "attn_batch_step_rows_count") - steps0;
    printf("round %d: %.0f batched steps, %.2f rows a step\n", round, steps, steps > 0 ? rows / steps : 0);
    return rows > steps;
}

START_TEST(batched_equals_solo) {
    srvt_server s;
    tiny_server_start(&s);
    srvt_reply solo[N];
    for (int i = 0; i < N; i++) { /* each alone */
        const char *path;
        char body[512];
        request_of(i, &path, body);
        srvt_post(&s, path, body, &solo[i]);
        ck_assert_msg(solo[i].status == 200, "request %d: %ld %s", i, solo[i].status, solo[i].body);
    }
    ck_assert_int_eq(srvt_metric(&s, "attn_batch_step_rows_sum"), srvt_metric(&s, "attn_batch_step_rows_count"));
    int batched = 0;
    for (int round = 0; round < 6 && batched < 2; round++) batched += concurrent_round(&s, solo, round);
    ck_assert_msg(batched >= 1, "the generations never stepped together");
    /* the metrics: every generation's first token, no sequence left */
    ck_assert_int_ge(srvt_metric(&s, "attn_generation_first_token_seconds_count"), N * 3);
    ck_assert_int_ge(srvt_metric(&s, "attn_generation_first_token_seconds_bucket{le=\"+Inf\"}"), N * 3);
    ck_assert_int_ge(srvt_metric(&s, "attn_batch_step_rows_bucket{le=\"1\"}"), 1);
    ck_assert_int_eq(srvt_metric(&s, "attn_batch_sequences{state=\"stepping\"}"), 0);
    ck_assert_int_eq(srvt_metric(&s, "attn_batch_sequences{state=\"away\"}"), 0);
    ck_assert_int_eq(srvt_metric(&s, "attn_batch_cache_bytes"), 0);
    for (int i = 0; i < N; i++) srvt_reply_free(&solo[i]);
    srvt_must_stop(&s);
}
END_TEST

/* A model of few weights: a long stream of small steps (past its 64
 * positions each token recomputes the window, a small prefill). */
#define LONG_MODEL "\"vocab_size\": 300, \"block_size\": 64, \"n_layer\": 1, \"n_head\": 1, " \
                   "\"n_embd\": 8, \"init\": {\"seed\": 1}"
#define ONE_ROW "\"idx\": [1, 2, 3]"

typedef struct {
    const srvt_server *s;
    srvt_reply r;
} post_job;

static void *post_stream(void *arg) {
    post_job *p = arg;
    const char *body = "{" LONG_MODEL ", " ONE_ROW ", \"generate\": {\"max_new_tokens\": 300}}";
    srvt_req rq = {.body = body, .len = strlen(body),
                   .headers = (const char *const[]){"Accept: text/event-stream", NULL}};
    srvt_do(p->s, "/model/gpt2", &rq, &p->r);
    return NULL;
}

/* A POST whose client has a small receive buffer (set before connecting,
 * so that the window the server sees is small), the reply unread. */
static int small_window_post(const srvt_server *s, const char *body) {
    int fd = socket(AF_INET, SOCK_STREAM, 0), small = 2048;
    ck_assert_int_ge(fd, 0);
    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &small, sizeof small);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)s->port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ck_assert_int_eq(connect(fd, (struct sockaddr *)&a, sizeof a), 0);
    char head[256];
    int n = snprintf(head, sizeof head, "POST /model/gpt2 HTTP/1.1\r\nHost: t\r\nAccept: "
                     "text/event-stream\r\nContent-Length: %zu\r\n\r\n", strlen(body));
    srvt_raw_send_all(fd, head, (size_t)n);
    srvt_raw_send_all(fd, body, strlen(body));
    return fd;
}

/* A stream whose client reads nothing fills its queue and is parked: it is
 * away, and another stream is written to its end meanwhile. */
START_TEST(unread_stream_parked) {
    srvt_server s;
    srvt_must_start(&s, (const char *const[]){"--max-new-tokens", "30000", "--timeout", "60", NULL});
    /* token events with 5 alternatives: about 8 MB in all, more than the
     * stream's queue (1 MiB) and the sockets' buffers (loopback's are large) */
    const char *body = "{" LONG_MODEL ", " ONE_ROW ", \"generate\": {\"max_new_tokens\": 30000, "
                       "\"logprobs\": 5}}";
    int fd = small_window_post(&s, body);
    double written = -1, now = 0; /* until it writes no more (3 looks): its queue is full */
    for (int i = 0, same = 0; i < 300 && same < 3; i++) {
        now = srvt_metric(&s, "attn_generated_tokens_total");
        same = now > 0 && now == written ? same + 1 : 0;
        written = now;
        usleep(300000);
    }
    ck_assert_msg(written > 0 && written < 30000, "the unread stream wrote %g tokens", written);
    double away = srvt_metric(&s, "attn_batch_sequences{state=\"away\"}");
    ck_assert_msg(away == 1, "the unread stream was not parked (away %g) after %g tokens", away, written);
    post_job p = {.s = &s};
    pthread_t th;
    pthread_create(&th, NULL, post_stream, &p);
    pthread_join(th, NULL);
    ck_assert_int_eq(p.r.status, 200);
    int tokens = 0;
    for (const char *q = p.r.body; (q = strstr(q, "event: token")) != NULL; q++) tokens++;
    printf("parked: a stream of %d tokens in %.0f ms beside it\n", tokens, p.r.ms);
    ck_assert_int_eq(tokens, 300);
    ck_assert_int_eq(srvt_metric(&s, "attn_batch_sequences{state=\"away\"}"), 1);
    ck_assert_int_gt(srvt_metric(&s, "attn_batch_cache_bytes"), 0);
    srvt_reply_free(&p.r);
    close(fd);
    srvt_must_stop(&s);
}
END_TEST

static Suite *server_batch_suite(void) {
    const TTest *tests[] = {batched_equals_solo, unread_stream_parked, NULL};
    return suite_with("server_batch", "batch", 120, tests, NULL, ttmp_remove);
}

const test_program TEST_PROGRAM = {.suites = {server_batch_suite}};
