/* rows.h - elementwise row kernels of the attention tiles and GPT-2's
 * residual stream (private).
 *
 * Like vexp.h's, each is built for AVX-512, AVX2 and the baseline
 * (target_clones) and picked once per process; every clone computes the
 * same bits (elementwise float operations, no fused multiply-add, no
 * reordered sums: tests/test_core_clones.c compares them).
 */
#ifndef ATTN_ROWS_H
#define ATTN_ROWS_H

#include <stdint.h>

/* out[j] = mask[j] ? -INFINITY : raw[j] * scale + (add ? add[j] : 0) for
 * j < n: a row of scaled and masked scores (mask may be NULL: none). */
void attn__scores_row(float *out, const float *raw, float scale, const float *add,
                      const uint8_t *mask, int n);

/* One row of a flash tile, x[c] the score of key j0 + c for c < n, in
 * place: x[c] += add[c] (add may be NULL), then -INFINITY where bm[c] or
 * pad[c] is set (either may be NULL) and for c >= causal_from (n or more:
 * no causal mask). */
void attn__mask_row(float *x, const float *add, const uint8_t *bm, const uint8_t *pad,
                    int causal_from, int n);

/* y[j] *= d[j] for j < n (dropout multipliers). */
void attn__mul_row(float *y, const float *d, int n);

#endif
