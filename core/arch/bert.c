/* bert.c - BertForMaskedLM and BertModel (transformers' modeling_bert.py):
 * BERT, and the sentence-transformers models built on it (all-MiniLM-L6-v2).
 *
 *   x = LayerNorm(word_embeddings[idx] + token_type_embeddings[types]
 *                 + position_embeddings[t])
 *   per block bert.encoder.layer.<l>:   (post-LN: the norm after each add)
 *     x = attention.output.LayerNorm(x + attention.output.dense(attn(x)))
 *     x = output.LayerNorm(x + output.dense(act(intermediate.dense(x))))
 *   two-way attention: every token sees every token that is not padding
 *   logits = cls.predictions: LayerNorm(act(transform.dense(x))) times
 *            word_embeddings (tied) plus cls.predictions.bias
 *   pooler_output = tanh(bert.pooler.dense(x[:, 0]))
 *
 * nn.LayerNorm with layer_norm_eps, GELU (erf) as hidden_act says, biases
 * everywhere. The state_dict is BertForMaskedLM's names with the pooler of
 * BertModel (BertForPreTraining's checkpoints hold both); the MLM head and
 * the pooler are parts (mlm_head, pooler) a checkpoint has or not, and a
 * BertModel checkpoint's bare names are the same without "bert."
 * (bertmodel.c is BertModel's row: these tables, the pooler on by default). */
#include "core/arch/arch.h"

/* BertConfig's names and defaults; the parts are not config.json's (a
 * checkpoint's tensors say whether it has them). */
static const attn_arch_hparam hparams[] = {
    {ATTN_HP_VOCAB, "vocab_size", 30522, "vocab_size", 30522, 1, NULL},
    {ATTN_HP_CONTEXT, "max_position_embeddings", 512, "max_position_embeddings", 512, 1, NULL},
    {ATTN_HP_LAYERS, "num_hidden_layers", 12, "num_hidden_layers", 12, 0, NULL},
    {ATTN_HP_HEADS, "num_attention_heads", 12, "num_attention_heads", 12, 1, NULL},
    {ATTN_HP_WIDTH, "hidden_size", 768, "hidden_size", 768, 1, NULL},
    {ATTN_HP_FFN, "intermediate_size", 3072, "intermediate_size", 3072, 1, NULL},
    {ATTN_HP_TYPE_VOCAB, "type_vocab_size", 2, "type_vocab_size", 2, 0, NULL},
    {ATTN_HP_ACTIVATION, "hidden_act", ATTN_ACT_GELU_ERF, "hidden_act", ATTN_ACT_GELU_ERF, 0, attn__acts_gelu},
    {ATTN_HP_NORM_EPS, "layer_norm_eps", 1e-12, "layer_norm_eps", 1e-12, 0, NULL},
    {ATTN_HP_PAD_ID, "pad_token_id", 0, "pad_token_id", 0, 0, NULL},
    {ATTN_HP_MLM_HEAD, "mlm_head", 1, NULL, 1, 0, NULL},
    {ATTN_HP_POOLER, "pooler", 0, NULL, 1, 0, NULL},
};

void attn__spec_encoder(const attn_lm_config *c, attn_lm_spec *s) {
    *s = (attn_lm_spec){.norm = ATTN_LM_LAYERNORM, .norm_eps = c->norm_eps, .learned_pos = 1,
                        .qkv_bias = 1, .o_bias = 1, .act = c->act, .mlp_bias = 1,
                        .tied = c->mlm_head, .bidirectional = 1, .post_norm = 1,
                        .pad_id = c->pad_id, .type_vocab = c->type_vocab, .mlm_head = c->mlm_head,
                        .head_act = c->act, .pooler = c->pooler};
}

int attn__bert_describe(const attn_lm_config *c, attn_lm_spec *s, attn_error *err) {
    if (c->head_dim * c->n_head != c->width || c->n_kv_head != c->n_head)
        return attn__fail(err, ATTN_ERR_SHAPE, "num_attention_heads",
                          "BERT's heads split hidden_size, one key/value head each");
    if (c->pad_id < 0 || c->pad_id >= c->vocab_size)
        return attn__fail(err, ATTN_ERR_ARG, "pad_token_id", "pad_token_id %d is not a token of "
                          "vocab_size %d", c->pad_id, c->vocab_size);
    attn__spec_encoder(c, s);
    return ATTN_OK;
}

#define C ATTN__DIM_C
static const attn__tensor top[] = {
    {ATTN__TOK_EMB, "bert.embeddings.word_embeddings.weight", 2, {ATTN__DIM_V, C}, ATTN__INIT_NORMAL,
     0, ATTN__ALWAYS},
    {ATTN__POS_EMB, "bert.embeddings.position_embeddings.weight", 2, {ATTN__DIM_CTX, C},
     ATTN__INIT_NORMAL, 0, ATTN__ALWAYS},
    {ATTN__TYPE_EMB, "bert.embeddings.token_type_embeddings.weight", 2, {ATTN__DIM_TYPES, C},
     ATTN__INIT_NORMAL, 0, ATTN__IF_TYPES},
    {ATTN__EMB_NORM_W, "bert.embeddings.LayerNorm.weight", 1, {C}, ATTN__INIT_ONES, 0, ATTN__ALWAYS},
    {ATTN__EMB_NORM_B, "bert.embeddings.LayerNorm.bias", 1, {C}, ATTN__INIT_ZEROS, 0, ATTN__ALWAYS},
};

const attn__tensor attn__bert_block[ATTN__BERT_BLOCK_N] = {
    {ATTN__Q_W, "attention.self.query.weight", 2, {C, C}, ATTN__INIT_KAIMING, 0, ATTN__ALWAYS},
    {ATTN__Q_B, "attention.self.query.bias", 1, {C}, ATTN__INIT_BIAS, C, ATTN__ALWAYS},
    {ATTN__K_W, "attention.self.key.weight", 2, {C, C}, ATTN__INIT_KAIMING, 0, ATTN__ALWAYS},
    {ATTN__K_B, "attention.self.key.bias", 1, {C}, ATTN__INIT_BIAS, C, ATTN__ALWAYS},
    {ATTN__V_W, "attention.self.value.weight", 2, {C, C}, ATTN__INIT_KAIMING, 0, ATTN__ALWAYS},
    {ATTN__V_B, "attention.self.value.bias", 1, {C}, ATTN__INIT_BIAS, C, ATTN__ALWAYS},
    {ATTN__O_W, "attention.output.dense.weight", 2, {C, C}, ATTN__INIT_KAIMING, 0, ATTN__ALWAYS},
    {ATTN__O_B, "attention.output.dense.bias", 1, {C}, ATTN__INIT_BIAS, C, ATTN__ALWAYS},
    {ATTN__NORM1_W, "attention.output.LayerNorm.weight", 1, {C}, ATTN__INIT_ONES, 0, ATTN__ALWAYS},
    {ATTN__NORM1_B, "attention.output.LayerNorm.bias", 1, {C}, ATTN__INIT_ZEROS, 0, ATTN__ALWAYS},
    {ATTN__UP_W, "intermediate.dense.weight", 2, {ATTN__DIM_F, C}, ATTN__INIT_KAIMING, 0, ATTN__ALWAYS},
    {ATTN__UP_B, "intermediate.dense.bias", 1, {ATTN__DIM_F}, ATTN__INIT_BIAS, C, ATTN__ALWAYS},
    {ATTN__DOWN_W, "output.dense.weight", 2, {C, ATTN__DIM_F}, ATTN__INIT_KAIMING, 0, ATTN__ALWAYS},
    {ATTN__DOWN_B, "output.dense.bias", 1, {C}, ATTN__INIT_BIAS, ATTN__DIM_F, ATTN__ALWAYS},
    {ATTN__NORM2_W, "output.LayerNorm.weight", 1, {C}, ATTN__INIT_ONES, 0, ATTN__ALWAYS},
    {ATTN__NORM2_B, "output.LayerNorm.bias", 1, {C}, ATTN__INIT_ZEROS, 0, ATTN__ALWAYS},
};

/* BertForPreTraining's order: the base model (its pooler last), then
 * cls.predictions (its bias, then the transform; the decoder is tied). */
static const attn__tensor tail[] = {
    {ATTN__POOLER_W, "bert.pooler.dense.weight", 2, {C, C}, ATTN__INIT_KAIMING, 0, ATTN__IF_POOLER},
    {ATTN__POOLER_B, "bert.pooler.dense.bias", 1, {C}, ATTN__INIT_BIAS, C, ATTN__IF_POOLER},
    {ATTN__HEAD_B, "cls.predictions.bias", 1, {ATTN__DIM_V}, ATTN__INIT_ZEROS, 0, ATTN__IF_MLM},
    {ATTN__HEAD_DENSE_W, "cls.predictions.transform.dense.weight", 2, {C, C}, ATTN__INIT_KAIMING, 0,
     ATTN__IF_MLM},
    {ATTN__HEAD_DENSE_B, "cls.predictions.transform.dense.bias", 1, {C}, ATTN__INIT_BIAS, C,
     ATTN__IF_MLM},
    {ATTN__HEAD_NORM_W, "cls.predictions.transform.LayerNorm.weight", 1, {C}, ATTN__INIT_ONES, 0,
     ATTN__IF_MLM},
    {ATTN__HEAD_NORM_B, "cls.predictions.transform.LayerNorm.bias", 1, {C}, ATTN__INIT_ZEROS, 0,
     ATTN__IF_MLM},
};
#undef C

/* What BertForPreTraining's and older checkpoints hold besides. */
static const char *const ignored[] = {"bert.embeddings.position_ids", "bert.embeddings.token_type_ids",
                                      "cls.predictions.decoder.bias", "cls.seq_relationship.weight",
                                      "cls.seq_relationship.bias", NULL};

const attn__layout attn__bert_layout = {
    .top = top,
    .n_top = sizeof top / sizeof top[0],
    .block_prefix = "bert.encoder.layer.%d.",
    .block = attn__bert_block,
    .n_block = ATTN__BERT_BLOCK_N,
    .tail = tail,
    .n_tail = sizeof tail / sizeof tail[0],
    .tied_head = "cls.predictions.decoder.weight",
    .base_prefix = "bert.",
    .ignored = ignored,
};

static const char *const aliases[] = {"BertForPreTraining", "bert", NULL};

const attn__arch attn__arch_bert = {
    .name = "BertForMaskedLM",
    .aliases = aliases,
    .what = "BERT with its MLM head (transformers' modeling_bert.py)",
    .ctor = "BertForMaskedLM(config)",
    .hparams = hparams,
    .n_hparams = sizeof hparams / sizeof hparams[0],
    .describe = attn__bert_describe,
    .layout = &attn__bert_layout,
};
