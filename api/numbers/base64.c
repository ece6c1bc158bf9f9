/* codec.c - base64 and float16, see codec.h. */
#include "api/numbers/numbers.h"

#include <string.h>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define B64_AVX2 1
#define have_avx2() __builtin_cpu_supports("avx2")
#else /* the scalar loops do all the work */
#define have_avx2() 0
#define b64_decode_avx2(s, m, out) ((size_t)0)
#define b64_encode_avx2(in, n, out) ((size_t)0)
#endif

static const char B64[64] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/* 0..63 for an alphabet character, 64 for '=', 255 otherwise. */
static const uint8_t *b64_values(void) {
    static uint8_t v[256];
    static int ready;
    if (!__atomic_load_n(&ready, __ATOMIC_ACQUIRE)) {
        uint8_t t[256];
        memset(t, 255, sizeof t);
        for (int i = 0; i < 64; i++) t[(uint8_t)B64[i]] = (uint8_t)i;
        t['='] = 64;
        memcpy(v, t, sizeof v); /* the same bytes from every thread: a benign race */
        __atomic_store_n(&ready, 1, __ATOMIC_RELEASE);
    }
    return v;
}

/* Characters of s[0..n) before its '=' padding (at most two). */
static size_t unpadded(const char *s, size_t n) {
    size_t m = n;
    while (m > 0 && n - m < 2 && s[m - 1] == '=') m--;
    return m;
}

size_t api__b64_decoded_size(const char *s, size_t n) {
    size_t m = unpadded(s, n);
    if (m != n && n % 4 != 0) return SIZE_MAX; /* padding only on a full quantum */
    if (m > 0 && s[m - 1] == '=') return SIZE_MAX; /* three or more '=' */
    if (m % 4 == 1) return SIZE_MAX;
    return m / 4 * 3 + (m % 4 ? m % 4 - 1 : 0);
}

#ifdef B64_AVX2
/* Decodes whole blocks of 32 characters into 24 bytes each with AVX2, and
 * stops before the first block holding anything but the 64 letters (the
 * scalar loop then finds the character at fault). Returns the characters
 * decoded. Each character is classified by its two nibbles (a bit per class
 * of high nibble, set in the low nibble's row when that pair is not base64),
 * turned into its value by adding an offset chosen by the high nibble ('/'
 * shares its nibble with '+', so it is moved down one row), and four 6-bit
 * values are joined into 24 bits by two multiply-adds. */
__attribute__((target("avx2"))) static size_t b64_decode_avx2(const char *s, size_t m,
                                                                uint8_t *out) {
    /* high nibble 2: '+' '/'; 3: digits; 4, 6: lows 1..F; 5, 7: lows 0..A */
    const __m256i bad_lo = _mm256_setr_epi8(
        0x15, 0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x13, 0x1a, 0x1b, 0x1b, 0x1b,
        0x1a, 0x15, 0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x13, 0x1a, 0x1b, 0x1b,
        0x1b, 0x1a);
    const __m256i class_hi = _mm256_setr_epi8(
        0x10, 0x10, 0x01, 0x02, 0x04, 0x08, 0x04, 0x08, 0x10, 0x10, 0x10, 0x10, 0x10, 0x10, 0x10,
        0x10, 0x10, 0x10, 0x01, 0x02, 0x04, 0x08, 0x04, 0x08, 0x10, 0x10, 0x10, 0x10, 0x10, 0x10,
        0x10, 0x10);
    /* row 1: '/' (+16), 2: '+' (+19), 3: digits (+4), 4-5: capitals, 6-7: small letters */
    const __m256i offset = _mm256_setr_epi8(0, 16, 19, 4, -65, -65, -71, -71, 0, 0, 0, 0, 0, 0, 0,
                                            0, 0, 16, 19, 4, -65, -65, -71, -71, 0, 0, 0, 0, 0, 0,
                                            0, 0);
    const __m256i nibble = _mm256_set1_epi8(0x0f), slash = _mm256_set1_epi8('/');
    /* the three bytes of each 32-bit lane, high first, twelve per 128 bits */
    const __m256i order = _mm256_setr_epi8(2, 1, 0, 6, 5, 4, 10, 9, 8, 14, 13, 12, -1, -1, -1, -1,
                                           2, 1, 0, 6, 5, 4, 10, 9, 8, 14, 13, 12, -1, -1, -1, -1);
    const __m256i together = _mm256_setr_epi32(0, 1, 2, 4, 5, 6, 3, 7);
    size_t i = 0;
    for (; i + 32 <= m; i += 32, out += 24) {
        __m256i c = _mm256_loadu_si256((const __m256i *)(s + i));
        __m256i hi = _mm256_and_si256(_mm256_srli_epi32(c, 4), nibble);
        __m256i lo = _mm256_and_si256(c, nibble);
        __m256i bad = _mm256_and_si256(_mm256_shuffle_epi8(bad_lo, lo),
                                       _mm256_shuffle_epi8(class_hi, hi));
        if (!_mm256_testz_si256(bad, bad)) break;
        __m256i row = _mm256_add_epi8(hi, _mm256_cmpeq_epi8(c, slash));
        __m256i v = _mm256_add_epi8(c, _mm256_shuffle_epi8(offset, row));
        /* (a << 6 | b) per 16 bits, then (ab << 12 | cd) per 32 */
        __m256i ab = _mm256_maddubs_epi16(v, _mm256_set1_epi32(0x01400140));
        __m256i w = _mm256_madd_epi16(ab, _mm256_set1_epi32(0x00011000));
        w = _mm256_permutevar8x32_epi32(_mm256_shuffle_epi8(w, order), together);
        _mm_storeu_si128((__m128i *)out, _mm256_castsi256_si128(w));
        _mm_storel_epi64((__m128i *)(out + 16), _mm256_extracti128_si256(w, 1));
    }
    return i;
}
#endif

size_t api__b64_decode(const char *s, size_t n, uint8_t *out) {
    const uint8_t *v = b64_values();
    size_t m = unpadded(s, n);
    size_t i = have_avx2() ? b64_decode_avx2(s, m, out) : 0;
    out += i / 4 * 3;
    for (; i + 4 <= m; i += 4) {
        uint32_t a = v[(uint8_t)s[i]], b = v[(uint8_t)s[i + 1]], c = v[(uint8_t)s[i + 2]],
                 d = v[(uint8_t)s[i + 3]];
        if ((a | b | c | d) >= 64) break;
        uint32_t w = a << 18 | b << 12 | c << 6 | d;
        out[0] = (uint8_t)(w >> 16);
        out[1] = (uint8_t)(w >> 8);
        out[2] = (uint8_t)w;
        out += 3;
    }
    uint32_t w = 0;
    size_t k = 0;
    for (; i < m; i++, k++) {
        uint8_t x = v[(uint8_t)s[i]];
        if (x >= 64) return i + 1;
        w = w << 6 | x;
    }
    if (k == 2) *out = (uint8_t)(w >> 4);
    if (k == 3) {
        out[0] = (uint8_t)(w >> 10);
        out[1] = (uint8_t)(w >> 2);
    }
    return 0;
}

size_t api__b64_encoded_size(size_t n) { return (n + 2) / 3 * 4; }

#ifdef B64_AVX2
/* Encodes blocks of 24 bytes into 32 characters with AVX2 while 28 bytes
 * are left (each 128-bit half reads 16 bytes to use 12); returns the bytes
 * encoded. Each 32-bit lane gets bytes b1 b0 b2 b1 of a group of three, so
 * that its two 16-bit words hold the 6-bit values a b c and b c d at fixed
 * places; two multiplies move each to its own byte. A value becomes its
 * character by adding an offset chosen by its range. */
__attribute__((target("avx2"))) static size_t b64_encode_avx2(const uint8_t *in, size_t n,
                                                                char *out) {
    const __m256i spread = _mm256_setr_epi8(1, 0, 2, 1, 4, 3, 5, 4, 7, 6, 8, 7, 10, 9, 11, 10,
                                            1, 0, 2, 1, 4, 3, 5, 4, 7, 6, 8, 7, 10, 9, 11, 10);
    /* index 0: 26..51, 1-10: digits, 11: '+', 12: '/', 13: 0..25 */
    const __m256i offset = _mm256_setr_epi8(71, -4, -4, -4, -4, -4, -4, -4, -4, -4, -4, -19, -16,
                                            65, 0, 0, 71, -4, -4, -4, -4, -4, -4, -4, -4, -4, -4,
                                            -19, -16, 65, 0, 0);
    size_t i = 0;
    for (; i + 28 <= n; i += 24, out += 32) {
        __m128i lo = _mm_loadu_si128((const __m128i *)(in + i));
        __m128i hi = _mm_loadu_si128((const __m128i *)(in + i + 12));
        __m256i x = _mm256_shuffle_epi8(_mm256_inserti128_si256(_mm256_castsi128_si256(lo), hi, 1),
                                        spread);
        /* a and c down to bytes 0 and 2, b and d up to bytes 1 and 3 */
        __m256i ac = _mm256_mulhi_epu16(_mm256_and_si256(x, _mm256_set1_epi32(0x0fc0fc00)),
                                        _mm256_set1_epi32(0x04000040));
        __m256i bd = _mm256_mullo_epi16(_mm256_and_si256(x, _mm256_set1_epi32(0x003f03f0)),
                                        _mm256_set1_epi32(0x01000010));
        __m256i v = _mm256_or_si256(ac, bd);
        __m256i idx = _mm256_subs_epu8(v, _mm256_set1_epi8(51));
        __m256i small = _mm256_cmpgt_epi8(_mm256_set1_epi8(26), v);
        idx = _mm256_or_si256(idx, _mm256_and_si256(small, _mm256_set1_epi8(13)));
        v = _mm256_add_epi8(v, _mm256_shuffle_epi8(offset, idx));
        _mm256_storeu_si256((__m256i *)out, v);
    }
    return i;
}
#endif

size_t api__b64_encode(const uint8_t *in, size_t n, char *out) {
    size_t i = have_avx2() ? b64_encode_avx2(in, n, out) : 0;
    char *o = out + i / 3 * 4;
    for (; i + 3 <= n; i += 3) {
        uint32_t w = (uint32_t)in[i] << 16 | (uint32_t)in[i + 1] << 8 | in[i + 2];
        o[0] = B64[w >> 18];
        o[1] = B64[w >> 12 & 63];
        o[2] = B64[w >> 6 & 63];
        o[3] = B64[w & 63];
        o += 4;
    }
    if (n - i == 1) {
        uint32_t w = (uint32_t)in[i] << 16;
        o[0] = B64[w >> 18];
        o[1] = B64[w >> 12 & 63];
        o[2] = o[3] = '=';
        o += 4;
    } else if (n - i == 2) {
        uint32_t w = (uint32_t)in[i] << 16 | (uint32_t)in[i + 1] << 8;
        o[0] = B64[w >> 18];
        o[1] = B64[w >> 12 & 63];
        o[2] = B64[w >> 6 & 63];
        o[3] = '=';
        o += 4;
    }
    return (size_t)(o - out);
}

float api__f16_to_f32(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16, e = h >> 10 & 0x1fu, m = h & 0x3ffu, u;
    if (e == 0x1f) {
        u = sign | 0x7f800000u | m << 13; /* inf, NaN */
    } else if (e != 0) {
        u = sign | (e + 112) << 23 | m << 13;
    } else if (m == 0) {
        u = sign;
    } else { /* subnormal: normalise */
        int shift = 0;
        while (!(m & 0x400u)) {
            m <<= 1;
            shift++;
        }
        u = sign | (uint32_t)(113 - shift) << 23 | (m & 0x3ffu) << 13;
    }
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

uint16_t api__f32_to_f16(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    uint16_t sign = (uint16_t)(u >> 16 & 0x8000u);
    uint32_t a = u & 0x7fffffffu;
    if (a >= 0x7f800000u) /* inf, NaN (kept quiet) */
        return (uint16_t)(sign | 0x7c00u | (a > 0x7f800000u ? 0x200u | (a >> 13 & 0x3ffu) : 0));
    if (a >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u); /* rounds past 65504 */
    if (a < 0x38800000u) { /* below 2^-14: a subnormal half (or zero) */
        if (a < 0x33000000u) return sign; /* below half of the smallest subnormal */
        uint32_t m = (a & 0x7fffffu) | 0x800000u;
        int shift = 126 - (int)(a >> 23); /* 14 to 24 */
        uint32_t q = m >> shift, rest = m & ((1u << shift) - 1), half = 1u << (shift - 1);
        if (rest > half || (rest == half && (q & 1))) q++;
        return (uint16_t)(sign | q);
    }
    uint32_t q = a - 0x38000000u; /* rebias the exponent: 127 - 15 = 112 << 23 */
    uint32_t h = q >> 13, rest = q & 0x1fffu;
    if (rest > 0x1000u || (rest == 0x1000u && (h & 1))) h++; /* may carry into the exponent */
    return (uint16_t)(sign | h);
}
