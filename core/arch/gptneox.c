/* gptneox.c - GPTNeoXForCausalLM (transformers' modeling_gpt_neox.py): the
 * Pythia models.
 *
 *   x = embed_in[idx]
 *   per block gpt_neox.layers.<l>:
 *     a = dense(attn(query_key_value(input_layernorm(x))))    the fused
 *         projection's rows are [heads][q, k, v][head dim]; rotary positions
 *         on the first rotary_pct of each head's dims
 *     parallel (use_parallel_residual):  x = mlp(post_attention_layernorm(x)) + a + x
 *     else:                              x = x + a; x = x + mlp(post_attention_layernorm(x))
 *   logits = embed_out(final_layer_norm(x))
 *
 * nn.LayerNorm with biases, F.gelu (hidden_act "gelu"), biases on every
 * projection (attention_bias), the head its own. */
#include "core/arch/arch.h"

/* GPTNeoXConfig's names and defaults. */
static const attn_arch_hparam hparams[] = {
    {ATTN_HP_VOCAB, "vocab_size", 50432, "vocab_size", 50432, 1, NULL},
    {ATTN_HP_CONTEXT, "max_position_embeddings", 2048, "max_position_embeddings", 2048, 1, NULL},
    {ATTN_HP_LAYERS, "num_hidden_layers", 44, "num_hidden_layers", 44, 0, NULL},
    {ATTN_HP_HEADS, "num_attention_heads", 64, "num_attention_heads", 64, 1, NULL},
    {ATTN_HP_WIDTH, "hidden_size", 6144, "hidden_size", 6144, 1, NULL},
    {ATTN_HP_FFN, "intermediate_size", 24576, "intermediate_size", 24576, 1, NULL},
    {ATTN_HP_ACTIVATION, "hidden_act", ATTN_ACT_GELU_ERF, "hidden_act", ATTN_ACT_GELU_ERF, 0, attn__acts_gelu},
    {ATTN_HP_ROTARY_PCT, "rotary_pct", 0.25, "rotary_pct", 0.25, 0, NULL},
    {ATTN_HP_ROPE_THETA, "rotary_emb_base", 10000, "rotary_emb_base", 10000, 0, NULL},
    {ATTN_HP_ROPE_SCALING, "rope_scaling", ATTN_ROPE_DEFAULT, "rope_scaling", ATTN_ROPE_DEFAULT, 0, NULL},
    {ATTN_HP_NORM_EPS, "layer_norm_eps", 1e-5, "layer_norm_eps", 1e-5, 0, NULL},
    {ATTN_HP_PARALLEL, "use_parallel_residual", 1, "use_parallel_residual", 1, 0, NULL},
    {ATTN_HP_ATTN_BIAS, "attention_bias", 1, "attention_bias", 1, 0, NULL},
    {ATTN_HP_TIED, "tie_word_embeddings", 0, "tie_word_embeddings", 0, 0, NULL},
};

static int describe(const attn_lm_config *c, attn_lm_spec *s, attn_error *err) {
    int rc = attn__spec_common(c, s, err);
    if (rc) return rc;
    if (c->n_kv_head != c->n_head || (long long)c->head_dim * c->n_head != c->width)
        return attn__fail(err, ATTN_ERR_SHAPE, "num_attention_heads",
                          "GPT-NeoX's heads split hidden_size, one key/value head each");
    s->norm = ATTN_LM_LAYERNORM;
    s->qkv_per_head = 1;
    s->mlp_bias = 1;
    s->parallel = c->parallel;
    return ATTN_OK;
}

#define C ATTN__DIM_C
static const attn__tensor top[] = {
    {ATTN__TOK_EMB, "gpt_neox.embed_in.weight", 2, {ATTN__DIM_V, C}, ATTN__INIT_NORMAL, 0, ATTN__ALWAYS},
};

static const attn__tensor block[] = {
    {ATTN__NORM1_W, "input_layernorm.weight", 1, {C}, ATTN__INIT_ONES, 0, ATTN__ALWAYS},
    {ATTN__NORM1_B, "input_layernorm.bias", 1, {C}, ATTN__INIT_ZEROS, 0, ATTN__ALWAYS},
    {ATTN__NORM2_W, "post_attention_layernorm.weight", 1, {C}, ATTN__INIT_ONES, 0, ATTN__ALWAYS},
    {ATTN__NORM2_B, "post_attention_layernorm.bias", 1, {C}, ATTN__INIT_ZEROS, 0, ATTN__ALWAYS},
    {ATTN__QKV_W, "attention.query_key_value.weight", 2, {ATTN__DIM_QKV, C}, ATTN__INIT_KAIMING, 0,
     ATTN__ALWAYS},
    {ATTN__QKV_B, "attention.query_key_value.bias", 1, {ATTN__DIM_QKV}, ATTN__INIT_BIAS, C,
     ATTN__IF_QKV_BIAS},
    {ATTN__O_W, "attention.dense.weight", 2, {C, ATTN__DIM_QD}, ATTN__INIT_KAIMING, 0, ATTN__ALWAYS},
    {ATTN__O_B, "attention.dense.bias", 1, {C}, ATTN__INIT_BIAS, ATTN__DIM_QD, ATTN__IF_O_BIAS},
    {ATTN__UP_W, "mlp.dense_h_to_4h.weight", 2, {ATTN__DIM_F, C}, ATTN__INIT_KAIMING, 0, ATTN__ALWAYS},
    {ATTN__UP_B, "mlp.dense_h_to_4h.bias", 1, {ATTN__DIM_F}, ATTN__INIT_BIAS, C, ATTN__ALWAYS},
    {ATTN__DOWN_W, "mlp.dense_4h_to_h.weight", 2, {C, ATTN__DIM_F}, ATTN__INIT_KAIMING, 0, ATTN__ALWAYS},
    {ATTN__DOWN_B, "mlp.dense_4h_to_h.bias", 1, {C}, ATTN__INIT_BIAS, ATTN__DIM_F, ATTN__ALWAYS},
};

static const attn__tensor tail[] = {
    {ATTN__FINAL_NORM_W, "gpt_neox.final_layer_norm.weight", 1, {C}, ATTN__INIT_ONES, 0, ATTN__ALWAYS},
    {ATTN__FINAL_NORM_B, "gpt_neox.final_layer_norm.bias", 1, {C}, ATTN__INIT_ZEROS, 0, ATTN__ALWAYS},
    {ATTN__HEAD_W, "embed_out.weight", 2, {ATTN__DIM_V, C}, ATTN__INIT_KAIMING, 0, ATTN__IF_UNTIED},
};
#undef C

static const attn__layout layout = {
    .top = top,
    .n_top = sizeof top / sizeof top[0],
    .block_prefix = "gpt_neox.layers.%d.",
    .block = block,
    .n_block = sizeof block / sizeof block[0],
    .tail = tail,
    .n_tail = sizeof tail / sizeof tail[0],
    .tied_head = "embed_out.weight",
};

static const char *const aliases[] = {"gpt_neox", NULL};

const attn__arch attn__arch_gptneox = {
    .name = "GPTNeoXForCausalLM",
    .aliases = aliases,
    .what = "GPT-NeoX and Pythia (transformers' modeling_gpt_neox.py)",
    .ctor = "GPTNeoXForCausalLM(config)",
    .hparams = hparams,
    .n_hparams = sizeof hparams / sizeof hparams[0],
    .describe = describe,
    .layout = &layout,
};
