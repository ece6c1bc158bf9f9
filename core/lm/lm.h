/* lm.h - what the files of a whole model's run share (private to core/lm/,
 * prefix attn__):
 *
 *   plan.c     the plan: a config checked through its row, every size, costs
 *   params.c   the state_dict from the row's tables: entries, the weights of
 *              each role, construction from a seed, checks, dropout calls
 *   ops.c      a run's products and norms, in its mode (the lowest file)
 *   work.c     one call's work space, sized once, one allocation
 *   block.c    the block: every layer of every architecture, every mode
 *   attend.c   a block's attention: projections, q/k norms, rotary
 *              positions, then the dense kernels or the cached rows
 *   capture.c  captures, ablations and patches (the hook points) and their
 *              checks; hooks.c: the hook table
 *   inputs.c   padding, positions, token types, packing, the embeddings
 *   head.c     the final norm, the head, the pooler; pool.c: pooling
 *   forward.c  the forward pass (and the prefill that fills a cache)
 *   step.c     one step over rows of many sequences; cache.c: the cache
 *   lens.c     the logit lens; many.c: runs shared over the pool
 *
 * A run is dense (rows = B * T tokens of a [B][T] batch, attention among
 * them through the kernels of core/), packed (a padded batch's tokens
 * alone) or a step (rows of any sequences, each attending to its
 * sequence's cached keys); the block is the same.
 */
#ifndef ATTN_LM_PRIVATE_H
#define ATTN_LM_PRIVATE_H

#include "core/arch/arch.h"
#include "core/kernel.h"

/* ==== The tensors (params.c) ============================================== */

/* Where each tensor of the model starts, by role (NULL: the model has no
 * such tensor). For a block, q/k/v also as one [QD + 2 KVD][C] matrix (and
 * one bias) when they lie one after the other in the buffer: qkv_w then
 * points at it and a single product makes all three. */
typedef struct {
    const float *w[ATTN__ROLE_COUNT];
    const float *qkv_w, *qkv_b;
} attn__weights;

/* The model's tensors before and after the blocks (the head is the token
 * embedding when tied), and block l's. */
void attn__model_weights(const attn_lm_plan *p, const float *params, attn__weights *v);
void attn__block_weights(const attn_lm_plan *p, const float *params, int l, attn__weights *v);
/* The size of dimension d in plan p. */
size_t attn__dim_size(const attn_lm_plan *p, attn__dim d);
/* 1 if tensor t is part of a model of spec s. */
int attn__tensor_present(const attn_lm_spec *s, const attn__tensor *t);
/* Floats of the tensors before the blocks, of one block, after them. */
void attn__layout_sizes(const attn_lm_plan *p, size_t *top, size_t *block, size_t *tail);
/* Entries of one block in the state_dict. */
int attn__block_entries(const attn_lm_plan *p);
/* Floats of the dropout multipliers before block l's. */
size_t attn__dropout_offset(const attn_lm_plan *p, int l);

/* ==== A run =============================================================== */

typedef struct attn__run {
    const attn_lm_plan *p;
    const attn__arch *arch;
    const float *params;
    attn_pool *pool;
    attn_rng *rng;            /* NULL unless dropout is active */
    const attn_lm_outputs *out;
    const attn_lm_inputs *in; /* captures and interventions (never NULL) */
    attn_lm_cache *cache;     /* prefill: each block's keys and values go there;
                                 step: the rows attend to it */
    attn__weights mw;         /* the tensors before and after the blocks */
    int rows;                 /* B * T (dense), the step's rows */
    int step;                 /* a step: few-row products, cached attention */
    const int *seq;           /* step: each row's sequence */
    const int *slot;          /* step: each row's index in its sequence's cache */
    const int *pos;           /* each row's position (dense: NULL, t) */
    const uint8_t *kpm;       /* [B][T] 1 = padding (the kernels' key_padding_mask), or NULL */
    int packed;               /* rows: the tokens alone; start [B + 1] where each batch row's */
    const int *start, *src;   /* begin, src [rows] each row's index in [B][T]; seq_plan [B] */
    attn_plan *seq_plan;      /* each batch row's attention; inputs_mem: their allocation */
    void *inputs_mem;
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
    uint8_t *wbool;           /* [T][T] a window shorter than T (1: a key too far back) */
    uint8_t *wmask;           /* [B][T][T] the mask of a local layer that materialises */
    float *tmp;               /* [QD + 2 KVD] one row's scratch (GPT-NeoX's per-head q/k/v) */
    float *rowbuf;            /* 3 * width * ATTN__MAP_ROWS * T: the materialised kernel's
                                 per-thread rows of scores, masked scores and weights */
    float *flash;             /* width * attn__flash_scratch: the fused kernel's tiles */
    float *wdrop;             /* [B][H][T][T] the weights' dropout (dropout_masks not asked) */
    float *masked;            /* [B][H][T][T] masked scores (captured, or training's maps) */
    float *scores;            /* step: [rows][H][capacity] */
    float *unit;              /* [2][C] ones and zeros: the hook_normalized captures' norm */
    int width;                /* attn_pool_width(pool) */
} attn__run;

/* ==== work.c ============================================================== */

/* Sizes the work space of run r (its plan, outputs and captures), allocates
 * it and points r's work pointers into it. Returns the allocation (free()
 * it), or NULL with err set. */
void *attn__run_alloc(attn__run *r, attn_error *err);
/* 1 if block l's attention goes through the materialised kernel (maps are
 * kept or captured, or dropout acts on the weights). */
int attn__run_materialises(const attn__run *r, int l);
/* 1 if block l keeps its whole masked scores (r->masked). */
int attn__run_keeps_masked(const attn__run *r, int l);

/* ==== inputs.c, head.c ==================================================== */

/* inputs.c: token types and mask checked; the kernels' padding mask, the
 * positions (RoBERTa's, a packed row's) and the packing when the batch
 * allows it (sets r->rows), in one allocation; the embeddings into r->x;
 * rows out to [B][T][width] (packed: padding 0); the row of batch row b's
 * first and last token. */
int attn__inputs_check(const attn_lm_plan *p, const attn_lm_inputs *in, attn_error *err);
int attn__inputs_prepare(attn__run *r, attn_error *err);
void attn__inputs_free(attn__run *r);
void attn__embed_input(attn__run *r);
void attn__rows_out(const attn__run *r, float *dst, const float *src, int width);
int attn__row_first(const attn__run *r, int b);
int attn__row_last(const attn__run *r, int b);
/* head.c: the final norm, the last hidden states, the pooler, the logits
 * (every row, or each batch row's last token); the head of rows already
 * normalised (an MLM transform first: tmp holds rows * C floats). */
int attn__finish(attn__run *r, attn_error *err);
void attn__head_rows(attn_pool *pool, const attn_lm_plan *p, const attn__weights *mw,
                     const float *x, int ldx, int rows, float *tmp, float *y, int *bad);

/* ==== ops.c =============================================================== */

/* y[rows][out] = x · Wᵀ + b (then act), by the products of r's mode. */
void attn__product(const attn__run *r, float *y, int ldy, const float *x, int in, int out,
                   const float *w, const float *b, int act);
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

/* ==== cache.c ============================================================= */

struct attn_lm_cache {
    attn_lm_plan plan;        /* the model with B = seqs, T = 1, eval: one step's sizes */
    int seqs, capacity;
    int *length, *next_pos;   /* [seqs] cached positions, and the next row's position */
    float *k, *v;             /* [n_layer][seqs][Hkv][capacity][D] */
    void *work;               /* a step's work space for up to `seqs` rows */
    size_t work_floats;
};

/* Keys (or values, which = 1) of block l, sequence s, key/value head h:
 * [capacity][D]. */
float *attn__cache_at(const attn_lm_cache *c, int which, int l, int s, int h);
/* Stores the keys and values of rows [0, n) of r->qkv into their
 * sequences' slots (dense: batch row b is sequence b, slot t). */
void attn__cache_store(const attn__run *r, int l);
/* ATTN_OK if plan describes the cache's model in eval mode with B <= seqs
 * and T <= capacity; otherwise an error naming the mismatch. */
int attn__cache_accepts(const attn_lm_cache *c, const attn_lm_plan *plan, attn_error *err);
/* Floats of a step's work space for n rows (work.c's layout): the row
 * pieces, the scores, and 3 n ints (each row's sequence, slot, position). */
size_t attn__step_work_floats(const attn_lm_plan *p, int n, int capacity);
/* Points r's work pointers (r->rows rows) into such a space; returns where
 * its 3 r->rows ints start. */
int *attn__step_work_carve(attn__run *r, float *base, int capacity);

#endif
