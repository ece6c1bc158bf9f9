/* gemv.c - few-row products by blocks of weight rows (gemv.h). One row:
 * cblas_sgemv per block (a plain stream over the weights; OpenBLAS's sgemm
 * would pack them first). More rows: cblas_sgemm per block, which reads the
 * block once for all of them. Half-size weights: half.h's kernels, which
 * read each block once for every row too. */
#include "gemv.h"
#include "half.h"
#include "linear.h"
#include "parallel.h"
#include "core/layers/layers.h"

#include <cblas.h>
#include <string.h>

/* Rows from which one sgemm per block beats a gemv per row. */
#define GEMM_ROWS 4

typedef struct {
    attn__gemv_args a;
    int cols;
} gemv_job;

int attn__gemv_cols(int in) {
    int cols = (65536 / (in > 0 ? in : 1)) / 16 * 16;
    return cols < 16 ? 16 : cols;
}

static void activate(const attn__gemv_args *a, float *y, int cols) {
    if (a->act != ATTN__NO_ACT)
        for (int r = 0; r < a->rows; r++)
            attn__act_row(y + (size_t)r * (size_t)a->ldy, cols, (attn_act)a->act);
}

static void gemv_item(void *ctx, long item, int slot) {
    (void)slot;
    const gemv_job *j = ctx;
    const attn__gemv_args *a = &j->a;
    int c0 = (int)item * j->cols, cols = a->out - c0 < j->cols ? a->out - c0 : j->cols;
    float *y = a->y + c0;
    if (a->wtype != ATTN_DTYPE_F32) {
        attn__half_dot_args d = {.x = a->x, .ldx = a->in, .rows = a->rows,
                                 .w = (const uint16_t *)a->w + (size_t)c0 * (size_t)a->in,
                                 .in = a->in, .cols = cols, .bias = a->bias ? a->bias + c0 : NULL,
                                 .y = y, .ldy = a->ldy};
        attn__half_dot(a->wtype, &d);
        activate(a, y, cols);
        return;
    }
    const float *w = (const float *)a->w + (size_t)c0 * (size_t)a->in;
    float beta = 0.0f;
    if (a->bias) {
        for (int r = 0; r < a->rows; r++)
            memcpy(y + (size_t)r * (size_t)a->ldy, a->bias + c0, (size_t)cols * sizeof *y);
        beta = 1.0f;
    }
    if (a->rows >= GEMM_ROWS)
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, a->rows, cols, a->in, 1.0f, a->x,
                    a->in, w, a->in, beta, y, a->ldy);
    else
        for (int r = 0; r < a->rows; r++)
            cblas_sgemv(CblasRowMajor, CblasNoTrans, cols, a->in, 1.0f, w, a->in,
                        a->x + (size_t)r * (size_t)a->in, 1, beta, y + (size_t)r * (size_t)a->ldy,
                        1);
    activate(a, y, cols);
}

/* j's block width and item count for args. */
static long gemv_setup(gemv_job *j, const attn__gemv_args *args) {
    /* at most about 64 items: a vocabulary-wide head in blocks of ~2 MB
     * rather than 600 claims of 256 KB */
    int cols = attn__gemv_cols(args->in), few = ((args->out + 63) / 64 + 15) / 16 * 16;
    *j = (gemv_job){.a = *args, .cols = few > cols ? few : cols};
    if (j->a.ldy == 0) j->a.ldy = j->a.out;
    return (j->a.out + j->cols - 1) / j->cols;
}

typedef struct {
    gemv_job job[ATTN__GEMV_MANY];
    long first[ATTN__GEMV_MANY + 1]; /* product i's items are [first[i], first[i + 1]) */
    int n;
} many_job;

static void many_item(void *ctx, long item, int slot) {
    const many_job *m = ctx;
    int i = 0;
    while (item >= m->first[i + 1]) i++;
    gemv_item((void *)&m->job[i], item - m->first[i], slot);
}

void attn__gemv_run_many(attn_pool *pool, const attn__gemv_args *args, int n) {
    many_job m = {.n = n};
    double bytes = 0;
    for (int i = 0; i < n; i++) {
        m.first[i + 1] = m.first[i] + gemv_setup(&m.job[i], &args[i]);
        bytes += (args[i].wtype == ATTN_DTYPE_F32 ? 4.0 : 2.0) * args[i].in * (double)args[i].out;
    }
    attn__parallel(pool, m.first[n], bytes > 1e5, many_item, &m);
}

void attn__gemv_run(attn_pool *pool, const attn__gemv_args *args) {
    attn__gemv_run_many(pool, args, 1);
}
