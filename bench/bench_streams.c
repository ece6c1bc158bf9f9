/* bench_streams.c - concurrent generations against a running server: for
 * each count of streams, that many clients post at once a generation of
 * NEW tokens after a prompt of PROMPT token ids (greedy, each stream its own
 * prompt) to /model/gpt2 with Accept: text/event-stream, and note the
 * arrival of every token event (wall clock, CLOCK_MONOTONIC).
 *
 *   bench_streams URL MODEL PROMPT NEW COUNT...
 *
 * Prints one line per count: streams, aggregate tokens/s (every token of
 * every stream over the time from the first request to the last token),
 * time to first token p50/p95 (ms, prefill and queue included) and time
 * between tokens p50/p95 (ms, over the gaps of every stream).
 */
#include <curl/curl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct {
    const char *url;
    char *body;
    double t0, *at; /* the request's start, each token's arrival (s) */
    int n, most;
    char tail[16];  /* the last bytes seen: an event name may span two reads */
    long status;
} stream;

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static size_t on_data(char *p, size_t size, size_t n, void *ctx) {
    stream *s = ctx;
    size_t k = size * n, keep = strlen(s->tail);
    char *buf = malloc(keep + k + 1);
    if (buf == NULL) return 0;
    memcpy(buf, s->tail, keep);
    memcpy(buf + keep, p, k);
    buf[keep + k] = '\0';
    double t = now_s();
    for (const char *q = buf; (q = strstr(q, "event: token")) != NULL; q += 12)
        if (s->n < s->most) s->at[s->n++] = t;
    size_t len = keep + k, last = len > 11 ? 11 : len; /* shorter than the needle */
    memcpy(s->tail, buf + len - last, last);
    s->tail[last] = '\0';
    free(buf);
    return k;
}

static void *run(void *arg) {
    stream *s = arg;
    CURL *h = curl_easy_init();
    struct curl_slist *hd = curl_slist_append(NULL, "Accept: text/event-stream");
    curl_easy_setopt(h, CURLOPT_URL, s->url);
    curl_easy_setopt(h, CURLOPT_POSTFIELDS, s->body);
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, hd);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, s);
    curl_easy_setopt(h, CURLOPT_NOPROXY, "*");
    curl_easy_setopt(h, CURLOPT_TIMEOUT, 900L);
    s->t0 = now_s();
    curl_easy_perform(h);
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &s->status);
    curl_slist_free_all(hd);
    curl_easy_cleanup(h);
    return NULL;
}

static int by_value(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double quantile(double *v, int n, double q) {
    if (n == 0) return 0;
    qsort(v, (size_t)n, sizeof *v, by_value);
    int i = (int)(q * (n - 1) + 0.5);
    return v[i];
}

/* One round of `count` streams; prints its line. 0, or 1 if a stream failed. */
static int round_of(const char *url, const char *model, int prompt, int new_tokens, int count) {
    stream *s = calloc((size_t)count, sizeof *s);
    pthread_t *th = calloc((size_t)count, sizeof *th);
    double *ttft = calloc((size_t)count, sizeof *ttft);
    double *gaps = calloc((size_t)count * (size_t)new_tokens, sizeof *gaps);
    if (!s || !th || !ttft || !gaps) return 1;
    for (int i = 0; i < count; i++) {
        size_t cap = (size_t)prompt * 8 + 256;
        s[i] = (stream){.url = url, .body = malloc(cap), .most = new_tokens,
                        .at = calloc((size_t)new_tokens, sizeof(double))};
        int at = snprintf(s[i].body, cap, "{\"model\": \"%s\", \"return\": [], \"generate\": "
                          "{\"max_new_tokens\": %d, \"temperature\": 0}, \"idx\": [", model, new_tokens);
        for (int t = 0; t < prompt; t++) /* each stream its own prompt */
            at += snprintf(s[i].body + at, cap - (size_t)at, "%s%d", t ? ", " : "",
                           (int)((unsigned)(i * 7919 + t * 104729 + 13) % 50000u));
        snprintf(s[i].body + at, cap - (size_t)at, "]}");
    }
    double start = now_s();
    for (int i = 0; i < count; i++) pthread_create(&th[i], NULL, run, &s[i]);
    int failed = 0, tokens = 0, n_gaps = 0;
    double end = start;
    for (int i = 0; i < count; i++) {
        pthread_join(th[i], NULL);
        failed |= s[i].status != 200 || s[i].n != new_tokens;
        tokens += s[i].n;
        ttft[i] = s[i].n ? (s[i].at[0] - s[i].t0) * 1e3 : 0;
        for (int k = 1; k < s[i].n; k++) gaps[n_gaps++] = (s[i].at[k] - s[i].at[k - 1]) * 1e3;
        if (s[i].n && s[i].at[s[i].n - 1] > end) end = s[i].at[s[i].n - 1];
    }
    double p50 = quantile(ttft, count, 0.5), p95 = quantile(ttft, count, 0.95);
    printf("streams %d tok/s %.1f ttft_p50_ms %.1f ttft_p95_ms %.1f tbt_p50_ms %.1f tbt_p95_ms %.1f%s\n",
           count, tokens / (end - start), p50, p95, quantile(gaps, n_gaps, 0.5),
           quantile(gaps, n_gaps, 0.95), failed ? " FAILED" : "");
    fflush(stdout);
    for (int i = 0; i < count; i++) free(s[i].body), free(s[i].at);
    free(s), free(th), free(ttft), free(gaps);
    return failed;
}

int main(int argc, char **argv) {
    if (argc < 6) {
        fprintf(stderr, "usage: %s URL MODEL PROMPT NEW COUNT...\n", argv[0]);
        return 2;
    }
    curl_global_init(CURL_GLOBAL_ALL);
    char url[512];
    snprintf(url, sizeof url, "%s/model/gpt2", argv[1]);
    int bad = 0;
    for (int a = 5; a < argc; a++) bad |= round_of(url, argv[2], atoi(argv[3]), atoi(argv[4]), atoi(argv[a]));
    curl_global_cleanup();
    return bad;
}
