/* gpt2.c - seed 003's GPT2 (gpt2_min.py), the row every GPT-2 checkpoint
 * runs as (Hugging Face's GPT2LMHeadModel is the same model under other
 * names, api/weights/gpt2.c):
 *
 *   x = drop(wte[idx] + wpe[t])
 *   per block h.<l>:  x = x + resid_drop(c_proj(attn(c_attn(ln_1(x)))))
 *                     x = x + mlp.drop(mlp.proj(gelu(mlp.fc(ln_2(x)))))
 *   logits = lm_head(ln_f(x)), lm_head tied to wte
 *
 * nn.LayerNorm (eps 1e-5), F.gelu or gelu_new, biases everywhere, the
 * causal "bias" buffer (tril) in each attention. */
#include "core/arch/arch.h"

#include <math.h>

static const char *const gelus[] = {"gelu_new", "gelu_pytorch_tanh", "gelu", NULL};

static const attn_arch_hparam hparams[] = {
    {ATTN_HP_VOCAB, "vocab_size", NAN, "vocab_size", NAN, 1, NULL},
    {ATTN_HP_CONTEXT, "block_size", NAN, "n_positions", NAN, 1, NULL},
    {ATTN_HP_LAYERS, "n_layer", 12, "n_layer", NAN, 0, NULL},
    {ATTN_HP_HEADS, "n_head", 12, "n_head", NAN, 1, NULL},
    {ATTN_HP_WIDTH, "n_embd", 768, "n_embd", NAN, 1, NULL},
    {ATTN_HP_DROPOUT, "dropout", 0.1, "resid_pdrop", 0.1, 0, NULL},
    {ATTN_HP_ACTIVATION, "activation", ATTN_ACT_GELU_ERF, "activation_function", ATTN_ACT_GELU_TANH,
     0, gelus},
    {ATTN_HP_NORM_EPS, NULL, 1e-5, "layer_norm_epsilon", 1e-5, 0, NULL},
};

static int describe(const attn_lm_config *c, attn_lm_spec *s, attn_error *err) {
    if (c->act != ATTN_ACT_GELU_ERF && c->act != ATTN_ACT_GELU_TANH)
        return attn__fail(err, ATTN_ERR_ARG, "activation", "GPT2's activation is gelu or gelu_new");
    if (fabs(c->norm_eps - 1e-5) > 1e-12)
        return attn__fail(err, ATTN_ERR_ARG, "layer_norm_epsilon",
                          "layer_norm_epsilon is not 1e-5, the LayerNorm's epsilon here");
    if ((long long)c->head_dim * c->n_head != c->width || c->n_kv_head != c->n_head || c->ffn != 4LL * c->width)
        return attn__fail(err, ATTN_ERR_SHAPE, "n_head",
                          "GPT2's heads split n_embd, and its MLP is 4 n_embd wide");
    *s = (attn_lm_spec){.norm = ATTN_LM_LAYERNORM, .norm_eps = c->norm_eps, .learned_pos = 1,
                        .qkv_bias = 1, .o_bias = 1, .act = c->act, .mlp_bias = 1, .tied = 1};
    return ATTN_OK;
}

#define C ATTN__DIM_C
static const attn__tensor top[] = {
    {ATTN__TOK_EMB, "wte.weight", 2, {ATTN__DIM_V, C}, ATTN__INIT_NORMAL, 0, ATTN__ALWAYS},
    {ATTN__POS_EMB, "wpe.weight", 2, {ATTN__DIM_CTX, C}, ATTN__INIT_NORMAL, 0, ATTN__ALWAYS},
};

static const attn__tensor block[] = {
    {ATTN__NORM1_W, "ln_1.weight", 1, {C}, ATTN__INIT_ONES, 0, ATTN__ALWAYS},
    {ATTN__NORM1_B, "ln_1.bias", 1, {C}, ATTN__INIT_ZEROS, 0, ATTN__ALWAYS},
    {ATTN__MASK, "attn.bias", 4, {ATTN__DIM_1, ATTN__DIM_1, ATTN__DIM_CTX, ATTN__DIM_CTX},
     ATTN__INIT_TRIL, 0, ATTN__ALWAYS},
    {ATTN__QKV_W, "attn.c_attn.weight", 2, {ATTN__DIM_QKV, C}, ATTN__INIT_KAIMING, 0, ATTN__ALWAYS},
    {ATTN__QKV_B, "attn.c_attn.bias", 1, {ATTN__DIM_QKV}, ATTN__INIT_BIAS, C, ATTN__ALWAYS},
    {ATTN__O_W, "attn.c_proj.weight", 2, {C, ATTN__DIM_QD}, ATTN__INIT_KAIMING, 0, ATTN__ALWAYS},
    {ATTN__O_B, "attn.c_proj.bias", 1, {C}, ATTN__INIT_BIAS, ATTN__DIM_QD, ATTN__ALWAYS},
    {ATTN__NORM2_W, "ln_2.weight", 1, {C}, ATTN__INIT_ONES, 0, ATTN__ALWAYS},
    {ATTN__NORM2_B, "ln_2.bias", 1, {C}, ATTN__INIT_ZEROS, 0, ATTN__ALWAYS},
    {ATTN__UP_W, "mlp.fc.weight", 2, {ATTN__DIM_F, C}, ATTN__INIT_KAIMING, 0, ATTN__ALWAYS},
    {ATTN__UP_B, "mlp.fc.bias", 1, {ATTN__DIM_F}, ATTN__INIT_BIAS, C, ATTN__ALWAYS},
    {ATTN__DOWN_W, "mlp.proj.weight", 2, {C, ATTN__DIM_F}, ATTN__INIT_KAIMING, 0, ATTN__ALWAYS},
    {ATTN__DOWN_B, "mlp.proj.bias", 1, {C}, ATTN__INIT_BIAS, ATTN__DIM_F, ATTN__ALWAYS},
};

static const attn__tensor tail[] = {
    {ATTN__FINAL_NORM_W, "ln_f.weight", 1, {C}, ATTN__INIT_ONES, 0, ATTN__ALWAYS},
    {ATTN__FINAL_NORM_B, "ln_f.bias", 1, {C}, ATTN__INIT_ZEROS, 0, ATTN__ALWAYS},
};
#undef C

static const char *const aliases[] = {"GPT2LMHeadModel", "GPT2Model", "gpt2", NULL};
/* GPT2Config's scaling of the scores by 1 / (layer + 1) (Mistral's GPT-2
 * runs) is not run here. */
static const char *const config_off[] = {"scale_attn_by_inverse_layer_idx", NULL};

static const attn__layout layout = {
    .top = top,
    .n_top = sizeof top / sizeof top[0],
    .block_prefix = "h.%d.",
    .block = block,
    .n_block = sizeof block / sizeof block[0],
    .tail = tail,
    .n_tail = sizeof tail / sizeof tail[0],
    .tied_head = "lm_head.weight",
};

const attn__arch attn__arch_gpt2 = {
    .name = "GPT2",
    .aliases = aliases,
    .config_off = config_off,
    .what = "seed 003's GPT2 (gpt2_min.py); Hugging Face's GPT-2 checkpoints run as it",
    .ctor = "GPT2(config)",
    .hparams = hparams,
    .n_hparams = sizeof hparams / sizeof hparams[0],
    .describe = describe,
    .layout = &layout,
    .seeded = 1,
    .tied_head_draws = 1,
    .dropout = {.emb = "drop", .attn_out = "attn.resid_drop", .mlp_out = "mlp.drop"},
};
