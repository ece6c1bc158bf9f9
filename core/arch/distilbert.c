/* distilbert.c - DistilBertForMaskedLM (transformers' modeling_distilbert.py).
 *
 *   x = LayerNorm(word_embeddings[idx] + position_embeddings[t])   (no token types)
 *   per block distilbert.transformer.layer.<l>:   (post-LN)
 *     x = sa_layer_norm(x + attention.out_lin(attn(q_lin, k_lin, v_lin)))
 *     x = output_layer_norm(x + ffn.lin2(act(ffn.lin1(x))))
 *   logits = vocab_projector(vocab_layer_norm(act(vocab_transform(x)))),
 *            vocab_projector's weight tied to word_embeddings, its own bias
 *
 * Every LayerNorm's epsilon is 1e-12 (fixed in the modeling file); two-way
 * attention over the tokens that are not padding. */
#include "core/arch/arch.h"

static const char *const acts[] = {"gelu", "relu", NULL};

/* DistilBertConfig's names and defaults (distilbert-base-uncased's). */
static const attn_arch_hparam hparams[] = {
    {ATTN_HP_VOCAB, "vocab_size", 30522, "vocab_size", 30522, 1, NULL},
    {ATTN_HP_CONTEXT, "max_position_embeddings", 512, "max_position_embeddings", 512, 1, NULL},
    {ATTN_HP_LAYERS, "n_layers", 6, "n_layers", 6, 0, NULL},
    {ATTN_HP_HEADS, "n_heads", 12, "n_heads", 12, 1, NULL},
    {ATTN_HP_WIDTH, "dim", 768, "dim", 768, 1, NULL},
    {ATTN_HP_FFN, "hidden_dim", 3072, "hidden_dim", 3072, 1, NULL},
    {ATTN_HP_ACTIVATION, "activation", ATTN_ACT_GELU_ERF, "activation", ATTN_ACT_GELU_ERF, 0, acts},
    {ATTN_HP_NORM_EPS, NULL, 1e-12, NULL, 1e-12, 0, NULL},
    {ATTN_HP_PAD_ID, "pad_token_id", 0, "pad_token_id", 0, 0, NULL},
    {ATTN_HP_MLM_HEAD, "mlm_head", 1, NULL, 1, 0, NULL},
};

static int describe(const attn_lm_config *c, attn_lm_spec *s, attn_error *err) {
    if (c->head_dim * c->n_head != c->width || c->n_kv_head != c->n_head)
        return attn__fail(err, ATTN_ERR_SHAPE, "n_heads", "DistilBERT's heads split dim, one "
                          "key/value head each");
    attn__spec_encoder(c, s);
    s->type_vocab = 0;
    s->pooler = 0;
    return ATTN_OK;
}

#define C ATTN__DIM_C
static const attn__tensor top[] = {
    {ATTN__TOK_EMB, "distilbert.embeddings.word_embeddings.weight", 2, {ATTN__DIM_V, C},
     ATTN__INIT_NORMAL, 0, ATTN__ALWAYS},
    {ATTN__POS_EMB, "distilbert.embeddings.position_embeddings.weight", 2, {ATTN__DIM_CTX, C},
     ATTN__INIT_NORMAL, 0, ATTN__ALWAYS},
    {ATTN__EMB_NORM_W, "distilbert.embeddings.LayerNorm.weight", 1, {C}, ATTN__INIT_ONES, 0,
     ATTN__ALWAYS},
    {ATTN__EMB_NORM_B, "distilbert.embeddings.LayerNorm.bias", 1, {C}, ATTN__INIT_ZEROS, 0,
     ATTN__ALWAYS},
};

static const attn__tensor block[] = {
    {ATTN__Q_W, "attention.q_lin.weight", 2, {C, C}, ATTN__INIT_KAIMING, 0, ATTN__ALWAYS},
    {ATTN__Q_B, "attention.q_lin.bias", 1, {C}, ATTN__INIT_BIAS, C, ATTN__ALWAYS},
    {ATTN__K_W, "attention.k_lin.weight", 2, {C, C}, ATTN__INIT_KAIMING, 0, ATTN__ALWAYS},
    {ATTN__K_B, "attention.k_lin.bias", 1, {C}, ATTN__INIT_BIAS, C, ATTN__ALWAYS},
    {ATTN__V_W, "attention.v_lin.weight", 2, {C, C}, ATTN__INIT_KAIMING, 0, ATTN__ALWAYS},
    {ATTN__V_B, "attention.v_lin.bias", 1, {C}, ATTN__INIT_BIAS, C, ATTN__ALWAYS},
    {ATTN__O_W, "attention.out_lin.weight", 2, {C, C}, ATTN__INIT_KAIMING, 0, ATTN__ALWAYS},
    {ATTN__O_B, "attention.out_lin.bias", 1, {C}, ATTN__INIT_BIAS, C, ATTN__ALWAYS},
    {ATTN__NORM1_W, "sa_layer_norm.weight", 1, {C}, ATTN__INIT_ONES, 0, ATTN__ALWAYS},
    {ATTN__NORM1_B, "sa_layer_norm.bias", 1, {C}, ATTN__INIT_ZEROS, 0, ATTN__ALWAYS},
    {ATTN__UP_W, "ffn.lin1.weight", 2, {ATTN__DIM_F, C}, ATTN__INIT_KAIMING, 0, ATTN__ALWAYS},
    {ATTN__UP_B, "ffn.lin1.bias", 1, {ATTN__DIM_F}, ATTN__INIT_BIAS, C, ATTN__ALWAYS},
    {ATTN__DOWN_W, "ffn.lin2.weight", 2, {C, ATTN__DIM_F}, ATTN__INIT_KAIMING, 0, ATTN__ALWAYS},
    {ATTN__DOWN_B, "ffn.lin2.bias", 1, {C}, ATTN__INIT_BIAS, ATTN__DIM_F, ATTN__ALWAYS},
    {ATTN__NORM2_W, "output_layer_norm.weight", 1, {C}, ATTN__INIT_ONES, 0, ATTN__ALWAYS},
    {ATTN__NORM2_B, "output_layer_norm.bias", 1, {C}, ATTN__INIT_ZEROS, 0, ATTN__ALWAYS},
};

static const attn__tensor tail[] = {
    {ATTN__HEAD_DENSE_W, "vocab_transform.weight", 2, {C, C}, ATTN__INIT_KAIMING, 0, ATTN__IF_MLM},
    {ATTN__HEAD_DENSE_B, "vocab_transform.bias", 1, {C}, ATTN__INIT_BIAS, C, ATTN__IF_MLM},
    {ATTN__HEAD_NORM_W, "vocab_layer_norm.weight", 1, {C}, ATTN__INIT_ONES, 0, ATTN__IF_MLM},
    {ATTN__HEAD_NORM_B, "vocab_layer_norm.bias", 1, {C}, ATTN__INIT_ZEROS, 0, ATTN__IF_MLM},
    {ATTN__HEAD_B, "vocab_projector.bias", 1, {ATTN__DIM_V}, ATTN__INIT_ZEROS, 0, ATTN__IF_MLM},
};
#undef C

static const char *const ignored[] = {"distilbert.embeddings.position_ids", NULL};

static const attn__layout layout = {
    .top = top,
    .n_top = sizeof top / sizeof top[0],
    .block_prefix = "distilbert.transformer.layer.%d.",
    .block = block,
    .n_block = sizeof block / sizeof block[0],
    .tail = tail,
    .n_tail = sizeof tail / sizeof tail[0],
    .tied_head = "vocab_projector.weight",
    .base_prefix = "distilbert.",
    .ignored = ignored,
};

static const char *const aliases[] = {"DistilBertModel", "distilbert", NULL};

const attn__arch attn__arch_distilbert = {
    .name = "DistilBertForMaskedLM",
    .aliases = aliases,
    .what = "DistilBERT (transformers' modeling_distilbert.py)",
    .ctor = "DistilBertForMaskedLM(config)",
    .hparams = hparams,
    .n_hparams = sizeof hparams / sizeof hparams[0],
    .describe = describe,
    .layout = &layout,
};
