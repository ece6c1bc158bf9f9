/* bench_decode.c - per-token decode time with the key/value cache
 * (attn_lm_decode) on the GPT-2 124M shape (12 layers, 12 heads, 768
 * wide, vocab 50,257, context 1024; random parameters from
 * torch.manual_seed(0)), both model families, batch 1, at context 128 and
 * 512, against the memory-bandwidth floor measured in the same run: the
 * float32 weights one step reads (every block's matrices and vectors and
 * the output head, about 0.5 GB; not the embeddings' other rows nor the
 * mask buffers) summed once by the same threads. A step cannot be faster
 * than that read.
 *
 *   bench_decode [threads]      (default 2: an attn_pool of that width,
 *                                OpenBLAS on one thread, as the server runs)
 *
 * Measure with OpenBLAS's own kernels, as a user's machine runs:
 *   env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE build/bench/bench_decode 2
 *
 * Each figure is the median of RUNS timings, the floor and the steps
 * alternating so that both see the same machine; the ratio step / floor is
 * the figure to read (1.0 = at the memory's limit).
 */
#include "bench/floor.h"
#include "bench/measure.h"
#include "core/lm.h"

#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RUNS 21

/* ==== The steps =========================================================== */

static void bench_arch(attn_arch arch, attn_pool *pool, int threads) {
    attn_lm_config cfg = {.vocab_size = 50257, .context = 1024, .n_layer = 12, .n_head = 12,
                            .width = 768, .dropout = 0.1, .arch = arch};
    const char *name = attn_arch_name(arch);
    attn_lm_plan plan;
    attn_error err;
    if (attn_lm_plan_make(&cfg, 1, 1, 0, &plan, &err)) bench_fail(name, &err);
    float *params = malloc(plan.n_params * sizeof *params);
    float *logits = malloc((size_t)plan.V * sizeof *logits);
    int32_t *idx = malloc(1024 * sizeof *idx);
    if (!params || !logits || !idx) exit(1);
    attn_rng rng;
    attn_rng_seed(&rng, 0);
    if (attn_lm_params_init(&plan, params, &rng, &err)) bench_fail(name, &err);
    for (int t = 0; t < 1024; t++) idx[t] = (int32_t)((t * 7919u) % 50257u);
    bench_floor fj;
    bench_floor_make(&plan, params, &fj);
    double gb = bench_floor_bytes(&fj) / 1e9;
    const int contexts[2] = {128, 512};
    for (int k = 0; k < 2; k++) {
        int ctx = contexts[k];
        attn_lm_cache *cache;
        attn_lm_plan prompt;
        if (attn_lm_cache_create(&cfg, 1, ctx, &cache, &err)) bench_fail(name, &err);
        if (attn_lm_plan_make(&cfg, 1, ctx - 1, 0, &prompt, &err)) bench_fail(name, &err);
        if (attn_lm_prefill(&prompt, params, idx, cache, pool, NULL, &err)) bench_fail(name, &err);
        double step[RUNS], fl[RUNS];
        attn_lm_step_outputs so = {.logits = logits};
        for (int r = 0; r < RUNS; r++) {
            fl[r] = bench_floor_once(pool, &fj);
            attn_lm_cache_truncate(cache, 0, ctx - 1, &err);
            double t0 = bench_now_ms();
            if (attn_lm_decode(cache, params, &idx[ctx - 1], pool, &so, &err)) bench_fail(name, &err);
            step[r] = bench_now_ms() - t0;
        }
        double s = bench_median(step, RUNS), f = bench_median(fl, RUNS); /* sorted: step[0] the best */
        printf("%-8s context %4d, %d threads: decode step %7.2f ms (best %6.2f), floor %6.2f ms "
               "(%.3f GB at %5.1f GB/s): %.2fx the floor\n",
               name, ctx, threads, s, step[0], f, gb, gb / f * 1e3, s / f);
        attn_lm_cache_free(cache);
    }
    free(params), free(logits), free(idx);
}

int main(int argc, char **argv) {
    int threads = argc > 1 ? atoi(argv[1]) : 2;
    openblas_set_num_threads(1);
    attn_pool *pool = threads > 1 ? attn_pool_create(threads) : NULL;
    if (threads > 1 && pool == NULL) return 1;
    printf("decode with the key/value cache, GPT-2 124M shape, batch 1; OPENBLAS_CORETYPE=%s\n",
           getenv("OPENBLAS_CORETYPE") ? getenv("OPENBLAS_CORETYPE") : "(unset)");
    bench_arch(ATTN_ARCH_GPT2, pool, threads);
    bench_arch(ATTN_ARCH_GPTMODEL, pool, threads);
    attn_pool_destroy(pool);
    return 0;
}
