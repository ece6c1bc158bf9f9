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
 *   capture.c  the hook points: captures, ablations, patches, checks; hooks.c: the table
 *   inputs.c   padding, positions, token types, packing, the embeddings
 *   head.c     the final norm, the head, the pooler; pool.c: pooling
 *   forward.c  the forward pass (and the prefill that fills a cache)
 *   step.c     one step over rows of many sequences; cache.c: the cache; lens.c:
 *              the logit lens; many.c: runs shared over the pool
 *   analysis.c the analyses of each block's weights; loss.c: the loss;
 *              importance.c: ablated runs, costs; run.c: attn_lm_run
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
#include "core/linear.h"

/* ==== The tensors (params.c) ============================================== */
/* Where each tensor starts, by role (NULL: none): float32 vectors, matrices
 * in the plan's weights_dtype; a block's q/k/v also as one [QD + 2 KVD][C]
 * matrix (qkv_w, qkv_b) when they lie one after the other: one product. */
typedef struct {
    const void *w[ATTN__ROLE_COUNT];
    const void *qkv_w, *qkv_b;
} attn__weights;

/* The tensors before and after the blocks (the head: the token embedding when tied); block l's. */
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
    int rows, score_ld;       /* B * T (dense), the step's rows; a step's scores' row length */
    int step;                 /* a step: few-row products, cached attention */
    const int *seq, *slot;    /* step: each row's sequence, its index in that one's cache */
    attn_lm_cache **row_cache;/* step over several caches: each row's (NULL: cache) */
    const int *pos;           /* each row's position (dense: NULL, t) */
    const uint8_t *kpm;       /* [B][T] 1 = padding (the kernels' key_padding_mask), or NULL */
    int packed;               /* rows: the tokens alone; start [B + 1] where each batch row's */
    const int *start, *src;   /* begin, src [rows] each row's index in [B][T]; seq_plan [B] */
    attn_plan *seq_plan;      /* each batch row's attention */
    void *inputs_mem;         /* their allocation */
    const attn_lm_step_outputs *step_out; /* step: its logits and attention rows */
    /* the work space, one allocation (work.c) */
    float *x, *h, *a, *a2;    /* [rows][C] the residual stream, a norm's output, the
                                 attention's output, the MLP's output */
    float *qkv;               /* [rows][QD + 2 KVD] queries, keys, values (token-major) */
    float *z;                 /* [rows][QD] heads concatenated, before the output projection */
    float *m;                 /* [rows][F] the MLP's hidden layer ([rows][2F]: gate, up) */
    float *rope, *inv_freq;   /* [rows][rot] cos then sin of each row's angles, or NULL;
                                 [rot / 2] the rotary frequencies of the current layer */
    uint8_t *mask, *wbool, *wmask; /* [B][T][T] the mask when a block materialises; [T][T] a
                                 local window under T (1: too far back); [B][T][T] its mask */
    float *tmp;               /* [QD + 2 KVD] one row's scratch (GPT-NeoX's per-head q/k/v) */
    float *rowbuf;            /* 3 * width * ATTN__MAP_ROWS * T: materialised per-thread rows */
    float *flash;             /* width * attn__flash_scratch: the fused kernel's tiles */
    float *wdrop;             /* [B][H][T][T] the weights' dropout (dropout_masks not asked) */
    float *masked, *scores;   /* [B][H][T][T] masked scores (captured, or training's maps);
                                 step: [rows][H][capacity] */
    float *unit;              /* [2][C] ones and zeros: the hook_normalized captures' norm */
    float *wtile;             /* dense, half-size weights: widened blocks, one per thread */
    float *pattern, *abar;    /* [B][H][T][T] one block's weights for the analyses alone,
                                 [B][T][T] the rollout's head means of one block */
    int *occ;                 /* [B][T] each position's previous occurrence of its token (-1) */
    float *lossbuf;           /* a chunk of logits rows for the loss (attn__loss_rows) */
    float *keep;              /* [n_layer][B][T][C] each block's input (importance's) or NULL */
    int whole, width;         /* attn_lm_run's own call (importance may be asked); pool's width */
} attn__run;

/* ==== work.c ============================================================== */
/* r's work space (plan, outputs, captures), r's pointers into it: the allocation or NULL. */
void *attn__run_alloc(attn__run *r, attn_error *err);
/* 1 if block l's attention is materialised (maps kept or captured, weight
 * dropout); 1 if it keeps its whole masked scores (r->masked). */
int attn__run_materialises(const attn__run *r, int l);
int attn__run_keeps_masked(const attn__run *r, int l);

/* ==== inputs.c, head.c ==================================================== */
/* inputs.c: types and mask checked; padding mask, positions, packing (r->rows) in one
 * allocation; the embeddings into r->x; rows out to [B][T][width] (packed: padding 0);
 * the rows of batch row b's first and last token. */
int attn__inputs_check(const attn_lm_plan *p, const attn_lm_inputs *in, attn_error *err);
int attn__inputs_prepare(attn__run *r, attn_error *err);
void attn__inputs_free(attn__run *r);
void attn__embed_input(attn__run *r);
void attn__rows_out(const attn__run *r, float *dst, const float *src, int width);
int attn__row_first(const attn__run *r, int b);
int attn__row_last(const attn__run *r, int b);
/* head.c: final norm, last hidden states, pooler, logits; the head of normalised rows
 * (an MLM transform first: tmp holds rows * C floats). */
int attn__finish(attn__run *r, attn_error *err);
void attn__head_rows(attn_pool *pool, const attn_lm_plan *p, const attn__weights *mw,
                     const float *x, int ldx, int rows, float *tmp, float *wtile, float *y,
                     int *bad);

/* ==== ops.c =============================================================== */
/* y[rows][out] = x · Wᵀ + b (then act) by r's mode; w in the plan's weights_dtype. */
void attn__product(const attn__run *r, float *y, int ldy, const float *x, int in, int out,
                   const void *w, const float *b, int act);
/* The same, dense, any rows (head, lens, loss): a's wtype and scratch from p, wtile;
 * floats of one thread's widened block for p's largest product (0: float32). */
void attn__product_dense(const attn_lm_plan *p, float *wtile, attn_pool *pool,
                         attn__linear_args *a);
size_t attn__lm_tile_floats(const attn_lm_plan *p);
/* x[rows][C] = the embeddings of tokens tok at positions pos, scaled, any dtype;
 * y[rows][C] = the model's norm of x (weights w, b). */
void attn__run_embed(const attn_lm_plan *p, const attn__weights *mw, float *x,
                     const int32_t *tok, const int *pos, int rows);
void attn__run_norm(const attn__run *r, float *y, const float *x, const float *w, const float *b,
                    size_t rows);

/* ==== block.c and attend.c ================================================= */
/* Block l (pre-norm, parallel or post-norm), dropout from r->rng in PyTorch's order. */
void attn__block_run(attn__run *r, int l);
/* Block l's attention: r->h -> r->qkv -> r->z, maps, dropout, the cache's keys. */
void attn__lm_attend(attn__run *r, int l, const attn__weights *w);

/* ==== capture.c =========================================================== */
/* The first capture of (layer, hook), or NULL; an activation (n rows of width, ld
 * apart) to every capture of (layer, hook) but src. */
float *attn__capture_dst(const attn__run *r, int layer, attn_hook hook);
void attn__capture(const attn__run *r, int layer, attn_hook hook, const float *src, size_t n,
                   int width, int ld);
/* Block l's ablations and patches on r->z (hook_z); the patches of (l, hook) on x [B][T][C]. */
void attn__intervene_z(const attn__run *r, int l);
void attn__patch_resid(const attn__run *r, int l, attn_hook hook, float *x);
/* A norm's normalised input x (hook_normalized) captured; in checked against the plan. */
void attn__capture_normalized(const attn__run *r, int layer, attn_hook hook, const float *x);
int attn__check_inputs(const attn_lm_plan *p, const attn_lm_inputs *in, attn_error *err);

/* ==== forward.c, analysis.c, loss.c, importance.c ========================= */
/* The run r describes: checks, work, blocks, head; importance: that keeping each
 * block's input, then the ablated runs. */
int attn__run_call(attn__run *r, attn_error *err);
int attn__importance(attn__run *r, attn_error *err);
/* 1 if an analysis of the maps is asked; the checks (idx, block 0, T >= 2, importance
 * only from attn_lm_run); before the blocks; block l's from its weights [B][H][T][T]. */
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
};

/* Keys (or values, which = 1) of block l, sequence s, key/value head h: [capacity][D]. */
float *attn__cache_at(const attn_lm_cache *c, int which, int l, int s, int h);
/* r->qkv's keys and values into their slots (dense: batch row b is sequence b, slot t). */
void attn__cache_store(const attn__run *r, int l);
/* ATTN_OK if plan is the cache's model, eval, B <= seqs, T <= capacity; else an error. */
int attn__cache_accepts(const attn_lm_cache *c, const attn_lm_plan *plan, attn_error *err);
/* Floats of a step's work space for n rows: the row pieces, scores, 3 n ints; r's
 * pointers (r->rows rows) into such a space: where its ints start. */
size_t attn__step_work_floats(const attn_lm_plan *p, int n, int capacity);
int *attn__step_work_carve(attn__run *r, float *base, int capacity);

#endif
