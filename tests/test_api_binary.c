/* test_api_binary.c - binary tensors in JSON: base64 (RFC 4648 vectors,
 * random round trips, rejected text), float16 (every half, rounding of
 * float32 checked against the nearest half found independently), and
 * requests whose tensors come as {"shape", "dtype", "base64"}, and replies
 * in base64 and safetensors, float32 and float16, against the nested JSON. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/model/model.h"
#include "api/module/module.h"
#include "api/numbers/numbers.h"
#include "api/numbers/numbers.h"
#include "tests/support/files.h"
#include "tests/support/check_main.h"

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

#define B64_ALPHABET "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"

START_TEST(test_b64_random_round_trips) {
    uint8_t in[300], back[300];
    char text[404];
    for (int i = 0; i < 20000; i++) {
        size_t n = next_u64() % sizeof in;
        for (size_t k = 0; k < n; k++) in[k] = (uint8_t)next_u64();
        size_t m = api__b64_encode(in, n, text);
        ck_assert_uint_eq(m, api__b64_encoded_size(n));
        for (size_t k = 0; k < n; k += 3) { /* against the definition, a group at a time */
            uint32_t w = (uint32_t)in[k] << 16 | (k + 1 < n ? (uint32_t)in[k + 1] << 8 : 0) |
                         (k + 2 < n ? in[k + 2] : 0);
            for (int c = 0; c < 4; c++) {
                char want = c > 1 && k + (size_t)c > n ? '=' : B64_ALPHABET[w >> (18 - 6 * c) & 63];
                ck_assert_int_eq(text[k / 3 * 4 + (size_t)c], want);
            }
        }
        ck_assert_uint_eq(api__b64_decoded_size(text, m), n);
        ck_assert_uint_eq(api__b64_decode(text, m, back), 0);
        ck_assert_int_eq(memcmp(in, back, n), 0);
    }
}
END_TEST

/* Every byte at every position of a 100-character text (three 32-character
 * blocks of the vector decoder and a tail): the 64 letters decode as a
 * table lookup says, anything else is reported at its own position, and
 * nothing is written past the decoded size. */
START_TEST(test_b64_every_byte_everywhere) {
    static const char alphabet[] = B64_ALPHABET;
    char text[100];
    for (size_t k = 0; k < sizeof text; k++) text[k] = alphabet[next_u64() % 64];
    uint8_t out[75 + 8], want[75];
    for (size_t at = 0; at < sizeof text; at++)
        for (int byte = 0; byte < 256; byte++) {
            char t[100];
            memcpy(t, text, sizeof t);
            t[at] = (char)byte;
            const char *hit = byte ? memchr(alphabet, byte, 64) : NULL;
            memset(out, 0xa5, sizeof out);
            size_t r = api__b64_decode(t, sizeof t, out);
            for (size_t k = 75; k < sizeof out; k++) ck_assert_uint_eq(out[k], 0xa5);
            if (!hit) {
                /* '=' at the end is padding; elsewhere it is an error too */
                if (byte == '=' && at == sizeof t - 1) continue;
                ck_assert_uint_eq(r, at + 1);
                continue;
            }
            ck_assert_uint_eq(r, 0);
            for (size_t q = 0; q < sizeof t; q += 4) {
                uint32_t w = 0;
                for (int c = 0; c < 4; c++)
                    w = w << 6 | (uint32_t)((const char *)memchr(alphabet, t[q + c], 64) - alphabet);
                want[q / 4 * 3] = (uint8_t)(w >> 16);
                want[q / 4 * 3 + 1] = (uint8_t)(w >> 8);
                want[q / 4 * 3 + 2] = (uint8_t)w;
            }
            ck_assert_int_eq(memcmp(out, want, sizeof want), 0);
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

/* ==== Replies in every format ============================================ */

/* A tensor decoded from a reply, as float32 values (bytes as 0/1). */
typedef struct {
    int rank, shape[8];
    size_t n;
    float *v;
} dec;

static void dec_free(dec *d) { free(d->v); }

static void nested_walk(const json_t *j, int depth, dec *d, size_t *cap) {
    if (json_is_array(j)) {
        if (depth >= d->rank) d->shape[d->rank++] = (int)json_array_size(j);
        for (size_t i = 0; i < json_array_size(j); i++) nested_walk(json_array_get(j, i), depth + 1, d, cap);
        return;
    }
    if (d->n == *cap) d->v = realloc(d->v, (*cap = *cap * 2 + 16) * sizeof *d->v);
    d->v[d->n++] = json_is_null(j) ? -INFINITY : (float)json_number_value(j);
}

/* A nested JSON tensor, {"shape","dtype","base64"}, or a params object's entry. */
static dec decode_json(const json_t *j) {
    dec d = {0};
    size_t cap = 0;
    if (json_is_object(j) && json_object_get(j, "base64")) {
        const json_t *s = json_object_get(j, "shape");
        d.rank = (int)json_array_size(s);
        d.n = 1;
        for (int i = 0; i < d.rank; i++) d.n *= (size_t)(d.shape[i] = (int)json_integer_value(json_array_get(s, (size_t)i)));
        const char *dt = json_string_value(json_object_get(j, "dtype"));
        const char *b64 = json_string_value(json_object_get(j, "base64"));
        size_t len = strlen(b64), bytes = api__b64_decoded_size(b64, len);
        uint8_t *raw = malloc(bytes + 1);
        ck_assert_uint_eq(api__b64_decode(b64, len, raw), 0);
        size_t item = strcmp(dt, "float32") == 0 ? 4 : strcmp(dt, "float16") == 0 ? 2 : 1;
        ck_assert_uint_eq(bytes, d.n * item);
        d.v = malloc(d.n * sizeof *d.v + 1);
        for (size_t i = 0; i < d.n; i++) {
            const uint8_t *b = raw + i * item;
            if (item == 4) {
                uint32_t u = (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
                memcpy(&d.v[i], &u, 4);
            } else if (item == 2) {
                d.v[i] = api__f16_to_f32((uint16_t)(b[0] | b[1] << 8));
            } else {
                d.v[i] = b[0];
            }
        }
        free(raw);
        return d;
    }
    nested_walk(j, 0, &d, &cap);
    return d;
}

/* value as float16 would keep it */
static float halfway(float x) { return api__f16_to_f32(api__f32_to_f16(x)); }

static void expect_same_tensor(const char *what, const dec *want, const dec *got, int half) {
    ck_assert_msg(want->rank == got->rank && want->n == got->n, "%s: rank %d/%d, %zu/%zu values",
                  what, want->rank, got->rank, want->n, got->n);
    for (int i = 0; i < want->rank; i++) ck_assert_int_eq(want->shape[i], got->shape[i]);
    for (size_t i = 0; i < want->n; i++) {
        float w = half ? halfway(want->v[i]) : want->v[i];
        ck_assert_msg(bits(w) == bits(got->v[i]), "%s[%zu]: %a, want %a", what, i,
                      (double)got->v[i], (double)w);
    }
}

static json_t *reply_json(api_endpoint ep, json_t *rq) {
    char *body = json_dumps(rq, 0);
    api_reply r = handle(ep, body);
    ck_assert_msg(r.status == 200, "%s\n%s", body, r.body.data);
    json_t *j = json_loads(r.body.data, 0, NULL);
    ck_assert_ptr_nonnull(j);
    free(body);
    api_buf_free(&r.body);
    return j;
}

/* Reads a safetensors reply: checks the layout and returns the header. */
static json_t *read_safetensors(const api_reply *r, const uint8_t **data) {
    ck_assert_str_eq(r->content_type, "application/octet-stream");
    const uint8_t *b = (const uint8_t *)r->body.data;
    ck_assert_uint_ge(r->body.len, 8);
    uint64_t n = 0;
    for (int k = 0; k < 8; k++) n |= (uint64_t)b[k] << (8 * k);
    ck_assert_uint_eq(n % 8, 0);
    ck_assert_uint_le(8 + n, r->body.len);
    json_error_t je;
    json_t *h = json_loadb((const char *)b + 8, n, 0, &je);
    ck_assert_msg(h != NULL, "header: %s", je.text);
    /* offsets: contiguous from 0 to the end of the file, no gaps */
    size_t total = r->body.len - 8 - n, covered = 0;
    const char *k;
    json_t *v;
    size_t end = 0;
    json_object_foreach(h, k, v) {
        if (strcmp(k, "__metadata__") == 0) continue;
        json_t *off = json_object_get(v, "data_offsets");
        size_t a = (size_t)json_integer_value(json_array_get(off, 0)), z = (size_t)json_integer_value(json_array_get(off, 1));
        ck_assert_uint_eq(a, end); /* in order, no gap */
        const char *dt = json_string_value(json_object_get(v, "dtype"));
        size_t item = strcmp(dt, "F32") == 0 ? 4 : strcmp(dt, "F16") == 0 ? 2 : 1;
        ck_assert_uint_eq(a % item, 0); /* aligned for a typed view */
        size_t count = 1;
        json_t *sh = json_object_get(v, "shape");
        for (size_t i = 0; i < json_array_size(sh); i++) count *= (size_t)json_integer_value(json_array_get(sh, i));
        ck_assert_uint_eq(z - a, count * item);
        covered += z - a;
        end = z;
    }
    ck_assert_uint_eq(covered, total);
    *data = b + 8 + n;
    return h;
}

static dec decode_safetensor(const json_t *entry, const uint8_t *data) {
    dec d = {0};
    json_t *sh = json_object_get(entry, "shape");
    d.rank = (int)json_array_size(sh);
    d.n = 1;
    for (int i = 0; i < d.rank; i++) d.n *= (size_t)(d.shape[i] = (int)json_integer_value(json_array_get(sh, (size_t)i)));
    const char *dt = json_string_value(json_object_get(entry, "dtype"));
    const uint8_t *b = data + json_integer_value(json_array_get(json_object_get(entry, "data_offsets"), 0));
    d.v = malloc(d.n * sizeof *d.v + 1);
    for (size_t i = 0; i < d.n; i++) {
        if (strcmp(dt, "F32") == 0) memcpy(&d.v[i], b + 4 * i, 4); /* little-endian host */
        else if (strcmp(dt, "F16") == 0) d.v[i] = api__f16_to_f32((uint16_t)(b[2 * i] | b[2 * i + 1] << 8));
        else d.v[i] = b[i];
    }
    return d;
}

/* api/examples/<file> as a JSON tree. */
static json_t *load_example(const char *file) {
    char path[1024];
    tfile_path(path, sizeof path, "api/examples/");
    strncat(path, file, sizeof path - strlen(path) - 1);
    json_t *rq = json_load_file(path, 0, NULL);
    ck_assert_msg(rq != NULL, "%s", path);
    return rq;
}

/* Every output of every example, in base64 and safetensors, float32 and
 * float16, against the nested JSON reply. */
START_TEST(test_every_format_same_values) {
    static const char *const all[] = {"context", "attn_weights", "attn_scores", "masked_scores",
                                      "mask", "dropout_mask", "queries", "keys", "values",
                                      "context_heads", "params", "tokens"};
    static const struct { const char *file; api_endpoint ep; } ex[] = {
        {"simple.json", API_EP_SIMPLE}, {"self_v1_seed.json", API_EP_SELF},
        {"self_v2_seed.json", API_EP_SELF}, {"causal_dropout.json", API_EP_CAUSAL},
        {"multihead_seed.json", API_EP_MULTIHEAD}, {"multihead_wrapper.json", API_EP_MULTIHEAD},
        {"multihead_gpt2.json", API_EP_MULTIHEAD}, {"multihead_torch_cross.json", API_EP_MULTIHEAD},
        {"sdpa_gqa.json", API_EP_SDPA},
    };
    int checked = 0;
    for (size_t e = 0; e < sizeof ex / sizeof *ex; e++) {
        json_t *rq = load_example(ex[e].file);
        json_t *ret = json_array();
        for (size_t k = 0; k < sizeof all / sizeof *all; k++) {
            if (strcmp(all[k], "params") == 0 && ex[e].ep == API_EP_SDPA) continue;
            if (strcmp(all[k], "tokens") == 0 && !json_object_get(rq, "tokens")) continue;
            json_array_append_new(ret, json_string(all[k]));
        }
        json_object_set_new(rq, "return", ret);
        json_object_del(rq, "precision");
        json_object_del(rq, "output_format");
        json_t *nested = reply_json(ex[e].ep, rq);
        for (int half = 0; half < 2; half++) {
            json_object_set_new(rq, "output_format", json_string("base64"));
            json_object_set_new(rq, "dtype", json_string(half ? "float16" : "float32"));
            json_t *b64 = reply_json(ex[e].ep, rq);
            json_object_set_new(rq, "output_format", json_string("safetensors"));
            char *body = json_dumps(rq, 0);
            api_reply st = handle(ex[e].ep, body);
            ck_assert_msg(st.status == 200, "%s", st.body.data);
            const uint8_t *data;
            json_t *hdr = read_safetensors(&st, &data);
            json_t *md = json_object_get(hdr, "__metadata__");
            ck_assert_str_eq(json_string_value(json_object_get(md, "module")),
                             json_string_value(json_object_get(nested, "module")));
            json_t *shape = json_loads(json_string_value(json_object_get(md, "shape")), 0, NULL);
            ck_assert(json_equal(shape, json_object_get(nested, "shape")));
            json_decref(shape);
            const char *k;
            json_t *v;
            json_object_foreach(nested, k, v) {
                if (!strcmp(k, "module") || !strcmp(k, "shape")) continue;
                if (!strcmp(k, "tokens")) {
                    ck_assert(json_equal(v, json_object_get(b64, "tokens")));
                    json_t *t = json_loads(json_string_value(json_object_get(md, "tokens")), 0, NULL);
                    ck_assert(json_equal(v, t));
                    json_decref(t);
                    continue;
                }
                int is_mask = !strcmp(k, "mask");
                if (!strcmp(k, "params")) {
                    const char *pk;
                    json_t *pv;
                    json_object_foreach(v, pk, pv) {
                        dec want = decode_json(pv), got = decode_json(json_object_get(json_object_get(b64, k), pk));
                        expect_same_tensor(pk, &want, &got, half);
                        dec_free(&got);
                        char name[96];
                        snprintf(name, sizeof name, "params.%s", pk);
                        got = decode_safetensor(json_object_get(hdr, name), data);
                        expect_same_tensor(name, &want, &got, half);
                        dec_free(&got);
                        dec_free(&want);
                        checked++;
                    }
                    continue;
                }
                dec want = decode_json(v), got = decode_json(json_object_get(b64, k));
                expect_same_tensor(k, &want, &got, half && !is_mask);
                dec_free(&got);
                json_t *entry = json_object_get(hdr, k);
                ck_assert_msg(entry != NULL, "%s: no %s in the safetensors header", ex[e].file, k);
                ck_assert_str_eq(json_string_value(json_object_get(entry, "dtype")),
                                 is_mask ? "BOOL" : half ? "F16" : "F32");
                got = decode_safetensor(entry, data);
                expect_same_tensor(k, &want, &got, half && !is_mask);
                dec_free(&got);
                dec_free(&want);
                checked++;
            }
            json_decref(hdr);
            json_decref(b64);
            api_buf_free(&st.body);
            free(body);
        }
        json_decref(nested);
        json_decref(rq);
    }
    ck_assert_int_gt(checked, 100);
}
END_TEST

/* A safetensors reply left in place (api_limits.zero_copy: the server's
 * way) is, once flattened, byte for byte the copied one: every output of
 * every example, params, masks, and top-k's values and indices; float16 is
 * copied (converted) and comes whole. */
static api_reply handle_in_parts(api_endpoint ep, const char *body) {
    api_limits lim = {.max_elements = 1 << 24, .zero_copy = 1};
    api_reply r;
    api_handle(ep, body, strlen(body), &lim, &r);
    return r;
}

START_TEST(test_safetensors_in_parts_same_bytes) {
    static const struct { const char *file; api_endpoint ep; const char *extra; } ex[] = {
        {"simple.json", API_EP_SIMPLE, NULL},
        {"causal_dropout.json", API_EP_CAUSAL, NULL},
        {"multihead_seed.json", API_EP_MULTIHEAD, NULL},
        {"multihead_gpt2.json", API_EP_MULTIHEAD, NULL},
        {"multihead_torch_cross.json", API_EP_MULTIHEAD, NULL},
        {"sdpa_gqa.json", API_EP_SDPA, NULL},
        {"multihead_seed.json", API_EP_MULTIHEAD, "top_k"},
        {"multihead_seed.json", API_EP_MULTIHEAD, "heads"},
    };
    int in_parts = 0;
    for (size_t e = 0; e < sizeof ex / sizeof *ex; e++) {
        json_t *rq = load_example(ex[e].file);
        json_t *ret = json_array();
        const char *outs[] = {"context", "attn_weights", "mask", "dropout_mask", "queries", "params"};
        for (size_t k = 0; k < sizeof outs / sizeof *outs; k++)
            if (strcmp(outs[k], "params") || ex[e].ep != API_EP_SDPA)
                json_array_append_new(ret, json_string(outs[k]));
        json_object_set_new(rq, "return", ret);
        json_object_del(rq, "precision");
        if (ex[e].extra && !strcmp(ex[e].extra, "top_k")) json_object_set_new(rq, "top_k", json_integer(2));
        if (ex[e].extra && !strcmp(ex[e].extra, "heads")) json_object_set_new(rq, "heads", json_pack("[i]", 1));
        json_object_set_new(rq, "output_format", json_string("safetensors"));
        for (int half = 0; half < 2; half++) {
            json_object_set_new(rq, "dtype", json_string(half ? "float16" : "float32"));
            char *body = json_dumps(rq, 0);
            api_reply whole = handle(ex[e].ep, body), parts = handle_in_parts(ex[e].ep, body);
            ck_assert_msg(whole.status == 200 && parts.status == 200, "%s: %s", body, whole.body.data);
            ck_assert_int_eq(whole.n_parts, 0);
            /* float32 leaves its tensors in place; float16 converts them */
            ck_assert_msg(half ? parts.n_parts == 0 : parts.n_parts > 0, "%s: %d parts", body, parts.n_parts);
            in_parts += parts.n_parts > 0;
            size_t len = api_reply_length(&parts);
            ck_assert_uint_eq(len, whole.body.len);
            ck_assert_uint_eq(api_reply_flatten(&parts), 0);
            ck_assert_int_eq(parts.n_parts, 0);
            ck_assert_uint_eq(parts.body.len, len);
            ck_assert_msg(memcmp(parts.body.data, whole.body.data, len) == 0, "%s: bytes differ", body);
            api_reply_free(&parts);
            api_reply_free(&whole);
            free(body);
        }
        json_decref(rq);
    }
    ck_assert_int_eq(in_parts, (int)(sizeof ex / sizeof *ex));
    /* a reply in parts freed without flattening (as the server does) */
    api_reply r = handle_in_parts(API_EP_MULTIHEAD, MHA " \"output_format\": \"safetensors\", \"inputs\": [[1, 2, 3]]}");
    ck_assert_int_eq(r.status, 200);
    ck_assert_int_gt(r.n_parts, 0);
    api_reply_free(&r);
    ck_assert_ptr_null(r.parts_owner);
}
END_TEST

START_TEST(test_format_errors) {
    api_reply r = handle(API_EP_SIMPLE, "{\"inputs\": [[1, 2]], \"dtype\": \"float16\"}");
    ck_assert_int_eq(r.status, 400);
    ck_assert_ptr_nonnull(strstr(r.body.data, "\"field\":\"dtype\""));
    api_buf_free(&r.body);
    r = handle(API_EP_SIMPLE, "{\"inputs\": [[1, 2]], \"output_format\": \"safetensors\", \"dtype\": \"bfloat16\"}");
    ck_assert_int_eq(r.status, 400);
    ck_assert_str_eq(r.content_type, "application/json");
    api_buf_free(&r.body);
    /* an error is JSON whatever the format asked for */
    r = handle(API_EP_SIMPLE, "{\"inputs\": [[1, 2], [3]], \"output_format\": \"safetensors\"}");
    ck_assert_int_eq(r.status, 400);
    ck_assert_str_eq(r.content_type, "application/json");
    api_buf_free(&r.body);
    /* Accept: application/octet-stream makes safetensors the default */
    api_limits lim = {.max_elements = 1 << 20, .prefer_format = 1 + API_FORMAT_SAFETENSORS};
    const char *body = "{\"inputs\": [[1, 2], [3, 4]]}";
    ck_assert_int_eq(api_handle(API_EP_SIMPLE, body, strlen(body), &lim, &r), 200);
    ck_assert_str_eq(r.content_type, "application/octet-stream");
    api_buf_free(&r.body);
    body = "{\"inputs\": [[1, 2], [3, 4]], \"output_format\": \"nested\"}";
    ck_assert_int_eq(api_handle(API_EP_SIMPLE, body, strlen(body), &lim, &r), 200);
    ck_assert_str_eq(r.content_type, "application/json");
    api_buf_free(&r.body);
}
END_TEST

static Suite *binary_suite(void) {
    Suite *s = suite_create("api_binary");
    const TTest *tests[] = {test_b64_rfc4648_vectors, test_b64_rejects, test_b64_random_round_trips, test_b64_every_byte_everywhere, test_f16_every_half_round_trips, test_f32_to_f16_rounds_to_nearest_even, test_base64_inputs_same_reply, test_float16_inputs_are_the_rounded_values, test_uint8_mask_is_boolean, test_binary_errors, test_binary_budget, test_every_format_same_values, test_safetensors_in_parts_same_bytes, test_format_errors, NULL};
    tcase_with(s, "binary", 60, tests);
    return s;
}

const test_program TEST_PROGRAM = {.suites = {binary_suite}};
