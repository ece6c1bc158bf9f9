/* test_api_openapi.c - the OpenAPI document stays true: the embedded copy is
 * api/openapi.json byte for byte, every endpoint is there, every field the
 * parser accepts is in its endpoint's request schema, and every example in
 * the document is answered with 200. */
#include <check.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api_internal.h"
#include "support/files.h"

static json_t *g_doc;

static void load_doc(void) {
    json_error_t je;
    g_doc = json_loads(api_openapi_json(), 0, &je);
    ck_assert_msg(g_doc != NULL, "the embedded document is not JSON: %s (line %d)", je.text, je.line);
}

static void free_doc(void) {
    json_decref(g_doc);
    g_doc = NULL;
}

/* follows one {"$ref": "#/components/schemas/X"} */
static json_t *deref(json_t *s) {
    const char *ref = json_string_value(json_object_get(s, "$ref"));
    if (ref == NULL) return s;
    const char *prefix = "#/components/schemas/";
    ck_assert_msg(strncmp(ref, prefix, strlen(prefix)) == 0, "unexpected $ref %s", ref);
    json_t *t = json_object_get(json_object_get(json_object_get(g_doc, "components"), "schemas"),
                                ref + strlen(prefix));
    ck_assert_msg(t != NULL, "dangling $ref %s", ref);
    return t;
}

static json_t *post_of(const char *path) {
    json_t *p = json_object_get(json_object_get(g_doc, "paths"), path);
    ck_assert_msg(p != NULL, "no path %s", path);
    json_t *post = json_object_get(p, "post");
    ck_assert_msg(post != NULL, "no POST on %s", path);
    return post;
}

static json_t *request_schema(const char *path) {
    json_t *rb = json_object_get(post_of(path), "requestBody");
    json_t *s = json_object_get(json_object_get(json_object_get(rb, "content"), "application/json"), "schema");
    ck_assert_ptr_nonnull(s);
    return deref(s);
}

START_TEST(test_embedded_equals_file) {
    char path[1024];
    size_t n = 0;
    char *s = tfile_read(tfile_path(path, sizeof path, "api/openapi.json"), &n);
    ck_assert_msg(s != NULL, "cannot read %s", path);
    const char *doc = api_openapi_json();
    ck_assert_msg(strlen(doc) == n && memcmp(doc, s, n) == 0,
                  "api/openapi.c and api/openapi.json differ: run python3 api/openapi-gen.py");
    free(s);
}
END_TEST

START_TEST(test_every_endpoint) {
    const char *v = json_string_value(json_object_get(g_doc, "openapi"));
    ck_assert_ptr_nonnull(v);
    ck_assert_int_eq(v[0], '3');
    json_t *paths = json_object_get(g_doc, "paths");
    for (int e = 0; e < API_EP_COUNT; e++) {
        json_t *post = post_of(api_endpoint_path((api_endpoint)e));
        json_t *resp = json_object_get(post, "responses");
        static const char *const statuses[] = {"200", "400", "405", "413", "500", "503"};
        for (size_t i = 0; i < sizeof statuses / sizeof statuses[0]; i++)
            ck_assert_msg(json_object_get(resp, statuses[i]) != NULL, "%s lacks %s",
                          api_endpoint_path((api_endpoint)e), statuses[i]);
        json_t *err = json_object_get(json_object_get(json_object_get(resp, "400"), "content"), "application/json");
        ck_assert_ptr_eq(deref(json_object_get(err, "schema")),
                         json_object_get(json_object_get(json_object_get(g_doc, "components"), "schemas"), "Error"));
    }
    static const char *const gets[] = {"/healthz", "/readyz", "/metrics", "/version", "/openapi.json"};
    for (size_t i = 0; i < sizeof gets / sizeof gets[0]; i++)
        ck_assert_msg(json_object_get(json_object_get(paths, gets[i]), "get") != NULL, "no GET %s", gets[i]);
    ck_assert_int_eq(json_object_size(paths), API_EP_COUNT + 5);
}
END_TEST

START_TEST(test_error_schema) {
    json_t *err = json_object_get(json_object_get(json_object_get(g_doc, "components"), "schemas"), "Error");
    json_t *props = json_object_get(json_object_get(json_object_get(err, "properties"), "error"), "properties");
    static const char *const keys[] = {"status", "code", "message", "field"};
    for (int i = 0; i < 4; i++) ck_assert_ptr_nonnull(json_object_get(props, keys[i]));
    /* every code api/ emits is listed */
    json_t *codes = json_object_get(json_object_get(props, "code"), "enum");
    static const char *const ours[] = {"invalid_json", "missing_field", "unknown_field", "invalid_type",
                                       "invalid_argument", "invalid_shape", "non_finite", "too_large",
                                       "out_of_memory", "internal_error", "not_found"};
    for (size_t i = 0; i < sizeof ours / sizeof ours[0]; i++) {
        int found = 0;
        for (size_t k = 0; k < json_array_size(codes); k++)
            found |= strcmp(json_string_value(json_array_get(codes, k)), ours[i]) == 0;
        ck_assert_msg(found, "error code %s is not in the document", ours[i]);
    }
}
END_TEST

START_TEST(test_every_parser_field_documented) {
    for (int e = 0; e < API_EP_COUNT; e++) {
        const char *path = api_endpoint_path((api_endpoint)e);
        json_t *props = json_object_get(request_schema(path), "properties");
        ck_assert_ptr_nonnull(props);
        attn_module mods[ATTN_MODULE_COUNT];
        int n = api__endpoint_modules((api_endpoint)e, mods);
        json_t *menum = json_object_get(json_object_get(props, "module"), "enum");
        for (int m = 0; m < n; m++) {
            int listed = 0;
            for (size_t k = 0; k < json_array_size(menum); k++)
                listed |= strcmp(json_string_value(json_array_get(menum, k)), attn_module_name(mods[m])) == 0;
            ck_assert_msg(listed, "%s: module %s not in the enum", path, attn_module_name(mods[m]));
            for (const char *const *f = api__module_fields(mods[m]); *f; f++) {
                json_t *p = json_object_get(props, *f);
                ck_assert_msg(p != NULL, "%s: field %s (of %s) is not documented", path, *f,
                              attn_module_name(mods[m]));
                ck_assert_msg(json_is_string(json_object_get(p, "description")),
                              "%s: field %s has no description", path, *f);
            }
        }
        /* and nothing is documented that no module of the endpoint accepts */
        const char *key;
        json_t *v;
        json_object_foreach(props, key, v) {
            int used = 0;
            for (int m = 0; m < n; m++) used |= api__has_field(api__module_fields(mods[m]), key);
            ck_assert_msg(used, "%s documents %s, which the parser rejects", path, key);
        }
    }
}
END_TEST

START_TEST(test_return_names_documented) {
    json_t *items = json_object_get(json_object_get(request_schema("/attention/multihead"), "properties"), "return");
    json_t *names = json_object_get(json_object_get(items, "items"), "enum");
    ck_assert_int_eq(json_array_size(names), API_OUT_COUNT);
    json_t *resp = deref(json_object_get(json_object_get(json_object_get(
        json_object_get(json_object_get(post_of("/attention/multihead"), "responses"), "200"), "content"),
        "application/json"), "schema"));
    for (int k = 0; k < API_OUT_COUNT; k++) {
        ck_assert_str_eq(json_string_value(json_array_get(names, (size_t)k)), api__out_names[k]);
        ck_assert_msg(json_object_get(json_object_get(resp, "properties"), api__out_names[k]) != NULL,
                      "the response schema lacks %s", api__out_names[k]);
    }
}
END_TEST

START_TEST(test_document_examples_answered) {
    int total = 0;
    for (int e = 0; e < API_EP_COUNT; e++) {
        const char *path = api_endpoint_path((api_endpoint)e);
        json_t *rb = json_object_get(post_of(path), "requestBody");
        json_t *ex = json_object_get(json_object_get(json_object_get(rb, "content"), "application/json"), "examples");
        ck_assert_msg(json_object_size(ex) > 0, "%s has no example", path);
        const char *name;
        json_t *v;
        json_object_foreach(ex, name, v) {
            char *body = json_dumps(json_object_get(v, "value"), JSON_COMPACT);
            api_limits lim = {.max_elements = 10000000};
            api_reply r;
            int st = api_handle((api_endpoint)e, body, strlen(body), &lim, &r);
            ck_assert_msg(st == 200, "%s example %s: %d %.300s", path, name, st, r.body.data);
            api_buf_free(&r.body);
            free(body);
            total++;
        }
    }
    ck_assert_int_ge(total, 5);
}
END_TEST

int main(void) {
    Suite *s = suite_create("api_openapi");
    TCase *tc = tcase_create("openapi");
    tcase_add_checked_fixture(tc, load_doc, free_doc);
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, test_embedded_equals_file);
    tcase_add_test(tc, test_every_endpoint);
    tcase_add_test(tc, test_error_schema);
    tcase_add_test(tc, test_every_parser_field_documented);
    tcase_add_test(tc, test_return_names_documented);
    tcase_add_test(tc, test_document_examples_answered);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
