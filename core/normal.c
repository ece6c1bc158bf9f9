/* normal.c - Tensor.normal_ as PyTorch 1.13 computes it on the CPU.
 *
 * A contiguous float32 tensor of 16 or more elements takes normal_fill_AVX2
 * (aten/src/ATen/native/cpu/DistributionTemplates.h; Debian's python3-torch
 * runs its AVX2 kernels): every element first gets one uniform float draw,
 * then each block of 16 becomes 16 normals by Box-Muller on the pairs
 * (j, j + 8), with the Cephes log and sincos polynomials of avx_mathfun.h,
 * not libm. When the size is not a multiple of 16, the last 16 elements are
 * drawn again and transformed again (they overlap the previous block).
 * The FMA contractions below are the ones GCC makes when it compiles those
 * polynomials for AVX2 + FMA; each fmaf() stands for one fused instruction.
 *
 * A smaller tensor draws element by element from
 * at::normal_distribution<double>: two double uniforms (53 bits from two
 * 32-bit outputs each), Box-Muller in double with libm, and the sine half is
 * cached in the generator for the next normal draw.
 */
#include "attention.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

/* fmaf() is a slow library call unless the compiler may emit the FMA
 * instruction: the hot functions are compiled twice (GCC function
 * multi-versioning) and the loader picks the FMA one where the CPU has it.
 * Both give the same bits: fmaf is exact either way. */
#if defined(__GNUC__) && defined(__x86_64__) && !defined(__clang__)
#define ATTN_FMA_CLONES __attribute__((target_clones("fma", "default")))
#else
#define ATTN_FMA_CLONES
#endif
#define ATTN_INLINE static inline __attribute__((always_inline))

ATTN_INLINE float bits_to_float(uint32_t u) {
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

ATTN_INLINE uint32_t float_to_bits(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

/* avx_mathfun.h log256_ps, one lane, for x in (0, 1]. */
ATTN_INLINE float cephes_logf(float x) {
    const float min_norm_pos = bits_to_float(0x00800000u);
    x = x > min_norm_pos ? x : min_norm_pos;
    int32_t imm0 = (int32_t)(float_to_bits(x) >> 23);
    x = bits_to_float((float_to_bits(x) & ~0x7f800000u) | float_to_bits(0.5f));
    imm0 -= 0x7f;
    float e = (float)imm0;
    e += 1.0f;
    int below = x < 0.707106781186547524f; /* cephes SQRTHF */
    float tmp = below ? x : 0.0f;
    x -= 1.0f;
    if (below) e -= 1.0f;
    x += tmp;
    float z = x * x;
    float y = 7.0376836292e-2f;
    y = fmaf(y, x, -1.1514610310e-1f);
    y = fmaf(y, x, 1.1676998740e-1f);
    y = fmaf(y, x, -1.2420140846e-1f);
    y = fmaf(y, x, 1.4249322787e-1f);
    y = fmaf(y, x, -1.6668057665e-1f);
    y = fmaf(y, x, 2.0000714765e-1f);
    y = fmaf(y, x, -2.4999993993e-1f);
    y = fmaf(y, x, 3.3333331174e-1f);
    y = y * x;
    y = fmaf(y, z, e * -2.12194440e-4f); /* + e * log_q1 */
    y = fmaf(z, -0.5f, y);               /* - z * 0.5 */
    x = x + y;
    return fmaf(e, 0.693359375f, x);     /* + e * log_q2 */
}

/* avx_mathfun.h sincos256_ps, one lane. */
ATTN_INLINE void cephes_sincosf(float theta, float *s, float *c) {
    uint32_t sign_sin = float_to_bits(theta) & 0x80000000u;
    float x = bits_to_float(float_to_bits(theta) & 0x7fffffffu);
    int32_t j = (int32_t)(x * 1.27323954473516f); /* 4 / pi, truncated */
    j = (j + 1) & ~1;
    float yq = (float)j;
    uint32_t swap_sign = (uint32_t)(j & 4) << 29;
    int poly_is_cos = (j & 2) == 0;
    sign_sin ^= swap_sign;
    uint32_t sign_cos = (uint32_t)(~(j - 2) & 4) << 29;
    /* extended precision modular arithmetic: x - yq * pi/4 in three parts */
    x = fmaf(yq, -0.78515625f, x);
    x = fmaf(yq, -2.4187564849853515625e-4f, x);
    x = fmaf(yq, -3.77489497744594108e-8f, x);
    float z = x * x;
    float yc = fmaf(2.443315711809948e-5f, z, -1.388731625493765e-3f);
    yc = fmaf(yc, z, 4.166664568298827e-2f);
    yc = yc * z;
    yc = fmaf(yc, z, -(z * 0.5f));
    yc = yc + 1.0f;
    float ys = fmaf(-1.9515295891e-4f, z, 8.3321608736e-3f);
    ys = fmaf(ys, z, -1.6666654611e-1f);
    ys = ys * z;
    ys = fmaf(ys, x, x);
    float sv = poly_is_cos ? ys : yc, cv = poly_is_cos ? yc : ys;
    *s = bits_to_float(float_to_bits(sv) ^ sign_sin);
    *c = bits_to_float(float_to_bits(cv) ^ sign_cos);
}

/* normal_fill_16_AVX2: 16 uniforms in place to 16 normals. */
ATTN_INLINE void fill16(float *d, float mean, float std) {
    const float two_pi = (float)(2.0 * 3.14159265358979323846);
    for (int j = 0; j < 8; j++) {
        float u1 = 1.0f - d[j], u2 = d[j + 8];
        float radius = sqrtf(-2.0f * cephes_logf(u1));
        float s, c;
        cephes_sincosf(two_pi * u2, &s, &c);
        d[j] = fmaf(radius * c, std, mean);
        d[j + 8] = fmaf(radius * s, std, mean);
    }
}

/* at::uniform_real_distribution<double>(0, 1): 53 bits of a 64-bit draw. */
static double uniform_double(attn_rng *rng) {
    uint64_t hi = attn_rng_u32(rng), lo = attn_rng_u32(rng);
    uint64_t bits = ((hi << 32) | lo) & ((UINT64_C(1) << 53) - 1);
    return (double)bits * (1.0 / (double)(UINT64_C(1) << 53));
}

/* Uniform [0, 1) floats: 24 bits of one draw each (the x * 1 + 0 of
 * uniform_real_distribution<float>(0, 1) changes nothing). */
static void fill_uniform01(attn_rng *rng, float *x, size_t n) {
    for (size_t i = 0; i < n; i++)
        x[i] = (float)(attn_rng_u32(rng) & ((1u << 24) - 1)) * (1.0f / (float)(1u << 24));
}

ATTN_FMA_CLONES static void fill_blocks(float *x, size_t n, float mean, float std) {
    for (size_t i = 0; i + 16 <= n; i += 16) fill16(x + i, mean, std);
}

void attn_rng_normal_fill(attn_rng *rng, attn_normal_cache *cache, float *x, size_t n,
                          double mean, double std) {
    if (n >= 16) {
        float m = (float)mean, s = (float)std;
        fill_uniform01(rng, x, n);
        fill_blocks(x, n, m, s);
        if (n % 16 != 0) {
            float *tail = x + n - 16;
            fill_uniform01(rng, tail, 16);
            fill_blocks(tail, 16, m, s);
        }
        return;
    }
    for (size_t i = 0; i < n; i++) {
        if (cache->has_next) {
            cache->has_next = 0;
            x[i] = (float)(cache->next * std + mean);
            continue;
        }
        double u1 = uniform_double(rng), u2 = uniform_double(rng);
        double r = sqrt(-2.0 * log(1.0 - u2)), theta = 2.0 * 3.14159265358979323846 * u1;
        cache->has_next = 1;
        cache->next = r * sin(theta);
        x[i] = (float)(r * cos(theta) * std + mean);
    }
}
