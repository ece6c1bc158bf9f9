/* attention.h - the attention modules of the seed chapters, PyTorch-exact.
 *
 * Plain C11, float32 storage, OpenBLAS for every matrix product, no global
 * mutable state: every function is reentrant and may be called from many
 * threads at once.  Failures are returned as an attn_status code and described
 * in an attn_error (message and the field at fault); nothing here aborts.
 *
 * A call goes through three steps:
 *
 *   attn_config cfg = {.module = ATTN_MHA, .batch = 2, .tokens = 6, .d_in = 3,
 *                      .d_out = 2, .num_heads = 2, .causal = 1};
 *   attn_plan plan;
 *   attn_plan_make(&cfg, &plan, &err);          validate, size every tensor
 *   float *params = malloc(plan.n_params * sizeof *params);
 *   attn_rng rng; attn_rng_seed(&rng, 123);     torch.manual_seed(123)
 *   attn_params_init(&cfg, &plan, params, &rng, &err);   MultiHeadAttention(...)
 *   attn_forward(&cfg, &plan, &in, &rng, &out, &err);    mha(batch)
 *
 * Conventions used everywhere:
 *   - tensors are dense, row-major, float32; shapes are written [B][T][D];
 *   - a boolean mask is uint8_t and 1 means "masked out, not attended", as in
 *     the seeds' `mask` buffer and torch.nn.MultiheadAttention (PyTorch's
 *     scaled_dot_product_attention uses the opposite: convert at the edge);
 *   - a query row whose keys are all masked gets all-zero weights and an
 *     all-zero context (PyTorch gives NaN or a uniform row depending on the
 *     path; neither can be carried in JSON);
 *   - sizes are int and must be >= 1; every product is checked for overflow;
 *   - results are bit-identical whatever the number of application threads
 *     for a given OpenBLAS thread count. OpenBLAS's own Haswell/Zen kernels
 *     change the last bits between 1 and 2 threads of theirs (a bare
 *     cblas_sgemm does), so across OpenBLAS thread counts results agree to
 *     float rounding only. OpenBLAS 0.3.21 is also unsafe for concurrent
 *     multi-threaded calls: callers that run several calls at once should set
 *     openblas_set_num_threads(1), as the server does.
 */
#ifndef ATTENTION_H
#define ATTENTION_H

#include <stddef.h>
#include <stdint.h>

#define ATTN_VERSION "0.1.0"

/* ==== Errors ============================================================ */

typedef enum {
    ATTN_OK = 0,
    ATTN_ERR_ARG = -1,       /* an option or size is invalid (zero, negative, unknown) */
    ATTN_ERR_SHAPE = -2,     /* sizes disagree (d_out % num_heads, T > context_length) */
    ATTN_ERR_RANGE = -3,     /* a size product overflows or exceeds ATTN_MAX_ELEMENTS */
    ATTN_ERR_NONFINITE = -4, /* an input is NaN or infinite, or the result overflowed */
    ATTN_ERR_NOMEM = -5,     /* an allocation failed */
    ATTN_ERR_CANCELLED = -6, /* the caller's check said stop (attn_cancel_set) */
} attn_status;

typedef struct {
    int code;           /* an attn_status */
    char field[64];     /* the option or tensor at fault: "d_out", "inputs", "params.W_key.weight" */
    char message[256];  /* one line, no trailing period */
} attn_error;

/* "ok", "invalid_argument", "invalid_shape", "too_large", "non_finite", "out_of_memory",
 * "cancelled" */
const char *attn_status_name(int code);

/* The largest tensor, in elements, that a plan accepts (2^40). Callers
 * usually enforce a much smaller budget with attn_plan.total_elements. */
#define ATTN_MAX_ELEMENTS ((size_t)1 << 40)

/* ==== Modules =========================================================== */

/* Where dropout acts. The seed classes, torch.nn.MultiheadAttention and SDPA
 * drop attention weights; gpt2_min.py's resid_drop drops the output. */
typedef enum {
    ATTN_DROP_WEIGHTS = 0,
    ATTN_DROP_OUTPUT = 1,
} attn_drop_site;

/* Properties of a module (the flags column of ATTN_MODULE_MAP). */
enum {
    ATTN_MOD_DEFAULT = 1 << 0,      /* served when a request to its endpoint names no module */
    ATTN_MOD_PROJECTED = 1 << 1,    /* Q, K, V are projections of x (has parameters) */
    ATTN_MOD_QKV_INPUTS = 1 << 2,   /* Q, K, V are given ("query", "key", "value"), no x */
    ATTN_MOD_CROSS = 1 << 3,        /* key/value inputs of their own width and length (kdim, vdim) */
    ATTN_MOD_MULTI_HEAD = 1 << 4,   /* takes num_heads; the others have one head */
    ATTN_MOD_SPLIT_HEADS = 1 << 5,  /* one projection split into heads: head_dim = width / H */
    ATTN_MOD_HEAD_MODULES = 1 << 6, /* heads are submodules run in turn ("heads.<h>." parameters,
                                       dropout drawn head after head); head_dim = d_out */
    ATTN_MOD_OUT_PROJ = 1 << 7,     /* an output projection after the heads */
    ATTN_MOD_CAUSAL = 1 << 8,       /* causal unless the request says otherwise */
    ATTN_MOD_BIAS = 1 << 9,         /* projection biases unless the request says otherwise */
    ATTN_MOD_UNSCALED = 1 << 10,    /* default scale 1 instead of 1/sqrt(head_dim) */
    ATTN_MOD_SUM_NORM = 1 << 11,    /* may use ATTN_NORM_SUM */
    ATTN_MOD_FUNCTIONAL = 1 << 12,  /* a function, not a module: dropout acts whenever p > 0 */
};

/* One row per module, the single place that says what a module is (libuv's
 * UV_HANDLE_TYPE_MAP style). Columns:
 *   id        enum suffix: ATTN_<id>
 *   name      the Python class name (attn_module_name), as requests spell it
 *   alias     another accepted name, or NULL
 *   endpoint  the HTTP path that serves it; modules of one endpoint are
 *             listed there default first, then in this table's order
 *   flags     ATTN_MOD_*
 *   drop      attn_drop_site
 *   in, out, heads, context, bias: the request's names of the config fields
 *             d_in, d_out, num_heads, context_length and bias (NULL: the
 *             module does not take that field; in is the tensor whose last
 *             axis gives d_in when no constructor argument does)
 * Adding a module: a row here, its parameter layout in core/params.c, its
 * projection (if not plain Q/K/V Linear layers) there too, and its request
 * fields in api/endpoints.c. */
#define ATTN_MODULE_MAP(XX)                                                                     \
    /* 3.3: no weights; scores = X X^T, weights = softmax or sum-normalised */                  \
    XX(SIMPLE, "simple", NULL, "/attention/simple",                                              \
       ATTN_MOD_DEFAULT | ATTN_MOD_UNSCALED | ATTN_MOD_SUM_NORM, ATTN_DROP_WEIGHTS,              \
       "d_in", NULL, NULL, NULL, NULL)                                                           \
    /* 3.4.2 SelfAttention_v1: raw [d_in][d_out] parameters */                                  \
    XX(SELF_V1, "SelfAttention_v1", NULL, "/attention/self", ATTN_MOD_PROJECTED,                 \
       ATTN_DROP_WEIGHTS, "d_in", "d_out", NULL, NULL, NULL)                                     \
    /* 3.4.2 SelfAttention_v2: nn.Linear layout, optional qkv_bias */                           \
    XX(SELF_V2, "SelfAttention_v2", NULL, "/attention/self",                                     \
       ATTN_MOD_DEFAULT | ATTN_MOD_PROJECTED, ATTN_DROP_WEIGHTS,                                 \
       "d_in", "d_out", NULL, NULL, "qkv_bias")                                                  \
    /* 3.5.3 CausalAttention */                                                                 \
    XX(CAUSAL, "CausalAttention", NULL, "/attention/causal",                                     \
       ATTN_MOD_DEFAULT | ATTN_MOD_PROJECTED | ATTN_MOD_CAUSAL, ATTN_DROP_WEIGHTS,               \
       "d_in", "d_out", NULL, "context_length", "qkv_bias")                                      \
    /* 3.6.1 MultiHeadAttentionWrapper: num_heads CausalAttention heads */                      \
    XX(MHA_WRAPPER, "MultiHeadAttentionWrapper", NULL, "/attention/multihead",                   \
       ATTN_MOD_PROJECTED | ATTN_MOD_MULTI_HEAD | ATTN_MOD_HEAD_MODULES | ATTN_MOD_CAUSAL,       \
       ATTN_DROP_WEIGHTS,                                                                        \
       "d_in", "d_out", "num_heads", "context_length", "qkv_bias")                               \
    /* 3.6.2 MultiHeadAttention: weight splits + out_proj */                                    \
    XX(MHA, "MultiHeadAttention", NULL, "/attention/multihead",                                  \
       ATTN_MOD_DEFAULT | ATTN_MOD_PROJECTED | ATTN_MOD_MULTI_HEAD | ATTN_MOD_SPLIT_HEADS |      \
           ATTN_MOD_OUT_PROJ | ATTN_MOD_CAUSAL,                                                  \
       ATTN_DROP_WEIGHTS, "d_in", "d_out", "num_heads", "context_length", "qkv_bias")            \
    /* seed 003 gpt2_min.py CausalSelfAttention: fused c_attn, c_proj, resid_drop */            \
    XX(GPT2, "GPT2CausalSelfAttention", NULL, "/attention/multihead",                            \
       ATTN_MOD_PROJECTED | ATTN_MOD_MULTI_HEAD | ATTN_MOD_SPLIT_HEADS | ATTN_MOD_OUT_PROJ |      \
           ATTN_MOD_CAUSAL,                                                                      \
       ATTN_DROP_OUTPUT,                                                                         \
       "n_embd", NULL, "n_head", "block_size", NULL)                                             \
    /* torch.nn.MultiheadAttention (batch_first=True) */                                        \
    XX(TORCH_MHA, "torch.nn.MultiheadAttention", NULL, "/attention/multihead",                   \
       ATTN_MOD_PROJECTED | ATTN_MOD_MULTI_HEAD | ATTN_MOD_SPLIT_HEADS | ATTN_MOD_OUT_PROJ |      \
           ATTN_MOD_CROSS | ATTN_MOD_BIAS,                                                       \
       ATTN_DROP_WEIGHTS, "embed_dim", NULL, "num_heads", NULL, "bias")                          \
    /* scaled dot-product attention on given Q, K, V */                                         \
    XX(SDPA, "scaled_dot_product_attention", "sdpa", "/attention/sdpa",                          \
       ATTN_MOD_DEFAULT | ATTN_MOD_QKV_INPUTS | ATTN_MOD_MULTI_HEAD | ATTN_MOD_FUNCTIONAL,        \
       ATTN_DROP_WEIGHTS, "query", NULL, NULL, NULL, NULL)

typedef enum {
#define ATTN_XX(id, ...) ATTN_##id,
    ATTN_MODULE_MAP(ATTN_XX)
#undef ATTN_XX
    ATTN_MODULE_COUNT
} attn_module;

/* A row of ATTN_MODULE_MAP. */
typedef struct {
    attn_module module;
    const char *name;       /* "SelfAttention_v1", "torch.nn.MultiheadAttention", ... */
    const char *alias;      /* NULL or another accepted name ("sdpa") */
    const char *endpoint;   /* "/attention/multihead" */
    unsigned flags;         /* ATTN_MOD_* */
    attn_drop_site drop_site;
    const char *in_name, *out_name, *heads_name, *context_name, *bias_name;
} attn_module_info;

/* The row of m, or NULL if m is not a module. */
const attn_module_info *attn_module_get(attn_module m);
/* 1 if m is a module with every flag of `flags`. */
int attn_module_has(attn_module m, unsigned flags);
/* The Python class name: "SelfAttention_v1", "torch.nn.MultiheadAttention", ... */
const char *attn_module_name(attn_module m);
/* Inverse of attn_module_name; also accepts the aliases ("sdpa"). Returns
 * ATTN_OK or ATTN_ERR_ARG. */
int attn_module_from_name(const char *name, attn_module *out);
/* The modules served on an endpoint path, default first, then in table
 * order, into mods (room for ATTN_MODULE_COUNT). Returns how many (0 for an
 * unknown path). */
int attn_modules_on_endpoint(const char *endpoint, attn_module mods[ATTN_MODULE_COUNT]);

typedef enum {
    ATTN_NORM_SOFTMAX = 0,  /* softmax(scores * scale) */
    ATTN_NORM_SUM = 1,      /* ATTN_MOD_SUM_NORM modules only: scores / row sum, the seed's first try */
} attn_norm;

typedef enum {
    ATTN_MASK_NEG_INF = 0,  /* masked scores set to -inf before softmax (3.5.1, second way) */
    ATTN_MASK_RENORM = 1,   /* softmax, zero masked weights, renormalise rows (3.5.1, first way) */
} attn_mask_method;

typedef struct {
    attn_module module;
    int batch;           /* B */
    int tokens;          /* T, the query length L */
    int d_in;            /* width of the inputs: d_in; n_embd (GPT2); embed_dim (torch);
                            E, the query/key head width (SDPA) */
    int d_out;           /* seed classes: d_out. Ignored by the others (their width is d_in) */
    int num_heads;       /* wrapper, MHA, GPT2, torch, SDPA; must be 1 (or 0) for the others */
    int kv_tokens;       /* S, the key length: SDPA and torch cross-attention. 0 = tokens */
    int kv_heads;        /* SDPA grouped-query: Hkv, dividing num_heads. 0 = num_heads */
    int kdim, vdim;      /* torch: key/value input widths (0 = embed_dim). SDPA: vdim = Ev (0 = E) */
    int context_length;  /* seed classes: context_length; GPT2: block_size. 0 = T (no bound) */
    int bias;            /* qkv_bias (seed classes) or bias (torch). GPT2 always has biases */
    int causal;          /* mask keys j > i (top-left aligned when L != S, as PyTorch) */
    attn_norm normalization;
    attn_mask_method mask_method;
    int has_scale;       /* use `scale` instead of 1/sqrt(head_dim) (1 for ATTN_MOD_UNSCALED) */
    float scale;
    double dropout;      /* p in [0, 1] (double, as Python passes it); kept values are scaled by 1/(1-p) */
    int training;        /* dropout acts only when training and p > 0 */
    int has_dropout_seed;/* reseed the generator right before dropout, as the seed's */
    uint64_t dropout_seed; /*   torch.manual_seed(123); dropout(attn_weights) */
    unsigned outputs;    /* the outputs the call will ask for (ATTN_OUT_* bits), used only
                            for attn_plan.total_elements; 0 = any of them */
} attn_config;

/* The tensors of attn_outputs, as bits of attn_config.outputs. */
enum {
    ATTN_OUT_CONTEXT = 1u << 0, ATTN_OUT_CONTEXT_HEADS = 1u << 1, ATTN_OUT_QUERIES = 1u << 2,
    ATTN_OUT_KEYS = 1u << 3, ATTN_OUT_VALUES = 1u << 4, ATTN_OUT_SCORES = 1u << 5,
    ATTN_OUT_MASKED_SCORES = 1u << 6, ATTN_OUT_MASK = 1u << 7, ATTN_OUT_WEIGHTS = 1u << 8,
    ATTN_OUT_WEIGHTS_AVG = 1u << 9, ATTN_OUT_DROPOUT_MASK = 1u << 10,
};

/* Two ways to the same context (within float rounding):
 *   fused:        query tiles against key tiles with an online softmax
 *                 (FlashAttention-2); memory linear in L and S, key tiles
 *                 above the causal diagonal skipped. Used whenever no
 *                 [L][S]-sized output is asked for (scores, masked_scores,
 *                 mask, weights, weights_avg, and dropout_mask where dropout
 *                 acts on the weights), dropout on the weights is not active
 *                 (PyTorch draws its mask over whole rows of weights),
 *                 normalization is softmax and mask_method is -inf.
 *   materialised: every [L][S] tensor of a head, block of query rows by
 *                 block of query rows. */

/* ==== Plan: validated sizes ============================================= */

/* Every size of one call, derived from an attn_config by attn_plan_make.
 * Counts are in elements (floats, or bytes for masks). */
typedef struct {
    int B, H, Hkv, L, S;  /* batch, heads, key/value heads, query and key lengths */
    int Dk, Dv;           /* per-head query/key and value widths (head_dim) */
    int in_width;         /* width of x: last axis of the inputs */
    int kv_in_width[2];   /* widths of the key and value inputs (torch cross-attention) */
    int ctx_width;        /* H * Dv: heads concatenated, before the output projection */
    int out_width;        /* width of the final context */
    int has_out_proj;     /* ATTN_MOD_OUT_PROJ: MHA, GPT2, torch */
    attn_drop_site drop_site;
    int dropout_active;   /* training && 0 < p */
    float scale;          /* the scale actually applied */
    int param_count;      /* named tensors in the state_dict (buffers included) */
    size_t n_params;      /* floats in the parameter buffer */
    size_t n_inputs;      /* floats in x (or q + k + v for SDPA, x_key, x_value) */
    size_t n_context;     /* B * L * out_width */
    size_t n_context_heads; /* B * L * ctx_width */
    size_t n_queries, n_keys, n_values; /* B*H*L*Dk, B*Hkv*S*Dk, B*Hkv*S*Dv */
    size_t n_scores;      /* B * H * L * S (raw scores, masked scores, weights) */
    size_t n_mask;        /* B * L * S */
    size_t n_avg;         /* B * L * S */
    size_t n_dropout;     /* B*H*L*S, or B*L*out_width for ATTN_DROP_OUTPUT */
    int fused;            /* the fused kernel will run, given cfg.outputs (see above) */
    size_t total_elements;/* an upper bound on every float the call holds: inputs,
                             parameters, intermediates and every output (those of
                             cfg.outputs, or all when it is 0) */
} attn_plan;

/* Validates cfg and fills plan. ATTN_OK or an error naming the field. */
int attn_plan_make(const attn_config *cfg, attn_plan *plan, attn_error *err);

/* ==== Parameters: the module's state_dict ================================ */

#define ATTN_PARAM_NAME_MAX 48

/* What a constant buffer holds (it is registered by the module, not
 * learnt): given ones are checked against it, missing ones filled with it. */
typedef enum {
    ATTN_BUFFER_NONE = 0,  /* not a buffer: a parameter */
    ATTN_BUFFER_TRIU = 1,  /* torch.triu(ones, diagonal=1): 1 above the diagonal = masked
                              (the seeds' "mask") */
    ATTN_BUFFER_TRIL = 2,  /* torch.tril(ones): 1 on and below the diagonal = allowed
                              (gpt2_min.py's "bias") */
} attn_buffer;

typedef struct {
    char name[ATTN_PARAM_NAME_MAX]; /* PyTorch state_dict key: "W_query.weight",
                                       "heads.1.W_key.bias", "c_attn.weight", "mask" */
    int rank;                 /* 1 to 4 */
    int shape[4];
    size_t offset;            /* in floats, into the parameter buffer */
    size_t count;             /* product of the shape */
    attn_buffer buffer;       /* ATTN_BUFFER_NONE (0) for a parameter */
} attn_param;

/* Describes the index-th entry (0 <= index < plan->param_count) in state_dict
 * order. Entries are contiguous in the buffer, in that order. */
int attn_param_get(const attn_config *cfg, const attn_plan *plan, int index, attn_param *out);

/* The value a buffer entry holds at [row][col] of its last two axes (its
 * matrix is square); 0 for a parameter. */
float attn_param_buffer_value(const attn_param *p, int row, int col);
/* Writes the whole buffer entry (p->count floats) as the module registers it. */
void attn_param_buffer_fill(const attn_param *p, float *x);

/* ==== Random numbers: PyTorch's CPU generator ============================ */

/* mt19937 as torch.manual_seed sets it up (the seed's low 32 bits). */
typedef struct {
    uint32_t state[624];
    int index;
} attn_rng;

#define ATTN_TORCH_DEFAULT_SEED UINT64_C(67280421310721) /* a fresh PyTorch process */

void attn_rng_seed(attn_rng *rng, uint64_t seed);
uint32_t attn_rng_u32(attn_rng *rng);
/* torch.rand / Tensor.uniform_(from, to) for float32: one 32-bit draw. */
float attn_rng_uniform(attn_rng *rng, float from, float to);
/* n such draws into x, the same values as n calls (a block at a time). */
void attn_rng_uniform_fill(attn_rng *rng, float *x, size_t n, float from, float to);
/* One Bernoulli(keep_p) draw as nn.Dropout makes it: one 64-bit draw. */
int attn_rng_bernoulli(attn_rng *rng, double keep_p);

/* Fills params (plan->n_params floats) exactly as constructing the module
 * after torch.manual_seed would: the same draws in the same order, buffers
 * included. The generator is left where PyTorch's would be. */
int attn_params_init(const attn_config *cfg, const attn_plan *plan, float *params,
                     attn_rng *rng, attn_error *err);

/* Checks given parameters: finite, and buffers equal to what the module
 * registers (the seeds' triangular masks). */
int attn_params_check(const attn_config *cfg, const attn_plan *plan, const float *params,
                      attn_error *err);

/* ==== Compute threads ==================================================== */

/* Threads shared by every call given the pool (attn_inputs.pool). A call
 * cuts its work into items fixed by its shapes alone (batch x head x query
 * tile, projections by blocks of rows); the calling thread and any idle pool
 * thread claim them, so one call on an idle machine uses every core and
 * concurrent calls each keep at least their own. Each output element is made
 * by one item with one fixed sequence of operations: results are
 * bit-identical whatever the pool, the load and the thread count. */
typedef struct attn_pool attn_pool;

/* `threads` is how many threads may compute at once, callers included
 * (threads - 1 helpers are started): the number of cores. Sets OpenBLAS to
 * one thread of its own (openblas_set_num_threads(1)), which concurrent
 * calls need. On Linux a pool thread that joins a call is given every CPU
 * the process had at creation but the caller's (sched_setaffinity), so the
 * scheduler cannot queue it behind the caller. Returns NULL if threads is
 * not in [1, 1024] or memory or threads cannot be had. */
attn_pool *attn_pool_create(int threads);
/* Joins the threads and frees the pool; no call may be using it. Accepts NULL. */
void attn_pool_destroy(attn_pool *pool);
/* How many threads may run one call's items at once (1 for NULL). */
int attn_pool_width(const attn_pool *pool);
/* The pool for work outside attention (a caller's serialisation, say): runs
 * fn(ctx, item, slot) for every item in [0, n_items) on the calling thread
 * and on idle pool threads, and returns when all are done. `slot`, below
 * attn_pool_width, is private to the item while it runs. NULL pool: the
 * items run in order on the calling thread. */
void attn_pool_run(attn_pool *pool, long n_items, void (*fn)(void *ctx, long item, int slot),
                   void *ctx);

/* ==== Forward ============================================================ */

typedef struct {
    const float *x;        /* [B][T][in_width]; unused by SDPA */
    const float *x_key;    /* torch cross-attention: [B][S][kdim]; NULL = x */
    const float *x_value;  /* [B][S][vdim]; NULL = x_key, or x */
    const float *query;    /* SDPA: [B][H][L][E] */
    const float *key;      /* SDPA: [B][Hkv][S][E] */
    const float *value;    /* SDPA: [B][Hkv][S][Ev] */
    const float *params;   /* plan.n_params floats laid out by attn_param_get; NULL if none */
    const uint8_t *attn_mask_bool; /* [L][S], or [B][L][S] if attn_mask_batched; 1 = masked out */
    const float *attn_mask_add;    /* same shapes: added to the scaled scores (-inf = masked) */
    int attn_mask_batched;
    const uint8_t *key_padding_mask; /* [B][S]; 1 = padding, not attended */
    attn_pool *pool;       /* threads that may share the work (attn_pool_create);
                              NULL = the calling thread alone. Same results either way */
    int params_checked;    /* 1: the caller knows params are finite (checked once for many
                              calls, as GPT-2's blocks are): the O(n_params) check is
                              skipped. A NaN would still make the result non-finite, which
                              is an error either way */
} attn_inputs;

/* Where results go. Every pointer may be NULL (not wanted); the caller owns
 * the memory and sizes it from the plan. */
typedef struct {
    float *context;        /* [B][L][out_width], the module's return value */
    float *context_heads;  /* [B][L][ctx_width]: heads concatenated, before out_proj */
    float *queries;        /* [B][H][L][Dk] per head, after projection */
    float *keys;           /* [B][Hkv][S][Dk] */
    float *values;         /* [B][Hkv][S][Dv] */
    float *scores;         /* [B][H][L][S] raw Q·Kᵀ */
    float *masked_scores;  /* [B][H][L][S] scaled, masked entries -INFINITY */
    uint8_t *mask;         /* [B][L][S] the boolean mask applied, 1 = masked out */
    float *weights;        /* [B][H][L][S] attention weights, after dropout */
    float *weights_avg;    /* [B][L][S] weights averaged over heads */
    float *dropout_mask;   /* n_dropout multipliers: 0 or 1/(1-p) (1 when inactive) */
} attn_outputs;

/* Runs the module. rng is the generator left by attn_params_init (or any
 * seeded one); it is used only when dropout is active and may then be
 * reseeded with cfg->dropout_seed. One allocation for the work space. */
int attn_forward(const attn_config *cfg, const attn_plan *plan, const attn_inputs *in,
                 attn_rng *rng, attn_outputs *out, attn_error *err);

/* ==== Whole models: seed 003's GPT2 and the book's GPTModel ============= */

/* The generator's cached second normal sample (PyTorch keeps it in the
 * generator; torch.manual_seed clears it): start from {0}. */
typedef struct {
    int has_next;
    double next;
} attn_normal_cache;

/* Tensor.normal_(mean, std) on a contiguous float32 tensor of n elements,
 * draw for draw as PyTorch 1.13's CPU kernel (normal_fill_AVX2 in blocks of
 * 16 when n >= 16, element by element in double below). */
void attn_rng_normal_fill(attn_rng *rng, attn_normal_cache *cache, float *x, size_t n,
                          double mean, double std);

typedef enum {
    ATTN_GELU_ERF = 0,  /* F.gelu(x): x/2 (1 + erf(x/sqrt 2)), the seed's */
    ATTN_GELU_TANH = 1, /* gelu_new of the real GPT-2 checkpoints (tanh approximation),
                           and the book's GELU class */
} attn_gelu;

/* The model families attn_gpt2_* run with one forward pass (one row each,
 * the single place that says what a family is). Columns:
 *   id        enum suffix: ATTN_FAMILY_<id>
 *   name      the Python class, as requests spell it
 *   attn      the attention module of each block (a row of ATTN_MODULE_MAP)
 *   vocab, context, layers, heads, width, dropout, qkv_bias: the family's
 *             own names of the attn_gpt2_config fields vocab_size,
 *             block_size, n_layer, n_head, n_embd, dropout and qkv_bias
 *             (NULL: the family has no such option); errors name these
 *   tied      the output head is the token embedding (no weight of its own)
 * The differences, all derived from the family:
 *   GPT2 (seed 003, gpt2_min.py): wte/wpe, h.<l>.{ln_1, attn (fused c_attn
 *     with bias, c_proj, the tril "bias" buffer), ln_2, mlp.fc, mlp.proj},
 *     ln_f, head tied to wte; nn.LayerNorm; F.gelu (or gelu_new); dropout
 *     after the embeddings, on the attention's output (resid_drop) and on
 *     the MLP's output (mlp.drop).
 *   GPTModel (Raschka, "Build a Large Language Model (From Scratch)", ch. 4
 *     gpt.py): tok_emb/pos_emb, trf_blocks.<l>.{att (chapter 3's
 *     MultiHeadAttention: W_query, W_key, W_value with qkv_bias, out_proj,
 *     the triu "mask" buffer), ff.layers.0, ff.layers.2, norm1, norm2},
 *     final_norm, out_head (its own weight, no bias); the book's LayerNorm
 *     ((x - mean) / sqrt(var + eps) with the biased variance, scale, shift);
 *     the book's GELU (tanh form); dropout after the embeddings (drop_emb),
 *     on the attention weights, and drop_shortcut after the attention and
 *     after the feed-forward. */
#define ATTN_FAMILY_MAP(XX)                                                                     \
    XX(GPT2, "GPT2", ATTN_GPT2, "vocab_size", "block_size", "n_layer", "n_head", "n_embd",      \
       "dropout", NULL, 1)                                                                      \
    XX(GPTMODEL, "GPTModel", ATTN_MHA, "vocab_size", "context_length", "n_layers", "n_heads",  \
       "emb_dim", "drop_rate", "qkv_bias", 0)

typedef enum {
#define ATTN_XX(id, ...) ATTN_FAMILY_##id,
    ATTN_FAMILY_MAP(ATTN_XX)
#undef ATTN_XX
    ATTN_FAMILY_COUNT
} attn_family;

/* A row of ATTN_FAMILY_MAP. */
typedef struct {
    attn_family family;
    const char *name;          /* "GPT2", "GPTModel" */
    attn_module attn;          /* ATTN_GPT2, ATTN_MHA */
    const char *vocab_name, *context_name, *layers_name, *heads_name, *width_name,
        *dropout_name, *qkv_bias_name;
    int tied;
} attn_family_info;

/* The row of f, or NULL if f is not a family. */
const attn_family_info *attn_family_get(attn_family f);
/* Inverse of the name column. ATTN_OK or ATTN_ERR_ARG. */
int attn_family_from_name(const char *name, attn_family *out);

/* The model's configuration: GPTConfig of gpt2_min.py, or the book's
 * GPT_CONFIG dict (vocab_size, context_length = block_size, emb_dim =
 * n_embd, n_heads = n_head, n_layers = n_layer, drop_rate = dropout,
 * qkv_bias). A zero-initialised family is seed 003's GPT2. */
typedef struct {
    int vocab_size;
    int block_size;  /* GPTModel: context_length */
    int n_layer;     /* may be 0 */
    int n_head;
    int n_embd;      /* a multiple of n_head */
    double dropout;  /* p of every dropout of the model */
    attn_gelu gelu;  /* GPT2 only: GPTModel's GELU is always the tanh form */
    attn_family family;
    int qkv_bias;    /* GPTModel only: biases of W_query, W_key, W_value (GPT2's c_attn
                        always has one) */
} attn_gpt2_config;

/* Every size of one forward pass of the model on idx [B][T]. */
typedef struct {
    attn_gpt2_config cfg;
    int B, T, C, H, V, n_layer;
    int training;
    int dropout_active;   /* training && 0 < p */
    int param_count;      /* state_dict entries, buffers included (GPT2: lm_head.weight
                             excluded, it is wte.weight) */
    size_t n_params;      /* floats of the parameter buffer, in state_dict order */
    size_t n_layer_params;/* floats of one block */
    size_t n_logits;      /* B * T * V */
    size_t n_hidden;      /* (n_layer + 1) * B * T * C */
    size_t n_attn;        /* n_layer * B * H * T * T */
    size_t total_elements;/* an upper bound on every float of the call, outputs included */
    attn_config attn;     /* one block's attention (ATTN_GPT2 or ATTN_MHA) on [B][T][C] */
    attn_plan attn_plan;
    attn_family family;   /* cfg.family */
    attn_gelu gelu;       /* the activation the MLP applies */
    int tied;             /* the head is the token embedding */
    int D;                /* C / H, the head width */
    size_t n_dropout;     /* floats of attn_gpt2_outputs.dropout_masks */
} attn_gpt2_plan;

/* Validates cfg (sizes >= 1, n_embd % n_head, dropout in [0, 1],
 * tokens <= block_size, a known family and activation) and sizes
 * everything, overflow-checked. Errors name the family's fields
 * ("context_length", "emb_dim", ... for GPTModel). */
int attn_gpt2_plan_make(const attn_gpt2_config *cfg, int batch, int tokens, int training,
                        attn_gpt2_plan *plan, attn_error *err);

/* The index-th entry of the model's state_dict, in PyTorch's order (a
 * module's own parameters, then its buffers, then its children's entries).
 * GPT2:
 *   wte.weight [V][C], wpe.weight [block_size][C], then per block l
 *   h.l.ln_1.weight, h.l.ln_1.bias, h.l.attn.bias [1][1][block_size][block_size]
 *   (the tril buffer), h.l.attn.c_attn.weight [3C][C], h.l.attn.c_attn.bias,
 *   h.l.attn.c_proj.weight [C][C], h.l.attn.c_proj.bias, h.l.ln_2.weight,
 *   h.l.ln_2.bias, h.l.mlp.fc.weight [4C][C], h.l.mlp.fc.bias,
 *   h.l.mlp.proj.weight [C][4C], h.l.mlp.proj.bias; ln_f.weight, ln_f.bias.
 *   lm_head.weight is wte.weight (tied) and has no entry of its own.
 * GPTModel:
 *   tok_emb.weight [V][C], pos_emb.weight [context_length][C], then per
 *   block l trf_blocks.l.att.mask [context_length][context_length] (the triu
 *   buffer), trf_blocks.l.att.W_query.weight [C][C] (and .bias [C] with
 *   qkv_bias), the same for W_key and W_value, trf_blocks.l.att.out_proj.weight
 *   [C][C], .out_proj.bias, trf_blocks.l.ff.layers.0.weight [4C][C],
 *   .ff.layers.0.bias, .ff.layers.2.weight [C][4C], .ff.layers.2.bias,
 *   .norm1.scale, .norm1.shift, .norm2.scale, .norm2.shift [C]; then
 *   final_norm.scale, final_norm.shift, out_head.weight [V][C]. */
int attn_gpt2_param_get(const attn_gpt2_plan *plan, int index, attn_param *out);

/* torch.manual_seed(s); GPT2(cfg) or GPTModel(cfg): fills params
 * (plan->n_params floats) bit for bit in construction order: the
 * embeddings by normal_, each block's Linear layers by kaiming-uniform and
 * uniform biases (attention, then the MLP), LayerNorms with ones and zeros,
 * then the head: GPT2 draws lm_head's own weight and discards it (it is
 * tied), GPTModel keeps out_head's. rng must be freshly seeded (normal
 * cache empty) as torch.manual_seed leaves it; it is left where PyTorch's
 * is. */
int attn_gpt2_params_init(const attn_gpt2_plan *plan, float *params, attn_rng *rng,
                          attn_error *err);

/* Checks given parameters: finite, and the mask buffers equal to tril
 * (GPT2's attn.bias) or triu (GPTModel's att.mask). */
int attn_gpt2_params_check(const attn_gpt2_plan *plan, const float *params, attn_error *err);

/* Where results go; every pointer may be NULL (not wanted). */
typedef struct {
    float *logits;        /* [B][T][V], or [B][V] with last_only */
    int last_only;        /* logits of the last position only (what next-token
                             prediction reads): 1/T of lm_head's work */
    float *hidden_states; /* [n_layer + 1][B][T][C] as Hugging Face's output_hidden_states:
                             the input of each block (entry 0: embeddings after dropout),
                             and last the output of the final LayerNorm */
    float *attn_weights;  /* [n_layer][B][H][T][T] softmax weights of every block (before
                             GPTModel's dropout of the weights, as the `pattern` of
                             attention viewers; the multipliers are in dropout_masks) */
    float *dropout_masks; /* plan.n_dropout multipliers, 0 or 1/(1-p) (all 1 when dropout is
                             not active), in PyTorch's draw order:
                             GPT2: drop [B][T][C], then per block attn.resid_drop and
                             mlp.drop, [B][T][C] each;
                             GPTModel: drop_emb [B][T][C], then per block the attention
                             weights' [B][H][T][T], drop_shortcut after the attention and
                             after the feed-forward, [B][T][C] each */
} attn_gpt2_outputs;

/* model(idx): idx [B][T] token ids in [0, V). In training mode dropout
 * draws from rng in forward order (see dropout_masks); rng NULL means a
 * fresh process's generator.
 * pool (may be NULL) shares the products with idle threads, split by fixed
 * blocks of rows and columns: the same bits whatever the pool. params must
 * be finite: made by attn_gpt2_params_init, or passed by
 * attn_gpt2_params_check once (they are not checked again per block; a
 * result beyond float32 is still an ATTN_ERR_NONFINITE).
 * One work-space allocation. */
int attn_gpt2_forward(const attn_gpt2_plan *plan, const float *params, const int32_t *idx,
                      attn_pool *pool, attn_rng *rng, attn_gpt2_outputs *out, attn_error *err);

/* ==== Incremental decoding: the key/value cache ========================== */

/* The keys and values every block computed for the positions seen so far,
 * so that each new token costs one token's work: one row of every
 * projection (the weights read once, shared over the pool by blocks of
 * rows) and one query against the cached keys. Memory grows with the text
 * (capacity positions, chosen by the caller), not with its square.
 *
 *   size_t bytes;
 *   attn_gpt2_cache_bytes(&cfg, B, capacity, &bytes, &err);   budget first
 *   attn_gpt2_cache *c;
 *   attn_gpt2_cache_create(&cfg, B, capacity, &c, &err);
 *   attn_gpt2_plan plan;                     eval mode, T = the prompt's length
 *   attn_gpt2_plan_make(&cfg, B, T, 0, &plan, &err);
 *   attn_gpt2_outputs out = {.logits = last, .last_only = 1};
 *   attn_gpt2_prefill(&plan, params, prompt, c, pool, &out, &err);
 *   loop: choose next[B] from the logits (the caller's sampling), then
 *         attn_gpt2_decode(c, params, next, pool, &step, &err);
 *         step.logits holds the logits of the position after `next`;
 *         stop whenever the caller wants (nothing to release but the cache)
 *   attn_gpt2_cache_free(c);
 *
 * Context cropping (the book's generate_text_simple and generate: idx_cond =
 * idx[:, -context_size:]): a token at position t needs t < block_size. Once
 * the text is longer than block_size, every position of the window shifts
 * with each new token, so no cached key or value stays valid: each step is
 * then attn_gpt2_cache_reset and a whole attn_gpt2_prefill of the last
 * block_size tokens (or attn_gpt2_forward with last_only, no cache at all),
 * exactly the book's recomputation. attn_gpt2_decode refuses a full cache
 * (ATTN_ERR_SHAPE, field "cache").
 *
 * Decoding is eval-only (the book and nanoGPT generate after model.eval());
 * a cache belongs to one model, one batch size and one parameter buffer,
 * which the caller passes again to each call (the cache holds no pointer to
 * it). Cached decoding gives a whole forward's logits over the same text
 * within float rounding (not the same bits: the products are split
 * differently). */
typedef struct attn_gpt2_cache attn_gpt2_cache;

/* Bytes attn_gpt2_cache_create(cfg, batch, capacity) allocates: keys and
 * values [n_layer][batch][H][capacity][C/H] float32 each (8 * n_layer *
 * batch * capacity * n_embd bytes), one step's work space and the struct.
 * Validates like attn_gpt2_cache_create (capacity in [1, block_size]). */
int attn_gpt2_cache_bytes(const attn_gpt2_config *cfg, int batch, int capacity, size_t *bytes,
                          attn_error *err);

/* Allocates an empty cache (length 0) in one allocation. *cache is NULL on
 * failure. */
int attn_gpt2_cache_create(const attn_gpt2_config *cfg, int batch, int capacity,
                           attn_gpt2_cache **cache, attn_error *err);
/* Accepts NULL. */
void attn_gpt2_cache_free(attn_gpt2_cache *cache);
/* Positions held (0 after create or reset), and the capacity. */
int attn_gpt2_cache_length(const attn_gpt2_cache *cache);
int attn_gpt2_cache_capacity(const attn_gpt2_cache *cache);
/* Forgets every position (length 0); keeps the memory. */
void attn_gpt2_cache_reset(attn_gpt2_cache *cache);
/* Keeps the first `length` positions (0 <= length <= the current length),
 * to write again from there: the keys and values of a position depend only
 * on the tokens before it. ATTN_ERR_ARG (field "length") otherwise. */
int attn_gpt2_cache_truncate(attn_gpt2_cache *cache, int length, attn_error *err);

/* attn_gpt2_forward over the prompt idx [B][T] that also fills the cache
 * with the keys and values of positions 0..T-1 (the cache is reset first;
 * length T after). plan: the cache's config in eval mode (ATTN_ERR_ARG,
 * field "training", otherwise), batch equal to the cache's, T <= capacity
 * (ATTN_ERR_SHAPE, field "cache"). Every output of attn_gpt2_outputs is
 * available (last_only for the next token's logits, maps of the prompt...). */
int attn_gpt2_prefill(const attn_gpt2_plan *plan, const float *params, const int32_t *idx,
                      attn_gpt2_cache *cache, attn_pool *pool, attn_gpt2_outputs *out,
                      attn_error *err);

/* What one decode step gives; every pointer may be NULL. */
typedef struct {
    float *logits;     /* [B][V] at the new position (what the next token is drawn from) */
    float *attn_rows;  /* [n_layer][B][H][t], t = the cache's length after the step: what
                          the new token attended to in each block and head (its row of the
                          attention map; the rows of the prompt come from the prefill's
                          attn_weights), for a viewer that streams them */
} attn_gpt2_step_outputs;

/* One token per batch row: tokens [B] (ids in [0, V)) go in at position t =
 * attn_gpt2_cache_length(cache), their keys and values join the cache
 * (length t + 1), and out gets the logits at that position. params: the
 * buffer the prefill used. ATTN_ERR_SHAPE (field "cache") when the cache is
 * full (t == capacity: crop and prefill again, see above), ATTN_ERR_ARG
 * (field "tokens") for an id out of range, ATTN_ERR_NONFINITE if the result
 * overflowed (the cache then keeps its length). Steps from an empty cache
 * are allowed (a one-token prompt). No allocation. */
int attn_gpt2_decode(attn_gpt2_cache *cache, const float *params, const int32_t *tokens,
                     attn_pool *pool, attn_gpt2_step_outputs *out, attn_error *err);

/* ==== Inside the model: activations, interventions, the logit lens ====== */

/* The shape of a hook point's activation, batch axis first (TransformerLens
 * has the same shapes with its batch axis):
 *   RESID [B][T][C]   HEADS [B][T][H][D]   MAP [B][H][T][T]   MLP [B][T][4C] */
typedef enum {
    ATTN_HOOK_SHAPE_RESID = 0,
    ATTN_HOOK_SHAPE_HEADS = 1,
    ATTN_HOOK_SHAPE_MAP = 2,
    ATTN_HOOK_SHAPE_MLP = 3,
} attn_hook_shape;

/* TransformerLens's hook points of GPT-2, in forward order: the one table
 * of them. Columns:
 *   id     enum suffix: ATTN_HOOK_<id>
 *   name   TransformerLens's name: after "blocks.<l>." for a block's hooks,
 *          whole for the model's
 *   shape  ATTN_HOOK_SHAPE_<shape>
 *   block  1: one per block, 0: one per model
 *   what   what it holds, in either family
 * LayerNorms: hook_normalized is TransformerLens's, (x - mean) / sqrt(var +
 * eps), before the LayerNorm's weight and bias (ln_1/norm1, ln_2/norm2,
 * ln_f/final_norm). Dropout (training mode) is applied where the family
 * applies it: hook_pattern is before GPTModel's dropout of the weights,
 * hook_attn_out and hook_mlp_out are what is added to the residual. */
#define ATTN_HOOK_MAP(XX)                                                                       \
    XX(RESID_PRE, "hook_resid_pre", RESID, 1, "the block's input (the residual stream)")        \
    XX(LN1_NORMALIZED, "ln1.hook_normalized", RESID, 1,                                         \
       "the first LayerNorm's input normalised, before its weight and bias")                    \
    XX(Q, "attn.hook_q", HEADS, 1, "the queries (projection and bias)")                         \
    XX(K, "attn.hook_k", HEADS, 1, "the keys")                                                  \
    XX(V, "attn.hook_v", HEADS, 1, "the values")                                                \
    XX(ATTN_SCORES, "attn.hook_attn_scores", MAP, 1,                                            \
       "the scaled scores, masked entries -inf (the softmax's input)")                          \
    XX(PATTERN, "attn.hook_pattern", MAP, 1, "the attention weights (the softmax's output)")    \
    XX(Z, "attn.hook_z", HEADS, 1, "each head's weighted sum of values, before the output "     \
       "projection")                                                                            \
    XX(ATTN_OUT, "hook_attn_out", RESID, 1, "the attention's output, added to the residual")    \
    XX(RESID_MID, "hook_resid_mid", RESID, 1, "resid_pre + attn_out")                           \
    XX(LN2_NORMALIZED, "ln2.hook_normalized", RESID, 1,                                         \
       "the second LayerNorm's input normalised, before its weight and bias")                   \
    XX(MLP_PRE, "mlp.hook_pre", MLP, 1, "the MLP's first layer, before GELU")                   \
    XX(MLP_POST, "mlp.hook_post", MLP, 1, "after GELU")                                         \
    XX(MLP_OUT, "hook_mlp_out", RESID, 1, "the MLP's output, added to the residual")            \
    XX(RESID_POST, "hook_resid_post", RESID, 1, "the block's output")                           \
    XX(LN_FINAL_NORMALIZED, "ln_final.hook_normalized", RESID, 0,                               \
       "the final LayerNorm's input normalised, before its weight and bias")

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
int attn_hook_dims(const attn_gpt2_plan *plan, attn_hook h, int shape[4], size_t *count);

/* Keep one activation: hook h of block `layer` (ignored for a model hook)
 * is copied to dst (attn_hook_dims' count floats, caller-owned) as the
 * forward pass goes, after any intervention at that point. Only what is
 * asked is kept: a call holds no other activation than its work space's. */
typedef struct {
    int layer;
    attn_hook hook;
    float *dst;
} attn_gpt2_capture;

typedef enum {
    ATTN_ABLATE_ZERO = 0,  /* the head's hook_z set to 0 */
    ATTN_ABLATE_MEAN = 1,  /* the head's hook_z set to its mean over the positions of each
                              batch row */
} attn_ablation;

/* Knock out one head: its hook_z, before the output projection. */
typedef struct {
    int layer, head;
    attn_ablation method;
} attn_gpt2_ablate;

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
} attn_gpt2_patch;

/* What a run takes besides the plan and the parameters. */
typedef struct {
    const int32_t *idx;      /* [B][T] token ids; NULL when resid is given */
    const float *resid;      /* [B][T][C]: start at block start_layer with this as its input
                                (a hook_resid_pre of that block, or the hook_resid_post of the
                                one before, from another run), so that runs that differ only
                                from that block on (activation patching) do not recompute the
                                blocks before it. Eval mode only */
    int start_layer;         /* with resid: in [0, n_layer] (n_layer: the final LayerNorm and
                                the head only); without: 0 */
    const attn_gpt2_capture *captures;
    int n_captures;
    const attn_gpt2_ablate *ablations; /* applied in order, before the patches */
    int n_ablations;
    const attn_gpt2_patch *patches;
    int n_patches;
    attn_pool *pool;
} attn_gpt2_inputs;

/* The forward pass with activations kept, heads knocked out, activations
 * patched in, or a start part-way: attn_gpt2_forward is this with idx and
 * pool alone. Every output of attn_gpt2_outputs is available and comes
 * from the changed run; with resid, hidden_states' entries before
 * start_layer are not written. Interventions or captures at blocks before
 * start_layer are refused. A capture of a map hook (scores, pattern) makes
 * that block's attention materialise its maps, as attn_weights does.
 * Errors: ATTN_ERR_ARG with field "captures", "ablations", "patches",
 * "resid" or "start_layer" (naming the entry: "captures[2]") for an entry
 * out of range or a hook that cannot be patched, "training" for resid in
 * training mode; and those of attn_gpt2_forward. Several runs may go at
 * once (each its own call), e.g. as items of attn_pool_run with pool NULL
 * inside: see attn_gpt2_run_many. */
int attn_gpt2_run(const attn_gpt2_plan *plan, const float *params, const attn_gpt2_inputs *in,
                  attn_rng *rng, attn_gpt2_outputs *out, attn_error *err);

/* n independent runs of one plan (eval mode) shared over pool: each run is
 * one item on one thread (its products unsplit), as a patching sweep
 * wants: many small runs keep every thread busy with less synchronisation
 * than splitting each product. in[i]'s pool is ignored. status[i] (n
 * entries, required) gets each run's attn_status and errs[i] (may be NULL)
 * its error. Returns ATTN_OK if every run succeeded, else the first
 * failure's code. */
int attn_gpt2_run_many(const attn_gpt2_plan *plan, const float *params,
                       const attn_gpt2_inputs *in, attn_gpt2_outputs *out, int n,
                       attn_pool *pool, int *status, attn_error *errs);

/* The logit lens: logits [rows][V] = head(final LayerNorm(resid)) for rows
 * of residual stream resid [rows][C] (any block's hook_resid_pre, the last
 * block's hook_resid_post), with the model's own ln_f / final_norm and
 * lm_head / out_head. One allocation ([rows][C]). */
int attn_gpt2_logit_lens(const attn_gpt2_plan *plan, const float *params, const float *resid,
                         int rows, attn_pool *pool, float *logits, attn_error *err);

/* ==== Sampling ============================================================ */

/* Tensor.exponential_(lambd) on a contiguous float32 tensor of n elements,
 * draw for draw as PyTorch 1.13's CPU kernel without MKL (Debian's): per
 * element one 53-bit double uniform u (two 32-bit outputs, the first as the
 * high word), -1 / lambd * log(1 - u) in double, rounded to float.
 * Consecutive calls continue the generator as consecutive exponential_ calls
 * do. lambd > 0. */
void attn_rng_exponential_fill(attn_rng *rng, float *x, size_t n, double lambd);

/* torch.softmax(x, -1) of one row of n floats, bit for bit as PyTorch 1.13's
 * AVX2 CPU kernel computes it (SLEEF's expf, its eight-lane sum, then
 * x * (1 / sum)). y may be x. x must have a finite maximum and no NaN. */
void attn_softmax_torch(const float *x, float *y, size_t n);

/* How the next token is chosen from one row of V logits:
 *   temperature 0: greedy, torch.argmax (the first largest); no draw, the
 *     filters play no part (the book's generate_text_simple);
 *   temperature > 0: the book's generate() (Raschka, ch. 5): top_k keeps the
 *     logits >= the top_k-th largest (ties kept; 0 = off, >= V = off, as
 *     nanoGPT clamps it), divides by temperature (float32), then top_p as
 *     Hugging Face's TopPLogitsWarper (sort ascending, cumulative softmax,
 *     drop where the cumulative probability <= 1 - top_p, keep the most
 *     likely always; 1 = off), softmax, torch.multinomial(probs, 1): one
 *     exponential_ draw of V values from the generator, as PyTorch makes it.
 * top_p is in [0, 1]; note that 0 keeps one token: start from
 * ATTN_SAMPLER_GREEDY, not from a zeroed struct, and set what you need. */
typedef struct {
    double temperature;
    int top_k;
    double top_p;
} attn_sampler;

#define ATTN_SAMPLER_GREEDY ((attn_sampler){.temperature = 0.0, .top_k = 0, .top_p = 1.0})

/* A token and its log-probability under the model: log_softmax of the raw
 * logits (before temperature and filters), within 1e-6 of PyTorch's. */
typedef struct {
    int32_t id;
    float logprob;
} attn_token_logprob;

/* Bytes of scratch attn_sample needs for these options and V logits: 0 for
 * greedy, 4 V with temperature, 20 V with top_p < 1 too; opt NULL gives the
 * most any options need (20 V). 0 also when V < 1 or the size overflows. */
size_t attn_sample_scratch_size(const attn_sampler *opt, int n_vocab);

/* Chooses the next token from logits[0..n_vocab) (no NaN or +inf, at least
 * one finite; -inf rules a token out). chosen gets the id and its
 * log-probability; top (room for n_top, 0 <= n_top <= n_vocab, may be NULL
 * when 0) the n_top most likely tokens, most likely first, ties to the lower
 * id. rng (used only when temperature > 0; may then not be NULL) advances by
 * exactly n_vocab exponential draws, as torch.multinomial's does, and is
 * untouched when the call fails. scratch (attn_sample_scratch_size bytes at
 * least, aligned for float; may be NULL for greedy) is the only memory used:
 * nothing is allocated, and concurrent calls with their own rng and scratch
 * are safe. Returns ATTN_OK, ATTN_ERR_ARG (an option, size or pointer,
 * err->field names it), or ATTN_ERR_NONFINITE (NaN or +inf logits, none
 * finite, or logits / temperature overflowing). */
int attn_sample(const attn_sampler *opt, const float *logits, int n_vocab, attn_rng *rng,
                void *scratch, size_t scratch_size, attn_token_logprob *chosen,
                attn_token_logprob *top, int n_top, attn_error *err);

/* The probabilities attn_sample draws from with these options (temperature
 * > 0): probs[0..n_vocab) = torch.softmax of the filtered, scaled logits,
 * bit for bit as the book's generate() hands them to torch.multinomial.
 * scratch as for attn_sample (its first 4 n_vocab bytes are not used here).
 * No generator, no allocation. Errors as attn_sample's. */
int attn_sample_probs(const attn_sampler *opt, const float *logits, int n_vocab, float *probs,
                      void *scratch, size_t scratch_size, attn_error *err);

/* ==== BLAS kernel check ================================================== */

/* What attn_blas_check found about the OpenBLAS kernels of this process. */
typedef struct {
    int passed;          /* 1: every product within its bound */
    int products;        /* products compared */
    double worst;        /* largest |BLAS - reference| / bound over every entry
                            (< 1 passes; INFINITY for NaN or a wrong entry at bound 0) */
    char failed[48];     /* the first product out of bound ("" when passed) */
    char core[32];       /* openblas_get_corename(): "Zen", "Haswell", "SkylakeX", ... */
    char config[160];    /* openblas_get_config() */
    double ms;           /* how long the check took */
} attn_blas_report;

/* Checks the kernels OpenBLAS picked for this process on the products the
 * core runs (nn.Linear blocks NT with K = 768 and 3072, NN for the raw
 * [in][out] weights, QKᵀ and PV of the attention tiles with their strides,
 * sgemv both ways and a one-row sgemm for decoding), at OpenBLAS's current
 * thread count, against a plain loop accumulating in double. An entry passes
 * when |c - ref| <= gamma(k + 2) * (|alpha| sum_l |a_il b_lj| + |beta c0_ij|),
 * gamma(n) = n u / (1 - n u), u = 2^-24: Higham's bound for any float32
 * summation order (with or without FMA) of k products, plus alpha and beta;
 * the double reference's own error is below 2^-29 of that. Takes about ten
 * milliseconds. Fills r and returns ATTN_OK (r->passed says the verdict),
 * ATTN_ERR_ARG for r NULL, ATTN_ERR_NOMEM.
 * For tests only: when the environment variable ATTN_BLAS_CHECK_FAIL lists
 * the current core (comma-separated names, case-insensitive), one entry of
 * the first product is made wrong by 1.0 before the comparison, as a wrong
 * kernel would; nothing else reads it. */
int attn_blas_check(attn_blas_report *r);

/* ==== Cancellation ====================================================== */

/* Gives the calling thread a check that the calls it makes from now on
 * (attn_forward, attn_gpt2_forward) ask before each item of their work (a
 * tile of attention, a block of rows of a product), on every thread that
 * helps them: once stop(ctx) returns nonzero, the items not begun are
 * skipped and the call returns ATTN_ERR_CANCELLED, its outputs incomplete.
 * A server stops a computation whose client has gone, or when it must end,
 * within an item's time. stop must be cheap and safe from any thread (an
 * atomic load); ctx must outlive the calls. stop NULL removes the check.
 * attn_pool_run's items are never skipped. */
void attn_cancel_set(int (*stop)(void *ctx), void *ctx);

#endif
