/* plan.c - the sizes of a generation before anything is allocated: its
 * window, its cache, its records and its work. */
#include "api/generate/generate.h"

#include <stdint.h>

/* Multiply-adds of a forward pass over T positions of B rows whose keys
 * reach back S positions (the cache), with the head over the last position
 * only: core's costs (attn_lm_block_ops, attn_lm_head_ops). */
static double forward_ops(const attn_lm_plan *m, double B, double T, double S) {
    return attn_lm_block_ops(m, B * T, S) * m->n_layer + attn_lm_head_ops(m, B);
}

/* The work of the whole loop: the prompt, one decode per step, and a whole
 * window for each step past it (the book's recomputation). */
static double loop_ops(const attn_lm_plan *m, const api_gen_plan *p) {
    double ops = forward_ops(m, p->B, p->T0 < p->ctx ? p->T0 : p->ctx, p->T0 < p->ctx ? p->T0 : p->ctx);
    long hi = (long)p->T0 + p->N - 1, lo = p->T0 > p->ctx + 1L ? p->T0 : p->ctx + 1L;
    long crops = hi >= lo ? hi - lo + 1 : 0, cached = p->N - crops;
    ops += cached * forward_ops(m, p->B, 1, p->cap);
    ops += crops * forward_ops(m, p->B, p->ctx, p->ctx);
    return ops;
}

/* The loop's own floats: the text, the records, one step's logits and
 * rows, the sampler's scratch, the prompt's logits with prompt_logprobs,
 * and a prefill's work space (the rows of its residual, norms, q/k/v, heads
 * and MLP, and the attention's tiles: 64 keys a row and head). */
static int count_floats(const attn_lm_plan *m, api_gen_plan *p, int prompt_lp, size_t *n) {
    size_t B = (size_t)p->B, N = (size_t)p->N, T = (size_t)p->T0, V = (size_t)p->V;
    size_t top = (size_t)p->n_top, per_token = 6 + 2 * top + (size_t)p->rows_len;
    size_t step = B * V + (size_t)m->n_layer * B * (size_t)m->H * (size_t)p->cap + 5 * V;
    size_t prompt = prompt_lp ? B * T * (V + 1 + 2 * top) : 0;
    /* every factor below 2^31; the products are checked against SIZE_MAX / 8 */
    size_t P = (size_t)(p->T0 < p->ctx ? p->T0 : p->ctx);
    double row = 4.0 * m->C + m->QD + 2.0 * m->KVD + m->QD + (m->spec.gated ? 2.0 : 1.0) * m->F;
    double work = (double)B * P * (row + 64.0 * m->H);
    double total = (double)B * (T + N) + (double)B * N * per_token + (double)step + (double)prompt + work;
    if (total > (double)(SIZE_MAX / 8)) return -1;
    *n = (size_t)total + p->cache_bytes / sizeof(float);
    return 0;
}

static int window(const attn_lm_config *cfg, int T0, const api_gen_opts *o, api_gen_plan *p,
                  api_err *e) {
    p->ctx = o->context_size ? o->context_size : cfg->context;
    if (p->ctx > cfg->context)
        return api__fail(e, API_E_INVALID_ARGUMENT, "generate.context_size",
                         "generate.context_size %d is over the model's block_size %d", p->ctx,
                         cfg->context);
    if (o->eos_id >= cfg->vocab_size)
        return api__fail(e, API_E_INVALID_ARGUMENT, "generate.eos_token_id",
                         "generate.eos_token_id %d is not below vocab_size %d", o->eos_id,
                         cfg->vocab_size);
    if (o->prompt_logprobs && T0 > p->ctx)
        return api__fail(e, API_E_INVALID_SHAPE, "prompt",
                         "the prompt's log-probabilities need the prompt within the window: "
                         "%d tokens, window %d", T0, p->ctx);
    long cap = (long)T0 + o->max_new_tokens - 1;
    p->cap = cap < 1 ? 1 : cap > p->ctx ? p->ctx : (int)cap;
    return 0;
}

int api__gen_plan(const attn_lm_config *cfg, int B, int T0, const api_gen_opts *o, int Ls,
                  int Hs, api_gen_plan *p, api_err *e) {
    *p = (api_gen_plan){.B = B, .T0 = T0, .N = o->max_new_tokens, .V = cfg->vocab_size,
                        .n_top = o->logprobs};
    if (B < 1 || T0 < 1)
        return api__fail(e, API_E_INVALID_SHAPE, "idx", "a generation needs a prompt of one token "
                         "at least");
    if (window(cfg, T0, o, p, e)) return -1;
    if (o->attention && (double)Ls * Hs * p->ctx > INT32_MAX / 2)
        return api__fail(e, API_E_TOO_LARGE, "generate.attention",
                         "%d layers x %d heads x %d positions of attention rows a token", Ls, Hs,
                         p->ctx);
    if (o->attention) {
        p->Ls = Ls;
        p->Hs = Hs;
        p->rows_len = Ls * Hs * p->ctx;
    }
    attn_error ae = {0};
    attn_lm_plan m;
    if (attn_lm_cache_bytes(cfg, B, p->cap, &p->cache_bytes, &ae) != ATTN_OK ||
        attn_lm_plan_make(cfg, 1, 1, 0, &m, &ae) != ATTN_OK) {
        api__from_attn(e, &ae, ATTN_MODULE_COUNT);
        return -1;
    }
    if (count_floats(&m, p, o->prompt_logprobs, &p->floats))
        return api__fail(e, API_E_TOO_LARGE, "generate.max_new_tokens",
                         "this generation's records do not fit in memory");
    p->ops = loop_ops(&m, p);
    return 0;
}
