/* layers.c - the non-attention layers of GPT-2: embedding lookup,
 * LayerNorm, GELU and dropout (nn.Linear is linear.c's attn__linear).
 * Kernels: they own no memory and never fail (the caller validated every
 * size and index). */
#include "layers.h"

#include <math.h>
#include <string.h>

void attn__embed(float *x, const int32_t *idx, const float *wte, const float *wpe, int B, int T,
                 int C) {
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T; t++) {
            float *row = x + ((size_t)b * (size_t)T + (size_t)t) * (size_t)C;
            const float *tok = wte + (size_t)idx[(size_t)b * (size_t)T + (size_t)t] * (size_t)C;
            const float *pos = wpe + (size_t)t * (size_t)C;
            for (int c = 0; c < C; c++) row[c] = tok[c] + pos[c];
        }
}

void attn__layernorm(float *y, const float *x, const float *gamma, const float *beta, size_t rows,
                     int C) {
    for (size_t r = 0; r < rows; r++) {
        const float *xr = x + r * (size_t)C;
        float *yr = y + r * (size_t)C;
        /* mean and biased variance in double: the result is within float
         * rounding of PyTorch's vectorised Welford moments */
        double sum = 0.0;
        for (int c = 0; c < C; c++) sum += xr[c];
        double mean = sum / C, var = 0.0;
        for (int c = 0; c < C; c++) {
            double d = xr[c] - mean;
            var += d * d;
        }
        var /= C;
        double rstd = 1.0 / sqrt(var + 1e-5);
        for (int c = 0; c < C; c++)
            yr[c] = (float)((xr[c] - mean) * rstd) * gamma[c] + beta[c];
    }
}

void attn__gelu(float *x, size_t n, attn_gelu kind) {
    if (kind == ATTN_GELU_TANH) {
        const float k = 0.7978845608028654f; /* sqrt(2 / pi) */
        for (size_t i = 0; i < n; i++) {
            float v = x[i];
            x[i] = 0.5f * v * (1.0f + tanhf(k * (v + 0.044715f * v * v * v)));
        }
        return;
    }
    for (size_t i = 0; i < n; i++) {
        float v = x[i];
        x[i] = 0.5f * v * (1.0f + erff(v * 0.70710678118654752f));
    }
}

void attn__dropout(float *x, size_t n, double p, attn_rng *rng) {
    if (p >= 1.0) { /* PyTorch multiplies by zero and draws nothing */
        memset(x, 0, n * sizeof *x);
        return;
    }
    double keep = 1.0 - p;
    float kept = (float)(1.0 / keep);
    for (size_t i = 0; i < n; i++) x[i] = attn_rng_bernoulli(rng, keep) ? x[i] * kept : 0.0f;
}

void attn__add(float *x, const float *y, size_t n) {
    for (size_t i = 0; i < n; i++) x[i] += y[i];
}
