/* eval.c - expressions to values, with @huggingface/jinja's semantics where
 * they differ from Python's Jinja: a missing attribute and an attribute of
 * undefined are undefined (no error), + joins a string with a number, and
 * undefined or none in arithmetic or ~ is an error. */
#include "api/chat/jinja.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char *const op_names[] = {"", "+", "-", "~", "*", "/", "//", "%", "**", "==", "!=", "<",
                                       ">", "<=", ">=", "in", "not in", "and", "or", "not", "-", "+"};

/* ==== Members, indexes, slices ==== */

/* An index into n items, negative from the end: SIZE_MAX when outside
 * (JavaScript's at(): NaN is 0). */
static size_t index_of(double i, size_t n) {
    if (isnan(i)) i = 0;
    if (i < 0) i += (double)n;
    return i >= 0 && i < (double)n ? (size_t)i : SIZE_MAX;
}

/* The byte offset of code point i of s. */
static size_t offset_of(jinja_value s, size_t i) {
    size_t o = 0;
    for (; o < s.u.s.n && i > 0; i--)
        do o++; while (o < s.u.s.n && ((unsigned char)s.u.s.p[o] & 0xC0) == 0x80);
    return o;
}

static int array_or_string_member(jinja_rt *rt, jinja_value obj, jinja_value key, jinja_value *out) {
    int str = obj.kind == V_STR;
    size_t n = str ? api__jinja_utf8_count(obj.u.s.p, obj.u.s.n) : obj.u.arr->n;
    if (key.kind == V_INT) {
        size_t i = index_of(key.u.num, n);
        if (i == SIZE_MAX) *out = JV(V_UNDEF);
        else if (!str) *out = obj.u.arr->v[i];
        else {
            size_t a = offset_of(obj, i), b = offset_of(obj, i + 1);
            *out = JV_STR(obj.u.s.p + a, b - a);
        }
        return 0;
    }
    if (key.kind != V_STR)
        return api__jinja_fail(rt, API_CHAT_ERENDER, "a list or string index must be a number or a name");
    *out = JV(V_UNDEF);
    if (key.u.s.n == 6 && memcmp(key.u.s.p, "length", 6) == 0) *out = JV_NUM(V_INT, (double)n);
    else if (str) return api__jinja_method(rt, obj, key.u.s.p, key.u.s.n, out) < 0 ? -1 : 0;
    return 0;
}

/* obj.key, obj[key]. */
static int member(jinja_rt *rt, jinja_value obj, jinja_value key, jinja_value *out) {
    if (obj.kind == V_LOOP && key.kind == V_STR && api__jinja_loop_get(obj, key.u.s.p, key.u.s.n, out)) return 0;
    if (obj.kind == V_LOOP && api__jinja_loop_object(rt, obj, &obj) != 0) return -1;
    if (obj.kind == V_ARRAY || obj.kind == V_STR) return array_or_string_member(rt, obj, key, out);
    if (key.kind != V_STR) return api__jinja_fail(rt, API_CHAT_ERENDER, "an attribute name must be a string");
    *out = JV(V_UNDEF);
    if (obj.kind != V_OBJECT && obj.kind != V_NS) return 0;
    const jinja_value *v = api__jinja_object_get(obj.u.obj, key.u.s.p, key.u.s.n);
    if (v) *out = *v;
    else if (obj.kind == V_OBJECT && api__jinja_method(rt, obj, key.u.s.p, key.u.s.n, out) < 0) return -1;
    return 0;
}

/* Python's slice bounds: start, stop (kept) and step of n items. */
static void bounds(double *start, double *stop, double step, int has_start, int has_stop, size_t count) {
    double n = (double)count;
    if (step >= 0) {
        *start = !has_start ? 0 : *start < 0 ? fmax(n + *start, 0) : fmin(*start, n);
        *stop = !has_stop ? n : *stop < 0 ? fmax(n + *stop, 0) : fmin(*stop, n);
    } else {
        *start = !has_start ? n - 1 : *start < 0 ? fmax(n + *start, -1) : fmin(*start, n - 1);
        *stop = !has_stop ? -1 : *stop < -1 ? fmax(n + *stop, -1) : fmin(*stop, n - 1);
    }
}

/* The byte offsets of s's code points, and of its end: n + 1 of them. */
static size_t *offsets(jinja_value s, size_t n) {
    size_t *o = malloc((n + 1) * sizeof *o), k = 0;
    if (o == NULL) return NULL;
    for (size_t i = 0; i < s.u.s.n; i++)
        if (((unsigned char)s.u.s.p[i] & 0xC0) != 0x80) o[k++] = i;
    o[k] = s.u.s.n;
    return o;
}

static int slice(jinja_rt *rt, jinja_value obj, const jinja_value part[3], jinja_value *out) {
    for (int i = 0; i < 3; i++)
        if (part[i].kind != V_INT && part[i].kind != V_UNDEF)
            return api__jinja_fail(rt, API_CHAT_ERENDER, "slice bounds must be integers");
    if (obj.kind != V_ARRAY && obj.kind != V_STR)
        return api__jinja_fail(rt, API_CHAT_ERENDER, "only lists and strings slice");
    int str = obj.kind == V_STR;
    size_t n = str ? api__jinja_utf8_count(obj.u.s.p, obj.u.s.n) : obj.u.arr->n;
    double start = part[0].u.num, stop = part[1].u.num, step = part[2].kind == V_INT ? part[2].u.num : 1;
    int nan = (part[0].kind == V_INT && isnan(start)) || (part[1].kind == V_INT && isnan(stop));
    bounds(&start, &stop, step, part[0].kind == V_INT, part[1].kind == V_INT, n);
    double dir = nan ? 0 : step > 0 ? 1 : step < 0 ? -1 : 0; /* a NaN bound: nothing, as there */
    size_t *at = str ? offsets(obj, n) : NULL;
    jinja_array *a = str ? NULL : api__jinja_array_new(rt, 0);
    jinja_buf b = {0};
    int rc = (str ? at != NULL : a != NULL) ? 0 : -1;
    if (str && at == NULL) api__jinja_fail(rt, API_CHAT_ENOMEM, "out of memory");
    for (double i = start; rc == 0 && dir * i < dir * stop; i += step) {
        size_t k = (size_t)i;
        rc = str ? api__jinja_add(rt, &b, obj.u.s.p + at[k], at[k + 1] - at[k])
                 : api__jinja_array_push(rt, a, obj.u.arr->v[k]);
    }
    free(at);
    if (rc == 0 && str) return api__jinja_take(rt, &b, out);
    free(b.p);
    *out = (jinja_value){.kind = V_ARRAY, .u.arr = a};
    return rc;
}

/* ==== Operators ==== */

static int is_num(jinja_value v) { return v.kind == V_INT || v.kind == V_FLOAT; }

static int nullish(jinja_value v) { return v.kind == V_UNDEF || v.kind == V_NONE; }
static int container(jinja_value v) { return v.kind >= V_ARRAY; }

/* JavaScript's == on the values' JavaScript values: none == undefined,
 * numbers against strings and booleans as numbers, and a list or object
 * against a string, number or boolean as its text (as + writes it: "1,2",
 * "[object Map]"). 1 or 0; -1 when that text cannot be made. */
static int loose_eq(jinja_rt *rt, jinja_value a, jinja_value b) {
    if (nullish(a) || nullish(b)) return nullish(a) && nullish(b);
    if (container(a) && container(b)) return api__jinja_strict_eq(a, b);
    if (container(a) || container(b)) {
        if (a.kind == V_FUNC || b.kind == V_FUNC) return 0;
        jinja_buf text = {0};
        jinja_value c = container(a) ? a : b;
        if (api__jinja_text(rt, &text, c, TX_CONCAT) != 0 || api__jinja_take(rt, &text, &c) != 0) {
            free(text.p);
            return -1;
        }
        return container(a) ? loose_eq(rt, c, b) : loose_eq(rt, a, c);
    }
    if (a.kind == V_BOOL) a = JV_NUM(V_INT, a.u.b);
    if (b.kind == V_BOOL) b = JV_NUM(V_INT, b.u.b);
    if (a.kind == V_STR && b.kind == V_STR) return api__jinja_strict_eq(a, b);
    double x = a.kind == V_STR ? api__jinja_js_number(a.u.s.p, a.u.s.n, 0) : a.u.num;
    double y = b.kind == V_STR ? api__jinja_js_number(b.u.s.p, b.u.s.n, 0) : b.u.num;
    return x == y;
}

/* JavaScript's arithmetic: 1 / 0 is Infinity, 0 / 0 and 1 % 0 are NaN. */
static int arith(int op, jinja_value l, jinja_value r, jinja_value *out) {
    double a = l.u.num, b = r.u.num, x;
    int kind = l.kind == V_FLOAT || r.kind == V_FLOAT ? V_FLOAT : V_INT;
    switch (op) {
    case OP_ADD: x = a + b; break;
    case OP_SUB: x = a - b; break;
    case OP_MUL: x = a * b; break;
    case OP_DIV: x = a / b; kind = V_FLOAT; break;
    case OP_FLOORDIV: x = floor(a / b); break;
    case OP_MOD: x = fmod(a, b); break;
    case OP_LT: return *out = JV_BOOL(a < b), 0;
    case OP_GT: return *out = JV_BOOL(a > b), 0;
    case OP_LE: return *out = JV_BOOL(a <= b), 0;
    default: return *out = JV_BOOL(a >= b), 0;
    }
    *out = JV_NUM(kind, x);
    return 0;
}

/* a ** b: booleans count as 0 and 1; a negative power is a float. */
static int power(jinja_rt *rt, jinja_value l, jinja_value r, jinja_value *out) {
    double a = l.kind == V_BOOL ? l.u.b : l.u.num, b = r.kind == V_BOOL ? r.u.b : r.u.num;
    if (a == 0 && b < 0) return api__jinja_fail(rt, API_CHAT_ERENDER, "0.0 cannot be raised to a negative power");
    double x = pow(a, b);
    if (!isfinite(x)) return api__jinja_fail(rt, API_CHAT_ERENDER, "a power that is not a finite real number");
    *out = JV_NUM(l.kind == V_FLOAT || r.kind == V_FLOAT || b < 0 ? V_FLOAT : V_INT, x);
    return 0;
}

static int join_text(jinja_rt *rt, jinja_value l, jinja_value r, jinja_value *out) {
    jinja_buf b = {0};
    if (api__jinja_text(rt, &b, l, TX_CONCAT) == 0 && api__jinja_text(rt, &b, r, TX_CONCAT) == 0)
        return api__jinja_take(rt, &b, out);
    free(b.p);
    return -1;
}

static int contains(jinja_value l, jinja_value r) {
    if (r.kind == V_ARRAY) {
        for (size_t i = 0; i < r.u.arr->n; i++)
            if (api__jinja_strict_eq(r.u.arr->v[i], l)) return 1;
        return 0;
    }
    if (r.kind == V_STR) return l.u.s.n == 0 || memmem(r.u.s.p, r.u.s.n, l.u.s.p, l.u.s.n) != NULL;
    return api__jinja_object_get(r.u.obj, l.u.s.p, l.u.s.n) != NULL;
}

/* Everything but and / or, in @huggingface/jinja's order of cases. */
static int binary(jinja_rt *rt, int op, jinja_value l, jinja_value r, jinja_value *out) {
    int num = (is_num(l) || l.kind == V_BOOL) && (is_num(r) || r.kind == V_BOOL), in = op == OP_IN || op == OP_NOTIN;
    if (op == OP_EQ || op == OP_NE) {
        int eq = loose_eq(rt, l, r);
        return eq < 0 ? -1 : (*out = JV_BOOL(eq == (op == OP_EQ)), 0);
    }
    if (r.kind == V_UNDEF && in) return *out = JV_BOOL(op == OP_NOTIN), 0;
    if (l.kind == V_UNDEF || r.kind == V_UNDEF)
        return api__jinja_fail(rt, API_CHAT_ERENDER, "cannot apply %s to undefined", op_names[op]);
    if (l.kind == V_NONE || r.kind == V_NONE)
        return api__jinja_fail(rt, API_CHAT_ERENDER, "cannot apply %s to none", op_names[op]);
    if (op == OP_CONCAT) return join_text(rt, l, r, out);
    if (op == OP_POW && num) return power(rt, l, r, out);
    if (is_num(l) && is_num(r) && !in && op != OP_POW) return arith(op, l, r, out);
    if (l.kind == V_ARRAY && r.kind == V_ARRAY && op == OP_ADD) {
        jinja_array *a = api__jinja_array_new(rt, l.u.arr->n + r.u.arr->n);
        if (a == NULL) return -1;
        if (l.u.arr->n) memcpy(a->v, l.u.arr->v, l.u.arr->n * sizeof *a->v);
        if (r.u.arr->n) memcpy(a->v + l.u.arr->n, r.u.arr->v, r.u.arr->n * sizeof *a->v);
        a->n = l.u.arr->n + r.u.arr->n;
        return *out = (jinja_value){.kind = V_ARRAY, .u.arr = a}, 0;
    }
    if (in && r.kind == V_LOOP && api__jinja_loop_object(rt, r, &r) != 0) return -1;
    int member = in && ((r.kind == V_ARRAY && l.kind != V_ARRAY) ||
                        (l.kind == V_STR && (r.kind == V_STR || r.kind == V_OBJECT)));
    if (member) return *out = JV_BOOL(contains(l, r) == (op == OP_IN)), 0;
    if ((l.kind == V_STR || r.kind == V_STR) && op == OP_ADD) return join_text(rt, l, r, out);
    return api__jinja_fail(rt, API_CHAT_ERENDER, "cannot apply %s to %s and %s", op_names[op],
                           l.kind == V_STR ? "a string" : "this value", r.kind == V_STR ? "a string" : "this value");
}

static int unary(jinja_rt *rt, int op, jinja_value v, jinja_value *out) {
    if (op == OP_NOT) return *out = JV_BOOL(!api__jinja_truthy(v)), 0;
    if (!is_num(v) && v.kind != V_BOOL)
        return api__jinja_fail(rt, API_CHAT_ERENDER, "a sign before something not a number");
    double x = v.kind == V_BOOL ? v.u.b : v.u.num;
    *out = JV_NUM(v.kind == V_FLOAT ? V_FLOAT : V_INT, op == OP_NEG ? -x : x);
    return 0;
}

/* ==== Expressions ==== */

/* The arguments of a call or filter: positional values into *args (arena),
 * keyword ones into *kw (NULL when none). */
static int arguments(jinja_rt *rt, jinja_scope *sc, const jinja_node *list, jinja_value **args, size_t *n,
                     jinja_object **kw) {
    size_t count = 0;
    for (const jinja_node *a = list; a; a = a->next) count += a->kind != N_KWARG;
    *args = api__jinja_alloc(rt, (count + 1) * sizeof **args);
    *n = 0;
    *kw = NULL;
    if (*args == NULL) return -1;
    for (const jinja_node *a = list; a; a = a->next)
        if (a->kind != N_KWARG && api__jinja_eval(rt, sc, a, &(*args)[(*n)++]) != 0) return -1;
    for (const jinja_node *a = list; a; a = a->next) {
        if (a->kind != N_KWARG) continue;
        jinja_value v;
        if ((*kw == NULL && (*kw = api__jinja_object_new(rt)) == NULL) || api__jinja_eval(rt, sc, a->a, &v) != 0)
            return -1;
        if (api__jinja_object_get(*kw, a->s, a->n))
            return api__jinja_fail(rt, API_CHAT_ERENDER, "the keyword argument '%.*s' is given twice", (int)a->n, a->s);
        if (api__jinja_object_set(rt, *kw, a->s, a->n, v) != 0) return -1;
    }
    return 0;
}

static int list(jinja_rt *rt, jinja_scope *sc, const jinja_node *n, jinja_value *out) {
    jinja_array *a = api__jinja_array_new(rt, 0);
    if (a == NULL) return -1;
    a->tuple = n->kind == N_TUPLE;
    for (const jinja_node *e = n->a; e; e = e->next) {
        jinja_value v;
        if (api__jinja_eval(rt, sc, e, &v) != 0 || api__jinja_array_push(rt, a, v) != 0) return -1;
    }
    *out = (jinja_value){.kind = V_ARRAY, .u.arr = a};
    return 0;
}

static int dict(jinja_rt *rt, jinja_scope *sc, const jinja_node *n, jinja_value *out) {
    jinja_object *o = api__jinja_object_new(rt);
    if (o == NULL) return -1;
    for (const jinja_node *e = n->a; e; e = e->next) {
        jinja_value k, v;
        if (api__jinja_eval(rt, sc, e->a, &k) != 0) return -1;
        if (k.kind != V_STR) return api__jinja_fail(rt, API_CHAT_ERENDER, "dict keys must be strings");
        if (api__jinja_eval(rt, sc, e->b, &v) != 0 || api__jinja_object_set(rt, o, k.u.s.p, k.u.s.n, v) != 0)
            return -1;
    }
    *out = (jinja_value){.kind = V_OBJECT, .u.obj = o};
    return 0;
}

static int access(jinja_rt *rt, jinja_scope *sc, const jinja_node *n, jinja_value *out) {
    jinja_value obj, key, part[3];
    if (api__jinja_eval(rt, sc, n->a, &obj) != 0) return -1;
    if (n->kind == N_ATTR) {
        key = n->flags ? JV_NUM(V_INT, n->num) : JV_STR(n->s, n->n);
        return member(rt, obj, key, out);
    }
    if (n->kind == N_INDEX) return api__jinja_eval(rt, sc, n->b, &key) != 0 ? -1 : member(rt, obj, key, out);
    const jinja_node *bound[3] = {n->b, n->c, n->d};
    for (int i = 0; i < 3; i++) {
        part[i] = JV(V_UNDEF);
        if (bound[i] && api__jinja_eval(rt, sc, bound[i], &part[i]) != 0) return -1;
    }
    return slice(rt, obj, part, out);
}

static int apply(jinja_rt *rt, jinja_scope *sc, const jinja_node *n, jinja_value *out) {
    jinja_value x, *args;
    size_t nargs;
    jinja_object *kw;
    if (n->kind == N_CALL) {
        if (arguments(rt, sc, n->b, &args, &nargs, &kw) != 0 || api__jinja_eval(rt, sc, n->a, &x) != 0) return -1;
        return api__jinja_call(rt, x, args, nargs, kw, out);
    }
    if (api__jinja_eval(rt, sc, n->a, &x) != 0) return -1;
    if (n->kind == N_TEST) {
        int r = api__jinja_test(rt, n->op, x, JV(V_UNDEF));
        return r < 0 ? -1 : (*out = JV_BOOL(r != n->flags), 0);
    }
    if (arguments(rt, sc, n->b, &args, &nargs, &kw) != 0) return -1;
    return api__jinja_filter(rt, n->op, n->flags, x, args, nargs, kw, out);
}

int api__jinja_eval(jinja_rt *rt, jinja_scope *sc, const jinja_node *n, jinja_value *out) {
    jinja_value l, r;
    rt->line = n->line;
    switch (n->kind) {
    case N_STR: return *out = JV_STR(n->s, n->n), 0;
    case N_INT: return *out = JV_NUM(V_INT, n->num), 0;
    case N_FLOAT: return *out = JV_NUM(V_FLOAT, n->num), 0;
    case N_NAME: return *out = api__jinja_lookup(sc, n->s, n->n), 0;
    case N_LIST:
    case N_TUPLE: return list(rt, sc, n, out);
    case N_DICT: return dict(rt, sc, n, out);
    case N_ATTR:
    case N_INDEX:
    case N_SLICE: return access(rt, sc, n, out);
    case N_CALL:
    case N_FILTER:
    case N_TEST: return apply(rt, sc, n, out);
    case N_UNARY: return api__jinja_eval(rt, sc, n->a, &l) != 0 ? -1 : unary(rt, n->op, l, out);
    case N_COND:
        if (api__jinja_eval(rt, sc, n->b, &l) != 0) return -1;
        if (api__jinja_truthy(l)) return api__jinja_eval(rt, sc, n->a, out);
        return n->c ? api__jinja_eval(rt, sc, n->c, out) : (*out = JV(V_UNDEF), 0);
    case N_BINARY:
        if (api__jinja_eval(rt, sc, n->a, &l) != 0) return -1;
        if (n->op == OP_AND || n->op == OP_OR) {
            if (api__jinja_truthy(l) == (n->op == OP_OR)) return *out = l, 0;
            return api__jinja_eval(rt, sc, n->b, out);
        }
        if (api__jinja_eval(rt, sc, n->b, &r) != 0) return -1;
        rt->line = n->line;
        return binary(rt, n->op, l, r, out);
    default: return api__jinja_fail(rt, API_CHAT_ERENDER, "a statement where a value belongs");
    }
}
