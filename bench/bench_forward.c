/* bench_forward.c - the whole-model forward (attn_lm_forward, logits of
 * every position, no maps) of the GPT-2 124M shape (12 layers, 12 heads, 768
 * wide, vocab 50,257; random parameters from torch.manual_seed(0)), batch 1,
 * T = 128 and 512, both model families, as a fraction of the machine's
 * sgemm rate measured in the same run: OpenBLAS with `threads` threads of
 * its own on a 1024^3 product (best of 3 each time), the reference
 * bench/run_gpt2.sh uses too.
 *
 *   bench_forward [threads] [reps]   (default 2 and 9)
 *   env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE build/bench/bench_forward 2
 *
 * The forward runs on an attn_pool of `threads` (OpenBLAS on one thread, as
 * the server runs). Useful FLOPs: per block 2 T C (3C + C + 4C + 4C) for the
 * products, 4 C T(T+1)/2 for the causal scores and weighted sums, and 2 T C V
 * for the head. Each repetition times the sgemm and every case once, in
 * turn; the figure is the median over repetitions of the forward's rate
 * divided by that repetition's sgemm rate, so that a busy machine slows both
 * sides of the ratio alike. With one thread everything runs on the calling
 * thread and is timed by its CPU clock (CLOCK_THREAD_CPUTIME_ID), which
 * time-sharing with other processes does not inflate: the robust figure on
 * a shared machine. For a before/after, run the bench of both builds
 * alternately (the figures are against each run's own sgemm).
 */
#include "bench/measure.h"
#include "core/lm.h"

#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>

#define FAMILIES 2 /* GPT2 and the book's GPTModel */

enum { N = 1024 };

typedef struct {
    int arch, T;
    attn_lm_plan plan;
    float *params, *logits;
    int32_t *idx;
    double gflop, eff[64], ms[64];
} bench_case;

static void case_make(bench_case *b, int arch, int T) {
    attn_lm_config cfg = {.arch = (attn_arch)arch, .vocab_size = 50257, .context = 1024,
                          .n_layer = 12, .n_head = 12, .width = 768, .dropout = 0.1};
    attn_error err;
    b->arch = arch, b->T = T;
    if (attn_lm_plan_make(&cfg, 1, T, 0, &b->plan, &err)) exit(1);
    b->params = malloc(b->plan.n_params * sizeof(float));
    b->logits = malloc(b->plan.n_logits * sizeof(float));
    b->idx = malloc((size_t)T * sizeof(int32_t));
    if (!b->params || !b->logits || !b->idx) exit(1);
    attn_rng rng;
    attn_rng_seed(&rng, 0);
    attn_lm_params_init(&b->plan, b->params, &rng, &err);
    for (int t = 0; t < T; t++) b->idx[t] = (int32_t)((t * 7919u) % 50257u);
    double C = 768, V = 50257, L = 12;
    b->gflop = (L * (2 * T * C * 12 * C + 4 * C * T * (T + 1) / 2.0) + 2 * T * C * V) / 1e9;
}

static double run_case(bench_case *b, attn_pool *pool) {
    attn_lm_outputs out = {.logits = b->logits};
    attn_error err;
    double t0 = bench_now_ms();
    if (attn_lm_forward(&b->plan, b->params, b->idx, pool, NULL, &out, &err)) {
        fprintf(stderr, "forward: %s\n", err.message);
        exit(1);
    }
    return bench_now_ms() - t0;
}

int main(int argc, char **argv) {
    int threads = argc > 1 ? atoi(argv[1]) : 2, reps = argc > 2 ? atoi(argv[2]) : 9;
    if (reps < 1 || reps > 64 || threads < 1) return 2;
    if (threads == 1) bench_use_clock(CLOCK_THREAD_CPUTIME_ID);
    float *a = malloc((size_t)N * N * 4), *bm = malloc((size_t)N * N * 4), *c = malloc((size_t)N * N * 4);
    if (!a || !bm || !c) return 1;
    for (size_t i = 0; i < (size_t)N * N; i++) a[i] = 0.001f * (float)(i % 7), bm[i] = 0.002f * (float)(i % 5);
    bench_case cases[2 * FAMILIES];
    for (int f = 0; f < FAMILIES; f++)
        for (int k = 0; k < 2; k++) case_make(&cases[2 * f + k], f, k ? 512 : 128);
    openblas_set_num_threads(1);
    attn_pool *pool = threads > 1 ? attn_pool_create(threads) : NULL;
    double rates[64];
    for (int i = 0; i < 2 * FAMILIES; i++) run_case(&cases[i], pool); /* warm: pages, caches */
    for (int r = 0; r < reps; r++) {
        rates[r] = bench_sgemm_rate(threads, 3, a, bm, c); /* the pool's helpers sleep meanwhile */
        for (int i = 0; i < 2 * FAMILIES; i++) {
            bench_case *b = &cases[i];
            b->ms[r] = run_case(b, pool);
            b->eff[r] = b->gflop / b->ms[r] * 1e3 / rates[r];
        }
    }
    printf("sgemm 1024^3 on %d OpenBLAS threads: %.0f GFLOP/s (median of %d, %s time); "
           "OPENBLAS_CORETYPE=%s\n", threads, bench_median(rates, reps), reps,
           threads == 1 ? "CPU" : "wall",
           getenv("OPENBLAS_CORETYPE") ? getenv("OPENBLAS_CORETYPE") : "(unset)");
    for (int i = 0; i < 2 * FAMILIES; i++) {
        bench_case *b = &cases[i];
        printf("%-8s T=%3d forward (pool of %d): %7.1f ms, %.1f GFLOP: %3.0f%% of the sgemm rate\n",
               attn_arch_name((attn_arch)b->arch), b->T, threads, bench_median(b->ms, reps), b->gflop,
               100 * bench_median(b->eff, reps));
    }
    attn_pool_destroy(pool);
    return 0;
}
