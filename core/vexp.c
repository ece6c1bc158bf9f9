/* vexp.c - exp(x - shift) over a row, with its sum; row max; row scaling;
 * GPT-2's GELU (erf and tanh forms) over a row.
 *
 * Written as plain loops over blocks of LANES floats that GCC turns into
 * vector code; target_clones builds them for AVX-512, AVX2 and the baseline
 * and the loader picks one for the whole process. Sums and maxima keep LANES
 * partial results (one vector), combined in a fixed order at the end, so the
 * result does not depend on anything but the inputs and the CPU family.
 */
#include "vexp.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

#define LANES 16
#define CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))

/* The reduction and polynomial shared by both forms: x in [-87.34, 0] (or
 * NaN) gives y = exp(r) and *n, with exp(x) = y * 2^n. */
static inline float exp_poly(float x, float *n_out) {
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
    *n_out = n;
    return p * (r * r) + r + 1.0f;
}

/* exp(x) for x <= 0 (Cephes expf): x = n ln2 + r, |r| <= ln2/2, exp(r) by a
 * degree-6 polynomial, 2^n put in the exponent bits. Below -87.3 (and for
 * -inf) the result is 0, as for a masked score; NaN stays NaN. */
static inline float exp_nonpos(float x) {
    const float lo = -87.33654f;
    int under = x < lo;
    x = under ? lo : x;
    float n, y = exp_poly(x, &n);
    /* n is in [-126, 0]; NaN (from an infinite score) gives NaN through y */
    uint32_t e = (uint32_t)((n >= -126.0f && n <= 0.0f ? (int32_t)n : 0) + 127) << 23;
    float scale;
    memcpy(&scale, &e, sizeof scale);
    return under ? 0.0f : y * scale;
}

/* LANES floats as one vector (GCC's vector extension: one AVX-512 register,
 * two AVX2 or four SSE ones). The reductions below keep their partial
 * results in one: written as arrays, GCC left the maximum scalar and the
 * sum in memory. Comparisons work on halves of 8 floats: GCC splits an
 * operation on a vector wider than the machine's into machine-wide pieces,
 * but a comparison into single floats (16 vcomiss and branches in the AVX2
 * clone). */
typedef float half __attribute__((vector_size(LANES / 2 * sizeof(float))));
typedef int32_t half_mask __attribute__((vector_size(LANES / 2 * sizeof(float))));

/* Where m is all ones, a, else b (a macro: vectors passed by value change
 * the ABI between clones). */
#define SELECT_HALF(m, a, b) ((half)(((half_mask)(a) & (m)) | ((half_mask)(b) & ~(m))))

/* exp_poly on LANES / 2 values at once: y = exp(r) and *n with
 * exp(x) = y * 2^n, the same operations in the same order. */
__attribute__((always_inline)) static inline void exp_poly_half(const half *x, half *y,
                                                                half *n_out) {
    const half zero = {0};
    half t = *x * 1.44269504088896341f + 12582912.0f;
    half n = t - 12582912.0f;
    half r = *x - n * 0.693359375f;
    r = r - n * -2.12194440e-4f;
    half p = zero + 1.9875691500e-4f;
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    *n_out = n;
    *y = p * (r * r) + r + 1.0f;
}

/* *v = exp_nonpos(*v) on LANES / 2 values at once: the same operations in
 * the same order, written on vectors. The scalar form in a loop stayed
 * scalar: its selects compare floats, which may raise "invalid" on NaN, so
 * GCC kept them as branches (34 instructions an exponential). */
__attribute__((always_inline)) static inline void exp_nonpos_half(half *v) {
    const half zero = {0};
    half_mask under = *v < -87.33654f;
    half x = SELECT_HALF(under, zero - 87.33654f, *v), y, n;
    exp_poly_half(&x, &y, &n);
    half_mask in_range = (n >= -126.0f) & (n <= 0.0f);
    half_mask e = (__builtin_convertvector(SELECT_HALF(in_range, n, zero), half_mask) + 127) << 23;
    half scaled = y * (half)e;
    *v = SELECT_HALF(under, zero, scaled);
}

CLONES float attn__row_max(const float *x, int n) {
    half m[2] = {{0}, {0}};
    m[0] -= INFINITY, m[1] -= INFINITY;
    int j = 0;
    for (; j + LANES <= n; j += LANES)
        for (int h = 0; h < 2; h++) {
            half v;
            memcpy(&v, x + j + h * (LANES / 2), sizeof v);
            half_mask gt = v > m[h]; /* all ones where x is larger: x > m ? x : m */
            m[h] = SELECT_HALF(gt, v, m[h]);
        }
    float max = m[0][0];
    for (; j < n; j++) max = x[j] > max ? x[j] : max;
    for (int l = 1; l < LANES; l++) {
        float ml = m[l / (LANES / 2)][l % (LANES / 2)];
        max = ml > max ? ml : max;
    }
    return max;
}

/* The one place where multiply-adds are fused (GCC's ISO C mode keeps them
 * apart elsewhere): the AVX2 and AVX-512 clones run the polynomial as FMAs,
 * 1.6x faster (0.55 to 0.35 ns a value on one core); the SSE2 clone has no
 * FMA, so its exponentials may differ from theirs in the last bit. Clang
 * fuses a * b + c within an expression by default and has no such
 * attribute. */
#if defined(__GNUC__) && !defined(__clang__)
#define FUSED_MULTIPLY_ADD __attribute__((optimize("fp-contract=fast")))
#else
#define FUSED_MULTIPLY_ADD
#endif

FUSED_MULTIPLY_ADD
CLONES float attn__exp_shifted(float *y, const float *x, float shift, int n) {
    half s[2] = {{0}, {0}}; /* lane l of the sum is s[l / 8][l % 8] */
    int j = 0;
    for (; j + LANES <= n; j += LANES)
        for (int h = 0; h < 2; h++) {
            half v;
            memcpy(&v, x + j + h * (LANES / 2), sizeof v);
            v -= shift;
            exp_nonpos_half(&v);
            memcpy(y + j + h * (LANES / 2), &v, sizeof v);
            s[h] += v;
        }
    float sum[LANES];
    memcpy(sum, s, sizeof sum);
    for (int l = 0; j < n; j++, l++) {
        float e = exp_nonpos(x[j] - shift);
        y[j] = e;
        sum[l] += e;
    }
    /* pairwise, always the same tree */
    for (int w = LANES / 2; w > 0; w /= 2)
        for (int l = 0; l < w; l++) sum[l] += sum[l + w];
    return sum[0];
}

CLONES void attn__scale_row(float *y, float a, int n) {
    for (int j = 0; j < n; j++) y[j] *= a;
}

/* exp(x) for x <= 0 as exp_nonpos, with x clamped at -87.34 instead of
 * flushed to 0 (exp(-87.34) is 1.2e-38: GELU's sums cannot tell), so that
 * the loops below have no branch and vectorise. NaN is not expected here
 * (the inputs are finite). */
static inline float exp_clamped(float x) {
    x = x < -87.33654f ? -87.33654f : x;
    float n, y = exp_poly(x, &n);
    uint32_t e = (uint32_t)((int32_t)n + 127) << 23; /* n in [-126, 0] */
    float scale;
    memcpy(&scale, &e, sizeof scale);
    return y * scale;
}

/* F.gelu(x) as PyTorch 1.13's vectorised CPU kernel computes it:
 * x * 0.5 * (1 + erf(x / sqrt 2)), erf by Abramowitz and Stegun 7.1.26
 * (|error| < 1.5e-7), the polynomial ATen's Vectorized<float>::erf uses. */
static inline float gelu_erf(float v) {
    float z = v * 0.70710678118654752f;
    float a = fabsf(z);
    float t = 1.0f / (0.3275911f * a + 1.0f);
    float r = 1.061405429f;
    r = r * t + -1.453152027f;
    r = r * t + 1.421413741f;
    r = r * t + -0.284496736f;
    r = r * t + 0.254829592f;
    float e = exp_clamped(-(z * z));
    float erf_abs = 1.0f - (e * t) * r;
    return v * 0.5f * (1.0f + copysignf(erf_abs, z));
}

/* gelu_new (Hugging Face's NewGELUActivation):
 * 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))), tanh(u) as
 * sign(u) (1 - e) / (1 + e) with e = exp(-2|u|). */
static inline float gelu_tanh(float v) {
    float u = 0.7978845608028654f * (v + 0.044715f * (v * v * v));
    float e = exp_clamped(-2.0f * fabsf(u));
    float th = copysignf((1.0f - e) / (1.0f + e), u);
    return 0.5f * v * (1.0f + th);
}

/* exp_clamped on LANES / 2 values at once (x <= 0, not NaN). */
__attribute__((always_inline)) static inline void exp_clamped_half(half *v) {
    const half zero = {0};
    half x = SELECT_HALF(*v < -87.33654f, zero - 87.33654f, *v), y, n;
    exp_poly_half(&x, &y, &n);
    half_mask e = (__builtin_convertvector(n, half_mask) + 127) << 23;
    *v = y * (half)e;
}

/* |x| and copysign(mag, sign) on the bits, as fabsf and copysignf */
#define ABS_HALF(x) ((half)((half_mask)(x) & 0x7fffffff))
#define COPYSIGN_HALF(mag, sign) \
    ((half)(((half_mask)(mag) & 0x7fffffff) | ((half_mask)(sign) & (int32_t)0x80000000)))

/* gelu_erf and gelu_tanh on LANES / 2 values at once, in place: the same
 * operations in the same order (scalar, the exponential's clamp kept the
 * AVX2 clone's loops scalar). */
__attribute__((always_inline)) static inline void gelu_half(half *x, int tanh_form) {
    half v = *x;
    if (tanh_form) {
        half u = 0.7978845608028654f * (v + 0.044715f * (v * v * v));
        half e = -2.0f * ABS_HALF(u);
        exp_clamped_half(&e);
        half th = COPYSIGN_HALF((1.0f - e) / (1.0f + e), u);
        *x = 0.5f * v * (1.0f + th);
        return;
    }
    half z = v * 0.70710678118654752f;
    half t = 1.0f / (0.3275911f * ABS_HALF(z) + 1.0f);
    half r = t - t + 1.061405429f;
    r = r * t + -1.453152027f;
    r = r * t + 1.421413741f;
    r = r * t + -0.284496736f;
    r = r * t + 0.254829592f;
    half e = -(z * z);
    exp_clamped_half(&e);
    half erf_abs = 1.0f - (e * t) * r;
    *x = v * 0.5f * (1.0f + COPYSIGN_HALF(erf_abs, z));
}

CLONES void attn__gelu_row(float *x, int n, int tanh_form) {
    int j = 0;
    for (; j + LANES / 2 <= n; j += LANES / 2) {
        half v;
        memcpy(&v, x + j, sizeof v);
        gelu_half(&v, tanh_form);
        memcpy(x + j, &v, sizeof v);
    }
    for (; j < n; j++) x[j] = tanh_form ? gelu_tanh(x[j]) : gelu_erf(x[j]);
}

/* x * sigmoid(x) as PyTorch's SiLU computes it (x / (1 + exp(-x))), with
 * exp(-|x|) so that the exponential never overflows. */
static inline float silu(float v) {
    float e = exp_clamped(-fabsf(v));
    return v >= 0.0f ? v / (1.0f + e) : v * e / (1.0f + e);
}

CLONES void attn__silu_row(float *x, int n) {
    for (int j = 0; j < n; j++) x[j] = silu(x[j]);
}
