/* numscan.c - tensor arrays of a request body into floats, see numscan.h. */
#include "api/numbers/numbers.h"
#include "api/numbers/numbers.h"
#include "api/numbers/pow10_tables.h"

#include <errno.h>
#include <float.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ==== One number ========================================================== */

static int is_digit(char c) { return c >= '0' && c <= '9'; }

/* Exact powers of ten as doubles (10^22 is the largest). */
static const double pow10_exact[23] = {
    1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,  1e8,  1e9,  1e10, 1e11,
    1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
};

static const uint64_t pow10_u64[9] = {1, 10, 100, 1000, 10000, 100000, 1000000, 10000000,
                                      100000000};

/* strtod on a copy: the body is not NUL-terminated. */
static size_t slow_number(const char *p, size_t n, double *out) {
    char buf[64];
    if (n >= sizeof buf) return 0;
    memcpy(buf, p, n);
    buf[n] = '\0';
    errno = 0;
    char *stop;
    double d = strtod(buf, &stop);
    if ((size_t)(stop - buf) != n) return 0;
    if (errno == ERANGE && (d > DBL_MAX || d < -DBL_MAX)) return 0; /* jansson: overflow */
    *out = d;
    return n;
}

/* Eight characters as one little-endian word (the first in the low byte). */
static inline uint64_t load8(const char *p) {
    uint64_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

/* How many of the eight characters of w, from the first, are digits. */
static inline int digit_run(uint64_t w) {
    uint64_t x = w ^ 0x3030303030303030ull; /* digits become 0..9 */
    /* bit 7 of a byte is set where x >= 10 (a carry out of a non-digit can
     * only reach the later bytes) */
    uint64_t non = ((x + 0x7676767676767676ull) | x) & 0x8080808080808080ull;
    return non ? __builtin_ctzll(non) >> 3 : 8;
}

/* The value of the n (1..8) digits that start w. */
static inline uint64_t digits_value(uint64_t w, int n) {
    uint64_t x = (w ^ 0x3030303030303030ull) << (8 * (8 - n)); /* leading zero bytes */
    x = x * 10 + (x >> 8); /* byte pairs */
    x = ((x & 0x000000ff000000ffull) * (100 + (1000000ull << 32)) +
         ((x >> 16) & 0x000000ff000000ffull) * (1 + (10000ull << 32))) >> 32;
    return x;
}

/* Eisel and Lemire's algorithm (Lemire, "Number parsing at a gigabyte per
 * second", 2021): w 10^q (w > 0, q in the table's range) to the nearest
 * double, from the 128-bit 5^q of api/pow10_tables.h. Returns 0 when the
 * product cannot decide (left to strtod). The range keeps every result a
 * normal double. */
static int eisel_lemire(uint64_t w, int q, double *out) {
    int lz = __builtin_clzll(w);
    w <<= lz;
    const uint64_t *t = api__pow5_128 + 2 * (q - API_P5_MIN);
    unsigned __int128 p = (unsigned __int128)w * t[0];
    uint64_t hi = (uint64_t)(p >> 64), lo = (uint64_t)p;
    if ((hi & 0x1ff) == 0x1ff) { /* the 54 bits may still change: the lower half */
        uint64_t p2 = (uint64_t)(((unsigned __int128)w * t[1]) >> 64);
        lo += p2;
        hi += p2 > lo;
        if ((hi & 0x1ff) == 0x1ff && lo == UINT64_MAX) return 0;
    }
    int upper = (int)(hi >> 63);
    uint64_t mant = hi >> (upper + 9);
    int power2 = ((217706 * q) >> 16) + 63 + upper - lz + 1023;
    /* exactly halfway between two doubles (only 5^q exact in 128 bits can
     * be): round to even */
    if (lo <= 1 && q >= -4 && q <= 23 && (mant & 3) == 1 && (mant << (upper + 9)) == hi)
        mant &= ~(uint64_t)1;
    mant += mant & 1;
    mant >>= 1;
    if (mant >= (UINT64_C(2) << 52)) {
        mant = UINT64_C(1) << 52;
        power2++;
    }
    if (power2 <= 0 || power2 >= 0x7ff) return 0;
    uint64_t bits = (mant & ~(UINT64_C(1) << 52)) | (uint64_t)power2 << 52;
    memcpy(out, &bits, sizeof bits);
    return 1;
}

/* The significant digits of a number as they are read: up to 19 in m;
 * dropped digits raise the exponent (or, after the point, are only checked
 * for being zero). */
typedef struct {
    uint64_t m;
    int digits, exp10, inexact;
} mantissa;

/* Appends the digit run of n digits starting with word w (fraction: each
 * digit taken lowers the exponent). */
static inline void take_run(mantissa *a, uint64_t w, int n, int frac) {
    if (a->digits + n <= 19) {
        a->m = a->m * pow10_u64[n] + digits_value(w, n);
        a->digits += n;
        if (frac) a->exp10 -= n;
        return;
    }
    for (int i = 0; i < n; i++) {
        char ch = (char)(w >> (8 * i));
        if (a->digits < 19) {
            a->m = a->m * 10 + (uint64_t)(ch - '0');
            a->digits++;
            if (frac) a->exp10--;
        } else {
            if (!frac) a->exp10++;
            a->inexact |= ch != '0';
        }
    }
}

/* Reads the digits at s into a, eight characters at a time while eight
 * remain; returns where they end. */
static inline const char *take_digits(mantissa *a, const char *s, const char *end, int frac) {
    for (;;) {
        if (end - s >= 8) {
            uint64_t w = load8(s);
            int n = digit_run(w);
            if (n == 0) return s;
            take_run(a, w, n, frac);
            s += n;
            if (n < 8) return s;
        } else {
            if (s == end || !is_digit(*s)) return s;
            take_run(a, (uint64_t)(unsigned char)*s, 1, frac);
            s++;
        }
    }
}

/* The exponent part "e-12" at s (past the 'e') into a; NULL when no digit
 * follows. */
static inline const char *take_exponent(mantissa *a, const char *s, const char *end) {
    int eneg = 0;
    if (s < end && (*s == '+' || *s == '-')) eneg = *s++ == '-';
    if (s == end || !is_digit(*s)) return NULL;
    int e = 0;
    for (; s < end && is_digit(*s); s++)
        if (e < 100000) e = e * 10 + (*s - '0');
    a->exp10 += eneg ? -e : e;
    return s;
}

/* The double of a non-zero real: Clinger's fast path (both operands exact,
 * so one IEEE operation rounds correctly), else Eisel-Lemire, else strtod on
 * the text p[0..n). */
static inline size_t real_value(const mantissa *a, int neg, const char *p, size_t n, double *out) {
    double d;
    if (!a->inexact && a->m <= (UINT64_C(1) << 53) && a->exp10 >= -22 && a->exp10 <= 22) {
        d = (double)a->m;
        d = a->exp10 < 0 ? d / pow10_exact[-a->exp10] : d * pow10_exact[a->exp10];
    } else if (a->exp10 >= API_P5_MIN && a->exp10 <= API_P5_MAX && eisel_lemire(a->m, a->exp10, &d)) {
        /* with digits dropped the value lies between m and m + 1 units: both
         * ends must round to the same double */
        double d1;
        if (a->inexact && (!eisel_lemire(a->m + 1, a->exp10, &d1) || d1 != d))
            return slow_number(p, n, out);
    } else {
        return slow_number(p, n, out);
    }
    *out = neg ? -d : d;
    return n;
}

static inline size_t scan_number(const char *p, const char *end, double *out) {
    const char *s = p;
    int neg = s < end && *s == '-', is_real = 0;
    s += neg;
    if (s == end || !is_digit(*s)) return 0;
    mantissa a = {0};
    if (*s == '0') {
        s++;
        if (s < end && is_digit(*s)) return 0; /* leading zero: invalid JSON */
    } else {
        s = take_digits(&a, s, end, 0);
    }
    if (s < end && *s == '.') {
        is_real = 1;
        s++;
        if (s == end || !is_digit(*s)) return 0;
        if (a.m == 0) /* leading zeros of 0.000123 are not significant */
            for (; s < end && *s == '0'; s++) a.exp10--;
        s = take_digits(&a, s, end, 1);
    }
    if (s < end && (*s == 'e' || *s == 'E')) {
        is_real = 1;
        if ((s = take_exponent(&a, s + 1, end)) == NULL) return 0;
    }
    size_t n = (size_t)(s - p);
    if (n > 63) return 0; /* as strtod on a copy would */
    if (!is_real) {
        /* jansson keeps integers as int64 and refuses larger ones; Python's
         * json then gives an int, which torch converts like its double. */
        if (a.digits + a.exp10 > 18) return 0;
        *out = a.m == 0 ? 0.0 : neg ? -(double)a.m : (double)a.m; /* "-0" is the integer 0 */
        return n;
    }
    if (a.m == 0) {
        *out = neg ? -0.0 : 0.0;
        return n;
    }
    return real_value(&a, neg, p, n, out);
}

size_t api__scan_number(const char *p, const char *end, double *out) {
    return scan_number(p, end, out);
}

/* ==== Arrays ============================================================== */

static int is_space(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

static const char *skip_space(const char *p, const char *end) {
    while (p < end && is_space(*p)) p++;
    return p;
}

/* The floats of the array being read. */
typedef struct {
    float *data;
    size_t count, cap, budget;
    int rank;
    int shape[API_MAX_RANK]; /* 0 until the first array of that axis closes */
} reader;

static int push(reader *r, float v) {
    if (r->count == r->cap) {
        if (r->count >= r->budget) return -1;
        size_t cap = r->cap ? r->cap * 2 : 256;
        if (cap > r->budget) cap = r->budget;
        float *d = realloc(r->data, cap * sizeof *d);
        if (d == NULL) return -2;
        r->data = d;
        r->cap = cap;
    }
    r->data[r->count++] = v;
    return 0;
}

/* Reads the array at *pp (at '[') on axis `axis`. 0 and *pp past its ']',
 * -1 when it is not a rectangular array of numbers, -2 out of memory. */
static int read_axis(reader *r, const char **pp, const char *end, int axis) {
    if (axis >= API_MAX_RANK) return -1; /* never: rank is at most that */
    const char *p = skip_space(*pp + 1, end);
    int n = 0;
    if (p < end && *p == ']') return -1; /* empty axes are not allowed */
    for (;;) {
        if (axis + 1 < r->rank) {
            if (p == end || *p != '[') return -1;
            int rc = read_axis(r, &p, end, axis + 1);
            if (rc) return rc;
        } else {
            double d;
            size_t len = p < end ? api__scan_number(p, end, &d) : 0;
            if (len == 0 || !API_FITS_FLOAT32(d)) return -1;
            int rc = push(r, (float)d);
            if (rc) return rc;
            p += len;
        }
        if (++n == INT32_MAX) return -1;
        p = skip_space(p, end);
        if (p == end) return -1;
        if (*p == ']') break;
        if (*p != ',') return -1;
        p = skip_space(p + 1, end);
    }
    if (r->shape[axis] == 0) r->shape[axis] = n;
    else if (r->shape[axis] != n) return -1;
    *pp = p + 1;
    return 0;
}

/* The rank of the tensor at p (at '['): the run of '[' it opens with; -1
 * past API_MAX_RANK. */
static int leading_rank(const char *p, const char *end) {
    int rank = 0;
    while (p < end && *p == '[') {
        if (++rank > API_MAX_RANK) return -1;
        p = skip_space(p + 1, end);
    }
    return rank;
}

/* Reads the whole tensor at p (at '['). */
static int read_tensor(reader *r, const char **pp, const char *end) {
    r->rank = leading_rank(*pp, end);
    if (r->rank < 0) return -1;
    memset(r->shape, 0, sizeof r->shape);
    r->count = 0;
    return read_axis(r, pp, end, 0);
}

/* ==== A large tensor on several threads ===================================== */

/* Below this much text a tensor is read on the calling thread. */
#define PAR_MIN_BYTES ((size_t)256 * 1024)
#define GROUPS_PER_THREAD 4

/* Where the rows of the tensor at p (at its first '[') are: the '[' of each
 * element of axis 0, and the ']' that closes the tensor. Only brackets,
 * quotes and braces stop the scan, 16 bytes at a time; a quote or a brace
 * (not a numeric tensor) or an unclosed tensor gives -1, as does a tensor
 * of rank 1. 0, or -2 when memory ran out. */
typedef struct {
    const char **row;   /* [n] */
    size_t n, cap;
    const char *close;
} rows_found;

static int find_rows(const char *p, const char *end, rows_found *f) {
    typedef char v16 __attribute__((vector_size(16)));
    int depth = 0;
    f->n = 0;
    while (p < end) {
        if (end - p >= 16) {
            v16 c;
            memcpy(&c, p, sizeof c);
            v16 hit = (c == '[') | (c == ']') | (c == '"') | (c == '{') | (c == '}');
            uint64_t lo, hi;
            memcpy(&lo, &hit, 8);
            memcpy(&hi, (char *)&hit + 8, 8);
            if ((lo | hi) == 0) {
                p += 16;
                continue;
            }
        }
        char c = *p;
        if (c == '[') {
            if (++depth == 2) {
                if (f->n == f->cap) {
                    size_t cap = f->cap ? f->cap * 2 : 256;
                    const char **r = realloc(f->row, cap * sizeof *r);
                    if (r == NULL) return -2;
                    f->row = r;
                    f->cap = cap;
                }
                f->row[f->n++] = p;
            }
        } else if (c == ']') {
            if (--depth == 0) {
                f->close = p;
                return f->n ? 0 : -1;
            }
        } else if (c == '"' || c == '{' || c == '}') {
            return -1;
        }
        p++;
    }
    return -1;
}

typedef struct {
    reader r;
    size_t first, last; /* rows [first, last) */
    int rc;
} group;

typedef struct {
    const rows_found *rows;
    const char *end;
    group *g;
    int rank;
} par_scan;

/* Reads rows [first, last) as read_axis reads them on axis 0: each row, then
 * a ',' before the next row's '[' or the tensor's closing ']'. */
static void read_group(void *ctx, long item, int slot) {
    (void)slot;
    par_scan *ps = ctx;
    group *g = &ps->g[item];
    g->r.rank = ps->rank;
    for (size_t i = g->first; i < g->last && g->rc == 0; i++) {
        const char *q = ps->rows->row[i];
        g->rc = read_axis(&g->r, &q, ps->end, 1);
        if (g->rc) break;
        q = skip_space(q, ps->end);
        if (i + 1 < ps->rows->n) {
            if (q == ps->end || *q != ',' || skip_space(q + 1, ps->end) != ps->rows->row[i + 1])
                g->rc = -1;
        } else if (q != ps->rows->close) {
            g->rc = -1;
        }
    }
}

/* read_tensor on the pool's threads: the same floats, shape and verdict.
 * Returns 1 when the tensor is not one to split (the caller reads it
 * alone). */
static int read_tensor_parallel(reader *r, const char **pp, const char *end, attn_pool *pool) {
    int rank = leading_rank(*pp, end);
    if (rank < 0) return -1;
    if (rank < 2) return 1;
    /* rank >= 2: the first row is the second '[' of that run, where
     * read_axis looks for it */
    rows_found rows = {0};
    int rc = find_rows(*pp, end, &rows);
    if (rc == 0 && (size_t)(rows.close - *pp) < PAR_MIN_BYTES) rc = 1;
    if (rc == 0 && rows.n >= INT32_MAX) rc = -1;
    size_t n_groups = (size_t)attn_pool_width(pool) * GROUPS_PER_THREAD;
    if (n_groups > rows.n) n_groups = rows.n;
    group *g = rc == 0 ? calloc(n_groups, sizeof *g) : NULL;
    if (rc == 0 && g == NULL) rc = -2;
    if (rc) {
        free(rows.row);
        return rc;
    }
    /* groups of about equal text */
    size_t text = (size_t)(rows.close - rows.row[0]), row = 0;
    for (size_t k = 0; k < n_groups; k++) {
        g[k].first = row;
        const char *until = rows.row[0] + text / n_groups * (k + 1);
        while (row < rows.n && (row == g[k].first || k + 1 == n_groups || rows.row[row] < until)) row++;
        g[k].last = row;
        g[k].r.budget = r->budget;
    }
    par_scan ps = {.rows = &rows, .end = end, .g = g, .rank = rank};
    attn_pool_run(pool, (long)n_groups, read_group, &ps);

    /* one verdict: a malformed row anywhere wins over memory */
    size_t total = 0;
    for (size_t k = 0; k < n_groups; k++) {
        if (g[k].rc == -1 || (rc == 0 && g[k].rc)) rc = g[k].rc;
        if (k && memcmp(g[k].r.shape + 1, g[0].r.shape + 1, sizeof(int) * (size_t)(rank - 1)))
            if (g[k].first < g[k].last) rc = -1; /* ragged between groups */
        total += g[k].r.count;
    }
    if (rc == 0 && total > r->budget) rc = -1; /* as push refuses it */
    float *data = NULL;
    if (rc == 0) {
        data = realloc(g[0].r.data, (total ? total : 1) * sizeof *data);
        if (data == NULL) rc = -2;
        else g[0].r.data = NULL;
    }
    if (rc == 0) {
        size_t at = g[0].r.count;
        for (size_t k = 1; k < n_groups; k++) {
            memcpy(data + at, g[k].r.data, g[k].r.count * sizeof *data);
            at += g[k].r.count;
        }
        free(r->data);
        r->data = data;
        r->count = r->cap = total;
        r->rank = rank;
        memcpy(r->shape, g[0].r.shape, sizeof r->shape);
        r->shape[0] = (int)rows.n;
        *pp = rows.close + 1;
    }
    for (size_t k = 0; k < n_groups; k++) free(g[k].r.data);
    free(g);
    free(rows.row);
    return rc;
}

/* ==== The body ============================================================ */

/* Fields whose array values are tensors. */
static int is_tensor_field(const char *k, size_t n) {
    static const char *const names[] = {"inputs", "query", "key", "value", "attn_mask",
                                        "key_padding_mask"};
    if (k == NULL) return 0; /* an array in an array: no key (its length may be stale) */
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
        if (strlen(names[i]) == n && memcmp(names[i], k, n) == 0) return 1;
    return 0;
}

static int key_is(const char *k, size_t n, const char *name) {
    return k && strlen(name) == n && memcmp(k, name, n) == 0;
}

#define SCAN_TRACKED_DEPTH 8

/* What an array taken out of the body is replaced by: this, then its index. */
#define PLACEHOLDER "#attn-tensor-9e3779b9:"

/* An open object or array: the key it is the value of (NULL: none). */
typedef struct {
    char is_object;
    const char *key;
    size_t key_len;
} frame;

typedef struct {
    const char *body, *end, *copied;
    api_scan *s;
    size_t budget;
    size_t cap;              /* of s->text */
    frame st[SCAN_TRACKED_DEPTH];
    int depth;
    const char *key;         /* the key whose value comes next (after its ':') */
    size_t key_len;
    const char *pending;     /* a key read, before its ':' */
    size_t pending_len;
} scanner;

/* Is a string starting here the "base64" text of a binary tensor: under a
 * tensor field, or a state_dict entry? */
static int base64_position(const scanner *sc) {
    if (sc->depth < 2 || sc->depth > 3 || !key_is(sc->key, sc->key_len, "base64")) return 0;
    const frame *f = &sc->st[sc->depth - 1], *parent = &sc->st[sc->depth - 2];
    if (!f->is_object) return 0;
    if (sc->depth == 2) return is_tensor_field(f->key, f->key_len);
    return key_is(parent->key, parent->key_len, "state_dict");
}

/* Is an array starting here, as the value of the current key, a tensor? */
static int tensor_position(const scanner *sc) {
    if (sc->depth < 1 || sc->depth > SCAN_TRACKED_DEPTH || !sc->st[sc->depth - 1].is_object ||
        sc->key == NULL)
        return 0;
    const frame *f = &sc->st[sc->depth - 1];
    if (sc->depth == 1) return is_tensor_field(sc->key, sc->key_len);
    const frame *parent = &sc->st[sc->depth - 2];
    if (sc->depth == 2 && key_is(f->key, f->key_len, "state_dict") && parent->is_object) return 1;
    if (!key_is(sc->key, sc->key_len, "data")) return 0;
    /* a flat tensor {"shape", "data"}: under a tensor field or a state_dict entry */
    if (sc->depth == 2) return is_tensor_field(f->key, f->key_len);
    return sc->depth == 3 && key_is(parent->key, parent->key_len, "state_dict");
}

static int out_put(scanner *sc, const char *p, size_t n) {
    api_scan *s = sc->s;
    if (s->len + n > sc->cap) {
        size_t cap = sc->cap * 2 > s->len + n ? sc->cap * 2 : s->len + n + 4096;
        char *t = realloc(s->text, cap);
        if (t == NULL) return -1;
        s->text = t;
        sc->cap = cap;
    }
    memcpy(s->text + s->len, p, n);
    s->len += n;
    return 0;
}

/* Replaces body[start, stop) by a placeholder for the array just read. */
static int take_array(scanner *sc, reader *r, const char *start, const char *stop,
                      size_t elements) {
    api_scan *s = sc->s;
    if (s->n == s->cap) {
        int cap = s->cap ? s->cap * 2 : 8;
        api_scanned *a = realloc(s->arrays, (size_t)cap * sizeof *a);
        if (a == NULL) return -1;
        s->arrays = a;
        s->cap = cap;
    }
    /* Plain text, no escape: jansson 2.14 asserts in its lexer when an
     * allocation fails while it decodes a \u escape (found by the GPT-2
     * chaos test). A client's string that looks the same only names one of
     * its own arrays. */
    char ph[48];
    int n = snprintf(ph, sizeof ph, "\"" PLACEHOLDER "%d\"", s->n);
    if (out_put(sc, sc->copied, (size_t)(start - sc->copied)) || out_put(sc, ph, (size_t)n))
        return -1;
    sc->copied = stop;
    api_scanned *t = &s->arrays[s->n++];
    *t = (api_scanned){.rank = r->rank, .count = r->count, .data = r->data};
    memcpy(t->shape, r->shape, sizeof t->shape);
    s->elements += elements;
    r->data = NULL;
    r->cap = 0;
    return 0;
}

/* Decodes the base64 string body[start, stop) (quotes included) into a new
 * entry replaced by a placeholder. Text that is not plain base64 (escapes,
 * other characters, a bad length) is left to jansson and tensor_in.c, which
 * say what is wrong. Returns 0 (taken or left), -1 out of memory. */
static int take_base64(scanner *sc, const char *start, const char *stop) {
    const char *text = start + 1;
    size_t len = (size_t)(stop - start) - 2, n = api__b64_decoded_size(text, len);
    if (stop - start < 2 || stop[-1] != '"' || n == SIZE_MAX || n / 4 > sc->budget - sc->s->elements)
        return 0;
    uint8_t *bytes = malloc(n ? n : 1);
    if (bytes == NULL) return -1;
    if (api__b64_decode(text, len, bytes) != 0) {
        free(bytes);
        return 0;
    }
    reader r = {.rank = 0, .count = n};
    if (take_array(sc, &r, start, stop, n / 4) != 0) {
        free(bytes);
        return -1;
    }
    sc->s->arrays[sc->s->n - 1].bytes = bytes;
    return 0;
}

/* Past the string at p (at '"'), or end. */
static const char *skip_string(const char *p, const char *end) {
    for (p++; p < end; p++) {
        if (*p == '\\') p++;
        else if (*p == '"') return p + 1;
    }
    return end;
}

static _Atomic int scan_off;

void api__scan_enable(int on) { scan_off = !on; }

/* At a '[' where a tensor may be: reads it into r and takes it out of the
 * body (returns 1, *pp past it); 0 when it is not one the scanner takes
 * (left to jansson); -1 when an allocation failed. */
static int try_tensor(scanner *sc, reader *r, const char **pp, attn_pool *pool) {
    const char *p = *pp, *q = p, *end = sc->end;
    r->budget = sc->budget - sc->s->elements;
    int got = 1;
    if (attn_pool_width(pool) > 1 && (size_t)(end - p) >= PAR_MIN_BYTES)
        got = read_tensor_parallel(r, &q, end, pool);
    if (got == 1) got = read_tensor(r, &q, end);
    if (got == -2) return -1;
    if (got != 0) return 0;
    if (take_array(sc, r, p, q, r->count)) return -1;
    *pp = q;
    sc->key = sc->pending = NULL;
    return 1;
}

/* At a '"': a base64 tensor's text is taken out, a key is noted as
 * pending (for the ':' that follows). Returns -1 when an allocation failed. */
static int at_string(scanner *sc, const char **pp, int *expect_key) {
    const char *p = *pp, *q = skip_string(p, sc->end);
    *pp = q;
    if (!*expect_key && base64_position(sc)) {
        sc->key = sc->pending = NULL;
        return take_base64(sc, p, q);
    }
    if (*expect_key) {
        sc->pending = p + 1;
        sc->pending_len = q > p + 1 ? (size_t)(q - p - 2) : 0;
        *expect_key = 0;
    }
    sc->key = NULL;
    return 0;
}

/* One structural character at *pp (brackets, ',', ':'): the frames and
 * the key of the scanner follow it. */
static void at_structure(scanner *sc, const char **pp, int *expect_key) {
    char c = **pp;
    if (c == '{' || c == '[') {
        if (sc->depth < SCAN_TRACKED_DEPTH)
            sc->st[sc->depth] = (frame){c == '{', sc->key, sc->key_len};
        sc->depth++;
        sc->key = sc->pending = NULL;
        *expect_key = c == '{';
    } else if (c == '}' || c == ']') {
        if (sc->depth > 0) sc->depth--;
        sc->key = sc->pending = NULL;
        *expect_key = 0;
    } else if (c == ',') {
        *expect_key = sc->depth >= 1 && sc->depth <= SCAN_TRACKED_DEPTH &&
                      sc->st[sc->depth - 1].is_object;
        sc->key = sc->pending = NULL;
    } else if (c == ':') {
        sc->key = sc->pending;
        sc->key_len = sc->pending_len;
        sc->pending = NULL;
    }
    (*pp)++; /* white space, numbers and literals outside tensors too */
}

int api__scan_body(const char *body, size_t len, size_t budget, attn_pool *pool,
                   api_scan *s) {
    *s = (api_scan){0};
    if (scan_off) return 0;
    scanner sc = {.body = body, .end = body + len, .copied = body, .s = s, .budget = budget};
    reader r = {0};
    int rc = 0;
    int expect_key = 0; /* in an object, between '{' or ',' and the key */
    const char *p = body, *end = body + len;
    while (p < end && rc == 0) {
        if (*p == '[' && !expect_key && tensor_position(&sc)) {
            int got = try_tensor(&sc, &r, &p, pool);
            if (got != 0) {
                rc = got < 0 ? -1 : 0;
                continue;
            }
        }
        if (*p == '"') rc = at_string(&sc, &p, &expect_key);
        else at_structure(&sc, &p, &expect_key);
    }
    free(r.data);
    if (rc == 0 && s->n > 0) rc = out_put(&sc, sc.copied, (size_t)(end - sc.copied));
    if (rc) {
        api__scan_free(s);
        return -1;
    }
    return 0;
}

void api__scan_free(api_scan *s) {
    if (s == NULL) return;
    for (int i = 0; i < s->n; i++) {
        free(s->arrays[i].data);
        free(s->arrays[i].bytes);
    }
    free(s->arrays);
    free(s->text);
    *s = (api_scan){0};
}

/* ==== Placeholders ======================================================== */

static _Thread_local api_scan *current_scan;

void api__scan_set_current(api_scan *s) { current_scan = s; }

api_scanned *api__scan_lookup(const json_t *j) {
    api_scan *s = current_scan;
    if (s == NULL || s->n == 0 || !json_is_string(j)) return NULL;
    const char *v = json_string_value(j);
    size_t n = sizeof PLACEHOLDER - 1;
    if (strncmp(v, PLACEHOLDER, n) != 0 || !is_digit(v[n])) return NULL;
    char *stop;
    long i = strtol(v + n, &stop, 10);
    if (*stop != '\0' || i < 0 || i >= s->n) return NULL;
    if (s->arrays[i].data == NULL && s->arrays[i].bytes == NULL) return NULL;
    return &s->arrays[i];
}
