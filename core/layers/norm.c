/* norm.c - the norms of a block: nn.LayerNorm, the book's LayerNorm class,
 * and RMSNorm with weight w (Llama's) or 1 + w (Gemma's). Moments in double
 * over LN_LANES partial sums combined in a fixed order (the compiler
 * vectorises the lanes): within float rounding of PyTorch's vectorised
 * reductions, and the same bits on every clone. */
#include "core/layers/layers.h"

#include <math.h>
#include <string.h>

#define CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#define LN_LANES 8

/* sum of x[0..C) (or of its squares), and of (x - mean)^2. */
static inline double lane_sum(const float *xr, int C) {
    double s[LN_LANES] = {0}, sum = 0.0;
    int c = 0;
    for (; c + LN_LANES <= C; c += LN_LANES)
        for (int l = 0; l < LN_LANES; l++) s[l] += xr[c + l];
    for (int l = 0; c < C; c++, l++) s[l] += xr[c];
    for (int l = 0; l < LN_LANES; l++) sum += s[l];
    return sum;
}

static inline double lane_sq(const float *xr, double mean, int C) {
    double q[LN_LANES] = {0}, sum = 0.0;
    int c = 0;
    for (; c + LN_LANES <= C; c += LN_LANES)
        for (int l = 0; l < LN_LANES; l++) {
            double d = xr[c + l] - mean;
            q[l] += d * d;
        }
    for (int l = 0; c < C; c++, l++) {
        double d = xr[c] - mean;
        q[l] += d * d;
    }
    for (int l = 0; l < LN_LANES; l++) sum += q[l];
    return sum;
}

/* nn.LayerNorm: (x - mean) * rstd * gamma + beta, the biased variance. */
static inline void layernorm_row(float *yr, const float *xr, const float *gamma, const float *beta,
                                 int C, double eps) {
    double mean = lane_sum(xr, C) / C, var = lane_sq(xr, mean, C) / C;
    float m = (float)mean, rstd = (float)(1.0 / sqrt(var + eps));
    for (int c = 0; c < C; c++) yr[c] = (xr[c] - m) * rstd * gamma[c] + beta[c];
}

/* The book's LayerNorm class (ch. 4): (x - mean) / sqrt(var + eps) * scale
 * + shift, the division where nn.LayerNorm multiplies by a reciprocal. */
static inline void layernorm_div_row(float *yr, const float *xr, const float *scale,
                                     const float *shift, int C, double eps) {
    double mean = lane_sum(xr, C) / C, var = lane_sq(xr, mean, C) / C;
    float m = (float)mean, sd = (float)sqrt(var + eps);
    for (int c = 0; c < C; c++) yr[c] = (xr[c] - m) / sd * scale[c] + shift[c];
}

/* RMSNorm: x * rsqrt(mean(x^2) + eps) * w, or * (1 + w) with plus_one
 * (LlamaRMSNorm: weight * (x * rsqrt); Gemma3RMSNorm: (x * rsqrt) * (1 + w)). */
static inline void rmsnorm_row(float *yr, const float *xr, const float *w, int C, double eps,
                               int plus_one) {
    double ms = lane_sq(xr, 0.0, C) / C;
    float r = (float)(1.0 / sqrt(ms + eps));
    if (plus_one)
        for (int c = 0; c < C; c++) yr[c] = (xr[c] * r) * (1.0f + w[c]);
    else
        for (int c = 0; c < C; c++) yr[c] = w[c] * (xr[c] * r);
}

/* Clones for AVX-512, AVX2 and the baseline, picked once per process. */
CLONES void attn__norm(attn_lm_norm kind, float *y, const float *x, const float *w,
                       const float *b, size_t rows, int C, double eps) {
    for (size_t r = 0; r < rows; r++) {
        float *yr = y + r * (size_t)C;
        const float *xr = x + r * (size_t)C;
        switch (kind) {
        case ATTN_LM_LAYERNORM: layernorm_row(yr, xr, w, b, C, eps); break;
        case ATTN_LM_LAYERNORM_DIV: layernorm_div_row(yr, xr, w, b, C, eps); break;
        case ATTN_LM_RMSNORM: rmsnorm_row(yr, xr, w, C, eps, 0); break;
        case ATTN_LM_RMSNORM_1P: rmsnorm_row(yr, xr, w, C, eps, 1); break;
        }
    }
}
