/* mistral.c - MistralForCausalLM (transformers' modeling_mistral.py): a
 * Llama (llama.c's state_dict and block) whose layers see a sliding window
 * of sliding_window keys (the query and the sliding_window - 1 before it,
 * as masking_utils' sliding_window_overlay), when the config sets one. */
#include "core/arch/arch.h"

/* MistralConfig's names and defaults. sliding_window null: every key. */
static const attn_arch_hparam hparams[] = {
    {ATTN_HP_VOCAB, "vocab_size", 32000, "vocab_size", 32000, 1, NULL},
    {ATTN_HP_CONTEXT, "max_position_embeddings", 131072, "max_position_embeddings", 131072, 1, NULL},
    {ATTN_HP_LAYERS, "num_hidden_layers", 32, "num_hidden_layers", 32, 0, NULL},
    {ATTN_HP_HEADS, "num_attention_heads", 32, "num_attention_heads", 32, 1, NULL},
    {ATTN_HP_KV_HEADS, "num_key_value_heads", 8, "num_key_value_heads", 8, 0, NULL},
    {ATTN_HP_WIDTH, "hidden_size", 4096, "hidden_size", 4096, 1, NULL},
    {ATTN_HP_HEAD_DIM, "head_dim", 0, "head_dim", 0, 0, NULL},
    {ATTN_HP_FFN, "intermediate_size", 14336, "intermediate_size", 14336, 1, NULL},
    {ATTN_HP_ACTIVATION, "hidden_act", ATTN_ACT_SILU, "hidden_act", ATTN_ACT_SILU, 0, attn__acts_silu},
    {ATTN_HP_NORM_EPS, "rms_norm_eps", 1e-6, "rms_norm_eps", 1e-6, 0, NULL},
    {ATTN_HP_TIED, "tie_word_embeddings", 0, "tie_word_embeddings", 0, 0, NULL},
    {ATTN_HP_ROPE_THETA, "rope_theta", 10000, "rope_theta", 10000, 0, NULL},
    {ATTN_HP_ROPE_SCALING, "rope_scaling", ATTN_ROPE_DEFAULT, "rope_scaling", ATTN_ROPE_DEFAULT, 0, NULL},
    {ATTN_HP_SLIDING_WINDOW, "sliding_window", 4096, "sliding_window", 4096, 0, NULL},
    {ATTN_HP_DROPOUT, "attention_dropout", 0, "attention_dropout", 0, 0, NULL},
};

static int describe(const attn_lm_config *c, attn_lm_spec *s, attn_error *err) {
    int rc = attn__llama_describe(c, s, err);
    if (rc) return rc;
    s->global_every = 0; /* every layer local */
    return ATTN_OK;
}

static const char *const aliases[] = {"mistral", NULL};

const attn__arch attn__arch_mistral = {
    .name = "MistralForCausalLM",
    .aliases = aliases,
    .what = "Mistral (transformers' modeling_mistral.py): Llama's block with a sliding window",
    .ctor = "MistralForCausalLM(config)",
    .hparams = hparams,
    .n_hparams = sizeof hparams / sizeof hparams[0],
    .describe = describe,
    .layout = &attn__llama_layout,
};
