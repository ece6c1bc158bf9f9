/* test_core_cancel.c - attn_cancel_set: a check that a computation asks
 * between the items of its work, on every thread that helps it. Once it says
 * stop, attn_forward and attn_lm_forward return ATTN_ERR_CANCELLED after
 * at most the items already begun; with no check, or one that never fires,
 * the results are those of a run without it, bit for bit; attn_pool_run's
 * items always all run.
 */
#include <check.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "core/lm.h"
#include "support/check_main.h"

/* Says stop from its `after`-th question on, counting them. */
typedef struct {
    atomic_long asked;
    long after;
} stopper;

static int stop_after(void *ctx) {
    stopper *s = ctx;
    return atomic_fetch_add(&s->asked, 1) >= s->after;
}

/* SDPA over T tokens of width 8, fused: many query tiles. */
static int run_sdpa(int T, attn_pool *pool, float *context, attn_error *err) {
    attn_config cfg = {.module = ATTN_SDPA, .batch = 1, .tokens = T, .d_in = 8, .num_heads = 2,
                       .outputs = ATTN_OUT_CONTEXT};
    attn_plan p;
    ck_assert_int_eq(attn_plan_make(&cfg, &p, err), ATTN_OK);
    float *q = malloc(p.n_inputs * sizeof *q);
    ck_assert_ptr_nonnull(q);
    for (size_t i = 0; i < p.n_inputs; i++) q[i] = (float)((i * 2654435761u) % 1000) / 1000.0f;
    attn_inputs in = {.query = q, .key = q + p.n_queries, .value = q + p.n_queries + p.n_keys,
                      .pool = pool};
    attn_outputs out = {.context = context};
    int rc = attn_forward(&cfg, &p, &in, NULL, &out, err);
    free(q);
    return rc;
}

/* With a pool of 2 and without: stopped after 3 questions, the call returns
 * ATTN_ERR_CANCELLED having asked a handful of times, not once per item of
 * its thousands; a check that never fires changes no bit. */
START_TEST(t_forward_cancelled) {
    enum { T = 4096 };
    attn_pool *pools[2] = {NULL, attn_pool_create(2)};
    ck_assert_ptr_nonnull(pools[1]);
    float *want = malloc((size_t)T * 16 * sizeof *want), *got = malloc((size_t)T * 16 * sizeof *got);
    ck_assert(want && got);
    attn_error err;
    ck_assert_int_eq(run_sdpa(T, NULL, want, &err), ATTN_OK);
    for (int k = 0; k < 2; k++) {
        stopper never = {.after = 1L << 40};
        attn_cancel_set(stop_after, &never);
        ck_assert_int_eq(run_sdpa(T, pools[k], got, &err), ATTN_OK);
        ck_assert_int_eq(memcmp(want, got, (size_t)T * 16 * sizeof *got), 0);
        ck_assert_int_gt(atomic_load(&never.asked), 10); /* asked per item */

        stopper soon = {.after = 3};
        attn_cancel_set(stop_after, &soon);
        ck_assert_int_eq(run_sdpa(T, pools[k], got, &err), ATTN_ERR_CANCELLED);
        ck_assert_str_eq(attn_status_name(err.code), "cancelled");
        ck_assert_int_lt(atomic_load(&soon.asked), atomic_load(&never.asked) / 4);

        attn_cancel_set(NULL, NULL); /* removed: runs to the end */
        ck_assert_int_eq(run_sdpa(T, pools[k], got, &err), ATTN_OK);
        ck_assert_int_eq(memcmp(want, got, (size_t)T * 16 * sizeof *got), 0);
    }
    attn_pool_destroy(pools[1]);
    free(want);
    free(got);
}
END_TEST

static void count_item(void *ctx, long item, int slot) {
    (void)item, (void)slot;
    atomic_fetch_add((atomic_long *)ctx, 1);
}

/* attn_pool_run serves work outside the computation (a reply's text): its
 * items run, whatever the check says. */
START_TEST(t_pool_run_not_cancelled) {
    attn_pool *pool = attn_pool_create(2);
    stopper now = {.after = 0};
    attn_cancel_set(stop_after, &now);
    atomic_long ran = 0;
    attn_pool_run(pool, 1000, count_item, &ran);
    attn_pool_run(NULL, 1000, count_item, &ran);
    ck_assert_int_eq(atomic_load(&ran), 2000);
    attn_cancel_set(NULL, NULL);
    attn_pool_destroy(pool);
}
END_TEST

/* GPT-2 of 8 blocks, stopped at once: ATTN_ERR_CANCELLED having asked far
 * fewer times than a whole run asks (within the first block). */
START_TEST(t_gpt2_cancelled) {
    attn_lm_config cfg = {.vocab_size = 64, .context = 256, .n_layer = 8, .n_head = 2,
                            .width = 64};
    attn_lm_plan p;
    attn_error err;
    ck_assert_int_eq(attn_lm_plan_make(&cfg, 1, 256, 0, &p, &err), ATTN_OK);
    float *params = malloc(p.n_params * sizeof *params), *logits = malloc(p.n_logits * sizeof *logits);
    int32_t idx[256];
    ck_assert(params && logits);
    for (int t = 0; t < 256; t++) idx[t] = t % 64;
    attn_rng rng;
    attn_rng_seed(&rng, 1);
    ck_assert_int_eq(attn_lm_params_init(&p, params, &rng, &err), ATTN_OK);
    attn_lm_outputs out = {.logits = logits};
    stopper never = {.after = 1L << 40};
    attn_cancel_set(stop_after, &never);
    ck_assert_int_eq(attn_lm_forward(&p, params, idx, NULL, NULL, &out, &err), ATTN_OK);
    stopper now = {.after = 0};
    attn_cancel_set(stop_after, &now);
    ck_assert_int_eq(attn_lm_forward(&p, params, idx, NULL, NULL, &out, &err), ATTN_ERR_CANCELLED);
    ck_assert_int_lt(atomic_load(&now.asked), atomic_load(&never.asked) / 8);
    attn_cancel_set(NULL, NULL);
    free(params);
    free(logits);
}
END_TEST

static Suite *cancel_suite(void) {
    Suite *s = suite_create("core_cancel");
    const TTest *tests[] = {t_forward_cancelled, t_pool_run_not_cancelled, t_gpt2_cancelled, NULL};
    tcase_with(s, "cancel", 60, tests);
    return s;
}

const test_program TEST_PROGRAM = {.suites = {cancel_suite}};
