/* roberta.c - RobertaForMaskedLM (transformers' modeling_roberta.py):
 * RoBERTa, BERT's block under other names for its embeddings and head.
 *
 *   positions: create_position_ids_from_input_ids, padding_idx = pad_token_id:
 *     the tokens that are not padding count from padding_idx + 1
 *   x = LayerNorm(word_embeddings[idx] + token_type_embeddings[types]
 *                 + position_embeddings[positions])
 *   per block roberta.encoder.layer.<l>: BERT's post-LN block (bert.c)
 *   logits = lm_head: layer_norm(gelu(dense(x))) times word_embeddings
 *            (tied) plus lm_head.bias; RobertaLMHead's gelu is the erf
 *            GELU whatever hidden_act says
 *   pooler_output = tanh(roberta.pooler.dense(x[:, 0])) (RobertaModel)
 *
 * The byte-level BPE tokenizer of its folder (vocab.json + merges.txt) with
 * <s> A </s></s> B </s> is the service's (api/model/text.c). */
#include "core/arch/arch.h"

/* RobertaConfig's names and defaults (roberta-base's). */
static const attn_arch_hparam hparams[] = {
    {ATTN_HP_VOCAB, "vocab_size", 50265, "vocab_size", 50265, 1, NULL},
    {ATTN_HP_CONTEXT, "max_position_embeddings", 514, "max_position_embeddings", 514, 1, NULL},
    {ATTN_HP_LAYERS, "num_hidden_layers", 12, "num_hidden_layers", 12, 0, NULL},
    {ATTN_HP_HEADS, "num_attention_heads", 12, "num_attention_heads", 12, 1, NULL},
    {ATTN_HP_WIDTH, "hidden_size", 768, "hidden_size", 768, 1, NULL},
    {ATTN_HP_FFN, "intermediate_size", 3072, "intermediate_size", 3072, 1, NULL},
    {ATTN_HP_TYPE_VOCAB, "type_vocab_size", 1, "type_vocab_size", 1, 0, NULL},
    {ATTN_HP_ACTIVATION, "hidden_act", ATTN_ACT_GELU_ERF, "hidden_act", ATTN_ACT_GELU_ERF, 0, attn__acts_gelu},
    {ATTN_HP_NORM_EPS, "layer_norm_eps", 1e-5, "layer_norm_eps", 1e-5, 0, NULL},
    {ATTN_HP_PAD_ID, "pad_token_id", 1, "pad_token_id", 1, 0, NULL},
    {ATTN_HP_MLM_HEAD, "mlm_head", 1, NULL, 1, 0, NULL},
    {ATTN_HP_POOLER, "pooler", 0, NULL, 1, 0, NULL},
};

static int describe(const attn_lm_config *c, attn_lm_spec *s, attn_error *err) {
    if (c->head_dim * c->n_head != c->width || c->n_kv_head != c->n_head)
        return attn__fail(err, ATTN_ERR_SHAPE, "num_attention_heads",
                          "RoBERTa's heads split hidden_size, one key/value head each");
    if (c->pad_id < 0 || c->pad_id >= c->vocab_size || c->pad_id + 1 >= c->context)
        return attn__fail(err, ATTN_ERR_ARG, "pad_token_id", "pad_token_id %d must be a token of "
                          "vocab_size %d and leave positions after it in max_position_embeddings %d",
                          c->pad_id, c->vocab_size, c->context);
    attn__spec_encoder(c, s);
    s->pos_after_pad = 1;
    s->head_act = ATTN_ACT_GELU_ERF;
    return ATTN_OK;
}

#define C ATTN__DIM_C
static const attn__tensor top[] = {
    {ATTN__TOK_EMB, "roberta.embeddings.word_embeddings.weight", 2, {ATTN__DIM_V, C},
     ATTN__INIT_NORMAL, 0, ATTN__ALWAYS},
    {ATTN__POS_EMB, "roberta.embeddings.position_embeddings.weight", 2, {ATTN__DIM_CTX, C},
     ATTN__INIT_NORMAL, 0, ATTN__ALWAYS},
    {ATTN__TYPE_EMB, "roberta.embeddings.token_type_embeddings.weight", 2, {ATTN__DIM_TYPES, C},
     ATTN__INIT_NORMAL, 0, ATTN__IF_TYPES},
    {ATTN__EMB_NORM_W, "roberta.embeddings.LayerNorm.weight", 1, {C}, ATTN__INIT_ONES, 0,
     ATTN__ALWAYS},
    {ATTN__EMB_NORM_B, "roberta.embeddings.LayerNorm.bias", 1, {C}, ATTN__INIT_ZEROS, 0,
     ATTN__ALWAYS},
};

/* RobertaLMHead registers its bias before its layers. */
static const attn__tensor tail[] = {
    {ATTN__POOLER_W, "roberta.pooler.dense.weight", 2, {C, C}, ATTN__INIT_KAIMING, 0, ATTN__IF_POOLER},
    {ATTN__POOLER_B, "roberta.pooler.dense.bias", 1, {C}, ATTN__INIT_BIAS, C, ATTN__IF_POOLER},
    {ATTN__HEAD_B, "lm_head.bias", 1, {ATTN__DIM_V}, ATTN__INIT_ZEROS, 0, ATTN__IF_MLM},
    {ATTN__HEAD_DENSE_W, "lm_head.dense.weight", 2, {C, C}, ATTN__INIT_KAIMING, 0, ATTN__IF_MLM},
    {ATTN__HEAD_DENSE_B, "lm_head.dense.bias", 1, {C}, ATTN__INIT_BIAS, C, ATTN__IF_MLM},
    {ATTN__HEAD_NORM_W, "lm_head.layer_norm.weight", 1, {C}, ATTN__INIT_ONES, 0, ATTN__IF_MLM},
    {ATTN__HEAD_NORM_B, "lm_head.layer_norm.bias", 1, {C}, ATTN__INIT_ZEROS, 0, ATTN__IF_MLM},
};
#undef C

static const char *const ignored[] = {"roberta.embeddings.position_ids",
                                      "roberta.embeddings.token_type_ids", "lm_head.decoder.bias", NULL};

static const attn__layout layout = {
    .top = top,
    .n_top = sizeof top / sizeof top[0],
    .block_prefix = "roberta.encoder.layer.%d.",
    .block = attn__bert_block,
    .n_block = ATTN__BERT_BLOCK_N,
    .tail = tail,
    .n_tail = sizeof tail / sizeof tail[0],
    .tied_head = "lm_head.decoder.weight",
    .base_prefix = "roberta.",
    .ignored = ignored,
};

static const char *const aliases[] = {"RobertaModel", "roberta", NULL};

const attn__arch attn__arch_roberta = {
    .name = "RobertaForMaskedLM",
    .aliases = aliases,
    .what = "RoBERTa (transformers' modeling_roberta.py)",
    .ctor = "RobertaForMaskedLM(config)",
    .hparams = hparams,
    .n_hparams = sizeof hparams / sizeof hparams[0],
    .describe = describe,
    .layout = &layout,
};
