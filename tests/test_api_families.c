/* test_api_families.c - the decoder families from Hugging Face folders
 * (tests/golden/families/<case>/: config.json as released checkpoints
 * write it, model.safetensors in F32, F16 or BF16, and expected.gpt2 written
 * by tests/golden/generate_families.py from PyTorch references transcribed
 * from transformers' modeling files), loaded as `--model NAME=DIR` loads
 * them (api_models_load) and questioned through POST /model (api_handle):
 *
 *   the logits and every hook of every block the golden file holds
 *     (TransformerLens's names: hook_rot_q, mlp.hook_pre_linear, ...)
 *     within 1e-4 + 1e-3 |want| of PyTorch's, the masked scores null
 *     (-inf) exactly where PyTorch's are -inf;
 *   the greedy continuation the server writes ("generate": the cache's
 *     steps, a prefill then one row a step) equal to PyTorch's argmax loop
 *     over whole forwards;
 *   the reply's module and GET /models' architecture;
 *   F16 and BF16 folders held half-size (GET /models' weights_dtype is the
 *     folder's: --weights-dtype keep, the default), so that all of the
 *     above runs through the half-size kernels.
 * Run from the repository root.
 */
#include <check.h>
#include <ctype.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "api/bpe/bpe.h"
#include "api/weights/weights.h"
#include "tests/support/api_call.h"
#include "tests/support/check_main.h"
#include "tests/support/golden_tensors.h"

#define DIR_ROOT "tests/golden/families"
#define MAX_CASES 32

static gt_case_name g_cases[MAX_CASES];
static int g_n;

/* idx [B][T] of the golden file as JSON: [[...], ...], or row b alone. */
static char *ids_json(const gt_tensor *idx, int B, int row) {
    const int32_t *v = idx->data;
    size_t T = idx->n / (size_t)B;
    json_t *a = json_array();
    for (int b = 0; b < B; b++) {
        if (row >= 0 && b != row) continue;
        json_t *r = json_array();
        for (size_t t = 0; t < T; t++) json_array_append_new(r, json_integer(v[(size_t)b * T + t]));
        if (row >= 0) {
            json_decref(a);
            a = r;
        } else {
            json_array_append_new(a, r);
        }
    }
    char *s = json_dumps(a, JSON_COMPACT);
    json_decref(a);
    return s;
}

/* The request asking for the logits and every hook the golden file holds. */
static char *forward_body(const gt_file *g, int B) {
    json_t *ret = json_array();
    json_array_append_new(ret, json_string("logits"));
    for (int i = 0; i < g->n; i++)
        if (strncmp(g->t[i].name, "blocks.", 7) == 0 || strncmp(g->t[i].name, "ln_final.", 9) == 0)
            json_array_append_new(ret, json_string(g->t[i].name));
    char *ids = ids_json(gt_find(g, "idx"), B, -1), *rs = json_dumps(ret, JSON_COMPACT);
    size_t n = strlen(ids) + strlen(rs) + 128;
    char *body = malloc(n);
    ck_assert_ptr_nonnull(body);
    snprintf(body, n, "{\"model\":\"m\",\"idx\":%s,\"return\":%s,\"output_format\":\"flat\"}", ids, rs);
    free(ids), free(rs);
    json_decref(ret);
    return body;
}

/* Grouped queries: the reply's shape names the key/value head of each query
 * head, H / Hkv query heads to a group, as the golden's q and k sizes say. */
static void check_kv_groups(const gt_file *g, const json_t *r) {
    const gt_tensor *q = gt_find(g, "blocks.0.attn.hook_q"), *k = gt_find(g, "blocks.0.attn.hook_k");
    const json_t *shape = json_object_get(r, "shape"), *of = json_object_get(shape, "kv_head_of");
    if (q == NULL || k == NULL) return;
    if (q->n == k->n) {
        ck_assert_msg(of == NULL, "%s: kv_head_of without grouped queries", g->path);
        return;
    }
    int H = (int)json_integer_value(json_object_get(shape, "heads"));
    int Hkv = (int)json_integer_value(json_object_get(shape, "kv_heads"));
    ck_assert_msg(Hkv > 0 && (size_t)H * k->n == (size_t)Hkv * q->n, "%s: heads %d, kv_heads %d",
                  g->path, H, Hkv);
    ck_assert_int_eq(json_array_size(of), H);
    for (int h = 0; h < H; h++)
        ck_assert_int_eq(json_integer_value(json_array_get(of, (size_t)h)), h / (H / Hkv));
}

/* Every hook and the logits against PyTorch's. */
static void check_forward(const gt_file *g, const api_limits *lim, int B, const char *family) {
    char *body = forward_body(g, B);
    json_t *r = tapi_call(API_EP_MODEL, body, lim, 200);
    ck_assert_str_eq(json_string_value(json_object_get(r, "module")), family);
    double worst = gt_expect_flat("logits", json_object_get(r, "logits"), gt_find(g, "logits"), NULL, NULL);
    check_kv_groups(g, r);
    const json_t *cache = json_object_get(r, "cache");
    int hooks = 0;
    for (int i = 0; i < g->n; i++) {
        const char *name = g->t[i].name;
        if (strncmp(name, "blocks.", 7) && strncmp(name, "ln_final.", 9)) continue;
        const json_t *got = json_object_get(cache, name);
        ck_assert_msg(got != NULL, "%s: no %s in the reply's cache", g->path, name);
        double w = gt_expect_flat(name, got, &g->t[i], NULL, NULL);
        worst = w > worst ? w : worst;
        hooks++;
    }
    printf("%s (%s): logits and %d hooks within tolerance (largest difference %.3g)\n", g->path,
           family, hooks, worst);
    json_decref(r);
    free(body);
}

/* The server's greedy continuation of idx's first row against PyTorch's. */
static void check_generate(const gt_file *g, const api_limits *lim, int B) {
    const gt_tensor *want = gt_find(g, "generated");
    const char *n = gt_value(g, "generate");
    if (want == NULL || n == NULL) return;
    char *ids = ids_json(gt_find(g, "idx"), B, 0), body[8192];
    snprintf(body, sizeof body, "{\"model\":\"m\",\"idx\":%s,\"generate\":{\"max_new_tokens\":%s}}", ids, n);
    json_t *r = tapi_call(API_EP_MODEL, body, lim, 200);
    const json_t *idx = json_object_get(r, "idx");
    size_t T0 = gt_find(g, "idx")->n / (size_t)B;
    ck_assert_uint_eq(json_array_size(idx), T0 + want->n);
    const int32_t *w = want->data;
    for (size_t k = 0; k < want->n; k++)
        ck_assert_msg(json_integer_value(json_array_get(idx, T0 + k)) == w[k],
                      "%s: token %zu written %lld, PyTorch %d", g->path, k,
                      json_integer_value(json_array_get(idx, T0 + k)), w[k]);
    json_decref(r);
    free(ids);
}

/* GET /models says the weights are held as the folder's name ends: _f32,
 * _f16 or _bf16. */
static void check_weights_dtype(const api_models *models, const char *name) {
    api_limits lim = {.models = models};
    api_buf b = {0};
    ck_assert_int_eq(api_models_json(&lim, &b), 0);
    json_t *j = json_loadb(b.data, b.len, 0, NULL);
    api_buf_free(&b);
    const char *got = json_string_value(json_object_get(json_array_get(json_object_get(j, "models"), 0),
                                                        "weights_dtype"));
    const char *end = strrchr(name, '_');
    ck_assert_msg(got && end, "%s: weights_dtype %s", name, got ? got : "missing");
    char want[8] = "";
    for (size_t i = 0; end[i + 1] && i + 1 < sizeof want; i++)
        want[i] = (char)toupper((unsigned char)end[i + 1]), want[i + 1] = '\0';
    ck_assert_msg(strcmp(got, want) == 0, "%s: held as %s, not %s", name, got, want);
    json_decref(j);
}

START_TEST(family_case) {
    char dir[512], path[600], spec[600], why[512];
    snprintf(dir, sizeof dir, "%s/%s", DIR_ROOT, g_cases[_i]);
    snprintf(path, sizeof path, "%s/expected.gpt2", dir);
    snprintf(spec, sizeof spec, "m=%s", dir);
    gt_file g;
    gt_load(path, &g);
    const char *family = gt_value(&g, "family"), *batch = gt_value(&g, "B");
    ck_assert_msg(family != NULL, "%s: no family line", path);
    api_models *models = NULL;
    ck_assert_msg(api_models_load(&models, spec, why, sizeof why) == 0, "%s: %s", dir, why);
    check_weights_dtype(models, g_cases[_i]);
    api_limits lim = {.max_elements = 100000000, .models = models};
    int B = batch ? atoi(batch) : 1;
    check_forward(&g, &lim, B, family);
    check_generate(&g, &lim, B);
    api_models_free(models);
    gt_free(&g);
}
END_TEST

/* The ids of text as the folder's tokenizer gives them (flags: api_bpe_encode_ex's), as JSON. */
static char *encoded(const api_model *m, const char *text, unsigned flags, size_t *n) {
    int32_t *ids = NULL;
    ck_assert_int_eq(api_bpe_encode_ex(m->bpe, text, strlen(text), flags, &ids, n), 0);
    json_t *a = json_array();
    for (size_t i = 0; i < *n; i++) json_array_append_new(a, json_integer(ids[i]));
    char *s = json_dumps(a, JSON_COMPACT);
    json_decref(a);
    free(ids);
    return s;
}

static char *ids_of(const json_t *r, const char *key) {
    return json_dumps(json_object_get(r, key), JSON_COMPACT);
}

/* A folder with tokenizer.json (SmolLM2's and Gemma 3's shapes): "text" is
 * read as transformers' tokenizer(text) reads it, template included (Gemma's
 * <bos>; SmolLM2's adds nothing), and gives the logits of its ids;
 * "add_special": false leaves the template out; special tokens typed in the
 * text are found (parse_special) unless /tokenize says parse_special false;
 * /tokenize adds the template only with add_special, as llama.cpp's; a
 * special token past the model's rows (Gemma's <image_soft_token>) is refused
 * naming text. */
START_TEST(text_through_tokenizer_json) {
    static const struct {
        const char *dir, *special;
        int bos;
    } cases[] = {{"smollm2_tokenizer_bf16", "<|im_start|>", -1}, {"gemma3_tokenizer_f32", "<start_of_turn>", 2}};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        char spec[600], why[512], body[1024];
        snprintf(spec, sizeof spec, "m=%s/%s", DIR_ROOT, cases[c].dir);
        api_models *models = NULL;
        ck_assert_msg(api_models_load(&models, spec, why, sizeof why) == 0, "%s", why);
        const api_model *m = api__models_find(models, "m");
        ck_assert_ptr_nonnull(m->bpe);
        api_limits lim = {.max_elements = 100000000, .models = models};
        const char *text = "To be, or not to be: that is the question.";
        size_t n_with, n_without;
        char *with = encoded(m, text, API_BPE_ADD_SPECIAL, &n_with), *without = encoded(m, text, 0, &n_without);
        ck_assert_uint_eq(n_with, n_without + (cases[c].bos >= 0));
        if (cases[c].bos >= 0) ck_assert_int_eq(atoi(with + 1), cases[c].bos);
        snprintf(body, sizeof body, "{\"model\":\"m\",\"text\":\"%s\",\"return\":[\"idx\",\"logits\"]}", text);
        json_t *r = tapi_call(API_EP_MODEL, body, &lim, 200);
        char *got = ids_of(r, "idx");
        ck_assert_str_eq(got, with);
        snprintf(body, sizeof body, "{\"model\":\"m\",\"idx\":%s,\"return\":[\"logits\"]}", with);
        json_t *by_ids = tapi_call(API_EP_MODEL, body, &lim, 200);
        ck_assert(json_equal(json_object_get(r, "logits"), json_object_get(by_ids, "logits")));
        json_decref(by_ids), json_decref(r), free(got);
        snprintf(body, sizeof body, "{\"model\":\"m\",\"text\":\"%s\",\"add_special\":false,\"return\":[\"idx\"]}", text);
        r = tapi_call(API_EP_MODEL, body, &lim, 200);
        got = ids_of(r, "idx");
        ck_assert_str_eq(got, without);
        json_decref(r), free(got);
        /* /tokenize: llama.cpp's defaults (add_special false, parse_special true) */
        snprintf(body, sizeof body, "{\"model\":\"m\",\"content\":\"%s\"}", text);
        r = tapi_call(API_EP_TOKENIZE, body, &lim, 200);
        got = ids_of(r, "tokens");
        ck_assert_str_eq(got, without);
        json_decref(r), free(got);
        snprintf(body, sizeof body, "{\"model\":\"m\",\"content\":\"%s\",\"add_special\":true}", text);
        r = tapi_call(API_EP_TOKENIZE, body, &lim, 200);
        got = ids_of(r, "tokens");
        ck_assert_str_eq(got, with);
        json_decref(r), free(got);
        int32_t special = api_bpe_token_id(m->bpe, cases[c].special, strlen(cases[c].special));
        ck_assert_int_ge(special, 0);
        snprintf(body, sizeof body, "{\"model\":\"m\",\"content\":\"%sHi\"}", cases[c].special);
        r = tapi_call(API_EP_TOKENIZE, body, &lim, 200);
        ck_assert_int_eq(json_integer_value(json_array_get(json_object_get(r, "tokens"), 0)), special);
        json_decref(r);
        snprintf(body, sizeof body, "{\"model\":\"m\",\"content\":\"%sHi\",\"parse_special\":false}",
                 cases[c].special);
        r = tapi_call(API_EP_TOKENIZE, body, &lim, 200);
        ck_assert_int_ne(json_integer_value(json_array_get(json_object_get(r, "tokens"), 0)), special);
        json_decref(r);
        free(with), free(without);
        api_models_free(models);
    }
    /* Gemma's <image_soft_token> (1048) is a token of the tokenizer, not a row of the model */
    char spec[600], why[512];
    snprintf(spec, sizeof spec, "m=%s/gemma3_tokenizer_f32", DIR_ROOT);
    api_models *models = NULL;
    ck_assert_msg(api_models_load(&models, spec, why, sizeof why) == 0, "%s", why);
    api_limits lim = {.max_elements = 100000000, .models = models};
    json_t *r = tapi_call(API_EP_MODEL, "{\"model\":\"m\",\"text\":\"a <image_soft_token> b\"}", &lim, 400);
    ck_assert_str_eq(json_string_value(json_object_get(json_object_get(r, "error"), "field")), "text");
    json_decref(r);
    api_models_free(models);
}
END_TEST

/* Every family of issue 29 has at least one case, so that a missing golden
 * folder cannot make this program pass with nothing run. */
START_TEST(every_family_covered) {
    static const char *const families[] = {"LlamaForCausalLM", "MistralForCausalLM", "Qwen2ForCausalLM",
                                           "Qwen3ForCausalLM", "GPTNeoXForCausalLM", "Gemma3ForCausalLM"};
    gt_expect_families(DIR_ROOT, g_cases, g_n, families, sizeof families / sizeof families[0]);
}
END_TEST

static Suite *suite(void) {
    g_n = gt_list_cases(DIR_ROOT, g_cases, MAX_CASES);
    Suite *s = suite_create("api_families");
    TCase *tc = tcase_create("families");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, every_family_covered);
    tcase_add_test(tc, text_through_tokenizer_json);
    tcase_add_loop_test(tc, family_case, 0, g_n);
    suite_add_tcase(s, tc);
    return s;
}

const test_program TEST_PROGRAM = {.suites = {suite}};
