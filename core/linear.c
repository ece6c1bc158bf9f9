/* linear.c - a projection as blocks of rows, one cblas_sgemm per block. */
#include "linear.h"
#include "parallel.h"

#include <cblas.h>
#include <string.h>

typedef struct {
    float *y;
    const float *x, *w, *bias;
    int rows, in, out, w_is_in_out;
} linear_job;

static void linear_item(void *ctx, long item, int slot) {
    (void)slot;
    const linear_job *j = ctx;
    int r0 = (int)item * ATTN__LINEAR_ROWS;
    int rows = j->rows - r0 < ATTN__LINEAR_ROWS ? j->rows - r0 : ATTN__LINEAR_ROWS;
    float *y = j->y + (size_t)r0 * j->out;
    float beta = 0.0f;
    if (j->bias) {
        for (int r = 0; r < rows; r++) memcpy(y + (size_t)r * j->out, j->bias, (size_t)j->out * sizeof *y);
        beta = 1.0f;
    }
    cblas_sgemm(CblasRowMajor, CblasNoTrans, j->w_is_in_out ? CblasNoTrans : CblasTrans, rows,
                j->out, j->in, 1.0f, j->x + (size_t)r0 * j->in, j->in, j->w,
                j->w_is_in_out ? j->out : j->in, beta, y, j->out);
}

void attn__linear(attn_pool *pool, float *y, const float *x, int rows, int in, int out,
                  const float *w, int w_is_in_out, const float *bias) {
    linear_job j = {y, x, w, bias, rows, in, out, w_is_in_out};
    long items = (rows + ATTN__LINEAR_ROWS - 1) / ATTN__LINEAR_ROWS;
    double flops = 2.0 * rows * (double)in * out;
    attn__parallel(pool, items, flops > 4e6, linear_item, &j);
}
