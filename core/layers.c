/* layers.c - the non-attention layers of GPT-2: embedding lookup,
 * LayerNorm and dropout (nn.Linear is linear.c's attn__linear, GELU vexp.c's
 * attn__gelu_row, run on each block of the MLP's first product).
 * Kernels: they own no memory and never fail (the caller validated every
 * size and index). */
#include "layers.h"

#include <math.h>
#include <string.h>

#define CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))

CLONES void attn__embed(float *x, const int32_t *idx, const float *wte, const float *wpe, int B, int T,
                 int C) {
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T; t++) {
            float *row = x + ((size_t)b * (size_t)T + (size_t)t) * (size_t)C;
            const float *tok = wte + (size_t)idx[(size_t)b * (size_t)T + (size_t)t] * (size_t)C;
            const float *pos = wpe + (size_t)t * (size_t)C;
            for (int c = 0; c < C; c++) row[c] = tok[c] + pos[c];
        }
}

#define LN_LANES 8

/* One row: mean and biased variance in double, over LN_LANES partial sums
 * combined in a fixed order (the compiler vectorises the lanes); the result
 * is within float rounding of PyTorch's vectorised Welford moments. */
static inline void layernorm_row(float *yr, const float *xr, const float *gamma, const float *beta,
                          int C) {
    double s[LN_LANES] = {0}, q[LN_LANES] = {0};
    int c = 0;
    for (; c + LN_LANES <= C; c += LN_LANES)
        for (int l = 0; l < LN_LANES; l++) s[l] += xr[c + l];
    for (int l = 0; c < C; c++, l++) s[l] += xr[c];
    double sum = 0.0;
    for (int l = 0; l < LN_LANES; l++) sum += s[l];
    double mean = sum / C;
    for (c = 0; c + LN_LANES <= C; c += LN_LANES)
        for (int l = 0; l < LN_LANES; l++) {
            double d = xr[c + l] - mean;
            q[l] += d * d;
        }
    for (int l = 0; c < C; c++, l++) {
        double d = xr[c] - mean;
        q[l] += d * d;
    }
    double var = 0.0;
    for (int l = 0; l < LN_LANES; l++) var += q[l];
    var /= C;
    float m = (float)mean, rstd = (float)(1.0 / sqrt(var + 1e-5));
    for (c = 0; c < C; c++) yr[c] = (xr[c] - m) * rstd * gamma[c] + beta[c];
}

/* Clones for AVX-512, AVX2 and the baseline, picked once per process. */
CLONES void attn__layernorm(float *y, const float *x, const float *gamma, const float *beta, size_t rows,
                     int C) {
    for (size_t r = 0; r < rows; r++)
        layernorm_row(y + r * (size_t)C, x + r * (size_t)C, gamma, beta, C);
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

CLONES void attn__add(float *x, const float *y, size_t n) {
    for (size_t i = 0; i < n; i++) x[i] += y[i];
}

/* The book's LayerNorm class (ch. 4): mean, biased variance, then
 * (x - mean) / sqrt(var + eps) * scale + shift with eps 1e-5. The moments
 * as layernorm_row takes them (double, LN_LANES partial sums); the division
 * by the square root where nn.LayerNorm multiplies by its reciprocal. */
static inline void layernorm_div_row(float *yr, const float *xr, const float *scale,
                                     const float *shift, int C) {
    double s[LN_LANES] = {0}, q[LN_LANES] = {0}, sum = 0.0, var = 0.0;
    int c = 0;
    for (; c + LN_LANES <= C; c += LN_LANES)
        for (int l = 0; l < LN_LANES; l++) s[l] += xr[c + l];
    for (int l = 0; c < C; c++, l++) s[l] += xr[c];
    for (int l = 0; l < LN_LANES; l++) sum += s[l];
    double mean = sum / C;
    for (c = 0; c + LN_LANES <= C; c += LN_LANES)
        for (int l = 0; l < LN_LANES; l++) q[l] += (xr[c + l] - mean) * (xr[c + l] - mean);
    for (int l = 0; c < C; c++, l++) q[l] += (xr[c] - mean) * (xr[c] - mean);
    for (int l = 0; l < LN_LANES; l++) var += q[l];
    float m = (float)mean, sd = (float)sqrt(var / C + 1e-5);
    for (c = 0; c < C; c++) yr[c] = (xr[c] - m) / sd * scale[c] + shift[c];
}

__attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
void attn__layernorm_div(float *y, const float *x, const float *scale, const float *shift,
                         size_t rows, int C) {
    for (size_t r = 0; r < rows; r++)
        layernorm_div_row(y + r * (size_t)C, x + r * (size_t)C, scale, shift, C);
}

void attn__dropout_masked(float *x, float *mask, size_t n, double p, attn_rng *rng) {
    if (mask == NULL) {
        attn__dropout(x, n, p, rng);
        return;
    }
    if (p >= 1.0) { /* no draws, as attn__dropout */
        memset(x, 0, n * sizeof *x);
        memset(mask, 0, n * sizeof *mask);
        return;
    }
    double keep = 1.0 - p;
    float kept = (float)(1.0 / keep);
    for (size_t i = 0; i < n; i++) {
        int k = attn_rng_bernoulli(rng, keep);
        mask[i] = k ? kept : 0.0f;
        x[i] = k ? x[i] * kept : 0.0f;
    }
}
