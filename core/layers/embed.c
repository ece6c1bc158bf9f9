/* embed.c - token and position embeddings, dropout and the residual adds. */
#include "core/layers/layers.h"

#include <string.h>

#define CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))

CLONES void attn__embed_rows(float *x, const int32_t *tok, const int *pos, int n, const float *wte,
                             const float *wpe, float scale, int C) {
    for (int i = 0; i < n; i++) {
        float *row = x + (size_t)i * (size_t)C;
        const float *t = wte + (size_t)tok[i] * (size_t)C;
        if (scale != 1.0f)
            for (int c = 0; c < C; c++) row[c] = t[c] * scale;
        else
            memcpy(row, t, (size_t)C * sizeof *row);
        if (wpe == NULL) continue;
        const float *p = wpe + (size_t)pos[i] * (size_t)C;
        for (int c = 0; c < C; c++) row[c] += p[c];
    }
}

CLONES void attn__embed(float *x, const int32_t *idx, const float *wte, const float *wpe,
                        float scale, int B, int T, int C) {
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T; t++) {
            float *row = x + ((size_t)b * (size_t)T + (size_t)t) * (size_t)C;
            const float *tok = wte + (size_t)idx[(size_t)b * (size_t)T + (size_t)t] * (size_t)C;
            const float *pos = wpe ? wpe + (size_t)t * (size_t)C : NULL;
            if (scale == 1.0f && pos)
                for (int c = 0; c < C; c++) row[c] = tok[c] + pos[c];
            else if (scale == 1.0f)
                memcpy(row, tok, (size_t)C * sizeof *row);
            else
                for (int c = 0; c < C; c++) row[c] = tok[c] * scale + (pos ? pos[c] : 0.0f);
        }
}

void attn__dropout_masked(float *x, float *mask, size_t n, double p, attn_rng *rng) {
    if (p >= 1.0) { /* PyTorch multiplies by zero and draws nothing */
        memset(x, 0, n * sizeof *x);
        if (mask) memset(mask, 0, n * sizeof *mask);
        return;
    }
    double keep = 1.0 - p;
    float kept = (float)(1.0 / keep);
    for (size_t i = 0; i < n; i++) {
        int k = attn_rng_bernoulli(rng, keep);
        if (mask) mask[i] = k ? kept : 0.0f;
        x[i] = k ? x[i] * kept : 0.0f;
    }
}

CLONES void attn__add(float *x, const float *y, size_t n) {
    for (size_t i = 0; i < n; i++) x[i] += y[i];
}

CLONES void attn__add2(float *x, const float *y, const float *z, size_t n) {
    for (size_t i = 0; i < n; i++) x[i] = (y[i] + z[i]) + x[i];
}
