/* run.c - the public runs over the forward (forward.c): attn_lm_run (with
 * importance's ablated runs after it, importance.c) and attn_lm_forward. */
#include "core/lm/lm.h"

int attn_lm_run(const attn_lm_plan *p, const void *params, const attn_lm_inputs *in,
                attn_rng *rng, attn_lm_outputs *out, attn_error *err) {
    if (p == NULL || params == NULL || in == NULL || out == NULL)
        return attn__fail(err, ATTN_ERR_ARG, "", "plan, params, inputs and outputs are required");
    attn__run r = {.p = p, .params = params, .pool = in->pool, .rng = rng, .out = out, .in = in,
                   .whole = 1};
    if (out->analysis[ATTN_ANALYSIS_IMPORTANCE]) return attn__importance(&r, err);
    return attn__run_call(&r, err);
}

int attn_lm_forward(const attn_lm_plan *p, const void *params, const int32_t *idx,
                    attn_pool *pool, attn_rng *rng, attn_lm_outputs *out, attn_error *err) {
    if (idx == NULL) return attn__fail(err, ATTN_ERR_ARG, "idx", "idx is required");
    attn_lm_inputs in = {.idx = idx, .pool = pool};
    return attn_lm_run(p, params, &in, rng, out, err);
}
