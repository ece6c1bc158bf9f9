/* kernel.h - the per-head attention kernel shared by every module (private). */
#ifndef ATTN_KERNEL_H
#define ATTN_KERNEL_H

#include "attention.h"
#include "parallel.h"

/* A [B][heads][rows][width] tensor seen through strides: element (b, h, i, :)
 * starts at p + b*sb + h*sh + i*ld and its `width` values are contiguous. */
typedef struct {
    const float *p;
    size_t sb, sh;
    int ld;
} attn__view;

/* Query rows per item of the materialised kernel. */
#define ATTN__MAP_ROWS 64

typedef struct {
    const attn_plan *plan;
    const attn_config *cfg;
    const attn_inputs *inputs;  /* masks */
    attn__view q, k, v;
    float *scores;         /* [B][H][L][S] raw Q·Kᵀ, or per-thread [ATTN__MAP_ROWS][S] */
    float *masked;         /* [B][H][L][S] scaled and masked, or per-thread rows */
    float *weights;        /* [B][H][L][S], or per-thread rows */
    size_t scores_step, masked_step, weights_step; /* L*S when kept per head, else 0:
                              then thread `slot` uses rows slot * ATTN__MAP_ROWS * S on */
    uint8_t *mask;         /* [B][L][S] */
    const float *dropout;  /* [B][H][L][S] multipliers, NULL = none */
    float *context_heads;  /* [B][L][H*Dv] */
} attn__heads;

/* Fills mask[B][L][S]: causal, attn_mask, key padding and -inf additive entries. */
void attn__build_mask(attn__heads *a);
/* Scores, masking, normalisation, dropout and weights·V for every (b, h),
 * by blocks of ATTN__MAP_ROWS query rows split over pool. Without the raw
 * scores asked for, keys above the causal diagonal are not multiplied. */
void attn__attend(attn__heads *a, attn_pool *pool);
/* Draws the dropout multipliers in the order PyTorch would. */
void attn__dropout_mask(float *mask, const attn_plan *p, const attn_config *cfg, attn_rng *rng);
/* avg[B][L][S] = mean over heads of weights[B][H][L][S]. */
void attn__average_heads(float *avg, const float *weights, const attn_plan *p);

#endif
