/* floor.h - the memory-bandwidth floor of a decode step (bench_decode,
 * bench_families): the weights one step reads (every block's matrices and
 * vectors, the final norm and the output head; not the embedding tables
 * nor the buffers) summed once by the threads of the pool that runs the
 * step. A step cannot be faster than that read. */
#ifndef BENCH_FLOOR_H
#define BENCH_FLOOR_H

#include "core/lm.h"

#define BENCH_FLOOR_REGIONS 256

typedef struct {
    const float *base[BENCH_FLOOR_REGIONS]; /* the regions a step reads */
    size_t len[BENCH_FLOOR_REGIONS];        /* floats */
    int n;
    size_t chunk;                           /* floats per item */
    long items;
    double sums[256];
} bench_floor;

/* The regions of plan's parameters a step reads. */
void bench_floor_make(const attn_lm_plan *plan, const float *params, bench_floor *f);
/* Bytes a step reads. */
double bench_floor_bytes(const bench_floor *f);
/* One read of them on pool (NULL: this thread), in ms. */
double bench_floor_once(attn_pool *pool, bench_floor *f);

#endif
