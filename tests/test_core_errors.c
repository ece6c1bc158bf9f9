/* test_core_errors.c - bad input gets the right attn_status, a one-line
 * message and the field at fault; nothing crashes, nothing aborts. */
#include <check.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/attention.h"

/* Checks rc == code and the error text. field: the exact field expected,
 * or NULL for "any non-empty field". */
#define EXPECT_ERR(rc, err, code, field) expect_err((rc), &(err), (code), (field), __LINE__)

static void expect_err(int rc, const attn_error *err, int code, const char *field, int line) {
    ck_assert_msg(rc == code, "line %d: got %d (%s: %s), want %d (%s)", line, rc,
                  attn_status_name(rc), err->message, code, attn_status_name(code));
    ck_assert_msg(err->code == code, "line %d: err.code %d, returned %d", line, err->code, rc);
    ck_assert_msg(err->message[0] != '\0', "line %d: empty message", line);
    ck_assert_msg(strchr(err->message, '\n') == NULL, "line %d: message has a newline: %s", line,
                  err->message);
    size_t n = strlen(err->message);
    ck_assert_msg(err->message[n - 1] != '.', "line %d: message ends with a period: %s", line,
                  err->message);
    if (field)
        ck_assert_msg(strcmp(err->field, field) == 0, "line %d: field \"%s\", want \"%s\" (%s)",
                      line, err->field, field, err->message);
    else
        ck_assert_msg(err->field[0] != '\0', "line %d: empty field (%s)", line, err->message);
}

static int plan_of(const attn_config *cfg, attn_error *err) {
    attn_plan plan;
    memset(err, 0, sizeof *err);
    return attn_plan_make(cfg, &plan, err);
}

static const attn_config MHA = {.module = ATTN_MHA, .batch = 2, .tokens = 4, .d_in = 3, .d_out = 4,
                                .num_heads = 2, .context_length = 4, .causal = 1};
static const attn_config SDPA = {.module = ATTN_SDPA, .batch = 1, .tokens = 3, .d_in = 2,
                                 .num_heads = 2};

/* ==== sizes ===================================================================== */

START_TEST(test_zero_negative_sizes) {
    attn_error err;
    struct { const char *field; size_t off; } f[] = {
        {"batch", offsetof(attn_config, batch)},
        {"tokens", offsetof(attn_config, tokens)},
        {"d_in", offsetof(attn_config, d_in)},
        {"d_out", offsetof(attn_config, d_out)},
        {"num_heads", offsetof(attn_config, num_heads)},
    };
    for (size_t i = 0; i < sizeof f / sizeof f[0]; i++)
        for (int v = -1; v <= 0; v++) {
            attn_config c = MHA;
            *(int *)((char *)&c + f[i].off) = v;
            EXPECT_ERR(plan_of(&c, &err), err, ATTN_ERR_ARG, f[i].field);
        }
    attn_config c = MHA;
    c.batch = INT_MIN;
    EXPECT_ERR(plan_of(&c, &err), err, ATTN_ERR_ARG, "batch");
    c = MHA;
    c.context_length = -3;
    EXPECT_ERR(plan_of(&c, &err), err, ATTN_ERR_ARG, "context_length");
    c = SDPA;
    c.kv_tokens = -1;
    EXPECT_ERR(plan_of(&c, &err), err, ATTN_ERR_ARG, "kv_tokens");
    c = SDPA;
    c.vdim = -2;
    EXPECT_ERR(plan_of(&c, &err), err, ATTN_ERR_ARG, "vdim");
    c = (attn_config){.module = ATTN_TORCH_MHA, .batch = 1, .tokens = 2, .d_in = 4, .num_heads = 2,
                      .kdim = -1};
    EXPECT_ERR(plan_of(&c, &err), err, ATTN_ERR_ARG, "kdim");
    /* single-head modules take num_heads 0 or 1 only */
    c = (attn_config){.module = ATTN_CAUSAL, .batch = 1, .tokens = 2, .d_in = 3, .d_out = 2,
                      .num_heads = 2};
    EXPECT_ERR(plan_of(&c, &err), err, ATTN_ERR_ARG, "num_heads");
    c.num_heads = 0;
    ck_assert_int_eq(plan_of(&c, &err), ATTN_OK);
}
END_TEST

START_TEST(test_heads_not_dividing) {
    attn_error err;
    attn_config c = MHA;
    c.d_out = 5; /* 5 % 2 */
    EXPECT_ERR(plan_of(&c, &err), err, ATTN_ERR_SHAPE, NULL);
    c = (attn_config){.module = ATTN_GPT2, .batch = 1, .tokens = 2, .d_in = 6, .num_heads = 4};
    EXPECT_ERR(plan_of(&c, &err), err, ATTN_ERR_SHAPE, NULL);
    c = (attn_config){.module = ATTN_TORCH_MHA, .batch = 1, .tokens = 2, .d_in = 5, .num_heads = 2};
    EXPECT_ERR(plan_of(&c, &err), err, ATTN_ERR_SHAPE, NULL);
    c = SDPA;
    c.num_heads = 4;
    c.kv_heads = 3;
    EXPECT_ERR(plan_of(&c, &err), err, ATTN_ERR_SHAPE, "kv_heads");
    c.kv_heads = 5; /* more K/V heads than query heads */
    EXPECT_ERR(plan_of(&c, &err), err, ATTN_ERR_SHAPE, "kv_heads");
    c.kv_heads = -1;
    EXPECT_ERR(plan_of(&c, &err), err, ATTN_ERR_ARG, "kv_heads");
    c.kv_heads = 2;
    ck_assert_int_eq(plan_of(&c, &err), ATTN_OK);
}
END_TEST

START_TEST(test_tokens_over_context_length) {
    attn_error err;
    attn_config c = MHA;
    c.tokens = 5;
    EXPECT_ERR(plan_of(&c, &err), err, ATTN_ERR_SHAPE, "context_length");
    c.module = ATTN_CAUSAL;
    c.num_heads = 1;
    EXPECT_ERR(plan_of(&c, &err), err, ATTN_ERR_SHAPE, "context_length");
    c.module = ATTN_MHA_WRAPPER;
    c.num_heads = 2;
    EXPECT_ERR(plan_of(&c, &err), err, ATTN_ERR_SHAPE, "context_length");
    c = (attn_config){.module = ATTN_GPT2, .batch = 1, .tokens = 9, .d_in = 4, .num_heads = 2,
                      .context_length = 8};
    EXPECT_ERR(plan_of(&c, &err), err, ATTN_ERR_SHAPE, "block_size");
    c.tokens = 8;
    ck_assert_int_eq(plan_of(&c, &err), ATTN_OK);
}
END_TEST

START_TEST(test_overflow) {
    attn_error err;
    attn_config c = {.module = ATTN_SELF_V2, .batch = 1, .tokens = 1 << 30, .d_in = 1 << 30,
                     .d_out = 2};
    EXPECT_ERR(plan_of(&c, &err), err, ATTN_ERR_RANGE, NULL);
    c = (attn_config){.module = ATTN_SIMPLE, .batch = INT_MAX, .tokens = INT_MAX, .d_in = INT_MAX};
    EXPECT_ERR(plan_of(&c, &err), err, ATTN_ERR_RANGE, NULL);
    /* scores B*H*L*S overflow with modest widths */
    c = (attn_config){.module = ATTN_SDPA, .batch = 1 << 10, .tokens = 1 << 20, .d_in = 1,
                      .num_heads = 1 << 10};
    EXPECT_ERR(plan_of(&c, &err), err, ATTN_ERR_RANGE, NULL);
    /* parameters alone too large: d_in * d_out = 2^31 * ... */
    c = (attn_config){.module = ATTN_SELF_V1, .batch = 1, .tokens = 1, .d_in = 1 << 30,
                      .d_out = 1 << 30};
    EXPECT_ERR(plan_of(&c, &err), err, ATTN_ERR_RANGE, NULL);
    /* a wrapper with many wide heads */
    c = (attn_config){.module = ATTN_MHA_WRAPPER, .batch = 1, .tokens = 2, .d_in = 1 << 20,
                      .d_out = 1 << 20, .num_heads = 1 << 20};
    EXPECT_ERR(plan_of(&c, &err), err, ATTN_ERR_RANGE, NULL);
    /* a mask buffer of context_length^2 that overflows */
    c = (attn_config){.module = ATTN_CAUSAL, .batch = 1, .tokens = 2, .d_in = 2, .d_out = 2,
                      .context_length = INT_MAX};
    EXPECT_ERR(plan_of(&c, &err), err, ATTN_ERR_RANGE, NULL);
}
END_TEST

/* ==== options =========================================================================== */

START_TEST(test_bad_options) {
    attn_error err;
    double bad[] = {-0.1, 1.5, NAN, INFINITY, -INFINITY};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        attn_config c = MHA;
        c.dropout = bad[i];
        EXPECT_ERR(plan_of(&c, &err), err, ATTN_ERR_ARG, "dropout");
    }
    attn_config c = MHA;
    c.dropout = 1.0;
    ck_assert_int_eq(plan_of(&c, &err), ATTN_OK);
    c.dropout = 0.0;
    ck_assert_int_eq(plan_of(&c, &err), ATTN_OK);

    c = MHA;
    c.module = (attn_module)99;
    EXPECT_ERR(plan_of(&c, &err), err, ATTN_ERR_ARG, "module");
    c.module = (attn_module)-1;
    EXPECT_ERR(plan_of(&c, &err), err, ATTN_ERR_ARG, "module");
    c.module = ATTN_MODULE_COUNT;
    EXPECT_ERR(plan_of(&c, &err), err, ATTN_ERR_ARG, "module");
    ck_assert_ptr_null(attn_module_name((attn_module)99));
    attn_module m = ATTN_SIMPLE;
    ck_assert_int_eq(attn_module_from_name("NoSuchAttention", &m), ATTN_ERR_ARG);
    ck_assert_int_eq(attn_module_from_name(NULL, &m), ATTN_ERR_ARG);
    ck_assert_int_eq(attn_module_from_name("simple", NULL), ATTN_ERR_ARG);

    c = MHA;
    c.normalization = (attn_norm)7;
    EXPECT_ERR(plan_of(&c, &err), err, ATTN_ERR_ARG, "normalization");
    c.normalization = ATTN_NORM_SUM; /* only simple attention has it */
    EXPECT_ERR(plan_of(&c, &err), err, ATTN_ERR_ARG, "normalization");
    c = MHA;
    c.mask_method = (attn_mask_method)3;
    EXPECT_ERR(plan_of(&c, &err), err, ATTN_ERR_ARG, "mask_method");
    c = MHA;
    c.has_scale = 1;
    c.scale = NAN;
    EXPECT_ERR(plan_of(&c, &err), err, ATTN_ERR_NONFINITE, "scale");
    c.scale = INFINITY;
    EXPECT_ERR(plan_of(&c, &err), err, ATTN_ERR_NONFINITE, "scale");
}
END_TEST

START_TEST(test_status_names) {
    int codes[] = {ATTN_OK, ATTN_ERR_ARG, ATTN_ERR_SHAPE, ATTN_ERR_RANGE, ATTN_ERR_NONFINITE,
                   ATTN_ERR_NOMEM};
    const char *names[] = {"ok", "invalid_argument", "invalid_shape", "too_large", "non_finite",
                           "out_of_memory"};
    for (size_t i = 0; i < 6; i++) ck_assert_str_eq(attn_status_name(codes[i]), names[i]);
    const char *unknown = attn_status_name(-99);
    ck_assert_ptr_nonnull(unknown);
    ck_assert_int_gt((int)strlen(unknown), 0);
}
END_TEST

/* ==== forward: inputs and parameters ======================================================== */

typedef struct {
    attn_config cfg;
    attn_plan plan;
    float *params, *x, *context;
    attn_inputs in;
    attn_outputs out;
    attn_rng rng;
} fixture;

static void fixture_make(fixture *f, const attn_config *cfg) {
    memset(f, 0, sizeof *f);
    f->cfg = *cfg;
    attn_error err;
    ck_assert_int_eq(attn_plan_make(&f->cfg, &f->plan, &err), ATTN_OK);
    f->params = calloc(f->plan.n_params + 1, sizeof(float));
    f->x = calloc(f->plan.n_inputs + 1, sizeof(float));
    f->context = calloc(f->plan.n_context + 1, sizeof(float));
    ck_assert(f->params && f->x && f->context);
    attn_rng_seed(&f->rng, 1);
    ck_assert_int_eq(attn_params_init(&f->cfg, &f->plan, f->params, &f->rng, &err), ATTN_OK);
    for (size_t i = 0; i < f->plan.n_inputs; i++) f->x[i] = (float)(i % 7) * 0.1f - 0.3f;
    f->in = (attn_inputs){.x = f->x, .params = f->params};
    f->out = (attn_outputs){.context = f->context};
}

static void fixture_free(fixture *f) {
    free(f->params);
    free(f->x);
    free(f->context);
}

static int forward(fixture *f, attn_error *err) {
    memset(err, 0, sizeof *err);
    return attn_forward(&f->cfg, &f->plan, &f->in, &f->rng, &f->out, err);
}

START_TEST(test_nonfinite_inputs) {
    float bad[] = {NAN, INFINITY, -INFINITY};
    attn_error err;
    for (size_t i = 0; i < 3; i++) {
        fixture f;
        fixture_make(&f, &MHA);
        ck_assert_int_eq(forward(&f, &err), ATTN_OK);
        f.x[f.plan.n_inputs - 1] = bad[i];
        EXPECT_ERR(forward(&f, &err), err, ATTN_ERR_NONFINITE, NULL);
        f.x[f.plan.n_inputs - 1] = 0.0f;
        f.params[f.plan.n_params / 2] = bad[i];
        EXPECT_ERR(forward(&f, &err), err, ATTN_ERR_NONFINITE, NULL);
        memset(&err, 0, sizeof err);
        EXPECT_ERR(attn_params_check(&f.cfg, &f.plan, f.params, &err), err, ATTN_ERR_NONFINITE, NULL);
        fixture_free(&f);
    }
    /* SDPA: each of query, key, value */
    attn_plan p;
    ck_assert_int_eq(attn_plan_make(&SDPA, &p, &err), ATTN_OK);
    float q[12], k[12], v[12], ctx[12];
    for (int i = 0; i < 12; i++) q[i] = k[i] = v[i] = 0.1f * (float)i;
    attn_inputs in = {.query = q, .key = k, .value = v};
    attn_outputs out = {.context = ctx};
    ck_assert_int_eq(attn_forward(&SDPA, &p, &in, NULL, &out, &err), ATTN_OK);
    const char *fields[] = {"query", "key", "value"};
    float *t[] = {q, k, v};
    for (int j = 0; j < 3; j++) {
        t[j][5] = NAN;
        memset(&err, 0, sizeof err);
        EXPECT_ERR(attn_forward(&SDPA, &p, &in, NULL, &out, &err), err, ATTN_ERR_NONFINITE, fields[j]);
        t[j][5] = 0.5f;
    }
}
END_TEST

START_TEST(test_masks_nonfinite) {
    attn_error err;
    fixture f;
    fixture_make(&f, &MHA);
    float add[16] = {0};
    f.in.attn_mask_add = add;
    ck_assert_int_eq(forward(&f, &err), ATTN_OK);
    add[3] = -INFINITY; /* -inf masks, allowed */
    ck_assert_int_eq(forward(&f, &err), ATTN_OK);
    add[5] = INFINITY;
    EXPECT_ERR(forward(&f, &err), err, ATTN_ERR_NONFINITE, NULL);
    add[5] = NAN;
    EXPECT_ERR(forward(&f, &err), err, ATTN_ERR_NONFINITE, NULL);
    fixture_free(&f);
}
END_TEST

START_TEST(test_result_overflow) {
    /* finite inputs whose scores overflow float32: x = 3e19, x·x = inf */
    attn_error err;
    attn_config c = {.module = ATTN_SIMPLE, .batch = 1, .tokens = 2, .d_in = 2};
    attn_plan p;
    ck_assert_int_eq(attn_plan_make(&c, &p, &err), ATTN_OK);
    float x[4] = {3e19f, 3e19f, 3e19f, -3e19f}, ctx[4];
    attn_inputs in = {.x = x};
    attn_outputs out = {.context = ctx};
    EXPECT_ERR(attn_forward(&c, &p, &in, NULL, &out, &err), err, ATTN_ERR_NONFINITE, NULL);
}
END_TEST

START_TEST(test_bad_buffers) {
    /* attn_params_check: a mask buffer that is not the module's triangle */
    attn_error err;
    fixture f;
    fixture_make(&f, &MHA);
    memset(&err, 0, sizeof err);
    ck_assert_int_eq(attn_params_check(&f.cfg, &f.plan, f.params, &err), ATTN_OK);
    for (int i = 0; i < f.plan.param_count; i++) {
        attn_param prm;
        ck_assert_int_eq(attn_param_get(&f.cfg, &f.plan, i, &prm), ATTN_OK);
        if (!prm.buffer) continue;
        f.params[prm.offset] = 1.0f; /* triu(diagonal=1)[0][0] is 0 */
        memset(&err, 0, sizeof err);
        EXPECT_ERR(attn_params_check(&f.cfg, &f.plan, f.params, &err), err, ATTN_ERR_ARG, NULL);
        ck_assert_msg(strstr(err.field, "mask") != NULL, "field %s", err.field);
    }
    attn_param prm;
    ck_assert_int_eq(attn_param_get(&f.cfg, &f.plan, -1, &prm), ATTN_ERR_ARG);
    ck_assert_int_eq(attn_param_get(&f.cfg, &f.plan, f.plan.param_count, &prm), ATTN_ERR_ARG);
    ck_assert_int_eq(attn_param_get(NULL, &f.plan, 0, &prm), ATTN_ERR_ARG);
    ck_assert_int_eq(attn_param_get(&f.cfg, &f.plan, 0, NULL), ATTN_ERR_ARG);
    fixture_free(&f);
}
END_TEST

/* ==== null pointers ======================================================================== */

START_TEST(test_null_pointers) {
    attn_error err;
    attn_plan plan;
    memset(&err, 0, sizeof err);
    EXPECT_ERR(attn_plan_make(NULL, &plan, &err), err, ATTN_ERR_ARG, "");
    memset(&err, 0, sizeof err);
    EXPECT_ERR(attn_plan_make(&MHA, NULL, &err), err, ATTN_ERR_ARG, "");
    /* a NULL attn_error is allowed: the code alone comes back */
    attn_config bad = MHA;
    bad.batch = 0;
    ck_assert_int_eq(attn_plan_make(&bad, &plan, NULL), ATTN_ERR_ARG);

    fixture f;
    fixture_make(&f, &MHA);
    memset(&err, 0, sizeof err);
    EXPECT_ERR(attn_params_init(&f.cfg, &f.plan, NULL, &f.rng, &err), err, ATTN_ERR_ARG, NULL);
    memset(&err, 0, sizeof err);
    EXPECT_ERR(attn_params_init(&f.cfg, &f.plan, f.params, NULL, &err), err, ATTN_ERR_ARG, NULL);
    memset(&err, 0, sizeof err);
    EXPECT_ERR(attn_params_init(NULL, &f.plan, f.params, &f.rng, &err), err, ATTN_ERR_ARG, NULL);
    memset(&err, 0, sizeof err);
    EXPECT_ERR(attn_params_check(&f.cfg, &f.plan, NULL, &err), err, ATTN_ERR_ARG, NULL);

    memset(&err, 0, sizeof err);
    EXPECT_ERR(attn_forward(NULL, &f.plan, &f.in, &f.rng, &f.out, &err), err, ATTN_ERR_ARG, "");
    memset(&err, 0, sizeof err);
    EXPECT_ERR(attn_forward(&f.cfg, NULL, &f.in, &f.rng, &f.out, &err), err, ATTN_ERR_ARG, "");
    memset(&err, 0, sizeof err);
    EXPECT_ERR(attn_forward(&f.cfg, &f.plan, NULL, &f.rng, &f.out, &err), err, ATTN_ERR_ARG, "");
    memset(&err, 0, sizeof err);
    EXPECT_ERR(attn_forward(&f.cfg, &f.plan, &f.in, &f.rng, NULL, &err), err, ATTN_ERR_ARG, "");
    ck_assert_int_eq(attn_forward(&f.cfg, &f.plan, &f.in, &f.rng, NULL, NULL), ATTN_ERR_ARG);

    f.in.x = NULL;
    EXPECT_ERR(forward(&f, &err), err, ATTN_ERR_ARG, NULL);
    f.in.x = f.x;
    f.in.params = NULL;
    EXPECT_ERR(forward(&f, &err), err, ATTN_ERR_ARG, "params");
    f.in.params = f.params;
    ck_assert_int_eq(forward(&f, &err), ATTN_OK);
    /* a NULL generator is allowed: a fresh PyTorch one */
    ck_assert_int_eq(attn_forward(&f.cfg, &f.plan, &f.in, NULL, &f.out, &err), ATTN_OK);
    fixture_free(&f);

    /* SDPA without its tensors */
    attn_plan p;
    ck_assert_int_eq(attn_plan_make(&SDPA, &p, &err), ATTN_OK);
    float q[12] = {0}, ctx[12];
    attn_inputs in = {.query = q, .key = q};
    attn_outputs out = {.context = ctx};
    memset(&err, 0, sizeof err);
    EXPECT_ERR(attn_forward(&SDPA, &p, &in, NULL, &out, &err), err, ATTN_ERR_ARG, "value");
    in = (attn_inputs){.key = q, .value = q};
    memset(&err, 0, sizeof err);
    EXPECT_ERR(attn_forward(&SDPA, &p, &in, NULL, &out, &err), err, ATTN_ERR_ARG, "query");

    /* torch cross-attention (kdim != embed_dim) without x_key / x_value */
    attn_config tc = {.module = ATTN_TORCH_MHA, .batch = 1, .tokens = 2, .d_in = 4, .num_heads = 2,
                      .kdim = 3, .vdim = 3, .kv_tokens = 3};
    fixture_make(&f, &tc);
    memset(&err, 0, sizeof err);
    EXPECT_ERR(forward(&f, &err), err, ATTN_ERR_ARG, NULL);
    float kv[9] = {0};
    f.in.x_key = kv;
    memset(&err, 0, sizeof err);
    EXPECT_ERR(forward(&f, &err), err, ATTN_ERR_ARG, NULL);
    f.in.x_value = kv;
    ck_assert_int_eq(forward(&f, &err), ATTN_OK);
    fixture_free(&f);
}
END_TEST

static Suite *errors_suite(void) {
    Suite *s = suite_create("errors");
    TCase *p = tcase_create("plan");
    tcase_add_test(p, test_zero_negative_sizes);
    tcase_add_test(p, test_heads_not_dividing);
    tcase_add_test(p, test_tokens_over_context_length);
    tcase_add_test(p, test_overflow);
    tcase_add_test(p, test_bad_options);
    tcase_add_test(p, test_status_names);
    suite_add_tcase(s, p);
    TCase *f = tcase_create("forward");
    tcase_add_test(f, test_nonfinite_inputs);
    tcase_add_test(f, test_masks_nonfinite);
    tcase_add_test(f, test_result_overflow);
    tcase_add_test(f, test_bad_buffers);
    tcase_add_test(f, test_null_pointers);
    suite_add_tcase(s, f);
    return s;
}

int main(void) {
    SRunner *sr = srunner_create(errors_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
