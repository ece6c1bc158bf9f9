/* test_api_parse.c - requests in: inputs in every form, and every request
 * error with its status, code and field, through api_handle. */
#include <check.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "tests/support/check_main.h"
#include "support/api_call.h"

#define X6 "[[0.43,0.15,0.89],[0.55,0.87,0.66],[0.57,0.85,0.64],[0.22,0.58,0.33],[0.77,0.25,0.10],[0.05,0.80,0.55]]"
#define MHA_HEAD "\"module\":\"MultiHeadAttention\",\"d_out\":2,\"num_heads\":2,\"context_length\":6,"

typedef tapi_reply reply_t;

static reply_t call(api_endpoint ep, const char *body, size_t max_elements) {
    api_limits lim = {.max_elements = max_elements ? max_elements : 100000000};
    return tapi_handle(ep, body, &lim);
}

static void reply_free(reply_t *r) { tapi_reply_free(r); }

/* Asserts an error reply: status, code and field (NULL = JSON null); returns the message. */
static void expect_error_max(api_endpoint ep, const char *body, size_t max, int status,
                             const char *code, const char *field, const char *msg_part) {
    reply_t r = call(ep, body, max);
    ck_assert_msg(r.status == status, "status %d, expected %d: %.400s", r.status, status, r.text);
    json_t *e = json_object_get(r.j, "error");
    ck_assert_ptr_nonnull(e);
    ck_assert_int_eq(json_integer_value(json_object_get(e, "status")), status);
    ck_assert_str_eq(json_string_value(json_object_get(e, "code")), code);
    json_t *f = json_object_get(e, "field");
    if (field == NULL)
        ck_assert_msg(json_is_null(f), "field should be null: %s", r.text);
    else
        ck_assert_msg(json_is_string(f) && strcmp(json_string_value(f), field) == 0,
                      "field: expected %s in %s", field, r.text);
    const char *m = json_string_value(json_object_get(e, "message"));
    ck_assert_ptr_nonnull(m);
    if (msg_part) ck_assert_msg(strstr(m, msg_part) != NULL, "message lacks \"%s\": %s", msg_part, m);
    reply_free(&r);
}

static void expect_error(api_endpoint ep, const char *body, int status, const char *code,
                         const char *field, const char *msg_part) {
    expect_error_max(ep, body, 0, status, code, field, msg_part);
}

/* A request to /attention/simple that fails with 400, code and field (NULL:
 * JSON null), its message containing msg_part (NULL: any message). */
typedef struct {
    const char *body, *code, *field, *msg_part;
} simple_error;

static void expect_simple_errors(const simple_error *cases, size_t n) {
    for (size_t i = 0; i < n; i++)
        expect_error(API_EP_SIMPLE, cases[i].body, 400, cases[i].code, cases[i].field,
                     cases[i].msg_part);
}
#define EXPECT_SIMPLE_ERRORS(cases) expect_simple_errors(cases, sizeof cases / sizeof cases[0])

/* rank of a nested reply tensor */
static int rank_of(json_t *t) {
    int r = 0;
    while (json_is_array(t)) {
        r++;
        t = json_array_get(t, 0);
    }
    return r;
}

/* ==== inputs in every form ================================================ */

START_TEST(test_nested_unbatched) {
    reply_t r = call(API_EP_MULTIHEAD, "{" MHA_HEAD "\"init\":{\"seed\":123},\"inputs\":" X6 "}", 0);
    ck_assert_int_eq(r.status, 200);
    json_t *ctx = json_object_get(r.j, "context");
    ck_assert_int_eq(rank_of(ctx), 2);
    ck_assert_int_eq(json_array_size(ctx), 6);
    ck_assert_int_eq(rank_of(json_object_get(r.j, "attn_weights")), 3); /* [H][T][T] */
    ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(r.j, "shape"), "batch")), 1);
    reply_free(&r);
}
END_TEST

START_TEST(test_nested_batched) {
    reply_t r = call(API_EP_MULTIHEAD,
                     "{" MHA_HEAD "\"init\":{\"seed\":123},\"inputs\":[" X6 "," X6 "]}", 0);
    ck_assert_int_eq(r.status, 200);
    ck_assert_int_eq(rank_of(json_object_get(r.j, "context")), 3);
    ck_assert_int_eq(json_array_size(json_object_get(r.j, "context")), 2);
    ck_assert_int_eq(rank_of(json_object_get(r.j, "attn_weights")), 4);
    ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(r.j, "shape"), "batch")), 2);
    reply_free(&r);
}
END_TEST

START_TEST(test_flat_equals_nested) {
    reply_t a = call(API_EP_CAUSAL, "{\"d_out\":2,\"init\":{\"seed\":1},\"inputs\":[" X6 "]}", 0);
    reply_t b = call(API_EP_CAUSAL,
                     "{\"d_out\":2,\"init\":{\"seed\":1},\"inputs\":{\"shape\":[1,6,3],\"data\":"
                     "[0.43,0.15,0.89,0.55,0.87,0.66,0.57,0.85,0.64,0.22,0.58,0.33,0.77,0.25,0.10,0.05,0.80,0.55]}}",
                     0);
    ck_assert_int_eq(a.status, 200);
    ck_assert_int_eq(b.status, 200);
    ck_assert_str_eq(a.text, b.text);
    reply_free(&a);
    reply_free(&b);
}
END_TEST

START_TEST(test_null_is_absent) {
    reply_t r = call(API_EP_CAUSAL,
                     "{\"d_out\":2,\"d_in\":null,\"context_length\":null,\"scale\":null,"
                     "\"init\":{\"seed\":1},\"inputs\":" X6 "}", 0);
    ck_assert_int_eq(r.status, 200);
    reply_free(&r);
}
END_TEST

START_TEST(test_integers_and_masks) {
    /* integers are numbers; masks take booleans or 0/1, attn_mask "-inf" is additive */
    reply_t r = call(API_EP_SELF,
                     "{\"d_out\":2,\"init\":{\"seed\":1},\"inputs\":[[1,0],[0,1],[1,1]],"
                     "\"key_padding_mask\":[0,0,1],\"attn_mask\":[[0,\"-inf\",0],[0,0,null],[0,-1.5,0]],"
                     "\"return\":[\"mask\",\"masked_scores\"]}", 0);
    ck_assert_msg(r.status == 200, "%s", r.text);
    json_t *mask = json_object_get(r.j, "mask");
    ck_assert_int_eq(json_integer_value(json_array_get(json_array_get(mask, 0), 2)), 1);
    ck_assert_int_eq(json_integer_value(json_array_get(json_array_get(mask, 0), 1)), 1);
    ck_assert_int_eq(json_integer_value(json_array_get(json_array_get(mask, 2), 1)), 0);
    json_t *ms = json_object_get(r.j, "masked_scores");
    ck_assert(json_is_null(json_array_get(json_array_get(ms, 0), 1)));
    ck_assert(json_is_number(json_array_get(json_array_get(ms, 2), 1)));
    reply_free(&r);
}
END_TEST

/* ==== malformed inputs ===================================================== */

START_TEST(test_ragged) {
    static const simple_error cases[] = {
        {"{\"inputs\":[[1,2,3],[1,2]]}", "invalid_shape", "inputs[1]",
         "inputs[1] has 2 values, expected 3"},
        {"{\"inputs\":[[[1,2],[3,4]],[[1,2]]]}", "invalid_shape", "inputs[1]", NULL},
        {"{\"inputs\":[[1,2],[3,[4]]]}", "invalid_shape", "inputs[1][1]", NULL},
        {"{\"inputs\":[[1,2],3]}", "invalid_shape", "inputs[1]", NULL},
    };
    EXPECT_SIMPLE_ERRORS(cases);
}
END_TEST

START_TEST(test_non_number) {
    static const simple_error cases[] = {
        {"{\"inputs\":[[1,2],[3,\"4\"]]}", "invalid_type", "inputs[1][1]", "a string"},
        {"{\"inputs\":[[1,true],[3,4]]}", "invalid_type", "inputs[0][1]", "a boolean"},
        {"{\"inputs\":[[1,null],[3,4]]}", "invalid_type", "inputs[0][1]", NULL},
        {"{\"inputs\":\"x\"}", "invalid_type", "inputs", NULL},
        {"{\"inputs\":{\"shape\":[1,2],\"data\":[1,{}]}}", "invalid_shape", "inputs.data[1]", NULL},
    };
    EXPECT_SIMPLE_ERRORS(cases);
}
END_TEST

START_TEST(test_non_finite) {
    /* jansson rejects NaN and Infinity as JSON; beyond float32 is ours */
    static const simple_error cases[] = {
        {"{\"inputs\":[[1,2],[3,1e39]]}", "non_finite", "inputs[1][1]", "float32"},
        {"{\"inputs\":[[1,2],[3,-3.5e38]]}", "non_finite", "inputs[1][1]", NULL},
        {"{\"inputs\":[[1,NaN]]}", "invalid_json", NULL, NULL},
        {"{\"inputs\":[[1,Infinity]]}", "invalid_json", NULL, NULL},
    };
    EXPECT_SIMPLE_ERRORS(cases);
}
END_TEST

START_TEST(test_empty_and_rank) {
    static const simple_error cases[] = {
        {"{\"inputs\":[]}", "invalid_shape", "inputs", "empty"},
        {"{\"inputs\":[[1],[]]}", "invalid_shape", "inputs[1]", "empty"},
        {"{\"inputs\":[[]]}", "invalid_shape", "inputs[0]", "empty"},
        {"{\"inputs\":[1,2,3]}", "invalid_shape", "inputs", "axes"},
        {"{\"inputs\":[[[[1]]]]}", "invalid_shape", "inputs[0][0][0]", "more than 3 axes"},
        {"{\"inputs\":{\"shape\":[2,0],\"data\":[]}}", "invalid_shape", "inputs.shape[1]", NULL},
        {"{\"inputs\":{\"shape\":[2,2],\"data\":[1,2,3]}}", "invalid_shape", "inputs.data",
         "needs 4"},
        {"{\"inputs\":{\"shape\":[2,2]}}", "missing_field", "inputs.data", NULL},
        {"{\"inputs\":{\"shape\":[1,1],\"data\":[1],\"dtype\":\"f\"}}", "unknown_field",
         "inputs.dtype", NULL},
        {"{}", "missing_field", "inputs", NULL},
    };
    EXPECT_SIMPLE_ERRORS(cases);
}
END_TEST

/* ==== fields ================================================================ */

START_TEST(test_wrong_types) {
    expect_error(API_EP_CAUSAL, "{\"d_out\":\"2\",\"init\":{\"seed\":1},\"inputs\":" X6 "}", 400,
                 "invalid_type", "d_out", "an integer");
    expect_error(API_EP_CAUSAL, "{\"d_out\":2.5,\"init\":{\"seed\":1},\"inputs\":" X6 "}", 400,
                 "invalid_type", "d_out", NULL);
    expect_error(API_EP_CAUSAL, "{\"d_out\":2,\"causal\":1,\"init\":{\"seed\":1},\"inputs\":" X6 "}",
                 400, "invalid_type", "causal", NULL);
    expect_error(API_EP_CAUSAL, "{\"d_out\":2,\"dropout\":\"0.1\",\"init\":{\"seed\":1},\"inputs\":" X6 "}",
                 400, "invalid_type", "dropout", NULL);
    expect_error(API_EP_CAUSAL, "{\"d_out\":2,\"init\":{\"seed\":\"1\"},\"inputs\":" X6 "}", 400,
                 "invalid_type", "init.seed", NULL);
    expect_error(API_EP_CAUSAL, "{\"d_out\":2,\"init\":{\"sead\":1},\"inputs\":" X6 "}", 400,
                 "unknown_field", "init.sead", NULL);
    expect_error(API_EP_CAUSAL, "{\"d_out\":2,\"init\":7,\"inputs\":" X6 "}", 400, "invalid_type",
                 "init", NULL);
    expect_error(API_EP_CAUSAL, "{\"d_out\":2,\"init\":{\"seed\":1},\"tokens\":[1,2,3,4,5,6],\"inputs\":" X6 "}",
                 400, "invalid_type", "tokens[0]", NULL);
    expect_error(API_EP_CAUSAL, "{\"d_out\":2,\"init\":{\"seed\":1},\"mask_method\":\"zero\",\"inputs\":" X6 "}",
                 400, "invalid_argument", "mask_method", "\"renorm\"");
    expect_error(API_EP_CAUSAL, "{\"d_out\":0,\"init\":{\"seed\":1},\"inputs\":" X6 "}", 400,
                 "invalid_argument", "d_out", NULL);
    expect_error(API_EP_CAUSAL, "{\"d_out\":2,\"dropout\":1.5,\"init\":{\"seed\":1},\"inputs\":" X6 "}",
                 400, "invalid_argument", "dropout", NULL);
    expect_error(API_EP_CAUSAL, "{\"d_out\":2,\"precision\":10,\"init\":{\"seed\":1},\"inputs\":" X6 "}",
                 400, "invalid_argument", "precision", NULL);
    expect_error(API_EP_CAUSAL, "[1,2]", 400, "invalid_type", NULL, "JSON object");
    expect_error(API_EP_SIMPLE, "{\"normalization\":\"max\",\"inputs\":" X6 "}", 400,
                 "invalid_argument", "normalization", NULL);
}
END_TEST

START_TEST(test_unknown_fields) {
    expect_error(API_EP_CAUSAL, "{\"d_out\":2,\"d_outt\":3,\"init\":{\"seed\":1},\"inputs\":" X6 "}",
                 400, "unknown_field", "d_outt", "unknown field \"d_outt\"");
    /* a real field of another module */
    expect_error(API_EP_MULTIHEAD, "{" MHA_HEAD "\"n_head\":2,\"init\":{\"seed\":1},\"inputs\":" X6 "}",
                 400, "unknown_field", "n_head", "MultiHeadAttention does not take");
    expect_error(API_EP_SIMPLE, "{\"init\":{\"seed\":1},\"inputs\":" X6 "}", 400, "unknown_field",
                 "init", NULL);
    expect_error(API_EP_SELF, "{\"d_out\":2,\"dropout\":0.1,\"init\":{\"seed\":1},\"inputs\":" X6 "}",
                 400, "unknown_field", "dropout", "SelfAttention_v2 does not take");
}
END_TEST

START_TEST(test_bad_module_for_endpoint) {
    expect_error(API_EP_SELF, "{\"module\":\"CausalAttention\",\"d_out\":2,\"inputs\":" X6 "}", 400,
                 "invalid_argument", "module", "\"SelfAttention_v2\", \"SelfAttention_v1\"");
    expect_error(API_EP_MULTIHEAD, "{\"module\":\"Transformer\",\"inputs\":" X6 "}", 400,
                 "invalid_argument", "module", "torch.nn.MultiheadAttention");
    expect_error(API_EP_SIMPLE, "{\"module\":7,\"inputs\":" X6 "}", 400, "invalid_type", "module",
                 NULL);
    expect_error(API_EP_SDPA, "{\"module\":\"simple\",\"inputs\":" X6 "}", 400, "invalid_argument",
                 "module", "scaled_dot_product_attention");
}
END_TEST

START_TEST(test_missing_fields) {
    expect_error(API_EP_CAUSAL, "{\"d_out\":2,\"inputs\":" X6 "}", 400, "missing_field", "init",
                 "state_dict");
    expect_error(API_EP_CAUSAL, "{\"init\":{\"seed\":1},\"inputs\":" X6 "}", 400, "missing_field",
                 "d_out", NULL);
    expect_error(API_EP_MULTIHEAD, "{\"d_out\":2,\"init\":{\"seed\":1},\"inputs\":" X6 "}", 400,
                 "missing_field", "num_heads", NULL);
    expect_error(API_EP_MULTIHEAD,
                 "{\"module\":\"GPT2CausalSelfAttention\",\"init\":{\"seed\":1},\"inputs\":" X6 "}",
                 400, "missing_field", "n_head", NULL);
    expect_error(API_EP_CAUSAL, "{\"d_out\":2,\"init\":{\"seed\":1},\"state_dict\":{},\"inputs\":" X6 "}",
                 400, "invalid_argument", "state_dict", "not both");
    expect_error(API_EP_SDPA, "{\"query\":[[1]],\"key\":[[1]]}", 400, "missing_field", "value", NULL);
}
END_TEST

/* ==== state_dict ============================================================ */

#define V2_SD_Q "\"W_query.weight\":[[1,0,0],[0,1,0]]"
#define V2_SD_K "\"W_key.weight\":[[1,0,0],[0,1,0]]"
#define V2_SD_V "\"W_value.weight\":[[1,0,0],[0,1,0]]"

START_TEST(test_state_dict_ok) {
    reply_t r = call(API_EP_SELF,
                     "{\"d_out\":2,\"state_dict\":{" V2_SD_Q "," V2_SD_K "," V2_SD_V "},"
                     "\"inputs\":" X6 ",\"return\":[\"queries\"]}", 0);
    ck_assert_msg(r.status == 200, "%s", r.text);
    /* W_query picks the first two columns */
    json_t *q0 = json_array_get(json_object_get(r.j, "queries"), 0);
    ck_assert_double_eq_tol(json_number_value(json_array_get(q0, 0)), 0.43, 1e-6);
    ck_assert_double_eq_tol(json_number_value(json_array_get(q0, 1)), 0.15, 1e-6);
    reply_free(&r);
}
END_TEST

START_TEST(test_state_dict_errors) {
    expect_error(API_EP_SELF, "{\"d_out\":2,\"state_dict\":{" V2_SD_Q "," V2_SD_V "},\"inputs\":" X6 "}",
                 400, "missing_field", "state_dict.W_key.weight", "[2, 3]");
    expect_error(API_EP_SELF,
                 "{\"d_out\":2,\"state_dict\":{" V2_SD_Q "," V2_SD_K "," V2_SD_V ",\"W_key.bias\":[0,0]},"
                 "\"inputs\":" X6 "}",
                 400, "invalid_argument", "state_dict.W_key.bias", "W_query.weight [2, 3]");
    expect_error(API_EP_SELF,
                 "{\"d_out\":2,\"state_dict\":{\"W_query.weight\":[[1,0],[0,1],[0,0]]," V2_SD_K "," V2_SD_V "},"
                 "\"inputs\":" X6 "}",
                 400, "invalid_shape", "state_dict.W_query.weight", "expected [2, 3]");
    expect_error(API_EP_SELF,
                 "{\"d_out\":2,\"state_dict\":{\"W_query.weight\":[[1,0,0],[0,1]]," V2_SD_K "," V2_SD_V "},"
                 "\"inputs\":" X6 "}",
                 400, "invalid_shape", "state_dict.W_query.weight[1]", "expected shape [2, 3]");
    expect_error(API_EP_SELF,
                 "{\"d_out\":2,\"state_dict\":{\"W_query.weight\":[[1,0,0],[0,1,\"x\"]]," V2_SD_K "," V2_SD_V "},"
                 "\"inputs\":" X6 "}",
                 400, "invalid_type", "state_dict.W_query.weight[1][2]", NULL);
    /* a buffer is checked, not trusted */
    expect_error(API_EP_CAUSAL,
                 "{\"d_out\":2,\"context_length\":2,\"state_dict\":{" V2_SD_Q "," V2_SD_K "," V2_SD_V
                 ",\"mask\":[[0,0],[0,0]]},\"inputs\":[[1,2,3],[4,5,6]]}",
                 400, "invalid_argument", "state_dict.mask", "triu");
    /* and may be given right */
    reply_t r = call(API_EP_CAUSAL,
                     "{\"d_out\":2,\"context_length\":2,\"state_dict\":{" V2_SD_Q "," V2_SD_K "," V2_SD_V
                     ",\"mask\":[[0,1],[0,0]]},\"inputs\":[[1,2,3],[4,5,6]]}", 0);
    ck_assert_msg(r.status == 200, "%s", r.text);
    reply_free(&r);
    expect_error(API_EP_SELF, "{\"d_out\":2,\"state_dict\":[],\"inputs\":" X6 "}", 400,
                 "invalid_type", "state_dict", NULL);
}
END_TEST

/* ==== sizes ================================================================= */

START_TEST(test_shape_errors) {
    expect_error(API_EP_CAUSAL, "{\"d_in\":4,\"d_out\":2,\"init\":{\"seed\":1},\"inputs\":" X6 "}", 400,
                 "invalid_shape", "d_in", "width 3");
    expect_error(API_EP_CAUSAL,
                 "{\"d_out\":2,\"context_length\":4,\"init\":{\"seed\":1},\"inputs\":" X6 "}", 400,
                 "invalid_shape", "context_length", "exceed");
    expect_error(API_EP_MULTIHEAD, "{\"d_out\":3,\"num_heads\":2,\"init\":{\"seed\":1},\"inputs\":" X6 "}",
                 400, "invalid_shape", "num_heads", "divisible");
    expect_error(API_EP_MULTIHEAD,
                 "{\"module\":\"GPT2CausalSelfAttention\",\"n_head\":2,\"block_size\":5,"
                 "\"init\":{\"seed\":1},\"inputs\":[[1,2],[3,4],[5,6],[7,8],[9,1],[2,3]]}",
                 400, "invalid_shape", "block_size", NULL);
    expect_error(API_EP_MULTIHEAD,
                 "{\"module\":\"GPT2CausalSelfAttention\",\"n_head\":2,\"init\":{\"seed\":1},\"inputs\":" X6 "}",
                 400, "invalid_shape", "n_head", "n_embd");
    expect_error(API_EP_CAUSAL, "{\"d_out\":2,\"init\":{\"seed\":1},\"tokens\":[\"a\"],\"inputs\":" X6 "}",
                 400, "invalid_shape", "tokens", NULL);
    expect_error(API_EP_CAUSAL, "{\"d_out\":2,\"init\":{\"seed\":1},\"attn_mask\":[[0,1],[0,0]],\"inputs\":" X6 "}",
                 400, "invalid_shape", "attn_mask", "[6, 6]");
    expect_error(API_EP_CAUSAL,
                 "{\"d_out\":2,\"init\":{\"seed\":1},\"key_padding_mask\":[0,2,0,0,0,0],\"inputs\":" X6 "}",
                 400, "invalid_argument", "key_padding_mask[1]", NULL);
    expect_error(API_EP_CAUSAL,
                 "{\"d_out\":2,\"init\":{\"seed\":1},\"attn_mask\":[[true,0.5],[0,0]],\"inputs\":[[1],[2]]}",
                 400, "invalid_argument", "attn_mask", "mixes");
    expect_error(API_EP_CAUSAL, "{\"d_out\":2,\"init\":{\"seed\":1},\"return\":[\"context\",\"weights\"],\"inputs\":" X6 "}",
                 400, "invalid_argument", "return[1]", "attn_weights");
    expect_error(API_EP_SDPA, "{\"query\":[[1,2]],\"key\":[[1,2,3]],\"value\":[[1]]}", 400,
                 "invalid_shape", "key", NULL);
    expect_error(API_EP_SDPA, "{\"query\":[[1,2]],\"key\":[[[1,2]]],\"value\":[[1]]}", 400,
                 "invalid_shape", "key[0][0]", "more than 2 axes");
    expect_error(API_EP_SDPA, "{\"query\":[[[1,2]],[[1,2]],[[1,2]]],\"key\":[[[1,2]],[[1,2]]],"
                 "\"value\":[[[1]],[[1]]]}", 400, "invalid_shape", "key", "multiple");
    expect_error(API_EP_MULTIHEAD,
                 "{\"module\":\"torch.nn.MultiheadAttention\",\"num_heads\":1,\"kdim\":2,"
                 "\"init\":{\"seed\":1},\"inputs\":[[1,2,3]]}", 400, "invalid_argument", "key", NULL);
    expect_error(API_EP_MULTIHEAD,
                 "{\"module\":\"torch.nn.MultiheadAttention\",\"num_heads\":1,\"kdim\":2,"
                 "\"init\":{\"seed\":1},\"inputs\":[[1,2,3]],\"key\":[[1,2,3]]}", 400,
                 "invalid_shape", "kdim", NULL);
}
END_TEST

START_TEST(test_too_large_before_allocating) {
    /* a 10^12-element mask buffer (4 TB): the plan says no before any malloc,
     * else this would be a 503 (or worse) */
    expect_error(API_EP_CAUSAL,
                 "{\"d_out\":2,\"context_length\":1000000,\"init\":{\"seed\":1},\"inputs\":" X6 "}",
                 413, "too_large", NULL, "limit");
    /* the limit applies to the whole request: a small one refuses the seed example */
    expect_error_max(API_EP_MULTIHEAD, "{" MHA_HEAD "\"init\":{\"seed\":123},\"inputs\":" X6 "}", 50,
                     413, "too_large", NULL, NULL);
    /* and while reading the inputs */
    expect_error_max(API_EP_SIMPLE, "{\"inputs\":" X6 "}", 10, 413, "too_large", "inputs", NULL);
    expect_error_max(API_EP_SIMPLE, "{\"inputs\":{\"shape\":[100000,100000],\"data\":[]}}", 1000000,
                     413, "too_large", "inputs", NULL);
    /* num_heads * d_out past core's own bound */
    expect_error(API_EP_MULTIHEAD,
                 "{\"module\":\"MultiHeadAttentionWrapper\",\"d_out\":2000000000,\"num_heads\":2000,"
                 "\"init\":{\"seed\":1},\"inputs\":" X6 "}", 413, "too_large", "num_heads", NULL);
}
END_TEST

START_TEST(test_malformed_json) {
    expect_error(API_EP_SIMPLE, "{\"inputs\": [[1, 2]],\n \"tokens\": }", 400, "invalid_json", NULL,
                 "line 2, column");
    expect_error(API_EP_SIMPLE, "", 400, "invalid_json", NULL, "line");
    expect_error(API_EP_SIMPLE, "{\"inputs\":[[1]],\"inputs\":[[2]]}", 400, "invalid_json", NULL,
                 "duplicate");
    expect_error(API_EP_SIMPLE, "{\"inputs\":[[1]]} trailing", 400, "invalid_json", NULL, NULL);
}
END_TEST

START_TEST(test_echo_is_clamped) {
    char body[1024], name[400];
    memset(name, 'a', 300);
    memcpy(name + 10, "\\n\\u0001\\\"", 10); /* newline, control, quote in the JSON key */
    name[300] = '\0';
    snprintf(body, sizeof body, "{\"%s\":1,\"inputs\":[[1]]}", name);
    reply_t r = call(API_EP_SIMPLE, body, 0);
    ck_assert_int_eq(r.status, 400);
    json_t *e = json_object_get(r.j, "error");
    const char *f = json_string_value(json_object_get(e, "field"));
    const char *m = json_string_value(json_object_get(e, "message"));
    ck_assert_ptr_nonnull(f);
    ck_assert_uint_le(strlen(f), 131);
    for (const char *p = m; *p; p++) ck_assert_int_ge((unsigned char)*p, 0x20);
    for (const char *p = f; *p; p++) ck_assert_int_ge((unsigned char)*p, 0x20);
    ck_assert_ptr_nonnull(strstr(f, "..."));
    reply_free(&r);
}
END_TEST

static Suite *parse_suite(void) {
    Suite *s = suite_create("api_parse");
    const TTest *tests[] = {
        test_nested_unbatched, test_nested_batched, test_flat_equals_nested, test_null_is_absent,
        test_integers_and_masks, test_ragged, test_non_number, test_non_finite,
        test_empty_and_rank, test_wrong_types, test_unknown_fields, test_bad_module_for_endpoint,
        test_missing_fields, test_state_dict_ok, test_state_dict_errors, test_shape_errors,
        test_too_large_before_allocating, test_malformed_json, test_echo_is_clamped, NULL};
    tcase_with(s, "parse", 30, tests);
    return s;
}

const test_program TEST_PROGRAM = {.suites = {parse_suite}};
