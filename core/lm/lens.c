/* lens.c - the logit lens: the model's final norm and head on any rows of
 * the residual stream (nostalgebraist's lens, TransformerLens's
 * accumulated_resid with apply_ln followed by the unembedding); an
 * encoder's through its MLM head (head.c). */
#include "core/layers/layers.h"
#include "core/lm/lm.h"
#include "core/parallel.h"

#include <stdlib.h>

int attn_lm_logit_lens(const attn_lm_plan *p, const void *params, const float *resid, int rows,
                       attn_pool *pool, float *logits, attn_error *err) {
    if (p == NULL || params == NULL || resid == NULL || logits == NULL)
        return attn__fail(err, ATTN_ERR_ARG, "", "plan, params, resid and logits are required");
    if (!p->head)
        return attn__fail(err, ATTN_ERR_ARG, "logit_lens", "the logit lens reads the model's head: "
                          "this %s has none (its checkpoint has no MLM head)",
                          attn_arch_name(p->cfg.arch));
    size_t n;
    if (rows < 1 || !attn__mul((size_t)rows, (size_t)p->C, &n) || n > ATTN_MAX_ELEMENTS / 2)
        return attn__fail(err, ATTN_ERR_ARG, "rows", "rows must be >= 1 and the residual within "
                          "%zu elements, got %d rows", (size_t)ATTN_MAX_ELEMENTS, rows);
    if (!attn__all_finite(resid, n))
        return attn__fail(err, ATTN_ERR_NONFINITE, "resid", "resid holds NaN or infinity");
    /* the normalised rows, the MLM transform's, then each thread's widened block of a
     * half-size head */
    size_t tile = attn__lm_tile_floats(p), all = 2 * n + tile * (size_t)attn_pool_width(pool);
    float *h = malloc(all * sizeof *h);
    if (h == NULL)
        return attn__fail(err, ATTN_ERR_NOMEM, "", "cannot allocate %zu bytes", all * sizeof *h);
    attn__weights mw;
    attn__model_weights(p, params, &mw);
    const float *x = resid;
    if (mw.w[ATTN__FINAL_NORM_W]) {
        attn__norm(p->spec.norm, h, resid, mw.w[ATTN__FINAL_NORM_W], mw.w[ATTN__FINAL_NORM_B],
                   (size_t)rows, p->C, p->spec.norm_eps);
        x = h;
    }
    int bad = 0;
    attn__head_rows(pool, p, &mw, x, 0, rows, h + n, h + 2 * n, logits, &bad);
    free(h);
    int rc = attn__cancel_check(err); /* rows skipped: the caller's check said stop */
    if (rc) return rc;
    if (bad)
        return attn__fail(err, ATTN_ERR_NONFINITE, "params",
                          "the result overflowed float32: parameters are too large");
    return ATTN_OK;
}
