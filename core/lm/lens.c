/* lens.c - the logit lens: the model's final norm and head on any rows of
 * the residual stream (nostalgebraist's lens, TransformerLens's
 * accumulated_resid with apply_ln followed by the unembedding). */
#include "core/layers/layers.h"
#include "core/linear.h"
#include "core/lm/lm.h"
#include "core/parallel.h"

#include <stdlib.h>

int attn_lm_logit_lens(const attn_lm_plan *p, const void *params, const float *resid, int rows,
                       attn_pool *pool, float *logits, attn_error *err) {
    if (p == NULL || params == NULL || resid == NULL || logits == NULL)
        return attn__fail(err, ATTN_ERR_ARG, "", "plan, params, resid and logits are required");
    size_t n;
    if (rows < 1 || !attn__mul((size_t)rows, (size_t)p->C, &n))
        return attn__fail(err, ATTN_ERR_ARG, "rows", "rows must be >= 1 and the residual within "
                          "%zu elements, got %d rows", (size_t)ATTN_MAX_ELEMENTS, rows);
    if (!attn__all_finite(resid, n))
        return attn__fail(err, ATTN_ERR_NONFINITE, "resid", "resid holds NaN or infinity");
    /* the normalised rows, then each thread's widened block of a half-size head */
    size_t tile = attn__lm_tile_floats(p), all = n + tile * (size_t)attn_pool_width(pool);
    float *h = malloc(all * sizeof *h);
    if (h == NULL)
        return attn__fail(err, ATTN_ERR_NOMEM, "", "cannot allocate %zu bytes", all * sizeof *h);
    attn__weights mw;
    attn__model_weights(p, params, &mw);
    attn__norm(p->spec.norm, h, resid, mw.w[ATTN__FINAL_NORM_W], mw.w[ATTN__FINAL_NORM_B],
               (size_t)rows, p->C, p->spec.norm_eps);
    int bad = 0;
    attn__linear_args head = {.y = logits, .x = h, .rows = rows, .in = p->C, .out = p->V,
                              .w = mw.w[ATTN__HEAD_W], .act = ATTN__NO_ACT, .nonfinite = &bad};
    attn__product_dense(p, h + n, pool, &head);
    free(h);
    int rc = attn__cancel_check(err); /* rows skipped: the caller's check said stop */
    if (rc) return rc;
    if (bad)
        return attn__fail(err, ATTN_ERR_NONFINITE, "params",
                          "the result overflowed float32: parameters are too large");
    return ATTN_OK;
}
