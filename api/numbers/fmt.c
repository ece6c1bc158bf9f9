/* fmt.c - the float printer: float32 to JSON number text, without printf.
 *
 * Default: the shortest decimal (fewest significant digits) that strtof reads
 * back as the same float, the nearest to it among those of that length (ties
 * to an even last digit), after Giulietti's Schubfach. A float is v = c 2^q.
 * The decimals that read back as v are those in the rounding interval
 * [c - 1/2, c + 1/2] 2^q (closed when c is even, as round-to-even then
 * chooses v; the lower half is 1/4 at a power of two). With
 * k = floor(log10 2^q) the interval is at least 10^k wide and less than
 * 10^(k+1), so it holds at most one multiple of 10^(k+1) — if it does, that
 * one is the shortest — and else one or two of the multiples of 10^k around
 * v, of which the nearest is taken. The test "is u 10^k in the interval"
 * needs 4v / 10^k and the bounds 4(v -+ half ulp) / 10^k to 32 fraction
 * bits: one 64 x 64-bit product of the scaled significand with 10^-k
 * rounded up to 64 bits gives the first, and the bounds are it -+ the half
 * interval (also scaled by 10^-k), added in 128 bits; 32 fraction bits are
 * more than the error of the table (under 2^-34 of a unit) needs. k, the
 * scale and 10^-k are looked up by the float's exponent (api/pow10_tables.h,
 * from api/numbers/gen-pow10.py). Every one of the 2^32 floats is checked
 * against the printer this replaced (bench/fmt_all.c, `make fmt-all`).
 *
 * precision 1..9: v rounded to that many significant digits, halves away
 * from zero: floor(2v / 10^k) from one such product, corrected by one where
 * the product's fraction bits are zero but 2v / 10^k is not an integer
 * (decided exactly from c, q and k).
 *
 * The digits are written eight at a time (SWAR: one 64-bit word, a byte per
 * digit), trailing zeros counted from the same word; where the text goes is
 * looked up by exponent and digit count. The loop is bound by the number of
 * integer operations per float, which is what the tables save.
 */
#include "api/numbers/numbers.h"
#include "api/numbers/pow10_tables.h"

#include <string.h>

/* ==== Arithmetic ========================================================== */

static inline uint64_t mul_hi64(uint64_t a, uint64_t b) {
    return (uint64_t)(((unsigned __int128)a * b) >> 64);
}

/* floor(q log10 2), floor(log10(3/4 2^q)), floor(e log2 10) for the ranges
 * used here (checked exactly by api/numbers/gen-pow10.py). */
static inline int flog10_pow2(int q) { return (int)(((int64_t)q * 661971961083) >> 41); }
static inline int flog10_3q_pow2(int q) {
    return (int)(((int64_t)q * 661971961083 - 274743187321) >> 41);
}
static inline int flog2_pow10(int e) { return (int)(((int64_t)e * 913124641741) >> 38); }

/* cond ? a : b as a conditional move: the cases alternate at random, and a
 * compiler turns ?: into branches that then mispredict */
static inline uint64_t pick(int cond, uint64_t a, uint64_t b) {
#if defined(__x86_64__) && defined(__GNUC__)
    __asm__("test %2, %2\n\tcmovne %1, %0" : "+r"(b) : "r"(a), "r"(cond) : "cc");
    return b;
#else
    return b ^ ((a ^ b) & (0 - (uint64_t)(cond != 0)));
#endif
}

/* hi 2^64 + lo */
static inline unsigned __int128 wide(uint64_t hi, uint64_t lo) {
    return (unsigned __int128)hi << 64 | lo;
}

/* f of the shortest decimal f 10^k in the rounding interval of v = c 2^q
 * (c > 0), the nearest to v among those; g is 10^-k rounded up to 64 bits
 * and h = q + floor(log2 10^-k) + 33 (33..36).
 *
 * 4v / 10^k and the bounds 4(v -+ half ulp) / 10^k are wanted with 32
 * fraction bits: the high words of g 4c 2^h, g (4c - 2) 2^h and
 * g (4c + 2) 2^h, or g (4c - 1) 2^h for the lower bound at a power of two.
 * One product gives the first; the bounds are it - down and it + up (up =
 * g 2 2^h, down = up or up / 2), added in 128 bits: the same high words as
 * three separate products. Let X be such a word and u an integer: u 10^k is
 * at or above the lower bound when X <= u 2^34 (the interval is closed, c
 * even) or X < u 2^34 (open), i.e. X + open <= u 2^34; at or below the
 * upper bound when u 2^34 + open <= X. */
static inline uint32_t shortest_of(uint32_t c, int h, uint64_t g, unsigned __int128 up,
                                   unsigned __int128 down) {
    uint64_t open = c & 1;
    unsigned __int128 p = (unsigned __int128)g * ((uint64_t)c << (h + 2));
    uint64_t x = (uint64_t)(p >> 64);
    uint64_t xl = (uint64_t)((p - down) >> 64), xr = (uint64_t)((p + up) >> 64);
    /* the multiples of 10^k in the interval: umin 10^k .. umax 10^k */
    uint64_t umin = (xl + open + ((UINT64_C(1) << 34) - 1)) >> 34, umax = (xr - open) >> 34;
    /* written to select without branches (the cases alternate at random) */
    uint64_t s = x >> 34; /* floor(v / 10^k) */
    /* the nearest multiple, an even one on a tie; if it is out of the
     * interval, the other one (s or s + 1) is in */
    uint64_t r = (x + ((UINT64_C(1) << 33) - 1) + (s & 1)) >> 34;
    r = pick(r < umin, umin, r);
    r = pick(r > umax, umax, r);
    /* a multiple of 10^(k+1) in the interval (there is at most one) is
     * shorter, unless it is 10 and s 9 (as many digits) */
    uint64_t w = (uint32_t)umax / 10 * 10; /* umax < 2^28 */
    return (uint32_t)pick((w >= umin) & (s >= 10), w, r);
}

/* A power of two (c = 2^23, b > 1), k = floor(log10(3/4 2^q)): the lower
 * half of the interval is half as wide. Apart from the loop, so that the
 * common case keeps its registers. */
__attribute__((noinline)) static uint32_t shortest_pow2(uint32_t c, int q, int k) {
    int h = q + flog2_pow10(-k) + 33;
    uint64_t g = api__pow10_g[-k - API_G_MIN];
    unsigned __int128 up = (unsigned __int128)g << (h + 1);
    return shortest_of(c, h, g, up, up >> 1);
}

/* The shortest decimal f 10^*e10 in the rounding interval of v = c 2^q,
 * b the biased exponent (c > 0); k, h, g and the half interval g 2 2^h are
 * looked up by b. */
static inline uint32_t shortest(uint32_t c, int b, int *e10) {
    /* (loaded before the test: measured faster than after it) */
    unsigned __int128 up = wide(api__fmt_d[2 * b], api__fmt_d[2 * b + 1]);
    int h = api__fmt_h[b];
    uint64_t g = api__fmt_g[b];
    *e10 = api__fmt_k[b];
    if (__builtin_expect(c == (1u << 23) && b > 1, 0)) {
        *e10 = flog10_3q_pow2(b - 150);
        return shortest_pow2(c, b - 150, *e10);
    }
    return shortest_of(c, h, g, up, up);
}

/* Is 2 c 2^q 10^-k an integer? */
static int twice_is_integer(uint32_t c, int q, int k) {
    static const uint32_t P5[11] = {1, 5, 25, 125, 625, 3125, 15625, 78125, 390625, 1953125, 9765625};
    int tz = __builtin_ctz(c);
    if (k <= 0) return q + 1 - k + tz >= 0;
    return k <= 10 && c % P5[k] == 0 && q + 1 - k + tz >= 0;
}

/* floor(2 c 2^q 10^-k) for 2 c 2^q 10^-k < 2^32, exactly. */
static inline uint64_t twice_floor(uint32_t c, int q, int k) {
    uint64_t c2 = (uint64_t)c << 1;
    int s = __builtin_clzll(c2) - 1; /* c2 << s in [2^62, 2^63) */
    uint64_t x = mul_hi64(api__pow10_g[-k - API_G_MIN], c2 << s);
    int f = s - q - api__pow10_log2[-k - API_G_MIN] - 1; /* fraction bits of x */
    uint64_t y = x >> f;
    /* x is floor(2^f y') or one more: when that carried into the integer
     * part, the fraction bits are all zero although y' is not an integer */
    if ((x & ((UINT64_C(1) << f) - 1)) == 0 && !twice_is_integer(c, q, k)) y--;
    return y;
}

/* v = c 2^q (c > 0; a: its bits, b: its biased exponent) to p significant
 * digits, halves up: F 10^(*E - 8), F nine digits (the first not 0) and *E
 * the exponent of the first digit; scale = 10^(9 - p). */
static inline uint32_t rounded(uint32_t a, uint32_t c, int b, int q, int p, uint32_t scale,
                               int *E) {
    int e;
    if (__builtin_expect(b != 0, 1)) { /* looked up: 10^e <= v < 10^(e+2) */
        e = api__fmt_e[b];
        e += a >= api__fmt_above[b];
    } else {
        int b2 = q + 31 - __builtin_clz(c); /* 2^b2 <= v < 2^(b2+1) */
        e = flog10_pow2(b2);                /* 10^e <= v < 10^(e+2) */
        e += a >= api__float_pow10[e + 1 + 45];
    }
    /* 10^(p-1) <= f <= 10^p: 10^p when the rounding carries */
    uint32_t f = (uint32_t)((twice_floor(c, q, e - p + 1) + 1) >> 1) * scale;
    if (f >= 1000000000u) {
        f = 100000000u;
        e++;
    }
    *E = e;
    return f;
}

/* ==== Text ================================================================ */

/* The eight decimal digits of n < 10^8, one per byte (0..9), the first in the
 * lowest byte (memory order on little-endian machines). */
static inline uint64_t digits8(uint32_t n) {
    /* each step splits every lane x into quotient q and remainder r by m,
     * as q + r 2^w: that is x 2^w - q (m 2^w - 1), fewer operations */
    uint64_t q = n / 10000;
    uint64_t x = ((uint64_t)n << 32) - q * ((UINT64_C(10000) << 32) - 1);
    q = ((x * 5243) >> 19) & 0x0000007f0000007full; /* /100 per 32-bit lane */
    x = (x << 16) - q * ((100 << 16) - 1);
    q = ((x * 103) >> 10) & 0x000f000f000f000full; /* /10 per 16-bit lane */
    return (x << 8) - q * ((10 << 8) - 1);
}

static inline void store64(char *p, uint64_t v) { memcpy(p, &v, 8); }

#define ASCII_ZEROS 0x3030303030303030ull

/* f in [2^i, 2^(i+1)) (i < 30) has n digits, or n + 1 from 10^n on; scale
 * is 10^(9 - n) and 10^(8 - n), which make it nine digits. */
struct digits {
    uint32_t from, scale[2];
    int n;
};
#define P10(n)                                                                                \
    ((n) == 0 ? 1u : (n) == 1 ? 10u : (n) == 2 ? 100u : (n) == 3 ? 1000u : (n) == 4 ? 10000u  \
     : (n) == 5 ? 100000u : (n) == 6 ? 1000000u : (n) == 7 ? 10000000u                       \
     : (n) == 8 ? 100000000u : (n) == 9 ? 1000000000u : 0u)
#define DIGITS_N(i) ((((i) * 1233) >> 12) + 1) /* digits of 2^i: floor(i log10 2) + 1 */
#define DIGITS(i) { P10(DIGITS_N(i)), {P10(9 - DIGITS_N(i)), P10(8 - DIGITS_N(i))}, DIGITS_N(i) }
static const struct digits DIGITS[30] = {
    DIGITS(0),  DIGITS(1),  DIGITS(2),  DIGITS(3),  DIGITS(4),  DIGITS(5),  DIGITS(6),  DIGITS(7),
    DIGITS(8),  DIGITS(9),  DIGITS(10), DIGITS(11), DIGITS(12), DIGITS(13), DIGITS(14), DIGITS(15),
    DIGITS(16), DIGITS(17), DIGITS(18), DIGITS(19), DIGITS(20), DIGITS(21), DIGITS(22), DIGITS(23),
    DIGITS(24), DIGITS(25), DIGITS(26), DIGITS(27), DIGITS(28), DIGITS(29)};

/* Where the plain forms put things, for the exponent E (-7..15) of the
 * first digit and sig significant digits: the first digit at "at" and the
 * other eight after it; the point at "pt", then the digits after the point
 * (the eight shifted by "shift" bits); len bytes. 0.000ddd (E < 0): the first
 * digit after -E zeros, no point of its own (pt = len, past the text).
 * ddd.ddd: the point after E + 1 digits, past the text for an integer (at
 * most 8 digits after the point: E <= 7 then). */
struct layout {
    uint8_t at, pt, len, shift;
};
#define LAYOUT_LEN(E, S) ((E) < 0 ? 1 - (E) + (S) : (S) > (E) + 1 ? (S) + 1 : (E) + 1)
#define LAYOUT(E, S)                                                                         \
    { (E) < 0 ? 1 - (E) : 0, (E) < 0 ? LAYOUT_LEN(E, S) : (E) + 1, LAYOUT_LEN(E, S),          \
      (8 * (E)) & 63 }
#define LAYOUT_ROW(E)                                                                        \
    { LAYOUT(E, 1), LAYOUT(E, 2), LAYOUT(E, 3), LAYOUT(E, 4), LAYOUT(E, 5),                 \
      LAYOUT(E, 6), LAYOUT(E, 7), LAYOUT(E, 8), LAYOUT(E, 9) }
static const struct layout LAYOUT[23][9] = {
    LAYOUT_ROW(-7), LAYOUT_ROW(-6), LAYOUT_ROW(-5), LAYOUT_ROW(-4), LAYOUT_ROW(-3), LAYOUT_ROW(-2),
    LAYOUT_ROW(-1), LAYOUT_ROW(0),  LAYOUT_ROW(1),  LAYOUT_ROW(2),  LAYOUT_ROW(3),  LAYOUT_ROW(4),
    LAYOUT_ROW(5),  LAYOUT_ROW(6),  LAYOUT_ROW(7),  LAYOUT_ROW(8),  LAYOUT_ROW(9),  LAYOUT_ROW(10),
    LAYOUT_ROW(11), LAYOUT_ROW(12), LAYOUT_ROW(13), LAYOUT_ROW(14), LAYOUT_ROW(15)};

/* Writes f 10^(E - 8) (f nine digits, the first not 0: E is the exponent of
 * the first), sign first: plain notation for exponents -7..15 of the first
 * digit, else d.ddde-N (integers of 17 digits and more overflow int64
 * readers such as jansson, which read a number without '.' or 'e' as an
 * integer). Trailing zeros are dropped. Returns the length; may write up to
 * 28 bytes (within API_FLOAT_MAX + API_FLOAT_SLACK).
 *
 * The plain forms are written without branches (0.0ddd and d.ddd alternate
 * at random in a tensor): the first digit in hi and the other eight in one
 * word, and fixed stores at looked-up offsets lay out the text; what one
 * form does not need lands past its end. */
static inline int write_nine(char *out, int neg, uint32_t f, int E) {
    uint32_t hi = f / 100000000u;
    uint64_t d = digits8(f - hi * 100000000u);
    int sig = d ? 9 - (__builtin_clzll(d) >> 3) : 1; /* without trailing zeros */
    d |= ASCII_ZEROS;
    char first = (char)('0' + hi);
    char *o = out;
    *o = '-';
    o += neg;
    if (__builtin_expect(E < -7 || E > 15, 0)) { /* d.ddde-N */
        o[0] = first;
        o[1] = '.';
        store64(o + 2, d);
        o += sig > 1 ? sig + 1 : 1;
        *o++ = 'e';
        *o = '-';
        o += E < 0;
        E = E < 0 ? -E : E;
        *o = (char)('0' + E / 10);
        o += E >= 10;
        *o++ = (char)('0' + E % 10);
        return (int)(o - out);
    }
    /* the offsets looked up rather than computed (fewer instructions) */
    const struct layout *l = &LAYOUT[E + 7][sig - 1];
    store64(o, 0x3030303030302e30ull); /* "0.000000" */
    store64(o + 8, ASCII_ZEROS);       /* an integer's zeros */
    o[l->at] = first;
    store64(o + l->at + 1, d);
    o[l->pt] = '.';
    store64(o + l->pt + 1, d >> l->shift);
    return (int)(o - out) + l->len;
}

/* The decimal of a finite nonzero |v| (bits a) as for write_nine: f, *E.
 * scale: 10^(9 - precision), 0 for the shortest. */
static inline uint32_t nine_of(uint32_t a, int precision, uint32_t scale, int *E) {
    uint32_t c = a & 0x7fffffu;
    int b = (int)(a >> 23), q = -149;
    if (b) {
        c |= 0x800000u;
        q = b - 150;
    }
    if (scale) return rounded(a, c, b, q, precision, scale, E);
    int e10;
    uint32_t f = shortest(c, b, &e10); /* below 2^28 */
    const struct digits *t = &DIGITS[31 - __builtin_clz(f)];
    int big = f >= t->from;
    *E = t->n + big - 1 + e10;
    return f * t->scale[big];
}

/* 10^(9 - precision) for precision 1..9, else 0 (the shortest) */
static uint32_t scale_of(int precision) {
    static const uint32_t S[9] = {100000000, 10000000, 1000000, 100000, 10000, 1000, 100, 10, 1};
    return precision >= 1 && precision <= 9 ? S[precision - 1] : 0;
}

static inline int write_zero(char *out, int neg) {
    memcpy(out, "-0", 2);
    out[0] = neg ? '-' : '0';
    return 1 + neg;
}

int api__format_float(char *out, float v, int precision) {
    uint32_t u;
    memcpy(&u, &v, sizeof u);
    int neg = (int)(u >> 31);
    uint32_t a = u & 0x7fffffffu;
    if (a >= 0x7f800000u) return 0; /* NaN, inf */
    if (a == 0) return write_zero(out, neg);
    int E;
    uint32_t f = nine_of(a, precision, scale_of(precision), &E);
    return write_nine(out, neg, f, E);
}

size_t api__format_row(char *out, const float *x, size_t n, int precision, size_t *done) {
    char *o = out;
    size_t i = 0;
    uint32_t scale = scale_of(precision);
    for (; i < n; i++) {
        uint32_t u;
        memcpy(&u, &x[i], sizeof u);
        uint32_t a = u & 0x7fffffffu;
        if (a >= 0x7f800000u) break;
        *o = ',';
        o += i > 0;
        int neg = (int)(u >> 31), E;
        if (a == 0) {
            o += write_zero(o, neg);
            continue;
        }
        uint32_t f = nine_of(a, precision, scale, &E);
        o += write_nine(o, neg, f, E);
    }
    *done = i;
    return (size_t)(o - out);
}
