/* test_core_book124m.c - the book's own check of chapter 4 (Raschka, "Build
 * a Large Language Model (From Scratch)", ch04 gpt.py):
 *
 *   torch.manual_seed(123); model = GPTModel(GPT_CONFIG_124M); model.eval()
 *   generate_text_simple(model, "Hello, I am" = [15496, 11, 314, 716],
 *                        max_new_tokens=6, context_size=1024)
 *
 * prints [15496, 11, 314, 716, 27018, 24086, 47843, 30961, 42348, 7267] in
 * the book, and PyTorch 1.13 here writes the same (tests/golden/gptmodel/
 * book_124m.txt, made by tests/golden/generate_gptmodel.py, which asserts
 * it). Core builds the same 163M-parameter model from the seed
 * (attn_lm_params_init) and writes the same six tokens by greedy argmax
 * (the first index on ties, as torch.argmax), each step a whole forward
 * over the text so far, as the book's loop does; then again with the
 * key/value cache (a prefill of the prompt, one decode step per token).
 *
 * About 4 s here (construction 2.6 s: 176M draws; 6 whole forwards 1.7 s
 * on a pool of 2), 10 s under `make asan` (construction 7.9 s).
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "core/lm.h"
#include "tests/support/check_main.h"

#include <cblas.h> /* openblas_set_num_threads */

static const attn_lm_config GPT_CONFIG_124M = {
    .vocab_size = 50257, .context = 1024, .width = 768, .n_head = 12, .n_layer = 12,
    .dropout = 0.1, .qkv_bias = 0, .arch = ATTN_ARCH_GPTMODEL};

enum { PROMPT = 4, NEW = 6 };

/* The prompt and the six ids PyTorch wrote, from book_124m.txt. */
static void read_expected(int32_t ids[PROMPT + NEW]) {
    const char *path = "tests/golden/gptmodel/book_124m.txt";
    FILE *f = fopen(path, "r");
    ck_assert_msg(f != NULL, "cannot open %s", path);
    char line[512];
    int n = 0;
    while (n < PROMPT + NEW && fgets(line, sizeof line, f)) {
        if (line[0] == '#') continue;
        char *p = line, *end;
        for (long v = strtol(p, &end, 10); end != p && n < PROMPT + NEW;
             p = end, v = strtol(p, &end, 10))
            ids[n++] = (int32_t)v;
    }
    fclose(f);
    ck_assert_int_eq(n, PROMPT + NEW);
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* torch.argmax: the first index of the largest value. */
static int32_t argmax(const float *x, int n) {
    int32_t best = 0;
    for (int i = 1; i < n; i++)
        if (x[i] > x[best]) best = i;
    return best;
}

/* The book's state_dict: 163,009,536 parameters and 12 mask buffers. */
START_TEST(plan_of_the_book_model) {
    attn_lm_plan plan;
    attn_error err = {0};
    ck_assert_int_eq(attn_lm_plan_make(&GPT_CONFIG_124M, 1, PROMPT, 0, &plan, &err), ATTN_OK);
    size_t masks = 12 * (size_t)1024 * 1024;
    ck_assert_uint_eq(plan.n_params, (size_t)163009536 + masks);
    /* per block: mask, three weights, out_proj's two, ff's four, the norms' four */
    ck_assert_int_eq(plan.param_count, 2 + 12 * 14 + 3);
}
END_TEST

START_TEST(book_generates_its_printed_tokens) {
    int32_t want[PROMPT + NEW], idx[PROMPT + NEW];
    read_expected(want);
    attn_lm_plan plan;
    attn_error err = {0};
    ck_assert_int_eq(attn_lm_plan_make(&GPT_CONFIG_124M, 1, PROMPT + NEW, 0, &plan, &err),
                     ATTN_OK);
    float *params = malloc(plan.n_params * sizeof *params);
    float *logits = malloc((size_t)plan.V * sizeof *logits);
    ck_assert(params && logits);
    double t0 = now_s();
    attn_rng rng;
    attn_rng_seed(&rng, 123);
    ck_assert_int_eq(attn_lm_params_init(&plan, params, &rng, &err), ATTN_OK);
    double t1 = now_s();
    attn_pool *pool = attn_pool_create(2);
    for (int i = 0; i < PROMPT; i++) idx[i] = want[i];
    for (int n = PROMPT; n < PROMPT + NEW; n++) {
        attn_lm_plan step;
        ck_assert_int_eq(attn_lm_plan_make(&GPT_CONFIG_124M, 1, n, 0, &step, &err), ATTN_OK);
        attn_lm_outputs out = {.logits = logits, .last_only = 1};
        ck_assert_int_eq(attn_lm_forward(&step, params, idx, pool, NULL, &out, &err), ATTN_OK);
        idx[n] = argmax(logits, plan.V);
    }
    double t2 = now_s();
    printf("book_124m: construction %.2f s, 6 tokens %.2f s:", t1 - t0, t2 - t1);
    for (int i = 0; i < PROMPT + NEW; i++) printf(" %d", (int)idx[i]);
    printf("\n");
    for (int i = PROMPT; i < PROMPT + NEW; i++)
        ck_assert_msg(idx[i] == want[i], "token %d: core %d, PyTorch and the book %d", i - PROMPT,
                      (int)idx[i], (int)want[i]);
    /* the same six tokens with the key/value cache: a prefill of the
     * prompt, then one decode step per token */
    attn_lm_cache *cache;
    ck_assert_int_eq(attn_lm_cache_create(&GPT_CONFIG_124M, 1, PROMPT + NEW, &cache, &err),
                     ATTN_OK);
    attn_lm_plan prompt;
    ck_assert_int_eq(attn_lm_plan_make(&GPT_CONFIG_124M, 1, PROMPT, 0, &prompt, &err), ATTN_OK);
    attn_lm_outputs first = {.logits = logits, .last_only = 1};
    ck_assert_int_eq(attn_lm_prefill(&prompt, params, want, cache, pool, &first, &err), ATTN_OK);
    for (int n = PROMPT; n < PROMPT + NEW; n++) {
        int32_t next = argmax(logits, plan.V);
        ck_assert_msg(next == want[n], "cached token %d: core %d, the book %d", n - PROMPT,
                      (int)next, (int)want[n]);
        attn_lm_step_outputs so = {.logits = logits};
        if (n + 1 < PROMPT + NEW)
            ck_assert_int_eq(attn_lm_decode(cache, params, &next, pool, &so, &err), ATTN_OK);
    }
    printf("book_124m: the same 6 tokens with the cache in %.2f s\n", now_s() - t2);
    attn_lm_cache_free(cache);
    attn_pool_destroy(pool);
    free(params);
    free(logits);
}
END_TEST

static Suite *suite(void) {
    openblas_set_num_threads(1);
    Suite *s = suite_create("core_book124m");
    const TTest *tests[] = {plan_of_the_book_model, book_generates_its_printed_tokens, NULL};
    tcase_with(s, "book", 120, tests);
    return s;
}

const test_program TEST_PROGRAM = {.suites = {suite}};
