/* test_api_model_golden.c - POST /model/gpt2 against PyTorch, both model
 * families over the API: every file of tests/golden/api_model/ (written by
 * tests/golden/generate_api_model.py with the book's chapter-4 GPTModel and
 * seed 003's GPT2) is a request as a client sends it — "module", the config
 * in the family's names, init.seed or a random state_dict (buffers left out
 * or given), idx [T] or [B][T], training with or without dropout_seed — and
 * PyTorch's results. Each request is sent through api_handle with every
 * output and compared:
 *
 *   logits, attn_weights, hidden_states   |got - want| <= 1e-4 + 1e-3 |want|
 *   dropout_masks                         bit for bit, every call by name
 *   params                                bit for bit (init.seed: the
 *                                         constructor's draws; state_dict:
 *                                         what was sent, buffers included)
 *   module, config                        the family's name and the
 *                                         request's config keys
 *
 * A dropout draw out of place changes whole rows of the masks; an init draw
 * out of place, every parameter after it. */
#include <check.h>
#include <dirent.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "tests/support/check_main.h"
#include "tests/support/files.h"
#include "support/api_call.h"

#include <cblas.h> /* openblas_set_num_threads */

#define ATOL 1e-4
#define RTOL 1e-3
#define MAX_CASES 64

static char case_names[MAX_CASES][128];
static int n_cases;

/* got {"shape", "data"} (output_format flat) against want {"shape", "data"}:
 * the shapes equal, the values within the tolerance or (exact) bit for bit. */
static void compare(const json_t *got, const json_t *want, const char *what, int exact) {
    ck_assert_msg(got != NULL, "%s: not in the reply", what);
    ck_assert_msg(json_equal(json_object_get(got, "shape"), json_object_get(want, "shape")),
                  "%s: shape differs", what);
    const json_t *g = json_object_get(got, "data"), *w = json_object_get(want, "data");
    ck_assert_uint_eq(json_array_size(g), json_array_size(w));
    for (size_t i = 0; i < json_array_size(w); i++) {
        float a = (float)json_number_value(json_array_get(g, i));
        float b = (float)json_number_value(json_array_get(w, i));
        int ok = exact ? memcmp(&a, &b, sizeof a) == 0
                       : fabs((double)a - (double)b) <= ATOL + RTOL * fabs((double)b);
        ck_assert_msg(ok, "%s[%zu]: %.9g, PyTorch %.9g", what, i, (double)a, (double)b);
    }
}

/* Every tensor of the group want, by name, in got. */
static void compare_group(const json_t *got, const json_t *want, const char *what) {
    ck_assert_msg(json_is_object(got), "%s: not an object in the reply", what);
    ck_assert_uint_eq(json_object_size(got), json_object_size(want));
    const char *key;
    const json_t *v;
    json_object_foreach((json_t *)want, key, v) {
        char name[160];
        snprintf(name, sizeof name, "%s.%s", what, key);
        compare(json_object_get(got, key), v, name, 1);
    }
}

/* The reply's config: the request's config fields and values, nothing else
 * but GPT2's activation. */
static void check_config(const json_t *cfg, const json_t *req) {
    const char *key;
    const json_t *v;
    size_t n = 0;
    json_object_foreach((json_t *)cfg, key, v) {
        if (strcmp(key, "activation") == 0) continue;
        n++;
        const json_t *r = json_object_get(req, key);
        int same = json_is_number(v) ? json_is_number(r) && json_number_value(v) == json_number_value(r)
                                     : json_equal(v, r);
        ck_assert_msg(same, "config.%s differs from the request", key);
    }
    ck_assert_uint_ge(n, 6);
}

START_TEST(golden_case) {
    openblas_set_num_threads(1);
    char rel[200], path[512];
    snprintf(rel, sizeof rel, "tests/golden/api_model/%s", case_names[_i]);
    json_error_t jerr;
    json_t *c = json_load_file(tfile_path(path, sizeof path, rel), 0, &jerr);
    ck_assert_msg(c != NULL, "%s: %s", rel, jerr.text);
    json_t *req = json_deep_copy(json_object_get(c, "request")), *want = json_object_get(c, "expect");
    json_object_set_new(req, "return", json_pack("[sssss]", "logits", "attn_weights", "hidden_states",
                                                 "dropout_masks", "params"));
    json_object_set_new(req, "output_format", json_string("flat"));
    char *body = json_dumps(req, JSON_COMPACT);
    json_t *j = tapi_call(API_EP_MODEL_GPT2, body, NULL, 200);
    ck_assert_str_eq(json_string_value(json_object_get(j, "module")),
                     json_string_value(json_object_get(req, "module")));
    check_config(json_object_get(j, "config"), req);
    compare(json_object_get(j, "logits"), json_object_get(want, "logits"), "logits", 0);
    if (json_array_size(json_object_get(json_object_get(want, "attn_weights"), "data")))
        compare(json_object_get(j, "attn_weights"), json_object_get(want, "attn_weights"), "attn_weights", 0);
    compare(json_object_get(j, "hidden_states"), json_object_get(want, "hidden_states"), "hidden_states", 0);
    compare_group(json_object_get(j, "dropout_masks"), json_object_get(want, "dropout_masks"), "dropout_masks");
    compare_group(json_object_get(j, "params"), json_object_get(want, "params"), "params");
    json_decref(j);
    free(body);
    json_decref(req);
    json_decref(c);
}
END_TEST

/* Both families, init and state_dict, training and eval, [T] and [B][T]:
 * the generator's mix is there (a case set that lost one fails). */
START_TEST(golden_coverage) {
    int gptmodel = 0, gpt2 = 0, sd = 0, train = 0;
    for (int i = 0; i < n_cases; i++) {
        gptmodel += strncmp(case_names[i], "gptmodel_", 9) == 0;
        gpt2 += strncmp(case_names[i], "gpt2_", 5) == 0;
        sd += strstr(case_names[i], "state_dict") != NULL;
        train += strstr(case_names[i], "_train") != NULL;
    }
    ck_assert_int_ge(gptmodel, 8);
    ck_assert_int_ge(gpt2, 3);
    ck_assert_int_ge(sd, 4);
    ck_assert_int_ge(train, 6);
}
END_TEST

static int by_name(const void *a, const void *b) { return strcmp(a, b); }

static Suite *golden_suite(void) {
    char dir[512];
    DIR *d = opendir(tfile_path(dir, sizeof dir, "tests/golden/api_model"));
    for (struct dirent *e; d && (e = readdir(d)) && n_cases < MAX_CASES;) {
        size_t n = strlen(e->d_name);
        if (n > 5 && n < sizeof case_names[0] && strcmp(e->d_name + n - 5, ".json") == 0)
            memcpy(case_names[n_cases++], e->d_name, n + 1);
    }
    if (d) closedir(d);
    qsort(case_names, (size_t)n_cases, sizeof case_names[0], by_name);
    Suite *s = suite_create("api_model_golden");
    TCase *tc = tcase_create("pytorch");
    tcase_set_timeout(tc, 30);
    tcase_add_loop_test(tc, golden_case, 0, n_cases);
    tcase_add_test(tc, golden_coverage);
    suite_add_tcase(s, tc);
    return s;
}

const test_program TEST_PROGRAM = {.suites = {golden_suite}};
