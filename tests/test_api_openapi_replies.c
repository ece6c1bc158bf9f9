/* test_api_openapi_replies.c - the replies agree with the OpenAPI document.
 *
 * Every reply api_handle gives (every example of api/examples, every
 * `return` name for every module, nested and flat, batch and no batch, sdpa
 * of rank 2, 3 and 4, cross-attention, params and state_dict, and every
 * error status it can produce) is validated against the document's schema
 * for its path and status with the small validator of tests/support/jschema.c;
 * the validator is first shown to fail on bad instances. The real server's
 * GET endpoints (/healthz, /readyz, /version, /models, /metrics, /openapi.json) and
 * its 404 and 405 are checked the same way.
 */
#include <check.h>
#include <dirent.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/model/model.h"
#include "api/module/module.h"
#include "api/numbers/numbers.h"
#include "support/check_main.h"
#include "support/ckpt_files.h"
#include "support/files.h"
#include "support/jschema.h"
#include "support/openapi_doc.h"
#include "support/server_harness.h"

static json_t *g_doc;

static void load_doc(void) { g_doc = openapi_doc(); }

static void free_doc(void) {
    json_decref(g_doc);
    g_doc = NULL;
}

/* ==== The validator itself ============================================== */

static json_t *parse(const char *text) {
    json_error_t je;
    json_t *j = json_loads(text, JSON_DECODE_ANY, &je);
    ck_assert_msg(j != NULL, "bad test JSON %s: %s", text, je.text);
    return j;
}

/* Validates instance text against schema text (doc: the schema) and returns
 * the result; err filled. */
static int vs(const char *schema, const char *instance, jschema_error *err) {
    json_t *s = parse(schema), *i = parse(instance);
    int rc = jschema_validate(NULL, s, i, err);
    json_decref(s);
    json_decref(i);
    return rc;
}

static void ok(const char *schema, const char *instance) {
    jschema_error e;
    int rc = vs(schema, instance, &e);
    ck_assert_msg(rc == JSCHEMA_VALID, "%s should accept %s: %d at %s: %s", schema, instance, rc, e.path, e.message);
}

static void bad(const char *schema, const char *instance, const char *path) {
    jschema_error e;
    int rc = vs(schema, instance, &e);
    ck_assert_msg(rc == JSCHEMA_INVALID, "%s should reject %s (rc %d)", schema, instance, rc);
    ck_assert_msg(strcmp(e.path, path) == 0, "%s on %s: violation at %s, expected %s (%s)", schema, instance,
                  e.path, path, e.message);
    ck_assert(e.message[0] != '\0');
}

static void schema_error(const char *schema, const char *instance) {
    jschema_error e;
    int rc = vs(schema, instance, &e);
    ck_assert_msg(rc == JSCHEMA_SCHEMA_ERROR, "%s should be a schema error (rc %d)", schema, rc);
    json_t *s = parse(schema);
    ck_assert_msg(jschema_check(NULL, s, &e) == JSCHEMA_SCHEMA_ERROR, "jschema_check passes %s", schema);
    json_decref(s);
}

START_TEST(t_validator_types) {
    ok("{\"type\":\"integer\"}", "3");
    ok("{\"type\":\"integer\"}", "3.0");
    bad("{\"type\":\"integer\"}", "3.5", "$");
    ok("{\"type\":\"number\"}", "3");
    bad("{\"type\":\"number\"}", "\"3\"", "$");
    ok("{\"type\":[\"number\",\"null\"]}", "null");
    ok("{\"type\":[\"number\",\"null\"]}", "-1e-3");
    bad("{\"type\":[\"number\",\"null\"]}", "false", "$");
    bad("{\"type\":\"string\"}", "null", "$");
    ok("{\"type\":\"boolean\"}", "true");
    bad("{\"type\":\"object\"}", "[]", "$");
    ok("{\"enum\":[1,\"a\",null]}", "1.0");
    bad("{\"enum\":[1,\"a\",null]}", "\"b\"", "$");
    ok("{\"const\":{\"a\":[1,2]}}", "{\"a\":[1.0,2]}");
    bad("{\"const\":{\"a\":[1,2]}}", "{\"a\":[1,3]}", "$");
    ok("{\"minimum\":1,\"maximum\":9}", "9");
    bad("{\"minimum\":1,\"maximum\":9}", "0.5", "$");
    bad("{\"minimum\":1,\"maximum\":9}", "10", "$");
    ok("{\"minimum\":1}", "\"not a number: minimum does not apply\"");
    ok("true", "{\"anything\":[]}");
    bad("false", "1", "$");
}
END_TEST

START_TEST(t_validator_objects_arrays) {
    const char *obj = "{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"integer\"},"
                      "\"b c\":{\"type\":\"array\",\"items\":{\"type\":\"string\"}}},"
                      "\"required\":[\"a\"],\"additionalProperties\":false}";
    ok(obj, "{\"a\":1}");
    ok(obj, "{\"a\":1,\"b c\":[\"x\"]}");
    bad(obj, "{}", "$");
    bad(obj, "{\"a\":\"1\"}", "$.a");
    bad(obj, "{\"a\":1,\"z\":0}", "$.z");
    bad(obj, "{\"a\":1,\"b c\":[\"x\",2]}", "$[\"b c\"][1]");
    const char *add = "{\"type\":\"object\",\"additionalProperties\":{\"type\":\"number\"}}";
    ok(add, "{\"x\":1,\"y\":2.5}");
    bad(add, "{\"x\":1,\"W.q\":true}", "$[\"W.q\"]");
    const char *arr = "{\"type\":\"array\",\"minItems\":2,\"maxItems\":3,\"prefixItems\":[{\"type\":\"string\"}],"
                      "\"items\":{\"type\":\"integer\"}}";
    ok(arr, "[\"a\",1,2]");
    bad(arr, "[\"a\"]", "$");
    bad(arr, "[\"a\",1,2,3]", "$");
    bad(arr, "[1,1]", "$[0]");
    bad(arr, "[\"a\",\"b\"]", "$[1]");
}
END_TEST

START_TEST(t_validator_combinators_refs) {
    /* a recursive nested array of numbers, as the document's NestedArray */
    const char *nested = "{\"$defs\":{},\"oneOf\":[{\"$ref\":\"#/x/N\"},{\"type\":\"null\"}],"
                         "\"x\":{\"N\":{\"type\":\"array\",\"minItems\":1,\"items\":"
                         "{\"oneOf\":[{\"type\":\"number\"},{\"$ref\":\"#/x/N\"}]}}}}";
    /* $defs and x are not keywords this validator knows: a schema error */
    schema_error(nested, "[1]");
    json_t *doc = parse("{\"x\":{\"N\":{\"type\":\"array\",\"minItems\":1,\"items\":"
                        "{\"oneOf\":[{\"type\":\"number\"},{\"$ref\":\"#/x/N\"}]}},"
                        "\"T\":{\"oneOf\":[{\"$ref\":\"#/x/N\"},{\"type\":\"null\"}]},"
                        "\"a~b/c\":{\"type\":\"string\"}}}");
    const json_t *t = jschema_resolve(doc, "#/x/T");
    ck_assert_ptr_nonnull(t);
    ck_assert_ptr_nonnull(jschema_resolve(doc, "#/x/a~0b~1c"));
    ck_assert_ptr_null(jschema_resolve(doc, "#/x/missing"));
    ck_assert_int_eq(jschema_check(doc, t, NULL), JSCHEMA_VALID);
    jschema_error e;
    json_t *i = parse("[[1,2],[3,[4]]]");
    ck_assert_int_eq(jschema_validate(doc, t, i, &e), JSCHEMA_VALID);
    json_decref(i);
    i = parse("[[1,2],[3,[\"4\"]]]");
    ck_assert_int_eq(jschema_validate(doc, t, i, &e), JSCHEMA_INVALID);
    /* the deepest branch's error: the string inside, not the top */
    ck_assert_str_eq(e.path, "$[1][1][0]");
    json_decref(i);
    i = parse("[]");
    ck_assert_int_eq(jschema_validate(doc, t, i, &e), JSCHEMA_INVALID);
    json_decref(i);
    json_decref(doc);

    /* oneOf: two matching branches is a violation; anyOf is fine with it */
    bad("{\"oneOf\":[{\"type\":\"number\"},{\"type\":\"integer\"}]}", "1", "$");
    ok("{\"oneOf\":[{\"type\":\"number\"},{\"type\":\"integer\"}]}", "1.5");
    ok("{\"anyOf\":[{\"type\":\"number\"},{\"type\":\"integer\"}]}", "1");
    bad("{\"anyOf\":[{\"type\":\"string\"},{\"type\":\"integer\"}]}", "1.5", "$");
    ok("{\"allOf\":[{\"type\":\"number\"},{\"minimum\":0}]}", "1");
    bad("{\"allOf\":[{\"type\":\"number\"},{\"minimum\":0}]}", "-1", "$");
    /* $ref with sibling keywords: both apply */
    ok("{\"properties\":{\"a\":{\"$ref\":\"#/properties/b\",\"description\":\"d\"},\"b\":{\"type\":\"integer\"}}}",
       "{\"a\":1,\"b\":2}");
    bad("{\"properties\":{\"a\":{\"$ref\":\"#/properties/b\",\"description\":\"d\"},\"b\":{\"type\":\"integer\"}}}",
        "{\"a\":\"1\"}", "$.a");
}
END_TEST

START_TEST(t_validator_fails_loudly) {
    schema_error("{\"type\":\"number\",\"multipleOf\":2}", "4");
    schema_error("{\"patternProperties\":{}}", "{}");
    schema_error("{\"nullable\":true}", "null");
    schema_error("{\"type\":\"float\"}", "1");
    schema_error("{\"$ref\":\"#/nowhere\"}", "1");
    schema_error("{\"items\":[{\"type\":\"number\"}]}", "[1]");
    schema_error("{\"minItems\":-1}", "[]");
    schema_error("{\"required\":\"a\"}", "{}");
    /* unknown keywords deep inside, even in a oneOf branch that would not match */
    schema_error("{\"oneOf\":[{\"type\":\"string\"},{\"type\":\"number\",\"exclusiveMinimum\":0}]}", "1");
    schema_error("{\"properties\":{\"a\":{\"pattern\":\"x\"}}}", "{\"a\":\"x\"}");
    /* a $ref cycle that consumes nothing (found only when validating) */
    jschema_error e;
    ck_assert_int_eq(vs("{\"$ref\":\"#\"}", "1", &e), JSCHEMA_SCHEMA_ERROR);
    /* descriptive keywords are fine */
    ok("{\"description\":\"d\",\"title\":\"t\",\"example\":1,\"examples\":[1],\"format\":\"int32\","
       "\"deprecated\":false,\"default\":0,\"$comment\":\"c\",\"externalDocs\":{\"url\":\"u\"},"
       "\"type\":\"integer\"}", "1");
}
END_TEST

/* The validator understands every schema of the document. */
START_TEST(t_document_schemas_understood) {
    jschema_error e;
    const char *name;
    json_t *s;
    int n = 0;
    json_object_foreach(json_object_get(json_object_get(g_doc, "components"), "schemas"), name, s) {
        ck_assert_msg(jschema_check(g_doc, s, &e) == JSCHEMA_VALID, "components/schemas/%s: %s at %s", name,
                      e.message, e.schema_path);
        n++;
    }
    json_t *body;
    json_object_foreach(json_object_get(json_object_get(g_doc, "components"), "requestBodies"), name, body) {
        json_t *sch = json_object_get(json_object_get(json_object_get(body, "content"), "application/json"), "schema");
        ck_assert_msg(sch != NULL, "components/requestBodies/%s has no JSON schema", name);
        ck_assert_msg(jschema_check(g_doc, sch, &e) == JSCHEMA_VALID, "components/requestBodies/%s: %s at %s", name,
                      e.message, e.schema_path);
        n++;
    }
    const char *path, *method, *status, *media;
    json_t *item, *op, *resp, *mt;
    json_object_foreach(json_object_get(g_doc, "paths"), path, item) {
        json_object_foreach(item, method, op) {
            json_object_foreach(json_object_get(op, "responses"), status, resp) {
                json_object_foreach(json_object_get(resp, "content"), media, mt) {
                    json_t *sch = json_object_get(mt, "schema");
                    ck_assert_msg(sch != NULL, "%s %s %s %s has no schema", method, path, status, media);
                    ck_assert_msg(jschema_check(g_doc, sch, &e) == JSCHEMA_VALID, "%s %s %s: %s at %s", method,
                                  path, status, e.message, e.schema_path);
                    n++;
                }
            }
        }
    }
    ck_assert_int_gt(n, 20);
}
END_TEST

/* ==== Replies of api_handle ============================================= */

/* The documented response schema of method path for an HTTP status and
 * media type, or NULL. */
static const json_t *response_schema(const char *method, const char *path, int status, const char *media) {
    char st[8];
    snprintf(st, sizeof st, "%d", status);
    json_t *op = json_object_get(json_object_get(json_object_get(g_doc, "paths"), path), method);
    json_t *c = json_object_get(json_object_get(json_object_get(op, "responses"), st), "content");
    return json_object_get(json_object_get(c, media), "schema");
}

typedef struct {
    int replies;      /* validated */
    int failures;
    int by_status[600];
} tally;

/* Validates one JSON reply body against the document for method path and
 * status; errors must carry their own HTTP status. Returns 0, or -1 with the
 * reason on stderr. */
static int check_body(const char *what, const char *method, const char *path, int status, const char *body,
                      size_t len) {
    const json_t *schema = response_schema(method, path, status, "application/json");
    if (schema == NULL) {
        fprintf(stderr, "%s: %s %s answered %d, which the document does not list: %.300s\n", what, method, path,
                status, body);
        return -1;
    }
    json_error_t je;
    json_t *j = json_loadb(body, len, 0, &je);
    if (j == NULL) {
        fprintf(stderr, "%s: the %d reply is not JSON (%s): %.300s\n", what, status, je.text, body);
        return -1;
    }
    jschema_error e;
    int rc = jschema_validate(g_doc, schema, j, &e), res = 0;
    if (rc != JSCHEMA_VALID) {
        fprintf(stderr, "%s: the %d reply of %s %s %s the document at %s: %s (schema %s)\n  %.400s\n", what,
                status, method, path, rc == JSCHEMA_INVALID ? "violates" : "cannot be checked against", e.path,
                e.message, e.schema_path, body);
        res = -1;
    }
    json_t *err = json_object_get(j, "error");
    if (status != 200 && json_integer_value(json_object_get(err, "status")) != status) {
        fprintf(stderr, "%s: HTTP %d with error.status %lld\n", what, status,
                (long long)json_integer_value(json_object_get(err, "status")));
        res = -1;
    }
    json_decref(j);
    return res;
}

/* api_handle on body; validates the reply. want: the expected status (0:
 * any), want_code: the expected error code (NULL: any). */
static void run(tally *t, const char *what, api_endpoint ep, const char *body, size_t max_elements, int want,
                const char *want_code) {
    api_limits lim = {.max_elements = max_elements ? max_elements : 10000000};
    api_reply r;
    int st = api_handle(ep, body, strlen(body), &lim, &r);
    const char *path = api_endpoint_path(ep);
    int failed = check_body(what, "post", path, st, r.body.data, r.body.len);
    if (want && st != want) {
        fprintf(stderr, "%s: %s answered %d, expected %d: %.300s\n", what, path, st, want, r.body.data);
        failed = -1;
    }
    if (want_code && st != 200) {
        json_t *j = json_loadb(r.body.data, r.body.len, 0, NULL);
        const char *code = json_string_value(json_object_get(json_object_get(j, "error"), "code"));
        if (code == NULL || strcmp(code, want_code) != 0) {
            fprintf(stderr, "%s: code %s, expected %s\n", what, code ? code : "(none)", want_code);
            failed = -1;
        }
        json_decref(j);
    }
    t->replies++;
    if (st >= 0 && st < 600) t->by_status[st]++;
    if (failed) t->failures++;
    api_buf_free(&r.body);
}

static void run_json(tally *t, const char *what, api_endpoint ep, const json_t *req, int want) {
    char *body = json_dumps(req, JSON_COMPACT);
    ck_assert_ptr_nonnull(body);
    run(t, what, ep, body, 0, want, NULL);
    free(body);
}

/* A request for api_handle and the reply it must get. */
typedef struct {
    api_endpoint ep;
    const char *body;
    size_t max_elements; /* 0: the default limit */
    int status;
    const char *code;    /* the error code (NULL: any) */
} request_case;

/* A request answered 200. */
#define OK_200(ep, body) {ep, body, 0, 200, NULL}

static void run_cases(tally *t, const char *what, const request_case *cases, size_t n) {
    for (size_t i = 0; i < n; i++) {
        char name[64];
        snprintf(name, sizeof name, "%s case %zu", what, i);
        run(t, name, cases[i].ep, cases[i].body, cases[i].max_elements, cases[i].status,
            cases[i].code);
    }
}

START_TEST(t_examples) {
    char dir[1024];
    tfile_path(dir, sizeof dir, "api/examples");
    DIR *d = opendir(dir);
    ck_assert_msg(d != NULL, "cannot open %s", dir);
    tally t = {0};
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        size_t n = strlen(de->d_name);
        if (n < 6 || strcmp(de->d_name + n - 5, ".json") != 0) continue;
        char ep_path[128], file[sizeof dir + 300];
        snprintf(ep_path, sizeof ep_path, "/attention/%.*s", (int)strcspn(de->d_name, "_."), de->d_name);
        api_endpoint ep;
        ck_assert_msg(api_endpoint_from_path(ep_path, &ep) == 0, "example %s: no endpoint %s", de->d_name, ep_path);
        snprintf(file, sizeof file, "%s/%s", dir, de->d_name);
        json_error_t je;
        json_t *req = json_load_file(file, 0, &je);
        ck_assert_msg(req != NULL, "%s: %s", file, je.text);
        run_json(&t, de->d_name, ep, req, 200);
        /* the same request with every output, nested, flat and base64 (float32
         * and float16) */
        json_t *all = json_array();
        for (int k = 0; k < API_OUT_COUNT; k++) json_array_append_new(all, json_string(api__outputs[k].name));
        json_object_set_new(req, "return", all);
        json_object_set_new(req, "output_format", json_string("nested"));
        run_json(&t, de->d_name, ep, req, 200);
        json_object_set_new(req, "output_format", json_string("flat"));
        run_json(&t, de->d_name, ep, req, 200);
        json_object_set_new(req, "output_format", json_string("base64"));
        run_json(&t, de->d_name, ep, req, 200);
        json_object_set_new(req, "dtype", json_string("float16"));
        run_json(&t, de->d_name, ep, req, 200);
        json_decref(req);
    }
    closedir(d);
    ck_assert_msg(t.failures == 0, "%d of %d replies disagree with the document (details above)", t.failures,
                  t.replies);
    ck_assert_int_ge(t.replies, 5 * 15);
}
END_TEST

/* A /model/gpt2 request body: valid by the document's Gpt2Request schema,
 * its 200 reply by Gpt2Response (run_json). */
static void run_model_request(tally *t, const json_t *rq_schema, const char *what, const char *body) {
    json_t *req = json_loads(body, 0, NULL);
    ck_assert_ptr_nonnull(req);
    jschema_error e;
    ck_assert_msg(jschema_validate(g_doc, rq_schema, req, &e) == JSCHEMA_VALID, "%s: request at %s: %s", what,
                  e.path, e.message);
    run_json(t, what, API_EP_MODEL_GPT2, req, 200);
    json_decref(req);
}

/* /model/gpt2 replies against Gpt2Response: [T] and [B][T] idx, every
 * output, each JSON format, with and without heads, query_rows and top_k,
 * no layer at all; the request bodies against Gpt2Request. */
START_TEST(t_model_replies) {
    static const char *const idx[] = {"[3,1,4]", "[[3,1,4],[1,5,9]]"};
    static const char *const formats[] = {"nested", "flat", "base64"};
    static const char *const sel[] = {"", ",\"heads\":[1],\"query_rows\":[1,3]", ",\"top_k\":2",
                                      ",\"layers\":[]", ",\"layers\":[],\"top_k\":2"};
    const json_t *rq_schema = json_object_get(json_object_get(json_object_get(json_object_get(
        json_object_get(json_object_get(g_doc, "components"), "requestBodies"), "Gpt2Request"),
        "content"), "application/json"), "schema");
    ck_assert_ptr_nonnull(rq_schema);
    tally t = {0};
    for (size_t i = 0; i < 2; i++)
        for (size_t f = 0; f < 3; f++)
            for (size_t k = 0; k < sizeof sel / sizeof sel[0]; k++) {
                char body[512], what[64];
                snprintf(body, sizeof body,
                         "{\"vocab_size\":10,\"block_size\":8,\"n_layer\":2,\"n_head\":2,\"n_embd\":4,"
                         "\"init\":{\"seed\":0},\"idx\":%s,\"output_format\":\"%s\"%s,\"return\":"
                         "[\"idx\",\"logits\",\"next_token\",\"attn_weights\",\"hidden_states\","
                         "\"timing\"]}",
                         idx[i], formats[f], sel[k]);
                snprintf(what, sizeof what, "gpt2 %zu %s %zu", i, formats[f], k);
                run_model_request(&t, rq_schema, what, body);
            }
    /* the book's GPTModel, training, with the groups of tensors; GPT2's groups */
    static const char *const book[] = {
        "{\"module\":\"GPTModel\",\"vocab_size\":10,\"context_length\":8,\"n_layers\":2,\"n_heads\":2,"
        "\"emb_dim\":4,\"qkv_bias\":true,\"init\":{\"seed\":1},\"training\":true,\"idx\":%s,"
        "\"output_format\":\"%s\",\"return\":[\"logits\",\"attn_weights\",\"dropout_masks\",\"params\"]}",
        "{\"vocab_size\":10,\"block_size\":8,\"n_layer\":1,\"n_head\":2,\"n_embd\":4,\"init\":{\"seed\":1},"
        "\"idx\":%s,\"output_format\":\"%s\",\"return\":[\"next_token\",\"dropout_masks\",\"params\"]}"};
    for (size_t b = 0; b < 2; b++)
        for (size_t i = 0; i < 2; i++)
            for (size_t f = 0; f < 3; f++) {
                char body[600], what[64];
                snprintf(body, sizeof body, book[b], idx[i], formats[f]);
                snprintf(what, sizeof what, "%s %zu %s", b ? "gpt2 groups" : "gptmodel", i, formats[f]);
                run_model_request(&t, rq_schema, what, body);
            }
    ck_assert_msg(t.failures == 0, "%d of %d replies disagree with the document (details above)",
                  t.failures, t.replies);
    ck_assert_int_eq(t.replies, 2 * 3 * 5 + 2 * 2 * 3);
}
END_TEST

/* One small request per module; inputs are [T][d] (no batch axis). */
typedef struct {
    api_endpoint ep;
    const char *body;
    int multi_head;
} base_req;

#define X3 "[[0.43,0.15,0.89],[0.55,0.87,0.66],[0.57,0.85,0.64]]"
#define X4 "[[0.1,0.2,0.3,0.4],[0.5,0.6,0.7,0.8],[0.9,1.0,1.1,1.2]]"

static const base_req bases[] = {
    {API_EP_SIMPLE, "{\"inputs\":" X3 "}", 0},
    {API_EP_SIMPLE, "{\"inputs\":" X3 ",\"normalization\":\"sum\",\"causal\":true}", 0},
    {API_EP_SELF, "{\"module\":\"SelfAttention_v1\",\"d_out\":2,\"init\":{\"seed\":123},\"inputs\":" X3 "}", 0},
    {API_EP_SELF, "{\"d_out\":2,\"qkv_bias\":true,\"init\":{\"seed\":789},\"inputs\":" X3 "}", 0},
    {API_EP_CAUSAL, "{\"d_out\":2,\"context_length\":4,\"dropout\":0.5,\"training\":true,\"dropout_seed\":1,"
                    "\"init\":{\"seed\":123},\"inputs\":" X3 "}", 0},
    {API_EP_CAUSAL, "{\"d_out\":2,\"init\":{\"seed\":1},\"mask_method\":\"renorm\",\"inputs\":" X3 "}", 0},
    {API_EP_MULTIHEAD, "{\"module\":\"MultiHeadAttentionWrapper\",\"d_out\":2,\"num_heads\":2,\"init\":{\"seed\":123},"
                       "\"inputs\":" X3 "}", 1},
    {API_EP_MULTIHEAD, "{\"d_out\":4,\"num_heads\":2,\"qkv_bias\":true,\"dropout\":0.1,\"training\":true,"
                       "\"init\":{\"seed\":123},\"inputs\":" X3 "}", 1},
    {API_EP_MULTIHEAD, "{\"module\":\"GPT2CausalSelfAttention\",\"n_head\":2,\"dropout\":0.2,\"training\":true,"
                       "\"dropout_seed\":5,\"init\":{\"seed\":123},\"inputs\":" X4 "}", 1},
    {API_EP_MULTIHEAD, "{\"module\":\"torch.nn.MultiheadAttention\",\"num_heads\":2,\"init\":{\"seed\":123},"
                       "\"inputs\":" X4 "}", 1},
    {API_EP_MULTIHEAD, "{\"module\":\"torch.nn.MultiheadAttention\",\"embed_dim\":4,\"num_heads\":2,\"kdim\":3,"
                       "\"vdim\":2,\"bias\":false,\"init\":{\"seed\":7},\"inputs\":" X4 ","
                       "\"key\":[[1,0,0.5],[0.2,0.3,0.4]],\"value\":[[1,2],[3,4]],\"causal\":true}", 1},
    {API_EP_SDPA, "{\"query\":[[1,0],[0,1],[1,1]],\"key\":[[1,0],[0,1]],\"value\":[[1,2,3],[4,5,6]]}", 0},
};

/* Adds a batch axis of 2 to the tensors of a request: inputs, key and value
 * (for sdpa: query, key, value, which are then rank 3 or 4). */
static void batch(json_t *req) {
    static const char *const names[] = {"inputs", "key", "value", "query"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        json_t *v = json_object_get(req, names[i]);
        if (v == NULL) continue;
        json_object_set_new(req, names[i], json_pack("[OO]", v, v));
    }
}

static json_t *returns(int k) {
    json_t *a = json_array();
    if (k < 0) {
        for (int i = 0; i < API_OUT_COUNT; i++) json_array_append_new(a, json_string(api__outputs[i].name));
    } else {
        json_array_append_new(a, json_string(api__outputs[k].name));
    }
    return a;
}

START_TEST(t_every_return_name) {
    tally t = {0};
    for (size_t b = 0; b < sizeof bases / sizeof bases[0]; b++) {
        for (int level = 0; level < (bases[b].ep == API_EP_SDPA ? 3 : 2); level++) {
            for (int flat = 0; flat < 2; flat++) {
                for (int avg = 0; avg < 2; avg++) {
                    for (int tokens = 0; tokens < 2; tokens++) {
                        for (int k = -1; k < API_OUT_COUNT; k++) {
                            json_t *req = parse(bases[b].body);
                            for (int l = 0; l < level; l++) batch(req);
                            json_object_set_new(req, "return", returns(k));
                            json_object_set_new(req, "output_format", json_string(flat ? "flat" : "nested"));
                            if (avg) json_object_set_new(req, "average_attn_weights", json_true());
                            if (tokens) json_object_set_new(req, "tokens", json_pack("[sss]", "a", "b", "c"));
                            if (k == API_OUT_TIMING) json_object_set_new(req, "precision", json_integer(3));
                            char what[160];
                            snprintf(what, sizeof what, "base %zu, batch level %d, %s, average %d, tokens %d, return %s",
                                     b, level, flat ? "flat" : "nested", avg, tokens, k < 0 ? "all" : api__outputs[k].name);
                            run_json(&t, what, bases[b].ep, req, 200);
                            json_decref(req);
                        }
                    }
                }
            }
        }
    }
    ck_assert_msg(t.failures == 0, "%d of %d replies disagree with the document (details above)", t.failures,
                  t.replies);
    ck_assert_int_gt(t.replies, 1000);
}
END_TEST

/* Masks, sdpa shapes, cross-attention, and params given back as state_dict. */
START_TEST(t_options_and_shapes) {
    tally t = {0};
    static const request_case cases[] = {
        /* sdpa rank 2, 3 and 4, cross-attention (L != S), grouped-query (Hkv < H) */
        OK_200(API_EP_SDPA, "{\"query\":[[1,0]],\"key\":[[1,0],[0,1],[1,1]],\"value\":[[1],[2],[3]],"
                            "\"return\":[\"context\",\"attn_weights\",\"masked_scores\",\"queries\",\"keys\",\"values\"]}"),
        OK_200(API_EP_SDPA, "{\"module\":\"sdpa\",\"query\":[[[1,0],[0,1]],[[1,1],[0,0]]],\"key\":[[[1,0],[0,1],[1,1]]],"
                            "\"value\":[[[1],[2],[3]]],\"causal\":true,\"return\":[\"context\",\"attn_weights\",\"mask\","
                            "\"masked_scores\",\"keys\"]}"),
        OK_200(API_EP_SDPA, "{\"query\":[[[[1,0]],[[0,1]],[[1,1]],[[0.5,-0.5]]]],\"key\":[[[[1,0],[0,1]],[[0.3,0.3],[1,-1]]]],"
                            "\"value\":[[[[1],[2]],[[3],[4]]]],\"average_attn_weights\":true,"
                            "\"return\":[\"context\",\"attn_weights\",\"keys\",\"values\",\"context_heads\"]}"),
        OK_200(API_EP_SDPA, "{\"query\":[[1,0],[0,1]],\"key\":[[1,0],[0,1]],\"value\":[[1],[2]],"
                            "\"attn_mask\":[[0,\"-inf\"],[null,0]],\"return\":[\"masked_scores\",\"attn_weights\"],"
                            "\"output_format\":\"flat\"}"),
        OK_200(API_EP_SDPA, "{\"query\":{\"shape\":[2,2],\"data\":[1,0,0,1]},\"key\":{\"shape\":[2,2],\"data\":[1,0,0,1]},"
                            "\"value\":{\"shape\":[2,1],\"data\":[1,2]},\"key_padding_mask\":[false,true],"
                            "\"scale\":0.5,\"dropout\":0.5,\"dropout_seed\":3,\"return\":[\"context\",\"dropout_mask\","
                            "\"mask\",\"masked_scores\"]}"),
        /* masks on the trainable modules, boolean and additive, batched */
        OK_200(API_EP_CAUSAL, "{\"d_out\":2,\"init\":{\"seed\":1},\"inputs\":[" X3 "," X3 "],"
                              "\"attn_mask\":[[[false,true,true],[false,false,true],[false,false,false]],"
                              "[[0,1,1],[0,0,1],[0,0,0]]],\"key_padding_mask\":[[0,0,1],[0,0,0]],"
                              "\"return\":[\"mask\",\"masked_scores\",\"attn_weights\"]}"),
        OK_200(API_EP_SELF, "{\"d_out\":2,\"init\":{\"seed\":1},\"inputs\":" X3 ",\"causal\":true,"
                            "\"attn_mask\":[[0,-1.5,0],[0,0,0],[0.25,0,0]],\"return\":[\"masked_scores\",\"mask\"]}"),
        OK_200(API_EP_MULTIHEAD, "{\"module\":\"torch.nn.MultiheadAttention\",\"embed_dim\":4,\"num_heads\":2,\"kdim\":3,"
                                 "\"vdim\":2,\"init\":{\"seed\":7},\"inputs\":[" X4 "],\"key\":[[[1,0,0.5],[0.2,0.3,0.4]]],"
                                 "\"value\":[[[1,2],[3,4]]],\"key_padding_mask\":[[false,true]],"
                                 "\"average_attn_weights\":true,\"precision\":2}"),
        OK_200(API_EP_MULTIHEAD, "{\"d_out\":2,\"num_heads\":1,\"context_length\":3,\"init\":{\"seed\":2},"
                                 "\"inputs\":{\"shape\":[3,3],\"data\":[1,2,3,4,5,6,7,8,9]},\"tokens\":[\"x\",\"y\",\"z\"],"
                                 "\"return\":[\"tokens\",\"attn_weights\"],\"output_format\":\"flat\"}"),
    };
    run_cases(&t, "options", cases, sizeof cases / sizeof cases[0]);

    /* params out, then given back as state_dict (nested and flat) */
    for (size_t b = 0; b < sizeof bases / sizeof bases[0]; b++) {
        if (strstr(bases[b].body, "\"init\"") == NULL) continue;
        for (int flat = 0; flat < 2; flat++) {
            json_t *req = parse(bases[b].body);
            json_object_set_new(req, "return", json_pack("[ss]", "params", "context"));
            json_object_set_new(req, "output_format", json_string(flat ? "flat" : "nested"));
            char *body = json_dumps(req, JSON_COMPACT);
            api_limits lim = {.max_elements = 10000000};
            api_reply r;
            int st = api_handle(bases[b].ep, body, strlen(body), &lim, &r);
            ck_assert_msg(st == 200, "base %zu: %d %.300s", b, st, r.body.data);
            char what[64];
            snprintf(what, sizeof what, "params of base %zu", b);
            if (check_body(what, "post", api_endpoint_path(bases[b].ep), st, r.body.data, r.body.len)) t.failures++;
            json_t *reply = json_loadb(r.body.data, r.body.len, 0, NULL);
            ck_assert_ptr_nonnull(reply);
            json_object_del(req, "init");
            json_object_set(req, "state_dict", json_object_get(reply, "params"));
            snprintf(what, sizeof what, "state_dict of base %zu", b);
            run_json(&t, what, bases[b].ep, req, 200);
            json_decref(reply);
            api_buf_free(&r.body);
            free(body);
            json_decref(req);
        }
    }
    ck_assert_msg(t.failures == 0, "%d of %d replies disagree with the document (details above)", t.failures,
                  t.replies);
}
END_TEST

/* ==== Errors ============================================================ */

START_TEST(t_every_error_status) {
    tally t = {0};
    static const request_case cases[] = {
        {API_EP_SIMPLE, "{\"inputs\": [[1, 2]", 0, 400, "invalid_json"},
        {API_EP_SIMPLE, "", 0, 400, "invalid_json"},
        {API_EP_SIMPLE, "{\"inputs\":[[1,2]]} trailing", 0, 400, "invalid_json"},
        {API_EP_SIMPLE, "{\"inputs\":[[1]],\"inputs\":[[2]]}", 0, 400, "invalid_json"},
        {API_EP_SIMPLE, "[1, 2]", 0, 400, NULL},
        {API_EP_SIMPLE, "null", 0, 400, NULL},
        {API_EP_SIMPLE, "{}", 0, 400, "missing_field"},
        {API_EP_CAUSAL, "{\"init\":{\"seed\":1},\"inputs\":" X3 "}", 0, 400, "missing_field"},
        {API_EP_SDPA, "{\"query\":[[1]],\"key\":[[1]]}", 0, 400, "missing_field"},
        {API_EP_SIMPLE, "{\"inputs\":[[1,2]],\"bogus\":1}", 0, 400, "unknown_field"},
        {API_EP_SIMPLE, "{\"inputs\":[[1,2]],\"d_out\":2}", 0, 400, "unknown_field"},
        {API_EP_SIMPLE, "{\"inputs\":\"x\"}", 0, 400, "invalid_type"},
        {API_EP_SIMPLE, "{\"inputs\":[[1,\"a\"]]}", 0, 400, NULL},
        {API_EP_SIMPLE, "{\"inputs\":[[1,2]],\"causal\":1}", 0, 400, "invalid_type"},
        {API_EP_SELF, "{\"module\":\"CausalAttention\",\"d_out\":2,\"init\":{\"seed\":1},\"inputs\":" X3 "}", 0, 400,
         "invalid_argument"},
        {API_EP_SIMPLE, "{\"inputs\":[[1,2]],\"return\":[\"bogus\"]}", 0, 400, "invalid_argument"},
        {API_EP_SIMPLE, "{\"inputs\":[[1,2]],\"precision\":0}", 0, 400, NULL},
        {API_EP_SIMPLE, "{\"inputs\":[[1,2]],\"output_format\":\"csv\"}", 0, 400, NULL},
        {API_EP_SELF, "{\"d_out\":2,\"inputs\":" X3 "}", 0, 400, NULL},
        {API_EP_SELF, "{\"d_out\":2,\"init\":{\"seed\":1},\"state_dict\":{},\"inputs\":" X3 "}", 0, 400, NULL},
        {API_EP_SELF, "{\"d_out\":2,\"state_dict\":{\"W_query\":[[1,2,3]]},\"inputs\":" X3 "}", 0, 400, NULL},
        {API_EP_SIMPLE, "{\"inputs\":[[1,2],[3]]}", 0, 400, "invalid_shape"},
        {API_EP_SIMPLE, "{\"inputs\":[]}", 0, 400, NULL},
        {API_EP_SIMPLE, "{\"inputs\":[[1,2]],\"tokens\":[\"a\",\"b\"]}", 0, 400, NULL},
        {API_EP_MULTIHEAD, "{\"d_out\":3,\"num_heads\":2,\"init\":{\"seed\":1},\"inputs\":" X3 "}", 0, 400,
         "invalid_shape"},
        {API_EP_CAUSAL, "{\"d_out\":2,\"context_length\":2,\"init\":{\"seed\":1},\"inputs\":" X3 "}", 0, 400,
         "invalid_shape"},
        {API_EP_SDPA, "{\"query\":[[1,0]],\"key\":[[1,0,0]],\"value\":[[1]]}", 0, 400, "invalid_shape"},
        {API_EP_SIMPLE, "{\"inputs\":[[1,1e39]]}", 0, 400, "non_finite"},
        /* 413: the inputs alone, and the request as a whole, over max_elements */
        {API_EP_SIMPLE, "{\"inputs\":" X3 "}", 4, 413, "too_large"},
        {API_EP_MULTIHEAD, "{\"d_out\":4,\"num_heads\":2,\"init\":{\"seed\":1},\"inputs\":" X3 "}", 60, 413,
         "too_large"},
    };
    run_cases(&t, "error", cases, sizeof cases / sizeof cases[0]);
    /* every endpoint answers a 400 and a 413 by the document */
    for (int e = 0; e < API_EP_COUNT; e++) {
        if (api_endpoint_get((api_endpoint)e)->kind != API_KIND_MODULE) continue;
        run(&t, "garbage", (api_endpoint)e, "nope", 0, 400, "invalid_json");
        static const char *const small[API_EP_COUNT] = {
            [API_EP_SIMPLE] = "{\"inputs\":" X3 "}",
            [API_EP_SELF] = "{\"d_out\":2,\"init\":{\"seed\":1},\"inputs\":" X3 "}",
            [API_EP_CAUSAL] = "{\"d_out\":2,\"init\":{\"seed\":1},\"inputs\":" X3 "}",
            [API_EP_MULTIHEAD] = "{\"d_out\":2,\"num_heads\":1,\"init\":{\"seed\":1},\"inputs\":" X3 "}",
            [API_EP_SDPA] = "{\"query\":[[1,0],[0,1]],\"key\":[[1,0],[0,1]],\"value\":[[1],[2]]}",
        };
        run(&t, "small limit", (api_endpoint)e, small[e], 3, 413, "too_large");
    }
    ck_assert_msg(t.failures == 0, "%d of %d replies disagree with the document (details above)", t.failures,
                  t.replies);
    ck_assert_int_gt(t.by_status[400], 20);
    ck_assert_int_ge(t.by_status[413], 5);
}
END_TEST

/* The error body api_handle and the server share, for each status of the
 * document. */
START_TEST(t_error_bodies) {
    static const struct {
        int status;
        const char *code;
        const char *field;
    } cases[] = {
        {400, "invalid_shape", "inputs[1]"}, {400, "invalid_json", NULL}, {413, "too_large", NULL},
        {500, "internal_error", NULL},       {503, "overloaded", NULL},   {503, "out_of_memory", NULL},
        {405, "method_not_allowed", NULL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        api_buf b;
        ck_assert_int_eq(api_error_body(&b, cases[i].status, cases[i].code, "a \"quoted\"\nmessage", cases[i].field), 0);
        for (int e = 0; e < API_EP_COUNT; e++)
            ck_assert_msg(check_body("api_error_body", "post", api_endpoint_path((api_endpoint)e), cases[i].status,
                                     b.data, b.len) == 0, "status %d code %s", cases[i].status, cases[i].code);
        api_buf_free(&b);
    }
    /* and the validator rejects an error body that is off */
    api_buf b;
    ck_assert_int_eq(api_error_body(&b, 400, "no_such_code", "m", NULL), 0);
    ck_assert_int_ne(check_body("bad code (expected to fail)", "post", "/attention/simple", 400, b.data, b.len), 0);
    api_buf_free(&b);
}
END_TEST

/* ==== The real server =================================================== */

static srvt_server srv;

static void srv_teardown(void) {
    srvt_release(&srv);
    free_doc();
}

static void srv_setup(void) { load_doc(); }

/* The media type of a Content-Type header, without parameters. */
static void media_type(const srvt_reply *r, char *out, size_t cap) {
    char buf[256];
    const char *v = srvt_header(r, "Content-Type", buf, sizeof buf);
    ck_assert_msg(v != NULL, "no Content-Type in:\n%s", r->headers);
    snprintf(out, cap, "%.*s", (int)strcspn(v, "; "), v);
}

START_TEST(t_server_get_endpoints) {
    /* with a checkpoint loaded, so that GET /models lists one */
    char ckpt[512], spec[600];
    snprintf(spec, sizeof spec, "tiny=%s", ckf_golden(ckpt, sizeof ckpt, "tiny_f32.safetensors"));
    const char *args[] = {"--model", spec, NULL};
    ck_assert_msg(srvt_start(&srv, args, NULL) == 0, "cannot start %s", srvt_binary());
    static const char *const json_paths[] = {"/healthz", "/readyz", "/version", "/models",
                                             "/openapi.json"};
    for (size_t i = 0; i < sizeof json_paths / sizeof json_paths[0]; i++) {
        srvt_reply r;
        ck_assert_int_eq(srvt_get(&srv, json_paths[i], &r), 0);
        ck_assert_int_eq(r.status, 200);
        char mt[64];
        media_type(&r, mt, sizeof mt);
        ck_assert_msg(response_schema("get", json_paths[i], 200, mt) != NULL,
                      "GET %s: content type %s is not the documented one", json_paths[i], mt);
        ck_assert_msg(check_body("server", "get", json_paths[i], 200, r.body, r.len) == 0, "GET %s", json_paths[i]);
        srvt_reply_free(&r);
    }
    /* /openapi.json is this document */
    srvt_reply r;
    ck_assert_int_eq(srvt_get(&srv, "/openapi.json", &r), 0);
    ck_assert_str_eq(r.body, api_openapi_json());
    srvt_reply_free(&r);

    /* /metrics: the documented text type */
    ck_assert_int_eq(srvt_get(&srv, "/metrics", &r), 0);
    ck_assert_int_eq(r.status, 200);
    char mt[64];
    media_type(&r, mt, sizeof mt);
    ck_assert_str_eq(mt, "text/plain");
    ck_assert_msg(response_schema("get", "/metrics", 200, mt) != NULL, "/metrics is not documented as %s", mt);
    ck_assert_ptr_nonnull(strstr(r.body, "# TYPE"));
    srvt_reply_free(&r);

    /* a POST through HTTP, a 405 on a documented path, a 404 against Error */
    const char *seed = "{\"d_out\":2,\"num_heads\":2,\"init\":{\"seed\":123},\"inputs\":" X3 "}";
    ck_assert_int_eq(srvt_post(&srv, "/attention/multihead", seed, &r), 0);
    ck_assert_int_eq(r.status, 200);
    media_type(&r, mt, sizeof mt);
    ck_assert_str_eq(mt, "application/json");
    ck_assert_int_eq(check_body("server", "post", "/attention/multihead", 200, r.body, r.len), 0);
    srvt_reply_free(&r);
    ck_assert_int_eq(srvt_post(&srv, "/model/gpt2", "{\"model\":\"tiny\",\"idx\":[1,2]}", &r), 0);
    ck_assert_int_eq(r.status, 200);
    ck_assert_int_eq(check_body("server", "post", "/model/gpt2", 200, r.body, r.len), 0);
    srvt_reply_free(&r);

    ck_assert_int_eq(srvt_get(&srv, "/attention/simple", &r), 0);
    ck_assert_int_eq(r.status, 405);
    ck_assert_int_eq(check_body("server", "post", "/attention/simple", 405, r.body, r.len), 0);
    srvt_reply_free(&r);

    ck_assert_int_eq(srvt_get(&srv, "/no/such/path", &r), 0);
    ck_assert_int_eq(r.status, 404);
    json_t *j = json_loadb(r.body, r.len, 0, NULL);
    jschema_error e;
    const json_t *err_schema = jschema_resolve(g_doc, "#/components/schemas/Error");
    ck_assert_ptr_nonnull(err_schema);
    ck_assert_msg(jschema_validate(g_doc, err_schema, j, &e) == JSCHEMA_VALID, "404 body at %s: %s", e.path,
                  e.message);
    json_decref(j);
    srvt_reply_free(&r);

    int rc = srvt_stop(&srv, 30);
    ck_assert_msg(rc == 0, "server exit status %d, log:\n%s", rc, srv.log ? srv.log : "");
}
END_TEST

static Suite *replies_suite(void) {
    Suite *s = suite_create("api_openapi_replies");
    const TTest *validator[] = {t_validator_types, t_validator_objects_arrays,
                                t_validator_combinators_refs, t_validator_fails_loudly,
                                t_document_schemas_understood, NULL};
    tcase_add_checked_fixture(tcase_with(s, "validator", 0, validator), load_doc, free_doc);
    const TTest *replies[] = {t_examples, t_model_replies, t_every_return_name, t_options_and_shapes,
                              t_every_error_status, t_error_bodies, NULL};
    tcase_add_checked_fixture(tcase_with(s, "replies", 120, replies), load_doc, free_doc);
    const TTest *server[] = {t_server_get_endpoints, NULL};
    tcase_add_checked_fixture(tcase_with(s, "server", 120, server), srv_setup, srv_teardown);
    return s;
}

const test_program TEST_PROGRAM = {.suites = {replies_suite}};
