/* many.c - many runs of one plan over the pool, one run per item (a
 * patching sweep, importance's ablations: every head or position of every
 * block, each a small run from that block on). Each item runs the forward
 * (attn_lm_run's, importance aside) on one thread with its own work space:
 * no product is split, so threads never wait on each other within a run,
 * and the items' order cannot change a result. */
#include "core/lm/lm.h"

typedef struct {
    const attn_lm_plan *plan;
    const void *params;
    const attn_lm_inputs *in;
    attn_lm_outputs *out;
    int *status;
    attn_error *errs;
} many_job;

static void run_item(void *ctx, long i, int slot) {
    (void)slot;
    const many_job *j = ctx;
    attn_lm_inputs in = j->in[i];
    in.pool = NULL;
    attn_error local;
    attn__run r = {.p = j->plan, .params = j->params, .out = &j->out[i], .in = &in};
    j->status[i] = j->params ? attn__run_call(&r, j->errs ? &j->errs[i] : &local)
                             : attn__fail(j->errs ? &j->errs[i] : &local, ATTN_ERR_ARG, "",
                                          "params are required");
}

int attn_lm_run_many(const attn_lm_plan *plan, const void *params,
                       const attn_lm_inputs *in, attn_lm_outputs *out, int n,
                       attn_pool *pool, int *status, attn_error *errs) {
    if (plan == NULL || in == NULL || out == NULL || status == NULL || n < 0)
        return attn__fail(errs, ATTN_ERR_ARG, "", "plan, inputs, outputs and status are required");
    if (plan->training)
        return attn__fail(errs, ATTN_ERR_ARG, "training", "runs shared over the pool are "
                          "eval-only (dropout draws from one generator in order)");
    many_job j = {plan, params, in, out, status, errs};
    attn_pool_run(pool, n, run_item, &j);
    for (int i = 0; i < n; i++)
        if (status[i] != ATTN_OK) return status[i];
    return ATTN_OK;
}
