/* bench_embed.c - sentence embeddings of a batch of 32 sentences of 16 to 64
 * tokens through all-MiniLM-L6-v2's shape (the folder and batch written by
 * bench/bench_embed_torch.py: BertModel, 6 layers, hidden 384, 12 heads, FFN
 * 1536, vocab 30,522; mean pooling and Normalize), as the server computes
 * them, on an attn_pool of `threads` (OpenBLAS on one thread, as the server
 * runs):
 *
 *   core packed   attn_lm_run on the padded batch with its attention_mask
 *                 (the tokens alone through the projections and MLPs), then
 *                 attn_lm_pool: what POST /v1/embeddings computes
 *   core dense    the same with the padding computed (a capture asked makes
 *                 the run dense), for the packing's share
 *   api           POST /v1/embeddings through api_handle: the JSON body of
 *                 ids read, the run, the reply's JSON written
 *
 *   bench_embed DIR [threads] [reps] [cputime]   (default 2 and 9)
 *
 * With cputime (and one thread: everything on the calling thread) the
 * times are the process's CPU time (CLOCK_PROCESS_CPUTIME_ID), which other
 * processes sharing the cores do not inflate: the robust figure on a busy
 * machine.
 * Prints "core packed ms", "core dense ms" and "api embeddings ms" lines, the
 * median of reps; checks first that the packed and dense embeddings agree. */
#include "api/api.h"
#include "api/weights/weights.h" /* the loaded model's config and buffer */
#include "bench/measure.h"
#include "core/lm.h"

#include <cblas.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct {
    attn_lm_plan plan;
    const float *params;
    int32_t *idx;
    uint8_t *mask;
    float *last, *emb, *cap;
    attn_pool *pool;
} run_ctx;

/* One batch: the run (dense with a capture asked), the pooling. */
static void embed(run_ctx *c, int dense) {
    const attn_lm_plan *p = &c->plan;
    attn_lm_capture cap = {.layer = 0, .hook = ATTN_HOOK_RESID_PRE, .dst = c->cap};
    attn_lm_inputs in = {.idx = c->idx, .attention_mask = c->mask, .pool = c->pool,
                         .captures = dense ? &cap : NULL, .n_captures = dense};
    attn_lm_outputs out = {.last_hidden = c->last};
    attn_lm_pooling pl = {.modes = ATTN_POOL_MEAN, .normalize = 1};
    attn_error err = {0};
    if (attn_lm_run(p, c->params, &in, NULL, &out, &err) ||
        attn_lm_pool(&pl, c->last, c->mask, p->B, p->T, p->C, c->emb, &err)) {
        fprintf(stderr, "bench_embed: %s: %s\n", err.field, err.message);
        exit(1);
    }
}

/* The batch (DIR/batch.json) padded into c, and its JSON text. */
static char *read_batch(const char *dir, run_ctx *c, int *B, int *T) {
    char path[1024];
    snprintf(path, sizeof path, "%s/batch.json", dir);
    json_error_t je;
    json_t *rows = json_load_file(path, 0, &je);
    if (!rows) {
        fprintf(stderr, "bench_embed: %s: %s\n", path, je.text);
        exit(1);
    }
    *B = (int)json_array_size(rows), *T = 0;
    for (int b = 0; b < *B; b++) {
        int n = (int)json_array_size(json_array_get(rows, (size_t)b));
        *T = n > *T ? n : *T;
    }
    c->idx = calloc((size_t)*B * (size_t)*T, sizeof *c->idx);
    c->mask = calloc((size_t)*B * (size_t)*T, 1);
    for (int b = 0; b < *B; b++)
        for (size_t t = 0; t < json_array_size(json_array_get(rows, (size_t)b)); t++) {
            c->idx[(size_t)b * (size_t)*T + t] = (int32_t)json_integer_value(json_array_get(json_array_get(rows, (size_t)b), t));
            c->mask[(size_t)b * (size_t)*T + t] = 1;
        }
    char *text = json_dumps(rows, JSON_COMPACT);
    json_decref(rows);
    return text;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: bench_embed DIR [threads] [reps]\n");
        return 2;
    }
    int threads = argc > 2 ? atoi(argv[2]) : 2, reps = argc > 3 ? atoi(argv[3]) : 9, B, T;
    int cputime = argc > 4 && strcmp(argv[4], "cputime") == 0;
    if (cputime) bench_use_clock(CLOCK_PROCESS_CPUTIME_ID);
    openblas_set_num_threads(1);
    char spec[1100], why[512];
    snprintf(spec, sizeof spec, "mini=%s", argv[1]);
    api_models *models = NULL;
    if (api_models_load(&models, spec, why, sizeof why)) {
        fprintf(stderr, "bench_embed: %s\n", why);
        return 1;
    }
    run_ctx c = {0};
    char *rows = read_batch(argv[1], &c, &B, &T);
    const api_model *m = api__models_find(models, "mini");
    attn_error err = {0};
    if (attn_lm_plan_make(&m->cfg, B, T, 0, &c.plan, &err)) {
        fprintf(stderr, "bench_embed: %s\n", err.message);
        return 1;
    }
    c.params = m->params;
    c.pool = attn_pool_create(threads);
    size_t BTC = (size_t)B * (size_t)T * 384;
    c.last = malloc(BTC * sizeof *c.last), c.cap = malloc(BTC * sizeof *c.cap);
    c.emb = malloc((size_t)B * 384 * sizeof *c.emb);
    float *dense = malloc((size_t)B * 384 * sizeof *dense);
    embed(&c, 1);
    memcpy(dense, c.emb, (size_t)B * 384 * sizeof *dense);
    embed(&c, 0);
    double worst = 0.0;
    for (size_t i = 0; i < (size_t)B * 384; i++) worst = fmax(worst, fabs((double)dense[i] - c.emb[i]));
    if (worst > 1e-5) {
        fprintf(stderr, "bench_embed: packed and dense differ by %g\n", worst);
        return 1;
    }
    size_t blen = strlen(rows) + 64;
    char *body = malloc(blen);
    snprintf(body, blen, "{\"model\":\"mini\",\"input\":%s}", rows);
    api_limits lim = {.max_elements = 1u << 28, .models = models, .compute = c.pool};
    double *ms = malloc((size_t)reps * sizeof *ms);
    static const char *const names[3] = {"core packed", "core dense", "api embeddings"};
    for (int k = 0; k < 3; k++) {
        for (int r = 0; r < reps; r++) {
            double t0 = bench_now_ms();
            if (k < 2) {
                embed(&c, k == 1);
            } else {
                api_reply reply = {0};
                api_handle(API_EP_V1_EMBEDDINGS, body, strlen(body), &lim, &reply);
                if (reply.status != 200) {
                    fprintf(stderr, "bench_embed: status %d: %.300s\n", reply.status, reply.body.data);
                    return 1;
                }
                api_reply_free(&reply);
            }
            ms[r] = bench_now_ms() - t0;
        }
        printf("%s ms %.2f\n", names[k], bench_median(ms, reps));
    }
    printf("# %d sentences padded to %d tokens (%d positions); %d threads%s\n", B, T, B * T, threads,
           cputime ? ", CPU time" : "");
    attn_pool_destroy(c.pool);
    api_models_free(models);
    return 0;
}
