/* bench_families.c - the decoder families' side of bench/run_families.sh:
 * model folders written by bench_families_torch.py (the SmolLM2-135M and
 * Qwen2.5-0.5B shapes, F32, random) loaded as `--model NAME=DIR` loads them
 * (api_models_load), then on an attn_pool of `threads` (OpenBLAS on one
 * thread, as the server runs):
 *
 *   forward T = 128 and 512   attn_lm_forward, every position's logits
 *   decode at context 128     attn_lm_decode of one token after 127 cached
 *   floor                     the weights a step reads, summed once by the
 *                             same threads (bench/floor.c)
 *
 * Prints "core <shape> <what> <ms>" lines: the median of the runs, the floor
 * timed between the steps so both see the same machine.
 *
 *   bench_families DIR [threads]     (default 2)
 */
#include "api/api.h"
#include "api/weights/weights.h"
#include "bench/floor.h"
#include "bench/measure.h"
#include "core/lm.h"

#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RUNS 11

static void forward(const char *name, const attn_lm_config *cfg, const float *params,
                    const int32_t *idx, int T, attn_pool *pool) {
    attn_lm_plan plan;
    attn_error err;
    if (attn_lm_plan_make(cfg, 1, T, 0, &plan, &err)) bench_fail(name, &err);
    float *logits = malloc(plan.n_logits * sizeof *logits);
    if (logits == NULL) exit(1);
    attn_lm_outputs out = {.logits = logits};
    int runs = T > 128 ? 3 : 5;
    double ms[5];
    for (int r = -1; r < runs; r++) { /* r = -1 warms the pages and caches */
        double t0 = bench_now_ms();
        if (attn_lm_forward(&plan, params, idx, pool, NULL, &out, &err)) bench_fail(name, &err);
        if (r >= 0) ms[r] = bench_now_ms() - t0;
    }
    printf("core %s forward%d %.2f\n", name, T, bench_median(ms, runs));
    free(logits);
}

static void decode(const char *name, const attn_lm_config *cfg, const float *params,
                   const int32_t *idx, attn_pool *pool) {
    enum { CTX = 128 };
    attn_lm_plan plan, prompt;
    attn_error err;
    attn_lm_cache *cache;
    if (attn_lm_plan_make(cfg, 1, 1, 0, &plan, &err)) bench_fail(name, &err);
    if (attn_lm_cache_create(cfg, 1, CTX, &cache, &err)) bench_fail(name, &err);
    if (attn_lm_plan_make(cfg, 1, CTX - 1, 0, &prompt, &err)) bench_fail(name, &err);
    if (attn_lm_prefill(&prompt, params, idx, cache, pool, NULL, &err)) bench_fail(name, &err);
    float *logits = malloc((size_t)plan.V * sizeof *logits);
    if (logits == NULL) exit(1);
    bench_floor fl;
    bench_floor_make(&plan, params, &fl);
    double step[RUNS], floor_ms[RUNS];
    attn_lm_step_outputs so = {.logits = logits};
    for (int r = 0; r < RUNS; r++) {
        floor_ms[r] = bench_floor_once(pool, &fl);
        attn_lm_cache_truncate(cache, 0, CTX - 1, &err);
        double t0 = bench_now_ms();
        if (attn_lm_decode(cache, params, &idx[CTX - 1], pool, &so, &err)) bench_fail(name, &err);
        step[r] = bench_now_ms() - t0;
    }
    printf("core %s decode128 %.2f\n", name, bench_median(step, RUNS));
    printf("core %s floor %.2f %.3f\n", name, bench_median(floor_ms, RUNS), bench_floor_bytes(&fl) / 1e9);
    attn_lm_cache_free(cache);
    free(logits);
}

int main(int argc, char **argv) {
    static const char *const shapes[] = {"smollm2-135m", "qwen2.5-0.5b"};
    if (argc < 2) {
        fprintf(stderr, "usage: bench_families DIR [threads]\n");
        return 2;
    }
    int threads = argc > 2 ? atoi(argv[2]) : 2;
    openblas_set_num_threads(1);
    attn_pool *pool = threads > 1 ? attn_pool_create(threads) : NULL;
    if (threads > 1 && pool == NULL) return 1;
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        char spec[1200], why[512];
        snprintf(spec, sizeof spec, "%s=%s/%s", shapes[s], argv[1], shapes[s]);
        api_models *models = NULL;
        if (api_models_load(&models, spec, why, sizeof why)) {
            fprintf(stderr, "%s\n", why);
            return 1;
        }
        const api_model *m = api__models_at(models, 0);
        const attn_lm_config *cfg = &m->cfg;
        const float *params = m->params;
        int32_t idx[512];
        for (int t = 0; t < 512; t++) idx[t] = (int32_t)((t * 7919) % cfg->vocab_size);
        forward(shapes[s], cfg, params, idx, 128, pool);
        forward(shapes[s], cfg, params, idx, 512, pool);
        decode(shapes[s], cfg, params, idx, pool);
        api_models_free(models);
    }
    attn_pool_destroy(pool);
    return 0;
}
