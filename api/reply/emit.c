/* emit.c - tensors into the reply: nested arrays (as tensor.tolist() gives)
 * or {"shape":[...],"data":[...]} flat row-major. */
#include "api/reply/reply.h"
#include "api/numbers/numbers.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One row of floats: "v,v,...,v" without brackets; -inf is null. */
static void floats_row(api_buf *b, const float *x, size_t n, const api_fmt *f, int *nonfinite) {
    if (api__buf_reserve(b, n * (API_FLOAT_MAX + 1) + API_FLOAT_SLACK)) return;
    char *o = b->data + b->len;
    for (size_t i = 0; i < n;) {
        size_t done;
        if (i) *o++ = ',';
        o += api__format_row(o, x + i, n - i, f->precision, &done);
        i += done;
        if (i == n) break;
        if (x[i] != -INFINITY) {
            *nonfinite = 1;
            b->failed = 1;
            return;
        }
        if (done) *o++ = ',';
        memcpy(o, "null", 4);
        o += 4;
        i++;
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
    int idx[API_ITEM_RANK] = {0};
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
    const int32_t *ints;
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

static void int_row(api_buf *b, size_t row, size_t width, void *ctx) {
    const int32_t *x = ((row_ctx *)ctx)->ints + row * width;
    if (api__buf_reserve(b, width * 12 + 1)) return;
    for (size_t i = 0; i < width; i++)
        b->len += (size_t)snprintf(b->data + b->len, 13, i ? ",%d" : "%d", (int)x[i]);
}

size_t api__float_bytes(uint8_t *out, const float *x, size_t n, int half) {
    for (size_t i = 0; i < n; i++) {
        if (half) {
            uint16_t h = api__f32_to_f16(x[i]);
            out[2 * i] = (uint8_t)h;
            out[2 * i + 1] = (uint8_t)(h >> 8);
        } else {
            uint32_t u;
            memcpy(&u, &x[i], sizeof u);
            for (int k = 0; k < 4; k++) out[4 * i + (size_t)k] = (uint8_t)(u >> (8 * k));
        }
    }
    return n * (half ? 2 : 4);
}

/* {"shape":[...],"dtype":"...","base64":"..."}: the bytes are encoded in
 * blocks of 3 KiB (a multiple of 3, so the pieces join into one text). */
static void binary(api_buf *b, const void *x, size_t n, size_t item, int rank, const int *shape,
                   const char *dtype, int half) {
    int ints = strcmp(dtype, "int32") == 0;
    api__buf_puts(b, "{\"shape\":");
    shape_json(b, rank, shape);
    api__buf_printf(b, ",\"dtype\":\"%s\",\"base64\":\"", dtype);
    size_t per = 3072 / item; /* values per block */
    uint8_t raw[3072];
    for (size_t i = 0; i < n && !b->failed; i += per) {
        size_t m = n - i < per ? n - i : per, bytes;
        if (item == 1) {
            memcpy(raw, (const uint8_t *)x + i, m);
            bytes = m;
        } else if (ints) {
            for (size_t j = 0; j < m; j++)
                for (int k = 0; k < 4; k++)
                    raw[4 * j + (size_t)k] = (uint8_t)((uint32_t)((const int32_t *)x)[i + j] >> (8 * k));
            bytes = 4 * m;
        } else {
            bytes = api__float_bytes(raw, (const float *)x + i, m, half);
        }
        if (api__buf_reserve(b, api__b64_encoded_size(bytes) + 1)) return;
        b->len += api__b64_encode(raw, bytes, b->data + b->len);
        b->data[b->len] = '\0';
    }
    api__buf_puts(b, "\"}");
}

static size_t count_of(int rank, const int *shape) {
    size_t n = 1;
    for (int d = 0; d < rank; d++) n *= (size_t)shape[d];
    return n;
}

int api__has_nan_or_inf(const float *x, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (isnan(x[i]) || x[i] == INFINITY) return 1;
    return 0;
}

int api__beyond_half(const float *x, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (isfinite(x[i]) && fabsf(x[i]) >= 65520.0f) return 1;
    return 0;
}

/* ---- large tensors as text, on several threads --------------------------
 *
 * Printing floats is most of the time of a large JSON reply. The rows are
 * cut into pieces of about PIECE_VALUES values; a wave of pieces is printed
 * by the pool's threads, each into its own buffer, and the walk then copies
 * the rows in order. A wave is a few pieces per thread, so the extra memory
 * stays around a megabyte whatever the tensor. The text is the same bytes
 * as one thread writes. */

#define PAR_MIN_VALUES 65536 /* below this, one thread prints the tensor */
#define PIECE_VALUES 16384
#define PIECES_PER_THREAD 4

typedef struct {
    api_buf text;   /* the piece's rows, one after another */
    size_t *ends;   /* where each row's text ends */
    int nonfinite;
} piece;

typedef struct {
    const float *x;
    const api_fmt *f;
    size_t width, rows, rows_per_piece, n_pieces;
    size_t first, count; /* the wave printed: pieces [first, first + count) */
    size_t window;       /* pieces per wave */
    piece *pieces;       /* [window] */
    int *nonfinite;
} par_ctx;

static void print_piece(void *ctx, long item, int slot) {
    (void)slot;
    par_ctx *c = ctx;
    piece *p = &c->pieces[item];
    size_t r0 = (c->first + (size_t)item) * c->rows_per_piece;
    size_t r1 = r0 + c->rows_per_piece < c->rows ? r0 + c->rows_per_piece : c->rows;
    p->text.len = 0;
    p->nonfinite = 0;
    for (size_t r = r0; r < r1 && !p->text.failed; r++) {
        floats_row(&p->text, c->x + r * c->width, c->width, c->f, &p->nonfinite);
        p->ends[r - r0] = p->text.len;
    }
}

static void par_row(api_buf *b, size_t row, size_t width, void *ctx) {
    (void)width;
    par_ctx *c = ctx;
    size_t k = row / c->rows_per_piece;
    if (k >= c->first + c->count) { /* the walk is past this wave: print the next */
        c->first = k;
        c->count = c->n_pieces - k < c->window ? c->n_pieces - k : c->window;
        attn_pool_run(c->f->pool, (long)c->count, print_piece, c);
    }
    const piece *p = &c->pieces[k - c->first];
    if (p->text.failed || p->nonfinite) {
        if (p->nonfinite) *c->nonfinite = 1;
        b->failed = 1;
        return;
    }
    size_t j = row - k * c->rows_per_piece, start = j ? p->ends[j - 1] : 0;
    api__buf_put(b, p->text.data + start, p->ends[j] - start);
}

/* 0 if the tensor was written on several threads; -1 if that is not worth it
 * or its buffers cannot be had (the caller then prints it alone). */
static int emit_floats_parallel(api_buf *b, const float *x, int rank, const int *shape,
                                const api_fmt *f, int *nonfinite) {
    int threads = attn_pool_width(f->pool);
    if (threads < 2 || rank == 0) return -1;
    par_ctx c = {.x = x, .f = f, .width = (size_t)shape[rank - 1], .rows = 1,
                 .nonfinite = nonfinite};
    for (int d = 0; d + 1 < rank; d++) c.rows *= (size_t)shape[d];
    if (c.width == 0 || c.rows * c.width < PAR_MIN_VALUES) return -1;
    c.rows_per_piece = c.width >= PIECE_VALUES ? 1 : PIECE_VALUES / c.width;
    c.n_pieces = (c.rows + c.rows_per_piece - 1) / c.rows_per_piece;
    c.window = (size_t)threads * PIECES_PER_THREAD;
    if (c.window > c.n_pieces) c.window = c.n_pieces;
    c.pieces = calloc(c.window, sizeof *c.pieces);
    int ok = c.pieces != NULL;
    for (size_t i = 0; ok && i < c.window; i++)
        ok = (c.pieces[i].ends = malloc(c.rows_per_piece * sizeof *c.pieces[i].ends)) != NULL;
    if (ok) walk(b, rank, shape, f, par_row, &c);
    for (size_t i = 0; c.pieces && i < c.window; i++) {
        free(c.pieces[i].ends);
        api_buf_free(&c.pieces[i].text);
    }
    free(c.pieces);
    return ok ? 0 : -1;
}

/* A binary reply (base64, safetensors): the formats that take float16. */
static int binary_reply(const api_fmt *f) { return (api_format_get(f->format)->flags & API_FMT_HALF) != 0; }

void api__emit_floats(api_buf *b, const float *x, int rank, const int *shape, const api_fmt *f,
                      int *nonfinite) {
    if (binary_reply(f)) {
        size_t n = count_of(rank, shape);
        if (api__has_nan_or_inf(x, n)) {
            if (nonfinite) *nonfinite = 1;
            b->failed = 1;
            return;
        }
        if (f->half && api__beyond_half(x, n)) {
            if (nonfinite && !*nonfinite) *nonfinite = 2; /* the request's format: 400 */
            b->failed = 1;
            return;
        }
        binary(b, x, n, f->half ? 2 : 4, rank, shape, f->half ? "float16" : "float32", f->half);
        return;
    }
    int dummy = 0;
    if (emit_floats_parallel(b, x, rank, shape, f, nonfinite ? nonfinite : &dummy) == 0) return;
    row_ctx c = {.x = x, .f = f, .nonfinite = nonfinite ? nonfinite : &dummy};
    walk(b, rank, shape, f, float_row, &c);
}

void api__emit_bytes(api_buf *b, const uint8_t *x, int rank, const int *shape, const api_fmt *f) {
    if (binary_reply(f)) {
        binary(b, x, count_of(rank, shape), 1, rank, shape, "uint8", 0);
        return;
    }
    row_ctx c = {.bytes = x, .f = f};
    walk(b, rank, shape, f, byte_row, &c);
}

void api__emit_ints(api_buf *b, const int32_t *x, int rank, const int *shape, const api_fmt *f) {
    if (binary_reply(f)) {
        binary(b, x, count_of(rank, shape), 4, rank, shape, "int32", 0);
        return;
    }
    row_ctx c = {.ints = x, .f = f};
    walk(b, rank, shape, f, int_row, &c);
}
