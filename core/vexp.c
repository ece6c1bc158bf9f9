/* vexp.c - exp(x - shift) over a row, with its sum; row max; row scaling.
 *
 * Written as plain loops over blocks of LANES floats that GCC turns into
 * vector code; target_clones builds them for AVX-512, AVX2 and the baseline
 * and the loader picks one for the whole process. Sums and maxima keep LANES
 * partial results, combined in a fixed order at the end, so the result does
 * not depend on anything but the inputs and the CPU family.
 */
#include "vexp.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

#define LANES 16
#define CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))

/* exp(x) for x <= 0 (Cephes expf): x = n ln2 + r, |r| <= ln2/2, exp(r) by a
 * degree-6 polynomial, 2^n put in the exponent bits. Below -87.3 (and for
 * -inf) the result is 0, as for a masked score; NaN stays NaN. */
static inline float exp_nonpos(float x) {
    const float lo = -87.33654f;
    int under = x < lo;
    x = under ? lo : x;
    /* n = round(x / ln2) with the 1.5 * 2^23 trick: no rounding call */
    float t = x * 1.44269504088896341f + 12582912.0f;
    float n = t - 12582912.0f;
    float r = x - n * 0.693359375f;
    r = r - n * -2.12194440e-4f;
    float p = 1.9875691500e-4f;
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    float y = p * (r * r) + r + 1.0f;
    /* n is in [-126, 0]; NaN (from an infinite score) gives NaN through y */
    uint32_t e = (uint32_t)((n >= -126.0f && n <= 0.0f ? (int32_t)n : 0) + 127) << 23;
    float scale;
    memcpy(&scale, &e, sizeof scale);
    return under ? 0.0f : y * scale;
}

CLONES float attn__row_max(const float *x, int n) {
    float m[LANES];
    for (int l = 0; l < LANES; l++) m[l] = -INFINITY;
    int j = 0;
    for (; j + LANES <= n; j += LANES)
        for (int l = 0; l < LANES; l++) m[l] = x[j + l] > m[l] ? x[j + l] : m[l];
    for (; j < n; j++) m[0] = x[j] > m[0] ? x[j] : m[0];
    float max = m[0];
    for (int l = 1; l < LANES; l++) max = m[l] > max ? m[l] : max;
    return max;
}

CLONES float attn__exp_shifted(float *y, const float *x, float shift, int n) {
    float s[LANES] = {0};
    int j = 0;
    for (; j + LANES <= n; j += LANES)
        for (int l = 0; l < LANES; l++) {
            float e = exp_nonpos(x[j + l] - shift);
            y[j + l] = e;
            s[l] += e;
        }
    for (int l = 0; j < n; j++, l++) {
        float e = exp_nonpos(x[j] - shift);
        y[j] = e;
        s[l] += e;
    }
    /* pairwise, always the same tree */
    for (int w = LANES / 2; w > 0; w /= 2)
        for (int l = 0; l < w; l++) s[l] += s[l + w];
    return s[0];
}

CLONES void attn__scale_row(float *y, float a, int n) {
    for (int j = 0; j < n; j++) y[j] *= a;
}
