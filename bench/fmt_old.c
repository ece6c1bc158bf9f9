/* fmt_old.c - the float printer api/fmt.c had before Schubfach (double
 * arithmetic with a strtof check near the ends), kept for bench_serialise and
 * fmt_all to compare with. */
#include "api/model/model.h"
#include "api/module/module.h"
#include "api/numbers/numbers.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const double P10[] = {
    1e-46, 1e-45, 1e-44, 1e-43, 1e-42, 1e-41, 1e-40, 1e-39, 1e-38, 1e-37,
    1e-36, 1e-35, 1e-34, 1e-33, 1e-32, 1e-31, 1e-30, 1e-29, 1e-28, 1e-27,
    1e-26, 1e-25, 1e-24, 1e-23, 1e-22, 1e-21, 1e-20, 1e-19, 1e-18, 1e-17,
    1e-16, 1e-15, 1e-14, 1e-13, 1e-12, 1e-11, 1e-10, 1e-9, 1e-8, 1e-7,
    1e-6, 1e-5, 1e-4, 1e-3, 1e-2, 1e-1, 1e0, 1e1, 1e2, 1e3,
    1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13,
    1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22, 1e23,
    1e24, 1e25, 1e26, 1e27, 1e28, 1e29, 1e30, 1e31, 1e32, 1e33,
    1e34, 1e35, 1e36, 1e37, 1e38, 1e39, 1e40, 1e41, 1e42, 1e43,
    1e44, 1e45, 1e46, 1e47, 1e48, 1e49, 1e50, 1e51, 1e52, 1e53,
    1e54, 1e55,
};
#define POW10(k) P10[(k) + 46]

/* x * 10^k, k in [-46, 55]: exact powers (|k| <= 22) divide rather than
 * multiply by an inexact reciprocal. */
static inline double scale10(double x, int k) { return k >= 0 ? x * POW10(k) : x / POW10(-k); }

/* "00" to "99", for writing two digits at a time. */
static const char DIGIT_PAIRS[201] =
    "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
    "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
    "8081828384858687888990919293949596979899";

/* The decimal digits of n into d, most significant first; returns their
 * count. The digits of a float32 fit in 32 bits (at most 9 significant). */
static int digits_of(char *d, uint64_t n) {
    static const uint64_t P10U[20] = {
        1ull, 10ull, 100ull, 1000ull, 10000ull, 100000ull, 1000000ull, 10000000ull,
        100000000ull, 1000000000ull, 10000000000ull, 100000000000ull, 1000000000000ull,
        10000000000000ull, 100000000000000ull, 1000000000000000ull, 10000000000000000ull,
        100000000000000000ull, 1000000000000000000ull, 10000000000000000000ull,
    };
    /* bits to digits: 1233/4096 is just above log10(2) */
    int bits = 64 - __builtin_clzll(n | 1);
    int nd = (bits * 1233 >> 12) + 1;
    if (nd < 20 && n >= P10U[nd]) nd++;
    if (n < P10U[nd - 1]) nd--;
    char *o = d + nd;
    if (n <= UINT32_MAX) {
        uint32_t m = (uint32_t)n;
        while (m >= 100) {
            memcpy(o -= 2, DIGIT_PAIRS + 2 * (m % 100), 2);
            m /= 100;
        }
        if (m >= 10) memcpy(o -= 2, DIGIT_PAIRS + 2 * m, 2);
        else *--o = (char)('0' + m);
        return nd;
    }
    while (n >= 100) {
        memcpy(o -= 2, DIGIT_PAIRS + 2 * (n % 100), 2);
        n /= 100;
    }
    if (n >= 10) memcpy(o -= 2, DIGIT_PAIRS + 2 * n, 2);
    else *--o = (char)('0' + n);
    return nd;
}

/* Writes n * 10^x (n > 0), sign first: plain notation for exponents -7..15,
 * else d.ddde-N (integers of 17 digits and more overflow int64 readers such
 * as jansson, which read a number without '.' or 'e' as an integer).
 * Returns the length. Copies are of fixed sizes (16 bytes), so out must have
 * API_FLOAT_SLACK bytes of room past the text. */
static int write_decimal(char *out, int neg, uint64_t n, int x) {
    while (n % 10 == 0 && n >= 10) {
        n /= 10;
        x++;
    }
    char d[40];
    int nd = digits_of(d, n);
    char *o = out;
    if (neg) *o++ = '-';
    int E = nd - 1 + x; /* exponent of the first digit */
    if (E >= 0 && E < 16) {
        if (nd > E + 1) { /* ddd.ddd (at most 9 digits: nd <= 16 here) */
            memcpy(o, d, 16);
            o[E + 1] = '.';
            memcpy(o + E + 2, d + E + 1, 16);
            o += nd + 1;
        } else { /* ddd000 */
            memcpy(o, d, 16);
            memset(o + nd, '0', 16);
            o += E + 1;
        }
    } else if (E < 0 && E >= -7) { /* 0.000ddd */
        memcpy(o, "0.0000000", 8);
        o += 1 - E;
        memcpy(o, d, 16);
        o += nd;
    } else {
        *o++ = d[0];
        if (nd > 1) {
            *o++ = '.';
            memcpy(o, d + 1, (size_t)nd - 1);
            o += nd - 1;
        }
        *o++ = 'e';
        if (E < 0) {
            *o++ = '-';
            E = -E;
        }
        if (E >= 10) *o++ = (char)('0' + E / 10);
        *o++ = (char)('0' + E % 10);
    }
    return (int)(o - out);
}

/* 1 if the text of n * 10^x reads back as v (the slow, exact check) */
static int reads_back(float v, uint64_t n, int x) {
    char s[API_FLOAT_MAX + API_FLOAT_SLACK];
    int len = write_decimal(s, v < 0, n, x);
    s[len] = '\0';
    float r = strtof(s, NULL);
    return memcmp(&r, &v, sizeof r) == 0;
}

/* 1 inside (lo, hi), 0 outside, -1 too close to an end to tell */
static inline int inside(double c, double lo, double hi) {
    double m = hi * 0x1p-46;
    if (c > lo + m && c < hi - m) return 1;
    if (c < lo - m || c > hi + m) return 0;
    return -1;
}

int bench_old_format_float(char *out, float v, int precision) {
    uint32_t u;
    memcpy(&u, &v, sizeof u);
    int neg = (int)(u >> 31);
    uint32_t a = u & 0x7fffffffu;
    if (a >= 0x7f800000u) return 0; /* NaN, inf */
    if (a == 0) {
        if (neg) {
            memcpy(out, "-0", 2);
            return 2;
        }
        out[0] = '0';
        return 1;
    }
    float av;
    memcpy(&av, &a, sizeof av);
    double vd = (double)av;

    /* decimal exponent: 10^e10 <= vd < 10^(e10+1) (exact compares: no float
     * lies within 2^-52 of a power of ten without being equal to it) */
    int e2;
    if (a >= 0x00800000u)
        e2 = (int)(a >> 23) - 126;
    else
        frexp(vd, &e2);
    int e10 = ((e2 - 1) * 78913) >> 18; /* about floor((e2 - 1) * log10(2)) */
    while (e10 < 38 && vd >= POW10(e10 + 1)) e10++;
    while (e10 > -46 && vd < POW10(e10)) e10--;

    if (precision >= 1 && precision <= 9) {
        int k = precision - 1 - e10;
        uint64_t n = (uint64_t)(scale10(vd, k) + 0.5);
        if (n == 0) n = 1; /* only with a wrong e10; keeps the output a number */
        return write_decimal(out, neg, n, -k);
    }

    /* the decimals that round to v lie in (lo, hi) */
    uint32_t up_bits = a + 1, down_bits = a - 1;
    float up, down;
    memcpy(&up, &up_bits, sizeof up);
    memcpy(&down, &down_bits, sizeof down);
    double lo = (vd + (double)down) / 2;
    double hi = a == 0x7f7fffffu ? vd + (vd - (double)down) / 2 : (vd + (double)up) / 2;

    /* Fast path: at 9 significant digits, the integers strictly inside the
     * scaled interval, [L, H], are exactly the 9-digit decimals that read back
     * as v, unless an end lies too close to an integer to tell. The shortest
     * decimals are the multiples of the largest 10^j in [L, H]; take the one
     * nearest to v. */
    {
        int k = 8 - e10;
        double s = scale10(vd, k), ls = scale10(lo, k), hs = scale10(hi, k);
        double m = hs * 0x1p-46;
        /* floor and ceil by conversion: both ends are positive */
        double fh = hs < 4e9 ? (double)(uint32_t)hs : 4e9;
        double cl = ls < 4e9 ? (double)(uint32_t)ls : 4e9;
        cl += cl < ls;
        if (cl - ls > m && hs - fh > m && cl <= fh && fh < 4e9) {
            uint32_t L = (uint32_t)cl, H = (uint32_t)fh, P = 1;
            /* j grows while a multiple of 10^(j+1) lies in [L, H]:
             * floor(H / 10^(j+1)) >= ceil(L / 10^(j+1)) */
            uint32_t hq = H, lq = L;
            int j = 0;
            while (j < 9 && hq / 10 >= (lq + 9) / 10) {
                hq /= 10;
                lq = (lq + 9) / 10;
                P *= 10;
                j++;
            }
            uint32_t c = (uint32_t)(s / P + 0.5) * P;
            if (c < L) c += P;
            if (c > H) c -= P;
            return write_decimal(out, neg, c / P, j - k);
        }
    }

    /* Slow path: p = 1, 2, ... digits, each candidate checked with margins,
     * and with strtof where the margins cannot tell. */
    for (int p = 1; p <= 9; p++) {
        int k = p - 1 - e10;
        double s = scale10(vd, k);
        double ls = scale10(lo, k), hs = scale10(hi, k);
        uint64_t n = (uint64_t)(s + 0.5);
        /* the nearest p-digit decimal, then its neighbour on the other side
         * (the interval is lopsided at powers of two) */
        uint64_t cand[2] = {n, (double)n <= s ? n + 1 : n - 1};
        for (int c = 0; c < 2; c++) {
            if (cand[c] == 0) continue;
            int in = inside((double)cand[c], ls, hs);
            if (in == 1 || (in == -1 && reads_back(v, cand[c], -k)))
                return write_decimal(out, neg, cand[c], -k);
        }
    }
    /* not reached (9 digits always round-trip); stay correct regardless */
    char s[64];
    int len = snprintf(s, sizeof s, "%.9g", (double)v);
    if (len <= 0 || len > API_FLOAT_MAX) return 0;
    memcpy(out, s, (size_t)len);
    return len;
}
