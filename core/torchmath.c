/* torchmath.c - the exponential and row reductions of PyTorch 1.13's AVX2
 * CPU kernels, bit for bit, for torch.softmax of one row.
 *
 * Debian's python3-torch runs its AVX2 kernels here (torch.__config__.show():
 * "CPU capability usage: AVX2"): Vectorized<float> holds eight floats, its
 * exp() is SLEEF's Sleef_expf8_u10 (libsleef3, the AVX2 + FMA variant of
 * xexpf in sleefsimdsp.c), and vec::reduce_all (ATen/cpu/vec/
 * functional_base.h) keeps eight lane results, the last partial vector added
 * into its first lanes, then folds them with the shuffles of
 * VecReduceAllSIMD<float>. Each fmaf() below is one fused instruction of
 * that code; the rest rounds after every operation (the Makefile's -std=c11
 * lets GCC contract nothing).
 */
#include "torchmath.h"

#include <math.h>
#include <string.h>

#define LANES 8

/* SLEEF's xexpf for d <= 100: q = rint(d / ln 2), s = d - q ln2 in two
 * parts, a degree-6 polynomial, times 2^q applied in two halves (vldexp2).
 * Below -104 the result is 0 (-inf included). Branch-free, so that the
 * loops below vectorise: d is clamped before the integer conversion. */
static inline float sleef_expf(float d) {
    float dc = d < -104.0f ? -104.0f : d;
    /* vrint_vi2_vf is cvtps2dq: round to nearest even; |dc / ln2| < 2^22 */
    float qf = (dc * 1.442695040888963407359924681001892137426645954152985934135449406931f +
                12582912.0f) - 12582912.0f;
    int32_t q = (int32_t)qf;
    float s = fmaf(qf, -0.693145751953125f, dc);
    s = fmaf(qf, -1.428606765330187045e-06f, s);
    float u = 0.000198527617612853646278381f;
    u = fmaf(u, s, 0.00139304355252534151077271f);
    u = fmaf(u, s, 0.00833336077630519866943359f);
    u = fmaf(u, s, 0.0416664853692054748535156f);
    u = fmaf(u, s, 0.166666671633720397949219f);
    u = fmaf(u, s, 0.5f);
    u = 1.0f + fmaf(s * s, u, s);
    /* vldexp2_vf_vf_vi2: u * 2^(q >> 1) * 2^(q - (q >> 1)) */
    int32_t h = q >> 1;
    uint32_t b1 = (uint32_t)(h + 0x7f) << 23, b2 = (uint32_t)(q - h + 0x7f) << 23;
    float p1, p2;
    memcpy(&p1, &b1, sizeof p1);
    memcpy(&p2, &b2, sizeof p2);
    float r = (u * p1) * p2;
    return d < -104.0f ? 0.0f : r;
}

/* vec_reduce_all of the AVX2 build: ((a0+a4)+(a2+a6)) + ((a1+a5)+(a3+a7)). */
static inline float fold_sum(const float a[LANES]) {
    float b0 = a[0] + a[4], b1 = a[1] + a[5], b2 = a[2] + a[6], b3 = a[3] + a[7];
    return (b0 + b2) + (b1 + b3);
}

float attn__torch_row_max(const float *x, size_t n) {
    float m = x[0]; /* max is exact: the order of PyTorch's lanes changes nothing */
    for (size_t i = 1; i < n; i++) m = x[i] > m ? x[i] : m;
    return m;
}

#if defined(__GNUC__) && defined(__x86_64__)
#include <immintrin.h>
#define HAVE_AVX2_PATH 1

/* sleefsimdsp.c's xexpf as helperavx2.h compiles it, eight lanes at a time:
 * the same operations as sleef_expf, so the same bits. n % 8 == 0. */
__attribute__((target("avx2,fma"))) static void exp_rows_avx2(const float *x, float shift,
                                                              float *y, size_t n) {
    const __m256 sh = _mm256_set1_ps(shift), lo = _mm256_set1_ps(-104.0f);
    const __m256i bias = _mm256_set1_epi32(0x7f);
    for (size_t i = 0; i < n; i += LANES) {
        __m256 d = _mm256_sub_ps(_mm256_loadu_ps(x + i), sh);
        __m256i q = _mm256_cvtps_epi32(_mm256_mul_ps(
            d, _mm256_set1_ps(1.442695040888963407359924681001892137426645954152985934135449406931f)));
        __m256 qf = _mm256_cvtepi32_ps(q);
        __m256 s = _mm256_fmadd_ps(qf, _mm256_set1_ps(-0.693145751953125f), d);
        s = _mm256_fmadd_ps(qf, _mm256_set1_ps(-1.428606765330187045e-06f), s);
        __m256 u = _mm256_set1_ps(0.000198527617612853646278381f);
        u = _mm256_fmadd_ps(u, s, _mm256_set1_ps(0.00139304355252534151077271f));
        u = _mm256_fmadd_ps(u, s, _mm256_set1_ps(0.00833336077630519866943359f));
        u = _mm256_fmadd_ps(u, s, _mm256_set1_ps(0.0416664853692054748535156f));
        u = _mm256_fmadd_ps(u, s, _mm256_set1_ps(0.166666671633720397949219f));
        u = _mm256_fmadd_ps(u, s, _mm256_set1_ps(0.5f));
        u = _mm256_add_ps(_mm256_set1_ps(1.0f), _mm256_fmadd_ps(_mm256_mul_ps(s, s), u, s));
        __m256i h = _mm256_srai_epi32(q, 1);
        __m256 p1 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(h, bias), 23));
        __m256 p2 = _mm256_castsi256_ps(
            _mm256_slli_epi32(_mm256_add_epi32(_mm256_sub_epi32(q, h), bias), 23));
        u = _mm256_mul_ps(_mm256_mul_ps(u, p1), p2);
        u = _mm256_andnot_ps(_mm256_cmp_ps(d, lo, _CMP_LT_OQ), u);
        _mm256_storeu_ps(y + i, u);
    }
}

static int avx2_fma(void) {
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
}
#endif

/* y[0..n) = exp(x[0..n) - shift). */
static void exp_rows(const float *x, float shift, float *y, size_t n) {
    size_t i = 0;
#ifdef HAVE_AVX2_PATH
    if (avx2_fma()) {
        i = n - n % LANES;
        exp_rows_avx2(x, shift, y, i);
    }
#endif
    for (; i < n; i++) y[i] = sleef_expf(x[i] - shift);
}

#define CHUNK 512 /* floats of exponentials at a time when y is NULL */

float attn__torch_exp_sum(const float *x, float *y, float shift, size_t n) {
    float buf[CHUNK], acc[LANES] = {0};
    if (n < LANES) { /* vec_reduce_all(op, loadu(data, n), n): lane 0 left to right */
        float *e = y ? y : buf;
        exp_rows(x, shift, e, n);
        float s = e[0];
        for (size_t i = 1; i < n; i++) s = s + e[i];
        return s;
    }
    /* lanes: the first vector, then every whole one, then the partial one
     * into the first lanes only; that is, element i into lane i % 8 in order */
    for (size_t d = 0; d < n; d += CHUNK) {
        size_t m = n - d < CHUNK ? n - d : CHUNK;
        float *e = y ? y + d : buf;
        exp_rows(x + d, shift, e, m);
        size_t j = 0;
        if (d == 0)
            for (; j < LANES; j++) acc[j] = e[j];
        for (; j + LANES <= m; j += LANES)
            for (int l = 0; l < LANES; l++) acc[l] = acc[l] + e[j + l];
        for (int l = 0; j < m; j++, l++) acc[l] = acc[l] + e[j];
    }
    return fold_sum(acc);
}
