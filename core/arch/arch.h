/* arch.h - an architecture as a row (private to core/, prefix attn__):
 * what core/arch/<name>.c states about a model family, and what the rest of
 * core reads instead of asking which family a model is.
 *
 * A row says:
 *   - its names (the class requests spell, the names a config.json gives);
 *   - its hyperparameters, under its own names, with their defaults
 *     (attn_arch_hparam, lm.h);
 *   - describe(): the checks only it makes, and the layers a block is made
 *     of (attn_lm_spec: the norm, the positions, biases, the activation,
 *     where dropout acts), from a config;
 *   - its state_dict: the tensors of the model before the blocks, of one
 *     block and after them, in PyTorch's order, each with the role it plays
 *     in the forward pass, its shape in the model's dimensions, when it is
 *     there (a bias only with qkv_bias, a head only when untied) and how
 *     torch.manual_seed + the constructor fill it;
 *   - the names of its dropout modules, for the dropout_masks output.
 * core/lm/ composes every model from these rows and the shared layers of
 * core/layers/.
 */
#ifndef ATTN_ARCH_H
#define ATTN_ARCH_H

#include "core/internal.h"
#include "core/lm.h"

/* What a tensor is for: the forward pass finds its weights by role. */
typedef enum {
    /* before the blocks */
    ATTN__TOK_EMB, ATTN__POS_EMB,
    ATTN__TYPE_EMB,             /* token types [type_vocab][C] (BERT's segments) */
    ATTN__EMB_NORM_W, ATTN__EMB_NORM_B, /* a norm of the embeddings' sum (BERT) */
    /* a block */
    ATTN__NORM1_W, ATTN__NORM1_B, ATTN__MASK,
    ATTN__Q_W, ATTN__Q_B, ATTN__K_W, ATTN__K_B, ATTN__V_W, ATTN__V_B,
    ATTN__QKV_W, ATTN__QKV_B,   /* the three as one [QD + 2 KVD][C] matrix, q then k then v */
    ATTN__Q_NORM, ATTN__K_NORM, /* RMSNorms [D] of each query and key head (before RoPE) */
    ATTN__O_W, ATTN__O_B,
    ATTN__POST1_W,              /* a norm of the attention's output before the add (Gemma) */
    ATTN__NORM2_W, ATTN__NORM2_B,
    ATTN__GATE_W, ATTN__GATE_B, /* a gated MLP's gate (gate_proj) */
    ATTN__UP_W, ATTN__UP_B,     /* the MLP's first layer (fc, c_fc, up_proj) */
    ATTN__DOWN_W, ATTN__DOWN_B, /* its second (proj, c_proj, down_proj) */
    ATTN__POST2_W,              /* a norm of the MLP's output before the add (Gemma) */
    /* after the blocks */
    ATTN__FINAL_NORM_W, ATTN__FINAL_NORM_B, ATTN__HEAD_W,
    ATTN__POOLER_W, ATTN__POOLER_B,         /* tanh(dense(x)) of the first token */
    ATTN__HEAD_DENSE_W, ATTN__HEAD_DENSE_B, /* an MLM head's transform: dense, act, */
    ATTN__HEAD_NORM_W, ATTN__HEAD_NORM_B,   /* its norm, */
    ATTN__HEAD_B,                           /* then the head (tied) with this bias */
    ATTN__ROLE_COUNT
} attn__role;

/* A dimension of a tensor, in the model's sizes. */
typedef enum {
    ATTN__DIM_1 = 0, /* 1 (an axis of length one: GPT-2's [1][1][n][n] buffer) */
    ATTN__DIM_V,     /* vocabulary */
    ATTN__DIM_CTX,   /* context (positions) */
    ATTN__DIM_C,     /* width */
    ATTN__DIM_F,     /* the MLP's width */
    ATTN__DIM_QD,    /* H * D */
    ATTN__DIM_KVD,   /* Hkv * D */
    ATTN__DIM_QKV,   /* QD + 2 KVD */
    ATTN__DIM_D,     /* a head's width */
    ATTN__DIM_TYPES, /* token types */
} attn__dim;

/* How the constructor fills a tensor after torch.manual_seed, in table order
 * (which is construction order for a row with seeded set). */
typedef enum {
    ATTN__INIT_NORMAL = 0, /* nn.Embedding: normal_(0, 1) */
    ATTN__INIT_KAIMING,    /* nn.Linear weight: kaiming_uniform_(a=sqrt(5)) on [out][in] */
    ATTN__INIT_BIAS,       /* nn.Linear bias: U(-1/sqrt(fan_in), 1/sqrt(fan_in)) */
    ATTN__INIT_ONES,       /* a norm's weight */
    ATTN__INIT_ZEROS,      /* a norm's bias */
    ATTN__INIT_TRIL,       /* buffer torch.tril(ones): 1 = allowed (gpt2_min.py's "bias") */
    ATTN__INIT_TRIU,       /* buffer torch.triu(ones, diagonal=1): 1 = masked (the book's "mask") */
} attn__init;

/* When a tensor is part of the state_dict (a flag of the spec). */
typedef enum {
    ATTN__ALWAYS = 0,
    ATTN__IF_QKV_BIAS,   /* spec.qkv_bias */
    ATTN__IF_O_BIAS,     /* spec.o_bias */
    ATTN__IF_MLP_BIAS,   /* spec.mlp_bias */
    ATTN__IF_UNTIED,     /* !spec.tied */
    ATTN__IF_QK_NORM,    /* spec.qk_norm */
    ATTN__IF_TYPES,      /* spec.type_vocab > 0 */
    ATTN__IF_MLM,        /* spec.mlm_head */
    ATTN__IF_POOLER,     /* spec.pooler */
} attn__when;

/* One tensor of a state_dict. */
typedef struct {
    attn__role role;
    const char *name;    /* after the block's prefix for a block's tensors */
    int rank;
    attn__dim dims[4];
    attn__init init;
    attn__dim fan_in;    /* ATTN__INIT_BIAS: its layer's inputs */
    attn__when when;
} attn__tensor;

/* A state_dict: the tensors before the blocks, of one block (each block's
 * names after its prefix) and after them, in PyTorch's order. */
typedef struct {
    const attn__tensor *top;
    int n_top;
    const char *block_prefix;          /* printf format of a block's prefix: "h.%d." */
    const attn__tensor *block;
    int n_block;
    const attn__tensor *tail;
    int n_tail;
    const char *tied_head;             /* the state_dict name of a tied head: "lm_head.weight" */
    const char *base_prefix;           /* the base model's prefix ("bert."), or NULL */
    const char *const *ignored;        /* names a checkpoint may hold that the model does not
                                          use (NULL-terminated; may be NULL) */
} attn__layout;

/* The names of a model's dropout modules, in draw order. */
typedef struct {
    const char *emb;        /* after the embeddings: "drop", "drop_emb" */
    const char *weights;    /* on a block's attention weights (spec.weight_dropout) */
    const char *attn_out;   /* on the attention's output, before the residual add */
    const char *mlp_out;    /* on the MLP's output */
} attn__dropout_names;

/* An architecture. */
typedef struct {
    const char *name;                  /* the class requests spell: "GPT2" */
    const char *const *aliases;        /* other names, NULL-terminated */
    const char *const *config_off;     /* config.json keys that must be absent, null, false or
                                          0 (attn_arch_config_off); NULL: none */
    const char *what;                  /* one line for people */
    const char *ctor;                  /* the constructor's call: "GPT2(config)" */
    const attn_arch_hparam *hparams;   /* in reply order */
    int n_hparams;
    /* Checks cfg (defaults filled, the generic checks passed) and fills spec.
     * ATTN_OK or an error naming the row's field. */
    int (*describe)(const attn_lm_config *cfg, attn_lm_spec *spec, attn_error *err);
    const attn__layout *layout;        /* its state_dict */
    int seeded;                        /* table order is construction order: a seed builds it */
    int tied_head_draws;               /* the head draws its own weight before it is tied
                                          (GPT2's lm_head: V * C draws thrown away) */
    attn__dropout_names dropout;       /* none (NULL emb): eval mode only */
} attn__arch;

/* The parts of a spec most rows take straight from the config (common.c):
 * rotary positions (int(head_dim * rotary_pct) dims, even; the bases, the
 * scaling), the window (sliding_window, global_every), the activation and
 * the norms' epsilon, the biases (attention_bias on q/k/v/o, mlp_bias) and
 * the tied head. ATTN_OK, or an error naming field for a rotation the row
 * cannot make (odd dims, a base <= 0, llama3 scaling without its factors). */
int attn__spec_common(const attn_lm_config *c, attn_lm_spec *s, attn_error *err);
/* The hidden_act names rows accept (common.c): the SiLU families' (Llama's
 * and its kin's) and the GELU families' (BERT's, RoBERTa's, GPT-NeoX's). */
extern const char *const attn__acts_silu[], *const attn__acts_gelu[];

/* The encoders' parts of a spec (bert.c): post-LN blocks, two-way attention,
 * LayerNorm with the config's epsilon, biases everywhere, learned positions,
 * token types, the MLM head (tied) and the pooler as the config says. */
void attn__spec_encoder(const attn_lm_config *c, attn_lm_spec *s);
/* BERT's block (bert.c), which RoBERTa shares: attention.self.query/key/value,
 * attention.output.dense and .LayerNorm, intermediate.dense, output.dense and
 * .LayerNorm. */
#define ATTN__BERT_BLOCK_N 16
extern const attn__tensor attn__bert_block[ATTN__BERT_BLOCK_N];
/* BERT's checks and spec, and its state_dict, which BertModel shares. */
int attn__bert_describe(const attn_lm_config *c, attn_lm_spec *s, attn_error *err);
extern const attn__layout attn__bert_layout;

/* Llama's state_dict (llama.c), which Mistral, Qwen2 and Qwen3 share: the
 * embedding, each model.layers.N.{self_attn (q/k/v/o_proj, their biases as
 * the spec says, q_norm and k_norm with qk_norm), mlp (gate/up/down_proj),
 * input_layernorm, post_attention_layernorm}, model.norm, lm_head. */
extern const attn__layout attn__llama_layout;
/* Llama's spec (llama.c): spec_common's, RMSNorm, the gated MLP, dropout on
 * the attention weights; Mistral and the Qwens add their own to it. */
int attn__llama_describe(const attn_lm_config *c, attn_lm_spec *s, attn_error *err);

/* The rows, by attn_arch (arch.c, from ATTN_ARCH_MAP). NULL out of range. */
const attn__arch *attn__arch_get(attn_arch a);

/* The name architecture a gives hyperparameter h in requests (its row's
 * name column), or NULL when a does not take h. */
const char *attn__hparam_name(const attn__arch *a, attn_hparam h);

/* Each row, defined in its file. */
#define ATTN_XX(id, sym) extern const attn__arch attn__arch_##sym;
ATTN_ARCH_MAP(ATTN_XX)
#undef ATTN_XX

#endif
