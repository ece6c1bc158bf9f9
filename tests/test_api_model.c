/* test_api_model.c - POST /model (and its alias /model/gpt2) through api_handle: the reply against
 * core's attn_lm_* on the same model (core itself is checked against
 * PyTorch by test_core_gpt2), batch axes, layer selection, the state_dict
 * round trip, training mode with dropout_seed, formats and every error. */
#include <check.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "core/lm.h"
#include "tests/support/check_main.h"
#include "support/api_call.h"

#include <cblas.h> /* openblas_set_num_threads */

/* GPTConfig(vocab_size=11, block_size=8, n_layer=3, n_head=2, n_embd=8) */
#define CFG "\"vocab_size\":11,\"block_size\":8,\"n_layer\":3,\"n_head\":2,\"n_embd\":8"
static const attn_lm_config CONFIG = {.vocab_size = 11, .context = 8, .n_layer = 3,
                                        .n_head = 2, .width = 8, .dropout = 0.1};

static json_t *call_lim(const char *body, int want_status, size_t max) {
    api_limits lim = {.max_elements = max};
    return tapi_call(API_EP_MODEL_GPT2, body, &lim, want_status);
}

static json_t *call(const char *body, int want_status) { return call_lim(body, want_status, 50000000); }

/* Flattens a nested array of numbers into out (n values expected). */
static size_t flatten(const json_t *j, float *out, size_t at) {
    if (!json_is_array(j)) {
        out[at] = (float)json_number_value(j);
        return at + 1;
    }
    for (size_t i = 0; i < json_array_size(j); i++) at = flatten(json_array_get(j, i), out, at);
    return at;
}

static int rank_of(const json_t *t) {
    int r = 0;
    while (json_is_array(t)) r++, t = json_array_get(t, 0);
    return r;
}

/* core's own run: params from the seed, every output */
typedef struct {
    attn_lm_plan plan;
    float *params, *logits, *attn, *hidden;
} run;

/* Core's forward on the same model: every output, or (maps 0) the logits
 * alone, as a request that asks for no map computes them (the attention's
 * fused path, which rounds differently from the one that makes the maps). */
static void core_run_with(run *r, int B, int T, const int32_t *idx, uint64_t seed, int training,
                          int maps) {
    attn_error err;
    ck_assert_int_eq(attn_lm_plan_make(&CONFIG, B, T, training, &r->plan, &err), ATTN_OK);
    r->params = malloc(r->plan.n_params * sizeof(float));
    r->logits = malloc(r->plan.n_logits * sizeof(float));
    r->attn = malloc(r->plan.n_attn * sizeof(float));
    r->hidden = malloc(r->plan.n_hidden * sizeof(float));
    ck_assert(r->params && r->logits && r->attn && r->hidden);
    attn_rng rng;
    attn_rng_seed(&rng, seed);
    ck_assert_int_eq(attn_lm_params_init(&r->plan, r->params, &rng, &err), ATTN_OK);
    attn_lm_outputs out = {.logits = r->logits, .attn_weights = maps ? r->attn : NULL,
                             .hidden_states = maps ? r->hidden : NULL};
    ck_assert_int_eq(attn_lm_forward(&r->plan, r->params, idx, NULL, &rng, &out, &err), ATTN_OK);
}

static void core_run(run *r, int B, int T, const int32_t *idx, uint64_t seed, int training) {
    core_run_with(r, B, T, idx, seed, training, 1);
}

static void run_free(run *r) {
    free(r->params), free(r->logits), free(r->attn), free(r->hidden);
}

/* The reply's floats round-trip float32: equal to core's bits. */
static void expect_same(const json_t *j, const float *want, size_t n, const char *what) {
    float *got = malloc((n + 1) * sizeof *got);
    ck_assert_ptr_nonnull(got);
    ck_assert_uint_eq(flatten(j, got, 0), n);
    for (size_t i = 0; i < n; i++)
        ck_assert_msg(got[i] == want[i], "%s[%zu]: %.9g, core %.9g", what, i, (double)got[i],
                      (double)want[i]);
    free(got);
}

START_TEST(batched_every_output) {
    int32_t idx[2 * 4] = {1, 5, 2, 10, 0, 0, 3, 7};
    run r;
    core_run(&r, 2, 4, idx, 42, 0);
    json_t *j = call("{" CFG ",\"init\":{\"seed\":42},\"idx\":[[1,5,2,10],[0,0,3,7]],"
                     "\"return\":[\"idx\",\"logits\",\"next_token\",\"attn_weights\","
                     "\"hidden_states\",\"timing\"]}", 200);
    ck_assert_int_eq(rank_of(json_object_get(j, "logits")), 3);
    ck_assert_int_eq(rank_of(json_object_get(j, "attn_weights")), 5);
    ck_assert_int_eq(rank_of(json_object_get(j, "hidden_states")), 4);
    expect_same(json_object_get(j, "logits"), r.logits, r.plan.n_logits, "logits");
    expect_same(json_object_get(j, "attn_weights"), r.attn, r.plan.n_attn, "attn_weights");
    expect_same(json_object_get(j, "hidden_states"), r.hidden, r.plan.n_hidden, "hidden_states");
    /* next_token: argmax of the last position */
    json_t *next = json_object_get(j, "next_token");
    ck_assert_int_eq(json_array_size(next), 2);
    for (int b = 0; b < 2; b++) {
        const float *row = r.logits + ((size_t)b * 4 + 3) * 11;
        int best = 0;
        for (int v = 1; v < 11; v++) best = row[v] > row[best] ? v : best;
        ck_assert_int_eq(json_integer_value(json_array_get(next, (size_t)b)), best);
    }
    ck_assert_int_eq(json_integer_value(json_array_get(json_array_get(json_object_get(j, "idx"), 1), 3)), 7);
    ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(j, "config"), "n_layer")), 3);
    ck_assert_ptr_nonnull(json_object_get(j, "timing"));
    ck_assert_str_eq(json_string_value(json_object_get(j, "module")), "GPT2");
    json_decref(j);
    run_free(&r);
}
END_TEST

START_TEST(unbatched_layers) {
    int32_t idx[3] = {4, 4, 9};
    run r;
    core_run(&r, 1, 3, idx, 7, 0);
    json_t *j = call("{" CFG ",\"init\":{\"seed\":7},\"idx\":[4,4,9],"
                     "\"return\":[\"attn_weights\",\"next_token\"],\"layers\":[0,2]}", 200);
    json_t *a = json_object_get(j, "attn_weights");
    ck_assert_int_eq(rank_of(a), 4); /* [layers][H][T][T], no batch axis */
    ck_assert_int_eq(json_array_size(a), 2);
    size_t per = 2 * 3 * 3;
    expect_same(json_array_get(a, 0), r.attn, per, "layer 0");
    expect_same(json_array_get(a, 1), r.attn + 2 * per, per, "layer 2");
    /* next_token without logits: computed from the last position only */
    const float *row = r.logits + 2 * 11;
    int best = 0;
    for (int v = 1; v < 11; v++) best = row[v] > row[best] ? v : best;
    ck_assert_int_eq(json_integer_value(json_object_get(j, "next_token")), best);
    ck_assert_ptr_null(json_object_get(j, "logits"));
    json_decref(j);
    run_free(&r);
}
END_TEST

/* state_dict under the seed's names gives the init's result; buffers may be
 * left out, lm_head.weight may be given equal to wte.weight. */
START_TEST(state_dict_round_trip) {
    int32_t idx[3] = {1, 2, 3};
    run r;
    core_run_with(&r, 1, 3, idx, 5, 0, 0);
    json_t *sd = json_object();
    for (int i = 0; i < r.plan.param_count; i++) {
        attn_param p;
        attn_lm_param_get(&r.plan, i, &p);
        if (p.buffer) continue;
        json_t *data = json_array();
        for (size_t k = 0; k < p.count; k++)
            json_array_append_new(data, json_real(r.params[p.offset + k]));
        json_t *shape = json_array();
        for (int d = 0; d < p.rank; d++) json_array_append_new(shape, json_integer(p.shape[d]));
        json_object_set_new(sd, p.name, json_pack("{s:o,s:o}", "shape", shape, "data", data));
        if (strcmp(p.name, "wte.weight") == 0)
            json_object_set(sd, "lm_head.weight", json_object_get(sd, p.name));
    }
    json_t *rq = json_pack("{s:i,s:i,s:i,s:i,s:i,s:o,s:[iii],s:[s]}", "vocab_size", 11,
                           "block_size", 8, "n_layer", 3, "n_head", 2, "n_embd", 8, "state_dict",
                           sd, "idx", 1, 2, 3, "return", "logits");
    char *body = json_dumps(rq, JSON_COMPACT | JSON_REAL_PRECISION(9));
    json_t *j = call(body, 200);
    expect_same(json_object_get(j, "logits"), r.logits, r.plan.n_logits, "logits");
    json_decref(j);
    /* an untied lm_head is refused */
    json_t *data = json_object_get(json_object_get(sd, "lm_head.weight"), "data");
    json_t *copy = json_deep_copy(json_object_get(sd, "lm_head.weight"));
    json_array_set_new(json_object_get(copy, "data"), 0, json_real(0.5));
    json_object_set_new(sd, "lm_head.weight", copy);
    (void)data;
    free(body);
    body = json_dumps(rq, JSON_COMPACT | JSON_REAL_PRECISION(9));
    j = call(body, 400);
    ck_assert_str_eq(json_string_value(json_object_get(json_object_get(j, "error"), "field")),
                     "state_dict.lm_head.weight");
    json_decref(j);
    free(body);
    json_decref(rq);
    run_free(&r);
}
END_TEST

/* Training mode: init's generator continues into dropout, as in PyTorch;
 * dropout_seed reseeds it first. */
START_TEST(training_dropout) {
    int32_t idx[4] = {1, 2, 3, 4};
    run r;
    core_run_with(&r, 1, 4, idx, 3, 1, 0);
    json_t *j = call("{" CFG ",\"init\":{\"seed\":3},\"idx\":[1,2,3,4],\"training\":true,"
                     "\"return\":[\"logits\"]}", 200);
    expect_same(json_object_get(j, "logits"), r.logits, r.plan.n_logits, "logits");
    json_decref(j);
    json_t *a = call("{" CFG ",\"init\":{\"seed\":3},\"idx\":[1,2,3,4],\"training\":true,"
                     "\"dropout_seed\":9,\"return\":[\"logits\"]}", 200);
    json_t *b = call("{" CFG ",\"init\":{\"seed\":3},\"idx\":[1,2,3,4],\"training\":true,"
                     "\"dropout_seed\":9,\"return\":[\"logits\"]}", 200);
    ck_assert(json_equal(json_object_get(a, "logits"), json_object_get(b, "logits")));
    json_t *c = call("{" CFG ",\"init\":{\"seed\":3},\"idx\":[1,2,3,4],\"return\":[\"logits\"]}", 200);
    ck_assert(!json_equal(json_object_get(a, "logits"), json_object_get(c, "logits")));
    json_decref(a), json_decref(b), json_decref(c);
    run_free(&r);
}
END_TEST

/* heads, query_rows and top_k cut the maps as slices and sorts of the full
 * maps; top_k never picks a key after its query (the causal mask). */
START_TEST(selection) {
    int32_t idx[2 * 5] = {1, 5, 2, 10, 3, 0, 0, 3, 7, 9};
    run r;
    core_run(&r, 2, 5, idx, 8, 0);
    const char *head = "{" CFG ",\"init\":{\"seed\":8},\"idx\":[[1,5,2,10,3],[0,0,3,7,9]],"
                       "\"return\":[\"attn_weights\"],\"layers\":[1,2],";
    char body[512];
    snprintf(body, sizeof body, "%s\"heads\":[1],\"query_rows\":[2,5]}", head);
    json_t *j = call(body, 200);
    json_t *a = json_object_get(j, "attn_weights"); /* [2 layers][B 2][1 head][3 rows][5] */
    ck_assert_int_eq(rank_of(a), 5);
    float got[2 * 2 * 3 * 5];
    ck_assert_uint_eq(flatten(a, got, 0), sizeof got / sizeof got[0]);
    size_t at = 0;
    for (int l = 1; l <= 2; l++)
        for (int b = 0; b < 2; b++)
            for (int q = 2; q < 5; q++)
                for (int k = 0; k < 5; k++, at++)
                    ck_assert(got[at] == r.attn[(((size_t)l * 2 + b) * 2 + 1) * 25 + q * 5 + k]);
    json_decref(j);

    snprintf(body, sizeof body, "%s\"top_k\":3}", head);
    j = call(body, 200);
    a = json_object_get(j, "attn_weights");
    json_t *ind = json_object_get(a, "indices"), *val = json_object_get(a, "values");
    ck_assert_int_eq(rank_of(ind), 5);
    float vals[2 * 2 * 2 * 5 * 3], inds[2 * 2 * 2 * 5 * 3];
    ck_assert_uint_eq(flatten(val, vals, 0), sizeof vals / sizeof vals[0]);
    ck_assert_uint_eq(flatten(ind, inds, 0), sizeof inds / sizeof inds[0]);
    at = 0;
    for (int l = 1; l <= 2; l++)
        for (int b = 0; b < 2; b++)
            for (int h = 0; h < 2; h++)
                for (int q = 0; q < 5; q++) {
                    const float *row = r.attn + (((size_t)l * 2 + b) * 2 + h) * 25 + (size_t)q * 5;
                    for (int k = 0; k < 3; k++, at++) {
                        int i = (int)inds[at];
                        if (k > q) { /* fewer than k keys visible: padding */
                            ck_assert_int_eq(i, -1);
                            ck_assert(vals[at] == 0.0f);
                            continue;
                        }
                        ck_assert_msg(i >= 0 && i <= q, "key %d for query %d", i, q);
                        ck_assert(vals[at] == row[i]);
                        /* descending, and nothing visible left out is larger */
                        if (k) ck_assert(vals[at] <= vals[at - 1]);
                        for (int x = 0; x <= q; x++) {
                            int taken = 0;
                            for (int m = 0; m <= k; m++) taken |= (int)inds[at - k + m] == x;
                            if (!taken) ck_assert(row[x] <= vals[at]);
                        }
                    }
                }
    json_decref(j);
    /* out of range: the field is named */
    static const char *const bad[][2] = {{"\"heads\":[2]", "heads[0]"},
                                         {"\"query_rows\":[0,6]", "query_rows"},
                                         {"\"top_k\":0", "top_k"},
                                         {"\"cell\":4", "cell"}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        snprintf(body, sizeof body, "%s%s}", head, bad[i][0]);
        j = call(body, 400);
        ck_assert_str_eq(json_string_value(json_object_get(json_object_get(j, "error"), "field")),
                         bad[i][1]);
        json_decref(j);
    }
    run_free(&r);
}
END_TEST

/* A little-endian u64 / i32 / f32 out of a byte string. */
static uint64_t le64(const unsigned char *p) {
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--) v = v << 8 | p[i];
    return v;
}

/* "output_format": "safetensors" (or Accept: application/octet-stream): one
 * file whose tensors are the JSON reply's, metadata as JSON strings. */
START_TEST(safetensors_reply) {
    int32_t idx[3] = {4, 4, 9};
    run r;
    core_run(&r, 1, 3, idx, 7, 0);
    for (int pass = 0; pass < 3; pass++) {
        char body[512];
        snprintf(body, sizeof body,
                 "{" CFG ",\"init\":{\"seed\":7},\"idx\":[4,4,9],%s\"return\":[\"idx\","
                 "\"logits\",\"next_token\",\"attn_weights\",\"hidden_states\",\"timing\"],"
                 "\"top_k\":%d}",
                 pass == 1 ? "" : pass == 2 ? "\"output_format\":\"safetensors\",\"dtype\":\"float16\","
                                            : "\"output_format\":\"safetensors\",",
                 pass == 2 ? 2 : 3);
        api_limits lim = {.max_elements = 50000000, .prefer_format = pass == 1 ? 1 + API_FORMAT_SAFETENSORS : 0};
        api_reply rep;
        ck_assert_int_eq(api_handle(API_EP_MODEL_GPT2, body, strlen(body), &lim, &rep), 200);
        ck_assert_str_eq(rep.content_type, "application/octet-stream");
        const unsigned char *b = (const unsigned char *)rep.body.data;
        uint64_t n = le64(b);
        ck_assert(n % 8 == 0 && 8 + n <= rep.body.len);
        json_error_t je;
        json_t *h = json_loadb((const char *)b + 8, n, 0, &je);
        ck_assert_msg(h != NULL, "header: %s", je.text);
        json_t *meta = json_object_get(h, "__metadata__");
        ck_assert_str_eq(json_string_value(json_object_get(meta, "module")), "GPT2");
        json_t *cfg = json_loads(json_string_value(json_object_get(meta, "config")), 0, NULL);
        ck_assert_int_eq(json_integer_value(json_object_get(cfg, "n_layer")), 3);
        json_decref(cfg);
        ck_assert_str_eq(json_string_value(json_object_get(meta, "layers")), "[0,1,2]");
        const unsigned char *data = b + 8 + n;
        /* logits: F32 [3][11] equal to core's bits, or F16 */
        json_t *lg = json_object_get(h, "logits");
        ck_assert_str_eq(json_string_value(json_object_get(lg, "dtype")), pass == 2 ? "F16" : "F32");
        ck_assert_int_eq(json_array_size(json_object_get(lg, "shape")), 2);
        size_t off = (size_t)json_integer_value(json_array_get(json_object_get(lg, "data_offsets"), 0));
        if (pass < 2) {
            ck_assert_int_eq(off % 4, 0);
            ck_assert(memcmp(data + off, r.logits, 33 * sizeof(float)) == 0);
        }
        /* next_token: I32 rank 0, idx I32 [3] */
        json_t *nt = json_object_get(h, "next_token");
        ck_assert_str_eq(json_string_value(json_object_get(nt, "dtype")), "I32");
        ck_assert_int_eq(json_array_size(json_object_get(nt, "shape")), 0);
        json_t *ix = json_object_get(h, "idx");
        off = (size_t)json_integer_value(json_array_get(json_object_get(ix, "data_offsets"), 0));
        ck_assert_int_eq((int)le64(data + off) & 0xffff, 4); /* idx[0] = 4, idx[1] = 4 */
        /* top-k maps: values and indices, [3 layers][2 heads][3][k] */
        json_t *av = json_object_get(h, "attn_weights.values");
        json_t *ai = json_object_get(h, "attn_weights.indices");
        ck_assert_ptr_nonnull(av);
        ck_assert_str_eq(json_string_value(json_object_get(ai, "dtype")), "I32");
        ck_assert_int_eq(json_integer_value(json_array_get(json_object_get(av, "shape"), 3)),
                         pass == 2 ? 2 : 3);
        ck_assert_ptr_nonnull(json_object_get(h, "hidden_states"));
        ck_assert_ptr_nonnull(json_object_get(meta, "timing"));
        json_decref(h);
        api_buf_free(&rep.body);
    }
    /* In parts (the server's zero copy), the tensors outlive the request:
     * idx among them (it once pointed into the released request). */
    const char *parts_body = "{" CFG ",\"init\":{\"seed\":7},\"idx\":[4,4,9],\"output_format\":"
                             "\"safetensors\",\"return\":[\"idx\",\"logits\"]}";
    api_limits zlim = {.max_elements = 50000000, .zero_copy = 1};
    api_reply zrep;
    ck_assert_int_eq(api_handle(API_EP_MODEL_GPT2, parts_body, strlen(parts_body), &zlim, &zrep), 200);
    ck_assert_int_gt(zrep.n_parts, 0);
    ck_assert_int_eq(api_reply_flatten(&zrep), 0);
    const unsigned char *zb = (const unsigned char *)zrep.body.data;
    const char *zix = strstr((const char *)zb + 8, "\"idx\"");
    ck_assert_ptr_nonnull(zix);
    size_t zoff = (size_t)strtoull(strstr(zix, "data_offsets") + 15, NULL, 10);
    int32_t zidx[3];
    memcpy(zidx, zb + 8 + le64(zb) + zoff, sizeof zidx);
    ck_assert(zidx[0] == 4 && zidx[1] == 4 && zidx[2] == 9);
    api_reply_free(&zrep);
    /* float16 needs a binary format */
    json_t *j = call("{" CFG ",\"init\":{\"seed\":7},\"idx\":[4],\"dtype\":\"float16\"}", 400);
    ck_assert_str_eq(json_string_value(json_object_get(json_object_get(j, "error"), "field")), "dtype");
    json_decref(j);
    run_free(&r);
}
END_TEST

/* The compute pool (the server's --threads) shares the forward and the
 * text of large tensors: the reply's bytes are the same without it. */
START_TEST(pool_same_bytes) {
    char body[512], idx[64 * 5 + 8] = "[";
    for (int t = 0; t < 64; t++)
        snprintf(idx + strlen(idx), sizeof idx - strlen(idx), t ? ",%d" : "%d", (t * 37) % 500);
    strcat(idx, "]");
    snprintf(body, sizeof body, "{\"vocab_size\":500,\"block_size\":64,\"n_layer\":2,\"n_head\":2,"
             "\"n_embd\":32,\"init\":{\"seed\":3},\"idx\":%s,\"return\":[\"logits\","
             "\"attn_weights\",\"hidden_states\"]}", idx);
    attn_pool *pool = attn_pool_create(3);
    ck_assert_ptr_nonnull(pool);
    api_reply a, b;
    api_limits lim = {.max_elements = 50000000};
    ck_assert_int_eq(api_handle(API_EP_MODEL_GPT2, body, strlen(body), &lim, &a), 200);
    lim.compute = pool;
    ck_assert_int_eq(api_handle(API_EP_MODEL_GPT2, body, strlen(body), &lim, &b), 200);
    ck_assert_uint_gt(a.body.len, 64 * 500 * 8);
    ck_assert_uint_eq(a.body.len, b.body.len);
    ck_assert(memcmp(a.body.data, b.body.data, a.body.len) == 0);
    api_buf_free(&a.body);
    api_buf_free(&b.body);
    attn_pool_destroy(pool);
}
END_TEST

/* POST /model and its alias /model/gpt2 are one kind: the same request
 * gets the same bytes from both, for either architecture. */
START_TEST(alias_same_bytes) {
    static const char *const bodies[] = {
        "{\"vocab_size\":40,\"block_size\":8,\"n_layer\":2,\"n_head\":2,\"n_embd\":8,"
        "\"init\":{\"seed\":4},\"idx\":[[1,2,3],[4,5,6]],\"return\":[\"logits\",\"attn_weights\","
        "\"params\",\"blocks.1.attn.hook_z\"]}",
        "{\"module\":\"GPTModel\",\"vocab_size\":40,\"context_length\":8,\"n_layers\":1,"
        "\"n_heads\":2,\"emb_dim\":8,\"qkv_bias\":true,\"init\":{\"seed\":5},\"idx\":[7,8],"
        "\"training\":true,\"return\":[\"logits\",\"dropout_masks\"]}"};
    for (size_t i = 0; i < sizeof bodies / sizeof bodies[0]; i++) {
        api_reply a, b;
        api_limits lim = {.max_elements = 50000000};
        ck_assert_int_eq(api_handle(API_EP_MODEL, bodies[i], strlen(bodies[i]), &lim, &a), 200);
        ck_assert_int_eq(api_handle(API_EP_MODEL_GPT2, bodies[i], strlen(bodies[i]), &lim, &b), 200);
        ck_assert_uint_eq(a.body.len, b.body.len);
        ck_assert(memcmp(a.body.data, b.body.data, a.body.len) == 0);
        api_buf_free(&a.body);
        api_buf_free(&b.body);
    }
}
END_TEST

/* With defer_above (the server's inline path), a model that is more than a
 * few thousand values is left for a worker: status 0, no body; a tiny one
 * is answered. */
START_TEST(deferred) {
    api_limits lim = {.max_elements = 50000000, .defer_above = 16384};
    api_reply rep;
    const char *big = "{\"vocab_size\":500,\"block_size\":64,\"n_layer\":2,\"n_head\":2,"
                      "\"n_embd\":32,\"init\":{\"seed\":1},\"idx\":[1,2,3]}";
    ck_assert_int_eq(api_handle(API_EP_MODEL_GPT2, big, strlen(big), &lim, &rep), 0);
    ck_assert_int_eq(rep.status, 0);
    ck_assert_uint_eq(rep.body.len, 0);
    api_buf_free(&rep.body);
    const char *tiny = "{\"vocab_size\":10,\"block_size\":8,\"n_layer\":1,\"n_head\":2,"
                       "\"n_embd\":4,\"init\":{\"seed\":1},\"idx\":[1,2,3]}";
    ck_assert_int_eq(api_handle(API_EP_MODEL_GPT2, tiny, strlen(tiny), &lim, &rep), 200);
    api_buf_free(&rep.body);
}
END_TEST

/* n_layer 0 (or "layers": []): no maps, an empty list in every format */
START_TEST(no_maps) {
    static const char *const formats[] = {"nested", "flat", "base64"};
    for (int f = 0; f < 3; f++) {
        char body[512];
        snprintf(body, sizeof body, "{\"vocab_size\":7,\"block_size\":4,\"n_layer\":0,\"n_head\":2,"
                 "\"n_embd\":4,\"init\":{\"seed\":3},\"idx\":[[2,2,6],[5,5,6]],\"output_format\":\"%s\","
                 "\"return\":[\"attn_weights\",\"hidden_states\"]}", formats[f]);
        json_t *j = call(body, 200);
        ck_assert(json_is_array(json_object_get(j, "attn_weights")));
        ck_assert_int_eq(json_array_size(json_object_get(j, "attn_weights")), 0);
        json_decref(j);
    }
    json_t *j = call("{" CFG ",\"init\":{\"seed\":1},\"idx\":[1,2],\"layers\":[],"
                     "\"return\":[\"attn_weights\"]}", 200);
    ck_assert_int_eq(json_array_size(json_object_get(j, "attn_weights")), 0);
    json_decref(j);
}
END_TEST

START_TEST(formats) {
    json_t *j = call("{" CFG ",\"init\":{\"seed\":1},\"idx\":[1,2],\"output_format\":\"base64\","
                     "\"return\":[\"logits\"]}", 200);
    json_t *l = json_object_get(j, "logits");
    ck_assert_str_eq(json_string_value(json_object_get(l, "dtype")), "float32");
    ck_assert_int_eq(json_array_size(json_object_get(l, "shape")), 2);
    json_decref(j);
    j = call("{" CFG ",\"init\":{\"seed\":1},\"idx\":[1,2],\"output_format\":\"flat\","
             "\"precision\":3,\"return\":[\"logits\"]}", 200);
    ck_assert_int_eq(json_array_size(json_object_get(json_object_get(j, "logits"), "data")), 22);
    json_decref(j);
}
END_TEST

static void expect_error(const char *body, int status, const char *code, const char *field) {
    json_t *j = call(body, status);
    json_t *e = json_object_get(j, "error");
    ck_assert_str_eq(json_string_value(json_object_get(e, "code")), code);
    if (field) ck_assert_str_eq(json_string_value(json_object_get(e, "field")), field);
    json_decref(j);
}

START_TEST(errors) {
    expect_error("{" CFG ",\"init\":{\"seed\":1},\"idx\":[1,11]}", 400, "invalid_argument", "idx[1]");
    expect_error("{" CFG ",\"init\":{\"seed\":1},\"idx\":[[1,2],[3,-1]]}", 400, "invalid_argument",
                 "idx[1][1]");
    expect_error("{" CFG ",\"init\":{\"seed\":1},\"idx\":[1.5]}", 400, "invalid_argument", "idx[0]");
    expect_error("{" CFG ",\"init\":{\"seed\":1},\"idx\":[1,2,3,4,5,6,7,8,9]}", 400, "invalid_shape",
                 "idx");
    expect_error("{" CFG ",\"init\":{\"seed\":1}}", 400, "missing_field", "idx");
    expect_error("{" CFG ",\"idx\":[1]}", 400, "missing_field", "init");
    /* the parameters' source is read as on every other endpoint */
    expect_error("{" CFG ",\"init\":{\"seed\":1,\"sed\":2},\"idx\":[1]}", 400, "unknown_field",
                 "init.sed");
    expect_error("{" CFG ",\"init\":{},\"idx\":[1]}", 400, "missing_field", "init.seed");
    expect_error("{" CFG ",\"init\":{\"seed\":1},\"state_dict\":{},\"idx\":[1]}", 400,
                 "invalid_argument", "state_dict");
    expect_error("{\"block_size\":8,\"init\":{\"seed\":1},\"idx\":[1]}", 400, "missing_field",
                 "vocab_size");
    expect_error("{" CFG ",\"init\":{\"seed\":1},\"idx\":[1],\"inputs\":[1]}", 400, "unknown_field",
                 "inputs");
    expect_error("{\"vocab_size\":11,\"block_size\":8,\"n_head\":3,\"n_embd\":8,\"init\":{\"seed\":1},"
                 "\"idx\":[1]}", 400, "invalid_shape", "n_head");
    expect_error("{" CFG ",\"init\":{\"seed\":1},\"idx\":[1],\"layers\":[2,1]}", 400,
                 "invalid_argument", "layers[1]");
    expect_error("{" CFG ",\"init\":{\"seed\":1},\"idx\":[1],\"return\":[\"context\"]}", 400,
                 "invalid_argument", "return[0]");
    expect_error("{" CFG ",\"init\":{\"seed\":1},\"idx\":[1],\"dropout\":2}", 400,
                 "invalid_argument", "dropout");
    expect_error("{" CFG ",\"state_dict\":{\"wte.weight\":[[1]]},\"idx\":[1]}", 400,
                 "invalid_shape", NULL);
    expect_error("{" CFG ",\"state_dict\":{\"h.9.mlp.fc.weight\":[1]},\"idx\":[1]}", 400,
                 "invalid_argument", "state_dict.h.9.mlp.fc.weight");
    /* the 124M default config from two fields: over a small budget, 413 before allocating */
    json_t *j = call_lim("{\"vocab_size\":50257,\"block_size\":1024,\"init\":{\"seed\":1},"
                         "\"idx\":[1]}", 413, 10000000);
    ck_assert_str_eq(json_string_value(json_object_get(json_object_get(j, "error"), "code")),
                     "too_large");
    json_decref(j);
}
END_TEST

/* The book's GPTModel: its own names, and every mix-up of the two families. */
#define BOOK "\"module\":\"GPTModel\",\"vocab_size\":11,\"context_length\":8,\"n_layers\":1,\"n_heads\":2," \
             "\"emb_dim\":8"

static void expect_message(const char *body, const char *field, const char *text) {
    json_t *j = call(body, 400);
    json_t *e = json_object_get(j, "error");
    ck_assert_str_eq(json_string_value(json_object_get(e, "field")), field);
    ck_assert_msg(strstr(json_string_value(json_object_get(e, "message")), text), "%s",
                  json_string_value(json_object_get(e, "message")));
    json_decref(j);
}

START_TEST(gptmodel_errors) {
    static const struct { const char *body, *field, *text; } cases[] = {
        {"{" BOOK ",\"block_size\":8,\"init\":{\"seed\":1},\"idx\":[1]}", "block_size",
         "block_size is GPT2's name: GPTModel calls it context_length"},
        {"{" CFG ",\"emb_dim\":8,\"init\":{\"seed\":1},\"idx\":[1]}", "emb_dim",
         "emb_dim is GPTModel's name: GPT2 calls it n_embd"},
        {"{" CFG ",\"qkv_bias\":true,\"init\":{\"seed\":1},\"idx\":[1]}", "qkv_bias",
         "qkv_bias is an option of GPTModel; GPT2 has none"},
        {"{" BOOK ",\"activation\":\"gelu\",\"init\":{\"seed\":1},\"idx\":[1]}", "activation",
         "activation is an option of GPT2; GPTModel has none"},
        {"{\"module\":\"GPTModel\",\"vocab_size\":11,\"init\":{\"seed\":1},\"idx\":[1]}",
         "context_length", "context_length is required"},
        {"{\"module\":\"GPT3\",\"vocab_size\":11,\"idx\":[1]}", "module",
         "module \"GPT3\" is not one of \"GPT2\", \"GPTModel\""},
        {"{\"module\":\"GPTModel\",\"vocab_size\":11,\"context_length\":8,\"n_heads\":3,"
         "\"emb_dim\":8,\"init\":{\"seed\":1},\"idx\":[1]}", "n_heads",
         "emb_dim must be divisible by n_heads"},
        {"{" BOOK ",\"drop_rate\":1.5,\"init\":{\"seed\":1},\"idx\":[1]}", "drop_rate",
         "drop_rate must be in [0, 1]"},
        {"{" BOOK ",\"qkv_bias\":1,\"init\":{\"seed\":1},\"idx\":[1]}", "qkv_bias",
         "qkv_bias must be true or false"},
        {"{" BOOK ",\"init\":{\"seed\":1},\"idx\":[1,2,3,4,5,6,7,8,9]}", "idx",
         "9 tokens exceed context_length 8"},
        {"{" BOOK ",\"init\":{\"seed\":1},\"idx\":[1],\"layers\":[1]}", "layers[0]",
         "[0, n_layers 1)"},
        {"{" BOOK ",\"idx\":[1]}", "init", "GPTModel(cfg)"},
        /* its state_dict: its names (a hint lists them), out_head.weight required and untied */
        {"{" BOOK ",\"state_dict\":{\"wte.weight\":[[1]]},\"idx\":[1]}", "state_dict.wte.weight",
         "GPTModel has no parameter \"wte.weight\" (names as GPTModel's state_dict: "
         "tok_emb.weight, pos_emb.weight, trf_blocks.0.att.W_query.weight"},
        {"{" BOOK ",\"state_dict\":{\"lm_head.weight\":[[1]]},\"idx\":[1]}",
         "state_dict.lm_head.weight", "GPTModel has no parameter"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        expect_message(cases[i].body, cases[i].field, cases[i].text);
    /* the params of one, as the state_dict of another: all but out_head */
    json_t *j = call("{" BOOK ",\"init\":{\"seed\":4},\"idx\":[1],\"return\":[\"params\"]}", 200);
    json_t *sd = json_object_get(j, "params");
    ck_assert_ptr_nonnull(json_object_get(sd, "trf_blocks.0.att.mask"));
    ck_assert_ptr_null(json_object_get(sd, "trf_blocks.0.att.W_query.bias"));
    json_object_del(sd, "out_head.weight");
    json_t *rq = json_pack("{s:s,s:i,s:i,s:i,s:i,s:i,s:O,s:[i]}", "module", "GPTModel", "vocab_size", 11,
                           "context_length", 8, "n_layers", 1, "n_heads", 2, "emb_dim", 8, "state_dict", sd,
                           "idx", 1);
    char *body = json_dumps(rq, JSON_COMPACT);
    expect_message(body, "state_dict.out_head.weight", "state_dict has no \"out_head.weight\": GPTModel needs it");
    free(body);
    json_decref(rq);
    json_decref(j);
    /* a safetensors reply holds at most 114 tensors of the groups */
    expect_message("{\"module\":\"GPTModel\",\"vocab_size\":5,\"context_length\":4,\"n_layers\":8,\"n_heads\":1,"
                   "\"emb_dim\":2,\"init\":{\"seed\":1},\"idx\":[1],\"return\":[\"params\"],"
                   "\"output_format\":\"safetensors\"}", "return", "ask for them with a JSON output_format");
}
END_TEST

/* The budget counts only the outputs asked for: a request for next_token
 * alone fits a limit below the plan's bound (which holds every map, hidden
 * state and position's logits), the same request asking for the maps does
 * not. */
START_TEST(budget_counts_outputs_asked) {
    attn_lm_plan p;
    attn_error err;
    ck_assert_int_eq(attn_lm_plan_make(&CONFIG, 1, 8, 0, &p, &err), ATTN_OK);
    size_t limit = p.total_elements - p.n_attn / 2 - p.n_hidden / 2;
    const char *next = "{" CFG ",\"init\":{\"seed\":1},\"idx\":[1,2,3,4,5,6,7,8],\"return\":[\"next_token\"]}";
    const char *maps = "{" CFG ",\"init\":{\"seed\":1},\"idx\":[1,2,3,4,5,6,7,8],\"return\":[\"attn_weights\"]}";
    json_decref(call_lim(next, 200, limit));
    json_decref(call_lim(maps, 413, limit));
}
END_TEST

/* The OpenAPI document's example is answered. */
START_TEST(document_example) {
    json_error_t je;
    json_t *doc = json_loads(api_openapi_json(), 0, &je);
    ck_assert_ptr_nonnull(doc);
    /* the operation refers to components/requestBodies/Gpt2Request */
    json_t *rb = json_object_get(json_object_get(json_object_get(json_object_get(doc, "paths"),
                                                                 "/model/gpt2"), "post"),
                                 "requestBody");
    ck_assert_str_eq(json_string_value(json_object_get(rb, "$ref")),
                     "#/components/requestBodies/Gpt2Request");
    rb = json_object_get(json_object_get(json_object_get(doc, "components"), "requestBodies"),
                         "Gpt2Request");
    json_t *ex = json_object_get(json_object_get(json_object_get(json_object_get(rb, "content"),
                                                                 "application/json"), "examples"),
                                 "gpt2_seed");
    ck_assert_ptr_nonnull(ex);
    char *body = json_dumps(json_object_get(ex, "value"), JSON_COMPACT);
    json_t *j = call(body, 200);
    ck_assert(json_is_integer(json_object_get(j, "next_token")));
    ck_assert_int_eq(rank_of(json_object_get(j, "attn_weights")), 4);
    json_decref(j);
    free(body);
    json_decref(doc);
}
END_TEST

START_TEST(path) {
    api_endpoint ep;
    ck_assert_int_eq(api_endpoint_from_path("/model/gpt2", &ep), 0);
    ck_assert_int_eq(ep, API_EP_MODEL_GPT2);
    ck_assert_str_eq(api_endpoint_path(API_EP_MODEL_GPT2), "/model/gpt2");
    ck_assert_ptr_null(api_endpoint_path(API_EP_COUNT));
    ck_assert_int_eq(api_endpoint_get(API_EP_MODEL_GPT2)->kind, API_KIND_MODEL);
}
END_TEST

static Suite *model_suite(void) {
    /* Bits depend on OpenBLAS's thread count: one thread, as the server runs it. */
    openblas_set_num_threads(1);
    Suite *s = suite_create("api_model");
    const TTest *tests[] = {alias_same_bytes, batched_every_output, unbatched_layers, state_dict_round_trip,
                            training_dropout, formats, no_maps, errors, document_example, path,
                            selection, safetensors_reply, deferred, pool_same_bytes, gptmodel_errors,
                            budget_counts_outputs_asked, NULL};
    tcase_with(s, "gpt2", 30, tests);
    return s;
}

const test_program TEST_PROGRAM = {.suites = {model_suite}};
