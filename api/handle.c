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
#include "api/model/model.h"
#include "api/numbers/numbers.h"

#include <pthread.h>
#include <stdint.h>
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

/* Bytes of reply text per output value, counted in floats (4 bytes) against
 * the element budget: a round-trip float32 takes about 11 characters and a
 * comma. */
#define API_REPLY_FLOATS_PER_VALUE 3

/* The values of every requested output as the reply gives it (after
 * selection and top-k; images counted by their bytes): the reply size
 * estimate. */
static size_t output_values(const api_request *rq, const attn_plan *p) {
    size_t n = 0;
    for (int k = 0; k < API_OUT_COUNT; k++) {
        if (!(rq->returns & 1u << k)) continue;
        n += api__select_count(rq, p, (api_out)k); /* each is below 2^42: no overflow */
    }
    return n;
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
    if (api__select_needs_mask(rq)) bits |= ATTN_OUT_MASK; /* top-k reads core's mask */
    return bits ? bits : ATTN_OUT_CONTEXT; /* the context is computed in any case */
}

/* The output tensors, each allocated only when asked for (and sdpa's
 * transposed context). */
typedef struct {
    void *p[API_OUT_COUNT + 1];
    int n;
    int failed;
} allocs;

static void *take(allocs *a, size_t count, size_t size) {
    void *p = a->n < (int)(sizeof a->p / sizeof a->p[0]) ? malloc(count ? count * size : 1) : NULL;
    if (p == NULL) a->failed = 1;
    else a->p[a->n++] = p;
    api__huge_pages(p, count * size); /* the maps of long sequences */
    return p;
}

static void allocs_free(allocs *a) {
    for (int i = 0; i < a->n; i++) free(a->p[i]);
    a->n = 0;
}

/* ==== replies in parts ==================================================== */

/* A reply's parts and the arrays they point into: the outputs, the
 * parameters and the selected maps, handed over by api_handle. */
typedef struct {
    api_st_parts parts;
    void *arrays[API_OUT_COUNT + 2 + 2 * API_OUT_COUNT];
    int n_arrays;
} parts_owner;

static void keep(parts_owner *o, void *p) {
    if (p) o->arrays[o->n_arrays++] = p;
}

/* Moves everything the parts may point into from the request to o. */
static void hand_over(parts_owner *o, allocs *a, float **params, api_result *res) {
    for (int i = 0; i < a->n; i++) keep(o, a->p[i]);
    a->n = 0;
    keep(o, *params);
    *params = NULL;
    for (int k = 0; k < API_OUT_COUNT; k++)
        if (res->mapped & 1u << k) {
            keep(o, res->maps[k].data);
            keep(o, res->maps[k].indices);
        }
    res->mapped = 0;
}

void api_reply_free(api_reply *reply) {
    api_buf_free(&reply->body);
    parts_owner *o = reply->parts_owner;
    if (o) {
        for (int i = 0; i < o->n_arrays; i++) free(o->arrays[i]);
        free(o);
    }
    reply->parts = NULL;
    reply->n_parts = 0;
    reply->parts_owner = NULL;
}

size_t api_reply_length(const api_reply *reply) {
    size_t n = reply->body.len;
    for (int i = 0; i < reply->n_parts; i++) n += reply->parts[i].len;
    return n;
}

int api_reply_flatten(api_reply *reply) {
    if (reply->n_parts == 0) return 0;
    if (api__buf_reserve(&reply->body, api_reply_length(reply) - reply->body.len + 1)) return -1;
    for (int i = 0; i < reply->n_parts; i++)
        api__buf_put(&reply->body, reply->parts[i].data, reply->parts[i].len);
    api_buf body = reply->body;
    reply->body = (api_buf){0};
    api_reply_free(reply); /* the arrays */
    reply->body = body;
    return 0;
}

/* Allocates every requested output that core writes, in the attn_outputs
 * field its row names. */
static void alloc_outputs(const api_request *rq, const attn_plan *plan, attn_outputs *o, allocs *a) {
    for (int k = 0; k < API_OUT_COUNT; k++) {
        api_out_tensor t;
        api__out_tensor((api_out)k, rq, plan, &t);
        if (!(rq->returns & 1u << k) || t.slot == API_NO_SLOT) continue;
        char *field = (char *)o + t.slot;
        if (api__outputs[k].elem == API_ELEM_U8) *(uint8_t **)field = take(a, t.count, 1);
        else *(float **)field = take(a, t.count, sizeof(float));
    }
}

/* sdpa: core's context [B][L][H][Dv] copied into bhld as PyTorch's
 * [B][H][L][Dv], which then takes its place in o->context. */
static void context_to_bhld(const attn_plan *plan, attn_outputs *o, float *bhld) {
    size_t Dv = (size_t)plan->Dv;
    for (int b = 0; b < plan->B; b++)
        for (int h = 0; h < plan->H; h++)
            for (int i = 0; i < plan->L; i++)
                memcpy(bhld + (((size_t)b * plan->H + h) * plan->L + i) * Dv,
                       o->context + (((size_t)b * plan->L + i) * plan->H + h) * Dv,
                       Dv * sizeof(float));
    o->context = bhld;
}

static int compute(const api_request *rq, const attn_plan *plan, const float *params,
                   attn_rng *rng, attn_pool *pool, attn_outputs *o, allocs *a, api_err *e) {
    const attn_config *c = &rq->cfg;
    int sdpa = attn_module_has(c->module, ATTN_MOD_QKV_INPUTS);
    alloc_outputs(rq, plan, o, a);
    /* top-k skips masked entries: core's mask, even when not returned */
    if (api__select_needs_mask(rq) && !o->mask) o->mask = take(a, plan->n_mask, 1);
    float *bhld = sdpa && o->context ? take(a, plan->n_context, sizeof(float)) : NULL;
    if (a->failed) return api__fail(e, API_E_OUT_OF_MEMORY, NULL, "cannot allocate the outputs");

    attn_inputs in = {
        .params = plan->n_params ? params : NULL,
        /* drawn by attn_params_init from finite bounds: nothing to check */
        .params_checked = rq->has_init && !rq->state_dict,
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
    if (bhld) context_to_bhld(plan, o, bhld);
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
    reply->status = api_error_get(e->code)->status;
    if (api_error_reply(&reply->body, e->code, e->message, e->field) != 0) {
        api_buf_free(&reply->body);
        reply->status = api_error_get(API_E_OUT_OF_MEMORY)->status;
    }
    return reply->status;
}

int api_handle(api_endpoint ep, const char *body, size_t len, const api_limits *lim,
               api_reply *reply) {
    double t0 = api__now_ms();
    *reply = (api_reply){.content_type = "application/json"};
    api_err e = {.code = API_E_INTERNAL_ERROR};
    size_t max = lim && lim->max_elements ? lim->max_elements : ATTN_MAX_ELEMENTS;
    api_request rq = {0};
    allocs a = {0};
    float *params = NULL;
    attn_rng *rng_ptr = NULL, *rng = NULL;
    int ok = 0, deferred = 0;
    api_format format = API_FORMAT_NESTED;
    api_result res = {0};
    parts_owner *owner = NULL;

    json_error_t je;
    json_t *root = NULL;
    pthread_once(&json_alloc_once, json_alloc_install);
    json_alloc_failed = 0;
    /* Tensor arrays first (numscan.c), jansson reads the rest. */
    api_scan scan;
    if (api__scan_body(body ? body : "", body ? len : 0, max, lim ? lim->compute : NULL, &scan)) {
        api__fail(&e, API_E_OUT_OF_MEMORY, NULL, "cannot allocate the request's tensors");
        goto done;
    }
    api__scan_set_current(&scan);
    if (scan.text)
        root = json_loadb(scan.text, scan.len, JSON_REJECT_DUPLICATES, &je);
    if (root == NULL) /* no tensor taken out, or a syntax error: its position in the body */
        root = json_loadb(body ? body : "", body ? len : 0, JSON_REJECT_DUPLICATES, &je);
    /* Even a tree that came back is not to be trusted after a failed
     * allocation: jansson 2.14's lexer drops the character it could not
     * append ("SelfAttention_v1" parsed as "SelfAttention_1"). */
    if (json_alloc_failed || (root == NULL && json_error_code(&je) == json_error_out_of_memory)) {
        api__fail(&e, API_E_OUT_OF_MEMORY, NULL, "cannot allocate the parsed request");
        goto done;
    }
    if (root == NULL) {
        /* jansson's text quotes the input near the error: keep it one line */
        char text[API_ECHO_MAX + 4];
        api__fail(&e, API_E_INVALID_JSON, NULL, "malformed JSON at line %d, column %d: %s",
                  je.line, je.column, api__echo(text, sizeof text, je.text));
        goto done;
    }
    if (ep == API_EP_MODEL_GPT2) { /* a whole model, not a module: api/model.c */
        int rc = api__model_gpt2(&root, lim, reply, t0, &e);
        ok = rc == 0;
        deferred = rc == 1;
        goto done;
    }
    if (api__request_parse(ep, root, lim, &rq, &e)) goto done;
    rq.fmt.pool = lim ? lim->compute : NULL; /* large tensors' text on several threads */

    attn_plan plan;
    attn_error ae = {0};
    rq.cfg.outputs = core_outputs(&rq);
    if (attn_plan_make(&rq.cfg, &plan, &ae) != ATTN_OK) {
        api__from_attn(&e, &ae, rq.cfg.module);
        goto done;
    }
    if (api__select_check(&rq, &plan, &e)) goto done;
    size_t out_values = output_values(&rq, &plan);
    size_t need = plan.total_elements + out_values * API_REPLY_FLOATS_PER_VALUE;
    if (api__select_active(&rq)) need += out_values; /* the selected copies */
    if (attn_module_has(rq.cfg.module, ATTN_MOD_QKV_INPUTS)) need += plan.n_context;
    if (need > max) {
        api__fail(&e, API_E_TOO_LARGE, NULL,
                  "this request needs about %zu values (inputs, parameters, intermediates, "
                  "outputs and reply), over this server's limit of %zu",
                  need, max);
        goto done;
    }
    if (lim && lim->defer_above && need > lim->defer_above) {
        deferred = 1; /* too big for the caller's thread: status 0, no body */
        goto done;
    }
    if (lim && lim->reserve) {
        char msg[256] = "no memory for this request now; retry later";
        size_t bytes = need > SIZE_MAX / sizeof(float) ? SIZE_MAX : need * sizeof(float);
        if (lim->reserve(lim->reserve_ctx, bytes, msg, sizeof msg) != 0) {
            msg[sizeof msg - 1] = '\0';
            api__fail(&e, API_E_OVERLOADED, NULL, "%s", msg);
            goto done;
        }
    }
    params = malloc((plan.n_params ? plan.n_params : 1) * sizeof *params);
    api__huge_pages(params, plan.n_params * sizeof *params);
    rng = malloc(sizeof *rng);
    if (params == NULL || rng == NULL) {
        api__fail(&e, API_E_OUT_OF_MEMORY, NULL, "cannot allocate the parameters");
        goto done;
    }
    if (parameters(&rq, &plan, params, rng, &rng_ptr, &e)) goto done;
    json_decref(root);
    root = NULL;
    double t1 = api__now_ms();
    reply->ms_parse = t1 - t0;

    res = (api_result){.rq = &rq, .plan = &plan, .params = params};
    if (compute(&rq, &plan, params, rng_ptr, lim ? lim->compute : NULL, &res.out, &a, &e) ||
        api__select_apply(&res, res.out.mask, &e))
        goto done;
    double t2 = api__now_ms();
    reply->ms_compute = t2 - t1;

    /* JSON text: about 10 bytes a value; base64 5.4 (float32); a PNG is a
     * small fraction of its pixels and grows as written; safetensors sizes
     * its own buffer exactly */
    api_format f = rq.fmt.format;
    size_t reserve = f == API_FORMAT_PNG || f == API_FORMAT_SAFETENSORS ? 4096
                     : f == API_FORMAT_BASE64                           ? out_values * 6 + 4096
                                                                        : out_values * 10 + 512;
    /* A large JSON reply goes out while it is written, once nothing in it
     * can make it an error but a failed allocation. */
    if (lim && lim->stream && lim->stream_above &&
        (f == API_FORMAT_NESTED || f == API_FORMAT_FLAT || f == API_FORMAT_BASE64) &&
        reserve >= lim->stream_above && !api__reply_has_nonfinite(&res)) {
        size_t piece = lim->stream_piece ? lim->stream_piece : lim->stream_above;
        reply->body.drain = lim->stream;
        reply->body.drain_ctx = lim->stream_ctx;
        reply->body.drain_at = piece;
        reserve = piece + piece / 4;
    }
    /* float32 safetensors: the tensors stay where they are */
    if (lim && lim->zero_copy && f == API_FORMAT_SAFETENSORS && !rq.fmt.half &&
        (owner = calloc(1, sizeof *owner)) == NULL) {
        api__fail(&e, API_E_OUT_OF_MEMORY, NULL, "cannot allocate the reply");
        goto done;
    }
    if (api__buf_reserve(&reply->body, reserve) == 0 &&
        api__respond(&reply->body, &res, reply, t2, owner ? &owner->parts : NULL, &e) == 0)
        ok = 1;
    if (ok && owner && owner->parts.n > 0) {
        hand_over(owner, &a, &params, &res);
        reply->parts = owner->parts.part;
        reply->n_parts = owner->parts.n;
        reply->parts_owner = owner;
        owner = NULL;
    }
    reply->body.drain = NULL; /* what is left is the caller's */
    format = rq.fmt.format;
    reply->ms_serialise = api__now_ms() - t2;

done:
    json_decref(root);
    api__scan_set_current(NULL);
    api__scan_free(&scan);
    free(owner);
    api__select_release(&res);
    allocs_free(&a);
    free(params);
    free(rng);
    api__request_free(&rq);
    if (deferred) return 0;
    if (!ok) {
        if (e.code == API_E_INTERNAL_ERROR && reply->body.failed)
            api__fail(&e, API_E_OUT_OF_MEMORY, NULL, "cannot allocate the reply");
        return fail_reply(reply, &e);
    }
    reply->status = 200;
    static const char *const types[] = {
        [API_FORMAT_SAFETENSORS] = "application/octet-stream",
        [API_FORMAT_PNG] = "image/png",
        [API_FORMAT_SVG] = "image/svg+xml",
    };
    if (types[format]) reply->content_type = types[format];
    return 200;
}
