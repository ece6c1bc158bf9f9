/* ops.c - the products and norms of a run, in its mode: a dense run's
 * products by blocks of rows (linear.c), a step's few-row products by
 * blocks of weight rows read once (gemv.c); every norm the model's kind.
 * The lowest file of core/lm/: it calls only core's kernels and layers. */
#include "core/gemv.h"
#include "core/layers/layers.h"
#include "core/linear.h"
#include "core/lm/lm.h"

void attn__product(const attn__run *r, float *y, int ldy, const float *x, int in, int out,
                   const float *w, const float *b, int act) {
    if (r->step) {
        attn__gemv_args g = {.y = y, .ldy = ldy, .x = x, .rows = r->rows, .in = in, .out = out,
                             .w = w, .bias = b, .act = act};
        attn__gemv_run(r->pool, &g);
        return;
    }
    attn__linear_args a = {.y = y, .ldy = ldy, .x = x, .rows = r->rows, .in = in, .out = out,
                           .w = w, .bias = b, .act = act};
    attn__linear_run(r->pool, &a);
}

void attn__run_norm(const attn__run *r, float *y, const float *x, const float *w, const float *b,
                    size_t rows) {
    attn__norm(r->p->spec.norm, y, x, w, b, rows, r->p->C, r->p->spec.norm_eps);
}

