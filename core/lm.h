/* lm.h - whole language models (prefix attn_lm_, architectures attn_arch_):
 * an architecture is a row (core/arch/), a model is a configuration of one,
 * and one block function runs every layer of every architecture, for the
 * forward pass, the cached step over rows of many sequences and the runs
 * that look inside (hooks, ablation, patching, the logit lens).
 *
 *   attn_lm_config cfg;
 *   attn_lm_config_defaults(ATTN_ARCH_GPTMODEL, &cfg);  the row's defaults
 *   cfg.vocab_size = 50257; cfg.context = 1024;
 *   attn_lm_plan plan;
 *   attn_lm_plan_make(&cfg, B, T, 0, &plan, &err);       validate, size, cost
 *   float *params = malloc(plan.param_bytes);
 *   attn_rng rng; attn_rng_seed(&rng, 123);
 *   attn_lm_params_init(&plan, params, &rng, &err);      GPTModel(cfg), bit for bit
 *   attn_lm_outputs out = {.logits = logits};
 *   attn_lm_forward(&plan, params, idx, pool, NULL, &out, &err);
 *
 * The parameter buffer holds every tensor of the state_dict, in its order,
 * each where attn_lm_param_get says (byte_offset, dtype). With
 * cfg.weights_dtype F16 or BF16 its weight matrices (the embeddings, the
 * projections, the head: every rank-2 parameter) are half-size, widened to
 * float32 inside the products: the results are those of the float32 copy of
 * the same values (the few-row products of a step up to the order of their
 * sums); attn_lm_params_convert makes one layout from another.
 *
 * Everything here is reentrant, allocates only the work space of a call
 * (or the cache it is asked to create), and reports failures as
 * attn_status codes with the field at fault, as the rest of core does.
 * Code outside core/arch/ never asks which architecture a model is: it
 * reads the plan (sizes, costs, the tensors of attn_lm_param_get, the
 * dropout calls of attn_lm_dropout_get, the hooks a model has).
 */
#ifndef ATTN_LM_H
#define ATTN_LM_H

#include "attention.h"

/* ==== Activations ======================================================== */

typedef enum {
    ATTN_ACT_GELU_ERF = 0,  /* F.gelu(x): x/2 (1 + erf(x/sqrt 2)), the seed's */
    ATTN_ACT_GELU_TANH = 1, /* gelu_new / gelu_pytorch_tanh (tanh approximation): GPT-2's
                               checkpoints, the book's GELU class, Gemma */
    ATTN_ACT_SILU = 2,      /* x * sigmoid(x): Llama, Mistral, Qwen */
    ATTN_ACT_RELU = 3,
    ATTN_ACT_COUNT
} attn_act;

/* A config's name of an activation: "gelu", "gelu_new", "silu", "relu"
 * (the first of the names attn_act_from_name takes). */
const char *attn_act_name(attn_act a);
/* "gelu" (erf); "gelu_new", "gelu_pytorch_tanh" (tanh); "silu", "swish";
 * "relu". ATTN_OK or ATTN_ERR_ARG. */
int attn_act_from_name(const char *name, attn_act *out);

/* ==== Architectures ====================================================== */

/* Every architecture, each a file of core/arch/ (its row: hyperparameters
 * and their names, tensors, layers, initialisation):
 *   XX(ID, symbol)   ID: enum suffix ATTN_ARCH_<ID>; symbol: the row is
 *                    attn__arch_<symbol>, defined in core/arch/<symbol>.c
 * Adding an architecture: its file, a row here, and (when a checkpoint's
 * tensor names are not the row's) its name table in api/weights/. */
#define ATTN_ARCH_MAP(XX)                                                                          \
    XX(GPT2, gpt2)                                                                                 \
    XX(GPTMODEL, gptmodel)                                                                         \
    XX(LLAMA, llama)                                                                               \
    XX(MISTRAL, mistral)                                                                           \
    XX(QWEN2, qwen2)                                                                               \
    XX(QWEN3, qwen3)                                                                               \
    XX(GPTNEOX, gptneox)                                                                           \
    XX(GEMMA3, gemma3)                                                                             \
    XX(BERT, bert)                                                                                 \
    XX(BERTMODEL, bertmodel)                                                                       \
    XX(ROBERTA, roberta)                                                                           \
    XX(DISTILBERT, distilbert)

typedef enum {
#define ATTN_XX(id, sym) ATTN_ARCH_##id,
    ATTN_ARCH_MAP(ATTN_XX)
#undef ATTN_XX
    ATTN_ARCH_COUNT
} attn_arch;

/* The class name requests spell ("GPT2", "GPTModel"); NULL out of range. */
const char *attn_arch_name(attn_arch a);
/* The architecture called name: its class name, or another name a
 * config.json gives it (its "architectures" class or "model_type", e.g.
 * "GPT2LMHeadModel", "gpt2"). ATTN_OK or ATTN_ERR_ARG. */
int attn_arch_from_name(const char *name, attn_arch *out);
/* The names the row answers to after its class name, NULL-terminated. */
const char *const *attn_arch_aliases(attn_arch a);
/* The config.json keys a's folders must leave absent, null, false or 0:
 * what the row does not compute (Gemma 2's logit softcapping, EmbeddingGemma's
 * two-way attention), so that a folder asking for it is refused rather than
 * run wrongly. NULL-terminated; never NULL. */
const char *const *attn_arch_config_off(attn_arch a);
/* One line on what the row is ("seed 003's GPT2 (gpt2_min.py)"), and its
 * constructor's call as Python spells it ("GPT2(config)", "GPTModel(cfg)"). */
const char *attn_arch_what(attn_arch a);
const char *attn_arch_ctor(attn_arch a);

/* ==== Hyperparameters ==================================================== */

/* Rotary position embeddings (Hugging Face's rope_theta, rope_scaling,
 * partial_rotary_factor), the halves layout (rotate_half). */
typedef enum {
    ATTN_ROPE_DEFAULT = 0,
    ATTN_ROPE_LINEAR = 1,  /* inv_freq / factor */
    ATTN_ROPE_LLAMA3 = 2,  /* Llama 3.1's frequency bands */
} attn_rope_type;


typedef enum {
    ATTN_HP_INT = 0,   /* an int >= the row's minimum */
    ATTN_HP_REAL,      /* a double (probabilities in [0, 1]) */
    ATTN_HP_BOOL,      /* 0 or 1 */
    ATTN_HP_ACT,       /* an attn_act, named by the row's choices */
    ATTN_HP_ROPE,      /* Hugging Face's rope_scaling object: its type and factors into the
                          config's rope_* fields (get and set read and write its type) */
    ATTN_HP_PATTERN,   /* Gemma's layer_types list ("sliding_attention", "full_attention")
                          into the config's layer_list and local_layers */
    ATTN_HP_PART,      /* 0 or 1: a part of the model (its tensors) is there or not; a
                          loaded checkpoint has it when its file holds its tensors */
} attn_hp_type;

/* The hyperparameters any architecture may have, the single list of them:
 *   XX(ID, field of attn_lm_config, type, what)
 * A row of an architecture says which it takes, under which names. */
#define ATTN_LM_HPARAM_MAP(XX)                                                                     \
    XX(VOCAB, vocab_size, INT, "tokens in the vocabulary")                                         \
    XX(CONTEXT, context, INT, "positions the model takes (its position table's rows)")             \
    XX(LAYERS, n_layer, INT, "transformer blocks")                                                 \
    XX(HEADS, n_head, INT, "attention heads (query heads)")                                        \
    XX(KV_HEADS, n_kv_head, INT, "key/value heads (grouped-query attention); 0: n_head")           \
    XX(WIDTH, width, INT, "the residual stream's width")                                           \
    XX(HEAD_DIM, head_dim, INT, "each head's width; 0: width / n_head")                            \
    XX(FFN, ffn, INT, "the MLP's hidden width; 0: 4 x width")                                      \
    XX(DROPOUT, dropout, REAL, "p of every dropout of the model (training mode)")                  \
    XX(QKV_BIAS, qkv_bias, BOOL, "the query, key and value projections have biases")               \
    XX(ACTIVATION, act, ACT, "the MLP's activation")                                               \
    XX(NORM_EPS, norm_eps, REAL, "the norms' epsilon; 0: 1e-5")                                    \
    XX(TIED, tied, BOOL, "the output head is the token embedding")                                 \
    XX(ATTN_BIAS, attn_bias, BOOL, "biases of the query, key, value and output projections")      \
    XX(MLP_BIAS, mlp_bias, BOOL, "biases of the MLP's projections")                                \
    XX(ROPE_THETA, rope_theta, REAL, "the rotary positions' base")                                 \
    XX(ROPE_SCALING, rope_type, ROPE, "rope_scaling: linear or llama3 frequencies")                \
    XX(ROTARY_PCT, rotary_pct, REAL, "the fraction of each head's dims rotated; 0: all")           \
    XX(ROPE_LOCAL_THETA, rope_local_theta, REAL, "the base of local layers; 0: rope_theta")       \
    XX(SLIDING_WINDOW, window, INT, "keys a local layer sees, itself included; 0: all")            \
    XX(USE_WINDOW, use_window, BOOL, "Qwen2's use_sliding_window: the window is used")             \
    XX(WINDOW_FROM, window_from, INT, "with a window, the layers before this one see all")         \
    XX(GLOBAL_EVERY, global_every, INT, "with a window, every n-th layer sees all; 0: none does")  \
    XX(LAYER_TYPES, layer_list, PATTERN, "each layer sliding_attention or full_attention")       \
    XX(QUERY_SCALAR, query_scalar, REAL, "scores scaled by its -1/2 power; 0: head_dim's")          \
    XX(PARALLEL, parallel, BOOL, "the attention and the MLP both read the block's input")         \
    XX(TYPE_VOCAB, type_vocab, INT, "token types (segment embeddings' rows); 0: none")              \
    XX(PAD_ID, pad_id, INT, "the padding token (RoBERTa's positions count past it)")                \
    XX(MLM_HEAD, mlm_head, PART, "the masked-language-model head (an encoder's logits)")           \
    XX(POOLER, pooler, PART, "the pooler: tanh(dense(x)) of the first token (BertModel's)")

typedef enum {
#define ATTN_XX(id, field, type, what) ATTN_HP_##id,
    ATTN_LM_HPARAM_MAP(ATTN_XX)
#undef ATTN_XX
    ATTN_HP_COUNT
} attn_hparam;

/* The most layers a list of local and global layers may name (a longer
 * model gives its pattern as a rule: global_every). */
#define ATTN_LM_LIST_LAYERS 256

/* A model's configuration: every hyperparameter of ATTN_LM_HPARAM_MAP
 * (those its architecture does not take keep their defaults). A zeroed
 * config is seed 003's GPT2 with every size still to set. */
typedef struct {
    attn_arch arch;
    int vocab_size;
    int context;      /* GPT2: block_size; GPTModel: context_length */
    int n_layer;      /* may be 0 */
    int n_head;
    int n_kv_head;    /* 0: n_head */
    int width;        /* GPT2: n_embd; GPTModel: emb_dim */
    int head_dim;     /* 0: width / n_head */
    int ffn;          /* 0: 4 x width */
    double dropout;
    int qkv_bias;
    attn_act act;
    double norm_eps;  /* 0: 1e-5 */
    int tied, attn_bias, mlp_bias, parallel;
    double rope_theta;
    int rope_type;    /* an attn_rope_type */
    double rope_factor, rope_low_freq_factor, rope_high_freq_factor, rope_original_context;
    double rotary_pct;       /* 0: 1 */
    double rope_local_theta; /* 0: rope_theta */
    int window, global_every;
    int use_window, window_from;
    int layer_list;          /* the layers' kinds listed one by one (below) instead of a rule */
    unsigned char local_layers[ATTN_LM_LIST_LAYERS / 8]; /* bit l: layer l local */
    double query_scalar;     /* 0: head_dim */
    int type_vocab;          /* 0: no token types */
    int pad_id;
    int mlm_head, pooler;    /* an encoder's parts */
    attn_dtype weights_dtype; /* how the parameter buffer holds the weight matrices (every
                                 rank-2 parameter); norms, biases and buffers are float32
                                 whatever it says. 0: F32. Not a hyperparameter: the same
                                 model, stored smaller */
} attn_lm_config;

/* One hyperparameter an architecture takes. A default of NAN means
 * required: a request (or a config.json) that leaves it out is refused. */
typedef struct {
    attn_hparam id;
    const char *name;        /* its name in requests (the Python class's argument); NULL: a
                                request cannot set it (it keeps `def`) */
    double def;              /* the default when a request leaves it out */
    const char *config_name; /* its name in a config.json; NULL: not read from one */
    double config_def;       /* the default when a config.json leaves it out */
    int min;                 /* ATTN_HP_INT: the least value */
    const char *const *choices; /* ATTN_HP_ACT: the names taken, NULL-terminated */
} attn_arch_hparam;

/* The hyperparameters of a, in the order its replies list them: *list gets
 * the row's array; returns how many (0 for an a out of range). */
int attn_arch_hparams(attn_arch a, const attn_arch_hparam **list);
/* The type, field name and description of h; NULL out of range. */
attn_hp_type attn_hparam_type(attn_hparam h);
const char *attn_hparam_field(attn_hparam h);
const char *attn_hparam_what(attn_hparam h);
/* Reads and writes a config's hyperparameter as a double (ints, bools and
 * activations exactly). set writes only a value of the right kind: ATTN_OK,
 * or ATTN_ERR_ARG for a value that is not an integer of the field's range. */
double attn_lm_config_get(const attn_lm_config *c, attn_hparam h);
int attn_lm_config_set(attn_lm_config *c, attn_hparam h, double v);
/* c = the request defaults of architecture a (sizes that are required stay
 * 0); config_json 1: the config.json defaults instead. */
void attn_lm_config_defaults(attn_arch a, attn_lm_config *c);
void attn_lm_config_json_defaults(attn_arch a, attn_lm_config *c);

/* ==== What a block does ================================================== */

/* The layers of a model, derived by its architecture from its config (the
 * plan's spec): what the one block function composes. */
typedef enum {
    ATTN_LM_LAYERNORM = 0,     /* nn.LayerNorm: (x - mean) * rsqrt(var + eps) * w + b */
    ATTN_LM_LAYERNORM_DIV = 1, /* the book's LayerNorm: (x - mean) / sqrt(var + eps) * scale + shift */
    ATTN_LM_RMSNORM = 2,       /* x * rsqrt(mean(x^2) + eps) * w (Llama's, in float32) */
    ATTN_LM_RMSNORM_1P = 3,    /* Gemma's: x * rsqrt(mean(x^2) + eps) * (1 + w) */
} attn_lm_norm;

typedef struct {
    int dims;              /* rotated dims of each head (even; 0: no rotary positions) */
    double theta;          /* the base */
    double local_theta;    /* the base of local (sliding-window) layers; 0: theta */
    attn_rope_type type;
    double factor, low_freq_factor, high_freq_factor, original_context;
} attn_lm_rope;

typedef struct {
    attn_lm_norm norm;     /* every norm of the model */
    double norm_eps;
    int learned_pos;       /* a position table is added to the token embeddings */
    float emb_scale;       /* 0: none; else the token embeddings are multiplied by it */
    attn_lm_rope rope;
    int qkv_bias, o_bias;  /* biases of the query/key/value and output projections */
    int qk_norm;           /* each query and key head normalised (the model's norm) before
                              its rotation (Qwen3, Gemma 3) */
    float attn_scale;      /* the scores' scale; 0: 1 / sqrt(head_dim) */
    int window;            /* the sliding window of local layers (0: every layer sees all) */
    int global_every;      /* with a window: layers l with (l + 1) % global_every == 0 see
                              all (and use rope.theta); 0: every layer is local */
    attn_act act;          /* the MLP's activation */
    int gated;             /* down(act(gate(x)) * up(x)) instead of down(act(up(x))) */
    int mlp_bias;          /* biases of the MLP's projections */
    int parallel;          /* x + attn(norm1(x)) + mlp(norm2(x)) in one step (GPT-NeoX) */
    int qkv_per_head;      /* one fused projection whose rows are [H][3][D] (GPT-NeoX's
                              query_key_value), not q, then k, then v */
    int window_from;       /* with a window: the layers before it see all (Qwen2's
                              max_window_layers) */
    int layer_list;        /* with a window: local_layers says which layers are local */
    unsigned char local_layers[ATTN_LM_LIST_LAYERS / 8];
    int tied;              /* the output head is the token embedding */
    /* dropout (training mode, p = the config's dropout), in PyTorch's draw
     * order: after the embeddings; per block on the attention weights (when
     * weight_dropout), then on the attention's output and on the MLP's */
    int weight_dropout;
    /* encoders (BERT, RoBERTa, DistilBERT) */
    int bidirectional;     /* every query sees every key (no causal mask) */
    int post_norm;         /* x = norm1(x + attn(x)); x = norm2(x + mlp(x)): the norms after
                              each residual add (BERT's BertSelfOutput and BertOutput) */
    int pos_after_pad;     /* positions count from pad_id + 1 over the tokens that are not
                              pad_id (RoBERTa's create_position_ids_from_input_ids) */
    int pad_id;
    int type_vocab;        /* token types: a [type_vocab][C] table added (0: none) */
    int mlm_head;          /* an encoder's head: dense, act, norm, then the tied embedding
                              with its own bias */
    attn_act head_act;     /* that dense's activation */
    int pooler;            /* tanh(dense(x)) of each row's first token */
} attn_lm_spec;

/* ==== Plan: validated sizes and costs ==================================== */

/* Every size of one call of the model on [B][T] tokens. */
typedef struct {
    attn_lm_config cfg;   /* with every default filled in */
    attn_lm_spec spec;
    int B, T;             /* batch rows and positions of the call */
    int C, H, Hkv, D, F, V, n_layer; /* width, heads, key/value heads, head width, MLP
                                        width, vocabulary, blocks */
    int QD, KVD;          /* H * D, Hkv * D: the query and key/value projections' widths */
    int training;
    int dropout_active;   /* training && 0 < p */
    int tied;             /* spec.tied */
    int head;             /* the model has an output head (logits): every decoder, an encoder
                             with its MLM head */
    int param_count;      /* state_dict entries, buffers included (a tied head excluded) */
    size_t n_params;      /* values of the parameter buffer, in state_dict order (floats
                             when cfg.weights_dtype is F32) */
    size_t param_bytes;   /* bytes of the parameter buffer: 4 n_params with F32 weights,
                             about half that with F16 or BF16 */
    size_t n_logits;      /* B * T * V */
    size_t n_hidden;      /* (n_layer + 1) * B * T * C */
    size_t n_attn;        /* n_layer * B * H * T * T */
    size_t n_dropout;     /* floats of attn_lm_outputs.dropout_masks */
    size_t total_elements;/* an upper bound on every float of the call, outputs included */
    double ops;           /* multiply-adds of the forward pass (attn_lm_ops over every
                             position, every position's logits) */
    attn_config attn;     /* one block's attention, for the kernels: SDPA-shaped [B][H][T][D] */
    attn_plan attn_plan;
} attn_lm_plan;

/* Validates cfg through its architecture (sizes >= 1, width and heads that
 * agree, dropout in [0, 1], tokens <= context, a known activation) and
 * sizes everything, overflow-checked. Errors name the architecture's own
 * field names ("context_length", "emb_dim", ... for GPTModel). */
int attn_lm_plan_make(const attn_lm_config *cfg, int batch, int tokens, int training,
                      attn_lm_plan *plan, attn_error *err);

/* The multiply-adds of `rows` positions through one block whose queries
 * each see `keys` keys on average (the projections, Q·Kᵀ and the weighted
 * sum with 64 per score for the softmax, the MLP), and of `logit_rows`
 * positions through the output head, in double: what limits and budgets
 * weigh requests by. attn_lm_ops(p, B*T, T, B*T) * ... : see plan->ops. */
double attn_lm_block_ops(const attn_lm_plan *p, double rows, double keys);
double attn_lm_head_ops(const attn_lm_plan *p, double logit_rows);

/* ==== Parameters: the state_dict ========================================= */

/* The index-th entry of the model's state_dict (0 <= index < param_count),
 * in PyTorch's order, under the architecture's names (GPT2: wte.weight,
 * wpe.weight, h.0.ln_1.weight, ...; GPTModel: tok_emb.weight, ...). A tied
 * head has no entry of its own (its name: attn_lm_tied_head_name). */
int attn_lm_param_get(const attn_lm_plan *plan, int index, attn_param *out);
/* The state_dict name of a tied head ("lm_head.weight"), or NULL when the
 * model's head is its own tensor. */
const char *attn_lm_tied_head_name(const attn_lm_plan *plan);
/* The base model's prefix of the state_dict names ("bert." of
 * BertForMaskedLM; transformers' base_model_prefix), which a checkpoint of
 * the base model alone (BertModel, sentence-transformers) leaves out; NULL
 * when the row has none. */
const char *attn_lm_base_prefix(const attn_lm_plan *plan);
/* 1 if a checkpoint may hold a tensor called name that this model does not
 * use (buffers such as embeddings.position_ids, BertForPreTraining's
 * next-sentence head, a tied decoder's bias saved twice), with or without
 * the base prefix; 0 otherwise. */
int attn_lm_ignored_name(const attn_lm_plan *plan, const char *name);

/* torch.manual_seed(s); Model(cfg): fills params (plan->n_params floats) bit
 * for bit in construction order, as the architecture's row says (GPT2 and
 * GPTModel: embeddings by normal_, Linear layers by kaiming-uniform and
 * uniform biases, LayerNorms with ones and zeros, then the head; GPT2 draws
 * lm_head's own weight and discards it). rng freshly seeded; it is left
 * where PyTorch's is. ATTN_ERR_ARG (field "init") for an architecture that
 * has no construction from a seed, (field "weights_dtype") for half-size
 * weights: make the float32 model, then attn_lm_params_convert. */
int attn_lm_params_init(const attn_lm_plan *plan, float *params, attn_rng *rng, attn_error *err);
/* Checks given parameters: finite, and buffers equal to what the model
 * registers (GPT2's tril attn.bias, GPTModel's triu att.mask). */
int attn_lm_params_check(const attn_lm_plan *plan, const void *params, attn_error *err);

/* ==== Weights' dtypes ===================================================== */

/* "F32", "F16", "BF16" (safetensors' names); NULL out of range. */
const char *attn_dtype_name(attn_dtype t);
/* Bytes of one value: 4 or 2; 0 out of range. */
size_t attn_dtype_size(attn_dtype t);
/* n values of dtype `from` at src as dtype `to` into dst: widening is
 * exact; float32 to F16 or BF16 rounds to nearest even (lossy: 11 and 8
 * significant bits; beyond F16's +-65504 is infinity). Any alignment. */
void attn_dtype_convert(attn_dtype to, void *dst, attn_dtype from, const void *src, size_t n);
/* The parameters src, laid out by plan `from`, into dst laid out by plan
 * `to` (to->param_bytes), each tensor converted as attn_dtype_convert does:
 * e.g. a float32 model's BF16 copy, or a half-size one widened. The plans
 * must be of one model, their configs equal but for weights_dtype
 * (ATTN_ERR_ARG, field "weights_dtype", otherwise). */
int attn_lm_params_convert(const attn_lm_plan *to, void *dst, const attn_lm_plan *from,
                           const void *src, attn_error *err);

/* ==== Dropout calls ====================================================== */

/* One dropout call of a training-mode forward pass, in draw order. */
typedef struct {
    char name[48];      /* the nn.Dropout module: "drop", "h.0.attn.resid_drop",
                           "trf_blocks.0.att.dropout", "trf_blocks.0.drop_shortcut.1" */
    int rank;           /* 3 or 4, batch axis first */
    int shape[4];       /* [B][T][C] or [B][H][T][T] */
    size_t offset;      /* in floats, into attn_lm_outputs.dropout_masks */
} attn_lm_dropout;

/* How many calls a forward pass of plan makes (1 + per block). */
int attn_lm_dropout_count(const attn_lm_plan *plan);
/* The index-th of them. ATTN_OK or ATTN_ERR_ARG. */
int attn_lm_dropout_get(const attn_lm_plan *plan, int index, attn_lm_dropout *out);

/* ==== Analyses: what each head does ====================================== */

/* The shape of an analysis, batch axis first:
 *   HEADS [B][n_layer][H]     one number per (query) head of each block
 *   MAPS  [B][n_layer][T][T]  one map per block */
typedef enum {
    ATTN_ANALYSIS_SHAPE_HEADS = 0,
    ATTN_ANALYSIS_SHAPE_MAPS = 1,
} attn_analysis_shape;

/* The analyses of a run, the one table of them (requests, replies, the
 * OpenAPI document and the docs read it):
 *   XX(id, name, shape, from_maps, what)
 * from_maps 1: computed from each block's attention weights as the forward
 * makes them (one block's maps held at a time, none when the maps are
 * returned anyway); 0: runs of its own after the forward (importance).
 * Every analysis is per batch row (a [B][T] call gives B sets, each exactly
 * what one sequence alone gives; averaging over rows, as TransformerLens's
 * detect_head does for a list of texts, is left to the caller). The
 * detectors are TransformerLens's detect_head with its defaults
 * (error_measure "mul", nothing excluded): sum(P * D) / sum(P) over one
 * head's [T][T] weights P and the detection pattern D. */
#define ATTN_ANALYSIS_MAP(XX)                                                                      \
    XX(ENTROPY, "entropy", HEADS, 1, "each query row's entropy in nats, -sum p ln p (0 ln 0 = 0), " \
       "averaged over the query positions")                                                        \
    XX(SINK, "sink", HEADS, 1, "the weight on position 0 averaged over the query positions "      \
       "1..T-1 (0 for T = 1)")                                                                     \
    XX(PREVIOUS_TOKEN, "previous_token", HEADS, 1, "TransformerLens's previous-token score: "      \
       "D[q][q-1] = 1")                                                                            \
    XX(DUPLICATE_TOKEN, "duplicate_token", HEADS, 1, "TransformerLens's duplicate-token score: "   \
       "D[q][k] = 1 for k < q holding q's token")                                                  \
    XX(INDUCTION, "induction", HEADS, 1, "TransformerLens's induction score: D[q][k] = 1 for "     \
       "1 <= k <= q where the token at k - 1 is an earlier occurrence of q's")                     \
    XX(ROLLOUT, "rollout", MAPS, 1, "attention rollout (Abnar & Zuidema 2020): per block the "    \
       "mean over heads plus the identity, rows renormalised, multiplied from the first block "    \
       "up (joint[l] = A[l] . joint[l-1]), every block's product")                                 \
    XX(IMPORTANCE, "importance", HEADS, 0, "the rise of the mean next-token cross-entropy "        \
       "(loss) when the head's hook_z is zeroed: one ablated run per head, from its block on")

typedef enum {
#define ATTN_XX(id, ...) ATTN_ANALYSIS_##id,
    ATTN_ANALYSIS_MAP(ATTN_XX)
#undef ATTN_XX
    ATTN_ANALYSIS_COUNT
} attn_analysis;

/* A row of ATTN_ANALYSIS_MAP. */
typedef struct {
    attn_analysis analysis;
    const char *name;          /* "entropy", "rollout", ... */
    attn_analysis_shape shape;
    int from_maps;
    const char *what;
} attn_analysis_info;

/* The row of a, or NULL if a is not an analysis. */
const attn_analysis_info *attn_analysis_get(attn_analysis a);
/* The analysis called name. ATTN_OK or ATTN_ERR_ARG. */
int attn_analysis_parse(const char *name, attn_analysis *a);
/* The rank (3 or 4), shape and element count of analysis a in a call of
 * plan; 0 if a is not an analysis. */
int attn_analysis_dims(const attn_lm_plan *plan, attn_analysis a, int shape[4], size_t *count);

/* What the analyses of `asked` (bits 1u << a) add to one attn_lm_run of
 * plan over a pool of `width` threads, known before anything is allocated:
 * *floats held at once beyond plan->total_elements (one block's weights,
 * the rollout's head means, importance's inputs and ablated runs' work
 * spaces and loss rows), *ops multiply-adds beyond plan->ops. ATTN_OK, or
 * ATTN_ERR_ARG (field "analysis") for importance in training mode or on a
 * plan whose ablated runs would pass core's sizes. */
int attn_lm_analysis_cost(const attn_lm_plan *plan, unsigned asked, int width, size_t *floats,
                          double *ops, attn_error *err);

/* ==== Forward ============================================================ */

/* Where results go; every pointer may be NULL (not wanted). */
typedef struct {
    float *logits;        /* [B][T][V], or [B][V] with last_only */
    int last_only;        /* logits of the last position only (what next-token
                             prediction reads): 1/T of the head's work */
    float *hidden_states; /* [n_layer + 1][B][T][C] as Hugging Face's output_hidden_states:
                             the input of each block (entry 0: embeddings after dropout),
                             and last the output of the final norm */
    float *attn_weights;  /* [n_layer][B][H][T][T] softmax weights of every block (before
                             any dropout of the weights, as the `pattern` of attention
                             viewers; the multipliers are in dropout_masks) */
    float *dropout_masks; /* plan.n_dropout multipliers, 0 or 1/(1-p) (all 1 when dropout is
                             not active), the calls of attn_lm_dropout_get one after another */
    float *last_hidden;   /* [B][T][C] hidden_states' last entry alone (an encoder's
                             last_hidden_state: what sentence embeddings pool) */
    float *pooler_output; /* [B][C] tanh(dense(x)) of each row's first token (models with a
                             pooler: BertModel's pooler_output) */
    float *loss;          /* [B] each row's mean cross-entropy in nats over its tokens (padding
                             never scored; 0 when nothing is): a causal model's logits at t
                             against idx[t + 1], as F.cross_entropy(logits[b, :n-1], idx[b,
                             1:n]); a two-way model's at t against idx[t] (an MLM's loss with
                             labels = input_ids). Needs idx, also with resid. Computed in
                             chunks of rows when the logits are not asked */
    float *analysis[ATTN_ANALYSIS_COUNT]; /* each analysis asked, attn_analysis_dims' count
                             floats (ATTN_ANALYSIS_MAP): the attention-only ones from the maps
                             of this run as it makes them; importance by attn_lm_run alone,
                             after its forward */
} attn_lm_outputs;

/* model(idx): idx [B][T] token ids in [0, V). A model without a head
 * (an encoder without its MLM head) refuses logits (ATTN_ERR_ARG, field
 * "logits"). In training mode dropout
 * draws from rng in forward order; rng NULL means a fresh process's
 * generator. pool (may be NULL) shares the products with idle threads,
 * split by fixed blocks of rows and columns: the same bits whatever the
 * pool. params must be finite (attn_lm_params_init made them, or
 * attn_lm_params_check passed them once; a result beyond float32 is still
 * ATTN_ERR_NONFINITE). One work-space allocation. */
int attn_lm_forward(const attn_lm_plan *plan, const void *params, const int32_t *idx,
                    attn_pool *pool, attn_rng *rng, attn_lm_outputs *out, attn_error *err);

/* ==== Inside the model: hooks, interventions, the logit lens ============== */

/* The shape of a hook point's activation, batch axis first (TransformerLens
 * has the same shapes with its batch axis):
 *   RESID [B][T][C]   HEADS [B][T][H][D]   MAP [B][H][T][T]   MLP [B][T][F]
 *   KV_HEADS [B][T][Hkv][D] (the key/value heads: fewer than H with grouped
 *   queries) */
typedef enum {
    ATTN_HOOK_SHAPE_RESID = 0,
    ATTN_HOOK_SHAPE_HEADS = 1,
    ATTN_HOOK_SHAPE_MAP = 2,
    ATTN_HOOK_SHAPE_MLP = 3,
    ATTN_HOOK_SHAPE_KV_HEADS = 4,
} attn_hook_shape;

/* TransformerLens's hook points, in forward order: the one table of them.
 * Columns:
 *   id     enum suffix: ATTN_HOOK_<id>
 *   name   TransformerLens's name: after "blocks.<l>." for a block's hooks,
 *          whole for the model's
 *   shape  ATTN_HOOK_SHAPE_<shape>
 *   block  1: one per block, 0: one per model
 *   what   what it holds
 * Norms: hook_normalized is TransformerLens's, the norm's input normalised
 * before its weight and bias ((x - mean) / sqrt(var + eps) for a LayerNorm;
 * ln1, ln2 and ln_final are the block's first and second norm and the final
 * one, whatever the architecture calls them; in a block whose norms follow
 * the residual adds (BERT, TransformerLens's BertBlock), ln1 is the norm of
 * resid_mid and ln2 of resid_post). Dropout (training mode) is
 * applied where the model applies it: hook_pattern is before any dropout of
 * the weights, hook_attn_out and hook_mlp_out are what is added to the
 * residual. */
#define ATTN_HOOK_MAP(XX)                                                                       \
    XX(RESID_PRE, "hook_resid_pre", RESID, 1, "the block's input (the residual stream)")        \
    XX(LN1_NORMALIZED, "ln1.hook_normalized", RESID, 1,                                         \
       "the first norm's input normalised, before its weight and bias")                         \
    XX(Q, "attn.hook_q", HEADS, 1, "the queries (projection and bias)")                         \
    XX(K, "attn.hook_k", KV_HEADS, 1, "the keys")                                               \
    XX(V, "attn.hook_v", KV_HEADS, 1, "the values")                                             \
    XX(ROT_Q, "attn.hook_rot_q", HEADS, 1, "the queries the scores use: after the q norm and the " \
       "rotary positions (models that have them)")                                               \
    XX(ROT_K, "attn.hook_rot_k", KV_HEADS, 1, "the keys the scores use (after the k norm and "    \
       "the rotary positions)")                                                                  \
    XX(ATTN_SCORES, "attn.hook_attn_scores", MAP, 1,                                            \
       "the scaled scores, masked entries -inf (the softmax's input)")                          \
    XX(PATTERN, "attn.hook_pattern", MAP, 1, "the attention weights (the softmax's output)")    \
    XX(Z, "attn.hook_z", HEADS, 1, "each head's weighted sum of values, before the output "     \
       "projection")                                                                            \
    XX(ATTN_OUT, "hook_attn_out", RESID, 1, "the attention's output, added to the residual")    \
    XX(RESID_MID, "hook_resid_mid", RESID, 1, "resid_pre + attn_out")                           \
    XX(LN2_NORMALIZED, "ln2.hook_normalized", RESID, 1,                                         \
       "the second norm's input normalised, before its weight and bias")                        \
    XX(MLP_PRE, "mlp.hook_pre", MLP, 1, "the MLP's first layer (a gated MLP's gate), before the "  \
       "activation")                                                                             \
    XX(MLP_PRE_LINEAR, "mlp.hook_pre_linear", MLP, 1, "a gated MLP's up projection")            \
    XX(MLP_POST, "mlp.hook_post", MLP, 1, "after the activation (gated: act(gate) * up)")       \
    XX(MLP_OUT, "hook_mlp_out", RESID, 1, "the MLP's output, added to the residual")            \
    XX(RESID_POST, "hook_resid_post", RESID, 1, "the block's output (with norms after the adds: "   \
       "ln1(resid_mid) + mlp_out, before the second norm)")                                      \
    XX(NORMALIZED_RESID_POST, "hook_normalized_resid_post", RESID, 1, "with norms after the adds " \
       "(BERT): the second norm's output, the block's output")                                   \
    XX(LN_FINAL_NORMALIZED, "ln_final.hook_normalized", RESID, 0,                               \
       "the final norm's input normalised, before its weight and bias")

typedef enum {
#define ATTN_XX(id, ...) ATTN_HOOK_##id,
    ATTN_HOOK_MAP(ATTN_XX)
#undef ATTN_XX
    ATTN_HOOK_COUNT
} attn_hook;

/* A row of ATTN_HOOK_MAP. */
typedef struct {
    attn_hook hook;
    const char *name;        /* "attn.hook_z", "ln_final.hook_normalized" */
    attn_hook_shape shape;
    int per_block;
    const char *what;
} attn_hook_info;

/* The row of h, or NULL if h is not a hook. */
const attn_hook_info *attn_hook_get(attn_hook h);
/* Parses a full TransformerLens name: "blocks.3.attn.hook_z" (layer 3),
 * "blocks.*.attn.hook_z" (*layer = -1: every block), or a model hook
 * ("ln_final.hook_normalized", *layer = 0). ATTN_OK or ATTN_ERR_ARG (an
 * unknown name, a bad layer number); the layer is not checked against a
 * model. */
int attn_hook_parse(const char *name, int *layer, attn_hook *hook);
/* The rank (3 or 4), shape (batch axis first) and element count of hook h's
 * activation in a call of plan; 0 if h is not a hook. */
int attn_hook_dims(const attn_lm_plan *plan, attn_hook h, int shape[4], size_t *count);
/* 1 if the model of plan has hook h: hook_rot_q/k need rotary positions or
 * q/k norms, mlp.hook_pre_linear a gated MLP, hook_resid_mid a sequential
 * residual, hook_normalized_resid_post norms after the adds,
 * ln_final.hook_normalized a final norm (encoders have none); every other
 * hook every model has. */
int attn_lm_has_hook(const attn_lm_plan *plan, attn_hook h);

/* Keep one activation: hook h of block `layer` (ignored for a model hook)
 * is copied to dst (attn_hook_dims' count floats, caller-owned) as the
 * forward pass goes, after any intervention at that point. Only what is
 * asked is kept: a call holds no other activation than its work space's. */
typedef struct {
    int layer;
    attn_hook hook;
    float *dst;
} attn_lm_capture;

typedef enum {
    ATTN_ABLATE_ZERO = 0,  /* the head's hook_z set to 0 */
    ATTN_ABLATE_MEAN = 1,  /* the head's hook_z set to its mean over the positions of each
                              batch row */
} attn_ablation;

/* Knock out one head: its hook_z, before the output projection, in batch
 * rows [batch_start, batch_start + batch_count) (batch_count 0: every row;
 * a batch of G copies of a text then ablates a head of its own in each). */
typedef struct {
    int layer, head;
    attn_ablation method;
    int batch_start, batch_count;
} attn_lm_ablate;

/* Replace one site's activation by another run's (activation patching):
 *   ATTN_HOOK_Z: head `index` of hook_z, at every position;
 *   ATTN_HOOK_RESID_PRE, ATTN_HOOK_ATTN_OUT, ATTN_HOOK_MLP_OUT,
 *   ATTN_HOOK_RESID_MID, ATTN_HOOK_RESID_POST: position `index`, every
 *   batch row.
 * src is the other run's whole activation at that hook, in the hook's shape
 * (what a capture of it wrote); only the patched slice is read. */
typedef struct {
    int layer;
    attn_hook hook;
    int index;
    const float *src;
} attn_lm_patch;

/* What a run takes besides the plan and the parameters. */
typedef struct {
    const int32_t *idx;      /* [B][T] token ids; with resid, NULL or the ids the run's input
                                came from (what loss and the detectors read) */
    const float *resid;      /* [B][T][C]: start at block start_layer with this as its input
                                (a hook_resid_pre of that block, or the hook_resid_post of the
                                one before, from another run), so that runs that differ only
                                from that block on (activation patching) do not recompute the
                                blocks before it. Eval mode only */
    int start_layer;         /* with resid: in [0, n_layer] (n_layer: the final norm and the
                                head only); without: 0 */
    const attn_lm_capture *captures;
    int n_captures;
    const attn_lm_ablate *ablations; /* applied in order, before the patches */
    int n_ablations;
    const attn_lm_patch *patches;
    int n_patches;
    attn_pool *pool;
    /* Padding: [B][T], 1 a token, 0 padding (transformers' attention_mask);
     * NULL: every position a token. Padded keys get exactly zero weight in
     * every block, for every query; padded positions are still computed (a
     * padded query attends to the tokens) unless the run packs its rows
     * (below), and the values an output holds at a padded position mean
     * nothing (0 when packed): the service reports them as null. A batch
     * padded on the right, asked for no map, capture or intervention, runs
     * packed: the projections and MLPs over the tokens alone, each row's
     * attention over its own tokens. Mean ablations average the tokens. */
    const uint8_t *attention_mask;
    /* [B][T] token types in [0, type_vocab) (BERT's segments A and B); NULL:
     * all 0. Only for models with token types. */
    const int32_t *token_type_ids;
} attn_lm_inputs;

/* The forward pass with activations kept, heads knocked out, activations
 * patched in, or a start part-way: attn_lm_forward is this with idx and
 * pool alone. Every output of attn_lm_outputs is available and comes from
 * the changed run; with resid, hidden_states' entries before start_layer
 * are not written. Interventions or captures at blocks before start_layer
 * are refused. A capture of a map hook (scores, pattern) makes that block's
 * attention materialise its maps, as attn_weights does. Errors:
 * ATTN_ERR_ARG with field "captures", "ablations", "patches", "resid" or
 * "start_layer" (naming the entry: "captures[2]") for an entry out of range
 * or a hook that cannot be patched, "training" for resid in training mode;
 * and those of attn_lm_forward. Several runs may go at once (each its own
 * call), e.g. as items of attn_pool_run with pool NULL inside: see
 * attn_lm_run_many.
 *
 * Analyses (out->analysis): the attention-only ones are computed from each
 * block's weights as the block makes them, after the block's ablations
 * (the weights are not changed by them: the rows of later blocks are); they
 * need idx and a run from block 0. Importance runs the forward (keeping
 * each block's input), then for every block l and head h the forward from
 * block l with h's hook_z zeroed (and the run's own ablations from l on),
 * heads of one block sharing a run as row blocks of one batch, the runs
 * shared over in->pool one per thread (attn_lm_run_many); it needs idx,
 * T >= 2 and eval mode, and no patches. Errors name "analysis". */
int attn_lm_run(const attn_lm_plan *plan, const void *params, const attn_lm_inputs *in,
                attn_rng *rng, attn_lm_outputs *out, attn_error *err);

/* n independent runs of one plan (eval mode) shared over pool: each run is
 * one item on one thread (its products unsplit), as a patching sweep
 * wants. in[i]'s pool is ignored. status[i] (n entries, required) gets each
 * run's attn_status and errs[i] (may be NULL) its error. Returns ATTN_OK if
 * every run succeeded, else the first failure's code. The runs' outputs may
 * hold any analysis but importance (runs of its own: attn_lm_run's). */
int attn_lm_run_many(const attn_lm_plan *plan, const void *params, const attn_lm_inputs *in,
                     attn_lm_outputs *out, int n, attn_pool *pool, int *status,
                     attn_error *errs);

/* The logit lens: logits [rows][V] = head(final norm(resid)) for rows of
 * residual stream resid [rows][C] (any block's hook_resid_pre, the last
 * block's hook_resid_post), with the model's own final norm and head. One
 * allocation ([rows][C]). */
int attn_lm_logit_lens(const attn_lm_plan *plan, const void *params, const float *resid,
                       int rows, attn_pool *pool, float *logits, attn_error *err);

/* The hook whose activation is a block's output (the next block's
 * hook_resid_pre): hook_resid_post, or hook_normalized_resid_post for a
 * model whose norms follow the residual adds. */
attn_hook attn_lm_block_output_hook(const attn_lm_plan *plan);

/* ==== Sentence embeddings: pooling ======================================== */

/* sentence-transformers' Pooling modes (its config.json's pooling_mode_*),
 * concatenated in this order when several are on. */
enum {
    ATTN_POOL_CLS = 1 << 0,      /* the first token */
    ATTN_POOL_MAX = 1 << 1,      /* the max over the tokens, per dimension */
    ATTN_POOL_MEAN = 1 << 2,     /* the mean over the tokens */
    ATTN_POOL_MEAN_SQRT = 1 << 3,/* the sum over the tokens / sqrt(their count) */
    ATTN_POOL_WEIGHTED = 1 << 4, /* the mean weighted by position 1, 2, ... */
    ATTN_POOL_LAST = 1 << 5,     /* the last token */
};

typedef struct {
    unsigned modes;  /* ATTN_POOL_* bits */
    int normalize;   /* then divided by its L2 norm (max(norm, 1e-12): F.normalize) */
} attn_lm_pooling;

/* The width of a pooled embedding: C times the modes on (0 for none). */
int attn_lm_pool_width(const attn_lm_pooling *pooling, int C);
/* out[B][width] = the pooling of hidden [B][T][C] over each row's tokens
 * (mask [B][T], 1 a token; NULL: all), as Pooling.forward computes it in
 * float32 (a row without tokens pools to 0; max takes -1e9 for padding).
 * ATTN_ERR_ARG (field "pooling") when no mode is on. */
int attn_lm_pool(const attn_lm_pooling *pooling, const float *hidden, const uint8_t *mask, int B,
                 int T, int C, float *out, attn_error *err);

/* ==== The key/value cache: many sequences, one step ====================== */

/* The keys and values every block computed for the positions seen so far,
 * for `seqs` sequences of up to `capacity` positions each, so that each new
 * token costs one token's work. Each sequence keeps its own length (cached
 * positions) and next position. A step takes rows of (sequence, token,
 * position): one row per sequence advances many streams at once (every
 * weight read once for all of them), several rows of one sequence take a
 * prompt in chunks.
 *
 *   attn_lm_cache_bytes(&cfg, seqs, capacity, &bytes, &err);   budget first
 *   attn_lm_cache_create(&cfg, seqs, capacity, &c, &err);
 *   attn_lm_plan_make(&cfg, seqs, T, 0, &plan, &err);    eval, T = the prompt's length
 *   attn_lm_prefill(&plan, params, prompt, c, pool, &out, &err);  sequence b = batch row b
 *   loop: rows[b] = (attn_lm_row){.seq = b, .token = next[b], .pos = -1};
 *         attn_lm_step(c, params, rows, seqs, pool, &step, &err);
 *   attn_lm_cache_free(c);
 *
 * Context cropping (the book's idx[:, -context_size:]): once a text is
 * longer than the window every position shifts with each new token, so no
 * cached key stays valid: reset the sequence and prefill the last tokens
 * again (the book's recomputation); a step refuses a full sequence
 * (ATTN_ERR_SHAPE, field "cache").
 *
 * Decoding is eval-only; a cache belongs to one model and one parameter
 * buffer, which the caller passes again to each call. A step's logits equal
 * a whole forward's over the same text within float rounding (not the same
 * bits: the products are split differently). */
typedef struct attn_lm_cache attn_lm_cache;

/* Bytes attn_lm_cache_create allocates: keys and values
 * [n_layer][seqs][Hkv][capacity][D] float32 each, a step's work space for
 * `seqs` rows and the struct. Validates as attn_lm_cache_create
 * (capacity in [1, context]). */
int attn_lm_cache_bytes(const attn_lm_config *cfg, int seqs, int capacity, size_t *bytes,
                        attn_error *err);
/* An empty cache (every sequence of length 0) in one allocation; *cache is
 * NULL on failure. */
int attn_lm_cache_create(const attn_lm_config *cfg, int seqs, int capacity,
                         attn_lm_cache **cache, attn_error *err);
/* Accepts NULL. */
void attn_lm_cache_free(attn_lm_cache *cache);
/* Sequence seq's cached positions (0 after create or reset; 0 for a seq out
 * of range), and every sequence's capacity. */
int attn_lm_cache_length(const attn_lm_cache *cache, int seq);
int attn_lm_cache_capacity(const attn_lm_cache *cache);
int attn_lm_cache_seqs(const attn_lm_cache *cache);
/* The bytes it holds (attn_lm_cache_bytes of its shape); 0 for NULL. */
size_t attn_lm_cache_size(const attn_lm_cache *cache);
/* Forgets sequence seq's positions (-1: every sequence's); keeps the memory. */
void attn_lm_cache_reset(attn_lm_cache *cache, int seq);
/* Keeps the first `length` positions of sequence seq (0 <= length <= its
 * length), to write again from there: the keys and values of a position
 * depend only on the tokens before it. ATTN_ERR_ARG (field "length" or
 * "seq") otherwise. */
int attn_lm_cache_truncate(attn_lm_cache *cache, int seq, int length, attn_error *err);

/* attn_lm_forward over the prompt idx [B][T] that also fills sequences
 * 0..B-1 of the cache with the keys and values of positions 0..T-1 (they
 * are reset first; length T after). plan: the cache's config in eval mode
 * (ATTN_ERR_ARG, field "training", otherwise), B <= the cache's sequences,
 * T <= capacity (ATTN_ERR_SHAPE, field "cache"). Every output of
 * attn_lm_outputs is available. */
int attn_lm_prefill(const attn_lm_plan *plan, const void *params, const int32_t *idx,
                    attn_lm_cache *cache, attn_pool *pool, attn_lm_outputs *out,
                    attn_error *err);

/* One row of a step: a token of sequence seq at position pos (-1: the
 * sequence's next position). */
typedef struct {
    int seq;
    int32_t token;
    int pos;
} attn_lm_row;

/* What one step gives; every pointer may be NULL. */
typedef struct {
    float *logits;     /* [rows][V] at each row's position */
    float *attn_rows;  /* [n_layer][rows][H][ld]: what each row attended to in each block
                          and head (its row of the attention map over the t positions of its
                          sequence after the step, zero past t), for a viewer that streams
                          them */
    int ld;            /* attn_rows' last axis: 0 = the longest t of the step's rows */
} attn_lm_step_outputs;

/* rows[0..n) go in: for each sequence its rows, in order, are appended at
 * the sequence's length (their keys and values join the cache), every row
 * attends to its sequence's positions up to itself, and out gets the
 * logits at each row's position. One product per weight over all the rows.
 * ATTN_ERR_SHAPE (field "cache") when a sequence would pass its capacity,
 * ATTN_ERR_ARG (field "rows") for a sequence, token id or position out of
 * range, ATTN_ERR_NONFINITE if the result overflowed (the cache then keeps
 * its lengths). Allocates only when n is over the cache's sequences. */
int attn_lm_step(attn_lm_cache *cache, const void *params, const attn_lm_row *rows, int n,
                 attn_pool *pool, attn_lm_step_outputs *out, attn_error *err);

/* attn_lm_step over rows of several caches of one model (a server's
 * generations, each with its own cache, in one pass over the weights):
 * rows[i].seq numbers the caches' sequences one after the other (cache 0's
 * first, then cache 1's, ...). A row's results are those of the same row
 * in a step of its cache alone with as many rows (the products read the
 * same weights; with 4 rows or more their sums may be grouped otherwise
 * than with fewer: the last bits of a row may then differ). ATTN_ERR_ARG
 * (field "cache") for caches of different models; otherwise as
 * attn_lm_step. Allocates its work space unless there is one cache. */
int attn_lm_step_caches(attn_lm_cache *const *caches, int n_caches, const void *params,
                        const attn_lm_row *rows, int n, attn_pool *pool,
                        attn_lm_step_outputs *out, attn_error *err);

/* attn_lm_step with one row per sequence of the cache: tokens[s] at
 * sequence s's next position, for every s (a batch decoded together). */
int attn_lm_decode(attn_lm_cache *cache, const void *params, const int32_t *tokens,
                   attn_pool *pool, attn_lm_step_outputs *out, attn_error *err);

#endif
