/* bench_core.c - times attn_forward for a few module shapes.
 * Prints one line per case: name and milliseconds per call (best of 5 runs).
 * Run through `make bench`, which times PyTorch on the same shapes in the
 * same run and prints the ratio. */
#include "core/attention.h"

#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void bench(const char *name, attn_config cfg, int iters) {
    attn_plan plan;
    attn_error err;
    if (attn_plan_make(&cfg, &plan, &err)) {
        fprintf(stderr, "%s: %s\n", name, err.message);
        exit(1);
    }
    float *params = malloc((plan.n_params + 1) * sizeof(float));
    float *x = malloc(plan.n_inputs * sizeof(float));
    float *ctx = malloc(plan.n_context * sizeof(float));
    attn_rng rng;
    attn_rng_seed(&rng, 123);
    attn_params_init(&cfg, &plan, params, &rng, &err);
    for (size_t i = 0; i < plan.n_inputs; i++) x[i] = attn_rng_uniform(&rng, -1.0f, 1.0f);
    attn_inputs in = {.x = x, .params = params};
    attn_outputs out = {.context = ctx};
    double best = 1e30;
    for (int run = 0; run < 5; run++) {
        double t0 = now_ms();
        for (int i = 0; i < iters; i++)
            if (attn_forward(&cfg, &plan, &in, &rng, &out, &err)) {
                fprintf(stderr, "%s: %s\n", name, err.message);
                exit(1);
            }
        double ms = (now_ms() - t0) / iters;
        best = ms < best ? ms : best;
    }
    printf("%s %.4f\n", name, best);
    free(params), free(x), free(ctx);
}

int main(void) {
    openblas_set_num_threads(1); /* as the server runs it: one thread per worker */
    bench("seed_mha_b2_t6", (attn_config){.module = ATTN_MHA, .batch = 2, .tokens = 6, .d_in = 3,
                                          .d_out = 2, .num_heads = 2, .causal = 1}, 20000);
    bench("mha_b1_t128_d256_h4", (attn_config){.module = ATTN_MHA, .batch = 1, .tokens = 128,
                                               .d_in = 256, .d_out = 256, .num_heads = 4,
                                               .causal = 1}, 200);
    bench("gpt2_b1_t512_d768_h12", (attn_config){.module = ATTN_GPT2, .batch = 1, .tokens = 512,
                                                 .d_in = 768, .num_heads = 12, .causal = 1}, 10);
    bench("gpt2_b4_t256_d768_h12", (attn_config){.module = ATTN_GPT2, .batch = 4, .tokens = 256,
                                                 .d_in = 768, .num_heads = 12, .causal = 1}, 10);
    return 0;
}
