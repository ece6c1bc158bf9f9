/* llama.c - LlamaForCausalLM (transformers' modeling_llama.py): Llama 2,
 * Llama 3.x (rope_scaling "llama3"), SmolLM2, TinyLlama.
 *
 *   x = embed_tokens[idx]
 *   per block model.layers.<l>:
 *     x = x + o_proj(attn(rope(q_proj(n)), rope(k_proj(n)), v_proj(n)))   n = input_layernorm(x)
 *     x = x + down_proj(act(gate_proj(m)) * up_proj(m))                     m = post_attention_layernorm(x)
 *   logits = lm_head(norm(x)), lm_head tied to embed_tokens or its own
 *
 * LlamaRMSNorm (weight * x * rsqrt(mean(x^2) + eps)), grouped key/value
 * heads (num_key_value_heads), rotary positions over head_dim with
 * rope_theta and rope_scaling, biases as attention_bias and mlp_bias say.
 * Its state_dict tables are Mistral's, Qwen2's and Qwen3's too. */
#include "core/arch/arch.h"

#include <math.h>

/* LlamaConfig's names and defaults, for requests and config.json alike. */
static const attn_arch_hparam hparams[] = {
    {ATTN_HP_VOCAB, "vocab_size", 32000, "vocab_size", 32000, 1, NULL},
    {ATTN_HP_CONTEXT, "max_position_embeddings", 2048, "max_position_embeddings", 2048, 1, NULL},
    {ATTN_HP_LAYERS, "num_hidden_layers", 32, "num_hidden_layers", 32, 0, NULL},
    {ATTN_HP_HEADS, "num_attention_heads", 32, "num_attention_heads", 32, 1, NULL},
    {ATTN_HP_KV_HEADS, "num_key_value_heads", 0, "num_key_value_heads", 0, 0, NULL},
    {ATTN_HP_WIDTH, "hidden_size", 4096, "hidden_size", 4096, 1, NULL},
    {ATTN_HP_HEAD_DIM, "head_dim", 0, "head_dim", 0, 0, NULL},
    {ATTN_HP_FFN, "intermediate_size", 11008, "intermediate_size", 11008, 1, NULL},
    {ATTN_HP_ACTIVATION, "hidden_act", ATTN_ACT_SILU, "hidden_act", ATTN_ACT_SILU, 0, attn__acts_silu},
    {ATTN_HP_NORM_EPS, "rms_norm_eps", 1e-6, "rms_norm_eps", 1e-6, 0, NULL},
    {ATTN_HP_TIED, "tie_word_embeddings", 0, "tie_word_embeddings", 0, 0, NULL},
    {ATTN_HP_ATTN_BIAS, "attention_bias", 0, "attention_bias", 0, 0, NULL},
    {ATTN_HP_MLP_BIAS, "mlp_bias", 0, "mlp_bias", 0, 0, NULL},
    {ATTN_HP_ROPE_THETA, "rope_theta", 10000, "rope_theta", 10000, 0, NULL},
    {ATTN_HP_ROPE_SCALING, "rope_scaling", ATTN_ROPE_DEFAULT, "rope_scaling", ATTN_ROPE_DEFAULT, 0, NULL},
    {ATTN_HP_DROPOUT, "attention_dropout", 0, "attention_dropout", 0, 0, NULL},
};

int attn__llama_describe(const attn_lm_config *c, attn_lm_spec *s, attn_error *err) {
    int rc = attn__spec_common(c, s, err);
    if (rc) return rc;
    s->norm = ATTN_LM_RMSNORM;
    s->gated = 1;
    s->weight_dropout = 1; /* attention_dropout, on the weights */
    return ATTN_OK;
}

#define C ATTN__DIM_C
static const attn__tensor attn__llama_top[] = {
    {ATTN__TOK_EMB, "model.embed_tokens.weight", 2, {ATTN__DIM_V, C}, ATTN__INIT_NORMAL, 0, ATTN__ALWAYS},
};
static const attn__tensor attn__llama_block[] = {
    {ATTN__Q_W, "self_attn.q_proj.weight", 2, {ATTN__DIM_QD, C}, ATTN__INIT_KAIMING, 0, ATTN__ALWAYS},
    {ATTN__Q_B, "self_attn.q_proj.bias", 1, {ATTN__DIM_QD}, ATTN__INIT_BIAS, C, ATTN__IF_QKV_BIAS},
    {ATTN__K_W, "self_attn.k_proj.weight", 2, {ATTN__DIM_KVD, C}, ATTN__INIT_KAIMING, 0, ATTN__ALWAYS},
    {ATTN__K_B, "self_attn.k_proj.bias", 1, {ATTN__DIM_KVD}, ATTN__INIT_BIAS, C, ATTN__IF_QKV_BIAS},
    {ATTN__V_W, "self_attn.v_proj.weight", 2, {ATTN__DIM_KVD, C}, ATTN__INIT_KAIMING, 0, ATTN__ALWAYS},
    {ATTN__V_B, "self_attn.v_proj.bias", 1, {ATTN__DIM_KVD}, ATTN__INIT_BIAS, C, ATTN__IF_QKV_BIAS},
    {ATTN__O_W, "self_attn.o_proj.weight", 2, {C, ATTN__DIM_QD}, ATTN__INIT_KAIMING, 0, ATTN__ALWAYS},
    {ATTN__O_B, "self_attn.o_proj.bias", 1, {C}, ATTN__INIT_BIAS, ATTN__DIM_QD, ATTN__IF_O_BIAS},
    {ATTN__Q_NORM, "self_attn.q_norm.weight", 1, {ATTN__DIM_D}, ATTN__INIT_ONES, 0, ATTN__IF_QK_NORM},
    {ATTN__K_NORM, "self_attn.k_norm.weight", 1, {ATTN__DIM_D}, ATTN__INIT_ONES, 0, ATTN__IF_QK_NORM},
    {ATTN__GATE_W, "mlp.gate_proj.weight", 2, {ATTN__DIM_F, C}, ATTN__INIT_KAIMING, 0, ATTN__ALWAYS},
    {ATTN__GATE_B, "mlp.gate_proj.bias", 1, {ATTN__DIM_F}, ATTN__INIT_BIAS, C, ATTN__IF_MLP_BIAS},
    {ATTN__UP_W, "mlp.up_proj.weight", 2, {ATTN__DIM_F, C}, ATTN__INIT_KAIMING, 0, ATTN__ALWAYS},
    {ATTN__UP_B, "mlp.up_proj.bias", 1, {ATTN__DIM_F}, ATTN__INIT_BIAS, C, ATTN__IF_MLP_BIAS},
    {ATTN__DOWN_W, "mlp.down_proj.weight", 2, {C, ATTN__DIM_F}, ATTN__INIT_KAIMING, 0, ATTN__ALWAYS},
    {ATTN__DOWN_B, "mlp.down_proj.bias", 1, {C}, ATTN__INIT_BIAS, ATTN__DIM_F, ATTN__IF_MLP_BIAS},
    {ATTN__NORM1_W, "input_layernorm.weight", 1, {C}, ATTN__INIT_ONES, 0, ATTN__ALWAYS},
    {ATTN__NORM2_W, "post_attention_layernorm.weight", 1, {C}, ATTN__INIT_ONES, 0, ATTN__ALWAYS},
};
static const attn__tensor attn__llama_tail[] = {
    {ATTN__FINAL_NORM_W, "model.norm.weight", 1, {C}, ATTN__INIT_ONES, 0, ATTN__ALWAYS},
    {ATTN__HEAD_W, "lm_head.weight", 2, {ATTN__DIM_V, C}, ATTN__INIT_KAIMING, 0, ATTN__IF_UNTIED},
};
#undef C

const attn__layout attn__llama_layout = {
    .top = attn__llama_top,
    .n_top = sizeof attn__llama_top / sizeof attn__llama_top[0],
    .block_prefix = "model.layers.%d.",
    .block = attn__llama_block,
    .n_block = sizeof attn__llama_block / sizeof attn__llama_block[0],
    .tail = attn__llama_tail,
    .n_tail = sizeof attn__llama_tail / sizeof attn__llama_tail[0],
    .tied_head = "lm_head.weight",
};

static const char *const aliases[] = {"llama", NULL};

const attn__arch attn__arch_llama = {
    .name = "LlamaForCausalLM",
    .aliases = aliases,
    .what = "Llama 2 and 3.x, SmolLM2, TinyLlama (transformers' modeling_llama.py)",
    .ctor = "LlamaForCausalLM(config)",
    .hparams = hparams,
    .n_hparams = sizeof hparams / sizeof hparams[0],
    .describe = attn__llama_describe,
    .layout = &attn__llama_layout,
};
