/* test_api_weights.c - how loaded models hold their weights
 * (api_models_load_as, --weights-dtype), on the families' Hugging Face
 * folders (tests/golden/families/) through POST /model (api_handle):
 *
 *   keep against f32 on every F16 and BF16 folder: GET /models says F16 or
 *     BF16 (not lossy) and about half the bytes; the forward's logits and
 *     hidden states are the same text (the same bits: the dense products
 *     widen each block of weights for the float32 sgemm); a greedy
 *     generation writes the same tokens with log-probabilities within 1e-5
 *     (a step's few-row kernels sum in their own order); "params" is the
 *     same text (widened for the reply; f32 widens the file exactly);
 *   bf16 of every F32 folder: GET /models says BF16 and lossy; the logits
 *     differ from float32's (it is rounded), but within 2e-2 of the largest
 *     |logit| of each row and with a mean KL divergence under 1e-3 (BF16
 *     keeps 8 significant bits: each weight within 2^-9 of itself);
 *   the mode's names, bad ones refused.
 * Run from the repository root.
 */
#include <check.h>
#include <dirent.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "tests/support/api_call.h"
#include "tests/support/check_main.h"

#define DIR_ROOT "tests/golden/families"
#define MAX_CASES 32

static char g_half[MAX_CASES][256], g_f32[MAX_CASES][256];
static int g_n_half, g_n_f32;

static int cmp_name(const void *a, const void *b) { return strcmp(a, b); }

static int ends_with(const char *s, const char *end) {
    size_t n = strlen(s), k = strlen(end);
    return n >= k && strcmp(s + n - k, end) == 0;
}

/* The folders, by the dtype their names end with, sorted. */
static void list_cases(void) {
    DIR *d = opendir(DIR_ROOT);
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.') continue;
        if ((ends_with(e->d_name, "_f16") || ends_with(e->d_name, "_bf16")) && g_n_half < MAX_CASES)
            snprintf(g_half[g_n_half++], sizeof g_half[0], "%s", e->d_name);
        else if (ends_with(e->d_name, "_f32") && g_n_f32 < MAX_CASES)
            snprintf(g_f32[g_n_f32++], sizeof g_f32[0], "%s", e->d_name);
    }
    if (d) closedir(d);
    qsort(g_half, (size_t)g_n_half, sizeof g_half[0], cmp_name);
    qsort(g_f32, (size_t)g_n_f32, sizeof g_f32[0], cmp_name);
}

static api_models *load(const char *folder, api_weights_mode mode) {
    char spec[600], why[512];
    api_models *m = NULL;
    snprintf(spec, sizeof spec, "m=%s/%s", DIR_ROOT, folder);
    ck_assert_msg(api_models_load_as(&m, spec, mode, why, sizeof why) == 0, "%s: %s", spec, why);
    return m;
}

/* GET /models' entry of the one model. */
static json_t *listing(const api_models *models) {
    api_limits lim = {.models = models};
    api_buf b = {0};
    ck_assert_int_eq(api_models_json(&lim, &b), 0);
    json_t *j = json_loadb(b.data, b.len, 0, NULL);
    ck_assert_ptr_nonnull(j);
    api_buf_free(&b);
    json_t *m = json_incref(json_array_get(json_object_get(j, "models"), 0));
    json_decref(j);
    return m;
}

static void expect_listing(const api_models *models, const char *dtype, int lossy, json_int_t *bytes) {
    json_t *m = listing(models);
    ck_assert_str_eq(json_string_value(json_object_get(m, "weights_dtype")), dtype);
    ck_assert(json_is_boolean(json_object_get(m, "weights_lossy")));
    ck_assert_int_eq(json_is_true(json_object_get(m, "weights_lossy")), lossy);
    *bytes = json_integer_value(json_object_get(m, "weights_bytes"));
    ck_assert(*bytes > 0);
    json_decref(m);
}

/* The reply of body on models, as its text and parsed. */
static json_t *ask(const api_models *models, const char *body, char **text) {
    api_limits lim = {.max_elements = 100000000, .models = models};
    tapi_reply r = tapi_handle(API_EP_MODEL, body, &lim);
    ck_assert_msg(r.status == 200, "status %d: %.300s", r.status, r.text);
    json_t *j = json_incref(r.j);
    if (text) *text = strdup(r.text);
    tapi_reply_free(&r);
    return j;
}

static const char *FORWARD = "{\"model\":\"m\",\"idx\":[[3,1,4,1,5,9,2,6],[5,3,5,8,9,7,9,3]],"
                             "\"return\":[\"logits\",\"hidden_states\"],\"output_format\":\"flat\"}";
static const char *GENERATE = "{\"model\":\"m\",\"idx\":[2,7,1,8],\"generate\":{\"max_new_tokens\":12}}";

/* Two generations' tokens equal, their log-probabilities within tol. */
static void expect_same_generation(const json_t *a, const json_t *b, double tol) {
    ck_assert(json_equal(json_object_get(a, "idx"), json_object_get(b, "idx")));
    const json_t *la = json_object_get(json_object_get(a, "generation"), "steps");
    const json_t *lb = json_object_get(json_object_get(b, "generation"), "steps");
    ck_assert_msg(json_array_size(la) == 12 && json_array_size(lb) == 12, "12 steps each, got %zu and %zu",
                  json_array_size(la), json_array_size(lb));
    for (size_t i = 0; i < 12; i++) {
        double x = json_number_value(json_object_get(json_array_get(la, i), "logprob"));
        double y = json_number_value(json_object_get(json_array_get(lb, i), "logprob"));
        ck_assert_msg(fabs(x - y) <= tol, "logprob %zu: %.9g and %.9g", i, x, y);
    }
}

START_TEST(keep_equals_f32) {
    const char *folder = g_half[_i];
    api_models *keep = load(folder, API_WEIGHTS_KEEP), *f32 = load(folder, API_WEIGHTS_F32);
    json_int_t kb, fb;
    expect_listing(keep, ends_with(folder, "_bf16") ? "BF16" : "F16", 0, &kb);
    expect_listing(f32, "F32", 0, &fb);
    ck_assert_msg(kb * 10 < fb * 6, "%s: %lld bytes kept, %lld as float32", folder, kb, fb);
    char *a, *b;
    json_decref(ask(keep, FORWARD, &a));
    json_decref(ask(f32, FORWARD, &b));
    ck_assert_msg(strcmp(a, b) == 0, "%s: the forward differs from float32's", folder);
    free(a), free(b);
    json_t *ga = ask(keep, GENERATE, NULL), *gb = ask(f32, GENERATE, NULL);
    expect_same_generation(ga, gb, 1e-5);
    json_decref(ga), json_decref(gb);
    const char *params = "{\"model\":\"m\",\"idx\":[1],\"return\":[\"params\"],\"output_format\":\"flat\"}";
    json_decref(ask(keep, params, &a));
    json_decref(ask(f32, params, &b));
    ck_assert_msg(strcmp(a, b) == 0, "%s: params differ", folder);
    free(a), free(b);
    printf("%s: kept %s in %lld bytes (float32: %lld), the same logits\n", folder,
           ends_with(folder, "_bf16") ? "BF16" : "F16", kb, fb);
    api_models_free(keep), api_models_free(f32);
}
END_TEST

/* Each row of V logits: largest |a - b| over the row's largest |a|, and
 * KL(softmax a || softmax b). */
static void row_diff(const double *a, const double *b, int V, double *rel, double *kl) {
    double scale = 0.0, d = 0.0, ma = a[0], mb = b[0], za = 0.0, zb = 0.0;
    for (int v = 0; v < V; v++) {
        scale = fmax(scale, fabs(a[v])), d = fmax(d, fabs(a[v] - b[v]));
        ma = fmax(ma, a[v]), mb = fmax(mb, b[v]);
    }
    for (int v = 0; v < V; v++) za += exp(a[v] - ma), zb += exp(b[v] - mb);
    *kl = 0.0;
    for (int v = 0; v < V; v++) {
        double la = a[v] - ma - log(za), lb = b[v] - mb - log(zb);
        *kl += exp(la) * (la - lb);
    }
    *rel = d / scale;
}

static double *flat_values(const json_t *t, size_t *n) {
    const json_t *data = json_object_get(t, "data");
    *n = json_array_size(data);
    double *x = malloc(*n * sizeof *x);
    for (size_t i = 0; i < *n; i++) x[i] = json_number_value(json_array_get(data, i));
    return x;
}

START_TEST(bf16_of_f32_is_close) {
    const char *folder = g_f32[_i];
    api_models *bf = load(folder, API_WEIGHTS_BF16), *f32 = load(folder, API_WEIGHTS_F32);
    json_int_t bb, fb;
    expect_listing(bf, "BF16", 1, &bb);
    expect_listing(f32, "F32", 0, &fb);
    ck_assert(bb * 10 < fb * 6);
    json_t *a = ask(bf, FORWARD, NULL), *b = ask(f32, FORWARD, NULL);
    size_t n, m;
    double *x = flat_values(json_object_get(a, "logits"), &n), *y = flat_values(json_object_get(b, "logits"), &m);
    const json_t *shape = json_object_get(json_object_get(b, "logits"), "shape");
    int V = (int)json_integer_value(json_array_get(shape, json_array_size(shape) - 1));
    ck_assert(n == m && V > 0 && n % (size_t)V == 0);
    double worst = 0.0, kl_sum = 0.0, same = 1.0;
    for (size_t r = 0; r < n / (size_t)V; r++) {
        double rel, kl;
        row_diff(y + r * V, x + r * V, V, &rel, &kl);
        worst = fmax(worst, rel), kl_sum += kl;
    }
    for (size_t i = 0; i < n; i++) same = same && x[i] == y[i];
    double kl = kl_sum / (double)(n / (size_t)V);
    ck_assert_msg(!same, "%s: bf16 gave float32's logits exactly: not rounded?", folder);
    ck_assert_msg(worst <= 2e-2, "%s: bf16 logits off by %g of the row's largest", folder, worst);
    ck_assert_msg(kl <= 1e-3, "%s: mean KL %g", folder, kl);
    printf("%s as BF16: logits within %.2g of each row's largest, mean KL %.2g nats\n", folder, worst, kl);
    free(x), free(y);
    json_decref(a), json_decref(b);
    api_models_free(bf), api_models_free(f32);
}
END_TEST

START_TEST(mode_names) {
    api_weights_mode m = API_WEIGHTS_F32;
    ck_assert_int_eq(api_weights_mode_parse("keep", &m), 0);
    ck_assert_int_eq(m, API_WEIGHTS_KEEP);
    ck_assert_int_eq(api_weights_mode_parse("F32", &m), 0);
    ck_assert_int_eq(m, API_WEIGHTS_F32);
    ck_assert_int_eq(api_weights_mode_parse("bf16", &m), 0);
    ck_assert_int_eq(m, API_WEIGHTS_BF16);
    const char *bad[] = {"", "f16", "fp32", "bf16 ", "half", NULL};
    for (int i = 0; bad[i]; i++) ck_assert_int_eq(api_weights_mode_parse(bad[i], &m), -1);
    ck_assert_int_eq(api_weights_mode_parse(NULL, &m), -1);
    /* every folder of each kind is there: a missing golden folder cannot pass */
    ck_assert_int_ge(g_n_half, 6);
    ck_assert_int_ge(g_n_f32, 5);
}
END_TEST

static Suite *suite(void) {
    list_cases();
    Suite *s = suite_create("api_weights");
    const TTest *tests[] = {mode_names, NULL};
    TCase *tc = tcase_with(s, "weights", 60, tests);
    tcase_add_loop_test(tc, keep_equals_f32, 0, g_n_half);
    tcase_add_loop_test(tc, bf16_of_f32_is_close, 0, g_n_f32);
    return s;
}

const test_program TEST_PROGRAM = {.suites = {suite}};
