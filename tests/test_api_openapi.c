/* test_api_openapi.c - the OpenAPI document stays true: api/openapi-gen.py
 * run on this program's own tables reproduces the embedded document byte for
 * byte, every endpoint is there, every error code of the table (the only
 * codes api/ and server/ send) is listed, every field the parser accepts is
 * in its endpoint's request schema, and every example in the document is
 * answered with 200. */
#include <check.h>
#include <dirent.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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

/* Writes s into path; 0 or -1. */
static int write_file(const char *path, const char *s) {
    FILE *f = fopen(path, "w");
    if (f == NULL) return -1;
    int rc = fputs(s, f) < 0;
    return fclose(f) != 0 || rc ? -1 : 0;
}

/* The embedded document is what api/openapi-gen.py writes from this
 * program's own tables. */
START_TEST(test_embedded_equals_file) {
    char dir[] = "/tmp/test_api_openapi-XXXXXX", tables[64], out[64], gen[1024], cmd[1400];
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(tables, sizeof tables, "%s/tables.json", dir);
    snprintf(out, sizeof out, "%s/openapi.json", dir);
    char *t = api__tables_json();
    ck_assert_ptr_nonnull(t);
    ck_assert_int_eq(write_file(tables, t), 0);
    free(t);
    snprintf(cmd, sizeof cmd, "/usr/bin/python3 %s %s %s", tfile_path(gen, sizeof gen, "api/openapi-gen.py"),
             tables, out);
    ck_assert_msg(system(cmd) == 0, "failed: %s", cmd);
    size_t n = 0;
    char *s = tfile_read(out, &n);
    ck_assert_msg(s != NULL, "cannot read %s", out);
    const char *doc = api_openapi_json();
    ck_assert_msg(strlen(doc) == n && memcmp(doc, s, n) == 0,
                  "api/openapi-gen.py on these tables does not give the embedded document: "
                  "rebuild with make");
    free(s);
    unlink(tables);
    unlink(out);
    rmdir(dir);
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
    static const char *const gets[] = {"/healthz", "/readyz", "/metrics", "/version", "/models",
                                       "/openapi.json"};
    for (size_t i = 0; i < sizeof gets / sizeof gets[0]; i++)
        ck_assert_msg(json_object_get(json_object_get(paths, gets[i]), "get") != NULL, "no GET %s", gets[i]);
    /* the attention endpoints, POST /model/gpt2 and the six GETs */
    ck_assert_msg(post_of("/model/gpt2") != NULL, "no POST /model/gpt2");
    ck_assert_int_eq(json_object_size(paths), API_EP_COUNT + 7);
}
END_TEST

/* The server sends no error code of its own: every error body in server/
 * comes from the table (api_error_reply), except the one written without
 * allocating, whose code must be a row of it. */
static void check_server_codes(void) {
    char dir[1024], path[1024 + 256 + 2];
    DIR *d = opendir(tfile_path(dir, sizeof dir, "server"));
    ck_assert_msg(d != NULL, "cannot list %s", dir);
    int files = 0;
    for (struct dirent *ent; (ent = readdir(d)) != NULL;) {
        size_t len = strlen(ent->d_name);
        if (len < 3 || strcmp(ent->d_name + len - 2, ".c") != 0) continue;
        snprintf(path, sizeof path, "%s/%s", dir, ent->d_name);
        char *s = tfile_read(path, NULL);
        ck_assert_msg(s != NULL, "cannot read %s", path);
        files++;
        ck_assert_msg(strstr(s, "api_error_body(") == NULL,
                      "%s writes an error body with its own status and code: use api_error_reply", path);
        const char *key = "\\\"code\\\":\\\"";   /* \"code\":\" in a C string literal */
        for (const char *p = strstr(s, key); p; p = strstr(p + 1, key)) {
            const char *c = p + strlen(key);
            int found = 0;
            for (int i = 0; i < API_E_COUNT; i++) {
                const char *code = api_error_get((api_error)i)->code;
                size_t n = strlen(code);
                found |= strncmp(c, code, n) == 0 && c[n] == '\\';
            }
            ck_assert_msg(found, "%s sends the code %.24s, which is not in the error table", path, c);
        }
        free(s);
    }
    closedir(d);
    ck_assert_int_ge(files, 5);
}

START_TEST(test_error_schema) {
    json_t *err = json_object_get(json_object_get(json_object_get(g_doc, "components"), "schemas"), "Error");
    json_t *props = json_object_get(json_object_get(json_object_get(err, "properties"), "error"), "properties");
    static const char *const keys[] = {"status", "code", "message", "field"};
    for (int i = 0; i < 4; i++) ck_assert_ptr_nonnull(json_object_get(props, keys[i]));
    /* the codes and statuses are the error table's, in its order */
    json_t *codes = json_object_get(json_object_get(props, "code"), "enum");
    json_t *statuses = json_object_get(json_object_get(props, "status"), "enum");
    ck_assert_int_eq(json_array_size(codes), API_E_COUNT);
    for (int i = 0; i < API_E_COUNT; i++) {
        const api_error_info *row = api_error_get((api_error)i);
        ck_assert_str_eq(json_string_value(json_array_get(codes, (size_t)i)), row->code);
        int found = 0;
        for (size_t k = 0; k < json_array_size(statuses); k++)
            found |= json_integer_value(json_array_get(statuses, k)) == row->status;
        ck_assert_msg(found, "status %d of %s is not in the document", row->status, row->code);
    }
    ck_assert_ptr_null(api_error_get(API_E_COUNT));
    check_server_codes();
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
        ck_assert_str_eq(json_string_value(json_array_get(names, (size_t)k)), api__outputs[k].name);
        ck_assert_msg(json_object_get(json_object_get(resp, "properties"), api__outputs[k].name) != NULL,
                      "the response schema lacks %s", api__outputs[k].name);
    }
}
END_TEST

/* The output table's shape rules agree with the plan: the axes of each
 * output hold exactly the elements core writes (every output asked for). */
static void check_output_shapes(api_endpoint ep, json_t *body) {
    json_t *all = json_array();
    for (int k = 0; k < API_OUT_COUNT; k++) json_array_append_new(all, json_string(api__outputs[k].name));
    for (int avg = 0; avg < 2; avg++) {
        json_t *rqj = json_deep_copy(body);
        json_object_set(rqj, "return", all);
        json_object_set_new(rqj, "average_attn_weights", json_boolean(avg));
        api_request rq;
        api_err e;
        attn_plan plan;
        attn_error ae;
        ck_assert_msg(api__request_parse(ep, rqj, NULL, &rq, &e) == 0, "%s", e.message);
        ck_assert_int_eq(attn_plan_make(&rq.cfg, &plan, &ae), ATTN_OK);
        for (int k = 0; k < API_OUT_COUNT; k++) {
            api_out_tensor t;
            api__out_tensor((api_out)k, &rq, &plan, &t);
            if (t.slot == API_NO_SLOT) continue;
            size_t axes = (size_t)t.B * (size_t)(t.H ? t.H : 1) * (size_t)t.rows * (size_t)t.cols;
            ck_assert_msg(axes == t.count && t.count > 0, "%s: %s has %zu elements in its axes, %zu in the plan",
                          api_endpoint_path(ep), api__outputs[k].name, axes, t.count);
        }
        api__request_free(&rq);
        json_decref(rqj);
    }
    json_decref(all);
}

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
            check_output_shapes((api_endpoint)e, json_object_get(v, "value"));
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
