/* test_api_binary.c - binary tensors in JSON: base64 (RFC 4648 vectors,
 * random round trips, rejected text), float16 (every half, rounding of
 * float32 checked against the nearest half found independently), and
 * requests whose tensors come as {"shape", "dtype", "base64"}. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api_internal.h"
#include "api/codec.h"

static uint64_t g_state = 0x9e3779b97f4a7c15ull;

static uint64_t next_u64(void) { /* xorshift64* */
    g_state ^= g_state >> 12;
    g_state ^= g_state << 25;
    g_state ^= g_state >> 27;
    return g_state * 0x2545f4914f6cdd1dull;
}

/* ==== base64 ============================================================== */

START_TEST(test_b64_rfc4648_vectors) {
    static const char *const plain[] = {"", "f", "fo", "foo", "foob", "fooba", "foobar"};
    static const char *const coded[] = {"", "Zg==", "Zm8=", "Zm9v", "Zm9vYg==", "Zm9vYmE=", "Zm9vYmFy"};
    for (int i = 0; i < 7; i++) {
        char out[16];
        size_t n = api__b64_encode((const uint8_t *)plain[i], strlen(plain[i]), out);
        ck_assert_uint_eq(n, strlen(coded[i]));
        ck_assert_int_eq(memcmp(out, coded[i], n), 0);
        ck_assert_uint_eq(api__b64_encoded_size(strlen(plain[i])), n);
        uint8_t back[16];
        ck_assert_uint_eq(api__b64_decoded_size(coded[i], n), strlen(plain[i]));
        ck_assert_uint_eq(api__b64_decode(coded[i], n, back), 0);
        ck_assert_int_eq(memcmp(back, plain[i], strlen(plain[i])), 0);
    }
    /* padding may be left out */
    uint8_t back[8];
    ck_assert_uint_eq(api__b64_decoded_size("Zm9vYg", 6), 4);
    ck_assert_uint_eq(api__b64_decode("Zm9vYg", 6, back), 0);
    ck_assert_int_eq(memcmp(back, "foob", 4), 0);
}
END_TEST

START_TEST(test_b64_rejects) {
    uint8_t out[16];
    ck_assert_uint_eq(api__b64_decoded_size("Zm9vY", 5), SIZE_MAX);   /* one char left over */
    ck_assert_uint_eq(api__b64_decoded_size("Zg=", 3), SIZE_MAX);     /* padding on a part */
    ck_assert_uint_eq(api__b64_decoded_size("Z===", 4), SIZE_MAX);
    ck_assert_uint_eq(api__b64_decode("Zm9v\nYg==", 9, out), 5);      /* a newline */
    ck_assert_uint_eq(api__b64_decode("Zm-v", 4, out), 3);            /* URL-safe alphabet */
    ck_assert_uint_eq(api__b64_decode("Zg==Zg==", 8, out), 3);        /* '=' inside */
    ck_assert_uint_eq(api__b64_decode("Zm9\xc3\xa9", 5, out), 4);
}
END_TEST

START_TEST(test_b64_random_round_trips) {
    uint8_t in[300], back[300];
    char text[404];
    for (int i = 0; i < 20000; i++) {
        size_t n = next_u64() % sizeof in;
        for (size_t k = 0; k < n; k++) in[k] = (uint8_t)next_u64();
        size_t m = api__b64_encode(in, n, text);
        ck_assert_uint_eq(m, api__b64_encoded_size(n));
        ck_assert_uint_eq(api__b64_decoded_size(text, m), n);
        ck_assert_uint_eq(api__b64_decode(text, m, back), 0);
        ck_assert_int_eq(memcmp(in, back, n), 0);
    }
}
END_TEST

/* ==== float16 ============================================================= */

static uint32_t bits(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

START_TEST(test_f16_every_half_round_trips) {
    for (uint32_t h = 0; h < 65536; h++) {
        float f = api__f16_to_f32((uint16_t)h);
        int e = h >> 10 & 31, m = h & 1023;
        if (e == 31 && m) {
            ck_assert(isnan(f));
            continue;
        }
        /* the value, from the definition of binary16 */
        double want = e == 0 ? ldexp(m, -24) : e == 31 ? INFINITY : ldexp(1024 + m, e - 25);
        if (h & 0x8000) want = -want;
        ck_assert_msg((double)f == want, "%04x: %.9g, want %.9g", h, (double)f, want);
        ck_assert_uint_eq(api__f32_to_f16(f), h);
    }
}
END_TEST

/* The nearest half of f, ties to the even one, found by search. */
static uint16_t nearest_half(float f) {
    double v = fabs((double)f);
    uint16_t best = 0;
    double best_d = INFINITY;
    uint16_t lo = 0, hi = 0x7c00; /* binary search the halves (monotone in their bits) */
    while (hi - lo > 1) {
        uint16_t mid = (uint16_t)((lo + hi) / 2);
        if ((double)api__f16_to_f32(mid) <= v) lo = mid;
        else hi = mid;
    }
    for (uint16_t c = lo; c <= hi && c <= 0x7c00; c++) {
        double d = fabs((double)api__f16_to_f32(c) - v);
        if (d < best_d || (d == best_d && !(c & 1))) {
            best = c;
            best_d = d;
        }
    }
    /* past the largest half by half an ulp or more: infinity */
    if (v >= 65520.0) best = 0x7c00;
    return (uint16_t)(best | (signbit(f) ? 0x8000 : 0));
}

START_TEST(test_f32_to_f16_rounds_to_nearest_even) {
    static const struct { float f; uint16_t h; } fixed[] = {
        {65504.0f, 0x7bff}, {65519.99f, 0x7bff}, {65520.0f, 0x7c00}, {1e10f, 0x7c00},
        {0x1p-24f, 0x0001}, {0x1p-25f, 0x0000}, {0x1.8p-25f, 0x0001}, {0x3p-26f, 0x0001},
        {1.0f / 3.0f, 0x3555}, {-2.0f, 0xc000}, {0.1f, 0x2e66}, {-0.0f, 0x8000},
    };
    for (size_t i = 0; i < sizeof fixed / sizeof *fixed; i++)
        ck_assert_msg(api__f32_to_f16(fixed[i].f) == fixed[i].h, "%a: %04x, want %04x",
                      (double)fixed[i].f, api__f32_to_f16(fixed[i].f), fixed[i].h);
    for (int i = 0; i < 300000; i++) {
        uint32_t u = (uint32_t)next_u64();
        if (i % 2) u = (u & 0x807fffffu) | (uint32_t)(100 + next_u64() % 45) << 23; /* half range */
        float f;
        memcpy(&f, &u, sizeof f);
        if (isnan(f)) continue;
        ck_assert_msg(api__f32_to_f16(f) == nearest_half(f), "%a (%08x): %04x, want %04x",
                      (double)f, bits(f), api__f32_to_f16(f), nearest_half(f));
    }
}
END_TEST

/* ==== requests ============================================================ */

static char *b64_floats(const float *x, size_t n) {
    uint8_t *raw = malloc(n * 4);
    for (size_t i = 0; i < n; i++) {
        uint32_t u = bits(x[i]);
        for (int k = 0; k < 4; k++) raw[4 * i + (size_t)k] = (uint8_t)(u >> (8 * k));
    }
    char *s = malloc(api__b64_encoded_size(n * 4) + 1);
    s[api__b64_encode(raw, n * 4, s)] = '\0';
    free(raw);
    return s;
}

static char *b64_halves(const float *x, size_t n) {
    uint8_t *raw = malloc(n * 2);
    for (size_t i = 0; i < n; i++) {
        uint16_t h = api__f32_to_f16(x[i]);
        raw[2 * i] = (uint8_t)h;
        raw[2 * i + 1] = (uint8_t)(h >> 8);
    }
    char *s = malloc(api__b64_encoded_size(n * 2) + 1);
    s[api__b64_encode(raw, n * 2, s)] = '\0';
    free(raw);
    return s;
}

static api_reply handle(api_endpoint ep, const char *body) {
    api_limits lim = {.max_elements = 1 << 24};
    api_reply r;
    api_handle(ep, body, strlen(body), &lim, &r);
    return r;
}

static const float SEED_X[18] = {0.43f, 0.15f, 0.89f, 0.55f, 0.87f, 0.66f, 0.57f, 0.85f, 0.64f,
                                 0.22f, 0.58f, 0.33f, 0.77f, 0.25f, 0.10f, 0.05f, 0.80f, 0.55f};

#define MHA "{\"module\": \"MultiHeadAttention\", \"d_in\": 3, \"d_out\": 2, \"num_heads\": 2," \
            " \"context_length\": 6, \"init\": {\"seed\": 123}, \"return\": [\"context\", \"attn_weights\"],"

START_TEST(test_base64_inputs_same_reply) {
    char nested[1024], binary[1024];
    int n = snprintf(nested, sizeof nested, MHA " \"inputs\": [");
    for (int t = 0; t < 6; t++)
        n += snprintf(nested + n, sizeof nested - (size_t)n, "%s[%.9g, %.9g, %.9g]", t ? ", " : "",
                      (double)SEED_X[3 * t], (double)SEED_X[3 * t + 1], (double)SEED_X[3 * t + 2]);
    snprintf(nested + n, sizeof nested - (size_t)n, "]}");
    char *b64 = b64_floats(SEED_X, 18);
    snprintf(binary, sizeof binary,
             MHA " \"inputs\": {\"shape\": [6, 3], \"dtype\": \"float32\", \"base64\": \"%s\"}}", b64);
    api_reply a = handle(API_EP_MULTIHEAD, nested), b = handle(API_EP_MULTIHEAD, binary);
    ck_assert_int_eq(a.status, 200);
    ck_assert_msg(b.status == 200 && strcmp(a.body.data, b.body.data) == 0, "%s\n%s", a.body.data,
                  b.body.data);
    api_buf_free(&a.body);
    api_buf_free(&b.body);
    /* dtype defaults to float32 */
    snprintf(binary, sizeof binary, MHA " \"inputs\": {\"shape\": [1, 6, 3], \"base64\": \"%s\"}}", b64);
    b = handle(API_EP_MULTIHEAD, binary);
    ck_assert_int_eq(b.status, 200);
    api_buf_free(&b.body);
    free(b64);
}
END_TEST

START_TEST(test_float16_inputs_are_the_rounded_values) {
    float halves[18];
    for (int i = 0; i < 18; i++) halves[i] = api__f16_to_f32(api__f32_to_f16(SEED_X[i]));
    char *h = b64_halves(SEED_X, 18), *f = b64_floats(halves, 18);
    char one[1024], two[1024];
    snprintf(one, sizeof one, MHA " \"inputs\": {\"shape\": [6, 3], \"dtype\": \"float16\", \"base64\": \"%s\"}}", h);
    snprintf(two, sizeof two, MHA " \"inputs\": {\"shape\": [6, 3], \"dtype\": \"float32\", \"base64\": \"%s\"}}", f);
    api_reply a = handle(API_EP_MULTIHEAD, one), b = handle(API_EP_MULTIHEAD, two);
    ck_assert_int_eq(a.status, 200);
    ck_assert_str_eq(a.body.data, b.body.data);
    api_buf_free(&a.body);
    api_buf_free(&b.body);
    free(h);
    free(f);
}
END_TEST

START_TEST(test_uint8_mask_is_boolean) {
    /* key_padding_mask [1][6]: last two keys are padding, as 0/1 bytes */
    uint8_t kpm[6] = {0, 0, 0, 0, 1, 1};
    char k64[16], one[1024], two[1024];
    k64[api__b64_encode(kpm, 6, k64)] = '\0';
    snprintf(one, sizeof one, MHA " \"inputs\": [[0.43, 0.15, 0.89], [0.55, 0.87, 0.66],"
             " [0.57, 0.85, 0.64], [0.22, 0.58, 0.33], [0.77, 0.25, 0.10], [0.05, 0.80, 0.55]],"
             " \"key_padding_mask\": {\"shape\": [1, 6], \"dtype\": \"uint8\", \"base64\": \"%s\"}}", k64);
    snprintf(two, sizeof two, MHA " \"inputs\": [[0.43, 0.15, 0.89], [0.55, 0.87, 0.66],"
             " [0.57, 0.85, 0.64], [0.22, 0.58, 0.33], [0.77, 0.25, 0.10], [0.05, 0.80, 0.55]],"
             " \"key_padding_mask\": [[false, false, false, false, true, true]]}");
    api_reply a = handle(API_EP_MULTIHEAD, one), b = handle(API_EP_MULTIHEAD, two);
    ck_assert_msg(a.status == 200, "%s", a.body.data);
    ck_assert_str_eq(a.body.data, b.body.data);
    api_buf_free(&a.body);
    api_buf_free(&b.body);
}
END_TEST

/* Each bad binary tensor is a 400 naming the field. */
START_TEST(test_binary_errors) {
    static const struct {
        const char *tensor, *code, *field;
    } cases[] = {
        {"{\"shape\": [6, 3], \"base64\": \"AAAA\"}", "invalid_shape", "inputs.base64"},
        {"{\"shape\": [6, 3], \"base64\": \"AAAAA\"}", "invalid_base64", "inputs.base64"},
        {"{\"shape\": [1, 1], \"base64\": \"AA-AAA==\"}", "invalid_base64", "inputs.base64"},
        {"{\"shape\": [1, 1], \"dtype\": \"float64\", \"base64\": \"AAAAAA==\"}", "invalid_argument",
         "inputs.dtype"},
        {"{\"shape\": [1, 1], \"dtype\": \"uint8\", \"base64\": \"AA==\"}", "invalid_argument",
         "inputs.dtype"},
        {"{\"shape\": [1, 1], \"dtype\": 4, \"base64\": \"AAAAAA==\"}", "invalid_type", "inputs.dtype"},
        {"{\"shape\": [1, 1], \"base64\": 12}", "invalid_type", "inputs.base64"},
        {"{\"base64\": \"AAAAAA==\"}", "missing_field", "inputs.shape"},
        {"{\"shape\": [1, 0], \"base64\": \"\"}", "invalid_shape", "inputs.shape[1]"},
        {"{\"shape\": [1], \"base64\": \"AAAAAA==\"}", "invalid_shape", "inputs.shape"},
        {"{\"shape\": [1, 1], \"base64\": \"AADAfw==\"}", "non_finite", "inputs[0][0]"}, /* NaN */
        {"{\"shape\": [1, 1], \"base64\": \"AACAfw==\"}", "non_finite", "inputs[0][0]"}, /* inf */
        {"{\"shape\": [1, 1], \"base64\": \"AAAAAA==\", \"data\": [1]}", "unknown_field", "inputs.data"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char body[512];
        snprintf(body, sizeof body, "{\"inputs\": %s}", cases[i].tensor);
        api_reply r = handle(API_EP_SIMPLE, body);
        json_t *j = json_loads(r.body.data, 0, NULL);
        json_t *err = json_object_get(j, "error");
        ck_assert_msg(r.status == 400 &&
                          strcmp(json_string_value(json_object_get(err, "code")), cases[i].code) == 0 &&
                          strcmp(json_string_value(json_object_get(err, "field")), cases[i].field) == 0,
                      "%s: %d %s", cases[i].tensor, r.status, r.body.data);
        json_decref(j);
        api_buf_free(&r.body);
    }
}
END_TEST

/* The element budget applies before the decoded tensor is allocated. */
START_TEST(test_binary_budget) {
    const char *body = "{\"inputs\": {\"shape\": [100000, 100000], \"base64\": \"AAAA\"}}";
    api_reply r = handle(API_EP_SIMPLE, body);
    ck_assert_int_eq(r.status, 413);
    api_buf_free(&r.body);
}
END_TEST

Suite *binary_suite(void) {
    Suite *s = suite_create("api_binary");
    TCase *tc = tcase_create("binary");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_b64_rfc4648_vectors);
    tcase_add_test(tc, test_b64_rejects);
    tcase_add_test(tc, test_b64_random_round_trips);
    tcase_add_test(tc, test_f16_every_half_round_trips);
    tcase_add_test(tc, test_f32_to_f16_rounds_to_nearest_even);
    tcase_add_test(tc, test_base64_inputs_same_reply);
    tcase_add_test(tc, test_float16_inputs_are_the_rounded_values);
    tcase_add_test(tc, test_uint8_mask_is_boolean);
    tcase_add_test(tc, test_binary_errors);
    tcase_add_test(tc, test_binary_budget);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) {
    SRunner *sr = srunner_create(binary_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
