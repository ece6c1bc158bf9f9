/* print.c - values as text: what {{ x }} writes (JavaScript's toString, as
 * @huggingface/jinja calls it: true, 1.0 for a float that is whole, arrays and
 * objects as JSON), what + and ~ join (a float 1.0 is "1" there), and the
 * tojson filter (JSON.stringify's escapes, Python's separators ", " and
 * ": ", indent, ensure_ascii). */
#include "api/chat/jinja.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ==== Numbers ==== */

/* The shortest digits that read back as x (x finite, > 0): digits[0..k) and
 * the decimal exponent n, x = 0.d1d2...dk * 10^n. */
static int shortest(double x, char *digits, int *n) {
    char buf[40];
    for (int p = 1; p <= 17; p++) {
        snprintf(buf, sizeof buf, "%.*e", p - 1, x);
        if (strtod(buf, NULL) == x || p == 17) break;
    }
    int k = 0;
    char *e = strchr(buf, 'e');
    for (char *c = buf; c < e; c++)
        if (*c >= '0' && *c <= '9') digits[k++] = *c;
    while (k > 1 && digits[k - 1] == '0') k--;
    *n = atoi(e + 1) + 1;
    return k;
}

/* JavaScript's Number.prototype.toString(): 0.1, 1e+21, 1.5e-7, NaN. out
 * has room for 32 bytes; returns the length. */
size_t api__jinja_number_text(double x, char *out) {
    if (isnan(x)) return (size_t)sprintf(out, "NaN");
    if (isinf(x)) return (size_t)sprintf(out, x < 0 ? "-Infinity" : "Infinity");
    if (x == 0) return (size_t)sprintf(out, "0");
    size_t o = 0;
    if (x < 0) {
        out[o++] = '-';
        x = -x;
    }
    char d[20];
    int n, k = shortest(x, d, &n);
    if (k <= n && n <= 21) {
        memcpy(out + o, d, (size_t)k);
        o += (size_t)k;
        for (int i = k; i < n; i++) out[o++] = '0';
    } else if (0 < n && n <= 21) {
        memcpy(out + o, d, (size_t)n);
        o += (size_t)n;
        out[o++] = '.';
        memcpy(out + o, d + n, (size_t)(k - n));
        o += (size_t)(k - n);
    } else if (-6 < n && n <= 0) {
        out[o++] = '0';
        out[o++] = '.';
        for (int i = 0; i < -n; i++) out[o++] = '0';
        memcpy(out + o, d, (size_t)k);
        o += (size_t)k;
    } else {
        out[o++] = d[0];
        if (k > 1) {
            out[o++] = '.';
            memcpy(out + o, d + 1, (size_t)(k - 1));
            o += (size_t)(k - 1);
        }
        o += (size_t)sprintf(out + o, "e%c%d", n - 1 < 0 ? '-' : '+', abs(n - 1));
    }
    out[o] = '\0';
    return o;
}

/* A float as {{ }} writes it: toFixed(1) when whole (2.0, -0.0). */
static size_t float_text(double x, char *out) {
    if (x == 0 && signbit(x)) return (size_t)sprintf(out, "-0.0");
    if (isfinite(x) && x == floor(x) && fabs(x) < 1e21) return (size_t)snprintf(out, 32, "%.1f", x);
    return api__jinja_number_text(x, out);
}

/* ==== JSON ==== */

/* JSON.stringify of a string: \" \\ \b \f \n \r \t, other controls as
 * \u00xx; with ensure_ascii every character from U+007F as \uxxxx (UTF-16). */
static int quote(jinja_rt *rt, jinja_buf *b, const char *s, size_t n, int ascii) {
    if (api__jinja_add(rt, b, "\"", 1) != 0) return -1;
    for (size_t i = 0, k; i < n; i += k) {
        uint32_t c;
        char esc[16];
        k = api__jinja_utf8_decode(s + i, n - i, &c);
        if (k == 0) return api__jinja_fail(rt, API_CHAT_ERENDER, "a string is not UTF-8");
        const char *named = c == '"' ? "\\\"" : c == '\\' ? "\\\\" : c == '\b' ? "\\b" : c == '\f' ? "\\f"
                          : c == '\n' ? "\\n" : c == '\r' ? "\\r" : c == '\t' ? "\\t" : NULL;
        int len = 0;
        if (named) len = snprintf(esc, sizeof esc, "%s", named);
        else if (c < 0x20 || (ascii && c >= 0x7F && c < 0x10000)) len = snprintf(esc, sizeof esc, "\\u%04x", c);
        else if (ascii && c >= 0x10000)
            len = snprintf(esc, sizeof esc, "\\u%04x\\u%04x", 0xD800 + ((c - 0x10000) >> 10),
                           0xDC00 + ((c - 0x10000) & 0x3FF));
        if (api__jinja_add(rt, b, len ? esc : s + i, len ? (size_t)len : k) != 0) return -1;
    }
    return api__jinja_add(rt, b, "\"", 1);
}

static int json_value(jinja_rt *rt, jinja_buf *b, jinja_value v, const jinja_json *o, int depth);

static int pad(jinja_rt *rt, jinja_buf *b, const jinja_json *o, int depth) {
    if (api__jinja_add(rt, b, "\n", 1) != 0) return -1;
    for (int i = 0; i < depth; i++)
        for (int j = 0; j < o->indent; j++)
            if (api__jinja_add(rt, b, " ", 1) != 0) return -1;
    return 0;
}

static int sep(jinja_rt *rt, jinja_buf *b, const char *s) { return api__jinja_add(rt, b, s, strlen(s)); }

/* [a, b] or {"k": v}; indented as Python's json.dumps when o->indent > 0. */
static int json_container(jinja_rt *rt, jinja_buf *b, jinja_value v, const jinja_json *o, int depth) {
    int array = v.kind == V_ARRAY;
    if (array && v.u.arr->tuple) return api__jinja_fail(rt, API_CHAT_ERENDER, "a tuple cannot be written as JSON");
    size_t n = array ? v.u.arr->n : v.u.obj->n;
    jinja_value item = o->separators ? o->item : o->indent > 0 ? JV_STR(",", 1) : JV_STR(", ", 2);
    jinja_value key = o->separators ? o->key : JV_STR(": ", 2);
    if (api__jinja_add(rt, b, array ? "[" : "{", 1) != 0) return -1;
    for (size_t i = 0; i < n; i++) {
        if (i > 0 && api__jinja_add(rt, b, item.u.s.p, item.u.s.n) != 0) return -1;
        if (o->indent > 0 && pad(rt, b, o, depth + 1) != 0) return -1;
        if (!array) {
            const jinja_entry *e = &v.u.obj->e[i];
            if (quote(rt, b, e->k, e->kn, o->ascii) != 0 || api__jinja_add(rt, b, key.u.s.p, key.u.s.n) != 0)
                return -1;
        }
        if (json_value(rt, b, array ? v.u.arr->v[i] : v.u.obj->e[i].v, o, depth + 1) != 0) return -1;
    }
    if (o->indent > 0 && n > 0 && pad(rt, b, o, depth) != 0) return -1;
    return api__jinja_add(rt, b, array ? "]" : "}", 1);
}

static int json_value(jinja_rt *rt, jinja_buf *b, jinja_value v, const jinja_json *o, int depth) {
    char num[40];
    if (depth > rt->lim.max_depth)
        return api__jinja_fail(rt, API_CHAT_ELIMIT, "a value nests deeper than %d", rt->lim.max_depth);
    switch (v.kind) {
    case V_UNDEF: return sep(rt, b, o->undefined_null ? "null" : "undefined");
    case V_NONE: return sep(rt, b, "null");
    case V_BOOL: return sep(rt, b, v.u.b ? "true" : "false");
    case V_INT:
    case V_FLOAT:
        if (!isfinite(v.u.num)) return sep(rt, b, "null");
        return api__jinja_add(rt, b, num, api__jinja_number_text(v.u.num, num));
    case V_STR: return quote(rt, b, v.u.s.p, v.u.s.n, o->ascii);
    case V_LOOP: {
        jinja_value obj;
        return api__jinja_loop_object(rt, v, &obj) != 0 ? -1 : json_container(rt, b, obj, o, depth);
    }
    case V_FUNC: return api__jinja_fail(rt, API_CHAT_ERENDER, "a function cannot be written as JSON");
    default: return json_container(rt, b, v, o, depth);
    }
}

int api__jinja_json(jinja_rt *rt, jinja_buf *b, jinja_value v, const jinja_json *o) {
    return json_value(rt, b, v, o, 0);
}

/* ==== Text ==== */

/* v as @huggingface/jinja turns it into text, by mode:
 *   TX_PRINT   {{ v }}: a whole float as 2.0, lists and objects as JSON, none
 *              and undefined as nothing;
 *   TX_ITEM    an item of a list joined by TX_CONCAT (JavaScript's toString
 *              of the item): as TX_PRINT, none and undefined as "undefined";
 *   TX_CONCAT  + and ~ (JavaScript's toString of the value): a float 2.0 as
 *              2, a list as its items joined by ",", an object as
 *              "[object Map]"; none and undefined are refused before. */
int api__jinja_text(jinja_rt *rt, jinja_buf *b, jinja_value v, int mode) {
    char num[40];
    switch (v.kind) {
    case V_UNDEF:
    case V_NONE: return mode == TX_ITEM ? sep(rt, b, "undefined") : 0;
    case V_STR: return api__jinja_add(rt, b, v.u.s.p, v.u.s.n);
    case V_BOOL: return sep(rt, b, v.u.b ? "true" : "false");
    case V_INT: return api__jinja_add(rt, b, num, api__jinja_number_text(v.u.num, num));
    case V_FLOAT:
        return api__jinja_add(rt, b, num,
                              mode != TX_CONCAT ? float_text(v.u.num, num) : api__jinja_number_text(v.u.num, num));
    case V_FUNC: return api__jinja_fail(rt, API_CHAT_ERENDER, "a function cannot be written as text");
    case V_ARRAY:
        if (mode != TX_CONCAT) return api__jinja_json(rt, b, v, &(jinja_json){0});
        for (size_t i = 0; i < v.u.arr->n; i++)
            if ((i > 0 && sep(rt, b, ",") != 0) || api__jinja_text(rt, b, v.u.arr->v[i], TX_ITEM) != 0) return -1;
        return 0;
    default:
        return mode != TX_CONCAT ? api__jinja_json(rt, b, v, &(jinja_json){0}) : sep(rt, b, "[object Map]");
    }
}
