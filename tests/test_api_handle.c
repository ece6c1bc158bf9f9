/* test_api_handle.c - api_handle end to end: the seed chapters' numbers, the
 * state_dict round trip (params out, state_dict in, same result), every
 * output of every module with its shape, and every example request. */
#include <check.h>
#include <dirent.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api/api.h"
#include "api/model/model.h"
#include "api/module/module.h"
#include "api/numbers/numbers.h"
#include "support/check_main.h"
#include "support/api_call.h"
#include "support/files.h"

#define TOL4 (0.5e-4 + 1e-6)
#define X6 "[[0.43,0.15,0.89],[0.55,0.87,0.66],[0.57,0.85,0.64],[0.22,0.58,0.33],[0.77,0.25,0.10],[0.05,0.80,0.55]]"

static char *read_file(const char *rel, size_t *len) {
    char path[1024];
    char *s = tfile_read(tfile_path(path, sizeof path, rel), len);
    ck_assert_msg(s != NULL, "cannot read %s", path);
    return s;
}

static json_t *call(api_endpoint ep, const char *body, int want_status) {
    return tapi_call(ep, body, NULL, want_status);
}

/* json value -> text, for exact comparisons */
static char *dump(const json_t *j) {
    return json_dumps(j, JSON_COMPACT | JSON_ENCODE_ANY | JSON_REAL_PRECISION(9));
}

static void expect_matrix(const json_t *m, const float *want, int rows, int cols, double tol) {
    ck_assert_int_eq(json_array_size(m), rows);
    for (int i = 0; i < rows; i++) {
        json_t *row = json_array_get(m, i);
        ck_assert_int_eq(json_array_size(row), cols);
        for (int k = 0; k < cols; k++) {
            double got = json_number_value(json_array_get(row, k));
            ck_assert_msg(fabs(got - want[i * cols + k]) <= tol, "[%d][%d] = %.6f, expected %.4f", i,
                          k, got, (double)want[i * cols + k]);
        }
    }
}

static int rank_of(const json_t *t) {
    int r = 0;
    while (json_is_array(t)) {
        r++;
        t = json_array_get(t, 0);
    }
    return r;
}

static void expect_shape(const json_t *t, int rank, const int *shape, const char *what) {
    ck_assert_msg(rank_of(t) == rank, "%s has rank %d, expected %d", what, rank_of(t), rank);
    for (int d = 0; d < rank; d++) {
        ck_assert_msg((int)json_array_size(t) == shape[d], "%s axis %d is %zu, expected %d", what,
                      d, json_array_size(t), shape[d]);
        t = json_array_get(t, 0);
    }
}

/* ==== the seed chapters ======================================================= */

static const float MHA_CTX[12] = {0.3190f, 0.4858f, 0.2943f, 0.3897f, 0.2856f, 0.3593f,
                                  0.2693f, 0.3873f, 0.2639f, 0.3928f, 0.2575f, 0.4028f};

START_TEST(test_seed_mha_example) {
    char *body = read_file("api/examples/multihead_seed.json", NULL);
    json_t *j = call(API_EP_MULTIHEAD, body, 200);
    ck_assert_str_eq(json_string_value(json_object_get(j, "module")), "MultiHeadAttention");
    json_t *ctx = json_object_get(j, "context");
    expect_shape(ctx, 3, (int[]){1, 6, 2}, "context"); /* inputs had 3 levels */
    expect_matrix(json_array_get(ctx, 0), MHA_CTX, 6, 2, TOL4);
    expect_shape(json_object_get(j, "attn_weights"), 4, (int[]){1, 2, 6, 6}, "attn_weights");
    json_t *tokens = json_object_get(j, "tokens"); /* echoed by default when given */
    ck_assert_int_eq(json_array_size(tokens), 6);
    ck_assert_str_eq(json_string_value(json_array_get(tokens, 1)), "journey");
    json_t *shape = json_object_get(j, "shape");
    ck_assert_int_eq(json_integer_value(json_object_get(shape, "num_heads")), 2);
    ck_assert_int_eq(json_integer_value(json_object_get(shape, "head_dim")), 1);
    ck_assert_int_eq(json_integer_value(json_object_get(shape, "d_out")), 2);
    json_decref(j);
    free(body);
}
END_TEST

START_TEST(test_seed_mha_unbatched) {
    json_t *j = call(API_EP_MULTIHEAD,
                     "{\"d_out\":2,\"num_heads\":2,\"context_length\":6,\"init\":{\"seed\":123},"
                     "\"inputs\":" X6 "}", 200);
    json_t *ctx = json_object_get(j, "context");
    expect_shape(ctx, 2, (int[]){6, 2}, "context");
    expect_matrix(ctx, MHA_CTX, 6, 2, TOL4);
    expect_shape(json_object_get(j, "attn_weights"), 3, (int[]){2, 6, 6}, "attn_weights");
    json_decref(j);
}
END_TEST

START_TEST(test_seed_v1) {
    static const float ctx[12] = {0.2996f, 0.8053f, 0.3061f, 0.8210f, 0.3058f, 0.8203f,
                                  0.2948f, 0.7939f, 0.2927f, 0.7891f, 0.2990f, 0.8040f};
    char *body = read_file("api/examples/self_v1_seed.json", NULL);
    json_t *j = call(API_EP_SELF, body, 200);
    ck_assert_str_eq(json_string_value(json_object_get(j, "module")), "SelfAttention_v1");
    expect_matrix(json_object_get(j, "context"), ctx, 6, 2, TOL4);
    /* query_2 of 3.4.1: x_2 @ W_query = [0.4306, 1.4551] */
    json_t *q = json_array_get(json_object_get(j, "queries"), 1);
    ck_assert_double_eq_tol(json_number_value(json_array_get(q, 0)), 0.4306, TOL4);
    ck_assert_double_eq_tol(json_number_value(json_array_get(q, 1)), 1.4551, TOL4);
    json_t *params = json_object_get(j, "params");
    expect_shape(json_object_get(params, "W_query"), 2, (int[]){3, 2}, "W_query");
    json_decref(j);
    free(body);
}
END_TEST

START_TEST(test_seed_causal_batch) {
    /* 3.5.3: torch.manual_seed(123); CausalAttention(3, 2, 6, 0.0) on the batch */
    static const float ctx[12] = {-0.4519f, 0.2216f, -0.5874f, 0.0058f, -0.6300f, -0.0632f,
                                  -0.5675f, -0.0843f, -0.5526f, -0.0981f, -0.5299f, -0.1081f};
    char *body = read_file("api/examples/causal_seed.json", NULL);
    json_t *j = call(API_EP_CAUSAL, body, 200);
    json_t *c = json_object_get(j, "context");
    expect_shape(c, 3, (int[]){2, 6, 2}, "context");
    expect_matrix(json_array_get(c, 0), ctx, 6, 2, TOL4);
    expect_matrix(json_array_get(c, 1), ctx, 6, 2, TOL4);
    json_t *mask = json_array_get(json_object_get(j, "mask"), 0);
    ck_assert_int_eq(json_integer_value(json_array_get(json_array_get(mask, 0), 1)), 1);
    ck_assert_int_eq(json_integer_value(json_array_get(json_array_get(mask, 1), 0)), 0);
    json_t *ms = json_array_get(json_object_get(j, "masked_scores"), 0);
    ck_assert(json_is_null(json_array_get(json_array_get(ms, 0), 5)));
    json_decref(j);
    free(body);
}
END_TEST

/* ==== state_dict round trip ====================================================== */

/* Runs body (with "init"), then again with "state_dict" set to the params it
 * returned: context and weights must be identical. */
static void round_trip(api_endpoint ep, const char *body) {
    json_t *req = json_loads(body, 0, NULL);
    ck_assert_ptr_nonnull(req);
    json_object_set_new(req, "return", json_pack("[ssss]", "context", "attn_weights", "params", "dropout_mask"));
    char *text = dump(req);
    json_t *a = call(ep, text, 200);
    free(text);
    json_object_del(req, "init");
    json_object_set(req, "state_dict", json_object_get(a, "params"));
    text = dump(req);
    json_t *b = call(ep, text, 200);
    free(text);
    const char *keys[] = {"context", "attn_weights", "params", "dropout_mask"};
    for (int k = 0; k < 4; k++) {
        char *x = dump(json_object_get(a, keys[k])), *y = dump(json_object_get(b, keys[k]));
        ck_assert_msg(strcmp(x, y) == 0, "%s differs after the round trip:\n%.300s\n%.300s", keys[k], x, y);
        free(x);
        free(y);
    }
    json_decref(a);
    json_decref(b);
    json_decref(req);
}

START_TEST(test_state_dict_round_trip) {
    round_trip(API_EP_SELF, "{\"module\":\"SelfAttention_v1\",\"d_out\":2,\"init\":{\"seed\":123},\"inputs\":" X6 "}");
    round_trip(API_EP_SELF, "{\"d_out\":3,\"qkv_bias\":true,\"init\":{\"seed\":5},\"inputs\":[" X6 "," X6 "]}");
    round_trip(API_EP_CAUSAL, "{\"d_out\":2,\"context_length\":8,\"init\":{\"seed\":123},\"inputs\":" X6 "}");
    round_trip(API_EP_MULTIHEAD, "{\"d_out\":4,\"num_heads\":2,\"qkv_bias\":true,\"init\":{\"seed\":1},\"inputs\":" X6 "}");
    round_trip(API_EP_MULTIHEAD, "{\"module\":\"MultiHeadAttentionWrapper\",\"d_out\":2,\"num_heads\":3,"
                                 "\"context_length\":6,\"init\":{\"seed\":2},\"inputs\":" X6 "}");
    round_trip(API_EP_MULTIHEAD, "{\"module\":\"GPT2CausalSelfAttention\",\"n_head\":3,\"init\":{\"seed\":3},\"inputs\":" X6 "}");
    round_trip(API_EP_MULTIHEAD, "{\"module\":\"torch.nn.MultiheadAttention\",\"num_heads\":1,"
                                 "\"init\":{\"seed\":4},\"inputs\":" X6 "}");
    round_trip(API_EP_MULTIHEAD, "{\"module\":\"torch.nn.MultiheadAttention\",\"num_heads\":2,\"kdim\":3,"
                                 "\"vdim\":2,\"init\":{\"seed\":7},\"inputs\":[[0.1,0.2,0.3,0.4]],"
                                 "\"key\":[[1,0,0.5],[0.2,0.3,0.4]],\"value\":[[1,2],[3,4]]}");
    /* with dropout, seeded right before it: the same masks either way */
    round_trip(API_EP_CAUSAL, "{\"d_out\":2,\"dropout\":0.5,\"training\":true,\"dropout_seed\":123,"
                              "\"init\":{\"seed\":789},\"inputs\":" X6 "}");
    round_trip(API_EP_MULTIHEAD, "{\"module\":\"GPT2CausalSelfAttention\",\"n_head\":1,\"dropout\":0.3,"
                                 "\"training\":true,\"dropout_seed\":9,\"init\":{\"seed\":3},\"inputs\":" X6 "}");
}
END_TEST

START_TEST(test_state_dict_dropout_fresh_generator) {
    /* state_dict and dropout without dropout_seed: a fresh process's generator,
     * the same as giving ATTN_TORCH_DEFAULT_SEED (67280421310721) */
    const char *sd = "\"state_dict\":{\"W_query\":[[1,0],[0,1],[1,1]],\"W_key\":[[1,0],[0,1],[1,1]],"
                     "\"W_value\":[[1,0],[0,1],[1,1]]}";
    char a_body[1024], b_body[1024];
    snprintf(a_body, sizeof a_body, "{\"module\":\"SelfAttention_v1\",\"d_out\":2,%s,\"inputs\":" X6
             ",\"return\":[\"attn_weights\"]}", sd);
    snprintf(b_body, sizeof b_body, "{\"module\":\"SelfAttention_v1\",\"d_out\":2,%s,\"inputs\":" X6
             ",\"training\":true,\"dropout_seed\":67280421310721,\"return\":[\"attn_weights\"]}", sd);
    json_t *a = call(API_EP_SELF, a_body, 200), *b = call(API_EP_SELF, b_body, 200);
    char *x = dump(a), *y = dump(b);
    ck_assert_str_eq(x, y); /* SelfAttention_v1 has no dropout: identical */
    free(x);
    free(y);
    json_decref(a);
    json_decref(b);
    snprintf(a_body, sizeof a_body,
             "{\"d_out\":2,\"dropout\":0.5,\"training\":true,%s,\"inputs\":" X6 ",\"return\":[\"dropout_mask\"]}",
             "\"state_dict\":{\"W_query.weight\":[[1,0,0],[0,1,0]],\"W_key.weight\":[[1,0,0],[0,1,0]],"
             "\"W_value.weight\":[[1,0,0],[0,1,0]]}");
    snprintf(b_body, sizeof b_body, "%.*s,\"dropout_seed\":67280421310721}", (int)strlen(a_body) - 1, a_body);
    a = call(API_EP_CAUSAL, a_body, 200);
    b = call(API_EP_CAUSAL, b_body, 200);
    x = dump(a);
    y = dump(b);
    ck_assert_str_eq(x, y);
    ck_assert_ptr_nonnull(strstr(x, "2")); /* 1/(1-0.5) for kept weights */
    free(x);
    free(y);
    json_decref(a);
    json_decref(b);
}
END_TEST

/* ==== every output, every module ================================================== */

#define ALL_OUT "\"return\":[\"context\",\"attn_weights\",\"attn_scores\",\"masked_scores\",\"mask\"," \
                "\"dropout_mask\",\"queries\",\"keys\",\"values\",\"context_heads\",\"params\",\"tokens\",\"timing\"]"

START_TEST(test_all_outputs_shapes) {
    /* MultiHeadAttention, batch 2, T 6, d_out 4, 2 heads of 2 */
    json_t *j = call(API_EP_MULTIHEAD, "{\"d_out\":4,\"num_heads\":2,\"init\":{\"seed\":1},"
                                       "\"tokens\":[\"a\",\"b\",\"c\",\"d\",\"e\",\"f\"],\"inputs\":[" X6 "," X6 "]," ALL_OUT "}", 200);
    expect_shape(json_object_get(j, "context"), 3, (int[]){2, 6, 4}, "context");
    expect_shape(json_object_get(j, "attn_weights"), 4, (int[]){2, 2, 6, 6}, "attn_weights");
    expect_shape(json_object_get(j, "attn_scores"), 4, (int[]){2, 2, 6, 6}, "attn_scores");
    expect_shape(json_object_get(j, "masked_scores"), 4, (int[]){2, 2, 6, 6}, "masked_scores");
    expect_shape(json_object_get(j, "mask"), 3, (int[]){2, 6, 6}, "mask");
    expect_shape(json_object_get(j, "dropout_mask"), 4, (int[]){2, 2, 6, 6}, "dropout_mask");
    expect_shape(json_object_get(j, "queries"), 4, (int[]){2, 2, 6, 2}, "queries");
    expect_shape(json_object_get(j, "keys"), 4, (int[]){2, 2, 6, 2}, "keys");
    expect_shape(json_object_get(j, "values"), 4, (int[]){2, 2, 6, 2}, "values");
    expect_shape(json_object_get(j, "context_heads"), 3, (int[]){2, 6, 4}, "context_heads");
    json_t *params = json_object_get(j, "params");
    ck_assert_int_eq(json_object_size(params), 6); /* 3 weights, out_proj weight and bias, mask */
    expect_shape(json_object_get(params, "mask"), 2, (int[]){6, 6}, "mask buffer");
    expect_shape(json_object_get(params, "out_proj.bias"), 1, (int[]){4}, "out_proj.bias");
    ck_assert_int_eq(json_array_size(json_object_get(j, "tokens")), 6);
    json_t *t = json_object_get(j, "timing");
    ck_assert(json_is_number(json_object_get(t, "parse_ms")));
    ck_assert(json_is_number(json_object_get(t, "compute_ms")));
    ck_assert(json_is_number(json_object_get(t, "serialise_ms")));
    json_decref(j);

    /* single head, no batch: no head or batch axes anywhere */
    j = call(API_EP_SELF, "{\"d_out\":2,\"init\":{\"seed\":1},\"inputs\":" X6 "," ALL_OUT "}", 200);
    expect_shape(json_object_get(j, "attn_weights"), 2, (int[]){6, 6}, "attn_weights");
    expect_shape(json_object_get(j, "queries"), 2, (int[]){6, 2}, "queries");
    expect_shape(json_object_get(j, "dropout_mask"), 2, (int[]){6, 6}, "dropout_mask");
    ck_assert(json_is_null(json_object_get(j, "tokens")));
    json_decref(j);

    /* averaged weights; GPT-2's dropout acts on the output */
    j = call(API_EP_MULTIHEAD, "{\"module\":\"GPT2CausalSelfAttention\",\"n_head\":3,\"average_attn_weights\":true,"
                               "\"init\":{\"seed\":1},\"inputs\":[" X6 "]," ALL_OUT "}", 200);
    expect_shape(json_object_get(j, "attn_weights"), 3, (int[]){1, 6, 6}, "averaged weights");
    expect_shape(json_object_get(j, "dropout_mask"), 3, (int[]){1, 6, 3}, "gpt2 dropout_mask");
    expect_shape(json_object_get(j, "queries"), 4, (int[]){1, 3, 6, 1}, "gpt2 queries");
    expect_shape(json_object_get(json_object_get(j, "params"), "bias"), 4, (int[]){1, 1, 6, 6}, "gpt2 bias");
    json_decref(j);

    /* simple: no parameters */
    j = call(API_EP_SIMPLE, "{\"inputs\":" X6 "," ALL_OUT "}", 200);
    ck_assert_int_eq(json_object_size(json_object_get(j, "params")), 0);
    expect_shape(json_object_get(j, "context"), 2, (int[]){6, 3}, "simple context");
    json_decref(j);
}
END_TEST

START_TEST(test_sdpa_shapes) {
    /* [B][H][L][E] = [1][2][3][2], Hkv 1, S 4, Ev 3: context as PyTorch returns it, [B][H][L][Ev] */
    const char *q = "[[[[1,0],[0,1],[1,1]],[[0.5,0.5],[1,-1],[0,0]]]]";
    const char *k = "[[[[1,0],[0,1],[1,1],[0.5,0]]]]";
    const char *v = "[[[[1,2,3],[4,5,6],[7,8,9],[0,0,1]]]]";
    char body[1024];
    snprintf(body, sizeof body, "{\"query\":%s,\"key\":%s,\"value\":%s," ALL_OUT "}", q, k, v);
    json_t *j = call(API_EP_SDPA, body, 200);
    expect_shape(json_object_get(j, "context"), 4, (int[]){1, 2, 3, 3}, "sdpa context");
    expect_shape(json_object_get(j, "attn_weights"), 4, (int[]){1, 2, 3, 4}, "sdpa weights");
    expect_shape(json_object_get(j, "keys"), 4, (int[]){1, 1, 4, 2}, "sdpa keys");
    /* head 1, query 2 is zero: uniform weights, context = mean of the values */
    json_t *c = json_array_get(json_array_get(json_array_get(json_object_get(j, "context"), 0), 1), 2);
    ck_assert_double_eq_tol(json_number_value(json_array_get(c, 0)), 3.0, 1e-6);
    ck_assert_double_eq_tol(json_number_value(json_array_get(c, 2)), 4.75, 1e-6);
    json_decref(j);
    /* rank 2: one head, no batch */
    j = call(API_EP_SDPA, "{\"query\":[[1,0],[0,1]],\"key\":[[1,0],[0,1],[1,1]],\"value\":[[1],[2],[3]],\"causal\":true}", 200);
    expect_shape(json_object_get(j, "context"), 2, (int[]){2, 1}, "rank-2 context");
    expect_shape(json_object_get(j, "attn_weights"), 2, (int[]){2, 3}, "rank-2 weights");
    json_t *w0 = json_array_get(json_object_get(j, "attn_weights"), 0);
    ck_assert_double_eq(json_number_value(json_array_get(w0, 1)), 0.0); /* causal, top-left */
    json_decref(j);
}
END_TEST

/* ==== examples ===================================================================== */

START_TEST(test_every_example) {
    char dir[1024];
    tfile_path(dir, sizeof dir, "api/examples");
    DIR *d = opendir(dir);
    ck_assert_msg(d != NULL, "cannot open %s", dir);
    int seen = 0, per_ep[API_EP_COUNT] = {0};
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        size_t n = strlen(de->d_name);
        if (n < 6 || strcmp(de->d_name + n - 5, ".json") != 0) continue;
        char rel[600], ep_path[128];
        snprintf(rel, sizeof rel, "api/examples/%s", de->d_name);
        /* "multihead_seed.json" is for /attention/multihead */
        snprintf(ep_path, sizeof ep_path, "/attention/%.*s", (int)strcspn(de->d_name, "_."), de->d_name);
        api_endpoint ep;
        ck_assert_msg(api_endpoint_from_path(ep_path, &ep) == 0, "%s: no endpoint %s", de->d_name, ep_path);
        char *body = read_file(rel, NULL);
        json_t *j = call(ep, body, 200);
        ck_assert_ptr_nonnull(json_object_get(j, "module"));
        ck_assert_ptr_nonnull(json_object_get(j, "shape"));
        json_decref(j);
        free(body);
        seen++;
        per_ep[ep]++;
    }
    closedir(d);
    ck_assert_int_ge(seen, 5);
    for (int e = 0; e < API_EP_COUNT; e++)
        if (api_endpoint_get((api_endpoint)e)->kind == API_KIND_MODULE)
            ck_assert_msg(per_ep[e] > 0, "no example for %s", api_endpoint_path((api_endpoint)e));
}
END_TEST

START_TEST(test_endpoint_paths) {
    api_endpoint ep;
    for (int e = 0; e < API_EP_COUNT; e++) {
        ck_assert_int_eq(api_endpoint_from_path(api_endpoint_path((api_endpoint)e), &ep), 0);
        ck_assert_int_eq(ep, e);
    }
    ck_assert_int_eq(api_endpoint_from_path("/attention/other", &ep), -1);
    ck_assert_int_eq(api_endpoint_from_path(NULL, &ep), -1);
    ck_assert_ptr_null(api_endpoint_path(API_EP_COUNT));
    /* an out-of-range endpoint still gets a JSON error */
    api_reply r;
    ck_assert_int_eq(api_handle(API_EP_COUNT, "{}", 2, NULL, &r), 404);
    api_buf_free(&r.body);
}
END_TEST

/* VmFlags of the mapping that holds p (/proc/self/smaps), or "" */
static void vm_flags(const void *p, char *out, size_t size) {
    FILE *f = fopen("/proc/self/smaps", "r");
    ck_assert(f != NULL);
    char line[512];
    int inside = 0;
    out[0] = '\0';
    while (fgets(line, sizeof line, f)) {
        unsigned long from, to;
        if (sscanf(line, "%lx-%lx ", &from, &to) == 2 && strchr(line, '-') < strchr(line, ' '))
            inside = (unsigned long)p >= from && (unsigned long)p < to;
        else if (inside && strncmp(line, "VmFlags:", 8) == 0) {
            snprintf(out, size, "%.200s", line + 8);
            break;
        }
    }
    fclose(f);
}

/* Outputs of 32 MiB and more ask for huge pages (api__huge_pages); smaller
 * ones are left to malloc's arenas. */
START_TEST(test_large_buffers_ask_for_huge_pages) {
    char flags[256];
    size_t big = (size_t)40 << 20;
    char *p = malloc(big);
    ck_assert(p != NULL);
    api__huge_pages(p, big);
    vm_flags(p + big / 2, flags, sizeof flags);
    /* a kernel without transparent huge pages refuses the advice */
    if (access("/sys/kernel/mm/transparent_hugepage/enabled", F_OK) == 0)
        ck_assert_msg(strstr(flags, " hg") != NULL, "a 40 MiB block: VmFlags%s", flags);
    free(p);
    size_t small = (size_t)16 << 20;
    p = malloc(small);
    ck_assert(p != NULL);
    api__huge_pages(p, small);
    vm_flags(p + small / 2, flags, sizeof flags);
    ck_assert_msg(strstr(flags, " hg") == NULL, "a 16 MiB block: VmFlags%s", flags);
    free(p);
}
END_TEST

/* ==== replies handed over while written (api_limits.stream) ============== */

typedef struct {
    api_buf got;    /* the pieces, one after another */
    int pieces;
    int refuse_at;  /* refuse this piece (0: never) */
} sink;

static int take_piece(void *ctx, char *data, size_t len) {
    sink *k = ctx;
    k->pieces++;
    if (k->refuse_at && k->pieces >= k->refuse_at) {
        free(data);
        return -1;
    }
    api__buf_put(&k->got, data, len);
    free(data);
    return 0;
}

static api_reply handle_streamed(api_endpoint ep, const char *body, size_t piece, sink *k) {
    api_limits lim = {.max_elements = 1 << 24, .stream = take_piece, .stream_ctx = k,
                      .stream_above = piece};
    api_reply r;
    api_handle(ep, body, strlen(body), &lim, &r);
    ck_assert_ptr_null(r.body.drain); /* what is left is the caller's own */
    return r;
}

/* Every example in nested, flat and base64 form, the pieces and the rest
 * make the same bytes as the reply written whole; safetensors, a small
 * reply and a reply with NaN are written whole; a refused piece makes the
 * reply fail. */
START_TEST(test_streamed_reply_same_bytes) {
    static const struct { const char *file; api_endpoint ep; } ex[] = {
        {"multihead_seed.json", API_EP_MULTIHEAD}, {"causal_dropout.json", API_EP_CAUSAL},
        {"sdpa_gqa.json", API_EP_SDPA}, {"multihead_gpt2.json", API_EP_MULTIHEAD},
    };
    static const char *const formats[] = {"nested", "flat", "base64"};
    int streamed = 0;
    for (size_t e = 0; e < sizeof ex / sizeof *ex; e++)
        for (size_t f = 0; f < sizeof formats / sizeof *formats; f++) {
            char rel[128];
            snprintf(rel, sizeof rel, "api/examples/%s", ex[e].file);
            char *text = read_file(rel, NULL);
            json_t *rq = json_loads(text, 0, NULL);
            ck_assert_ptr_nonnull(rq);
            json_object_set_new(rq, "output_format", json_string(formats[f]));
            json_object_set_new(rq, "return", json_pack("[s,s,s]", "context", "attn_weights", "params"));
            if (ex[e].ep == API_EP_SDPA) json_object_set_new(rq, "return", json_pack("[s,s]", "context", "attn_weights"));
            char *body = json_dumps(rq, 0);
            api_limits lim = {.max_elements = 1 << 24};
            api_reply whole;
            ck_assert_int_eq(api_handle(ex[e].ep, body, strlen(body), &lim, &whole), 200);
            sink k = {0};
            api_reply rest = handle_streamed(ex[e].ep, body, 64, &k);
            ck_assert_int_eq(rest.status, 200);
            ck_assert_int_gt(k.pieces, 0);
            api__buf_put(&k.got, rest.body.data, rest.body.len);
            ck_assert_uint_eq(k.got.len, whole.body.len);
            ck_assert_msg(memcmp(k.got.data, whole.body.data, whole.body.len) == 0, "%s %s",
                          ex[e].file, formats[f]);
            streamed++;
            api_reply_free(&rest);
            api_buf_free(&k.got);

            /* the second piece refused: the reply fails (the caller cuts it) */
            k = (sink){.refuse_at = 2};
            rest = handle_streamed(ex[e].ep, body, 64, &k);
            ck_assert_int_eq(k.pieces, 2);
            ck_assert_int_eq(rest.status, 503);
            api_reply_free(&rest);
            api_buf_free(&k.got);

            /* a piece larger than the reply: written whole */
            k = (sink){0};
            rest = handle_streamed(ex[e].ep, body, whole.body.len * 2 + 4096, &k);
            ck_assert_int_eq(k.pieces, 0);
            ck_assert_uint_eq(rest.body.len, whole.body.len);
            api_reply_free(&rest);
            api_reply_free(&whole);
            free(body);
            free(text);
            json_decref(rq);
        }
    ck_assert_int_eq(streamed, 12);

    /* safetensors: whole */
    sink k = {0};
    api_reply r = handle_streamed(API_EP_SIMPLE, "{\"inputs\": [[1, 2], [3, 4]], \"output_format\": \"safetensors\"}", 8, &k);
    ck_assert_int_eq(r.status, 200);
    ck_assert_int_eq(k.pieces, 0);
    api_reply_free(&r);
    /* scores that overflow to infinity: NaN weights, an error, nothing streamed */
    r = handle_streamed(API_EP_SIMPLE, "{\"inputs\": [[3e38, 3e38], [3e38, -3e38]], \"return\": [\"attn_weights\", \"context\"]}", 8, &k);
    ck_assert_int_ne(r.status, 200);
    ck_assert_int_eq(k.pieces, 0);
    api_reply_free(&r);
}
END_TEST

static Suite *handle_suite(void) {
    Suite *s = suite_create("api_handle");
    const TTest *tests[] = {
        test_seed_mha_example, test_seed_mha_unbatched, test_seed_v1, test_seed_causal_batch,
        test_state_dict_round_trip, test_state_dict_dropout_fresh_generator,
        test_all_outputs_shapes, test_sdpa_shapes, test_every_example, test_endpoint_paths,
        test_large_buffers_ask_for_huge_pages, test_streamed_reply_same_bytes, NULL};
    tcase_with(s, "handle", 60, tests);
    return s;
}

const test_program TEST_PROGRAM = {.suites = {handle_suite}};
