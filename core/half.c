/* half.c - F16 and BF16 values: float32 rounded to them, rows widened, the
 * finite check, which set of kernels runs (half.h); and the dtypes of
 * lm.h: names, sizes, conversions. */
#include "half.h"
#include "lm.h"

#if defined(__GNUC__) && defined(__x86_64__)
#include <immintrin.h>
#define HAVE_AVX2_SET 1
#define AVX2_SET __attribute__((target("avx2,fma,f16c")))
#endif

/* ==== Rounding float32 ===================================================== */

uint16_t attn__f32_to_bf16(float f) {
    uint32_t x;
    memcpy(&x, &f, sizeof x);
    if ((x & 0x7fffffff) > 0x7f800000) return (uint16_t)(x >> 16 | 0x40); /* NaN: quiet */
    x += 0x7fff + (x >> 16 & 1); /* half an ulp, and the tie to the even side */
    return (uint16_t)(x >> 16);
}

uint16_t attn__f32_to_f16(float f) {
    uint32_t x, sign, ax;
    memcpy(&x, &f, sizeof x);
    sign = x >> 16 & 0x8000, ax = x & 0x7fffffff;
    if (ax > 0x7f800000) return (uint16_t)(sign | 0x7e00 | (ax >> 13 & 0x3ff)); /* NaN */
    if (ax >= 0x477ff000) return (uint16_t)(sign | 0x7c00); /* 65520 and up round to infinity */
    if (ax < 0x38800000) {
        /* below 2^-14: adding 0.5 leaves the value in units of 2^-24 in the
         * low bits, rounded to nearest even by the addition itself */
        float v, half = 0.5f;
        uint32_t hb;
        memcpy(&v, &ax, sizeof v);
        v += half;
        memcpy(&x, &v, sizeof x);
        memcpy(&hb, &half, sizeof hb);
        return (uint16_t)(sign | (x - hb));
    }
    uint32_t odd = ax >> 13 & 1;
    ax += ((uint32_t)(15 - 127) << 23) + 0xfff + odd; /* rebias, half an ulp, ties to even */
    return (uint16_t)(sign | ax >> 13);
}

/* ==== Rows ================================================================= */

int attn__half_finite(attn_dtype t, const uint16_t *x, size_t n) {
    uint16_t exp = t == ATTN_DTYPE_F16 ? 0x7c00 : 0x7f80, any = 0;
    for (size_t i = 0; i < n; i++) any |= (uint16_t)((x[i] & exp) == exp);
    return !any;
}

/* F16 to float32 without a branch, so that the compiler can vectorise a
 * row of them with the baseline instructions: exponent and mantissa moved
 * to float32's places are the value times 2^-112 (a subnormal F16 becomes
 * a subnormal float32: the product is exact either way), then infinity and
 * NaN are put back. The same value as attn__f16_to_f32. */
static inline float f16_to_f32_flat(uint16_t h) {
    uint32_t em = (uint32_t)(h & 0x7fff) << 13, sign = (uint32_t)(h & 0x8000) << 16, bits;
    float f;
    memcpy(&f, &em, sizeof f);
    f *= 0x1p112f;
    memcpy(&bits, &f, sizeof bits);
    uint32_t special = 0u - (uint32_t)((h & 0x7c00) == 0x7c00); /* all ones or none */
    bits = (bits & ~special) | ((0x7f800000 | em) & special) | sign;
    memcpy(&f, &bits, sizeof f);
    return f;
}

void attn__half_widen_portable(attn_dtype t, const uint16_t *src, float *dst, size_t n) {
    if (t == ATTN_DTYPE_BF16)
        for (size_t i = 0; i < n; i++) dst[i] = attn__bf16_to_f32(src[i]);
    else
        for (size_t i = 0; i < n; i++) dst[i] = f16_to_f32_flat(src[i]);
}

#ifdef HAVE_AVX2_SET
AVX2_SET static void widen_avx2(attn_dtype t, const uint16_t *src, float *dst, size_t n) {
    size_t i = 0;
    if (t == ATTN_DTYPE_F16)
        for (; i + 8 <= n; i += 8)
            _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(src + i))));
    else
        for (; i + 8 <= n; i += 8) {
            __m256i h = _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)(src + i)));
            _mm256_storeu_ps(dst + i, _mm256_castsi256_ps(_mm256_slli_epi32(h, 16)));
        }
    attn__half_widen_portable(t, src + i, dst + i, n - i);
}
#endif

void attn__half_widen(attn_dtype t, const uint16_t *src, float *dst, size_t n) {
#ifdef HAVE_AVX2_SET
    if (attn__half_avx2()) {
        widen_avx2(t, src, dst, n);
        return;
    }
#endif
    attn__half_widen_portable(t, src, dst, n);
}

/* ==== The kernels in use =================================================== */

static int forced_portable; /* read and written atomically */

int attn__half_avx2(void) {
    if (__atomic_load_n(&forced_portable, __ATOMIC_RELAXED)) return 0;
#ifdef HAVE_AVX2_SET
    static int has = -1; /* the CPU's answer, asked once */
    int h = __atomic_load_n(&has, __ATOMIC_RELAXED);
    if (h < 0) {
        __builtin_cpu_init();
        h = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
            __builtin_cpu_supports("f16c");
        __atomic_store_n(&has, h, __ATOMIC_RELAXED);
    }
    return h;
#else
    return 0;
#endif
}

const char *attn__half_kernels(void) { return attn__half_avx2() ? "avx2" : "portable"; }

void attn__half_force_portable(int on) {
    __atomic_store_n(&forced_portable, on != 0, __ATOMIC_RELAXED);
}

/* ==== Dtypes (lm.h) ======================================================== */

const char *attn_dtype_name(attn_dtype t) {
    static const char *const names[ATTN_DTYPE_COUNT] = {"F32", "F16", "BF16"};
    return (unsigned)t < ATTN_DTYPE_COUNT ? names[t] : NULL;
}

size_t attn_dtype_size(attn_dtype t) {
    return t == ATTN_DTYPE_F32 ? 4 : (unsigned)t < ATTN_DTYPE_COUNT ? 2 : 0;
}

void attn_dtype_convert(attn_dtype to, void *dst, attn_dtype from, const void *src, size_t n) {
    const unsigned char *s = src;
    unsigned char *d = dst;
    if (to == from) {
        memmove(dst, src, n * attn_dtype_size(to));
        return;
    }
    for (size_t i = 0; i < n; i++) {
        float f;
        uint16_t h;
        if (from == ATTN_DTYPE_F32) {
            memcpy(&f, s + 4 * i, sizeof f);
        } else {
            memcpy(&h, s + 2 * i, sizeof h);
            f = attn__half_to_f32(from, h);
        }
        if (to == ATTN_DTYPE_F32) {
            memcpy(d + 4 * i, &f, sizeof f);
            continue;
        }
        h = to == ATTN_DTYPE_F16 ? attn__f32_to_f16(f) : attn__f32_to_bf16(f);
        memcpy(d + 2 * i, &h, sizeof h);
    }
}
