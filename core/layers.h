/* layers.h - GPT-2's layers besides attention (private to core/).
 * Shapes: x [rows][C] row-major float32; nothing allocates or fails. */
#ifndef ATTN_LAYERS_H
#define ATTN_LAYERS_H

#include "attention.h"

/* x[B][T][C] = wte[idx[b][t]] + wpe[t]; idx already checked against V. */
void attn__embed(float *x, const int32_t *idx, const float *wte, const float *wpe, int B, int T,
                 int C);
/* y[rows][C] = nn.LayerNorm(C, eps=1e-5)(x); y may be x. */
void attn__layernorm(float *y, const float *x, const float *gamma, const float *beta, size_t rows,
                     int C);
/* The book's LayerNorm (ch. 4): (x - mean) / sqrt(var + 1e-5) * scale + shift,
 * the biased variance; y may be x. */
void attn__layernorm_div(float *y, const float *x, const float *scale, const float *shift,
                         size_t rows, int C);
/* nn.Dropout(p) in training mode, in place: one Bernoulli draw per element
 * in order, kept values scaled by 1/(1-p); p >= 1 zeroes without drawing. */
void attn__dropout(float *x, size_t n, double p, attn_rng *rng);
/* attn__dropout that also writes its multipliers (0 or 1/(1-p)) to mask[n]
 * when mask is not NULL: the same draws and the same x. */
void attn__dropout_masked(float *x, float *mask, size_t n, double p, attn_rng *rng);
/* x[n] += y[n]. */
void attn__add(float *x, const float *y, size_t n);

#endif
