/* test_server_kernels.c - the start-up check of OpenBLAS's kernels
 * (server/kernels.c) against the real attention-server:
 *   - with OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE unset, as on a user's
 *     machine, and with this environment's own setting, the kernels
 *     OpenBLAS chose pass; /version, the start-up log and /metrics name them
 *     and the check's result;
 *   - when the check fails for the chosen kernels (ATTN_BLAS_CHECK_FAIL, the
 *     check's test-only switch), the server executes itself again with the
 *     Haswell kernels, and with the generic Prescott ones when Haswell fails
 *     too, says so in all three places, and still answers correctly; when
 *     every set fails it does not start (exit 1, with the reason);
 *   - a kernel set that crashes on this CPU (SkylakeX's AVX-512 code where
 *     the CPU has none) is caught in the check's child process and replaced.
 */
#include <check.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "support/procs.h"
#include "support/server_harness.h"
#include "tests/support/check_main.h"

static srvt_server srv;

static void teardown(void) { srvt_release(&srv); }

/* As on a machine that sets nothing: OpenBLAS picks its kernels. */
static void unset_openblas(void) {
    unsetenv("OPENBLAS_CORETYPE");
    unsetenv("OPENBLAS_L2_SIZE");
}

static void start_with(const char *fail) {
    const char *env[] = {NULL, NULL};
    char var[128];
    if (fail) {
        snprintf(var, sizeof var, "ATTN_BLAS_CHECK_FAIL=%s", fail);
        env[0] = var;
    }
    ck_assert_msg(srvt_start(&srv, NULL, env) == 0, "the server did not start (fail=%s)",
                  fail ? fail : "");
}

typedef struct {
    char core[32];
    char fallback_from[256];
} kernels_seen;

/* GET /version: the core and the check; fails the test unless it passed. */
static kernels_seen version(void) {
    srvt_reply r;
    ck_assert_int_eq(srvt_get(&srv, "/version", &r), 0);
    ck_assert_int_eq(r.status, 200);
    json_error_t je;
    json_t *v = json_loads(r.body, 0, &je);
    ck_assert_msg(v != NULL, "/version: %s", je.text);
    const char *core = NULL, *from = NULL;
    int passed = 0, products = 0;
    double worst = -1;
    ck_assert_msg(json_unpack(v, "{s:{s:s, s:{s:b, s:i, s:F, s:s}}}", "openblas", "core", &core,
                              "check", "passed", &passed, "products", &products, "worst",
                              &worst, "fallback_from", &from) == 0,
                  "/version: %s", r.body);
    ck_assert(passed);
    ck_assert_int_eq(products, 8);
    ck_assert_msg(worst > 0 && worst < 1, "worst %g", worst);
    kernels_seen k;
    snprintf(k.core, sizeof k.core, "%s", core);
    snprintf(k.fallback_from, sizeof k.fallback_from, "%s", from);
    json_decref(v);
    srvt_reply_free(&r);
    return k;
}

/* /metrics names the same kernels and fallback. */
static void expect_metrics(const kernels_seen *k) {
    srvt_reply r;
    ck_assert_int_eq(srvt_get(&srv, "/metrics", &r), 0);
    char want[512];
    snprintf(want, sizeof want, "attn_blas_kernels_info{core=\"%s\",check=\"passed\",fallback_from=\"%s\"} 1\n",
             k->core, k->fallback_from);
    ck_assert_msg(strstr(r.body, want) != NULL, "no %s in /metrics", want);
    ck_assert_ptr_nonnull(strstr(r.body, "\nattn_blas_check_error_ratio 0."));
    srvt_reply_free(&r);
}

/* The seed MultiHeadAttention request answers the chapter's first context
 * value with the kernels in use. */
static void expect_right_answer(void) {
    const char *body = "{\"module\":\"MultiHeadAttention\",\"d_out\":2,\"num_heads\":2,"
                       "\"context_length\":6,\"dropout\":0.0,\"qkv_bias\":false,"
                       "\"init\":{\"seed\":123},\"inputs\":[[[0.43,0.15,0.89],[0.55,0.87,0.66],"
                       "[0.57,0.85,0.64],[0.22,0.58,0.33],[0.77,0.25,0.10],[0.05,0.80,0.55]]]}";
    srvt_reply r;
    ck_assert_int_eq(srvt_post(&srv, "/attention/multihead", body, &r), 0);
    ck_assert_int_eq(r.status, 200);
    ck_assert_msg(strstr(r.body, "[[[0.319") != NULL, "context: %.200s", r.body);
    srvt_reply_free(&r);
}

/* /metrics names kernels k, and the server answers right with them. */
static void expect_serving(const kernels_seen *k) {
    expect_metrics(k);
    expect_right_answer();
}

/* Stops the server; its log must hold every piece of `parts` (NULL-ended). */
static void stop_expect_log(const char *const *parts) {
    ck_assert_int_eq(srvt_stop(&srv, 30), 0);
    for (int i = 0; parts[i]; i++)
        ck_assert_msg(strstr(srv.log, parts[i]) != NULL, "no \"%s\" in the log:\n%s", parts[i],
                      srv.log);
}

/* The kernels OpenBLAS picks here with nothing set, from a server's /version. */
static kernels_seen chosen(void) {
    start_with(NULL);
    kernels_seen k = version();
    ck_assert_msg(k.core[0] != '\0', "no core");
    ck_assert_str_eq(k.fallback_from, "");
    expect_serving(&k);
    char listening[64];
    snprintf(listening, sizeof listening, "OpenBLAS %s x1 (checked)", k.core);
    stop_expect_log((const char *const[]){"passed the start-up check: 8 products", listening, NULL});
    srvt_release(&srv);
    return k;
}

START_TEST(test_chosen_kernels_pass) {
    chosen();          /* this environment's setting */
    unset_openblas();  /* and a user's machine */
    chosen();
}
END_TEST

/* ATTN_BLAS_CHECK_FAIL: the kernels OpenBLAS picks with nothing set (a
 * server's first, into *first), then `also` (",Haswell", or ""). */
static void failing(char *fail, size_t size, const char *also, kernels_seen *first) {
    unset_openblas();
    *first = chosen();
    snprintf(fail, size, "%s%s", first->core, also);
}

START_TEST(test_fallback_to_haswell) {
    kernels_seen first;
    char fail[96];
    failing(fail, sizeof fail, "", &first);
    /* Haswell, unless OpenBLAS chose it: then the generic set */
    const char *next = strcasecmp(first.core, "Haswell") == 0 ? "Prescott" : "Haswell";
    start_with(fail);
    kernels_seen k = version();
    ck_assert_str_eq(k.core, next);
    char why[128];
    snprintf(why, sizeof why, "%s: linear_nt_k768 out of bound", first.core);
    ck_assert_msg(strncmp(k.fallback_from, why, strlen(why)) == 0, "fallback_from: %s",
                  k.fallback_from);
    expect_serving(&k);
    char again[96];
    snprintf(again, sizeof again, "starting again with OPENBLAS_CORETYPE=%s", next);
    stop_expect_log((const char *const[]){again, "(checked, after ", NULL});
}
END_TEST

START_TEST(test_fallback_to_generic) {
    kernels_seen first;
    char fail[96];
    failing(fail, sizeof fail, ",Haswell", &first);
    start_with(fail);
    kernels_seen k = version();
    ck_assert_str_eq(k.core, "Prescott");
    ck_assert_ptr_nonnull(strstr(k.fallback_from, "Haswell: linear_nt_k768 out of bound"));
    expect_serving(&k);
    stop_expect_log((const char *const[]){"OPENBLAS_CORETYPE=Prescott", NULL});
}
END_TEST

START_TEST(test_no_kernels_pass) {
    kernels_seen first;
    char fail[128] = "ATTN_BLAS_CHECK_FAIL=";
    size_t at = strlen(fail);
    failing(fail + at, sizeof fail - at, ",Haswell,Prescott", &first);
    const char *env[] = {fail, NULL};
    char port[16];
    snprintf(port, sizeof port, "%d", procs_free_port());
    const char *args[] = {"--host", "127.0.0.1", "--port", port, NULL};
    char *err = NULL;
    ck_assert_int_eq(srvt_run(args, env, NULL, &err), 1);
    ck_assert_msg(err && strstr(err, "no OpenBLAS kernel set passed the start-up check"),
                  "stderr: %s", err ? err : "");
    free(err);
}
END_TEST

/* OPENBLAS_CORETYPE=SkylakeX: OpenBLAS 0.3.21 runs its AVX-512 kernels
 * even where the CPU has no AVX-512 (SIGILL). */
START_TEST(test_crashing_kernels_replaced) {
    unsetenv("OPENBLAS_L2_SIZE");
    setenv("OPENBLAS_CORETYPE", "SkylakeX", 1);
    start_with(NULL);
    kernels_seen k = version();
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f")) { /* they run here: nothing to replace */
        ck_assert_str_eq(k.core, "SkylakeX");
        ck_assert_str_eq(k.fallback_from, "");
    } else {
        ck_assert_str_eq(k.core, "Haswell");
        ck_assert_str_eq(k.fallback_from, "SkylakeX: killed by signal 4 (Illegal instruction)");
    }
    expect_serving(&k);
    srvt_must_stop(&srv);
}
END_TEST

static Suite *kernels_suite(void) {
    const TTest *tests[] = {test_chosen_kernels_pass, test_fallback_to_haswell,
                            test_fallback_to_generic, test_no_kernels_pass,
                            test_crashing_kernels_replaced, NULL};
    return suite_with("kernels", "start-up check", 60, tests, NULL, teardown);
}

const test_program TEST_PROGRAM = {.suites = {kernels_suite}};
