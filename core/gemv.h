/* gemv.h - nn.Linear on a few rows (one token per batch row, as each step
 * of incremental decoding makes), split over a pool by blocks of output
 * columns (private).
 *
 * With one row a product is memory-bound: every weight is read once and
 * used once. The items are blocks of whole weight rows ([cols][in], about
 * 256 KB each, fixed by the shapes alone) so that the threads of the pool
 * stream disjoint parts of the matrix at once; each block is read from
 * memory once and stays in cache for the other rows of the batch. Each
 * output element is one dot product with one fixed sequence of operations,
 * so the results are the same bits whatever the pool.
 */
#ifndef ATTN_GEMV_H
#define ATTN_GEMV_H

#include "attention.h"

typedef struct {
    float *y;            /* [rows][ldy], columns [0, out) written */
    int ldy;             /* 0: out */
    const float *x;      /* [rows][in] */
    int rows, in, out;
    const void *w;       /* [out][in] as nn.Linear stores it, values of wtype */
    attn_dtype wtype;    /* F32 (BLAS), or F16 or BF16 (half.h's kernels, widened in
                            registers: half the bytes to read) */
    const float *bias;   /* [out] or NULL */
    int act;             /* ATTN__NO_ACT or an attn_act applied to each result */
} attn__gemv_args;

/* The column block of a product with `in` inputs: about 256 KB of weights,
 * a multiple of 16 columns (at least 16). */
int attn__gemv_cols(int in);

/* y = x · Wᵀ + b (then GELU), by column blocks split over pool: blocks of
 * attn__gemv_cols(in) columns, or of out / 64 when that is wider. */
void attn__gemv_run(attn_pool *pool, const attn__gemv_args *a);

/* The n (1 <= n <= ATTN__GEMV_MANY) products a[0..n) as one call over the
 * pool: the same blocks, so the same bits, with one hand-off to the pool
 * instead of n (a gated MLP's gate and up in a decode step). */
#define ATTN__GEMV_MANY 3
void attn__gemv_run_many(attn_pool *pool, const attn__gemv_args *a, int n);

#endif
