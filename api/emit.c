/* emit.c - tensors into the reply: nested arrays (as tensor.tolist() gives)
 * or {"shape":[...],"data":[...]} flat row-major. */
#include "api/api_internal.h"

#include <math.h>
#include <string.h>

/* One row of floats: "v,v,...,v" without brackets. */
static void floats_row(api_buf *b, const float *x, size_t n, const api_fmt *f, int *nonfinite) {
    if (api__buf_reserve(b, n * (API_FLOAT_MAX + 1))) return;
    char *o = b->data + b->len;
    for (size_t i = 0; i < n; i++) {
        if (i) *o++ = ',';
        int len = api__format_float(o, x[i], f->precision);
        if (len == 0) {
            if (x[i] == -INFINITY) {
                memcpy(o, "null", 4);
                len = 4;
            } else {
                *nonfinite = 1;
                b->failed = 1;
                return;
            }
        }
        o += len;
    }
    b->len = (size_t)(o - b->data);
    b->data[b->len] = '\0';
}

static void bytes_row(api_buf *b, const uint8_t *x, size_t n) {
    if (api__buf_reserve(b, n * 2)) return;
    char *o = b->data + b->len;
    for (size_t i = 0; i < n; i++) {
        if (i) *o++ = ',';
        *o++ = x[i] ? '1' : '0';
    }
    b->len = (size_t)(o - b->data);
    b->data[b->len] = '\0';
}

static void shape_json(api_buf *b, int rank, const int *shape) {
    api__buf_put(b, "[", 1);
    for (int d = 0; d < rank; d++) api__buf_printf(b, d ? ",%d" : "%d", shape[d]);
    api__buf_put(b, "]", 1);
}

/* Walks the rows of a tensor (the last axis), writing the brackets of the
 * axes before it; row(i) writes row i. A rank-0 tensor is one bare value. */
typedef void (*row_fn)(api_buf *b, size_t row, size_t width, void *ctx);

static void walk(api_buf *b, int rank, const int *shape, const api_fmt *f, row_fn row, void *ctx) {
    size_t width = rank ? (size_t)shape[rank - 1] : 1, rows = 1;
    for (int d = 0; d + 1 < rank; d++) rows *= (size_t)shape[d];
    if (f->flat) {
        api__buf_puts(b, "{\"shape\":");
        shape_json(b, rank, shape);
        api__buf_puts(b, ",\"data\":[");
        for (size_t r = 0; r < rows && !b->failed; r++) {
            if (r) api__buf_put(b, ",", 1);
            row(b, r, width, ctx);
        }
        api__buf_puts(b, "]}");
        return;
    }
    if (rank == 0) {
        row(b, 0, 1, ctx);
        return;
    }
    int idx[API_MAX_RANK] = {0};
    for (int d = 0; d < rank; d++) api__buf_put(b, "[", 1);
    for (size_t r = 0; r < rows && !b->failed; r++) {
        row(b, r, width, ctx);
        /* close the axes that end here, open the next ones */
        int d = rank - 2, closed = 1;
        api__buf_put(b, "]", 1);
        while (d >= 0 && ++idx[d] == shape[d]) {
            idx[d] = 0;
            api__buf_put(b, "]", 1);
            d--;
            closed++;
        }
        if (d < 0) break;
        api__buf_put(b, ",", 1);
        for (int i = 0; i < closed; i++) api__buf_put(b, "[", 1);
    }
}

typedef struct {
    const float *x;
    const uint8_t *bytes;
    const api_fmt *f;
    int *nonfinite;
} row_ctx;

static void float_row(api_buf *b, size_t row, size_t width, void *ctx) {
    row_ctx *c = ctx;
    floats_row(b, c->x + row * width, width, c->f, c->nonfinite);
}

static void byte_row(api_buf *b, size_t row, size_t width, void *ctx) {
    row_ctx *c = ctx;
    bytes_row(b, c->bytes + row * width, width);
}

void api__emit_floats(api_buf *b, const float *x, int rank, const int *shape, const api_fmt *f,
                      int *nonfinite) {
    int dummy = 0;
    row_ctx c = {.x = x, .f = f, .nonfinite = nonfinite ? nonfinite : &dummy};
    walk(b, rank, shape, f, float_row, &c);
}

void api__emit_bytes(api_buf *b, const uint8_t *x, int rank, const int *shape, const api_fmt *f) {
    row_ctx c = {.bytes = x, .f = f};
    walk(b, rank, shape, f, byte_row, &c);
}
