/* test_api_openapi.c - the OpenAPI document stays true: api/openapi/gen.py
 * run on this program's own tables reproduces the embedded document byte for
 * byte, every endpoint is there, every error code of the table (the only
 * codes api/ and server/ send) is listed, every field the parser accepts is
 * in its endpoint's request schema, and every example in the document is
 * answered with 200.
 *
 * And it stays usable by client generators (tests/test_api_clients.c runs
 * them): no schema refers to itself, no `default` outside the request bodies
 * (openapi-typescript makes such a property required), every request of
 * README.md and api/examples/ matches its endpoint's request schema, and the
 * reply tensors are plain numbers of rank 2 to 4 (null only in
 * masked_scores). */
#include <check.h>
#include <dirent.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api/model/model.h"
#include "api/module/module.h"
#include "api/numbers/numbers.h"
#include "api/openapi/openapi.h"
#include "support/check_main.h"
#include "support/files.h"
#include "support/api_requests.h"
#include "support/jschema.h"
#include "support/openapi_doc.h"

static json_t *g_doc;

static void load_doc(void) { g_doc = openapi_doc(); }

static void free_doc(void) {
    json_decref(g_doc);
    g_doc = NULL;
}

/* follows one {"$ref": "#/components/..."} */
static json_t *deref(json_t *s) {
    const char *ref = json_string_value(json_object_get(s, "$ref"));
    if (ref == NULL) return s;
    ck_assert_msg(strncmp(ref, "#/components/", 13) == 0, "unexpected $ref %s", ref);
    json_t *t = (json_t *)jschema_resolve(g_doc, ref);
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

/* The application/json content of path's request body. */
static json_t *request_content(const char *path) {
    json_t *rb = deref(json_object_get(post_of(path), "requestBody"));
    json_t *c = json_object_get(json_object_get(rb, "content"), "application/json");
    ck_assert_msg(c != NULL, "%s takes no JSON body", path);
    return c;
}

static json_t *request_schema(const char *path) {
    json_t *s = json_object_get(request_content(path), "schema");
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

/* The embedded document is what api/openapi/gen.py writes from this
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
    snprintf(cmd, sizeof cmd, "/usr/bin/python3 %s %s %s", tfile_path(gen, sizeof gen, "api/openapi/gen.py"),
             tables, out);
    ck_assert_msg(system(cmd) == 0, "failed: %s", cmd);
    size_t n = 0;
    char *s = tfile_read(out, &n);
    ck_assert_msg(s != NULL, "cannot read %s", out);
    const char *doc = api_openapi_json();
    ck_assert_msg(strlen(doc) == n && memcmp(doc, s, n) == 0,
                  "api/openapi/gen.py on these tables does not give the embedded document: "
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
        ck_assert_str_eq(api_endpoint_get((api_endpoint)e)->method, "POST");
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
                                       "/openapi.json", "/", "/v1/models"};
    for (size_t i = 0; i < sizeof gets / sizeof gets[0]; i++)
        ck_assert_msg(json_object_get(json_object_get(paths, gets[i]), "get") != NULL, "no GET %s", gets[i]);
    /* the endpoints of the table (POST) and the eight GETs */
    ck_assert_msg(post_of("/model/gpt2") != NULL, "no POST /model/gpt2");
    ck_assert_int_eq(json_object_size(paths), API_EP_COUNT + 8);
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
        if (api_endpoint_get((api_endpoint)e)->kind != API_KIND_MODULE) continue;
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
        if (api_endpoint_get((api_endpoint)e)->kind != API_KIND_MODULE) continue;
        const char *path = api_endpoint_path((api_endpoint)e);
        json_t *ex = json_object_get(request_content(path), "examples");
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

/* ==== For client generators ============================================ */

/* 1 if s reaches one of the schemas named in path (depth names: the
 * schemas on the way to s) through $refs, with that name in *cycle. */
static int has_cycle(const json_t *s, const char **path, int depth, const char **cycle) {
    if (json_is_object(s)) {
        const char *ref = json_string_value(json_object_get(s, "$ref"));
        if (ref) {
            const char *name = strrchr(ref, '/') + 1;
            for (int i = 0; i < depth; i++)
                if (strcmp(path[i], name) == 0) {
                    *cycle = path[i];
                    return 1;
                }
            const json_t *t = jschema_resolve(g_doc, ref);
            ck_assert_msg(t != NULL && depth < 32, "dangling $ref %s", ref);
            path[depth] = name;
            if (has_cycle(t, path, depth + 1, cycle)) return 1;
        }
        const char *k;
        json_t *v;
        json_object_foreach((json_t *)s, k, v) if (has_cycle(v, path, depth, cycle)) return 1;
    } else if (json_is_array(s)) {
        size_t i;
        json_t *v;
        json_array_foreach(s, i, v) if (has_cycle(v, path, depth, cycle)) return 1;
    }
    return 0;
}

START_TEST(test_no_self_reference) {
    const char *name, *path[33], *cycle = NULL;
    json_t *s;
    int n = 0;
    json_object_foreach(json_object_get(json_object_get(g_doc, "components"), "schemas"), name, s) {
        path[0] = name;
        ck_assert_msg(!has_cycle(s, path, 1, &cycle), "schema %s reaches %s again through $ref: client "
                      "generators make a type of it that tsc rejects (TS2502)", name, cycle);
        n++;
    }
    ck_assert_int_gt(n, 10);
    /* and it sees one when there is one */
    json_t *loop = json_pack("{s:s}", "$ref", "#/components/schemas/Shape");
    path[0] = "Shape";
    ck_assert(has_cycle(loop, path, 1, &cycle));
    ck_assert_str_eq(cycle, "Shape");
    json_decref(loop);
}
END_TEST

/* The JSON path of every "default" key under j (outside examples) appended
 * to out; returns how many. */
static int find_defaults(const json_t *j, char *path, size_t len, size_t cap, char *out, size_t out_cap) {
    int n = 0;
    if (json_is_object(j)) {
        const char *k;
        json_t *v;
        json_object_foreach((json_t *)j, k, v) {
            if (strcmp(k, "examples") == 0 || strcmp(k, "example") == 0) continue;
            int w = snprintf(path + len, cap - len, "/%s", k);
            size_t l2 = w > 0 && (size_t)w < cap - len ? len + (size_t)w : cap - 1;
            if (strcmp(k, "default") == 0) {
                size_t o = strlen(out);
                snprintf(out + o, out_cap - o, " %s", path);
                n++;
            }
            n += find_defaults(v, path, l2, cap, out, out_cap);
            path[len] = '\0';
        }
    } else if (json_is_array(j)) {
        size_t i;
        json_t *v;
        json_array_foreach(j, i, v) n += find_defaults(v, path, len, cap, out, out_cap);
    }
    return n;
}

START_TEST(test_defaults_only_in_request_bodies) {
    char path[512] = "", found[2048] = "";
    json_t *comp = json_object_get(g_doc, "components");
    int n = find_defaults(json_object_get(comp, "schemas"), path, 0, sizeof path, found, sizeof found) +
            find_defaults(json_object_get(g_doc, "paths"), path, 0, sizeof path, found, sizeof found);
    ck_assert_msg(n == 0, "defaults outside components/requestBodies (openapi-typescript makes those "
                  "properties required):%s", found);
    /* where they are, they are */
    path[0] = found[0] = '\0';
    ck_assert_int_gt(find_defaults(json_object_get(comp, "requestBodies"), path, 0, sizeof path, found, sizeof found), 5);
}
END_TEST

static int validate(const json_t *schema, const char *text, jschema_error *e) {
    json_t *j = json_loads(text, 0, NULL);
    ck_assert_msg(j != NULL, "bad test JSON %s", text);
    int rc = jschema_validate(g_doc, schema, j, e);
    json_decref(j);
    return rc;
}

START_TEST(test_requests_match_schema) {
    api_request_list l;
    char why[512];
    ck_assert_msg(api_requests_load(&l, why, sizeof why) == 0, "%s", why);
    ck_assert_int_ge(l.from_readme, 5);
    for (size_t i = 0; i < l.count; i++) {
        jschema_error e;
        int rc = jschema_validate(g_doc, request_schema(l.items[i].path), l.items[i].body, &e);
        ck_assert_msg(rc == JSCHEMA_VALID, "%s does not match the request schema of %s at %s: %s (%s)",
                      l.items[i].name, l.items[i].path, e.path, e.message, e.schema_path);
    }
    api_requests_free(&l);

    /* the forms the parser takes, and what it refuses */
    static const struct {
        const char *path, *body;
        int valid;
        const char *where;   /* the violation */
    } cases[] = {
        {"/attention/simple", "{\"inputs\":[[1,2]]}", 1, NULL},
        {"/attention/simple", "{\"inputs\":[[[1,2]],[[3,4]]]}", 1, NULL},
        {"/attention/simple", "{\"inputs\":{\"shape\":[1,2],\"data\":[1,2]}}", 1, NULL},
        {"/attention/simple", "{\"inputs\":{\"shape\":[1,2],\"dtype\":\"float16\",\"base64\":\"ADwAQA\"}}", 1, NULL},
        {"/attention/simple", "{\"inputs\":[[1,2]],\"attn_mask\":[[false]],\"key_padding_mask\":[0]}", 1, NULL},
        {"/attention/simple", "{\"inputs\":[[1,2],[3,4]],\"attn_mask\":[[0,\"-inf\"],[null,\"-Infinity\"]]}", 1, NULL},
        {"/attention/simple", "{\"inputs\":[[1,2]],\"attn_mask\":{\"shape\":[1,1],\"data\":[true]}}", 1, NULL},
        {"/attention/sdpa", "{\"query\":[[[[1]]]],\"key\":[[[[1]]]],\"value\":[[[[1]]]]}", 1, NULL},
        {"/attention/self", "{\"d_out\":1,\"inputs\":[[1]],\"state_dict\":{\"W_query\":[[1]],\"b\":[1]}}", 1, NULL},
        {"/attention/simple", "{\"inputs\":[1,2]}", 0, "$.inputs"},
        {"/attention/simple", "{\"inputs\":[[[[1,2]]]]}", 0, "$.inputs"},
        {"/attention/simple", "{\"inputs\":[[true,1]]}", 0, "$.inputs"},
        {"/attention/simple", "{\"inputs\":[[\"-inf\"]]}", 0, "$.inputs"},
        {"/attention/simple", "{\"inputs\":[[]]}", 0, "$.inputs"},
        {"/attention/simple", "{\"inputs\":[[1]],\"key_padding_mask\":[2]}", 0, "$.key_padding_mask"},
        {"/attention/simple", "{\"inputs\":[[1]],\"attn_mask\":[[\"inf\"]]}", 0, "$.attn_mask"},
        {"/attention/simple", "{\"inputs\":[[1]],\"d_out\":2}", 0, "$.d_out"},
        {"/attention/sdpa", "{\"query\":[[[[[1]]]]],\"key\":[[1]],\"value\":[[1]]}", 0, "$.query"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        jschema_error e;
        int rc = validate(request_schema(cases[i].path), cases[i].body, &e);
        ck_assert_msg(rc == (cases[i].valid ? JSCHEMA_VALID : JSCHEMA_INVALID), "%s %s: %d at %s: %s",
                      cases[i].path, cases[i].body, rc, e.path, e.message);
        if (!cases[i].valid)
            ck_assert_msg(strncmp(e.path, cases[i].where, strlen(cases[i].where)) == 0, "%s: violation at %s, expected %s",
                          cases[i].body, e.path, cases[i].where);
    }
}
END_TEST

START_TEST(test_reply_tensors_are_numbers) {
    const json_t *t = jschema_resolve(g_doc, "#/components/schemas/ReplyTensor");
    const json_t *sc = jschema_resolve(g_doc, "#/components/schemas/ReplyScores");
    ck_assert_ptr_nonnull(t);
    ck_assert_ptr_nonnull(sc);
    static const char *const good[] = {"[[1,2]]", "[[[1]],[[2]]]", "[[[[0.5]]]]", "{\"shape\":[2],\"data\":[1,2]}",
                                       "{\"shape\":[1],\"dtype\":\"float32\",\"base64\":\"AACAPw\"}"};
    static const char *const bad[] = {"[1,2]", "[[[[[1]]]]]", "[[true]]", "[[\"-inf\"]]", "[[null]]",
                                      "{\"shape\":[1],\"base64\":\"AACAPw\"}", "{\"shape\":[1],\"data\":[null]}"};
    jschema_error e;
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        ck_assert_msg(validate(t, good[i], &e) == JSCHEMA_VALID, "ReplyTensor refuses %s: %s", good[i], e.message);
        ck_assert_msg(validate(sc, good[i], &e) == JSCHEMA_VALID, "ReplyScores refuses %s: %s", good[i], e.message);
    }
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        ck_assert_msg(validate(t, bad[i], &e) == JSCHEMA_INVALID, "ReplyTensor takes %s", bad[i]);
    ck_assert_int_eq(validate(sc, "[[null,1]]", &e), JSCHEMA_VALID);
    ck_assert_int_eq(validate(sc, "{\"shape\":[2],\"data\":[null,1]}", &e), JSCHEMA_VALID);
    ck_assert_int_eq(validate(sc, "[[true]]", &e), JSCHEMA_INVALID);

    /* masked_scores is the only output that carries null */
    json_t *ok = json_object_get(json_object_get(post_of("/attention/sdpa"), "responses"), "200");
    json_t *reply = json_object_get(json_object_get(json_object_get(ok, "content"), "application/json"), "schema");
    json_t *props = json_object_get(deref(reply), "properties");
    ck_assert_ptr_nonnull(props);
    for (int k = 0; k < API_OUT_COUNT; k++) {
        if (api__outputs[k].elem == API_ELEM_JSON) continue;
        json_t *o = json_object_get(props, api__outputs[k].name);
        if (api__outputs[k].map) { /* or, with top_k, {"indices", "values"} */
            json_t *alt = json_object_get(o, "oneOf");
            ck_assert_int_eq(json_array_size(alt), 2);
            ck_assert_str_eq(json_string_value(json_object_get(json_array_get(alt, 1), "$ref")),
                             "#/components/schemas/TopK");
            o = json_array_get(alt, 0);
        }
        const char *ref = json_string_value(json_object_get(o, "$ref"));
        ck_assert_msg(ref != NULL, "output %s has no reply schema", api__outputs[k].name);
        ck_assert_str_eq(ref, k == API_OUT_MASKED_SCORES ? "#/components/schemas/ReplyScores"
                                                         : "#/components/schemas/ReplyTensor");
    }
}
END_TEST

static Suite *openapi_suite(void) {
    const TTest *tests[] = {test_embedded_equals_file, test_every_endpoint, test_error_schema,
                            test_every_parser_field_documented, test_return_names_documented,
                            test_document_examples_answered, test_no_self_reference,
                            test_defaults_only_in_request_bodies, test_requests_match_schema,
                            test_reply_tensors_are_numbers, NULL};
    return suite_with("api_openapi", "openapi", 30, tests, load_doc, free_doc);
}

const test_program TEST_PROGRAM = {.suites = {openapi_suite}};
