/* bertmodel.c - BertModel (transformers' modeling_bert.py): BERT's base
 * model, what sentence-transformers' BERTs (all-MiniLM-L6-v2) are: BERT's
 * row (bert.c: its blocks, its state_dict, the MLM head a part a checkpoint
 * may hold) under its own class name, the pooler on and no MLM head unless
 * the request or the file says so. Its hidden states, hooks, pooler_output
 * and pooled embeddings are what it gives; logits need the MLM head. */
#include "core/arch/arch.h"

/* BertConfig's names and defaults (bert.c's), the parts the other way. */
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
    {ATTN_HP_MLM_HEAD, "mlm_head", 0, NULL, 1, 0, NULL},
    {ATTN_HP_POOLER, "pooler", 1, NULL, 1, 0, NULL},
};

static const char *const aliases[] = {NULL};

const attn__arch attn__arch_bertmodel = {
    .name = "BertModel",
    .aliases = aliases,
    .what = "BertModel, BERT's base model (transformers' modeling_bert.py): sentence-transformers' "
            "BERTs (all-MiniLM-L6-v2)",
    .ctor = "BertModel(config)",
    .hparams = hparams,
    .n_hparams = sizeof hparams / sizeof hparams[0],
    .describe = attn__bert_describe,
    .layout = &attn__bert_layout,
};
