/* bench_patch.c - the server's activation-patching sweep, timed through
 * api_handle as a request reaches it: POST /model/gpt2 with "model" (the
 * 124M-shaped checkpoint bench_patch_torch.py wrote, loaded as the server
 * loads --model), the 16-token pair and "patch": {"site": "attn_head"} —
 * the clean run, the corrupted run and 144 patched runs, each from its
 * layer's input, over an attn_pool of the given width (OpenBLAS on one
 * thread, as the server runs). Prints "patch_heads_124m_t16 ms" (best of
 * BENCH_PATCH_RUNS, 3), the same in process CPU time (_cpu: the time spent
 * waiting for a CPU on a shared machine does not count; on one thread, the
 * work itself), and "result" with the 12 x 12 logit differences.
 *
 *   build/bench/bench_patch THREADS MODEL.safetensors */
#include "api/api.h"
#include "core/attention.h"

#include <cblas.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double clock_ms(clockid_t c) {
    struct timespec ts;
    clock_gettime(c, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* bench_patch_torch.py's pair: token t is (7919 t + 11) mod 50257, the
 * corrupted one with 1000 at 5 and 2000 at 11; logit[464] - logit[383]. */
static void request(char *out, size_t size) {
    int clean[16], corrupted[16];
    for (int t = 0; t < 16; t++) clean[t] = corrupted[t] = (t * 7919 + 11) % 50257;
    corrupted[5] = 1000, corrupted[11] = 2000;
    size_t n = (size_t)snprintf(out, size, "{\"model\":\"bench\",\"return\":[],\"idx\":[");
    for (int t = 0; t < 16; t++) n += (size_t)snprintf(out + n, size - n, t ? ",%d" : "%d", clean[t]);
    n += (size_t)snprintf(out + n, size - n, "],\"patch\":{\"site\":\"attn_head\","
                          "\"logit_diff\":[464,383],\"corrupted_idx\":[");
    for (int t = 0; t < 16; t++) n += (size_t)snprintf(out + n, size - n, t ? ",%d" : "%d", corrupted[t]);
    snprintf(out + n, size - n, "]}}");
}

static void print_result(const api_reply *r) {
    json_t *j = json_loadb(r->body.data, r->body.len, 0, NULL);
    json_t *res = json_object_get(json_object_get(j, "patch"), "result");
    printf("result");
    for (size_t l = 0; l < json_array_size(res); l++)
        for (size_t h = 0; h < json_array_size(json_array_get(res, l)); h++)
            printf(" %.6g", json_number_value(json_array_get(json_array_get(res, l), h)));
    printf("\n");
    json_decref(j);
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: %s THREADS MODEL.safetensors\n", argv[0]);
        return 2;
    }
    int threads = atoi(argv[1]), runs = getenv("BENCH_PATCH_RUNS") ? atoi(getenv("BENCH_PATCH_RUNS")) : 3;
    openblas_set_num_threads(1);
    api_models *models = NULL;
    char spec[4200], why[512], body[2048];
    snprintf(spec, sizeof spec, "bench=%s", argv[2]);
    if (api_models_load(&models, spec, why, sizeof why)) {
        fprintf(stderr, "%s\n", why);
        return 1;
    }
    attn_pool *pool = threads > 1 ? attn_pool_create(threads) : NULL;
    api_limits lim = {.max_elements = (size_t)1 << 31, .models = models, .compute = pool};
    request(body, sizeof body);
    double best = 1e30, best_cpu = 1e30;
    for (int i = 0; i < runs; i++) {
        api_reply r;
        double t0 = clock_ms(CLOCK_MONOTONIC), c0 = clock_ms(CLOCK_PROCESS_CPUTIME_ID);
        int status = api_handle(API_EP_MODEL_GPT2, body, strlen(body), &lim, &r);
        double ms = clock_ms(CLOCK_MONOTONIC) - t0, cpu = clock_ms(CLOCK_PROCESS_CPUTIME_ID) - c0;
        best_cpu = cpu < best_cpu ? cpu : best_cpu;
        if (status != 200) {
            fprintf(stderr, "status %d: %.300s\n", status, r.body.data);
            return 1;
        }
        best = ms < best ? ms : best;
        if (i == runs - 1) {
            printf("patch_heads_124m_t16 %.3f\n", best);
            printf("patch_heads_124m_t16_cpu %.3f\n", best_cpu);
            print_result(&r);
        }
        api_reply_free(&r);
    }
    attn_pool_destroy(pool);
    api_models_free(models);
    return 0;
}
