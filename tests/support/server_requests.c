/* server_requests.c - see server_requests.h. */
#include "server_requests.h"

#include <check.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EMBEDDINGS                                                                         \
    "[[0.43,0.15,0.89],[0.55,0.87,0.66],[0.57,0.85,0.64],[0.22,0.58,0.33],[0.77,0.25,0.10]," \
    "[0.05,0.80,0.55]]"

const char srvt_seed_mha[] =
    "{\"module\":\"MultiHeadAttention\",\"d_out\":2,\"num_heads\":2,\"context_length\":6,"
    "\"dropout\":0.0,\"qkv_bias\":false,\"init\":{\"seed\":123},\"inputs\":[" EMBEDDINGS "]}";

const char srvt_seed_simple[] = "{\"inputs\":" EMBEDDINGS "}";

/* Compares the numbers of a nested JSON array with want, in order. */
static int compare(json_t *v, const double *want, size_t n, size_t *at, double tol) {
    if (json_is_array(v)) {
        for (size_t i = 0; i < json_array_size(v); i++)
            if (compare(json_array_get(v, i), want, n, at, tol) != 0) return -1;
        return 0;
    }
    if (!json_is_number(v) || *at >= n) return -1;
    double got = json_number_value(v);
    if (fabs(got - want[*at]) > tol) {
        fprintf(stderr, "value %zu: got %.6f, expected %.4f\n", *at, got, want[*at]);
        return -1;
    }
    (*at)++;
    return 0;
}

static json_t *parse_ok(const srvt_reply *r) {
    if (r->curl_code != 0 || r->status != 200) {
        fprintf(stderr, "curl %d, status %ld: %.300s\n", r->curl_code, r->status, r->body);
        return NULL;
    }
    json_error_t e;
    json_t *root = json_loadb(r->body, r->len, 0, &e);
    if (!root) fprintf(stderr, "reply is not JSON (%s): %.300s\n", e.text, r->body);
    return root;
}

int srvt_check_seed_mha(const srvt_reply *r) {
    static const double want[] = {0.3190, 0.4858, 0.2943, 0.3897, 0.2856, 0.3593,
                                  0.2693, 0.3873, 0.2639, 0.3928, 0.2575, 0.4028};
    json_t *root = parse_ok(r);
    if (!root) return -1;
    json_t *ctx = json_object_get(root, "context");
    size_t at = 0;
    /* [1][6][2]: the batch axis is kept, as the input had one. */
    int ok = json_array_size(ctx) == 1 && json_array_size(json_array_get(ctx, 0)) == 6 &&
             compare(ctx, want, 12, &at, 0.5e-4 + 1e-6) == 0 && at == 12;
    if (!ok) fprintf(stderr, "seed MultiHeadAttention context wrong: %.400s\n", r->body);
    json_decref(root);
    return ok ? 0 : -1;
}

int srvt_check_seed_simple(const srvt_reply *r) {
    static const double want[] = {0.4419, 0.6515, 0.5683};
    json_t *root = parse_ok(r);
    if (!root) return -1;
    json_t *ctx = json_object_get(root, "context");
    size_t at = 0;
    int ok = json_array_size(ctx) == 6 &&
             compare(json_array_get(ctx, 1), want, 3, &at, 0.5e-4 + 1e-6) == 0 && at == 3;
    if (!ok) fprintf(stderr, "seed simple attention context wrong: %.400s\n", r->body);
    json_decref(root);
    return ok ? 0 : -1;
}

char *srvt_slow_body(int tokens) {
    size_t cap = (size_t)tokens * 8 * 8 + 512;
    char *s = malloc(cap);
    if (!s) return NULL;
    size_t n = (size_t)snprintf(s, cap,
                                "{\"module\":\"MultiHeadAttention\",\"d_out\":2048,\"num_heads\":1,"
                                "\"context_length\":%d,\"dropout\":0.0,\"init\":{\"seed\":1},"
                                "\"return\":[\"timing\"],\"inputs\":[",
                                tokens);
    unsigned x = 12345;
    for (int t = 0; t < tokens; t++) {
        n += (size_t)snprintf(s + n, cap - n, "%s[", t ? "," : "");
        for (int d = 0; d < 8; d++) {
            x = x * 1103515245u + 12345u;
            n += (size_t)snprintf(s + n, cap - n, "%s0.%03u", d ? "," : "", (x >> 16) % 1000);
        }
        n += (size_t)snprintf(s + n, cap - n, "]");
    }
    snprintf(s + n, cap - n, "]}");
    return s;
}

int srvt_check_slow(const srvt_reply *r, int tokens) {
    json_t *root = parse_ok(r);
    if (!root) return -1;
    json_t *shape = json_object_get(root, "shape");
    int ok = json_integer_value(json_object_get(shape, "tokens")) == tokens &&
             json_integer_value(json_object_get(shape, "d_out")) == 2048 &&
             json_is_object(json_object_get(root, "timing"));
    if (!ok) fprintf(stderr, "slow request reply wrong: %.300s\n", r->body);
    json_decref(root);
    return ok ? 0 : -1;
}

char *srvt_map_body(int tokens, size_t *len) {
    size_t cap = (size_t)tokens * 64 * 8 + 256, n = 0;
    char *b = malloc(cap);
    ck_assert_ptr_nonnull(b);
    n += (size_t)snprintf(b + n, cap - n, "{\"module\": \"MultiHeadAttention\", \"d_in\": 64, "
                          "\"d_out\": 64, \"num_heads\": 4, \"context_length\": %d, \"init\": "
                          "{\"seed\": 5}, \"return\": [\"context\", \"attn_weights\"], \"inputs\": [",
                          tokens);
    for (int t = 0; t < tokens; t++) {
        n += (size_t)snprintf(b + n, cap - n, "%s[", t ? "," : "");
        for (int c = 0; c < 64; c++)
            n += (size_t)snprintf(b + n, cap - n, "%s%d.%d", c ? "," : "", (t * 7 + c) % 5, (t + c) % 10);
        n += (size_t)snprintf(b + n, cap - n, "]");
    }
    n += (size_t)snprintf(b + n, cap - n, "]}");
    if (len) *len = n;
    return b;
}

int srvt_check_slow_or_busy(const srvt_reply *r, int tokens, char *retry_after, size_t cap) {
    if (r->status == 200) return srvt_check_slow(r, tokens) == 0 ? 200 : -1;
    if (srvt_check_error(r, 503, "overloaded") != 0) return -1;
    char ra[64];
    if (!srvt_header(r, "Retry-After", ra, sizeof ra)) {
        fprintf(stderr, "a 503 without Retry-After\n");
        return -1;
    }
    if (retry_after) snprintf(retry_after, cap, "%s", ra);
    return 503;
}
