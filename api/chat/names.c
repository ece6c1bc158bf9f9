/* names.c - the names of filters, tests and builtin functions, from the
 * tables in chat.h: the parser looks them up once, errors print them. */
#include "api/chat/jinja.h"

#include <string.h>

#define X_FNAME(id, name, forms) name,
#define X_FFORMS(id, name, forms) forms,
#define X_TNAME(id, name) name,
#define X_FNNAME(id, name, kind) name,
#define X_FNKIND(id, name, kind) kind,

static const char *const filter_names[] = {JINJA_FILTERS(X_FNAME)};
static const int filter_forms[] = {JINJA_FILTERS(X_FFORMS)};
static const char *const test_names[] = {JINJA_TESTS(X_TNAME)};
static const char *const func_names[] = {JINJA_FUNCS(X_FNNAME)};
static const int func_kinds[] = {JINJA_FUNCS(X_FNKIND)};

static int find(const char *const *names, int count, const char *s, size_t n) {
    for (int i = 0; i < count; i++)
        if (strlen(names[i]) == n && memcmp(names[i], s, n) == 0) return i;
    return -1;
}

int api__jinja_filter_id(const char *s, size_t n, int *forms) {
    int id = find(filter_names, F_COUNT, s, n);
    if (id >= 0) *forms = filter_forms[id];
    return id;
}

int api__jinja_test_id(const char *s, size_t n) { return find(test_names, TEST_COUNT, s, n); }

/* A builtin of kind GLOBAL, STRING or OBJECT called name, or -1. */
int api__jinja_func_id(int kind, const char *s, size_t n) {
    for (int i = 0; i < FN_COUNT; i++)
        if (func_kinds[i] == kind && strlen(func_names[i]) == n && memcmp(func_names[i], s, n) == 0)
            return i;
    return -1;
}

const char *api__jinja_filter_name(int id) { return id >= 0 && id < F_COUNT ? filter_names[id] : "?"; }
const char *api__jinja_func_name(int id) { return id >= 0 && id < FN_COUNT ? func_names[id] : "?"; }
