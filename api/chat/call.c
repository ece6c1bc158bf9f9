/* call.c - the builtin functions a template can call: the globals
 * raise_exception, range, namespace and strftime_now, a string's methods
 * (strip, split, startswith, ...) and an object's (get, items, keys,
 * values). As in @huggingface/jinja, strip, lstrip and rstrip take no
 * characters: they drop whitespace whatever they are given. */
#include "api/chat/jinja.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* recv.name as a function bound to recv: 1, or 0 when recv has no such
 * method, -1 on failure. */
int api__jinja_method(jinja_rt *rt, jinja_value recv, const char *name, size_t n, jinja_value *out) {
    int kind = recv.kind == V_STR ? STRING : recv.kind == V_OBJECT ? OBJECT : 0;
    int fn = kind ? api__jinja_func_id(kind, name, n) : -1;
    if (fn < 0) return 0;
    jinja_value *self = api__jinja_alloc(rt, sizeof *self);
    if (self == NULL) return -1;
    *self = recv;
    *out = (jinja_value){.kind = V_FUNC, .fn = fn, .u.self = self};
    return 1;
}

/* ==== Globals ==== */

static int raise(jinja_rt *rt, const jinja_value *args, size_t nargs) {
    jinja_buf b = {0};
    jinja_value m = nargs ? args[0] : JV(V_UNDEF); /* JavaScript's Error(m): none and undefined say nothing */
    if (api__jinja_text(rt, &b, m, TX_CONCAT) != 0) {
        free(b.p);
        return -1;
    }
    api__jinja_fail(rt, API_CHAT_ERAISE, "%.*s", (int)(b.n < 4000 ? b.n : 4000), b.p ? b.p : "");
    free(b.p);
    return -1;
}

/* range(stop), range(start, stop), range(start, stop, step). */
static int range(jinja_rt *rt, const jinja_value *args, size_t nargs, jinja_value *out) {
    double a[3] = {0, 0, 1};
    if (nargs < 1 || nargs > 3) return api__jinja_fail(rt, API_CHAT_ERENDER, "range() takes 1 to 3 numbers");
    for (size_t i = 0; i < nargs; i++) {
        if (args[i].kind != V_INT && args[i].kind != V_FLOAT)
            return api__jinja_fail(rt, API_CHAT_ERENDER, "range() takes numbers");
        a[nargs == 1 ? 1 : i] = args[i].u.num;
    }
    if (a[2] == 0) return api__jinja_fail(rt, API_CHAT_ERENDER, "range() step must not be zero");
    jinja_array *r = api__jinja_array_new(rt, 0);
    if (r == NULL) return -1;
    for (double i = a[0]; a[2] > 0 ? i < a[1] : i > a[1]; i += a[2]) {
        if (r->n >= rt->lim.max_iterations)
            return api__jinja_fail(rt, API_CHAT_ELIMIT, "range() makes more than %zu items", rt->lim.max_iterations);
        if (api__jinja_array_push(rt, r, JV_NUM(i == floor(i) ? V_INT : V_FLOAT, i)) != 0) return -1;
    }
    *out = (jinja_value){.kind = V_ARRAY, .u.arr = r};
    return 0;
}

/* namespace(), namespace(a=1), namespace({'a': 1}), namespace([('a', 1)]). */
static int namespace(jinja_rt *rt, const jinja_value *args, size_t nargs, const jinja_object *kw,
                     jinja_value *out) {
    jinja_object *o = api__jinja_object_new(rt);
    if (o == NULL) return -1;
    if (nargs > 1) return api__jinja_fail(rt, API_CHAT_ERENDER, "namespace() takes at most 1 argument");
    if (nargs == 1 && args[0].kind == V_OBJECT) {
        for (size_t i = 0; i < args[0].u.obj->n; i++) {
            const jinja_entry *e = &args[0].u.obj->e[i];
            if (api__jinja_object_set(rt, o, e->k, e->kn, e->v) != 0) return -1;
        }
    } else if (nargs == 1 && args[0].kind == V_ARRAY) {
        for (size_t i = 0; i < args[0].u.arr->n; i++) {
            jinja_value pair = args[0].u.arr->v[i];
            if (pair.kind != V_ARRAY || pair.u.arr->n != 2 || pair.u.arr->v[0].kind != V_STR)
                return api__jinja_fail(rt, API_CHAT_ERENDER, "namespace() takes [key, value] pairs");
            jinja_value k = pair.u.arr->v[0];
            if (api__jinja_object_set(rt, o, k.u.s.p, k.u.s.n, pair.u.arr->v[1]) != 0) return -1;
        }
    } else if (nargs == 1) {
        return api__jinja_fail(rt, API_CHAT_ERENDER, "namespace() takes an object or pairs");
    }
    for (size_t i = 0; kw && i < kw->n; i++)
        if (api__jinja_object_set(rt, o, kw->e[i].k, kw->e[i].kn, kw->e[i].v) != 0) return -1;
    *out = (jinja_value){.kind = V_NS, .u.obj = o};
    return 0;
}

/* strftime_now(format): %Y %m %d %b %B %H %M %% of the render's clock in
 * local time, English month names; other % sequences stay as they are. */
static int strftime_now(jinja_rt *rt, const jinja_value *args, size_t nargs, jinja_value *out) {
    static const char *const months[] = {"January", "February", "March", "April", "May", "June", "July",
                                         "August", "September", "October", "November", "December"};
    if (nargs < 1 || args[0].kind != V_STR)
        return api__jinja_fail(rt, API_CHAT_ERENDER, "strftime_now() takes a format");
    time_t now = rt->lim.now ? (time_t)rt->lim.now : time(NULL);
    struct tm tm;
    if (localtime_r(&now, &tm) == NULL) return api__jinja_fail(rt, API_CHAT_ERENDER, "no local time");
    jinja_buf b = {0};
    const char *f = args[0].u.s.p;
    int rc = 0;
    for (size_t i = 0, n = args[0].u.s.n; rc == 0 && i < n; i++) {
        char part[32];
        const char *c = i + 1 < n && f[i] == '%' ? strchr("YmdbBHM%", f[i + 1]) : NULL;
        if (c == NULL || *c == '\0') {
            rc = api__jinja_add(rt, &b, f + i, 1);
            continue;
        }
        i++;
        switch (*c) {
        case 'Y': snprintf(part, sizeof part, "%d", tm.tm_year + 1900); break;
        case 'm': snprintf(part, sizeof part, "%02d", tm.tm_mon + 1); break;
        case 'd': snprintf(part, sizeof part, "%02d", tm.tm_mday); break;
        case 'b': snprintf(part, sizeof part, "%.3s", months[tm.tm_mon]); break;
        case 'B': snprintf(part, sizeof part, "%s", months[tm.tm_mon]); break;
        case 'H': snprintf(part, sizeof part, "%02d", tm.tm_hour); break;
        case 'M': snprintf(part, sizeof part, "%02d", tm.tm_min); break;
        default: snprintf(part, sizeof part, "%%"); break;
        }
        rc = api__jinja_add(rt, &b, part, strlen(part));
    }
    if (rc == 0) return api__jinja_take(rt, &b, out);
    free(b.p);
    return -1;
}

/* ==== Methods ==== */

static jinja_value arg(const jinja_value *args, size_t nargs, size_t i) {
    return i < nargs ? args[i] : JV(V_UNDEF);
}

static int string_method(jinja_rt *rt, int fn, jinja_value s, const jinja_value *args, size_t nargs,
                         const jinja_object *kw, jinja_value *out) {
    switch (fn) {
    case FN_STRIP:
    case FN_LSTRIP:
    case FN_RSTRIP:
        api__jinja_trim(&s.u.s.p, &s.u.s.n, fn != FN_RSTRIP, fn != FN_LSTRIP);
        *out = s;
        return 0;
    case FN_STARTSWITH:
    case FN_ENDSWITH:
        if (nargs < 1) return api__jinja_fail(rt, API_CHAT_ERENDER, "%s() takes an argument", api__jinja_func_name(fn));
        return api__jinja_affix(rt, s, args[0], fn == FN_ENDSWITH, out);
    case FN_SPLIT:
        return api__jinja_split(rt, s, arg(args, nargs, 0), arg(args, nargs, 1), out);
    case FN_REPLACE: {
        if (nargs < 2) return api__jinja_fail(rt, API_CHAT_ERENDER, "replace() takes two strings");
        const jinja_value *count = kw ? api__jinja_object_get(kw, "count", 5) : NULL;
        return api__jinja_replace(rt, s, args[0], args[1], nargs > 2 ? args[2] : count ? *count : JV(V_NONE), out);
    }
    default:
        return api__jinja_case(rt, s, fn, out);
    }
}

/* obj.get(key, default), obj.items(), obj.keys(), obj.values(). */
int api__jinja_object_method(jinja_rt *rt, int fn, const jinja_object *o, const jinja_value *args, size_t nargs,
                             jinja_value *out) {
    if (fn == FN_GET) {
        if (nargs < 1 || args[0].kind != V_STR)
            return api__jinja_fail(rt, API_CHAT_ERENDER, "get() takes a string key");
        const jinja_value *v = api__jinja_object_get(o, args[0].u.s.p, args[0].u.s.n);
        *out = v ? *v : nargs > 1 ? args[1] : JV(V_NONE);
        return 0;
    }
    jinja_array *a = api__jinja_array_new(rt, o->n);
    if (a == NULL) return -1;
    for (size_t i = 0; i < o->n; i++) {
        jinja_value key = JV_STR(o->e[i].k, o->e[i].kn);
        if (fn == FN_ITEMS) {
            jinja_array *pair = api__jinja_array_new(rt, 2);
            if (pair == NULL) return -1;
            pair->v[0] = key;
            pair->v[1] = o->e[i].v;
            pair->n = 2;
            key = (jinja_value){.kind = V_ARRAY, .u.arr = pair};
        }
        a->v[a->n++] = fn == FN_VALUES ? o->e[i].v : key;
    }
    *out = (jinja_value){.kind = V_ARRAY, .u.arr = a};
    return 0;
}

int api__jinja_call(jinja_rt *rt, jinja_value f, const jinja_value *args, size_t nargs, const jinja_object *kw,
                    jinja_value *out) {
    if (f.kind != V_FUNC)
        return api__jinja_fail(rt, API_CHAT_ERENDER, "cannot call something that is not a function");
    if (kw && kw->n && f.fn != FN_NAMESPACE && f.fn != FN_REPLACE)
        return api__jinja_fail(rt, API_CHAT_ERENDER, "%s() takes no keyword arguments", api__jinja_func_name(f.fn));
    switch (f.fn) {
    case FN_RAISE: return raise(rt, args, nargs);
    case FN_RANGE: return range(rt, args, nargs, out);
    case FN_NAMESPACE: return namespace(rt, args, nargs, kw, out);
    case FN_STRFTIME: return strftime_now(rt, args, nargs, out);
    case FN_GET:
    case FN_ITEMS:
    case FN_KEYS:
    case FN_VALUES: return api__jinja_object_method(rt, f.fn, f.u.self->u.obj, args, nargs, out);
    default: return string_method(rt, f.fn, *f.u.self, args, nargs, kw, out);
    }
}
