/* bench_analysis.c - what the analyses of POST /model's "analysis" cost,
 * on the GPT-2 124M shape (12 layers, 12 heads, 768 wide, vocab 50,257),
 * batch 1, over an attn_pool of THREADS (OpenBLAS on one thread, as the
 * server runs).
 *
 *   build/bench/bench_analysis THREADS maps
 *     core's forward (attn_lm_run, the last position's logits) at T = 128
 *     and 1,024 that returns the maps (attn_weights, every block's
 *     [H][T][T]), the same with the six attention-only analyses besides
 *     (entropy, sink, previous_token, duplicate_token, induction, rollout),
 *     and the analyses without the maps (one block's weights held at a
 *     time); random weights from a seed, ids a random half repeated.
 *     Prints "maps_tT ms", "both_tT ms", "alone_tT ms": the best of
 *     BENCH_ANALYSIS_RUNS (3) runs, the three alternating; wall time, or
 *     with THREADS 1 the thread's CPU time (robust on a shared machine).
 *
 *   build/bench/bench_analysis THREADS importance MODEL.safetensors
 *     the importance sweep through api_handle as a request reaches it:
 *     {"model": ..., "idx": 128 ids, "analysis": ["importance"]} over the
 *     checkpoint bench_analysis_torch.py wrote (loaded as --model loads
 *     it): the forward, then 144 ablated runs from each block on. Prints
 *     "importance_124m_t128 ms", the same in process CPU time (_cpu), and
 *     "result" with the 12 x 12 rises of the loss.
 *
 * The ids are bench_analysis_torch.py's: a random half (seed 5) repeated. */
#include "api/api.h"
#include "core/lm.h"

#include <cblas.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define SIX                                                                                        \
    ((1u << ATTN_ANALYSIS_COUNT) - 1 - (1u << ATTN_ANALYSIS_IMPORTANCE))

static double clock_ms(clockid_t c) {
    struct timespec ts;
    clock_gettime(c, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* T ids: a random half (an LCG, seed 5) repeated, as the torch side's. */
static void make_ids(int32_t *idx, int T) {
    unsigned long long s = 5;
    int half = (T + 1) / 2;
    for (int t = 0; t < half; t++) {
        s = s * 6364136223846793005ULL + 1442695040888963407ULL;
        idx[t] = (int32_t)((s >> 33) % 50257);
    }
    for (int t = half; t < T; t++) idx[t] = idx[t - half];
}

/* ==== maps: the forward with the maps, with the analyses, with both ======= */

typedef struct {
    attn_lm_plan p;
    float *params, *last, *maps, *an[ATTN_ANALYSIS_COUNT];
    int32_t *idx;
} maps_case;

/* Wall time, or with one thread (no pool: everything on the calling
 * thread) its CPU time, which time-sharing with other processes does not
 * inflate (bench_forward.c's choice). */
static clockid_t g_clock = CLOCK_MONOTONIC;

static double run_once(maps_case *c, attn_pool *pool, int maps, int analyses) {
    attn_lm_outputs out = {.logits = c->last, .last_only = 1, .attn_weights = maps ? c->maps : NULL};
    for (int a = 0; a < ATTN_ANALYSIS_COUNT && analyses; a++)
        if (SIX >> a & 1u) out.analysis[a] = c->an[a];
    attn_lm_inputs in = {.idx = c->idx, .pool = pool};
    attn_error err = {0};
    double t0 = clock_ms(g_clock);
    if (attn_lm_run(&c->p, c->params, &in, NULL, &out, &err) != ATTN_OK) {
        fprintf(stderr, "run: %s\n", err.message);
        exit(1);
    }
    return clock_ms(g_clock) - t0;
}

static int bench_maps(int threads) {
    int runs = getenv("BENCH_ANALYSIS_RUNS") ? atoi(getenv("BENCH_ANALYSIS_RUNS")) : 3;
    attn_lm_config cfg = {.arch = ATTN_ARCH_GPT2, .vocab_size = 50257, .context = 1024,
                          .n_layer = 12, .n_head = 12, .width = 768, .dropout = 0.1};
    attn_pool *pool = threads > 1 ? attn_pool_create(threads) : NULL;
    g_clock = threads > 1 ? CLOCK_MONOTONIC : CLOCK_THREAD_CPUTIME_ID;
    const int Ts[2] = {128, 1024};
    for (int k = 0; k < 2; k++) {
        maps_case c = {0};
        attn_error err = {0};
        if (attn_lm_plan_make(&cfg, 1, Ts[k], 0, &c.p, &err) != ATTN_OK) return fprintf(stderr, "%s\n", err.message), 1;
        c.params = malloc(c.p.n_params * sizeof(float));
        c.last = malloc((size_t)c.p.V * sizeof(float));
        c.maps = malloc(c.p.n_attn * sizeof(float));
        c.idx = malloc((size_t)Ts[k] * sizeof(int32_t));
        for (int a = 0; a < ATTN_ANALYSIS_COUNT; a++) {
            size_t n;
            attn_analysis_dims(&c.p, (attn_analysis)a, NULL, &n);
            c.an[a] = malloc(n * sizeof(float));
        }
        attn_rng rng;
        attn_rng_seed(&rng, 0);
        attn_lm_params_init(&c.p, c.params, &rng, &err);
        make_ids(c.idx, Ts[k]);
        double best[3] = {1e30, 1e30, 1e30};
        run_once(&c, pool, 1, 0); /* warm: the pages of every buffer */
        for (int i = 0; i < runs; i++)
            for (int m = 0; m < 3; m++) { /* maps, both, the analyses alone */
                double ms = run_once(&c, pool, m < 2, m > 0);
                best[m] = ms < best[m] ? ms : best[m];
            }
        printf("maps_t%d %.3f\nboth_t%d %.3f\nalone_t%d %.3f\n", Ts[k], best[0], Ts[k], best[1], Ts[k],
               best[2]);
        fflush(stdout);
        for (int a = 0; a < ATTN_ANALYSIS_COUNT; a++) free(c.an[a]);
        free(c.params), free(c.last), free(c.maps), free(c.idx);
    }
    attn_pool_destroy(pool);
    return 0;
}

/* ==== importance: the sweep through api_handle ============================ */

static void print_result(const api_reply *r) {
    json_t *j = json_loadb(r->body.data, r->body.len, 0, NULL);
    json_t *res = json_object_get(json_object_get(j, "analysis"), "importance");
    printf("result");
    for (size_t l = 0; l < json_array_size(res); l++)
        for (size_t h = 0; h < json_array_size(json_array_get(res, l)); h++)
            printf(" %.6g", json_number_value(json_array_get(json_array_get(res, l), h)));
    printf("\n");
    json_decref(j);
}

static int bench_importance(int threads, const char *model) {
    int runs = getenv("BENCH_ANALYSIS_RUNS") ? atoi(getenv("BENCH_ANALYSIS_RUNS")) : 3;
    api_models *models = NULL;
    char spec[4200], why[512], body[4096];
    snprintf(spec, sizeof spec, "bench=%s", model);
    if (api_models_load(&models, spec, why, sizeof why)) return fprintf(stderr, "%s\n", why), 1;
    attn_pool *pool = threads > 1 ? attn_pool_create(threads) : NULL;
    api_limits lim = {.max_elements = (size_t)1 << 31, .models = models, .compute = pool};
    int32_t idx[128];
    make_ids(idx, 128);
    size_t n = (size_t)snprintf(body, sizeof body, "{\"model\":\"bench\",\"return\":[],\"analysis\":"
                                "[\"importance\"],\"idx\":[");
    for (int t = 0; t < 128; t++) n += (size_t)snprintf(body + n, sizeof body - n, t ? ",%d" : "%d", idx[t]);
    snprintf(body + n, sizeof body - n, "]}");
    double best = 1e30, best_cpu = 1e30;
    for (int i = 0; i < runs; i++) {
        api_reply r;
        double t0 = clock_ms(CLOCK_MONOTONIC), c0 = clock_ms(CLOCK_PROCESS_CPUTIME_ID);
        int status = api_handle(API_EP_MODEL, body, strlen(body), &lim, &r);
        double ms = clock_ms(CLOCK_MONOTONIC) - t0, cpu = clock_ms(CLOCK_PROCESS_CPUTIME_ID) - c0;
        if (status != 200) return fprintf(stderr, "status %d: %.300s\n", status, r.body.data), 1;
        best = ms < best ? ms : best;
        best_cpu = cpu < best_cpu ? cpu : best_cpu;
        if (i == runs - 1) {
            printf("importance_124m_t128 %.3f\nimportance_124m_t128_cpu %.3f\n", best, best_cpu);
            print_result(&r);
        }
        api_reply_free(&r);
    }
    attn_pool_destroy(pool);
    api_models_free(models);
    return 0;
}

int main(int argc, char **argv) {
    if (argc < 3 || (strcmp(argv[2], "maps") && (strcmp(argv[2], "importance") || argc < 4))) {
        fprintf(stderr, "usage: %s THREADS maps | THREADS importance MODEL.safetensors\n", argv[0]);
        return 2;
    }
    openblas_set_num_threads(1);
    int threads = atoi(argv[1]);
    return strcmp(argv[2], "maps") == 0 ? bench_maps(threads) : bench_importance(threads, argv[3]);
}
