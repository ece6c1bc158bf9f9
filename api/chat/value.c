/* value.c - values: arrays and objects in the render's arena, scopes,
 * truthiness and equality as @huggingface/jinja has them (JavaScript's ==
 * and ===), the `loop` variable, and the context's JSON made into values. */
#include "api/chat/jinja.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ==== Arrays and objects ==== */

jinja_array *api__jinja_array_new(jinja_rt *rt, size_t cap) {
    jinja_array *a = api__jinja_alloc(rt, sizeof *a);
    if (a == NULL) return NULL;
    *a = (jinja_array){0};
    if (cap > SIZE_MAX / sizeof *a->v) return api__jinja_fail(rt, API_CHAT_ELIMIT, "too many items"), NULL;
    if (cap && (a->v = api__jinja_alloc(rt, cap * sizeof *a->v)) == NULL) return NULL;
    a->cap = cap;
    return a;
}

int api__jinja_array_push(jinja_rt *rt, jinja_array *a, jinja_value v) {
    if (a->n == a->cap) {
        size_t cap = a->cap ? a->cap * 2 : 8;
        if (cap > SIZE_MAX / sizeof *a->v) return api__jinja_fail(rt, API_CHAT_ELIMIT, "too many items");
        jinja_value *p = api__jinja_alloc(rt, cap * sizeof *p);
        if (p == NULL) return -1;
        if (a->n) memcpy(p, a->v, a->n * sizeof *p);
        a->v = p;
        a->cap = cap;
    }
    a->v[a->n++] = v;
    return 0;
}

jinja_object *api__jinja_object_new(jinja_rt *rt) {
    jinja_object *o = api__jinja_alloc(rt, sizeof *o);
    if (o) *o = (jinja_object){0};
    return o;
}

const jinja_value *api__jinja_object_get(const jinja_object *o, const char *k, size_t kn) {
    for (size_t i = 0; i < o->n; i++)
        if (o->e[i].kn == kn && memcmp(o->e[i].k, k, kn) == 0) return &o->e[i].v;
    return NULL;
}

/* Sets k (a new key goes last, as in a JavaScript Map). */
int api__jinja_object_set(jinja_rt *rt, jinja_object *o, const char *k, size_t kn, jinja_value v) {
    jinja_value *old = (jinja_value *)api__jinja_object_get(o, k, kn);
    if (old) {
        *old = v;
        return 0;
    }
    if (o->n == o->cap) {
        size_t cap = o->cap ? o->cap * 2 : 8;
        if (cap > SIZE_MAX / sizeof *o->e) return api__jinja_fail(rt, API_CHAT_ELIMIT, "too many keys");
        jinja_entry *e = api__jinja_alloc(rt, cap * sizeof *e);
        if (e == NULL) return -1;
        if (o->n) memcpy(e, o->e, o->n * sizeof *e);
        o->e = e;
        o->cap = cap;
    }
    o->e[o->n++] = (jinja_entry){k, kn, v};
    return 0;
}

/* ==== Scopes ==== */

jinja_value api__jinja_lookup(const jinja_scope *s, const char *name, size_t n) {
    for (; s; s = s->parent) {
        const jinja_value *v = api__jinja_object_get(&s->vars, name, n);
        if (v) return *v;
    }
    return JV(V_UNDEF);
}

int api__jinja_scope_set(jinja_rt *rt, jinja_scope *s, const char *name, size_t n, jinja_value v) {
    return api__jinja_object_set(rt, &s->vars, name, n, v);
}

/* ==== The loop variable ==== */

static const char *const loop_fields[] = {"index", "index0", "revindex", "revindex0", "first",
                                          "last", "length", "previtem", "nextitem"};

static jinja_value loop_field(jinja_value loop, int f) {
    size_t i = loop.u.loop.i, n = loop.u.loop.lp->n;
    const jinja_value *items = loop.u.loop.lp->items;
    switch (f) {
    case 0: return JV_NUM(V_INT, (double)i + 1);
    case 1: return JV_NUM(V_INT, (double)i);
    case 2: return JV_NUM(V_INT, (double)(n - i));
    case 3: return JV_NUM(V_INT, (double)(n - i) - 1);
    case 4: return JV_BOOL(i == 0);
    case 5: return JV_BOOL(i + 1 == n);
    case 6: return JV_NUM(V_INT, (double)n);
    case 7: return i > 0 ? items[i - 1] : JV(V_UNDEF);
    default: return i + 1 < n ? items[i + 1] : JV(V_UNDEF);
    }
}

/* loop.name: 1 and *out when name is one of the loop's fields. */
int api__jinja_loop_get(jinja_value loop, const char *name, size_t n, jinja_value *out) {
    for (int f = 0; f < 9; f++)
        if (strlen(loop_fields[f]) == n && memcmp(loop_fields[f], name, n) == 0) {
            *out = loop_field(loop, f);
            return 1;
        }
    return 0;
}

/* The loop variable as the object @huggingface/jinja makes of it. */
int api__jinja_loop_object(jinja_rt *rt, jinja_value loop, jinja_value *out) {
    jinja_object *o = api__jinja_object_new(rt);
    if (o == NULL) return -1;
    for (int f = 0; f < 9; f++)
        if (api__jinja_object_set(rt, o, loop_fields[f], strlen(loop_fields[f]), loop_field(loop, f)) != 0)
            return -1;
    *out = (jinja_value){.kind = V_OBJECT, .u.obj = o};
    return 0;
}

/* ==== Truth and equality ==== */

/* @huggingface/jinja's __bool__: empty strings, arrays and objects, 0, NaN,
 * none and undefined are false; a namespace or a function is true. */
int api__jinja_truthy(jinja_value v) {
    switch (v.kind) {
    case V_BOOL: return v.u.b;
    case V_INT:
    case V_FLOAT: return v.u.num != 0 && !isnan(v.u.num);
    case V_STR: return v.u.s.n > 0;
    case V_ARRAY: return v.u.arr->n > 0;
    case V_OBJECT: return v.u.obj->n > 0;
    case V_NS:
    case V_LOOP:
    case V_FUNC: return 1;
    default: return 0;
    }
}

static int is_number(jinja_value v) { return v.kind == V_INT || v.kind == V_FLOAT; }

/* Same container, same loop item, same bound builtin. */
static int same_object(jinja_value a, jinja_value b) {
    if (a.kind != b.kind) return 0;
    switch (a.kind) {
    case V_ARRAY: return a.u.arr == b.u.arr;
    case V_OBJECT:
    case V_NS: return a.u.obj == b.u.obj;
    case V_LOOP: return a.u.loop.lp == b.u.loop.lp && a.u.loop.i == b.u.loop.i;
    default: return a.fn == b.fn && a.u.self == b.u.self;
    }
}

/* JavaScript's ===. */
int api__jinja_strict_eq(jinja_value a, jinja_value b) {
    if (is_number(a) && is_number(b)) return a.u.num == b.u.num;
    if (a.kind != b.kind) return 0;
    switch (a.kind) {
    case V_UNDEF:
    case V_NONE: return 1;
    case V_BOOL: return a.u.b == b.u.b;
    case V_STR: return a.u.s.n == b.u.s.n && memcmp(a.u.s.p, b.u.s.p, a.u.s.n) == 0;
    default: return same_object(a, b);
    }
}

/* ==== The context's JSON ==== */

/* JavaScript puts the keys that are array indexes ("0", "17"; below
 * 2^32 - 1, no leading zero) first, ascending, then the rest in order. */
static int index_key(const char *k, size_t n, double *value) {
    if (n == 0 || n > 10 || (n > 1 && k[0] == '0')) return 0;
    double v = 0;
    for (size_t i = 0; i < n; i++) {
        if (k[i] < '0' || k[i] > '9') return 0;
        v = v * 10 + (k[i] - '0');
    }
    *value = v;
    return v < 4294967295.0;
}

static int from_json(jinja_rt *rt, const json_t *j, int depth, jinja_value *out);

typedef struct { double n; const char *key; const json_t *v; } index_entry;

static int by_index(const void *a, const void *b) {
    double x = ((const index_entry *)a)->n, y = ((const index_entry *)b)->n;
    return (x > y) - (x < y);
}

static int member(jinja_rt *rt, jinja_object *o, const char *key, const json_t *v, int depth) {
    jinja_value x;
    if (from_json(rt, v, depth, &x) != 0) return -1;
    return api__jinja_object_set(rt, o, key, strlen(key), x);
}

static int object_from_json(jinja_rt *rt, const json_t *j, int depth, jinja_value *out) {
    jinja_object *o = api__jinja_object_new(rt);
    index_entry *idx = api__jinja_alloc(rt, (json_object_size(j) + 1) * sizeof *idx);
    if (o == NULL || idx == NULL) return -1;
    size_t k = 0;
    const char *key;
    const json_t *v;
    json_object_foreach((json_t *)j, key, v)
        if (index_key(key, strlen(key), &idx[k].n)) idx[k].key = key, idx[k++].v = v;
    qsort(idx, k, sizeof *idx, by_index);
    for (size_t i = 0; i < k; i++)
        if (member(rt, o, idx[i].key, idx[i].v, depth + 1) != 0) return -1;
    double n;
    json_object_foreach((json_t *)j, key, v)
        if (!index_key(key, strlen(key), &n) && member(rt, o, key, v, depth + 1) != 0) return -1;
    *out = (jinja_value){.kind = V_OBJECT, .u.obj = o};
    return 0;
}

static int from_json(jinja_rt *rt, const json_t *j, int depth, jinja_value *out) {
    if (depth > rt->lim.max_depth)
        return api__jinja_fail(rt, API_CHAT_ELIMIT, "the context nests deeper than %d", rt->lim.max_depth);
    switch (json_typeof(j)) {
    case JSON_OBJECT: return object_from_json(rt, j, depth, out);
    case JSON_ARRAY: {
        jinja_array *a = api__jinja_array_new(rt, json_array_size(j));
        if (a == NULL) return -1;
        for (size_t i = 0; i < json_array_size(j); i++)
            if (from_json(rt, json_array_get(j, i), depth + 1, &a->v[a->n++]) != 0) return -1;
        *out = (jinja_value){.kind = V_ARRAY, .u.arr = a};
        return 0;
    }
    case JSON_STRING: *out = JV_STR(json_string_value(j), json_string_length(j)); return 0;
    case JSON_INTEGER: *out = JV_NUM(V_INT, (double)json_integer_value(j)); return 0;
    case JSON_REAL: { /* JavaScript has one number type: 2.0 is an integer */
        double x = json_real_value(j);
        *out = JV_NUM(x == floor(x) ? V_INT : V_FLOAT, x);
        return 0;
    }
    case JSON_TRUE: *out = JV_BOOL(1); return 0;
    case JSON_FALSE: *out = JV_BOOL(0); return 0;
    default: *out = JV(V_NONE); return 0;
    }
}

/* The context (a JSON object) into the scope's variables. */
int api__jinja_context(jinja_rt *rt, jinja_scope *s, const json_t *context) {
    jinja_value v;
    if (from_json(rt, context, 0, &v) != 0) return -1;
    for (size_t i = 0; i < v.u.obj->n; i++) {
        const jinja_entry *e = &v.u.obj->e[i];
        if (api__jinja_object_get(&s->vars, e->k, e->kn))
            return api__jinja_fail(rt, API_CHAT_EARG, "the context variable '%.*s' is a builtin name",
                                   (int)e->kn, e->k);
        if (api__jinja_scope_set(rt, s, e->k, e->kn, e->v) != 0) return -1;
    }
    return 0;
}
