/* exec.c - statements: text out, {{ }} out, if, for (its own scope, the
 * `loop` variable, else when nothing was iterated, `for x in xs if test`),
 * set (a name in the current scope, several names from a list, ns.attr on a
 * namespace). Scopes as @huggingface/jinja has them: a for loop's body sets
 * variables in the loop's scope, which the next iteration still sees and
 * the code after the loop does not. */
#include "api/chat/jinja.h"

#include <stdlib.h>

/* target = v: a name, or names taking a list's items (in a for loop, as
 * there, not a tuple's). */
static int assign(jinja_rt *rt, jinja_scope *sc, const jinja_node *target, jinja_value v, int in_loop) {
    if (target->kind == N_NAME) return api__jinja_scope_set(rt, sc, target->s, target->n, v);
    size_t want = 0;
    for (const jinja_node *t = target->a; t; t = t->next) want++;
    if (v.kind != V_ARRAY || (in_loop && v.u.arr->tuple))
        return api__jinja_fail(rt, API_CHAT_ERENDER, "cannot unpack something that is not a list");
    if (v.u.arr->n != want)
        return api__jinja_fail(rt, API_CHAT_ERENDER, "too %s items to unpack", v.u.arr->n < want ? "few" : "many");
    size_t i = 0;
    for (const jinja_node *t = target->a; t; t = t->next, i++)
        if (api__jinja_scope_set(rt, sc, t->s, t->n, v.u.arr->v[i]) != 0) return -1;
    return 0;
}

static int set(jinja_rt *rt, jinja_scope *sc, const jinja_node *n) {
    jinja_value v, ns;
    if (api__jinja_eval(rt, sc, n->b, &v) != 0) return -1;
    if (n->a->kind != N_ATTR) return assign(rt, sc, n->a, v, 0);
    if (api__jinja_eval(rt, sc, n->a->a, &ns) != 0) return -1;
    if (ns.kind != V_NS) return api__jinja_fail(rt, API_CHAT_ERENDER, "only a namespace's attributes can be set");
    return api__jinja_object_set(rt, ns.u.obj, n->a->s, n->a->n, v);
}

static int count_iteration(jinja_rt *rt) {
    if (++rt->iterations > rt->lim.max_iterations)
        return api__jinja_fail(rt, API_CHAT_ELIMIT, "the loops run more than %zu times", rt->lim.max_iterations);
    return 0;
}

/* The items a for loop walks: a list's, an object's keys, the ones that
 * pass `if test` when there is one. */
static int loop_items(jinja_rt *rt, jinja_scope *sc, const jinja_node *f, jinja_array **out) {
    const jinja_node *src = f->b, *test = NULL;
    if (src->kind == N_COND && src->flags) {
        test = src->b;
        src = src->a;
    }
    jinja_value v;
    if (api__jinja_eval(rt, sc, src, &v) != 0) return -1;
    if (v.kind == V_LOOP && api__jinja_loop_object(rt, v, &v) != 0) return -1;
    if (v.kind == V_OBJECT && api__jinja_object_method(rt, FN_KEYS, v.u.obj, NULL, 0, &v) != 0) return -1;
    if (v.kind != V_ARRAY) return api__jinja_fail(rt, API_CHAT_ERENDER, "a for loop needs a list or an object");
    if (test == NULL) return *out = v.u.arr, 0;
    jinja_array *kept = api__jinja_array_new(rt, 0);
    jinja_scope *ts = api__jinja_alloc(rt, sizeof *ts);
    if (kept == NULL || ts == NULL) return -1;
    *ts = (jinja_scope){.parent = sc};
    for (size_t i = 0; i < v.u.arr->n; i++) {
        jinja_value pass;
        if (count_iteration(rt) != 0 || assign(rt, ts, f->a, v.u.arr->v[i], 1) != 0 ||
            api__jinja_eval(rt, ts, test, &pass) != 0)
            return -1;
        if (api__jinja_truthy(pass) && api__jinja_array_push(rt, kept, v.u.arr->v[i]) != 0) return -1;
    }
    *out = kept;
    return 0;
}

static int loop(jinja_rt *rt, jinja_scope *outer, const jinja_node *f) {
    jinja_scope *sc = api__jinja_alloc(rt, sizeof *sc);
    jinja_loop *lp = api__jinja_alloc(rt, sizeof *lp);
    jinja_array *items = NULL;
    if (sc == NULL || lp == NULL) return -1;
    *sc = (jinja_scope){.parent = outer};
    if (loop_items(rt, sc, f, &items) != 0) return -1;
    *lp = (jinja_loop){items->v, items->n};
    if (items->n == 0) return api__jinja_exec(rt, sc, f->d);
    for (size_t i = 0; i < items->n; i++) {
        jinja_value var = {.kind = V_LOOP, .u.loop = {lp, i}};
        if (count_iteration(rt) != 0 || api__jinja_scope_set(rt, sc, "loop", 4, var) != 0 ||
            assign(rt, sc, f->a, items->v[i], 1) != 0 || api__jinja_exec(rt, sc, f->c) != 0)
            return -1;
    }
    return 0;
}

/* {{ v }}: none and undefined write nothing. */
static int output(jinja_rt *rt, jinja_value v) {
    if (v.kind == V_STR) return api__jinja_emit(rt, v.u.s.p, v.u.s.n);
    jinja_buf b = {0};
    int rc = api__jinja_text(rt, &b, v, TX_PRINT);
    if (rc == 0 && b.n) rc = api__jinja_emit(rt, b.p, b.n);
    free(b.p);
    return rc;
}

int api__jinja_exec(jinja_rt *rt, jinja_scope *sc, const jinja_node *n) {
    for (; n; n = n->next) {
        jinja_value v;
        rt->line = n->line;
        int rc;
        switch (n->kind) {
        case N_TEXT: rc = api__jinja_emit(rt, n->s, n->n); break;
        case N_OUTPUT: rc = api__jinja_eval(rt, sc, n->a, &v) != 0 ? -1 : output(rt, v); break;
        case N_IF:
            rc = api__jinja_eval(rt, sc, n->a, &v);
            if (rc == 0) rc = api__jinja_exec(rt, sc, api__jinja_truthy(v) ? n->b : n->c);
            break;
        case N_FOR: rc = loop(rt, sc, n); break;
        default: rc = set(rt, sc, n); break;
        }
        if (rc != 0) return -1;
    }
    return 0;
}
