/* lm.h - what the files of a whole model's run share (private to core/lm/,
 * prefix attn__):
 *
 *   plan.c     the plan: a config checked through its row, every size, costs
 *   params.c   the state_dict from the row's tables: entries, each role's weights,
 *              a seed's construction, checks, dropout; convert.c: layout to layout
 *   ops.c      a run's products and norms, in its mode (the lowest file)
 *   work.c     one call's work space, sized once, one allocation
 *   block.c    the block: every layer of every architecture, every mode
 *   attend.c   a block's attention: projections, q/k norms, rotary, kernels or cache
 *   capture.c  captures, ablations and patches (the hook points) and their
 *              checks; hooks.c: the hook table
 *   forward.c  the forward pass (and the prefill that fills a cache)
 *   step.c     one step over rows of many sequences; cache.c: the cache
 *   lens.c     the logit lens; many.c: runs shared over the pool
 *   analysis.c the analyses of each block's weights; loss.c: the loss;
 *              importance.c: ablated runs, costs; run.c: attn_lm_run
 *
 * A run is dense (rows = B * T tokens of a [B][T] batch, attention among
 * them through the kernels of core/) or a step (rows of any sequences,
 * each attending to its sequence's cached keys); the block is the same.
 */
#ifndef ATTN_LM_PRIVATE_H
#define ATTN_LM_PRIVATE_H

#include "core/arch/arch.h"
#include "core/kernel.h"
#include "core/linear.h"

/* ==== The tensors (params.c) ============================================== */

/* Where each tensor starts, by role (NULL: none): float32 vectors, matrices
 * in the plan's weights_dtype; a block's q/k/v also as one [QD + 2 KVD][C]
 * matrix (qkv_w, qkv_b) when they lie one after the other: one product. */
typedef struct {
    const void *w[ATTN__ROLE_COUNT];
    const void *qkv_w, *qkv_b;
} attn__weights;

/* The model's tensors before and after the blocks (the head is the token
 * embedding when tied); block l's. */
void attn__model_weights(const attn_lm_plan *p, const void *params, attn__weights *v);
void attn__block_weights(const attn_lm_plan *p, const void *params, int l, attn__weights *v);
/* The size of dimension d in plan p. */
size_t attn__dim_size(const attn_lm_plan *p, attn__dim d);
/* 1 if tensor t is part of a model of spec s. */
int attn__tensor_present(const attn_lm_spec *s, const attn__tensor *t);
/* Values of the tensors before the blocks, of one, after; bytes (each rounded to 4) if set. */
void attn__layout_sizes(const attn_lm_plan *p, int bytes, size_t *top, size_t *block,
                        size_t *tail);
/* Entries of one block in the state_dict. */
int attn__block_entries(const attn_lm_plan *p);
/* Floats of the dropout multipliers before block l's. */
size_t attn__dropout_offset(const attn_lm_plan *p, int l);

/* ==== A run =============================================================== */

typedef struct attn__run {
    const attn_lm_plan *p;
    const attn__arch *arch;
    const void *params;
    attn_pool *pool;
    attn_rng *rng;            /* NULL unless dropout is active */
    const attn_lm_outputs *out;
    const attn_lm_inputs *in; /* captures and interventions (never NULL) */
    attn_lm_cache *cache;     /* prefill: the blocks' keys and values go there; step: read */
    attn__weights mw;         /* the tensors before and after the blocks */
    int rows;                 /* B * T (dense), the step's rows */
    int step;                 /* a step: few-row products, cached attention */
    const int *seq;           /* step: each row's sequence */
    const int *slot;          /* step: each row's index in its sequence's cache */
    const int *pos;           /* each row's position (dense: NULL, t) */
    const attn_lm_step_outputs *step_out; /* step: its logits and attention rows */
    /* the work space, one allocation (work.c) */
    float *x;                 /* [rows][C] the residual stream */
    float *h;                 /* [rows][C] a norm's output */
    float *a;                 /* [rows][C] the attention's output */
    float *a2;                /* [rows][C] the MLP's output */
    float *qkv;               /* [rows][QD + 2 KVD] queries, keys, values (token-major) */
    float *z;                 /* [rows][QD] heads concatenated, before the output projection */
    float *m;                 /* [rows][F] the MLP's hidden layer ([rows][2F]: gate, up) */
    float *rope;              /* [rows][rot] cos then sin of each row's angles, or NULL */
    float *inv_freq;          /* [rot / 2] the rotary frequencies of the current layer */
    uint8_t *mask;            /* [B][T][T] the mask, when a block materialises */
    uint8_t *wbool;           /* [T][T] a local layer's window (1: too far back), if under T */
    uint8_t *wmask;           /* [B][T][T] the mask of a local layer that materialises */
    float *tmp;               /* [QD + 2 KVD] one row's scratch (GPT-NeoX's per-head q/k/v) */
    float *rowbuf;            /* 3 * width * ATTN__MAP_ROWS * T: materialised per-thread rows */
    float *flash;             /* width * attn__flash_scratch: the fused kernel's tiles */
    float *wdrop;             /* [B][H][T][T] the weights' dropout (dropout_masks not asked) */
    float *masked;            /* [B][H][T][T] masked scores, kept for captures or training's
                                 weights before dropout */
    float *scores;            /* step: [rows][H][capacity] */
    float *unit;              /* [2][C] ones and zeros: an unscaled norm (hook_normalized) */
    float *wtile;             /* dense, half-size weights: widened blocks, one per thread */
    float *pattern;           /* [B][H][T][T] one block's weights for the analyses alone */
    float *abar;              /* [B][T][T] the rollout's head means of one block */
    int *occ;                 /* [B][T] each position's previous occurrence of its token (-1) */
    float *lossbuf;           /* a chunk of logits rows for the loss (attn__loss_rows) */
    float *keep;              /* [n_layer][B][T][C] each block's input (importance's) or NULL */
    int whole;                /* attn_lm_run's own call: importance may be asked */
    int width;                /* attn_pool_width(pool) */
} attn__run;

/* ==== work.c ============================================================== */

/* Sizes run r's work space (plan, outputs, captures), allocates it and points
 * r's work pointers into it: the allocation (free() it), or NULL with err set. */
void *attn__run_alloc(attn__run *r, attn_error *err);
/* 1 if block l's attention is materialised (maps kept or captured, weight dropout). */
int attn__run_materialises(const attn__run *r, int l);
/* 1 if block l keeps its whole masked scores (r->masked). */
int attn__run_keeps_masked(const attn__run *r, int l);

/* ==== ops.c =============================================================== */

/* y[rows][out] = x · Wᵀ + b (then act) by r's mode; w in the plan's weights_dtype. */
void attn__product(const attn__run *r, float *y, int ldy, const float *x, int in, int out,
                   const void *w, const float *b, int act);
/* The same, dense, any rows (head, lens, loss): a's wtype and scratch from p, wtile. */
void attn__product_dense(const attn_lm_plan *p, float *wtile, attn_pool *pool,
                         attn__linear_args *a);
/* Floats of one thread's widened block for p's largest product (0: float32). */
size_t attn__lm_tile_floats(const attn_lm_plan *p);
/* x[rows][C] = the embeddings of tokens tok at positions pos, scaled, any dtype. */
void attn__run_embed(const attn_lm_plan *p, const attn__weights *mw, float *x,
                     const int32_t *tok, const int *pos, int rows);
/* y[rows][C] = the model's norm of x (weights w, b). */
void attn__run_norm(const attn__run *r, float *y, const float *x, const float *w, const float *b,
                    size_t rows);

/* ==== block.c and attend.c ================================================= */

/* x = x + attention(norm1(x)), x = x + mlp(norm2(x)) (or the parallel
 * form) for block l, dropout drawn from r->rng in PyTorch's order. */
void attn__block_run(attn__run *r, int l);
/* Block l's attention: r->h -> r->qkv -> r->z (heads concatenated), maps,
 * the weights' dropout and the cache's keys as asked. */
void attn__lm_attend(attn__run *r, int l, const attn__weights *w);

/* ==== capture.c =========================================================== */

/* The first capture of (layer, hook) in r->in, or NULL. */
float *attn__capture_dst(const attn__run *r, int layer, attn_hook hook);
/* Copies an activation to every capture of (layer, hook) but one whose dst
 * is src itself: n rows of `width` floats, rows ld floats apart in src. */
void attn__capture(const attn__run *r, int layer, attn_hook hook, const float *src, size_t n,
                   int width, int ld);
/* Captures a norm's normalised input x (hook_normalized), if asked. */
void attn__capture_normalized(const attn__run *r, int layer, attn_hook hook, const float *x);
/* The ablations and patches of block l on r->z (hook_z). */
void attn__intervene_z(const attn__run *r, int l);
/* The patches of (l, hook) on a [B][T][C] activation x (one position each). */
void attn__patch_resid(const attn__run *r, int l, attn_hook hook, float *x);
/* Validates in against the plan (the entries of every list). */
int attn__check_inputs(const attn_lm_plan *p, const attn_lm_inputs *in, attn_error *err);

/* ==== forward.c, analysis.c, loss.c, importance.c ========================= */

/* The run r describes (plan, params, inputs, outputs): checks, work, blocks, head. */
int attn__run_call(attn__run *r, attn_error *err);
/* r with importance: the forward keeping each block's input, the ablated runs. */
int attn__importance(attn__run *r, attn_error *err);
/* 1 if r's outputs ask an analysis of the maps; its checks (idx, block 0,
 * T >= 2 for the loss, importance only from attn_lm_run); before the
 * blocks (previous occurrences); block l's from its weights [B][H][T][T]. */
int attn__analysing(const attn__run *r);
int attn__analysis_check(const attn__run *r, attn_error *err);
void attn__analysis_start(attn__run *r);
void attn__analyse_block(attn__run *r, int l, const float *pattern);
/* Rows of logits the loss takes at once; r->out->loss from r->h or logits. */
int attn__loss_rows(const attn_lm_plan *p);
void attn__loss(attn__run *r);

/* ==== cache.c ============================================================= */

struct attn_lm_cache {
    attn_lm_plan plan;        /* the model with B = seqs, T = 1, eval: one step's sizes */
    int seqs, capacity;
    int *length, *next_pos;   /* [seqs] cached positions, and the next row's position */
    float *k, *v;             /* [n_layer][seqs][Hkv][capacity][D] */
    void *work;               /* a step's work space for up to `seqs` rows */
    size_t work_floats;
};

/* Keys (or values, which = 1) of block l, sequence s, key/value head h: [capacity][D]. */
float *attn__cache_at(const attn_lm_cache *c, int which, int l, int s, int h);
/* Stores the keys and values of rows [0, n) of r->qkv into their
 * sequences' slots (dense: batch row b is sequence b, slot t). */
void attn__cache_store(const attn__run *r, int l);
/* ATTN_OK if plan describes the cache's model in eval mode with B <= seqs
 * and T <= capacity; otherwise an error naming the mismatch. */
int attn__cache_accepts(const attn_lm_cache *c, const attn_lm_plan *plan, attn_error *err);
/* Floats of a step's work space for n rows (work.c's layout): the row pieces,
 * the scores, 3 n ints (each row's sequence, slot, position). */
size_t attn__step_work_floats(const attn_lm_plan *p, int n, int capacity);
/* Points r's work pointers (r->rows rows) into such a space: where its ints start. */
int *attn__step_work_carve(attn__run *r, float *base, int capacity);

#endif
