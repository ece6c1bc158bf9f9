/* gemma3.c - Gemma3ForCausalLM (transformers' modeling_gemma3.py, model_type
 * gemma3_text): gemma-3-270m and the text models of Gemma 3.
 *
 *   x = embed_tokens[idx] * sqrt(hidden_size)        Gemma3TextScaledWordEmbedding
 *   per block model.layers.<l>:
 *     x = x + post_attention_layernorm(o_proj(attn(input_layernorm(x))))
 *     x = x + post_feedforward_layernorm(mlp(pre_feedforward_layernorm(x)))
 *   logits = lm_head(norm(x)), lm_head tied to embed_tokens
 *
 * Gemma3RMSNorm (x * rsqrt(mean(x^2) + eps) * (1 + w)) everywhere, q_norm
 * and k_norm on each head before the rotation, scores scaled by
 * query_pre_attn_scalar^-1/2, a gelu_pytorch_tanh gated MLP; local layers
 * (sliding_attention) see sliding_window keys with rotary base
 * rope_local_base_freq, global ones (every sliding_window_pattern-th, or as
 * layer_types says) see all with rope_theta and rope_scaling. */
#include "core/arch/arch.h"

#include <math.h>

static const char *const acts[] = {"gelu_pytorch_tanh", "gelu_new", "gelu", "silu", "relu", NULL};

/* Gemma3TextConfig's names and defaults. */
static const attn_arch_hparam hparams[] = {
    {ATTN_HP_VOCAB, "vocab_size", 262208, "vocab_size", 262208, 1, NULL},
    {ATTN_HP_CONTEXT, "max_position_embeddings", 131072, "max_position_embeddings", 131072, 1, NULL},
    {ATTN_HP_LAYERS, "num_hidden_layers", 26, "num_hidden_layers", 26, 0, NULL},
    {ATTN_HP_HEADS, "num_attention_heads", 8, "num_attention_heads", 8, 1, NULL},
    {ATTN_HP_KV_HEADS, "num_key_value_heads", 4, "num_key_value_heads", 4, 0, NULL},
    {ATTN_HP_WIDTH, "hidden_size", 2304, "hidden_size", 2304, 1, NULL},
    {ATTN_HP_HEAD_DIM, "head_dim", 256, "head_dim", 256, 1, NULL},
    {ATTN_HP_FFN, "intermediate_size", 9216, "intermediate_size", 9216, 1, NULL},
    {ATTN_HP_ACTIVATION, "hidden_activation", ATTN_ACT_GELU_TANH, "hidden_activation",
     ATTN_ACT_GELU_TANH, 0, acts},
    {ATTN_HP_NORM_EPS, "rms_norm_eps", 1e-6, "rms_norm_eps", 1e-6, 0, NULL},
    {ATTN_HP_TIED, "tie_word_embeddings", 1, "tie_word_embeddings", 1, 0, NULL},
    {ATTN_HP_ATTN_BIAS, "attention_bias", 0, "attention_bias", 0, 0, NULL},
    {ATTN_HP_ROPE_THETA, "rope_theta", 1e6, "rope_theta", 1e6, 0, NULL},
    {ATTN_HP_ROPE_SCALING, "rope_scaling", ATTN_ROPE_DEFAULT, "rope_scaling", ATTN_ROPE_DEFAULT, 0, NULL},
    {ATTN_HP_ROPE_LOCAL_THETA, "rope_local_base_freq", 10000, "rope_local_base_freq", 10000, 0, NULL},
    {ATTN_HP_SLIDING_WINDOW, "sliding_window", 4096, "sliding_window", 4096, 0, NULL},
    {ATTN_HP_GLOBAL_EVERY, "sliding_window_pattern", 6, "sliding_window_pattern", 6, 0, NULL},
    {ATTN_HP_LAYER_TYPES, "layer_types", NAN, "layer_types", NAN, 0, NULL},
    {ATTN_HP_QUERY_SCALAR, "query_pre_attn_scalar", 256, "query_pre_attn_scalar", 256, 0, NULL},
    {ATTN_HP_DROPOUT, "attention_dropout", 0, "attention_dropout", 0, 0, NULL},
};

static int describe(const attn_lm_config *c, attn_lm_spec *s, attn_error *err) {
    int rc = attn__spec_common(c, s, err);
    if (rc) return rc;
    if (!(c->query_scalar > 0.0))
        return attn__fail(err, ATTN_ERR_ARG, "query_pre_attn_scalar",
                          "query_pre_attn_scalar must be > 0, got %g", c->query_scalar);
    s->norm = ATTN_LM_RMSNORM_1P;
    s->emb_scale = (float)sqrt((double)c->width);
    s->attn_scale = (float)pow(c->query_scalar, -0.5);
    s->gated = 1;
    s->qk_norm = 1;
    s->weight_dropout = 1;
    s->mlp_bias = 0;
    return ATTN_OK;
}

#define C ATTN__DIM_C
static const attn__tensor top[] = {
    {ATTN__TOK_EMB, "model.embed_tokens.weight", 2, {ATTN__DIM_V, C}, ATTN__INIT_NORMAL, 0, ATTN__ALWAYS},
};

static const attn__tensor block[] = {
    {ATTN__Q_W, "self_attn.q_proj.weight", 2, {ATTN__DIM_QD, C}, ATTN__INIT_KAIMING, 0, ATTN__ALWAYS},
    {ATTN__Q_B, "self_attn.q_proj.bias", 1, {ATTN__DIM_QD}, ATTN__INIT_BIAS, C, ATTN__IF_QKV_BIAS},
    {ATTN__K_W, "self_attn.k_proj.weight", 2, {ATTN__DIM_KVD, C}, ATTN__INIT_KAIMING, 0, ATTN__ALWAYS},
    {ATTN__K_B, "self_attn.k_proj.bias", 1, {ATTN__DIM_KVD}, ATTN__INIT_BIAS, C, ATTN__IF_QKV_BIAS},
    {ATTN__V_W, "self_attn.v_proj.weight", 2, {ATTN__DIM_KVD, C}, ATTN__INIT_KAIMING, 0, ATTN__ALWAYS},
    {ATTN__V_B, "self_attn.v_proj.bias", 1, {ATTN__DIM_KVD}, ATTN__INIT_BIAS, C, ATTN__IF_QKV_BIAS},
    {ATTN__O_W, "self_attn.o_proj.weight", 2, {C, ATTN__DIM_QD}, ATTN__INIT_KAIMING, 0, ATTN__ALWAYS},
    {ATTN__O_B, "self_attn.o_proj.bias", 1, {C}, ATTN__INIT_BIAS, ATTN__DIM_QD, ATTN__IF_O_BIAS},
    {ATTN__Q_NORM, "self_attn.q_norm.weight", 1, {ATTN__DIM_D}, ATTN__INIT_ZEROS, 0, ATTN__ALWAYS},
    {ATTN__K_NORM, "self_attn.k_norm.weight", 1, {ATTN__DIM_D}, ATTN__INIT_ZEROS, 0, ATTN__ALWAYS},
    {ATTN__GATE_W, "mlp.gate_proj.weight", 2, {ATTN__DIM_F, C}, ATTN__INIT_KAIMING, 0, ATTN__ALWAYS},
    {ATTN__UP_W, "mlp.up_proj.weight", 2, {ATTN__DIM_F, C}, ATTN__INIT_KAIMING, 0, ATTN__ALWAYS},
    {ATTN__DOWN_W, "mlp.down_proj.weight", 2, {C, ATTN__DIM_F}, ATTN__INIT_KAIMING, 0, ATTN__ALWAYS},
    {ATTN__NORM1_W, "input_layernorm.weight", 1, {C}, ATTN__INIT_ZEROS, 0, ATTN__ALWAYS},
    {ATTN__POST1_W, "post_attention_layernorm.weight", 1, {C}, ATTN__INIT_ZEROS, 0, ATTN__ALWAYS},
    {ATTN__NORM2_W, "pre_feedforward_layernorm.weight", 1, {C}, ATTN__INIT_ZEROS, 0, ATTN__ALWAYS},
    {ATTN__POST2_W, "post_feedforward_layernorm.weight", 1, {C}, ATTN__INIT_ZEROS, 0, ATTN__ALWAYS},
};

static const attn__tensor tail[] = {
    {ATTN__FINAL_NORM_W, "model.norm.weight", 1, {C}, ATTN__INIT_ZEROS, 0, ATTN__ALWAYS},
    {ATTN__HEAD_W, "lm_head.weight", 2, {ATTN__DIM_V, C}, ATTN__INIT_KAIMING, 0, ATTN__IF_UNTIED},
};
#undef C

static const attn__layout layout = {
    .top = top,
    .n_top = sizeof top / sizeof top[0],
    .block_prefix = "model.layers.%d.",
    .block = block,
    .n_block = sizeof block / sizeof block[0],
    .tail = tail,
    .n_tail = sizeof tail / sizeof tail[0],
    .tied_head = "lm_head.weight",
};

static const char *const aliases[] = {"gemma3_text", NULL};
/* Gemma 2's softcapping (kept in Gemma 3's config class, null in its
 * checkpoints) and EmbeddingGemma's two-way attention are not run here. */
static const char *const config_off[] = {"attn_logit_softcapping", "final_logit_softcapping",
                                         "use_bidirectional_attention", NULL};

const attn__arch attn__arch_gemma3 = {
    .name = "Gemma3ForCausalLM",
    .aliases = aliases,
    .config_off = config_off,
    .what = "Gemma 3's text models, gemma-3-270m (transformers' modeling_gemma3.py)",
    .ctor = "Gemma3ForCausalLM(config)",
    .hparams = hparams,
    .n_hparams = sizeof hparams / sizeof hparams[0],
    .describe = describe,
    .layout = &layout,
};
