/* halfdot.c - few-row products on half-size weight rows (half.h): each
 * weight read once from memory, widened to float32 in registers, and used
 * for up to four rows of x while it is there.
 *
 * A result is eight lanes of products summed along k (lane l takes k = l
 * mod 8), then the lanes ((0+4, 1+5, 2+6, 3+7), then (0+2, 1+3), then the
 * two), then the k past the last multiple of 8 one by one, then the bias:
 * the AVX2 and the portable kernels follow the same order (the AVX2 one
 * fuses each multiply-add, the portable one rounds the product first). */
#include "half.h"

#if defined(__GNUC__) && defined(__x86_64__)
#include <immintrin.h>
#define HAVE_AVX2_SET 1
#define AVX2_INLINE static inline __attribute__((always_inline, target("avx2,fma,f16c")))
#define AVX2_SET static __attribute__((target("avx2,fma,f16c")))
#endif

/* The k past the last multiple of 8, and the bias, after the lanes' sum. */
static inline float finish(attn_dtype t, float s, const float *x, const uint16_t *w, int from,
                           int in, const float *bias) {
    for (int k = from; k < in; k++) s += x[k] * attn__half_to_f32(t, w[k]);
    return bias ? s + *bias : s;
}

/* ==== Portable ============================================================= */

static float lanes_sum(const float s[8]) {
    float a0 = s[0] + s[4], a1 = s[1] + s[5], a2 = s[2] + s[6], a3 = s[3] + s[7];
    return (a0 + a2) + (a1 + a3);
}

/* Four rows of x at a time against each weight row, widened a chunk at a
 * time into a float32 buffer (loops the compiler vectorises with the
 * baseline instructions); the same order of sums as the AVX2 set. */
enum { CHUNK = 256 };

static void dot_portable(attn_dtype t, const attn__half_dot_args *a) {
    int in8 = a->in & ~7;
    float wide[CHUNK];
    for (int r0 = 0; r0 < a->rows; r0 += 4) {
        int R = a->rows - r0 < 4 ? a->rows - r0 : 4;
        const float *x[4];
        for (int r = 0; r < R; r++) x[r] = a->x + (size_t)(r0 + r) * (size_t)a->ldx;
        for (int j = 0; j < a->cols; j++) {
            const uint16_t *w = a->w + (size_t)j * (size_t)a->in;
            float s[4][8] = {{0}};
            for (int k0 = 0; k0 < in8; k0 += CHUNK) {
                int n = in8 - k0 < CHUNK ? in8 - k0 : CHUNK;
                attn__half_widen_portable(t, w + k0, wide, (size_t)n);
                for (int r = 0; r < R; r++)
                    for (int k = 0; k < n; k += 8)
                        for (int l = 0; l < 8; l++) s[r][l] += x[r][k0 + k + l] * wide[k + l];
            }
            for (int r = 0; r < R; r++)
                a->y[(size_t)(r0 + r) * (size_t)a->ldy + (size_t)j] =
                    finish(t, lanes_sum(s[r]), x[r], w, in8, a->in, a->bias ? a->bias + j : NULL);
        }
    }
}

/* ==== AVX2, FMA and F16C =================================================== */

#ifdef HAVE_AVX2_SET
AVX2_INLINE __m256 widen8(attn_dtype t, const uint16_t *p) {
    __m128i h = _mm_loadu_si128((const __m128i *)p);
    if (t == ATTN_DTYPE_F16) return _mm256_cvtph_ps(h);
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
}

AVX2_INLINE float hsum(__m256 v) {
    __m128 a = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1)); /* 0+4 .. 3+7 */
    __m128 b = _mm_add_ps(a, _mm_movehl_ps(a, a));                                /* 0+2, 1+3 */
    return _mm_cvtss_f32(_mm_add_ss(b, _mm_movehdup_ps(b)));
}

/* R rows of x (from r0) against J weight rows (from j0): R * J lanes of
 * sums in registers, each widened weight vector used R times. The loops
 * over R and J unroll (both constants where it is inlined). */
AVX2_INLINE void tile(attn_dtype t, const attn__half_dot_args *a, int r0, int R, int j0, int J) {
    __m256 acc[4][4];
    const float *x[4];
    const uint16_t *w[4];
    for (int r = 0; r < R; r++) x[r] = a->x + (size_t)(r0 + r) * (size_t)a->ldx;
    for (int j = 0; j < J; j++) w[j] = a->w + (size_t)(j0 + j) * (size_t)a->in;
    for (int r = 0; r < R; r++)
        for (int j = 0; j < J; j++) acc[r][j] = _mm256_setzero_ps();
    int in8 = a->in & ~7;
    /* the rows the next tile reads, a cache line of each at a time: the
     * hardware's prefetchers lose the short streams of one tile's rows
     * (an address past the block is harmless: a prefetch never faults) */
    uintptr_t ahead = (uintptr_t)J * (uintptr_t)a->in * sizeof(uint16_t);
    for (int k = 0; k < in8; k += 8) {
        __m256 wv[4];
        if ((k & 31) == 0)
            for (int j = 0; j < J; j++)
                _mm_prefetch((const char *)((uintptr_t)(w[j] + k) + ahead), _MM_HINT_T0);
        for (int j = 0; j < J; j++) wv[j] = widen8(t, w[j] + k);
        for (int r = 0; r < R; r++) {
            __m256 xv = _mm256_loadu_ps(x[r] + k);
            for (int j = 0; j < J; j++) acc[r][j] = _mm256_fmadd_ps(xv, wv[j], acc[r][j]);
        }
    }
    for (int r = 0; r < R; r++)
        for (int j = 0; j < J; j++)
            a->y[(size_t)(r0 + r) * (size_t)a->ldy + (size_t)(j0 + j)] =
                finish(t, hsum(acc[r][j]), x[r], w[j], in8, a->in, a->bias ? a->bias + j0 + j : NULL);
}

/* Rows r0.. (R of them) against every weight row: J at a time, then one. */
AVX2_INLINE void rows_avx2(attn_dtype t, const attn__half_dot_args *a, int r0, int R, int J) {
    int j = 0;
    if (R == 4)
        for (; j + J <= a->cols; j += J) tile(t, a, r0, 4, j, 2);
    else
        for (; j + J <= a->cols; j += J) tile(t, a, r0, 1, j, 4);
    for (; j < a->cols; j++) {
        if (R == 4) tile(t, a, r0, 4, j, 1);
        else tile(t, a, r0, 1, j, 1);
    }
}

/* Four rows of x at a time against pairs of weight rows (8 sums in
 * flight), then each remaining row against four weight rows at a time. */
AVX2_INLINE void dot_avx2(attn_dtype t, const attn__half_dot_args *a) {
    int r = 0;
    for (; r + 4 <= a->rows; r += 4) rows_avx2(t, a, r, 4, 2);
    for (; r < a->rows; r++) rows_avx2(t, a, r, 1, 4);
}

AVX2_SET void dot_avx2_f16(const attn__half_dot_args *a) { dot_avx2(ATTN_DTYPE_F16, a); }
AVX2_SET void dot_avx2_bf16(const attn__half_dot_args *a) { dot_avx2(ATTN_DTYPE_BF16, a); }
#endif

void attn__half_dot(attn_dtype t, const attn__half_dot_args *a) {
#ifdef HAVE_AVX2_SET
    if (attn__half_avx2()) {
        if (t == ATTN_DTYPE_F16) dot_avx2_f16(a);
        else dot_avx2_bf16(a);
        return;
    }
#endif
    dot_portable(t, a);
}
