/* qwen2.c - Qwen2ForCausalLM (transformers' modeling_qwen2.py): Qwen2 and
 * Qwen2.5. Llama's state_dict and block with biases on the query, key and
 * value projections (none on o_proj or the MLP), and a sliding window on
 * the layers from max_window_layers on when use_sliding_window says so. */
#include "core/arch/arch.h"

/* Qwen2Config's names and defaults. */
static const attn_arch_hparam hparams[] = {
    {ATTN_HP_VOCAB, "vocab_size", 151936, "vocab_size", 151936, 1, NULL},
    {ATTN_HP_CONTEXT, "max_position_embeddings", 32768, "max_position_embeddings", 32768, 1, NULL},
    {ATTN_HP_LAYERS, "num_hidden_layers", 32, "num_hidden_layers", 32, 0, NULL},
    {ATTN_HP_HEADS, "num_attention_heads", 32, "num_attention_heads", 32, 1, NULL},
    {ATTN_HP_KV_HEADS, "num_key_value_heads", 32, "num_key_value_heads", 32, 0, NULL},
    {ATTN_HP_WIDTH, "hidden_size", 4096, "hidden_size", 4096, 1, NULL},
    {ATTN_HP_FFN, "intermediate_size", 22016, "intermediate_size", 22016, 1, NULL},
    {ATTN_HP_ACTIVATION, "hidden_act", ATTN_ACT_SILU, "hidden_act", ATTN_ACT_SILU, 0, attn__acts_silu},
    {ATTN_HP_NORM_EPS, "rms_norm_eps", 1e-6, "rms_norm_eps", 1e-6, 0, NULL},
    {ATTN_HP_TIED, "tie_word_embeddings", 0, "tie_word_embeddings", 0, 0, NULL},
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
    s->qkv_bias = 1, s->o_bias = 0;
    s->window = c->use_window ? c->window : 0;
    s->global_every = 0;
    return ATTN_OK;
}

static const char *const aliases[] = {"qwen2", NULL};

const attn__arch attn__arch_qwen2 = {
    .name = "Qwen2ForCausalLM",
    .aliases = aliases,
    .what = "Qwen2 and Qwen2.5 (transformers' modeling_qwen2.py): Llama's block with q/k/v biases",
    .ctor = "Qwen2ForCausalLM(config)",
    .hparams = hparams,
    .n_hparams = sizeof hparams / sizeof hparams[0],
    .describe = describe,
    .layout = &attn__llama_layout,
};
