/* model_layers.c - the family's LayerNorm, shared by the forward pass, the
 * hook points, the decode step and the lens (the lowest of the model's
 * files: it calls only layers.c). */
#include "layers.h"
#include "model.h"

void attn__model_layernorm(const attn_gpt2_plan *p, float *y, const float *x, const float *w,
                           const float *b, size_t rows) {
    if (p->family == ATTN_FAMILY_GPTMODEL)
        attn__layernorm_div(y, x, w, b, rows, p->C);
    else
        attn__layernorm(y, x, w, b, rows, p->C);
}
