/* gptmodel.c - the book's GPTModel (Raschka, "Build a Large Language Model
 * (From Scratch)", ch. 4, gpt.py):
 *
 *   x = drop_emb(tok_emb[idx] + pos_emb[t])
 *   per block trf_blocks.<l>:
 *     x = x + drop_shortcut(att(norm1(x)))   chapter 3's MultiHeadAttention:
 *                                            W_query, W_key, W_value (qkv_bias),
 *                                            out_proj, the triu "mask" buffer,
 *                                            dropout on the weights
 *     x = x + drop_shortcut(ff(norm2(x)))    ff.layers.0, GELU, ff.layers.2
 *   logits = out_head(final_norm(x)), out_head its own weight, no bias
 *
 * The book's LayerNorm ((x - mean) / sqrt(var + eps) * scale + shift) and
 * its GELU (the tanh form). */
#include "core/arch/arch.h"

#include <math.h>

static const attn_arch_hparam hparams[] = {
    {ATTN_HP_VOCAB, "vocab_size", NAN, "vocab_size", NAN, 1, NULL},
    {ATTN_HP_CONTEXT, "context_length", NAN, "context_length", NAN, 1, NULL},
    {ATTN_HP_LAYERS, "n_layers", 12, "n_layers", NAN, 0, NULL},
    {ATTN_HP_HEADS, "n_heads", 12, "n_heads", NAN, 1, NULL},
    {ATTN_HP_WIDTH, "emb_dim", 768, "emb_dim", NAN, 1, NULL},
    {ATTN_HP_DROPOUT, "drop_rate", 0.1, "drop_rate", 0.1, 0, NULL},
    {ATTN_HP_QKV_BIAS, "qkv_bias", 0, "qkv_bias", 0, 0, NULL},
};

static int describe(const attn_lm_config *c, attn_lm_spec *s, attn_error *err) {
    if ((long long)c->head_dim * c->n_head != c->width || c->n_kv_head != c->n_head || c->ffn != 4LL * c->width)
        return attn__fail(err, ATTN_ERR_SHAPE, "n_heads",
                          "GPTModel's heads split emb_dim, and its MLP is 4 emb_dim wide");
    *s = (attn_lm_spec){.norm = ATTN_LM_LAYERNORM_DIV, .norm_eps = 1e-5, .learned_pos = 1,
                        .qkv_bias = c->qkv_bias != 0, .o_bias = 1, .act = ATTN_ACT_GELU_TANH,
                        .mlp_bias = 1, .weight_dropout = 1};
    return ATTN_OK;
}

#define C ATTN__DIM_C
static const attn__tensor top[] = {
    {ATTN__TOK_EMB, "tok_emb.weight", 2, {ATTN__DIM_V, C}, ATTN__INIT_NORMAL, 0, ATTN__ALWAYS},
    {ATTN__POS_EMB, "pos_emb.weight", 2, {ATTN__DIM_CTX, C}, ATTN__INIT_NORMAL, 0, ATTN__ALWAYS},
};

/* A module's own buffers come before its children's parameters in
 * state_dict(): att.mask first. */
static const attn__tensor block[] = {
    {ATTN__MASK, "att.mask", 2, {ATTN__DIM_CTX, ATTN__DIM_CTX}, ATTN__INIT_TRIU, 0, ATTN__ALWAYS},
    {ATTN__Q_W, "att.W_query.weight", 2, {ATTN__DIM_QD, C}, ATTN__INIT_KAIMING, 0, ATTN__ALWAYS},
    {ATTN__Q_B, "att.W_query.bias", 1, {ATTN__DIM_QD}, ATTN__INIT_BIAS, C, ATTN__IF_QKV_BIAS},
    {ATTN__K_W, "att.W_key.weight", 2, {ATTN__DIM_KVD, C}, ATTN__INIT_KAIMING, 0, ATTN__ALWAYS},
    {ATTN__K_B, "att.W_key.bias", 1, {ATTN__DIM_KVD}, ATTN__INIT_BIAS, C, ATTN__IF_QKV_BIAS},
    {ATTN__V_W, "att.W_value.weight", 2, {ATTN__DIM_KVD, C}, ATTN__INIT_KAIMING, 0, ATTN__ALWAYS},
    {ATTN__V_B, "att.W_value.bias", 1, {ATTN__DIM_KVD}, ATTN__INIT_BIAS, C, ATTN__IF_QKV_BIAS},
    {ATTN__O_W, "att.out_proj.weight", 2, {C, ATTN__DIM_QD}, ATTN__INIT_KAIMING, 0, ATTN__ALWAYS},
    {ATTN__O_B, "att.out_proj.bias", 1, {C}, ATTN__INIT_BIAS, ATTN__DIM_QD, ATTN__ALWAYS},
    {ATTN__UP_W, "ff.layers.0.weight", 2, {ATTN__DIM_F, C}, ATTN__INIT_KAIMING, 0, ATTN__ALWAYS},
    {ATTN__UP_B, "ff.layers.0.bias", 1, {ATTN__DIM_F}, ATTN__INIT_BIAS, C, ATTN__ALWAYS},
    {ATTN__DOWN_W, "ff.layers.2.weight", 2, {C, ATTN__DIM_F}, ATTN__INIT_KAIMING, 0, ATTN__ALWAYS},
    {ATTN__DOWN_B, "ff.layers.2.bias", 1, {C}, ATTN__INIT_BIAS, ATTN__DIM_F, ATTN__ALWAYS},
    {ATTN__NORM1_W, "norm1.scale", 1, {C}, ATTN__INIT_ONES, 0, ATTN__ALWAYS},
    {ATTN__NORM1_B, "norm1.shift", 1, {C}, ATTN__INIT_ZEROS, 0, ATTN__ALWAYS},
    {ATTN__NORM2_W, "norm2.scale", 1, {C}, ATTN__INIT_ONES, 0, ATTN__ALWAYS},
    {ATTN__NORM2_B, "norm2.shift", 1, {C}, ATTN__INIT_ZEROS, 0, ATTN__ALWAYS},
};

static const attn__tensor tail[] = {
    {ATTN__FINAL_NORM_W, "final_norm.scale", 1, {C}, ATTN__INIT_ONES, 0, ATTN__ALWAYS},
    {ATTN__FINAL_NORM_B, "final_norm.shift", 1, {C}, ATTN__INIT_ZEROS, 0, ATTN__ALWAYS},
    {ATTN__HEAD_W, "out_head.weight", 2, {ATTN__DIM_V, C}, ATTN__INIT_KAIMING, 0, ATTN__IF_UNTIED},
};
#undef C

static const attn__layout layout = {
    .top = top,
    .n_top = sizeof top / sizeof top[0],
    .block_prefix = "trf_blocks.%d.",
    .block = block,
    .n_block = sizeof block / sizeof block[0],
    .tail = tail,
    .n_tail = sizeof tail / sizeof tail[0],
};

const attn__arch attn__arch_gptmodel = {
    .name = "GPTModel",
    .what = "the book's GPTModel (Raschka, ch. 4)",
    .ctor = "GPTModel(cfg)",
    .hparams = hparams,
    .n_hparams = sizeof hparams / sizeof hparams[0],
    .describe = describe,
    .layout = &layout,
    .seeded = 1,
    .dropout = {.emb = "drop_emb", .weights = "att.dropout", .attn_out = "drop_shortcut.0",
                .mlp_out = "drop_shortcut.1"},
};
