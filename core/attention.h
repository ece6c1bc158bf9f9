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
    char field[128];    /* the option or tensor at fault: "d_out", "inputs", "params.W_key.weight" */
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

#define ATTN_PARAM_NAME_MAX 96

/* What a constant buffer holds (it is registered by the module, not
 * learnt): given ones are checked against it, missing ones filled with it. */
typedef enum {
    ATTN_BUFFER_NONE = 0,  /* not a buffer: a parameter */
    ATTN_BUFFER_TRIU = 1,  /* torch.triu(ones, diagonal=1): 1 above the diagonal = masked
                              (the seeds' "mask") */
    ATTN_BUFFER_TRIL = 2,  /* torch.tril(ones): 1 on and below the diagonal = allowed
                              (gpt2_min.py's "bias") */
} attn_buffer;

/* How a parameter buffer holds a tensor's values. A module's buffer is
 * float32 throughout; a whole model's may hold its weight matrices half-size
 * (attn_lm_config.weights_dtype, lm.h), widened to float32 as they are read. */
typedef enum {
    ATTN_DTYPE_F32 = 0,   /* float32 */
    ATTN_DTYPE_F16 = 1,   /* IEEE 754 binary16: 5 exponent bits, 10 fraction bits */
    ATTN_DTYPE_BF16 = 2,  /* bfloat16: the upper half of a float32 (8 exponent bits, 7
                             fraction bits) */
    ATTN_DTYPE_COUNT
} attn_dtype;

typedef struct {
    char name[ATTN_PARAM_NAME_MAX]; /* PyTorch state_dict key: "W_query.weight",
                                       "heads.1.W_key.bias", "c_attn.weight", "mask" */
    int rank;                 /* 1 to 4 */
    int shape[4];
    size_t offset;            /* in elements of its dtype (floats for F32), into the
                                 parameter buffer seen as an array of that dtype */
    size_t count;             /* product of the shape */
    attn_buffer buffer;       /* ATTN_BUFFER_NONE (0) for a parameter */
    attn_dtype dtype;         /* how the buffer holds it (F32 but in a whole model's
                                 half-size weight matrices) */
    size_t byte_offset;       /* its first byte in the parameter buffer */
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
 *     likely always; 1 = off), then min_p (below), softmax,
 *     torch.multinomial(probs, 1): one
 *     exponential_ draw of V values from the generator, as PyTorch makes it.
 * top_p is in [0, 1]; note that 0 keeps one token: start from
 * ATTN_SAMPLER_GREEDY, not from a zeroed struct, and set what you need. */
typedef struct {
    double temperature;
    int top_k;
    double top_p;
    double min_p; /* Hugging Face's MinPLogitsWarper after top_p: drop the
                     tokens whose probability (softmax of the filtered,
                     scaled logits) is < min_p * the largest; 0 = off, in [0, 1] */
} attn_sampler;

#define ATTN_SAMPLER_GREEDY \
    ((attn_sampler){.temperature = 0.0, .top_k = 0, .top_p = 1.0, .min_p = 0.0})

/* Penalties on tokens already in the text, applied to the raw logits
 * before the sampler (attn_penalize), in this order:
 *   repetition_penalty r (transformers' RepetitionPenaltyLogitsProcessor):
 *     every id in the prompt or generated so far, once: x < 0 ? x * r : x / r
 *     (float32); 1 = off, in (0, 1e6];
 *   frequency_penalty f, presence_penalty p (OpenAI's, as llama.cpp's
 *     penalties sampler applies them): x -= c * f + (c > 0) * p (float32),
 *     c the count of the id among the generated tokens only (the whole
 *     generation: no last-n window); 0 = off, each in [-2, 2]. */
typedef struct {
    double repetition_penalty;
    double frequency_penalty;
    double presence_penalty;
} attn_penalties;

#define ATTN_PENALTIES_OFF ((attn_penalties){.repetition_penalty = 1.0})

/* 1 when pen changes any logit (NULL: 0). */
int attn_penalties_on(const attn_penalties *pen);

/* Applies pen to logits[0..n_vocab) in place, for the text ids[0..n_ids)
 * whose first n_prompt are the prompt (0 <= n_prompt <= n_ids; every id in
 * [0, n_vocab)). counts: n_vocab int32 of zeros, the only memory used, left
 * zeros. ATTN_OK, or ATTN_ERR_ARG (an option, size, id or pointer; err->field
 * names it) with logits untouched. */
int attn_penalize(const attn_penalties *pen, float *logits, int n_vocab, const int32_t *ids,
                  int n_ids, int n_prompt, int32_t *counts, attn_error *err);

/* A token and its log-probability under the model: log_softmax of the raw
 * logits (before temperature and filters), within 1e-6 of PyTorch's. */
typedef struct {
    int32_t id;
    float logprob;
} attn_token_logprob;

/* Bytes of scratch attn_sample needs for these options and V logits: 0 for
 * greedy, 4 V with temperature, 20 V with top_p < 1 or min_p > 0 too; opt NULL gives the
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
 * (attn_forward, attn_lm_forward, attn_lm_step) ask before each item of their work (a
 * tile of attention, a block of rows of a product), on every thread that
 * helps them: once stop(ctx) returns nonzero, the items not begun are
 * skipped and the call returns ATTN_ERR_CANCELLED, its outputs incomplete.
 * A server stops a computation whose client has gone, or when it must end,
 * within an item's time. stop must be cheap and safe from any thread (an
 * atomic load); ctx must outlive the calls. stop NULL removes the check.
 * attn_pool_run's items are never skipped. */
void attn_cancel_set(int (*stop)(void *ctx), void *ctx);

#endif
