/* act.c - the MLP's activations (GELU's two forms and SiLU are vexp.c's
 * vectorised rows) and a gated MLP's product. */
#include "core/layers/layers.h"
#include "core/vexp.h"

void attn__act_row(float *x, int n, attn_act act) {
    switch (act) {
    case ATTN_ACT_GELU_ERF: attn__gelu_row(x, n, 0); break;
    case ATTN_ACT_GELU_TANH: attn__gelu_row(x, n, 1); break;
    case ATTN_ACT_SILU: attn__silu_row(x, n); break;
    case ATTN_ACT_RELU:
        for (int j = 0; j < n; j++) x[j] = x[j] > 0.0f ? x[j] : 0.0f;
        break;
    default: break;
    }
}

/* LlamaMLP, Gemma3MLP: down_proj(act_fn(gate_proj(x)) * up_proj(x)). */
void attn__gated_row(float *gate, const float *up, int n, attn_act act) {
    attn__act_row(gate, n, act);
    for (int j = 0; j < n; j++) gate[j] *= up[j];
}
