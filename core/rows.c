/* rows.c - elementwise row kernels (see rows.h): plain loops that GCC
 * vectorises, one clone per instruction set. */
#include "rows.h"

#include <math.h>
#include <stddef.h>

#define CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))

CLONES void attn__scores_row(float *out, const float *raw, float scale, const float *add,
                             const uint8_t *mask, int n) {
    if (add)
        for (int j = 0; j < n; j++) out[j] = raw[j] * scale + add[j];
    else
        for (int j = 0; j < n; j++) out[j] = raw[j] * scale + 0.0f;
    if (mask)
        for (int j = 0; j < n; j++) out[j] = mask[j] ? -INFINITY : out[j];
}

CLONES void attn__mask_row(float *x, const float *add, const uint8_t *bm, const uint8_t *pad,
                           int causal_from, int n) {
    if (add)
        for (int c = 0; c < n; c++) x[c] += add[c];
    if (bm)
        for (int c = 0; c < n; c++) x[c] = bm[c] ? -INFINITY : x[c];
    if (pad)
        for (int c = 0; c < n; c++) x[c] = pad[c] ? -INFINITY : x[c];
    for (int c = causal_from < 0 ? 0 : causal_from; c < n; c++) x[c] = -INFINITY;
}

CLONES void attn__mul_row(float *y, const float *d, int n) {
    for (int j = 0; j < n; j++) y[j] *= d[j];
}
