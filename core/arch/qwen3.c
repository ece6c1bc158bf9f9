/* qwen3.c - Qwen3ForCausalLM (transformers' modeling_qwen3.py): Llama's
 * state_dict and block with an RMSNorm of each query and key head
 * (self_attn.q_norm, k_norm over head_dim) before the rotation, and a
 * head_dim of its own (not hidden_size / num_attention_heads). */
#include "core/arch/arch.h"

/* Qwen3Config's names and defaults. */
static const attn_arch_hparam hparams[] = {
    {ATTN_HP_VOCAB, "vocab_size", 151936, "vocab_size", 151936, 1, NULL},
    {ATTN_HP_CONTEXT, "max_position_embeddings", 32768, "max_position_embeddings", 32768, 1, NULL},
    {ATTN_HP_LAYERS, "num_hidden_layers", 32, "num_hidden_layers", 32, 0, NULL},
    {ATTN_HP_HEADS, "num_attention_heads", 32, "num_attention_heads", 32, 1, NULL},
    {ATTN_HP_KV_HEADS, "num_key_value_heads", 32, "num_key_value_heads", 32, 0, NULL},
    {ATTN_HP_WIDTH, "hidden_size", 4096, "hidden_size", 4096, 1, NULL},
    {ATTN_HP_HEAD_DIM, "head_dim", 128, "head_dim", 128, 1, NULL},
    {ATTN_HP_FFN, "intermediate_size", 22016, "intermediate_size", 22016, 1, NULL},
    {ATTN_HP_ACTIVATION, "hidden_act", ATTN_ACT_SILU, "hidden_act", ATTN_ACT_SILU, 0, attn__acts_silu},
    {ATTN_HP_NORM_EPS, "rms_norm_eps", 1e-6, "rms_norm_eps", 1e-6, 0, NULL},
    {ATTN_HP_TIED, "tie_word_embeddings", 0, "tie_word_embeddings", 0, 0, NULL},
    {ATTN_HP_ATTN_BIAS, "attention_bias", 0, "attention_bias", 0, 0, NULL},
    {ATTN_HP_ROPE_THETA, "rope_theta", 10000, "rope_theta", 10000, 0, NULL},
    {ATTN_HP_ROPE_SCALING, "rope_scaling", ATTN_ROPE_DEFAULT, "rope_scaling", ATTN_ROPE_DEFAULT, 0, NULL},
    {ATTN_HP_USE_WINDOW, "use_sliding_window", 0, "use_sliding_window", 0, 0, NULL},
    {ATTN_HP_SLIDING_WINDOW, "sliding_window", 4096, "sliding_window", 4096, 0, NULL},
    {ATTN_HP_WINDOW_FROM, "max_window_layers", 28, "max_window_layers", 28, 0, NULL},
    {ATTN_HP_DROPOUT, "attention_dropout", 0, "attention_dropout", 0, 0, NULL},
};

static int describe(const attn_lm_config *c, attn_lm_spec *s, attn_error *err) {
    int rc = attn__llama_describe(c, s, err);
    if (rc) return rc;
    s->qk_norm = 1;
    s->mlp_bias = 0;
    s->window = c->use_window ? c->window : 0;
    s->global_every = 0;
    return ATTN_OK;
}

static const char *const aliases[] = {"qwen3", NULL};

const attn__arch attn__arch_qwen3 = {
    .name = "Qwen3ForCausalLM",
    .aliases = aliases,
    .what = "Qwen3 (transformers' modeling_qwen3.py): Llama's block with q/k norms and its own head_dim",
    .ctor = "Qwen3ForCausalLM(config)",
    .hparams = hparams,
    .n_hparams = sizeof hparams / sizeof hparams[0],
    .describe = describe,
    .layout = &attn__llama_layout,
};
