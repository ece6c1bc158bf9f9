/* bench_gpt2.c - times attn_lm_forward on a GPT-2-124M-shaped model
 * (12 layers, 12 heads, 768 wide, vocab 50,257, block 1024; parameters from
 * torch.manual_seed(0)), eval mode, batch 1. Prints "name ms" lines (best of
 * 5 runs) as bench_gpt2_torch.py does, and the GFLOP the forward needs
 * (projections, the causal half of the attention products, lm_head);
 * bench/run_gpt2.sh joins them.
 * Argument: the number of threads (default 1): OpenBLAS runs on one thread
 * and the forward pass shares its work with an attn_pool of that width, as
 * the server does. */
#include "core/lm.h"

#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* maps: also every attention map; maps < 0: the next token only (last position's logits) */
static attn_pool *g_pool;

static void bench(const char *name, const attn_lm_config *cfg, const float *params, int T,
                  int maps, int iters) {
    attn_lm_plan plan;
    attn_error err;
    if (attn_lm_plan_make(cfg, 1, T, 0, &plan, &err)) {
        fprintf(stderr, "%s: %s\n", name, err.message);
        exit(1);
    }
    int32_t *idx = malloc((size_t)T * sizeof *idx);
    float *logits = malloc(plan.n_logits * sizeof(float));
    float *attn = maps > 0 ? malloc(plan.n_attn * sizeof(float)) : NULL;
    if (!idx || !logits || (maps > 0 && !attn)) exit(1);
    for (int t = 0; t < T; t++) idx[t] = (int32_t)((t * 7919u) % (unsigned)cfg->vocab_size);
    attn_lm_outputs out = {.logits = logits, .attn_weights = attn, .last_only = maps < 0};
    double best = 1e30;
    for (int run = 0; run < 5; run++) {
        double t0 = now_ms();
        for (int i = 0; i < iters; i++)
            if (attn_lm_forward(&plan, params, idx, g_pool, NULL, &out, &err)) {
                fprintf(stderr, "%s: %s\n", name, err.message);
                exit(1);
            }
        double ms = (now_ms() - t0) / iters;
        best = ms < best ? ms : best;
    }
    double C = cfg->width, L = cfg->n_layer, V = cfg->vocab_size;
    double flops = L * (24.0 * T * C * C + 2.0 * T * (double)T * C) +
                   2.0 * (maps < 0 ? 1 : T) * C * V;
    printf("%s %.3f %.3f\n", name, best, flops / 1e9);
    free(idx), free(logits), free(attn);
}

int main(int argc, char **argv) {
    int threads = argc > 1 ? atoi(argv[1]) : 1;
    openblas_set_num_threads(1);
    g_pool = threads > 1 ? attn_pool_create(threads) : NULL;
    attn_lm_config cfg = {.vocab_size = 50257, .context = 1024, .n_layer = 12,
                            .n_head = 12, .width = 768, .dropout = 0.1};
    attn_lm_plan plan;
    attn_error err;
    if (attn_lm_plan_make(&cfg, 1, 1, 0, &plan, &err)) return 1;
    float *params = malloc(plan.n_params * sizeof *params);
    if (!params) return 1;
    attn_rng rng;
    attn_rng_seed(&rng, 0);
    double t0 = now_ms();
    attn_lm_params_init(&plan, params, &rng, &err);
    printf("gpt2_124m_init %.3f\n", now_ms() - t0);
    bench("gpt2_124m_t128_logits", &cfg, params, 128, 0, 2);
    bench("gpt2_124m_t128_logits+maps", &cfg, params, 128, 1, 2);
    bench("gpt2_124m_t128_next_token", &cfg, params, 128, -1, 2);
    bench("gpt2_124m_t512_logits", &cfg, params, 512, 0, 1);
    bench("gpt2_124m_t512_logits+maps", &cfg, params, 512, 1, 1);
    free(params);
    attn_pool_destroy(g_pool);
    return 0;
}
