/* bench_batch_step.c - what batching the generations' decode steps buys in
 * core, without HTTP: S generations of the GPT-2 124M shape (random
 * parameters, each its own key/value cache after a 128-token prompt) step
 * either one after the other (S attn_lm_decode calls, as the old gate ran
 * them) or together (one attn_lm_step_caches over the S caches, as
 * server/batch.c runs them). Each figure is the median of RUNS rounds, the
 * two ways alternating; wall clock (CLOCK_MONOTONIC) and the process's CPU
 * time. Every round appends one token to each cache (the context grows from
 * 128 by one a round, the same for both ways).
 *
 *   bench_batch_step [threads] [S...]   (default 2; 1 2 4 8 16)
 */
#include "bench/measure.h"
#include "core/lm.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define RUNS 9
#define PROMPT 128

static void check(int rc, const attn_error *err) {
    if (rc != ATTN_OK) bench_fail("a step", err);
}

/* S caches, each after its own prompt. */
static attn_lm_cache **caches_for(const attn_lm_config *cfg, const float *params, int S,
                                  attn_pool *pool) {
    attn_lm_cache **c = calloc((size_t)S, sizeof *c);
    int32_t idx[PROMPT];
    attn_lm_plan prompt;
    attn_error err = {0};
    check(attn_lm_plan_make(cfg, 1, PROMPT, 0, &prompt, &err), &err);
    for (int s = 0; s < S; s++) {
        for (int t = 0; t < PROMPT; t++) idx[t] = (s * 7919 + t * 104729 + 13) % 50000;
        check(attn_lm_cache_create(cfg, 1, PROMPT + 2 * RUNS + 2, &c[s], &err), &err);
        check(attn_lm_prefill(&prompt, params, idx, c[s], pool, NULL, &err), &err);
    }
    return c;
}

static void bench_s(const attn_lm_config *cfg, const float *params, int S, attn_pool *pool) {
    attn_lm_cache **c = caches_for(cfg, params, S, pool);
    float *logits = malloc((size_t)S * (size_t)cfg->vocab_size * sizeof *logits);
    attn_lm_row *rows = malloc((size_t)S * sizeof *rows);
    double wall[2][RUNS], cpu[2][RUNS];
    attn_error err = {0};
    for (int r = 0; r < RUNS; r++)
        for (int way = 0; way < 2; way++) {
            double w0 = bench_clock_ms(CLOCK_MONOTONIC), c0 = bench_clock_ms(CLOCK_PROCESS_CPUTIME_ID);
            if (way == 0) {
                for (int s = 0; s < S; s++) {
                    int32_t token = (r * 31 + s) % 50000;
                    attn_lm_step_outputs so = {.logits = logits + (size_t)s * cfg->vocab_size};
                    check(attn_lm_decode(c[s], params, &token, pool, &so, &err), &err);
                }
            } else {
                for (int s = 0; s < S; s++) rows[s] = (attn_lm_row){s, (r * 31 + s) % 50000, -1};
                attn_lm_step_outputs so = {.logits = logits};
                check(attn_lm_step_caches(c, S, params, rows, S, pool, &so, &err), &err);
            }
            wall[way][r] = bench_clock_ms(CLOCK_MONOTONIC) - w0;
            cpu[way][r] = bench_clock_ms(CLOCK_PROCESS_CPUTIME_ID) - c0;
        }
    double a = bench_median(wall[0], RUNS), b = bench_median(wall[1], RUNS);
    double ca = bench_median(cpu[0], RUNS), cb = bench_median(cpu[1], RUNS);
    printf("streams %2d  one after the other %8.1f ms (cpu %8.1f)  together %8.1f ms (cpu %8.1f)  "
           "together %6.1f tok/s  speed-up %.2fx\n", S, a, ca, b, cb, S / (b / 1e3), a / b);
    fflush(stdout);
    for (int s = 0; s < S; s++) attn_lm_cache_free(c[s]);
    free(c), free(logits), free(rows);
}

int main(int argc, char **argv) {
    int threads = argc > 1 ? atoi(argv[1]) : 2;
    attn_pool *pool = threads > 1 ? attn_pool_create(threads) : NULL;
    attn_lm_config cfg = {.vocab_size = 50257, .context = 1024, .n_layer = 12, .n_head = 12,
                          .width = 768, .dropout = 0.1, .arch = ATTN_ARCH_GPT2};
    attn_lm_plan plan;
    attn_error err = {0};
    check(attn_lm_plan_make(&cfg, 1, 1, 0, &plan, &err), &err);
    float *params = malloc(plan.n_params * sizeof *params);
    attn_rng rng;
    attn_rng_seed(&rng, 0);
    check(attn_lm_params_init(&plan, params, &rng, &err), &err);
    printf("decode steps of S generations, GPT-2 124M shape, context %d+, %d threads; median of %d\n",
           PROMPT, threads, RUNS);
    static const int counts[] = {1, 2, 4, 8, 16};
    if (argc > 2)
        for (int a = 2; a < argc; a++) bench_s(&cfg, params, atoi(argv[a]), pool);
    else
        for (size_t i = 0; i < sizeof counts / sizeof *counts; i++) bench_s(&cfg, params, counts[i], pool);
    free(params);
    attn_pool_destroy(pool);
    return 0;
}
