/* linear.h - nn.Linear over many rows, split over the threads of a pool
 * (private). */
#ifndef ATTN_LINEAR_H
#define ATTN_LINEAR_H

#include "attention.h"

/* Rows per item: fixed, so the split never depends on the thread count. */
#define ATTN__LINEAR_ROWS 128

/* y[rows][out] = x[rows][in] · Wᵀ + b, W as nn.Linear stores it: [out][in];
 * or x · W with W stored [in][out] (SelfAttention_v1) when w_is_in_out.
 * bias may be NULL. Blocks of ATTN__LINEAR_ROWS rows are split over pool. */
void attn__linear(attn_pool *pool, float *y, const float *x, int rows, int in, int out,
                  const float *w, int w_is_in_out, const float *bias);

#endif
