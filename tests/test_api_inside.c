/* test_api_inside.c - the look inside a model over the API (POST /model/gpt2
 * with hook names in "return", "ablate", "patch", "logit_lens"):
 *
 *   every reply of tests/golden/inside/ (tests/golden/generate_inside.py:
 *     PyTorch with forward hooks on the same weights, both families) within
 *     |got - want| <= 1e-4 + 1e-3 |want|, masked scores null where PyTorch
 *     has -inf, the lens's ids equal (or a near tie's);
 *   the same tensors in safetensors and base64 replies, more tensors than a
 *     reply's parts, the lens's tokens with a tokenizer;
 *   only what is asked is held (the memory reserved grows by one hook's
 *     size, not every layer's), the sweep's work counted against --max-work;
 *   every refusal names its field.
 */
#include <check.h>
#include <dirent.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "api/api.h"
#include "core/attention.h"
#include "tests/support/bpe_files.h"
#include "tests/support/check_main.h"
#include "tests/support/files.h"
#include "tests/support/golden_tensors.h" /* gt_near: the tolerance */
#include "tests/support/jschema.h"
#include "tests/support/openapi_doc.h"
#include "support/api_call.h"

#include <cblas.h> /* openblas_set_num_threads */

static char **g_files;
static int g_n;

/* ==== Comparing a reply with its golden ==================================== */

/* Every number of a nested array, in order, into a growing array. */
typedef struct {
    double *v;
    size_t n, cap;
} numbers;

static void flatten(const json_t *j, numbers *out) {
    if (json_is_array(j)) {
        for (size_t i = 0; i < json_array_size(j); i++) flatten(json_array_get(j, i), out);
        return;
    }
    if (out->n == out->cap) {
        out->cap = out->cap ? 2 * out->cap : 64;
        out->v = realloc(out->v, out->cap * sizeof *out->v);
        ck_assert_ptr_nonnull(out->v);
    }
    out->v[out->n++] = json_is_null(j) ? -INFINITY : json_number_value(j);
}

/* The lens: probabilities within the tolerance; each id PyTorch's, or one
 * whose probability ties with it (the order of a near tie is rounding). */
static void expect_lens(const char *where, const json_t *want, const json_t *got, int k) {
    numbers wi = {0}, wp = {0}, gi = {0}, gp = {0};
    flatten(json_object_get(want, "ids"), &wi), flatten(json_object_get(want, "probs"), &wp);
    flatten(json_object_get(got, "ids"), &gi), flatten(json_object_get(got, "probs"), &gp);
    ck_assert_msg(wi.n == gi.n && wp.n == gp.n && wi.n == wp.n && wi.n % (size_t)k == 0,
                  "%s: lens sizes %zu/%zu against %zu/%zu", where, gi.n, gp.n, wi.n, wp.n);
    for (size_t i = 0; i < wi.n; i++) {
        ck_assert_msg(gt_near(gp.v[i], wp.v[i]), "%s: probs[%zu] %.9g, PyTorch %.9g", where, i,
                      gp.v[i], wp.v[i]);
        int ok = gi.v[i] == wi.v[i];
        for (size_t j = i - i % (size_t)k; !ok && j < i - i % (size_t)k + (size_t)k; j++)
            ok = wi.v[j] == gi.v[i] && gt_near(wp.v[j], wp.v[i]);
        ck_assert_msg(ok, "%s: ids[%zu] %g, PyTorch %g", where, i, gi.v[i], wi.v[i]);
    }
    free(wi.v), free(wp.v), free(gi.v), free(gp.v);
}

/* got holds want: the same keys (and maybe more), arrays of the same
 * lengths, numbers within the tolerance, null where want has null. */
static int expect_json(const char *where, const json_t *want, const json_t *got) {
    char sub[512];
    if (json_is_object(want)) {
        ck_assert_msg(json_is_object(got), "%s: not an object", where);
        const char *key;
        const json_t *v;
        int n = 0;
        json_object_foreach((json_t *)want, key, v) {
            snprintf(sub, sizeof sub, "%s.%s", where, key);
            ck_assert_msg(json_object_get(got, key) != NULL, "%s: missing", sub);
            n += expect_json(sub, v, json_object_get(got, key));
        }
        return n;
    }
    if (json_is_array(want)) {
        ck_assert_msg(json_is_array(got) && json_array_size(got) == json_array_size(want),
                      "%s: %zu values, PyTorch %zu", where, json_array_size(got), json_array_size(want));
        int n = 0;
        for (size_t i = 0; i < json_array_size(want); i++) {
            snprintf(sub, sizeof sub, "%s[%zu]", where, i);
            n += expect_json(sub, json_array_get(want, i), json_array_get(got, i));
        }
        return n;
    }
    if (json_is_null(want)) {
        ck_assert_msg(json_is_null(got), "%s: %g where PyTorch has -inf (null)", where,
                      json_number_value(got));
        return 1;
    }
    ck_assert_msg(json_is_number(got) && gt_near(json_number_value(got), json_number_value(want)),
                  "%s: %.9g, PyTorch %.9g", where, json_number_value(got), json_number_value(want));
    return 1;
}

/* ==== The golden files ===================================================== */

static void list_files(void) {
    char dir[1024];
    tfile_path(dir, sizeof dir, "tests/golden/inside");
    DIR *d = opendir(dir);
    if (d == NULL) return;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (!strstr(e->d_name, ".json")) continue;
        g_files = realloc(g_files, (size_t)(g_n + 1) * sizeof *g_files);
        g_files[g_n] = malloc(strlen(dir) + strlen(e->d_name) + 2);
        sprintf(g_files[g_n++], "%s/%s", dir, e->d_name);
    }
    closedir(d);
}

/* The request: the file's model fields, then the request's own. */
static char *request_text(const json_t *model, const json_t *own, const char *extra) {
    json_t *r = json_deep_copy(model);
    json_object_update(r, (json_t *)own);
    return tapi_body(r, extra);
}

START_TEST(golden_replies) {
    json_error_t je;
    json_t *file = json_load_file(g_files[_i], 0, &je);
    ck_assert_msg(file != NULL, "%s: %s", g_files[_i], je.text);
    const json_t *model = json_object_get(file, "model"), *reqs = json_object_get(file, "requests");
    int values = 0;
    attn_pool *pool = attn_pool_create(2); /* made in the test's own process */
    for (size_t r = 0; r < json_array_size(reqs); r++) {
        const json_t *rq = json_array_get(reqs, r);
        char *body = request_text(model, json_object_get(rq, "request"), NULL);
        /* half of them on a pool of two (the sweep's runs one per thread) */
        api_limits lim = {.max_elements = 100000000, .compute = r % 2 ? pool : NULL};
        json_t *got = tapi_call(API_EP_MODEL_GPT2, body, &lim, 200);
        char where[256];
        snprintf(where, sizeof where, "%s %s", strrchr(g_files[_i], '/') + 1,
                 json_string_value(json_object_get(rq, "name")));
        const json_t *want = json_object_get(rq, "expect");
        const json_t *lens = json_object_get(want, "logit_lens");
        if (lens) {
            int k = (int)json_integer_value(json_object_get(json_object_get(json_object_get(rq, "request"),
                                                                            "logit_lens"), "k"));
            expect_lens(where, lens, json_object_get(got, "logit_lens"), k);
            values++;
        } else {
            values += expect_json(where, want, got);
        }
        json_decref(got);
        free(body);
    }
    printf("%s: %zu requests, %d values within tolerance\n", strrchr(g_files[_i], '/') + 1,
           json_array_size(reqs), values);
    attn_pool_destroy(pool);
    json_decref(file);
}
END_TEST

START_TEST(files_exist) {
    ck_assert_msg(g_n >= 4, "expected the files of tests/golden/inside (found %d)", g_n);
}
END_TEST

/* ==== Formats =============================================================== */

/* A small model from a seed: [T] ids 1 2 3 4. */
#define SMALL "\"vocab_size\":11,\"block_size\":8,\"n_layer\":2,\"n_head\":2,\"n_embd\":8," \
              "\"init\":{\"seed\":3},\"idx\":[1,2,3,4]"

static uint64_t le64(const unsigned char *p) {
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--) v = v << 8 | p[i];
    return v;
}

/* The reply of body as safetensors: its header, and its data in *data. */
static json_t *safetensors(const char *body, const api_limits *lim, api_reply *rep,
                           const unsigned char **data) {
    ck_assert_int_eq(api_handle(API_EP_MODEL_GPT2, body, strlen(body), lim, rep), 200);
    ck_assert_int_eq(api_reply_flatten(rep), 0);
    const unsigned char *b = (const unsigned char *)rep->body.data;
    uint64_t n = le64(b);
    ck_assert(n % 8 == 0 && 8 + n <= rep->body.len);
    json_t *h = json_loadb((const char *)b + 8, n, 0, NULL);
    ck_assert_ptr_nonnull(h);
    *data = b + 8 + n;
    return h;
}

/* Tensor `name` of a safetensors header (F32 or I32) equals the numbers of
 * the JSON tensor j (nested, null as -inf). */
static void expect_entry(const json_t *h, const unsigned char *data, const char *name,
                         const json_t *j) {
    const json_t *t = json_object_get(h, name);
    ck_assert_msg(t != NULL, "safetensors has no %s", name);
    numbers want = {0};
    flatten(j, &want);
    size_t at = (size_t)json_integer_value(json_array_get(json_object_get(t, "data_offsets"), 0));
    size_t end = (size_t)json_integer_value(json_array_get(json_object_get(t, "data_offsets"), 1));
    ck_assert_uint_eq(end - at, 4 * want.n);
    int ints = strcmp(json_string_value(json_object_get(t, "dtype")), "I32") == 0;
    for (size_t i = 0; i < want.n; i++) {
        float f;
        int32_t k;
        memcpy(ints ? (void *)&k : (void *)&f, data + at + 4 * i, 4);
        ck_assert_msg(ints ? (double)k == want.v[i] : f == (float)want.v[i], "%s[%zu]", name, i);
    }
    free(want.v);
}

/* Every hook in safetensors ("cache.<name>", masked scores -inf) and base64
 * equal to the nested JSON reply; the patch and the lens too. */
START_TEST(formats_agree) {
    const char *ask = "{" SMALL ",\"return\":[\"blocks.*.attn.hook_attn_scores\",\"blocks.1.mlp.hook_post\","
                      "\"ln_final.hook_normalized\",\"logits\"],\"ablate\":[{\"layer\":1,\"head\":1}],"
                      "\"patch\":{\"corrupted_idx\":[1,5,3,4],\"logit_diff\":[2,3]},\"logit_lens\":{\"k\":3}%s}";
    char body[1024];
    snprintf(body, sizeof body, ask, "");
    json_t *nested = tapi_call(API_EP_MODEL_GPT2, body, NULL, 200);
    const json_t *cache = json_object_get(nested, "cache");
    ck_assert_int_eq(json_object_size(cache), 4);
    snprintf(body, sizeof body, ask, ",\"output_format\":\"safetensors\"");
    api_limits lim = {.max_elements = 100000000, .zero_copy = 1};
    api_reply rep;
    const unsigned char *data;
    json_t *h = safetensors(body, &lim, &rep, &data);
    const char *key;
    const json_t *v;
    char name[128];
    json_object_foreach((json_t *)cache, key, v) {
        snprintf(name, sizeof name, "cache.%s", key);
        expect_entry(h, data, name, v);
    }
    const json_t *patch = json_object_get(nested, "patch"), *lens = json_object_get(nested, "logit_lens");
    expect_entry(h, data, "patch.result", json_object_get(patch, "result"));
    expect_entry(h, data, "patch.clean", json_object_get(patch, "clean"));
    expect_entry(h, data, "logit_lens.ids", json_object_get(lens, "ids"));
    expect_entry(h, data, "logit_lens.probs", json_object_get(lens, "probs"));
    json_decref(h);
    api_reply_free(&rep);
    /* base64: every cache entry {"shape", "dtype", "base64"} */
    snprintf(body, sizeof body, ask, ",\"output_format\":\"base64\"");
    json_t *b64 = tapi_call(API_EP_MODEL_GPT2, body, NULL, 200);
    json_object_foreach(json_object_get(b64, "cache"), key, v)
        ck_assert_str_eq(json_string_value(json_object_get(v, "dtype")), "float32");
    ck_assert_int_eq(json_array_size(json_object_get(json_object_get(json_object_get(b64, "cache"),
                                                                     "blocks.0.attn.hook_attn_scores"),
                                                     "shape")), 3); /* [H][T][T]: no batch axis */
    json_decref(b64);
    json_decref(nested);
}
END_TEST

/* 9 blocks x 15 hooks + ln_final: more tensors than a reply leaves in place
 * (API_ST_MAX_ENTRIES), copied into the body instead. */
START_TEST(many_tensors) {
    const char *hooks[] = {"hook_resid_pre", "ln1.hook_normalized", "attn.hook_q", "attn.hook_k",
                           "attn.hook_v", "attn.hook_attn_scores", "attn.hook_pattern",
                           "attn.hook_z", "hook_attn_out", "hook_resid_mid", "ln2.hook_normalized",
                           "mlp.hook_pre", "mlp.hook_post", "hook_mlp_out", "hook_resid_post"};
    char body[2048] = "{\"vocab_size\":11,\"block_size\":8,\"n_layer\":9,\"n_head\":2,\"n_embd\":8,"
                      "\"init\":{\"seed\":3},\"idx\":[[1,2,3],[3,2,1]],\"output_format\":\"safetensors\","
                      "\"return\":[\"ln_final.hook_normalized\"";
    for (size_t i = 0; i < sizeof hooks / sizeof *hooks; i++)
        snprintf(body + strlen(body), sizeof body - strlen(body), ",\"blocks.*.%s\"", hooks[i]);
    strcat(body, "]}");
    api_limits lim = {.max_elements = 100000000, .zero_copy = 1};
    api_reply rep;
    const unsigned char *data;
    json_t *h = safetensors(body, &lim, &rep, &data);
    ck_assert_int_eq(json_object_size(h), 9 * 15 + 1 + 1); /* and __metadata__ */
    const json_t *z = json_object_get(h, "cache.blocks.8.attn.hook_z");
    ck_assert_int_eq(json_integer_value(json_array_get(json_object_get(z, "shape"), 0)), 2); /* B */
    json_decref(h);
    api_reply_free(&rep);
}
END_TEST

/* A 200 reply whose text may hold \u0000 (a token of byte 0). */
static json_t *call_nul(const char *body, const api_limits *lim) {
    api_reply rep;
    ck_assert_int_eq(api_handle(API_EP_MODEL_GPT2, body, strlen(body), lim, &rep), 200);
    json_error_t je;
    json_t *j = json_loadb(rep.body.data, rep.body.len, JSON_ALLOW_NUL, &je);
    ck_assert_msg(j != NULL, "%s", je.text);
    api_reply_free(&rep);
    return j;
}

/* With a tokenizer: corrupted_text, logit_diff as texts, the lens's tokens. */
START_TEST(with_tokenizer) {
    api_bpe *bpe = tbpe_load_bytes(NULL); /* the demo model's: 256 byte symbols, no merges */
    api_tokenizer tok = {"bytes", bpe};
    api_limits lim = {.max_elements = 100000000, .tokenizers = &tok, .n_tokenizers = 1};
    const char *cfg = "\"vocab_size\":256,\"block_size\":16,\"n_layer\":2,\"n_head\":2,\"n_embd\":8,"
                      "\"init\":{\"seed\":5},\"text\":\"To be, or\"";
    char body[1024];
    snprintf(body, sizeof body, "{%s,\"patch\":{\"corrupted_text\":\"To be, as\",\"site\":\"resid_pre\","
             "\"logit_diff\":[\" \",\"n\"]},\"logit_lens\":{\"k\":2}}", cfg);
    json_t *j = call_nul(body, &lim);
    const json_t *lens = json_object_get(j, "logit_lens");
    const json_t *ids = json_object_get(lens, "ids"), *toks = json_object_get(lens, "tokens");
    ck_assert_int_eq(json_array_size(toks), 3);                        /* layers + 1 */
    ck_assert_int_eq(json_array_size(json_array_get(toks, 0)), 9);     /* T */
    for (size_t l = 0; l < 3; l++)
        for (size_t t = 0; t < 9; t++)
            for (size_t k = 0; k < 2; k++) {
                int id = (int)json_integer_value(json_array_get(json_array_get(json_array_get(ids, l), t), k));
                const char *s = json_string_value(json_array_get(json_array_get(json_array_get(toks, l), t), k));
                ck_assert_ptr_nonnull(s);
                if (id > 0 && id < 128) ck_assert(strlen(s) == 1 && (unsigned char)s[0] == id);
            }
    const json_t *res = json_object_get(json_object_get(j, "patch"), "result");
    ck_assert_int_eq(json_array_size(res), 2);
    ck_assert_int_eq(json_array_size(json_array_get(res, 0)), 9);      /* positions */
    json_decref(j);
    struct { const char *patch, *field; } bad[] = {
        {"{\"corrupted_text\":\"To be\",\"logit_diff\":[1,2]}", "patch.corrupted_text"},
        {"{\"corrupted_text\":\"To be, as\",\"logit_diff\":[\"ab\",2]}", "patch.logit_diff[0]"},
        {"{\"corrupted_text\":\"To be, as\",\"logit_diff\":[1,\"\"]}", "patch.logit_diff[1]"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        snprintf(body, sizeof body, "{%s,\"patch\":%s}", cfg, bad[i].patch);
        tapi_expect_field(API_EP_MODEL_GPT2, body, &lim, 400, bad[i].field);
    }
    api_bpe_free(bpe);
}
END_TEST

/* ==== What is held, what it costs ========================================== */

static size_t reserved_for(const char *returns) {
    char body[512];
    snprintf(body, sizeof body, "{" SMALL ",\"return\":[%s]}", returns);
    return tapi_reserved(API_EP_MODEL_GPT2, body, NULL);
}

/* One layer's hook_z holds one layer's (B*T*C floats, and its reply's
 * text): every layer's holds n_layer times that. */
START_TEST(only_what_is_asked) {
    size_t none = reserved_for("\"next_token\"");
    size_t one = reserved_for("\"next_token\",\"blocks.1.attn.hook_z\"");
    size_t all = reserved_for("\"next_token\",\"blocks.*.attn.hook_z\"");
    size_t twice = reserved_for("\"next_token\",\"blocks.1.attn.hook_z\",\"blocks.1.attn.hook_z\"");
    size_t floats = 4 * 8; /* T * C */
    ck_assert_uint_eq(one - none, floats * sizeof(float) * 4); /* the array, 3 floats of text each */
    ck_assert_uint_eq(all - none, 2 * (one - none));
    ck_assert_uint_eq(twice, one);
}
END_TEST

/* The sweep's runs count against --max-work, named "patch" in the 413. */
START_TEST(work_is_counted) {
    api_limits lim = {.max_elements = 100000000, .max_work = 60000};
    json_decref(tapi_call(API_EP_MODEL_GPT2, "{" SMALL "}", &lim, 200));
    tapi_expect_field(API_EP_MODEL_GPT2,
                      "{" SMALL ",\"patch\":{\"corrupted_idx\":[1,5,3,4],\"site\":\"resid_pre\","
                      "\"logit_diff\":[2,3]}}", &lim, 413, "patch");
}
END_TEST

/* ==== Refusals =============================================================== */

START_TEST(refusals) {
    static const struct {
        const char *fields;
        const char *code, *field;
    } bad[] = {
        {"\"ablate\":{\"layer\":0}", "invalid_type", "ablate"},
        {"\"ablate\":[{\"layer\":2,\"head\":0}]", "invalid_argument", "ablate[0].layer"},
        {"\"ablate\":[{\"layer\":0,\"head\":2}]", "invalid_argument", "ablate[0].head"},
        {"\"ablate\":[{\"layer\":0}]", "missing_field", "ablate[0].head"},
        {"\"ablate\":[{\"layer\":0,\"head\":0,\"method\":\"max\"}]", "invalid_argument", "ablate[0].method"},
        {"\"ablate\":[{\"layer\":0,\"head\":0,\"x\":1}]", "unknown_field", "ablate[0].x"},
        {"\"ablate\":[3]", "invalid_type", "ablate[0]"},
        {"\"patch\":{\"logit_diff\":[1,2]}", "missing_field", "patch.corrupted_idx"},
        {"\"patch\":{\"corrupted_idx\":[1,2],\"logit_diff\":[1,2]}", "invalid_shape", "patch.corrupted_idx"},
        {"\"patch\":{\"corrupted_idx\":[[1,2,3,4]],\"logit_diff\":[1,2]}", "invalid_shape", "patch.corrupted_idx"},
        {"\"patch\":{\"corrupted_idx\":[1,2,3,11],\"logit_diff\":[1,2]}", "invalid_argument", "patch.corrupted_idx"},
        {"\"patch\":{\"corrupted_idx\":[1,2,3,4]}", "missing_field", "patch.logit_diff"},
        {"\"patch\":{\"corrupted_idx\":[1,2,3,4],\"logit_diff\":[1]}", "invalid_type", "patch.logit_diff"},
        {"\"patch\":{\"corrupted_idx\":[1,2,3,4],\"logit_diff\":[1,11]}", "invalid_argument", "patch.logit_diff[1]"},
        {"\"patch\":{\"corrupted_idx\":[1,2,3,4],\"logit_diff\":[1,2],\"site\":\"z\"}", "invalid_argument", "patch.site"},
        {"\"patch\":{\"corrupted_idx\":[1,2,3,4],\"logit_diff\":[1,2],\"layer\":0}", "unknown_field", "patch.layer"},
        {"\"patch\":{\"corrupted_idx\":[1,2,3,4],\"corrupted_text\":\"abcd\",\"logit_diff\":[1,2]}",
         "invalid_argument", "patch.corrupted_idx"},
        {"\"patch\":{\"corrupted_text\":\"abcd\",\"logit_diff\":[1,2]}", "invalid_argument", "patch.corrupted_text"},
        {"\"patch\":{\"corrupted_idx\":[1,2,3,4],\"logit_diff\":[1,2]},\"training\":true", "invalid_argument", "patch"},
        {"\"patch\":[1]", "invalid_type", "patch"},
        {"\"logit_lens\":{\"k\":0}", "invalid_argument", "logit_lens.k"},
        {"\"logit_lens\":{\"k\":12}", "invalid_argument", "logit_lens.k"},
        {"\"logit_lens\":5", "invalid_type", "logit_lens"},
        {"\"logit_lens\":{\"top\":3}", "unknown_field", "logit_lens.top"},
        {"\"return\":[\"blocks.2.attn.hook_z\"]", "invalid_argument", "return[0]"},
        {"\"return\":[\"blocks.0.hook_nope\"]", "invalid_argument", "return[0]"},
        {"\"return\":[\"logits\",\"ln_final.hook_normalized\",\"blocks.-1.attn.hook_z\"]", "invalid_argument", "return[2]"},
        {"\"return\":[\"hook_resid_pre\"]", "invalid_argument", "return[0]"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        char body[512];
        snprintf(body, sizeof body, "{" SMALL ",%s}", bad[i].fields);
        json_t *j = tapi_call(API_EP_MODEL_GPT2, body, NULL, 400);
        const json_t *err = json_object_get(j, "error");
        ck_assert_msg(strcmp(json_string_value(json_object_get(err, "code")), bad[i].code) == 0 &&
                      strcmp(json_string_value(json_object_get(err, "field")), bad[i].field) == 0,
                      "%s: %s on %s (%s)", bad[i].fields, json_string_value(json_object_get(err, "code")),
                      json_string_value(json_object_get(err, "field")),
                      json_string_value(json_object_get(err, "message")));
        json_decref(j);
    }
    /* a model without blocks has no lens; training mode takes hooks and ablations */
    json_decref(tapi_call(API_EP_MODEL_GPT2, "{\"vocab_size\":11,\"block_size\":8,\"n_layer\":0,"
                          "\"n_head\":2,\"n_embd\":8,\"init\":{\"seed\":3},\"idx\":[1],"
                          "\"logit_lens\":{}}", NULL, 400));
    json_decref(tapi_call(API_EP_MODEL_GPT2, "{" SMALL ",\"training\":true,\"dropout_seed\":1,"
                          "\"ablate\":[{\"layer\":0,\"head\":1,\"method\":\"mean\"}],"
                          "\"return\":[\"blocks.0.attn.hook_z\"]}", NULL, 200));
}
END_TEST

/* ==== The OpenAPI document ================================================== */

static const json_t *at_path(const json_t *j, const char *const *keys) {
    for (; *keys && j; keys++) j = json_object_get(j, *keys);
    return j;
}

/* Requests with hooks, ablations, a patch and the lens, [T] and [B][T],
 * every JSON format: each request valid for Gpt2Request, each reply for
 * /model/gpt2's 200 schema. */
START_TEST(document_agrees) {
    json_t *doc = openapi_doc();
    const char *rq_path[] = {"components", "requestBodies", "Gpt2Request", "content",
                             "application/json", "schema", NULL};
    const char *rep_path[] = {"paths", "/model/gpt2", "post", "responses", "200", "content",
                              "application/json", "schema", NULL};
    const json_t *rq_schema = at_path(doc, rq_path), *rep_schema = at_path(doc, rep_path);
    ck_assert(rq_schema && rep_schema);
    static const char *const idx[][2] = {{"[1,2,3,4]", "[1,5,3,4]"}, {"[[1,2,3],[4,5,6]]", "[[1,2,0],[4,5,0]]"}};
    static const char *const formats[] = {"nested", "flat", "base64"};
    static const char *const sites[] = {"attn_head", "mlp_out"};
    int checked = 0;
    for (int i = 0; i < 2; i++)
        for (int f = 0; f < 3; f++)
            for (int k = 0; k < 2; k++) {
                char body[1024];
                snprintf(body, sizeof body,
                         "{\"vocab_size\":11,\"block_size\":8,\"n_layer\":2,\"n_head\":2,\"n_embd\":8,"
                         "\"init\":{\"seed\":3},\"idx\":%s,\"output_format\":\"%s\",\"return\":[\"logits\","
                         "\"blocks.*.attn.hook_attn_scores\",\"blocks.0.hook_resid_pre\","
                         "\"ln_final.hook_normalized\"],\"ablate\":[{\"layer\":0,\"head\":1,\"method\":\"mean\"}],"
                         "\"patch\":{\"corrupted_idx\":%s,\"site\":\"%s\",\"logit_diff\":[1,2]},"
                         "\"logit_lens\":{\"k\":2}}", idx[i][0], formats[f], idx[i][1], sites[k]);
                json_t *req = json_loads(body, 0, NULL);
                jschema_error e;
                ck_assert_msg(jschema_validate(doc, rq_schema, req, &e) == JSCHEMA_VALID,
                              "request %d %s: %s at %s", i, formats[f], e.message, e.path);
                json_t *rep = tapi_call(API_EP_MODEL_GPT2, body, NULL, 200);
                ck_assert_msg(jschema_validate(doc, rep_schema, rep, &e) == JSCHEMA_VALID,
                              "reply %d %s: %s at %s (schema %s)", i, formats[f], e.message, e.path,
                              e.schema_path);
                json_decref(rep);
                json_decref(req);
                checked++;
            }
    ck_assert_int_eq(checked, 12);
    json_decref(doc);
}
END_TEST

/* ==== The suite ============================================================ */

static Suite *suite(void) {
    openblas_set_num_threads(1);
    list_files();
    Suite *s = suite_create("api_inside");
    const TTest *golden[] = {files_exist, NULL}; /* then each file of tests/golden/inside/ */
    tcase_add_loop_test(tcase_with(s, "golden", 60, golden), golden_replies, 0, g_n);
    const TTest *api[] = {formats_agree, many_tensors, with_tokenizer, only_what_is_asked,
                          work_is_counted, refusals, document_agrees, NULL};
    tcase_with(s, "api", 30, api);
    return s;
}

static void after(void) {
    for (int i = 0; i < g_n; i++) free(g_files[i]);
    free(g_files);
}

const test_program TEST_PROGRAM = {.suites = {suite}, .after = after};
