/* common.c - what most rows take straight from their config (the spec's
 * rotary positions, window, activation, epsilon, biases and tied head),
 * shared by the rows' describe() functions, and the activation names the
 * rows' hidden_act accepts; it calls nothing of theirs. */
#include "core/arch/arch.h"

#include <string.h>

const char *const attn__acts_silu[] = {"silu", "swish", "gelu", "gelu_new", "gelu_pytorch_tanh", "relu", NULL};
const char *const attn__acts_gelu[] = {"gelu", "gelu_new", "gelu_pytorch_tanh", "relu", "silu", NULL};

int attn__spec_common(const attn_lm_config *c, attn_lm_spec *s, attn_error *err) {
    double pct = c->rotary_pct > 0.0 ? c->rotary_pct : 1.0;
    int dims = (int)(c->head_dim * pct);
    if (dims % 2 || !(c->rope_theta > 0.0) || pct > 1.0)
        return attn__fail(err, ATTN_ERR_ARG, dims % 2 ? "rotary_pct" : "rope_theta",
                          "rotary positions need an even number of dims (got %d) and a base > 0 "
                          "(got %g)", dims, c->rope_theta);
    if (c->rope_type == ATTN_ROPE_LLAMA3 &&
        !(c->rope_factor > 0.0 && c->rope_original_context > 0.0 &&
          c->rope_high_freq_factor > c->rope_low_freq_factor && c->rope_low_freq_factor > 0.0))
        return attn__fail(err, ATTN_ERR_ARG, "rope_scaling", "llama3 rope_scaling needs factor, "
                          "low_freq_factor < high_freq_factor and original_max_position_embeddings");
    if (c->rope_type == ATTN_ROPE_LINEAR && !(c->rope_factor > 0.0))
        return attn__fail(err, ATTN_ERR_ARG, "rope_scaling", "linear rope_scaling needs a factor > 0");
    if (c->window < 0 || c->global_every < 0)
        return attn__fail(err, ATTN_ERR_ARG, "sliding_window", "sliding_window and its pattern must be >= 0");
    s->rope = (attn_lm_rope){.dims = dims, .theta = c->rope_theta, .local_theta = c->rope_local_theta,
                             .type = (attn_rope_type)c->rope_type, .factor = c->rope_factor,
                             .low_freq_factor = c->rope_low_freq_factor,
                             .high_freq_factor = c->rope_high_freq_factor,
                             .original_context = c->rope_original_context};
    s->norm_eps = c->norm_eps;
    s->act = c->act;
    s->window = c->window;
    s->global_every = c->global_every;
    s->window_from = c->window_from;
    if (c->layer_list && c->n_layer > ATTN_LM_LIST_LAYERS)
        return attn__fail(err, ATTN_ERR_ARG, "layer_types", "a list of layer types names at most "
                          "%d layers", ATTN_LM_LIST_LAYERS);
    s->layer_list = c->layer_list;
    memcpy(s->local_layers, c->local_layers, sizeof s->local_layers);
    s->qkv_bias = s->o_bias = c->attn_bias;
    s->mlp_bias = c->mlp_bias;
    s->tied = c->tied;
    return ATTN_OK;
}
