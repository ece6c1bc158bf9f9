/* bench_core.c - times attn_forward for a few module shapes, with one thread
 * (no pool) and with a pool of two (both cores).
 *
 * Prints one line per case and thread count:
 *   name threads ms gflops peak_mb
 * ms is the best of the runs; gflops counts the FLOPs the module needs (the
 * causal half of QKᵀ and of PV, each once); peak_mb is the resident memory
 * the case added over all its runs (VmHWM minus the resident size before the
 * first run). `bench_core sgemm` prints "sgemm threads gflops" for one and
 * two threads instead: a 1024-cube cblas_sgemm, the machine's rate.
 * Memory is kept warm between runs as the server keeps it
 * (server/main.c and server/budget.c: arrays below 32 MiB come from malloc's
 * arenas, which keep freed memory), so only the first run takes the page
 * faults, and outputs of 32 MiB and more ask for huge pages as api/ does
 * (api__huge_pages); each case returns its memory at the end (malloc_trim),
 * so the next starts cold again.
 * Run through `make bench` (bench/run.sh), which times PyTorch on the same
 * shapes in the same run and prints the ratios.
 */
#include "api/model/model.h"
#include "bench/measure.h"
#include "api/module/module.h"
#include "api/numbers/numbers.h"
#include "core/attention.h"

#include <cblas.h>
#include <malloc.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ==== memory ============================================================ */

static long status_kb(const char *key) {
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long kb = -1;
    size_t n = strlen(key);
    while (f && fgets(line, sizeof line, f))
        if (strncmp(line, key, n) == 0) kb = atol(line + n + 1);
    if (f) fclose(f);
    return kb;
}

/* Resets VmHWM to the current resident size (Linux: clear_refs 5). */
static void reset_peak(void) {
    FILE *f = fopen("/proc/self/clear_refs", "w");
    if (f) fputs("5", f), fclose(f);
}

/* ==== the machine's rate ==================================================== */

/* GFLOP/s of cblas_sgemm 1024 x 1024 x 1024 with OpenBLAS on `threads`
 * threads of its own, best of 10: the rate the hardware gives the product
 * every figure is made of (run.sh prints each figure as a fraction of it).
 * Short runs, so that the best of them is one the other processes of a
 * shared machine did not disturb (2048 cubed gives the same rate on a quiet
 * machine, within 2%). */
static double sgemm_gflops(int threads) { return bench_sgemm_rate(threads, 10, NULL, NULL, NULL); }

/* ==== cases ================================================================ */

typedef struct {
    const char *name;
    attn_config cfg;
    int weights;    /* ask for the per-head weights too (the materialised path) */
    int runs;       /* timed runs, best kept */
    double flops;   /* what the module needs */
} bench_case;

static double module_flops(const attn_config *c) {
    double T = c->tokens, causal = c->causal ? 0.5 : 1.0;
    if (c->module == ATTN_SDPA) /* QKᵀ and PV, one head of width d_in */
        return 2.0 * 2.0 * T * T * causal * c->d_in * c->num_heads;
    double C = c->d_in; /* GPT-2: c_attn, c_proj, then QKᵀ and PV over every head */
    return c->batch * (2.0 * T * C * 3 * C + 2.0 * T * C * C + 2.0 * 2.0 * T * T * causal * C);
}

static void run_case(const bench_case *bc, int threads, attn_pool *pool) {
    attn_config cfg = bc->cfg;
    attn_plan plan;
    attn_error err;
    if (attn_plan_make(&cfg, &plan, &err)) {
        fprintf(stderr, "%s: %s\n", bc->name, err.message);
        exit(1);
    }
    float *params = malloc((plan.n_params + 1) * sizeof(float));
    float *x = malloc(plan.n_inputs * sizeof(float));
    attn_rng rng;
    attn_rng_seed(&rng, 123);
    attn_params_init(&cfg, &plan, params, &rng, &err);
    for (size_t i = 0; i < plan.n_inputs; i++) x[i] = attn_rng_uniform(&rng, -1.0f, 1.0f);
    /* drawn by attn_params_init: finite, as the server knows for init.seed */
    attn_inputs in = {.x = x, .params = params, .params_checked = 1, .pool = pool};
    if (cfg.module == ATTN_SDPA) {
        in.query = x;
        in.key = x + plan.n_queries;
        in.value = in.key + plan.n_keys;
    }

    double best = 1e30;
    long rss = status_kb("VmRSS");
    reset_peak();
    for (int run = 0; run < bc->runs; run++) {
        /* outputs allocated per call, as the server does: they count */
        float *ctx = malloc(plan.n_context * sizeof(float));
        float *w = bc->weights ? malloc(plan.n_scores * sizeof(float)) : NULL;
        api__huge_pages(w, bc->weights ? plan.n_scores * sizeof(float) : 0); /* as api/ asks */
        attn_outputs out = {.context = ctx, .weights = w};
        double t0 = bench_now_ms();
        if (attn_forward(&cfg, &plan, &in, &rng, &out, &err)) {
            fprintf(stderr, "%s: %s\n", bc->name, err.message);
            exit(1);
        }
        double ms = bench_now_ms() - t0;
        best = ms < best ? ms : best;
        free(ctx), free(w);
    }
    long peak = status_kb("VmHWM") - rss;
    printf("%s %d %.4f %.1f %.1f\n", bc->name, threads, best, bc->flops / best / 1e6,
           peak / 1024.0);
    fflush(stdout);
    free(params), free(x);
    malloc_trim(0);
}

/* ==== one thread in CPU time =================================================== */

static double cpu_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* `bench_core cputime`: the GPT-2 layer (context only) at T = 128 and 512
 * and a 1024-cube sgemm, one thread, interleaved over 30 rounds, best of
 * each in process CPU time: time spent waiting for a CPU does not count,
 * so the ratio to the sgemm holds on a busy shared machine (caches and
 * memory are still shared). Prints "name ms gflops percent_of_sgemm". */
static void cputime_mode(void) {
    enum { N = 1024, ROUNDS = 30 };
    int tokens[2] = {128, 512};
    float *a = malloc(3 * (size_t)N * N * sizeof(float)), *b = a + (size_t)N * N, *c = b + (size_t)N * N;
    attn_config cfg[2];
    attn_plan plan[2];
    float *params[2], *x[2], *ctx[2];
    double fl[2], best[2] = {1e30, 1e30}, sg = 1e30;
    attn_error err;
    attn_rng rng;
    if (!a) exit(1);
    for (size_t i = 0; i < 2 * (size_t)N * N; i++) a[i] = (float)(i % 13) * 0.01f;
    for (int i = 0; i < 2; i++) {
        cfg[i] = (attn_config){.module = ATTN_GPT2, .batch = 1, .d_in = 768, .num_heads = 12,
                               .causal = 1, .tokens = tokens[i]};
        if (attn_plan_make(&cfg[i], &plan[i], &err)) exit(1);
        params[i] = malloc(plan[i].n_params * sizeof(float));
        x[i] = malloc(plan[i].n_inputs * sizeof(float));
        ctx[i] = malloc(plan[i].n_context * sizeof(float));
        if (!params[i] || !x[i] || !ctx[i]) exit(1);
        attn_rng_seed(&rng, 123);
        attn_params_init(&cfg[i], &plan[i], params[i], &rng, &err);
        for (size_t j = 0; j < plan[i].n_inputs; j++) x[i][j] = attn_rng_uniform(&rng, -1.0f, 1.0f);
        fl[i] = module_flops(&cfg[i]);
    }
    for (int r = 0; r < ROUNDS; r++) {
        double t0 = cpu_ms();
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, N, N, N, 1.0f, a, N, b, N, 0.0f, c, N);
        sg = fmin(sg, cpu_ms() - t0);
        for (int i = 0; i < 2; i++) {
            attn_inputs in = {.x = x[i], .params = params[i], .params_checked = 1};
            attn_outputs out = {.context = ctx[i]};
            t0 = cpu_ms();
            if (attn_forward(&cfg[i], &plan[i], &in, NULL, &out, &err)) exit(1);
            best[i] = fmin(best[i], cpu_ms() - t0);
        }
    }
    double rate = 2.0 * N * (double)N * N / sg / 1e6;
    printf("sgemm_1024_cpu %.3f %.1f 100\n", sg, rate);
    for (int i = 0; i < 2; i++)
        printf("gpt2_t%d_context_cpu %.3f %.1f %.0f\n", tokens[i], best[i], fl[i] / best[i] / 1e6,
               100 * fl[i] / best[i] / 1e6 / rate);
    for (int i = 0; i < 2; i++) free(params[i]), free(x[i]), free(ctx[i]);
    free(a);
}

int main(int argc, char **argv) {
    openblas_set_num_threads(1); /* as the server runs it: parallelism is the pool's */
    /* the server's settings (server/main.c, srv_budget_tune_malloc) */
    mallopt(M_MMAP_THRESHOLD, 32 << 20);
    mallopt(M_TRIM_THRESHOLD, 64 << 20);
    attn_config sdpa = {.module = ATTN_SDPA, .batch = 1, .d_in = 64, .num_heads = 1, .causal = 1};
    attn_config gpt2 = {.module = ATTN_GPT2, .batch = 1, .d_in = 768, .num_heads = 12, .causal = 1};
    bench_case cases[] = {
        {"sdpa_causal_t4096_d64", sdpa, 0, 10, 0},
        {"sdpa_causal_t16384_d64", sdpa, 0, 3, 0},
        {"gpt2_t128_context", gpt2, 0, 40, 0},
        {"gpt2_t512_context", gpt2, 0, 20, 0},
        {"gpt2_t512_weights", gpt2, 1, 20, 0},
        {"gpt2_t1024_context", gpt2, 0, 10, 0},
        {"gpt2_t1024_weights", gpt2, 1, 10, 0},
    };
    int tokens[] = {4096, 16384, 128, 512, 512, 1024, 1024};
    int n = (int)(sizeof cases / sizeof cases[0]);
    const char *only = argc > 1 ? argv[1] : NULL; /* one case by name (run.sh runs them one by one) */
    if (only && strcmp(only, "cputime") == 0) {
        cputime_mode();
        return 0;
    }
    if (only && strcmp(only, "sgemm") == 0) {
        for (int t = 1; t <= 2; t++) printf("sgemm %d %.1f\n", t, sgemm_gflops(t));
        printf("kernels %s\n", openblas_get_corename());
        return 0;
    }
    attn_pool *two = attn_pool_create(2);
    for (int i = 0; i < n; i++) {
        cases[i].cfg.tokens = tokens[i];
        cases[i].flops = module_flops(&cases[i].cfg);
        if (only && strcmp(only, cases[i].name) != 0) continue;
        run_case(&cases[i], 1, NULL);
        run_case(&cases[i], 2, two);
    }
    attn_pool_destroy(two);
    return 0;
}
