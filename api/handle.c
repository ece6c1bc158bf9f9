/* handle.c - api_handle: one request body to one reply body.
 *
 *   parse (jansson) -> api_request: config, contiguous inputs and masks
 *   attn_plan_make  -> every size; over lim->max_elements is a 413 here,
 *                      before the parameters and outputs are allocated
 *   parameters      -> init {"seed"} or state_dict, copied out of the tree
 *   json_decref     -> the tree is gone before computing
 *   attn_forward    -> only the requested outputs are allocated
 *   api__respond    -> the reply written straight into reply->body
 */
#include "api/api_internal.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ==== jansson's allocations ============================================= */

/* jansson 2.14 does not always say when it ran out of memory: some failed
 * allocations of its lexer come back as syntax errors ("string or '}'
 * expected"), others drop a character and parse on (found by
 * tests/test_api_chaos.c). So its allocations go through this function,
 * which notes a failure for the thread that made it, and api_handle answers
 * 503 out_of_memory whenever one failed. Installed once; it is plain malloc
 * and free, like jansson's defaults, so a jansson call already running
 * elsewhere is not disturbed. */
static _Thread_local int json_alloc_failed;
static pthread_once_t json_alloc_once = PTHREAD_ONCE_INIT;

static void *json_alloc(size_t n) {
    void *p = malloc(n);
    if (p == NULL) json_alloc_failed = 1;
    return p;
}

static void json_alloc_install(void) { json_set_alloc_funcs(json_alloc, free); }

double api__now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* Bytes of reply text per output value, counted in floats (4 bytes) against
 * the element budget: a round-trip float32 takes about 11 characters and a
 * comma. */
#define API_REPLY_FLOATS_PER_VALUE 3

/* The values of every requested output (reply size estimate, and the SDPA
 * transposed copy). */
static size_t output_values(const api_request *rq, const attn_plan *p) {
    unsigned w = rq->returns;
    size_t n = 0;
    if (w & 1u << API_OUT_CONTEXT) n += p->n_context;
    if (w & 1u << API_OUT_ATTN_WEIGHTS) n += rq->average && rq->multi_head ? p->n_avg : p->n_scores;
    if (w & 1u << API_OUT_ATTN_SCORES) n += p->n_scores;
    if (w & 1u << API_OUT_MASKED_SCORES) n += p->n_scores;
    if (w & 1u << API_OUT_MASK) n += p->n_mask;
    if (w & 1u << API_OUT_DROPOUT_MASK) n += p->n_dropout;
    if (w & 1u << API_OUT_QUERIES) n += p->n_queries;
    if (w & 1u << API_OUT_KEYS) n += p->n_keys;
    if (w & 1u << API_OUT_VALUES) n += p->n_values;
    if (w & 1u << API_OUT_CONTEXT_HEADS) n += p->n_context_heads;
    if (w & 1u << API_OUT_PARAMS) n += p->n_params;
    return n; /* each term is below 2^40 (attn_plan_make): no overflow */
}

/* The ATTN_OUT_* bits of the requested outputs, so that the plan counts
 * only the memory of the path that will run (the fused one, linear in T,
 * when no [T][T] tensor is asked for). */
static unsigned core_outputs(const api_request *rq) {
    static const struct {
        int api;
        unsigned core;
    } map[] = {
        {API_OUT_CONTEXT, ATTN_OUT_CONTEXT},           {API_OUT_ATTN_SCORES, ATTN_OUT_SCORES},
        {API_OUT_MASKED_SCORES, ATTN_OUT_MASKED_SCORES}, {API_OUT_MASK, ATTN_OUT_MASK},
        {API_OUT_DROPOUT_MASK, ATTN_OUT_DROPOUT_MASK}, {API_OUT_QUERIES, ATTN_OUT_QUERIES},
        {API_OUT_KEYS, ATTN_OUT_KEYS},                 {API_OUT_VALUES, ATTN_OUT_VALUES},
        {API_OUT_CONTEXT_HEADS, ATTN_OUT_CONTEXT_HEADS},
    };
    unsigned bits = 0;
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
        if (rq->returns & 1u << map[i].api) bits |= map[i].core;
    if (rq->returns & 1u << API_OUT_ATTN_WEIGHTS)
        bits |= rq->average && rq->multi_head ? ATTN_OUT_WEIGHTS_AVG : ATTN_OUT_WEIGHTS;
    return bits ? bits : ATTN_OUT_CONTEXT; /* the context is computed in any case */
}

/* The output tensors, each allocated only when asked for. */
typedef struct {
    void *p[12];
    int n;
    int failed;
} allocs;

static void *take(allocs *a, size_t count, size_t size) {
    void *p = malloc(count ? count * size : 1);
    if (p == NULL) a->failed = 1;
    else a->p[a->n++] = p;
    return p;
}

static void allocs_free(allocs *a) {
    for (int i = 0; i < a->n; i++) free(a->p[i]);
    a->n = 0;
}

static int compute(const api_request *rq, const attn_plan *plan, const float *params,
                   attn_rng *rng, attn_pool *pool, api_result *res, allocs *a, api_err *e) {
    const attn_config *c = &rq->cfg;
    unsigned w = rq->returns;
    attn_outputs *o = &res->out;
    int sdpa = c->module == ATTN_SDPA;
    if (w & 1u << API_OUT_CONTEXT) {
        o->context = take(a, plan->n_context, sizeof(float));
        if (sdpa) res->context_bhld = take(a, plan->n_context, sizeof(float));
    }
    if (w & 1u << API_OUT_ATTN_WEIGHTS) {
        if (rq->average && rq->multi_head) o->weights_avg = take(a, plan->n_avg, sizeof(float));
        else o->weights = take(a, plan->n_scores, sizeof(float));
    }
    if (w & 1u << API_OUT_ATTN_SCORES) o->scores = take(a, plan->n_scores, sizeof(float));
    if (w & 1u << API_OUT_MASKED_SCORES) o->masked_scores = take(a, plan->n_scores, sizeof(float));
    if (w & 1u << API_OUT_MASK) o->mask = take(a, plan->n_mask, 1);
    if (w & 1u << API_OUT_DROPOUT_MASK) o->dropout_mask = take(a, plan->n_dropout, sizeof(float));
    if (w & 1u << API_OUT_QUERIES) o->queries = take(a, plan->n_queries, sizeof(float));
    if (w & 1u << API_OUT_KEYS) o->keys = take(a, plan->n_keys, sizeof(float));
    if (w & 1u << API_OUT_VALUES) o->values = take(a, plan->n_values, sizeof(float));
    if (w & 1u << API_OUT_CONTEXT_HEADS)
        o->context_heads = take(a, plan->n_context_heads, sizeof(float));
    if (a->failed)
        return api__fail(e, 503, "out_of_memory", NULL, "cannot allocate the outputs");

    attn_inputs in = {
        .params = plan->n_params ? params : NULL,
        .key_padding_mask = rq->kpm_bool,
        .pool = pool,
    };
    if (sdpa) {
        in.query = rq->query.data;
        in.key = rq->key.data;
        in.value = rq->value.data;
    } else {
        in.x = rq->x.data;
        in.x_key = rq->x_key.data;
        in.x_value = rq->x_value.data;
    }
    if (rq->attn_mask.data) {
        in.attn_mask_batched = rq->attn_mask.rank == 3;
        if (rq->mask_bool) in.attn_mask_bool = rq->mask_bool;
        else in.attn_mask_add = rq->attn_mask.data;
    }
    attn_error ae = {0};
    if (attn_forward(c, plan, &in, rng, o, &ae) != ATTN_OK) {
        api__from_attn(e, &ae, c->module);
        return -1;
    }
    if (res->context_bhld) { /* [B][L][H][Dv] -> [B][H][L][Dv] */
        size_t Dv = (size_t)plan->Dv;
        for (int b = 0; b < plan->B; b++)
            for (int h = 0; h < plan->H; h++)
                for (int i = 0; i < plan->L; i++)
                    memcpy(res->context_bhld + (((size_t)b * plan->H + h) * plan->L + i) * Dv,
                           o->context + (((size_t)b * plan->L + i) * plan->H + h) * Dv,
                           Dv * sizeof(float));
    }
    return 0;
}

/* The parameters: state_dict copied out of the tree, or the module's own
 * construction after torch.manual_seed(seed). *rng_out is the generator
 * dropout continues from (NULL: a fresh process, or dropout_seed). */
static int parameters(const api_request *rq, const attn_plan *plan, float *params, attn_rng *rng,
                      attn_rng **rng_out, api_err *e) {
    *rng_out = NULL;
    if (rq->state_dict) return api__state_dict_read(rq->state_dict, &rq->cfg, plan, params, e);
    if (!rq->has_init) return 0;
    attn_rng_seed(rng, rq->init_seed);
    attn_error ae = {0};
    if (attn_params_init(&rq->cfg, plan, params, rng, &ae) != ATTN_OK) {
        api__from_attn(e, &ae, rq->cfg.module);
        return -1;
    }
    *rng_out = rng;
    return 0;
}

static int fail_reply(api_reply *reply, const api_err *e) {
    api_buf_free(&reply->body);
    reply->status = e->status;
    if (api_error_body(&reply->body, e->status, e->code, e->message, e->field) != 0) {
        api_buf_free(&reply->body);
        reply->status = 503;
    }
    return reply->status;
}

int api_handle(api_endpoint ep, const char *body, size_t len, const api_limits *lim,
               api_reply *reply) {
    double t0 = api__now_ms();
    *reply = (api_reply){0};
    api_err e = {.status = 500, .code = "internal_error"};
    size_t max = lim && lim->max_elements ? lim->max_elements : ATTN_MAX_ELEMENTS;
    api_request rq = {0};
    allocs a = {0};
    float *params = NULL;
    attn_rng *rng_ptr = NULL, *rng = NULL;
    int ok = 0;

    json_error_t je;
    pthread_once(&json_alloc_once, json_alloc_install);
    json_alloc_failed = 0;
    json_t *root = json_loadb(body ? body : "", body ? len : 0, JSON_REJECT_DUPLICATES, &je);
    /* Even a tree that came back is not to be trusted after a failed
     * allocation: jansson 2.14's lexer drops the character it could not
     * append ("SelfAttention_v1" parsed as "SelfAttention_1"). */
    if (json_alloc_failed || (root == NULL && json_error_code(&je) == json_error_out_of_memory)) {
        api__fail(&e, 503, "out_of_memory", NULL, "cannot allocate the parsed request");
        goto done;
    }
    if (root == NULL) {
        /* jansson's text quotes the input near the error: keep it one line */
        char text[API_ECHO_MAX + 4];
        api__fail(&e, 400, "invalid_json", NULL, "malformed JSON at line %d, column %d: %s",
                  je.line, je.column, api__echo(text, sizeof text, je.text));
        goto done;
    }
    if (api__request_parse(ep, root, lim, &rq, &e)) goto done;

    attn_plan plan;
    attn_error ae = {0};
    rq.cfg.outputs = core_outputs(&rq);
    if (attn_plan_make(&rq.cfg, &plan, &ae) != ATTN_OK) {
        api__from_attn(&e, &ae, rq.cfg.module);
        goto done;
    }
    size_t out_values = output_values(&rq, &plan);
    size_t need = plan.total_elements + out_values * API_REPLY_FLOATS_PER_VALUE;
    if (rq.cfg.module == ATTN_SDPA) need += plan.n_context;
    if (need > max) {
        api__fail(&e, 413, "too_large", NULL,
                  "this request needs about %zu values (inputs, parameters, intermediates, "
                  "outputs and reply), over this server's limit of %zu",
                  need, max);
        goto done;
    }
    params = malloc((plan.n_params ? plan.n_params : 1) * sizeof *params);
    rng = malloc(sizeof *rng);
    if (params == NULL || rng == NULL) {
        api__fail(&e, 503, "out_of_memory", NULL, "cannot allocate the parameters");
        goto done;
    }
    if (parameters(&rq, &plan, params, rng, &rng_ptr, &e)) goto done;
    json_decref(root);
    root = NULL;
    double t1 = api__now_ms();
    reply->ms_parse = t1 - t0;

    api_result res = {.rq = &rq, .plan = &plan, .params = params};
    if (compute(&rq, &plan, params, rng_ptr, lim ? lim->compute : NULL, &res, &a, &e)) goto done;
    double t2 = api__now_ms();
    reply->ms_compute = t2 - t1;

    if (api__buf_reserve(&reply->body, out_values * 10 + 512) == 0 &&
        api__respond(&reply->body, &res, reply, t2, &e) == 0)
        ok = 1;
    reply->ms_serialise = api__now_ms() - t2;

done:
    json_decref(root);
    allocs_free(&a);
    free(params);
    free(rng);
    api__request_free(&rq);
    if (!ok) {
        if (e.status == 500 && reply->body.failed)
            api__fail(&e, 503, "out_of_memory", NULL, "cannot allocate the reply");
        return fail_reply(reply, &e);
    }
    reply->status = 200;
    return 200;
}
