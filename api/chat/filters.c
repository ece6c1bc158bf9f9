/* filters.c - filters and tests, with @huggingface/jinja's rules: a filter
 * without parentheses (x|length) and one with (x|join(', ')) are looked up
 * separately, and each works on the types it names (|trim on a list is an
 * error, as there). The arguments come evaluated (eval.c). */
#include "api/chat/jinja.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char *kind_name(jinja_value v) {
    static const char *const names[] = {"undefined", "none", "boolean", "integer", "float", "string",
                                        "list", "object", "namespace", "loop", "function"};
    return names[v.kind];
}

static int bad_type(jinja_rt *rt, int id, jinja_value x) {
    return api__jinja_fail(rt, API_CHAT_ERENDER, "the filter '%s' does not apply to a %s",
                           api__jinja_filter_name(id), kind_name(x));
}

static int array_value(jinja_array *a, jinja_value *out) {
    *out = (jinja_value){.kind = V_ARRAY, .u.arr = a};
    return 0;
}

/* ==== Tests ==== */

/* x is test (b: equalto's other side). 1 or 0, -1 on failure. */
int api__jinja_test(jinja_rt *rt, int id, jinja_value x, jinja_value b) {
    int k = x.kind;
    switch (id) {
    case TEST_DEFINED: return k != V_UNDEF;
    case TEST_UNDEFINED: return k == V_UNDEF;
    case TEST_NONE: return k == V_NONE;
    case TEST_STRING: return k == V_STR;
    case TEST_NUMBER: return k == V_INT || k == V_FLOAT;
    case TEST_INTEGER: return k == V_INT;
    case TEST_BOOLEAN: return k == V_BOOL;
    case TEST_MAPPING: return k == V_OBJECT || k == V_LOOP;
    case TEST_ITERABLE: return (k == V_ARRAY && !x.u.arr->tuple) || k == V_STR; /* a tuple is not, there */
    case TEST_SEQUENCE: return k == V_ARRAY || k == V_OBJECT || k == V_STR || k == V_LOOP;
    case TEST_TRUE: return k == V_BOOL && x.u.b;
    case TEST_FALSE: return k == V_BOOL && !x.u.b;
    case TEST_CALLABLE: return k == V_FUNC;
    case TEST_ODD:
    case TEST_EVEN:
        if (k != V_INT) return api__jinja_fail(rt, API_CHAT_ERENDER, "odd and even take integers");
        return (fmod(x.u.num, 2) != 0) == (id == TEST_ODD);
    default: return api__jinja_strict_eq(x, b);
    }
}

/* ==== Lists ==== */

/* A string's characters or a list's items (as JavaScript's join writes
 * them: none and undefined as nothing) with sep between. */
static int join(jinja_rt *rt, jinja_value x, jinja_value sep, jinja_value *out) {
    jinja_buf b = {0};
    int rc = 0;
    if (x.kind == V_STR) { /* the characters of a string */
        for (size_t i = 0, k; rc == 0 && i < x.u.s.n; i += k) {
            uint32_t cp;
            k = api__jinja_utf8_decode(x.u.s.p + i, x.u.s.n - i, &cp);
            if (i > 0) rc = api__jinja_add(rt, &b, sep.u.s.p, sep.u.s.n);
            if (rc == 0) rc = api__jinja_add(rt, &b, x.u.s.p + i, k ? k : 1);
            k = k ? k : 1;
        }
    }
    for (size_t i = 0; x.kind == V_ARRAY && rc == 0 && i < x.u.arr->n; i++) {
        jinja_value v = x.u.arr->v[i];
        if (i > 0) rc = api__jinja_add(rt, &b, sep.u.s.p, sep.u.s.n);
        if (rc == 0) rc = api__jinja_text(rt, &b, v, TX_CONCAT);
    }
    if (rc == 0) return api__jinja_take(rt, &b, out);
    free(b.p);
    return -1;
}

/* The value at a dotted path (map(attribute='a.b'), an index as "items.0"). */
static jinja_value attribute(jinja_value v, const char *path, size_t n) {
    while (n > 0) {
        const char *dot = memchr(path, '.', n);
        size_t len = dot ? (size_t)(dot - path) : n;
        if (v.kind == V_OBJECT || v.kind == V_NS) {
            const jinja_value *x = api__jinja_object_get(v.u.obj, path, len);
            v = x ? *x : JV(V_UNDEF);
        } else if (v.kind == V_ARRAY) {
            double i = api__jinja_js_number(path, len, 1);
            if (isnan(i) || i < 0 || i >= (double)v.u.arr->n) return JV(V_UNDEF);
            v = v.u.arr->v[(size_t)i];
        } else {
            return JV(V_UNDEF);
        }
        path += len + (dot != NULL);
        n -= len + (dot != NULL);
    }
    return v;
}

/* selectattr / rejectattr: the items whose attribute passes the test (an
 * item without it never does). */
static int select_items(jinja_rt *rt, int id, jinja_value x, const jinja_value *args, size_t nargs,
                        jinja_value *out) {
    int test = nargs > 1 ? api__jinja_test_id(args[1].u.s.p, args[1].u.s.n) : -1;
    jinja_array *a = api__jinja_array_new(rt, 0);
    if (a == NULL) return -1;
    for (size_t i = 0; i < x.u.arr->n; i++) {
        jinja_value item = x.u.arr->v[i];
        if (item.kind != V_OBJECT && item.kind != V_NS)
            return api__jinja_fail(rt, API_CHAT_ERENDER, "%s takes a list of objects", api__jinja_filter_name(id));
        const jinja_value *v = api__jinja_object_get(item.u.obj, args[0].u.s.p, args[0].u.s.n);
        int pass = 0;
        if (v)
            pass =
                test < 0 ? api__jinja_truthy(*v) : api__jinja_test(rt, test, *v, nargs > 2 ? args[2] : JV(V_UNDEF));
        if (pass < 0) return -1;
        if (pass == (id == F_SELECTATTR) && api__jinja_array_push(rt, a, item) != 0) return -1;
    }
    return array_value(a, out);
}

static int map_items(jinja_rt *rt, jinja_value x, const jinja_object *kw, jinja_value *out) {
    const jinja_value *attr = kw ? api__jinja_object_get(kw, "attribute", 9) : NULL;
    const jinja_value *dflt = kw ? api__jinja_object_get(kw, "default", 7) : NULL;
    if (attr == NULL || attr->kind != V_STR)
        return api__jinja_fail(rt, API_CHAT_EUNSUPPORTED, "map is supported with attribute='name' only");
    jinja_array *a = api__jinja_array_new(rt, x.u.arr->n);
    if (a == NULL) return -1;
    for (size_t i = 0; i < x.u.arr->n; i++) {
        jinja_value item = x.u.arr->v[i];
        if (item.kind != V_OBJECT && item.kind != V_NS)
            return api__jinja_fail(rt, API_CHAT_ERENDER, "map takes a list of objects");
        jinja_value v = attribute(item, attr->u.s.p, attr->u.s.n);
        a->v[a->n++] = v.kind == V_UNDEF && dflt ? *dflt : v;
    }
    return array_value(a, out);
}

static int list_filter(jinja_rt *rt, int id, jinja_value x, jinja_value *out) {
    jinja_array *a = x.u.arr;
    switch (id) {
    case F_LIST: *out = x; return 0;
    case F_FIRST:
    case F_LAST: /* of an empty list: an error, as there */
        if (a->n == 0) return api__jinja_fail(rt, API_CHAT_ERENDER, "first or last of an empty list");
        *out = a->v[id == F_FIRST ? 0 : a->n - 1];
        return 0;
    case F_LENGTH: *out = JV_NUM(V_INT, (double)a->n); return 0;
    case F_JOIN: return join(rt, x, JV_STR("", 0), out);
    case F_STRING: {
        jinja_buf b = {0};
        if (api__jinja_json(rt, &b, x, &(jinja_json){0}) == 0) return api__jinja_take(rt, &b, out);
        free(b.p);
        return -1;
    }
    case F_REVERSE: {
        jinja_array *r = api__jinja_array_new(rt, a->n);
        if (r == NULL) return -1;
        for (size_t i = 0; i < a->n; i++) r->v[r->n++] = a->v[a->n - 1 - i];
        return array_value(r, out);
    }
    default: return bad_type(rt, id, x);
    }
}

static int string_filter(jinja_rt *rt, int id, jinja_value x, jinja_value *out) {
    double v;
    switch (id) {
    case F_LENGTH: *out = JV_NUM(V_INT, (double)api__jinja_utf8_count(x.u.s.p, x.u.s.n)); return 0;
    case F_UPPER: return api__jinja_case(rt, x, FN_UPPER, out);
    case F_LOWER: return api__jinja_case(rt, x, FN_LOWER, out);
    case F_TITLE: return api__jinja_case(rt, x, FN_TITLE, out);
    case F_CAPITALIZE: return api__jinja_case(rt, x, FN_CAPITALIZE, out);
    case F_TRIM: api__jinja_trim(&x.u.s.p, &x.u.s.n, 1, 1); *out = x; return 0;
    case F_JOIN:
    case F_STRING: *out = x; return 0;
    case F_INT:
        v = api__jinja_js_number(x.u.s.p, x.u.s.n, 1);
        *out = JV_NUM(V_INT, isnan(v) ? 0 : v);
        return 0;
    case F_FLOAT:
        v = api__jinja_js_number(x.u.s.p, x.u.s.n, 2);
        *out = JV_NUM(V_FLOAT, isnan(v) ? 0 : v);
        return 0;
    default: return bad_type(rt, id, x);
    }
}

/* x|filter without parentheses. */
static int bare(jinja_rt *rt, int id, jinja_value x, jinja_value *out) {
    if (id == F_SAFE) return *out = x, 0;
    if (id == F_TOJSON) {
        jinja_buf b = {0};
        if (api__jinja_json(rt, &b, x, &(jinja_json){.undefined_null = 1}) == 0) return api__jinja_take(rt, &b, out);
        free(b.p);
        return -1;
    }
    if (x.kind == V_LOOP && api__jinja_loop_object(rt, x, &x) != 0) return -1;
    switch (x.kind) {
    case V_ARRAY: return list_filter(rt, id, x, out);
    case V_STR: return string_filter(rt, id, x, out);
    case V_INT:
    case V_FLOAT:
        if (id == F_ABS) return *out = JV_NUM(x.kind, fabs(x.u.num)), 0;
        if (id == F_INT) return *out = JV_NUM(V_INT, floor(x.u.num)), 0;
        if (id == F_FLOAT) return *out = JV_NUM(V_FLOAT, x.u.num), 0;
        break;
    case V_BOOL:
        if (id == F_BOOL) return *out = x, 0;
        if (id == F_INT || id == F_FLOAT) return *out = JV_NUM(id == F_INT ? V_INT : V_FLOAT, x.u.b), 0;
        break;
    case V_OBJECT:
        if (id == F_LENGTH) return *out = JV_NUM(V_INT, (double)x.u.obj->n), 0;
        if (id == F_ITEMS || id == F_KEYS || id == F_VALUES)
            return api__jinja_object_method(rt, id == F_ITEMS ? FN_ITEMS : id == F_KEYS ? FN_KEYS : FN_VALUES,
                                            x.u.obj, NULL, 0, out);
        break;
    }
    if (id == F_STRING && (x.kind == V_INT || x.kind == V_FLOAT || x.kind == V_BOOL)) {
        jinja_buf b = {0};
        if (api__jinja_text(rt, &b, x, TX_PRINT) == 0) return api__jinja_take(rt, &b, out);
        free(b.p);
        return -1;
    }
    return bad_type(rt, id, x);
}

/* tojson(indent=, ensure_ascii=, sort_keys=, separators=): keywords only. */
static int tojson(jinja_rt *rt, jinja_value x, const jinja_object *kw, jinja_value *out) {
    jinja_json o = {.undefined_null = 1};
    const jinja_value *v;
    if (kw && (v = api__jinja_object_get(kw, "indent", 6)) && v->kind != V_NONE) {
        if (v->kind != V_INT || v->u.num < 0 || v->u.num > 1000)
            return api__jinja_fail(rt, API_CHAT_ERENDER, "tojson's indent must be a number from 0 to 1000");
        o.indent = (int)v->u.num;
    }
    if (kw && (v = api__jinja_object_get(kw, "ensure_ascii", 12))) {
        if (v->kind != V_BOOL) return api__jinja_fail(rt, API_CHAT_ERENDER, "ensure_ascii must be a boolean");
        o.ascii = v->u.b;
    }
    if (kw && (v = api__jinja_object_get(kw, "sort_keys", 9)) && (v->kind != V_BOOL || v->u.b))
        return api__jinja_fail(rt, API_CHAT_EUNSUPPORTED, "tojson's sort_keys is not supported");
    if (kw && (v = api__jinja_object_get(kw, "separators", 10)) && v->kind != V_NONE) {
        if (v->kind != V_ARRAY || v->u.arr->n != 2 || v->u.arr->v[0].kind != V_STR || v->u.arr->v[1].kind != V_STR)
            return api__jinja_fail(rt, API_CHAT_ERENDER, "separators must be a tuple of two strings");
        o.item = v->u.arr->v[0];
        o.key = v->u.arr->v[1];
        o.separators = 1;
    }
    jinja_buf b = {0};
    if (api__jinja_json(rt, &b, x, &o) == 0) return api__jinja_take(rt, &b, out);
    free(b.p);
    return -1;
}

static jinja_value option(const jinja_value *args, size_t nargs, size_t i, const jinja_object *kw,
                          const char *name, jinja_value dflt) {
    const jinja_value *v = kw ? api__jinja_object_get(kw, name, strlen(name)) : NULL;
    return i < nargs ? args[i] : v ? *v : dflt;
}

/* x|filter(...). */
static int called(jinja_rt *rt, int id, jinja_value x, const jinja_value *args, size_t nargs,
                  const jinja_object *kw, jinja_value *out) {
    if (id == F_TOJSON) return tojson(rt, x, kw, out);
    if (id == F_DEFAULT) {
        jinja_value use = nargs > 0 ? args[0] : JV_STR("", 0),
                    boolean = option(args, nargs, 1, kw, "boolean", JV_BOOL(0));
        if (boolean.kind != V_BOOL) return api__jinja_fail(rt, API_CHAT_ERENDER, "default's boolean must be a boolean");
        *out = x.kind == V_UNDEF || (boolean.u.b && !api__jinja_truthy(x)) ? use : x;
        return 0;
    }
    if (id == F_JOIN) {
        jinja_value sep = option(args, nargs, 0, kw, "separator", JV_STR("", 0));
        if (sep.kind != V_STR) return api__jinja_fail(rt, API_CHAT_ERENDER, "join's separator must be a string");
        if (x.kind != V_STR && x.kind != V_ARRAY) return bad_type(rt, id, x);
        return join(rt, x, sep, out);
    }
    if (id == F_INT || id == F_FLOAT) {
        jinja_value dflt = option(args, nargs, 0, kw, "default", JV_NUM(id == F_INT ? V_INT : V_FLOAT, 0));
        if (x.kind == V_INT || x.kind == V_FLOAT) return *out = x, 0;
        if (x.kind == V_BOOL) return *out = JV_NUM(id == F_INT ? V_INT : V_FLOAT, x.u.b), 0;
        if (x.kind != V_STR) return bad_type(rt, id, x);
        double v = api__jinja_js_number(x.u.s.p, x.u.s.n, id == F_INT ? 1 : 2);
        *out = isnan(v) ? dflt : JV_NUM(id == F_INT ? V_INT : V_FLOAT, v);
        return 0;
    }
    if (x.kind == V_LOOP && api__jinja_loop_object(rt, x, &x) != 0) return -1;
    if (x.kind == V_ARRAY && (id == F_SELECTATTR || id == F_REJECTATTR))
        return select_items(rt, id, x, args, nargs, out);
    if (x.kind == V_ARRAY && id == F_MAP) return map_items(rt, x, kw, out);
    if (x.kind == V_STR && id == F_REPLACE) {
        if (nargs < 2) return api__jinja_fail(rt, API_CHAT_ERENDER, "replace takes two strings");
        return api__jinja_replace(rt, x, args[0], args[1], option(args, nargs, 2, kw, "count", JV(V_NONE)), out);
    }
    if (x.kind == V_OBJECT && (id == F_ITEMS || id == F_KEYS || id == F_VALUES))
        return api__jinja_object_method(rt, id == F_ITEMS ? FN_ITEMS : id == F_KEYS ? FN_KEYS : FN_VALUES, x.u.obj,
                                        args, nargs, out);
    return bad_type(rt, id, x);
}

int api__jinja_filter(jinja_rt *rt, int id, int call, jinja_value x, const jinja_value *args, size_t nargs,
                      const jinja_object *kw, jinja_value *out) {
    return call ? called(rt, id, x, args, nargs, kw, out) : bare(rt, id, x, out);
}
