/* linear.c - a projection as blocks of rows and columns, one cblas_sgemm per
 * block (half-size weights widened block by block first), with the MLP's
 * activation applied to each block while it is in cache. */
#include "internal.h"
#include "linear.h"
#include "half.h"
#include "parallel.h"
#include "core/layers/layers.h"

#include <cblas.h>
#include <string.h>

typedef struct {
    attn__linear_args a;
    int cols;          /* the column block */
    long col_blocks;
} linear_job;

int attn__linear_cols(int out) {
    int n = 2 * ((out + 1023) / 1024);
    int w = (out + n - 1) / n;
    return (w + 15) / 16 * 16;
}

size_t attn__linear_scratch(int in, int out) {
    return (size_t)attn__linear_cols(out) * (size_t)in;
}

/* The block's y = x · Wᵀ (+ the bias y holds) with half-size W: its weight
 * rows widened into the slot's scratch, then the float32 product; without
 * scratch, the few-row kernels. */
static void half_block(const attn__linear_args *a, int r0, int rows, int c0, int cols, int slot,
                       float *y) {
    const uint16_t *w = (const uint16_t *)a->w + (size_t)c0 * (size_t)a->in;
    const float *x = a->x + (size_t)r0 * (size_t)a->ldx;
    if (a->scratch == NULL) {
        attn__half_dot_args d = {.x = x, .ldx = a->ldx, .rows = rows, .w = w, .in = a->in,
                                 .cols = cols, .bias = a->bias ? a->bias + c0 : NULL, .y = y,
                                 .ldy = a->ldy};
        attn__half_dot(a->wtype, &d);
        return;
    }
    float *tile = a->scratch + (size_t)slot * attn__linear_scratch(a->in, a->out);
    attn__half_widen(a->wtype, w, tile, (size_t)cols * (size_t)a->in);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, rows, cols, a->in, 1.0f, x, a->ldx, tile,
                a->in, a->bias ? 1.0f : 0.0f, y, a->ldy);
}

static void linear_item(void *ctx, long item, int slot) {
    const linear_job *j = ctx;
    const attn__linear_args *a = &j->a;
    int r0 = (int)(item / j->col_blocks) * ATTN__LINEAR_ROWS;
    int c0 = (int)(item % j->col_blocks) * j->cols;
    int rows = a->rows - r0 < ATTN__LINEAR_ROWS ? a->rows - r0 : ATTN__LINEAR_ROWS;
    int cols = a->out - c0 < j->cols ? a->out - c0 : j->cols;
    float *y = a->y + (size_t)r0 * (size_t)a->ldy + (size_t)c0;
    float beta = 0.0f;
    if (a->bias) {
        for (int r = 0; r < rows; r++)
            memcpy(y + (size_t)r * (size_t)a->ldy, a->bias + c0, (size_t)cols * sizeof *y);
        beta = 1.0f;
    }
    if (a->wtype != ATTN_DTYPE_F32) {
        half_block(a, r0, rows, c0, cols, slot, y);
    } else {
        const float *w = a->w_is_in_out ? (const float *)a->w + c0
                                         : (const float *)a->w + (size_t)c0 * (size_t)a->in;
        cblas_sgemm(CblasRowMajor, CblasNoTrans, a->w_is_in_out ? CblasNoTrans : CblasTrans, rows,
                    cols, a->in, 1.0f, a->x + (size_t)r0 * (size_t)a->ldx, a->ldx, w,
                    a->w_is_in_out ? a->out : a->in, beta, y, a->ldy);
    }
    if (a->act != ATTN__NO_ACT)
        for (int r = 0; r < rows; r++)
            attn__act_row(y + (size_t)r * (size_t)a->ldy, cols, (attn_act)a->act);
    if (a->nonfinite)
        for (int r = 0; r < rows; r++)
            if (!attn__all_finite(y + (size_t)r * (size_t)a->ldy, (size_t)cols)) {
                __atomic_store_n(a->nonfinite, 1, __ATOMIC_RELAXED);
                break;
            }
}

void attn__linear_run(attn_pool *pool, const attn__linear_args *args) {
    linear_job j = {.a = *args};
    if (j.a.ldy == 0) j.a.ldy = j.a.out;
    if (j.a.ldx == 0) j.a.ldx = j.a.in;
    j.cols = attn__linear_cols(j.a.out);
    j.col_blocks = (j.a.out + j.cols - 1) / j.cols;
    long items = (j.a.rows + ATTN__LINEAR_ROWS - 1) / ATTN__LINEAR_ROWS * j.col_blocks;
    double flops = 2.0 * j.a.rows * (double)j.a.in * j.a.out;
    attn__parallel(pool, items, flops > 4e6, linear_item, &j);
}

void attn__linear(attn_pool *pool, float *y, const float *x, int rows, int in, int out,
                  const float *w, int w_is_in_out, const float *bias) {
    attn__linear_args a = {.y = y, .x = x, .rows = rows, .in = in, .out = out, .w = w,
                           .w_is_in_out = w_is_in_out, .bias = bias, .act = ATTN__NO_ACT};
    attn__linear_run(pool, &a);
}
