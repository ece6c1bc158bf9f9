/* strings.c - the string algorithms of the methods and filters, each as
 * @huggingface/jinja computes it: split (Python's str.split, with
 * JavaScript's whitespace), replace (Python's, with a count), case changes
 * (ASCII letters only here; JavaScript maps every script), title (the first
 * letter of each word up, the rest as it was), startswith / endswith. */
#include "api/chat/jinja.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ==== Case ==== */

static int ascii_upper(int c) { return c >= 'a' && c <= 'z' ? c - 32 : c; }
static int ascii_lower(int c) { return c >= 'A' && c <= 'Z' ? c + 32 : c; }

/* how: FN_UPPER, FN_LOWER, FN_TITLE or FN_CAPITALIZE. */
int api__jinja_case(jinja_rt *rt, jinja_value s, int how, jinja_value *out) {
    char *p = api__jinja_alloc(rt, s.u.s.n + 1);
    if (p == NULL) return -1;
    for (size_t i = 0; i < s.u.s.n; i++) {
        int c = (unsigned char)s.u.s.p[i];
        int start = i == 0 || !api__jinja_is_word((unsigned char)s.u.s.p[i - 1]);
        if (how == FN_UPPER || (how == FN_TITLE && start) || (how == FN_CAPITALIZE && i == 0)) c = ascii_upper(c);
        else if (how == FN_LOWER) c = ascii_lower(c);
        p[i] = (char)c;
    }
    p[s.u.s.n] = '\0';
    *out = JV_STR(p, s.u.s.n);
    return 0;
}

/* ==== Split ==== */

static int piece(jinja_rt *rt, jinja_array *a, const char *p, size_t n) {
    return api__jinja_array_push(rt, a, JV_STR(p, n));
}

/* Runs of non-whitespace; with max >= 0 the max-th piece takes the rest. */
static int split_space(jinja_rt *rt, jinja_array *a, const char *p, size_t n, double max) {
    api__jinja_trim(&p, &n, 1, 0);
    size_t i = 0, k;
    while (i < n) {
        size_t start = i;
        while (i < n && api__jinja_space_at(p + i, n - i) == 0) i++;
        if (max != -1 && (double)a->n >= max) return piece(rt, a, p + start, n - start);
        if (piece(rt, a, p + start, i - start) != 0) return -1;
        while (i < n && (k = api__jinja_space_at(p + i, n - i)) > 0) i += k;
    }
    return 0;
}

/* JavaScript's split, then the pieces from max on joined again. */
static int split_on(jinja_rt *rt, jinja_array *a, jinja_value s, jinja_value sep, double max) {
    const char *p = s.u.s.p, *end = p + s.u.s.n, *hit;
    size_t sn = sep.u.s.n, count = 0;
    for (const char *q = p; (hit = memmem(q, (size_t)(end - q), sep.u.s.p, sn)); q = hit + sn) count++;
    size_t pieces = count + 1, keep = pieces;
    if (max != -1 && (double)pieces > max)
        keep = max >= 0 ? (size_t)max : (double)pieces + max > 0 ? pieces - (size_t)-max : 0;
    for (size_t i = 0; i < pieces; i++) {
        hit = i + 1 < pieces ? memmem(p, (size_t)(end - p), sep.u.s.p, sn) : end;
        if (i == keep && keep < pieces) return piece(rt, a, p, (size_t)(end - p));
        if (piece(rt, a, p, (size_t)(hit - p)) != 0) return -1;
        p = hit + (hit < end ? sn : 0);
    }
    return 0;
}

/* s.split(sep=none, maxsplit=-1). */
int api__jinja_split(jinja_rt *rt, jinja_value s, jinja_value sep, jinja_value max, jinja_value *out) {
    if (sep.kind != V_STR && sep.kind != V_NONE && sep.kind != V_UNDEF)
        return api__jinja_fail(rt, API_CHAT_ERENDER, "split's separator must be a string or none");
    if (max.kind != V_INT && max.kind != V_UNDEF)
        return api__jinja_fail(rt, API_CHAT_ERENDER, "split's maxsplit must be an integer");
    if (sep.kind == V_STR && sep.u.s.n == 0) return api__jinja_fail(rt, API_CHAT_ERENDER, "empty separator");
    jinja_array *a = api__jinja_array_new(rt, 0);
    if (a == NULL) return -1;
    double m = max.kind == V_INT ? max.u.num : -1;
    int rc = sep.kind == V_STR ? split_on(rt, a, s, sep, m) : split_space(rt, a, s.u.s.p, s.u.s.n, m);
    *out = (jinja_value){.kind = V_ARRAY, .u.arr = a};
    return rc;
}

/* ==== Replace ==== */

/* s.replace(old, new, count): count none or negative is every occurrence; an
 * empty old matches between any two characters and at both ends. */
int api__jinja_replace(jinja_rt *rt, jinja_value s, jinja_value old, jinja_value rep, jinja_value count,
                       jinja_value *out) {
    if (old.kind != V_STR || rep.kind != V_STR)
        return api__jinja_fail(rt, API_CHAT_ERENDER, "replace() arguments must be strings");
    if (count.kind != V_INT && count.kind != V_NONE && count.kind != V_UNDEF)
        return api__jinja_fail(rt, API_CHAT_ERENDER, "replace() count must be a number or none");
    double left = count.kind != V_INT || count.u.num < 0 ? 1.0 / 0.0 : isnan(count.u.num) ? 0 : count.u.num;
    if (count.kind == V_INT && count.u.num == 0) {
        *out = s;
        return 0;
    }
    jinja_buf b = {0};
    const char *p = s.u.s.p, *end = p + s.u.s.n;
    int rc = 0;
    while (rc == 0 && p <= end && left > 0) {
        const char *hit = old.u.s.n ? memmem(p, (size_t)(end - p), old.u.s.p, old.u.s.n) : p;
        if (hit == NULL) break;
        rc = api__jinja_add(rt, &b, p, (size_t)(hit - p));
        if (rc == 0) rc = api__jinja_add(rt, &b, rep.u.s.p, rep.u.s.n);
        left--;
        p = hit + old.u.s.n;
        if (old.u.s.n == 0 && p < end) { /* past one character */
            uint32_t cp;
            size_t k = api__jinja_utf8_decode(p, (size_t)(end - p), &cp);
            if (rc == 0) rc = api__jinja_add(rt, &b, p, k ? k : 1);
            p += k ? k : 1;
        } else if (old.u.s.n == 0) {
            p++; /* the match at the end was the last */
        }
    }
    if (rc == 0 && p < end) rc = api__jinja_add(rt, &b, p, (size_t)(end - p));
    if (rc == 0) return api__jinja_take(rt, &b, out);
    free(b.p);
    return -1;
}

/* ==== startswith, endswith ==== */

static int affix(jinja_value s, jinja_value x, int end) {
    if (x.u.s.n > s.u.s.n) return 0;
    return memcmp(s.u.s.p + (end ? s.u.s.n - x.u.s.n : 0), x.u.s.p, x.u.s.n) == 0;
}

/* s.startswith(x) or s.endswith(x); x a string or a list of strings. */
int api__jinja_affix(jinja_rt *rt, jinja_value s, jinja_value x, int end, jinja_value *out) {
    const char *name = end ? "endswith" : "startswith";
    if (x.kind == V_STR) {
        *out = JV_BOOL(affix(s, x, end));
        return 0;
    }
    if (x.kind != V_ARRAY) return api__jinja_fail(rt, API_CHAT_ERENDER, "%s() takes a string or a tuple", name);
    for (size_t i = 0; i < x.u.arr->n; i++) {
        if (x.u.arr->v[i].kind != V_STR)
            return api__jinja_fail(rt, API_CHAT_ERENDER, "%s() tuple elements must be strings", name);
        if (affix(s, x.u.arr->v[i], end)) {
            *out = JV_BOOL(1);
            return 0;
        }
    }
    *out = JV_BOOL(0);
    return 0;
}
