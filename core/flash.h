/* flash.h - fused attention: softmax(Q Kᵀ scale + masks) V without any
 * [L][S] tensor (private).
 *
 * FlashAttention-2's forward pass (Dao, 2023) on the CPU: each item of work
 * is one (batch, head, tile of ATTN__FLASH_BQ query rows); it walks the key
 * tiles of ATTN__FLASH_BK keys, computes their scores with one cblas_sgemm,
 * applies the masks, keeps a running row maximum and row sum (the online
 * softmax), rescales its output rows when the maximum grows and adds
 * P·V_tile with a second cblas_sgemm. Key tiles entirely above the causal
 * diagonal are never touched. The output rows are accumulated in place in
 * context_heads and divided by the row sum at the end; a row whose keys are
 * all masked stays all-zero, the convention of attention.h.
 *
 * The kernel owns no memory: the caller passes attn__pool_width(pool) slots
 * of attn__flash_scratch() floats, one per thread. Tile sizes are constants,
 * so the work split and every result are the same for any thread count.
 */
#ifndef ATTN_FLASH_H
#define ATTN_FLASH_H

#include "kernel.h"
#include "parallel.h"

#define ATTN__FLASH_BQ 128  /* query rows per tile */
#define ATTN__FLASH_BK 256  /* keys per tile */

typedef struct {
    const attn_plan *plan;
    const attn_config *cfg;     /* causal */
    const attn_inputs *inputs;  /* attn_mask_bool / attn_mask_add / key_padding_mask */
    attn__view q, k, v;
    float *context_heads;       /* [B][L][H*Dv], written */
    float *scratch;             /* attn__pool_width(pool) * attn__flash_scratch(plan) floats */
} attn__flash;

/* 1 when the fused kernel computes what the materialised one would for this
 * call: softmax normalisation with -inf masking (the seeds' renorm method
 * and the sum normalisation keep the materialised kernel). */
int attn__flash_applies(const attn_config *cfg);

/* The ATTN_OUT_* bits of the outputs given (non-NULL) in out. */
unsigned attn__outputs_asked(const attn_outputs *out);

/* 1 when a call of this plan asking for `outputs` (ATTN_OUT_* bits) runs the
 * fused kernel: attn__flash_applies, no [L][S] output and no dropout on the
 * weights (PyTorch draws that mask over whole rows of weights). */
int attn__flash_used(const attn_config *cfg, const attn_plan *plan, unsigned outputs);

/* Floats of scratch one thread needs. */
size_t attn__flash_scratch(const attn_plan *plan);

/* Fills f->context_heads for every (b, h), splitting the work over pool. */
void attn__flash_run(const attn__flash *f, attn_pool *pool);

#endif
