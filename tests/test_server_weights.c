/* test_server_weights.c - --weights-dtype against the real attention-server:
 *
 *   keep (the default): the golden F16 and BF16 GPT-2 checkpoints stay
 *     half-size (GET /models: weights_dtype F16 / BF16, not lossy, about
 *     half the bytes of the float32 one) and give PyTorch's logits within
 *     the tolerance every checkpoint test uses (1e-4 + 1e-3 |x|);
 *   bf16 (ATTN_WEIGHTS_DTYPE too): the float32 checkpoint held as BF16, GET
 *     /models says lossy; its logits differ from PyTorch's float32 ones, by
 *     at most 2e-2 of the row's largest |logit|;
 *   f32: the BF16 checkpoint widened (weights_dtype F32, not lossy);
 *   a bad value (flag or variable) stops the server before it listens:
 *     exit 2, the reason on stderr naming the three values.
 */
#include <check.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "support/check_main.h"
#include "support/ckpt_files.h"
#include "support/server_harness.h"

static srvt_server srv;

static void teardown(void) { srvt_release(&srv); }

/* GET /models' entry called name. */
static json_t *entry(const char *name) {
    srvt_reply r;
    ck_assert_int_eq(srvt_get(&srv, "/models", &r), 0);
    ck_assert_int_eq(r.status, 200);
    json_t *list = json_loads(r.body, 0, NULL), *found = NULL;
    srvt_reply_free(&r);
    json_t *m = json_object_get(list, "models");
    for (size_t i = 0; i < json_array_size(m); i++)
        if (strcmp(json_string_value(json_object_get(json_array_get(m, i), "name")), name) == 0)
            found = json_incref(json_array_get(m, i));
    json_decref(list);
    ck_assert_msg(found != NULL, "no model %s in GET /models", name);
    return found;
}

/* The model's weights as GET /models gives them; its bytes per parameter
 * (the file's weights; core's mask buffers, float32, add a little). */
static double expect_weights(const char *name, const char *dtype, int lossy) {
    json_t *m = entry(name);
    ck_assert_str_eq(json_string_value(json_object_get(m, "weights_dtype")), dtype);
    ck_assert_int_eq(json_is_true(json_object_get(m, "weights_lossy")), lossy);
    ck_assert(json_is_boolean(json_object_get(m, "weights_lossy")));
    json_int_t bytes = json_integer_value(json_object_get(m, "weights_bytes"));
    json_int_t n = json_integer_value(json_object_get(m, "parameters"));
    json_decref(m);
    ck_assert(bytes > 0 && n > 0);
    return (double)bytes / (double)n;
}

/* Model name's logits over the golden file's idx against its PyTorch
 * logits: the largest |difference| over the largest |logit|; each within
 * 1e-4 + 1e-3 |x| when strict. */
static double logits_against(const char *name, const char *golden, int strict) {
    char path[512];
    json_t *ref = json_load_file(ckf_golden(path, sizeof path, golden), 0, NULL);
    ck_assert_ptr_nonnull(ref);
    json_t *rq = json_pack("{s:s, s:O, s:[s], s:s}", "model", name, "idx", json_object_get(ref, "idx"),
                           "return", "logits", "output_format", "flat");
    char *body = json_dumps(rq, 0);
    srvt_reply r;
    ck_assert_int_eq(srvt_post(&srv, "/model/gpt2", body, &r), 0);
    ck_assert_msg(r.status == 200, "%ld: %.300s", r.status, r.body);
    json_t *reply = json_loads(r.body, 0, NULL);
    srvt_reply_free(&r);
    json_t *got = json_object_get(json_object_get(reply, "logits"), "data"), *want = json_object_get(ref, "logits");
    ck_assert_uint_eq(json_array_size(got), json_array_size(want));
    double worst = 0.0, scale = 0.0;
    for (size_t i = 0; i < json_array_size(want); i++) {
        double x = json_number_value(json_array_get(got, i)), y = json_number_value(json_array_get(want, i));
        if (strict) ck_assert_msg(fabs(x - y) <= 1e-4 + 1e-3 * fabs(y), "%s logit %zu: %.9g, PyTorch %.9g", name, i, x, y);
        worst = fmax(worst, fabs(x - y)), scale = fmax(scale, fabs(y));
    }
    free(body);
    json_decref(rq), json_decref(reply), json_decref(ref);
    return worst / scale;
}

START_TEST(keep_by_default) {
    char f32[512], f16[512], bf16[512], a[600], b[600], c[600];
    snprintf(a, sizeof a, "tiny=%s", ckf_golden(f32, sizeof f32, "tiny_f32.safetensors"));
    snprintf(b, sizeof b, "half=%s:heads=4", ckf_golden(f16, sizeof f16, "tiny_f16.safetensors"));
    snprintf(c, sizeof c, "brain=%s", ckf_golden(bf16, sizeof bf16, "tiny_bf16.safetensors"));
    const char *args[] = {"--model", a, "--model", b, "--model", c, "--threads", "2", NULL};
    srvt_must_start(&srv, args);
    double full = expect_weights("tiny", "F32", 0);
    double h = expect_weights("half", "F16", 0), bh = expect_weights("brain", "BF16", 0);
    ck_assert_msg(full >= 4.0 && h < 2.4 && bh < 2.4, "bytes per parameter: F32 %.2f, F16 %.2f, "
                  "BF16 %.2f", full, h, bh);
    logits_against("half", "tiny_f16.json", 1);
    logits_against("brain", "tiny_bf16.json", 1);
    logits_against("tiny", "tiny_f32.json", 1);
    srvt_must_stop(&srv);
}
END_TEST

START_TEST(bf16_is_lossy) {
    char f32[512], a[600];
    snprintf(a, sizeof a, "tiny=%s", ckf_golden(f32, sizeof f32, "tiny_f32.safetensors"));
    const char *args[] = {"--model", a, "--weights-dtype", "bf16", "--threads", "2", NULL};
    srvt_must_start(&srv, args);
    ck_assert(expect_weights("tiny", "BF16", 1) < 2.4);
    double rel = logits_against("tiny", "tiny_f32.json", 0);
    ck_assert_msg(rel > 0 && rel <= 2e-2, "bf16 logits off by %g of the largest", rel);
    printf("--weights-dtype bf16: logits within %.2g of the largest of PyTorch's float32 ones\n", rel);
    srvt_must_stop(&srv);
    /* the variable, and f32 of a BF16 file */
    char bf16[512], c[600], env[64];
    snprintf(c, sizeof c, "brain=%s", ckf_golden(bf16, sizeof bf16, "tiny_bf16.safetensors"));
    snprintf(env, sizeof env, "ATTN_WEIGHTS_DTYPE=F32");
    const char *args2[] = {"--model", c, "--threads", "2", NULL}, *envs[] = {env, NULL};
    ck_assert_int_eq(srvt_start(&srv, args2, envs), 0);
    ck_assert(expect_weights("brain", "F32", 0) >= 4.0);
    logits_against("brain", "tiny_bf16.json", 1);
    srvt_must_stop(&srv);
}
END_TEST

START_TEST(bad_values_refused) {
    const char *args[] = {"--weights-dtype", "fp16", NULL};
    char *err = NULL;
    ck_assert_int_eq(srvt_run(args, NULL, NULL, &err), 2);
    ck_assert_msg(err && strstr(err, "--weights-dtype") && strstr(err, "'fp16' is not keep, f32 or bf16"),
                  "%s", err ? err : "(no stderr)");
    free(err);
    const char *env[] = {"ATTN_WEIGHTS_DTYPE=half", NULL};
    err = NULL;
    ck_assert_int_eq(srvt_run(NULL, env, NULL, &err), 2);
    ck_assert_msg(err && strstr(err, "ATTN_WEIGHTS_DTYPE") && strstr(err, "'half'"), "%s", err ? err : "");
    free(err);
    const char *help[] = {"--help", NULL};
    char *out = NULL;
    ck_assert_int_eq(srvt_run(help, NULL, &out, NULL), 0);
    ck_assert_msg(out && strstr(out, "--weights-dtype D") && strstr(out, "lossy"), "%s", out ? out : "");
    free(out);
}
END_TEST

static Suite *suite(void) {
    const TTest *tests[] = {keep_by_default, bf16_is_lossy, bad_values_refused, NULL};
    return suite_with("server_weights", "weights", 60, tests, NULL, teardown);
}

const test_program TEST_PROGRAM = {.suites = {suite}};
