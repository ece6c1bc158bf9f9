/* text.c - UTF-8 and the characters JavaScript's \s and trim() take as
 * whitespace (@huggingface/jinja strips and splits with them). Every string
 * here is valid UTF-8: template.c checks the source, jansson the context. */
#include "api/chat/jinja.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

size_t api__jinja_utf8_decode(const char *str, size_t n, uint32_t *cp) {
    const unsigned char *s = (const unsigned char *)str;
    if (n == 0) return 0;
    if (s[0] < 0x80) {
        *cp = s[0];
        return 1;
    }
    size_t len = s[0] >= 0xF0 ? 4 : s[0] >= 0xE0 ? 3 : s[0] >= 0xC2 ? 2 : 0;
    if (len == 0 || len > n || s[0] > 0xF4) return 0;
    uint32_t c = s[0] & (0x7F >> len);
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xC0) != 0x80) return 0;
        c = c << 6 | (s[i] & 0x3F);
    }
    static const uint32_t least[5] = {0, 0, 0x80, 0x800, 0x10000};
    if (c < least[len] || c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF)) return 0;
    *cp = c;
    return len;
}

int api__jinja_utf8_valid(const char *s, size_t n) {
    uint32_t cp;
    for (size_t i = 0, k; i < n; i += k)
        if ((k = api__jinja_utf8_decode(s + i, n - i, &cp)) == 0) return 0;
    return 1;
}

/* ECMAScript's WhiteSpace and LineTerminator: what \s, trim() and the
 * lexer's whitespace skipping match. */
int api__jinja_is_space(uint32_t c) {
    return (c >= 0x09 && c <= 0x0D) || c == 0x20 || c == 0xA0 || c == 0x1680 ||
           (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F ||
           c == 0x205F || c == 0x3000 || c == 0xFEFF;
}

/* The bytes of the whitespace character at s, or 0. */
size_t api__jinja_space_at(const char *s, size_t n) {
    uint32_t cp;
    size_t k = api__jinja_utf8_decode(s, n, &cp);
    return k && api__jinja_is_space(cp) ? k : 0;
}

/* The bytes of the whitespace character that ends s[0..n), or 0. */
static size_t space_before(const char *s, size_t n) {
    size_t i = n;
    while (i > 0 && n - i < 4 && ((unsigned char)s[i - 1] & 0xC0) == 0x80) i--;
    if (i == 0) return 0;
    size_t k = api__jinja_space_at(s + i - 1, n - i + 1);
    return k == n - i + 1 ? k : 0;
}

/* Drops JavaScript whitespace from the start (left) and/or end (right). */
void api__jinja_trim(const char **p, size_t *n, int left, int right) {
    size_t k;
    while (left && *n > 0 && (k = api__jinja_space_at(*p, *n)) > 0) {
        *p += k;
        *n -= k;
    }
    while (right && *n > 0 && (k = space_before(*p, *n)) > 0) *n -= k;
}

/* Code points in s[0..n). */
size_t api__jinja_utf8_count(const char *s, size_t n) {
    size_t c = 0;
    for (size_t i = 0; i < n; i++)
        if (((unsigned char)s[i] & 0xC0) != 0x80) c++;
    return c;
}

/* ASCII letters, digits and '_': JavaScript's \w without the u flag. */
int api__jinja_is_word(int c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

/* ==== Numbers in strings, as JavaScript reads them ==== */

static size_t run_of_digits(const char *s, size_t n, size_t i) {
    size_t j = i;
    while (j < n && s[j] >= '0' && s[j] <= '9') j++;
    return j - i;
}

/* The length of the decimal literal at s[i..n) ([+-] digits [. digits]
 * [e [+-] digits], or Infinity), 0 if none. */
static size_t decimal_at(const char *s, size_t n, size_t i) {
    size_t j = i;
    if (j < n && (s[j] == '+' || s[j] == '-')) j++;
    if (n - j >= 8 && memcmp(s + j, "Infinity", 8) == 0) return j + 8 - i;
    size_t whole = run_of_digits(s, n, j), frac = 0;
    j += whole;
    if (j < n && s[j] == '.') {
        frac = run_of_digits(s, n, j + 1);
        if (whole || frac) j += 1 + frac;
    }
    if (whole == 0 && frac == 0) return 0;
    if (j < n && (s[j] == 'e' || s[j] == 'E')) {
        size_t k = j + 1;
        if (k < n && (s[k] == '+' || s[k] == '-')) k++;
        size_t e = run_of_digits(s, n, k);
        if (e) j = k + e;
    }
    return j - i;
}

/* strtod of the decimal literal s[0..n) without copying all of it: a sign,
 * the first 40 significant digits and the exponent that the rest makes. */
static double to_double(const char *s, size_t n) {
    char buf[80];
    size_t o = 0, i = 0, kept = 0;
    long exp10 = 0;
    int seen_point = 0, seen_digit = 0;
    if (i < n && (s[i] == '+' || s[i] == '-')) buf[o++] = s[i++];
    for (; i < n && ((s[i] >= '0' && s[i] <= '9') || s[i] == '.'); i++) {
        if (s[i] == '.') {
            seen_point = 1;
            continue;
        }
        if (s[i] == '0' && !seen_digit) { /* leading zeros: only the point's place counts */
            exp10 -= seen_point;
            continue;
        }
        seen_digit = 1;
        if (kept < 40) buf[o++] = s[i], kept++, exp10 -= seen_point;
        else exp10 += !seen_point;
    }
    if (i < n && (s[i] == 'e' || s[i] == 'E')) {
        int neg = ++i < n && s[i] == '-';
        i += i < n && (s[i] == '-' || s[i] == '+');
        long e = 0;
        for (; i < n && s[i] >= '0' && s[i] <= '9'; i++) e = e < 100000 ? e * 10 + (s[i] - '0') : e;
        exp10 += neg ? -e : e;
    }
    if (kept == 0) buf[o++] = '0';
    snprintf(buf + o, sizeof buf - o, "e%ld", exp10);
    return strtod(buf, NULL);
}

/* Number(s), parseInt(s, 10) or parseFloat(s) by mode (0, 1, 2); NaN when
 * JavaScript gives NaN. */
double api__jinja_js_number(const char *s, size_t n, int mode) {
    const char *p = s;
    size_t len = n;
    api__jinja_trim(&p, &len, 1, mode == 0);
    if (mode == 1) {
        size_t sign = len && (p[0] == '+' || p[0] == '-');
        size_t d = run_of_digits(p, len, sign);
        return d ? to_double(p, sign + d) : NAN;
    }
    if (mode == 0 && len == 0) return 0;
    if (mode == 0 && len > 2 && p[0] == '0' && strchr("xXoObB", p[1]) && p[1]) {
        int base = p[1] == 'x' || p[1] == 'X' ? 16 : p[1] == 'o' || p[1] == 'O' ? 8 : 2;
        double v = 0;
        for (size_t i = 2; i < len; i++) {
            int d = p[i] >= '0' && p[i] <= '9' ? p[i] - '0' : p[i] >= 'a' && p[i] <= 'f' ? p[i] - 'a' + 10
                  : p[i] >= 'A' && p[i] <= 'F' ? p[i] - 'A' + 10 : 99;
            if (d >= base) return NAN;
            v = v * base + d;
        }
        return v;
    }
    size_t k = decimal_at(p, len, 0);
    if (k == 0 || (mode == 0 && k != len)) return NAN;
    size_t sign = p[0] == '+' || p[0] == '-';
    if (k - sign == 8 && p[sign] == 'I') return p[0] == '-' ? -INFINITY : INFINITY;
    return to_double(p, k);
}
