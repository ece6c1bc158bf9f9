/* bench_half.c - half-size weights against float32, in one run:
 *
 *   decode: one step with the key/value cache (attn_lm_decode, batch 1,
 *     context 128) with F32, BF16 and F16 weights, each beside its memory
 *     floor (the bytes of the weights a step reads, summed once by the same
 *     threads: a step cannot be faster), for the GPT-2 124M shape and the
 *     SmolLM2-135M shape (Llama: 576 wide, 30 layers, 9 heads, 3 key/value
 *     heads, MLP 1536, vocabulary 49,152, tied head); the figure to read is
 *     BF16 step / F32 step (the goal: at most 0.6);
 *   prefill: the forward pass over T = 128 tokens (logits of the last
 *     position, as a prompt's prefill asks) with each dtype, against F32;
 *   quality: the mean KL divergence KL(p_f32 || p_bf16) of the next-token
 *     distribution of a BF16 copy of a float32 model (what --weights-dtype
 *     bf16 makes) over every position of a 128-token text, the largest
 *     one, and how often the two pick the same most likely token, on the
 *     built-in demo model (a trained GPT-2 of 4 layers, models/shakespeare,
 *     loaded as the server loads it; random weights would say little: the
 *     124M shape from torch.manual_seed has one-hot next-token
 *     distributions).
 *
 *   bench_half [threads] [folder] [portable]   (default 2 and models/shakespeare;
 *     portable: the portable kernels whatever the CPU has, what a CPU
 *     without AVX2, FMA and F16C runs)
 *   env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE build/bench/bench_half 2
 *
 * With one thread everything runs on the calling thread and is timed by
 * its CPU clock (CLOCK_THREAD_CPUTIME_ID), which time-sharing with other
 * processes does not inflate: the figure to trust on a busy machine (the
 * load average heads the output).
 * The parameters are random (torch.manual_seed(0) for GPT2, uniform values
 * of about 0.05 for the Llama shape: no seed builds it here); only the
 * timings depend on them. Each time is the
 * median of RUNS, the floor and the steps alternating so that both see the
 * same machine. The machine (CPU, AVX-512 or not, the half kernels in use)
 * heads the output.
 */
#include "api/weights/weights.h"
#include "bench/measure.h"
#include "core/half.h"
#include "core/lm.h"

#include <cblas.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RUNS 15
#define CTX 128
#define DTYPES 3

static const attn_dtype dtypes[DTYPES] = {ATTN_DTYPE_F32, ATTN_DTYPE_BF16, ATTN_DTYPE_F16};

static void *xmalloc(size_t n) {
    void *p = malloc(n ? n : 1);
    if (p == NULL) {
        fprintf(stderr, "bench_half: out of memory (%zu bytes)\n", n);
        exit(1);
    }
    return p;
}

/* ==== The machine ========================================================= */

static void machine(int threads) {
    char line[512], name[256] = "unknown CPU";
    int avx512 = 0;
    FILE *f = fopen("/proc/cpuinfo", "r");
    while (f && fgets(line, sizeof line, f)) {
        if (strncmp(line, "model name", 10) == 0 && strchr(line, ':'))
            snprintf(name, sizeof name, "%s", strchr(line, ':') + 2);
        if (strncmp(line, "flags", 5) == 0 && strstr(line, " avx512f")) avx512 = 1;
    }
    if (f) fclose(f);
    name[strcspn(name, "\n")] = '\0';
    double load[3];
    bench_load_average(load);
    printf("machine: %s, %s, %d threads (%s clock); half-weight kernels: %s; OPENBLAS_CORETYPE=%s; "
           "load average %.2f %.2f %.2f\n", name, avx512 ? "AVX-512" : "no AVX-512", threads,
           threads <= 1 ? "CPU" : "wall", attn__half_kernels(),
           getenv("OPENBLAS_CORETYPE") ? getenv("OPENBLAS_CORETYPE") : "(unset)", load[0], load[1],
           load[2]);
}

/* ==== The floor: the bytes a step reads, read once ======================== */

typedef struct {
    const unsigned char *base[512];
    size_t len[512];          /* bytes */
    int n;
    size_t chunk;             /* bytes per item */
    long items;
    double sums[256];
} floor_job;

__attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
static unsigned long long sum_bytes(const unsigned char *x, size_t n) {
    unsigned long long s[8] = {0}, t = 0, w;
    size_t i = 0;
    for (; i + 64 <= n; i += 64)
        for (int l = 0; l < 8; l++) {
            memcpy(&w, x + i + 8 * l, 8);
            s[l] += w;
        }
    for (; i < n; i++) t += x[i];
    for (int l = 0; l < 8; l++) t += s[l];
    return t;
}

static void floor_item(void *ctx, long item, int slot) {
    floor_job *j = ctx;
    size_t at = (size_t)item * j->chunk, left = j->chunk;
    unsigned long long s = 0;
    for (int r = 0; r < j->n && left; r++) {
        if (at >= j->len[r]) {
            at -= j->len[r];
            continue;
        }
        size_t take = j->len[r] - at < left ? j->len[r] - at : left;
        s += sum_bytes(j->base[r] + at, take);
        left -= take, at = 0;
    }
    j->sums[slot] += (double)s;
}

/* Every tensor a step reads whole: all but the buffers and the embedding
 * tables (a row each: entry 0, and entry 1 with learned positions), and the
 * token table all the same when it is the tied head. */
static double floor_regions(const attn_lm_plan *p, const void *params, floor_job *j) {
    memset(j, 0, sizeof *j);
    j->chunk = 1 << 17;
    size_t total = 0;
    for (int i = 0; i < p->param_count && j->n < 511; i++) {
        attn_param e;
        attn_lm_param_get(p, i, &e);
        int table = (i == 0 && !p->tied) || (i == 1 && p->spec.learned_pos);
        if (table || e.buffer) continue;
        size_t bytes = e.count * attn_dtype_size(e.dtype);
        j->base[j->n] = (const unsigned char *)params + e.byte_offset, j->len[j->n++] = bytes;
        total += bytes;
    }
    j->items = (long)((total + j->chunk - 1) / j->chunk);
    return (double)total;
}

static double floor_once(attn_pool *pool, floor_job *j) {
    double t0 = bench_now_ms();
    attn_pool_run(pool, j->items, floor_item, j);
    return bench_now_ms() - t0;
}

/* ==== Models ============================================================== */

typedef struct {
    const char *name;
    attn_lm_config cfg;
    attn_lm_plan plan[DTYPES];   /* B = 1, T = CTX - 1: the prompt */
    void *params[DTYPES];
} model;

static void uniform_fill(const attn_lm_plan *p, float *w) {
    uint64_t s = 1;
    for (int i = 0; i < p->param_count; i++) {
        attn_param e;
        attn_lm_param_get(p, i, &e);
        float *x = w + e.offset;
        for (size_t k = 0; k < e.count; k++) {
            s = s * 6364136223846793005ULL + 1442695040888963407ULL;
            float u = (float)(s >> 40) / 16777216.0f - 0.5f;
            x[k] = e.rank == 1 ? 1.0f + 0.1f * u : 0.1f * u;
        }
        if (e.buffer) attn_param_buffer_fill(&e, x);
    }
}

static void model_make(model *m, int T) {
    attn_error err = {0};
    for (int d = 0; d < DTYPES; d++) {
        attn_lm_config c = m->cfg;
        c.weights_dtype = dtypes[d];
        if (attn_lm_plan_make(&c, 1, T, 0, &m->plan[d], &err)) bench_fail(m->name, &err);
        m->params[d] = xmalloc(m->plan[d].param_bytes);
    }
    attn_rng rng;
    attn_rng_seed(&rng, 0);
    if (attn_lm_params_init(&m->plan[0], m->params[0], &rng, &err) != ATTN_OK)
        uniform_fill(&m->plan[0], m->params[0]);
    for (int d = 1; d < DTYPES; d++)
        if (attn_lm_params_convert(&m->plan[d], m->params[d], &m->plan[0], m->params[0], &err))
            bench_fail(m->name, &err);
}

static void model_free(model *m) {
    for (int d = 0; d < DTYPES; d++) free(m->params[d]);
}

/* ==== Decode and prefill ================================================== */

/* The median decode step (ms) of dtype d at context CTX, and its floor. */
static void decode_times(model *m, int d, attn_pool *pool, double *step, double *floor_ms,
                         double *bytes) {
    attn_error err = {0};
    attn_lm_config c = m->plan[d].cfg;
    attn_lm_cache *cache;
    const attn_lm_plan *p = &m->plan[d];
    int32_t idx[CTX];
    for (int t = 0; t < CTX; t++) idx[t] = (int32_t)((t * 7919u) % (unsigned)p->V);
    float *logits = xmalloc((size_t)p->V * sizeof *logits);
    if (attn_lm_cache_create(&c, 1, CTX, &cache, &err)) bench_fail(m->name, &err);
    if (attn_lm_prefill(p, m->params[d], idx, cache, pool, NULL, &err)) bench_fail(m->name, &err);
    floor_job *fj = xmalloc(sizeof *fj);
    *bytes = floor_regions(p, m->params[d], fj);
    double st[RUNS], fl[RUNS];
    attn_lm_step_outputs so = {.logits = logits};
    for (int r = 0; r < RUNS; r++) {
        fl[r] = floor_once(pool, fj);
        attn_lm_cache_truncate(cache, 0, CTX - 1, &err);
        double t0 = bench_now_ms();
        if (attn_lm_decode(cache, m->params[d], &idx[CTX - 1], pool, &so, &err)) bench_fail(m->name, &err);
        st[r] = bench_now_ms() - t0;
    }
    *step = bench_median(st, RUNS), *floor_ms = bench_median(fl, RUNS);
    attn_lm_cache_free(cache);
    free(fj), free(logits);
}

/* The median forward over T = 128 tokens (ms), logits of the last position. */
static double prefill_time(model *m, int d, attn_pool *pool) {
    attn_error err = {0};
    attn_lm_config c = m->plan[d].cfg;
    attn_lm_plan p;
    if (attn_lm_plan_make(&c, 1, 128, 0, &p, &err)) bench_fail(m->name, &err);
    int32_t idx[128];
    for (int t = 0; t < 128; t++) idx[t] = (int32_t)((t * 7919u) % (unsigned)p.V);
    float *logits = xmalloc((size_t)p.V * sizeof *logits);
    attn_lm_outputs out = {.logits = logits, .last_only = 1};
    double t[5];
    for (int r = 0; r < 5; r++) {
        double t0 = bench_now_ms();
        if (attn_lm_forward(&p, m->params[d], idx, pool, NULL, &out, &err)) bench_fail(m->name, &err);
        t[r] = bench_now_ms() - t0;
    }
    free(logits);
    return bench_median(t, 5);
}

static void bench_model(model *m, attn_pool *pool) {
    double step[DTYPES], fl[DTYPES], bytes[DTYPES], pre[DTYPES];
    for (int d = 0; d < DTYPES; d++) {
        decode_times(m, d, pool, &step[d], &fl[d], &bytes[d]);
        pre[d] = prefill_time(m, d, pool);
    }
    for (int d = 0; d < DTYPES; d++)
        printf("%-13s %-4s decode step %7.2f ms (%.2fx F32's), floor %6.2f ms (%6.1f MB at %5.1f GB/s): "
               "%.2fx the floor; prefill T=128 %7.1f ms (%.2fx F32's)\n",
               m->name, attn_dtype_name(dtypes[d]), step[d], step[d] / step[0], fl[d],
               bytes[d] / 1e6, bytes[d] / fl[d] / 1e6, step[d] / fl[d], pre[d], pre[d] / pre[0]);
}

/* ==== Quality: KL(p_f32 || p_bf16) over a text ============================ */

static void log_softmax(const float *x, int n, double *out) {
    double max = x[0], sum = 0.0;
    for (int i = 1; i < n; i++) max = x[i] > max ? x[i] : max;
    for (int i = 0; i < n; i++) sum += exp((double)x[i] - max);
    for (int i = 0; i < n; i++) out[i] = (double)x[i] - max - log(sum);
}

/* Mean and largest KL over the T positions of logits a (float32) and b, and
 * the fraction of positions whose most likely token is the same. */
static void kl_report(const char *name, const float *a, const float *b, int T, int V) {
    double *la = xmalloc((size_t)V * sizeof *la), *lb = xmalloc((size_t)V * sizeof *lb);
    double mean = 0.0, most = 0.0;
    int same = 0;
    for (int t = 0; t < T; t++) {
        log_softmax(a + (size_t)t * V, V, la);
        log_softmax(b + (size_t)t * V, V, lb);
        double kl = 0.0;
        int ia = 0, ib = 0;
        for (int v = 0; v < V; v++) {
            kl += exp(la[v]) * (la[v] - lb[v]);
            ia = la[v] > la[ia] ? v : ia, ib = lb[v] > lb[ib] ? v : ib;
        }
        mean += kl / T, most = kl > most ? kl : most;
        same += ia == ib;
    }
    printf("%-13s BF16 from F32: mean KL(p_f32 || p_bf16) %.3g nats over %d positions (largest "
           "%.3g), same top token at %d of %d\n", name, mean, T, most, same, T);
    free(la), free(lb);
}

/* Forward logits [T][V] of every position. */
static float *all_logits(const attn_lm_plan *p, const void *params, const int32_t *idx,
                         attn_pool *pool) {
    attn_error err = {0};
    float *l = xmalloc(p->n_logits * sizeof *l);
    attn_lm_outputs out = {.logits = l};
    if (attn_lm_forward(p, params, idx, pool, NULL, &out, &err)) bench_fail("kl", &err);
    return l;
}

/* The demo model's folder loaded as the server loads it, F32 and BF16. */
static void kl_folder(const char *dir, attn_pool *pool) {
    char spec[1200], why[512];
    api_models *f32 = NULL, *bf16 = NULL;
    snprintf(spec, sizeof spec, "m=%s", dir);
    if (api_models_load_as(&f32, spec, API_WEIGHTS_F32, why, sizeof why) ||
        api_models_load_as(&bf16, spec, API_WEIGHTS_BF16, why, sizeof why)) {
        printf("%s: not loaded (%s): no KL of a trained model\n", dir, why);
        api_models_free(f32), api_models_free(bf16);
        return;
    }
    const api_model *m[2] = {api__models_find(f32, "m"), api__models_find(bf16, "m")};
    const void *w[2] = {m[0]->params, m[1]->params};
    attn_lm_config cfg[2] = {m[0]->cfg, m[1]->cfg};
    const char *text = "ROMEO:\nBut soft, what light through yonder window breaks?\nIt is the east, and "
                       "Juliet is the sun.\nArise, fair sun, and kill the envious moon, who";
    int T = (int)strlen(text) < cfg[0].context ? (int)strlen(text) : cfg[0].context;
    int32_t idx[1024];
    for (int t = 0; t < T; t++) idx[t] = (unsigned char)text[t] % cfg[0].vocab_size;
    attn_lm_plan p[2];
    attn_error err = {0};
    for (int d = 0; d < 2; d++)
        if (attn_lm_plan_make(&cfg[d], 1, T, 0, &p[d], &err)) bench_fail(dir, &err);
    float *a = all_logits(&p[0], w[0], idx, pool), *b = all_logits(&p[1], w[1], idx, pool);
    kl_report("shakespeare", a, b, T, p[0].V);
    free(a), free(b);
    api_models_free(f32), api_models_free(bf16);
}

int main(int argc, char **argv) {
    int threads = argc > 1 ? atoi(argv[1]) : 2;
    const char *folder = argc > 2 ? argv[2] : "models/shakespeare";
    if (argc > 3 && strcmp(argv[3], "portable") == 0) attn__half_force_portable(1);
    openblas_set_num_threads(1);
    attn_pool *pool = threads > 1 ? attn_pool_create(threads) : NULL;
    if (threads > 1 && pool == NULL) return 1;
    if (threads <= 1) bench_use_clock(CLOCK_THREAD_CPUTIME_ID);
    machine(threads);
    model gpt2 = {.name = "GPT-2 124M", .cfg = {.arch = ATTN_ARCH_GPT2, .vocab_size = 50257,
                                                .context = 1024, .n_layer = 12, .n_head = 12,
                                                .width = 768}};
    model smol = {.name = "SmolLM2-135M"};
    attn_lm_config_json_defaults(ATTN_ARCH_LLAMA, &smol.cfg);
    smol.cfg.vocab_size = 49152, smol.cfg.context = 2048, smol.cfg.n_layer = 30;
    smol.cfg.n_head = 9, smol.cfg.n_kv_head = 3, smol.cfg.width = 576, smol.cfg.ffn = 1536;
    smol.cfg.tied = 1;
    model *models[2] = {&gpt2, &smol};
    for (int i = 0; i < 2; i++) {
        model_make(models[i], CTX - 1);
        bench_model(models[i], pool);
        model_free(models[i]);
    }
    kl_folder(folder, pool);
    attn_pool_destroy(pool);
    return 0;
}
