/* model.h - what the whole-model files (model_*.c, decode.c, hooks.c) share
 * (private to core/): typed views of the parameter buffer of either family
 * and the family's LayerNorm.
 *
 * The parameter buffer is the state_dict in PyTorch's order
 * (attn_gpt2_param_get); each block's attention is a slice laid out as core's
 * attention module of the family (ATTN_GPT2 or ATTN_MHA, params.c), so
 * attn__param_views finds its weights.
 */
#ifndef ATTN_MODEL_H
#define ATTN_MODEL_H

#include "internal.h"

/* Where the tensors the forward pass reads start (pointers into params). */
typedef struct {
    const float *wte, *wpe;      /* [V][C], [block_size][C] */
    const float *lnf_w, *lnf_b;  /* [C] */
    const float *head;           /* [V][C]: wte when tied */
} attn__model_view;

/* One block. The query, key and value projections are one [3C][C] matrix
 * (and one [3C] bias) when they lie one after the other in the buffer
 * (GPT2's c_attn, GPTModel without qkv_bias): wqkv then points at it and a
 * single product makes Q, K and V. */
typedef struct {
    const float *ln1_w, *ln1_b, *ln2_w, *ln2_b;  /* [C] */
    const float *wq, *wk, *wv;                   /* [C][C] each */
    const float *bq, *bk, *bv;                   /* [C] each, NULL without biases */
    const float *wqkv, *bqkv;                    /* the fused view, or NULL */
    const float *wo, *bo;                        /* [C][C], [C] */
    const float *fc_w, *fc_b;                    /* [4C][C], [4C] */
    const float *proj_w, *proj_b;                /* [C][4C], [C] */
} attn__block_view;

void attn__model_view_make(const attn_gpt2_plan *p, const float *params, attn__model_view *v);
void attn__block_view_make(const attn_gpt2_plan *p, const float *params, int layer,
                           attn__block_view *v);

/* One call of the forward pass: the plan, the parameters and the work
 * space, shared by the files that run its parts (model_forward.c: the
 * embeddings and the head; model_block.c: a block; model_attend.c: a
 * block's attention). */
typedef struct {
    const attn_gpt2_plan *p;
    const float *params;
    attn_pool *pool;
    attn_rng *rng;            /* NULL unless dropout is active */
    const attn_gpt2_outputs *out;
    const attn_gpt2_inputs *in; /* captures and interventions (never NULL) */
    attn_gpt2_cache *cache;   /* a prefill: each block's keys and values go there */
    attn__model_view mv;
    /* the work space, one allocation */
    float *x;                 /* [B][T][C] the residual stream */
    float *h;                 /* [B][T][C] LayerNorm outputs */
    float *qkv;               /* [B][T][3C] queries, keys, values (token-major) */
    float *z;                 /* [B][T][C] heads concatenated, before the output projection */
    float *a;                 /* [B][T][C] the attention's or MLP's output */
    float *m;                 /* [B][T][4C] the MLP's hidden layer */
    uint8_t *mask;            /* [B][T][T] the causal mask, when a block materialises */
    float *rows;              /* 3 * width * ATTN__MAP_ROWS * T: the materialised kernel's
                                 per-thread rows of scores, masked scores and weights */
    float *flash;             /* width * attn__flash_scratch: the fused kernel's tiles */
    float *wdrop;             /* [B][H][T][T] the weights' dropout multipliers (GPTModel in
                                 training mode) when dropout_masks is not asked */
    float *masked;            /* [B][H][T][T] masked scores, kept when they are captured or
                                 the weights before dropout are asked in training mode */
    float *unit;              /* [2][C] ones and zeros: a LayerNorm without its affine part,
                                 for the hook_normalized captures */
    int width;                /* attn_pool_width(pool) */
} attn__run;

/* Sizes the work space of a call of plan p asking for out, allocates it and
 * points r's work pointers into it. Returns the allocation (free() it), or
 * NULL with err set. */
void *attn__run_alloc(attn__run *r, attn_error *err);

/* 1 if block l's attention goes through the materialised kernel (maps are
 * kept or captured, or dropout acts on the weights). */
int attn__run_materialises(const attn__run *r, int l);
/* 1 if block l keeps its whole masked scores (r->masked). */
int attn__run_keeps_masked(const attn__run *r, int l);

/* ==== Captures and interventions (model_hooks.c) ==== */

/* The first capture of (layer, hook) in r->in, or NULL. */
float *attn__capture_dst(const attn__run *r, int layer, attn_hook hook);
/* Copies an activation to every capture of (layer, hook) but one whose dst
 * is src itself: n rows of `width` floats, rows ld floats apart in src. */
void attn__capture(const attn__run *r, int layer, attn_hook hook, const float *src, size_t n,
                   int width, int ld);
/* Captures a LayerNorm's normalised input x (hook_normalized), if asked. */
void attn__capture_normalized(const attn__run *r, int layer, attn_hook hook, const float *x);
/* The ablations and patches of block l on r->z (hook_z). */
void attn__intervene_z(const attn__run *r, int l);
/* The patches of (l, hook) on a [B][T][C] activation x (one position each). */
void attn__patch_resid(const attn__run *r, int l, attn_hook hook, float *x);
/* Validates r->in against the plan (the entries of every list). */
int attn__check_inputs(const attn_gpt2_plan *p, const attn_gpt2_inputs *in, attn_error *err);

/* x = x + attention(ln1(x)), x = x + mlp(ln2(x)) for block l, dropout
 * drawn from r->rng in PyTorch's order. */
void attn__block_run(attn__run *r, int l);

/* Block l's attention: r->h -> r->qkv -> r->z (heads concatenated), maps
 * and the weights' dropout as asked. */
void attn__model_attend(attn__run *r, int l, const attn__block_view *bv);

/* Floats of the dropout multipliers before block l's (attn_gpt2_outputs.dropout_masks). */
size_t attn__dropout_offset(const attn_gpt2_plan *p, int l);

/* y[rows][C] = the family's LayerNorm of x (nn.LayerNorm, or the book's
 * LayerNorm class); y may be x (model_layers.c). */
void attn__model_layernorm(const attn_gpt2_plan *p, float *y, const float *x, const float *w,
                           const float *b, size_t rows);

#endif
