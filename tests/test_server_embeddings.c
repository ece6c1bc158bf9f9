/* test_server_embeddings.c - OpenAI's official Node client drives POST
 * /v1/embeddings unchanged (tests/clients/openai_embeddings.mjs) against a
 * server of this build with two encoder folders of tests/golden/encoders/:
 * "mini" (BertModel with sentence-transformers' mean pooling and Normalize)
 * and "rob" (RoBERTa with its byte-level tokenizer, cls + max pooling):
 *
 *   token ids as lists of different lengths: the client's default (it asks
 *     for base64 and decodes it), float, and base64 as the text, each equal
 *     to PyTorch's pooled embeddings (tests/golden/generate_encoders.py:
 *     sentence-transformers' Pooling and Normalize) within 1e-4 + 1e-3 |x|,
 *     usage's tokens the real ones; one list of ids with dimensions equal to
 *     the width and a user;
 *   strings through the RoBERTa folder's tokenizer: equal to POST /model's
 *     embeddings of the same texts;
 *   a dimensions the model does not have is the client's 400, a model that
 *     does not exist its 404 (NotFoundError).
 *
 * npm's "openai" is the release test_server_openai.c pins (it runs on
 * Debian bookworm's Node 18), installed once into build/npm-openai. */
#include <check.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "api/numbers/numbers.h"
#include "support/api_call.h"
#include "support/check_main.h"
#include "support/files.h"
#include "support/golden_tensors.h"
#include "support/npm.h"
#include "support/procs.h"
#include "support/server_harness.h"

#define OPENAI "openai@6.49.0"
#define MINI "tests/golden/encoders/minilm_st_mean_norm_bf16"
#define ROB "tests/golden/encoders/roberta_mlm_f16"

/* The golden's rows of ids (each row's tokens alone) as JSON text. */
static char *golden_rows(const gt_file *g, int *B) {
    const gt_tensor *idx = gt_find(g, "idx"), *mask = gt_find(g, "attention_mask");
    *B = atoi(gt_value(g, "B"));
    size_t T = idx->n / (size_t)*B;
    json_t *a = json_array();
    for (int b = 0; b < *B; b++) {
        json_t *r = json_array();
        for (size_t t = 0; t < T; t++)
            if (((const int32_t *)mask->data)[(size_t)b * T + t])
                json_array_append_new(r, json_integer(((const int32_t *)idx->data)[(size_t)b * T + t]));
        json_array_append_new(a, r);
    }
    char *s = json_dumps(a, JSON_COMPACT);
    json_decref(a);
    return s;
}

/* Runs the client against a server of this build; its report, parsed. */
static json_t *run_client(const char *ids) {
    char prefix[1024], script[1024], mini[1100], rob[1100], path[1024];
    const char *const specs[] = {OPENAI, NULL};
    ck_assert_msg(npm_ensure("build/npm-openai", specs, prefix, sizeof prefix), "npm could not install " OPENAI);
    snprintf(mini, sizeof mini, "--model=mini=%s", tfile_path(path, sizeof path, MINI));
    snprintf(rob, sizeof rob, "--model=rob=%s", tfile_path(path, sizeof path, ROB));
    const char *args[] = {mini, rob, NULL};
    srvt_server s;
    srvt_must_start(&s, args);
    tfile_path(script, sizeof script, "tests/clients/openai_embeddings.mjs");
    size_t n = strlen(ids) + 4096;
    char *cmd = malloc(n);
    snprintf(cmd, n, "OPENAI_DIR='%s/node_modules' timeout 120 node '%s' '%s' '%s'", prefix, script, s.base, ids);
    int status = 0;
    char *out = procs_capture(cmd, &status);
    ck_assert_msg(status == 0 && out, "the client failed (status %d): %s", status, out ? out : "");
    json_error_t je;
    json_t *r = json_loads(out, 0, &je);
    ck_assert_msg(r != NULL, "the client's report is not JSON (%s): %.500s", je.text, out);
    ck_assert_msg(json_object_get(r, "error") == NULL, "the client threw: %s",
                  json_string_value(json_object_get(r, "error")));
    free(out);
    free(cmd);
    srvt_must_stop(&s);
    return r;
}

/* Embedding i of a report part: numbers, or base64 of little-endian float32. */
static void embedding(const json_t *part, size_t i, float *out, int width) {
    const json_t *e = json_array_get(json_object_get(part, "embeddings"), i);
    if (json_is_string(e)) {
        const char *s = json_string_value(e);
        size_t len = strlen(s);
        ck_assert_uint_eq(api__b64_decoded_size(s, len), 4 * (size_t)width);
        uint8_t *raw = malloc(4 * (size_t)width);
        ck_assert(api__b64_decode(s, len, raw) == 0);
        memcpy(out, raw, 4 * (size_t)width); /* little-endian, as this machine */
        free(raw);
        return;
    }
    ck_assert_uint_eq(json_array_size(e), (size_t)width);
    for (int c = 0; c < width; c++) out[c] = (float)json_number_value(json_array_get(e, (size_t)c));
}

static void expect_rows(const char *what, const json_t *part, const float *want, int B, int width,
                        int first) {
    float got[1024];
    ck_assert_int_le(width, 1024);
    ck_assert_uint_eq(json_array_size(json_object_get(part, "embeddings")), (size_t)B);
    ck_assert_str_eq(json_string_value(json_object_get(part, "object")), "list");
    for (int b = 0; b < B; b++) {
        embedding(part, (size_t)b, got, width);
        ck_assert_int_eq(json_integer_value(json_array_get(json_object_get(part, "indices"), (size_t)b)), b);
        for (int c = 0; c < width; c++) {
            float w = want[(size_t)(first + b) * (size_t)width + (size_t)c];
            ck_assert_msg(gt_near(got[c], w), "%s[%d][%d]: %g, want %g", what,
                          b, c, (double)got[c], (double)w);
        }
    }
}

START_TEST(official_client) {
    gt_file g;
    int B;
    gt_load(MINI "/expected.gpt2", &g);
    char *ids = golden_rows(&g, &B);
    json_t *r = run_client(ids);
    const gt_tensor *emb = gt_find(&g, "embeddings");
    int width = (int)(emb->n / (size_t)B), tokens = 0;
    for (size_t i = 0; i < gt_find(&g, "attention_mask")->n; i++) tokens += ((const int32_t *)gt_find(&g, "attention_mask")->data)[i];
    static const char *const parts[] = {"ids_default", "ids_float", "ids_base64"};
    for (int i = 0; i < 3; i++) {
        const json_t *p = json_object_get(r, parts[i]);
        expect_rows(parts[i], p, emb->data, B, width, 0);
        ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(p, "usage"), "prompt_tokens")), tokens);
        ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(p, "usage"), "total_tokens")), tokens);
        ck_assert_str_eq(json_string_value(json_object_get(p, "model")), "mini");
    }
    ck_assert(json_is_string(json_array_get(json_object_get(json_object_get(r, "ids_base64"), "embeddings"), 0)));
    expect_rows("one_row", json_object_get(r, "one_row"), emb->data, 1, width, 0);
    /* the texts against POST /model's embeddings of the same texts */
    api_models *models = NULL;
    char why[512], path[1024], spec[1100];
    snprintf(spec, sizeof spec, "rob=%s", tfile_path(path, sizeof path, ROB));
    ck_assert_msg(api_models_load(&models, spec, why, sizeof why) == 0, "%s", why);
    api_limits lim = {.max_elements = 100000000, .models = models};
    json_t *m = tapi_call(API_EP_MODEL, "{\"model\":\"rob\",\"text\":[\"Hi there\",\"to be or not\"],"
                          "\"return\":[\"embeddings\"],\"output_format\":\"flat\"}", &lim, 200);
    const json_t *data = json_object_get(json_object_get(m, "embeddings"), "data");
    int w2 = (int)json_array_size(data) / 2;
    float *want = malloc(json_array_size(data) * sizeof *want);
    for (size_t i = 0; i < json_array_size(data); i++) want[i] = (float)json_number_value(json_array_get(data, i));
    expect_rows("texts", json_object_get(r, "texts"), want, 2, w2, 0);
    expect_rows("text", json_object_get(r, "text"), want, 1, w2, 0);
    ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(r, "dimensions"), "status")), 400);
    ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(r, "missing"), "status")), 404);
    printf("openai %s: embeddings.create with ids (default base64 decoded, float, base64) and texts: "
           "PyTorch's pooled embeddings; dimensions 400, unknown model 404\n",
           json_string_value(json_object_get(r, "version")));
    free(want);
    json_decref(m);
    api_models_free(models);
    json_decref(r);
    free(ids);
    gt_free(&g);
}
END_TEST

static Suite *suite(void) {
    Suite *s = suite_create("server_embeddings");
    TCase *tc = tcase_create("openai_client");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, official_client);
    suite_add_tcase(s, tc);
    return s;
}

const test_program TEST_PROGRAM = {.suites = {suite}};
