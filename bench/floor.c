/* floor.c - the memory-bandwidth floor of a decode step (floor.h). */
#include "bench/floor.h"
#include "bench/measure.h"

__attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
static double sum_floats(const float *x, size_t n) {
    float s[32] = {0};
    size_t i = 0;
    for (; i + 32 <= n; i += 32)
        for (int l = 0; l < 32; l++) s[l] += x[i + l];
    double t = 0;
    for (; i < n; i++) t += x[i];
    for (int l = 0; l < 32; l++) t += s[l];
    return t;
}

/* Item k: the k-th chunk of the concatenated regions. */
static void floor_item(void *ctx, long item, int slot) {
    bench_floor *f = ctx;
    size_t at = (size_t)item * f->chunk, left = f->chunk;
    double s = 0;
    for (int r = 0; r < f->n && left; r++) {
        if (at >= f->len[r]) {
            at -= f->len[r];
            continue;
        }
        size_t take = f->len[r] - at < left ? f->len[r] - at : left;
        s += sum_floats(f->base[r] + at, take);
        left -= take, at = 0;
    }
    f->sums[slot] += s;
}

static void add_region(bench_floor *f, const float *base, size_t len) {
    if (f->n > 0 && f->base[f->n - 1] + f->len[f->n - 1] == base) {
        f->len[f->n - 1] += len; /* contiguous with the previous one */
    } else if (f->n < BENCH_FLOOR_REGIONS) {
        f->base[f->n] = base, f->len[f->n] = len, f->n++;
    }
}

void bench_floor_make(const attn_lm_plan *p, const float *params, bench_floor *f) {
    *f = (bench_floor){.chunk = 1 << 16};
    attn_param first;
    attn_lm_param_get(p, 0, &first);
    for (int i = 0; i < p->param_count; i++) {
        attn_param e;
        attn_lm_param_get(p, i, &e);
        /* a step reads one row of the token and position tables: not counted */
        int table = e.rank == 2 && (e.shape[0] == p->V || e.shape[0] == p->cfg.context);
        if (e.buffer || (table && i != p->param_count - 1)) continue;
        add_region(f, params + e.offset, e.count);
    }
    if (p->tied) add_region(f, params + first.offset, first.count); /* the head is the table */
    size_t total = 0;
    for (int r = 0; r < f->n; r++) total += f->len[r];
    f->items = (long)((total + f->chunk - 1) / f->chunk);
}

double bench_floor_bytes(const bench_floor *f) {
    double n = 0;
    for (int r = 0; r < f->n; r++) n += (double)f->len[r];
    return 4.0 * n;
}

double bench_floor_once(attn_pool *pool, bench_floor *f) {
    double t0 = bench_now_ms();
    attn_pool_run(pool, f->items, floor_item, f);
    return bench_now_ms() - t0;
}
