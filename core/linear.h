/* linear.h - nn.Linear over many rows, split over the threads of a pool
 * (private). */
#ifndef ATTN_LINEAR_H
#define ATTN_LINEAR_H

#include "attention.h"

/* An item is a block of at most ATTN__LINEAR_ROWS rows by attn__linear_cols
 * output columns: fixed by the shapes, so the split never depends on the
 * thread count. Columns are split too so that one short sequence (T = 128:
 * one row block) still gives every thread work; each output element is one
 * sgemm's dot product over `in` either way (OpenBLAS gives the same bits
 * split or not). Tall blocks: OpenBLAS packs a block's weight columns once
 * per call, so 512 rows by 384 columns ran a 512 x 768 x 2304 projection at
 * 97% of one sgemm's rate where 128-row blocks ran at 88-91%. */
#define ATTN__LINEAR_ROWS 512

/* The column block of a product with `out` columns: an even number of
 * blocks of at most about 512 columns (2 * ceil(out / 1024)), a multiple of
 * 16 wide. Wider blocks pack the rows fewer times (OpenBLAS packs its A per
 * call); an even count keeps two threads busy to the end. */
int attn__linear_cols(int out);

/* No activation after the product (attn__linear_args.act). */
#define ATTN__NO_ACT (-1)

typedef struct {
    float *y;            /* [rows][ldy], columns [0, out) written */
    int ldy;             /* 0: out */
    const float *x;      /* [rows][ldx] */
    int ldx;             /* 0: in */
    int rows, in, out;
    const void *w;       /* [out][in] as nn.Linear stores it, or [in][out] with w_is_in_out
                            (float32 only) */
    int w_is_in_out;
    attn_dtype wtype;    /* w's values; F16 and BF16 blocks are widened into scratch first */
    float *scratch;      /* half-size w: attn__linear_scratch(in, out) floats for each slot of
                            the pool (NULL: the few-row kernels instead, slower) */
    const float *bias;   /* [out] or NULL */
    int act;             /* ATTN__NO_ACT, or an attn_act applied to each result */
    int *nonfinite;      /* if not NULL: set to 1 (atomically) when a result is NaN or
                            infinite, checked block by block while in cache */
} attn__linear_args;

/* Floats of one thread's scratch for a product with half-size weights: the
 * largest block of weight rows an item widens ([attn__linear_cols(out)][in]),
 * so that the block goes through the same cblas_sgemm as float32 weights
 * (the same bits as the float32 copy of the same values). */
size_t attn__linear_scratch(int in, int out);

/* y = x · Wᵀ + b (then GELU), by items split over pool. */
void attn__linear_run(attn_pool *pool, const attn__linear_args *a);

/* y[rows][out] = x[rows][in] · Wᵀ + b, W as nn.Linear stores it: [out][in];
 * or x · W with W stored [in][out] (SelfAttention_v1) when w_is_in_out.
 * bias may be NULL. */
void attn__linear(attn_pool *pool, float *y, const float *x, int rows, int in, int out,
                  const float *w, int w_is_in_out, const float *bias);

#endif
